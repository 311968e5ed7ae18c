from studies.common import positive_int
from studies.name_gender import steps
from studies.name_gender.ranking import SPEC as RANKING
from studies.pipeline import Study


def add_flags(parser):
    parser.add_argument("--human-twins", action="store_true",
                        help="also fit the Bayesian twins of the people's gender-rating models "
                             "(several minutes each on 2 cores)")
    parser.add_argument("--alignment-twin", action="store_true",
                        help="also fit the Bayesian twin of the alignment GLMM")
    parser.add_argument("--n-boot", type=positive_int, default=1000,
                        help="bootstrap replicates of the alignment intervals (default: %(default)s)")
    parser.add_argument("--no-prompt-sensitivity", dest="prompt_sensitivity",
                        action="store_false",
                        help="skip scoring Exp 3's prompts in three more layouts (page break, "
                             "ellipsis; table prompt_sensitivity)")


STUDY = Study(
    name="name_gender", title="Pronouns after names: people and a language model",
    description="Gardner & Brown-Schmidt (2024) on their real per-trial data: the authors' glmer "
                "models reproduced; the model's P(he/she/they/name) after the same stories, "
                "compared like for like with people's choices; whether the model follows men "
                "or non-male participants more closely.",
    summary="Pronouns after first, last and full names: the authors' glmer models on real "
            "people, a model's P(she | he or she) beside people's, men vs non-male "
            "participants (Gardner & Brown-Schmidt 2024)",
    datasets=("gardner2024",), add_flags=add_flags, model="optional",
    load=steps.load, score=steps.score, fit=steps.fit, tables=steps.tables, report=steps.report,
    ranking=RANKING,
)
main = STUDY.main

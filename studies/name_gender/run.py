from studies.common import positive_int
from studies.name_gender import steps
from studies.pipeline import Study


def add_flags(parser):
    parser.add_argument("--human-twins", action="store_true",
                        help="also fit the Bayesian twins of the people's gender-rating models "
                             "(several minutes each on 2 cores)")
    parser.add_argument("--alignment-twin", action="store_true",
                        help="also fit the Bayesian twin of the alignment GLMM")
    parser.add_argument("--n-boot", type=positive_int, default=1000,
                        help="bootstrap replicates of the alignment intervals (default: %(default)s)")


STUDY = Study(
    name="name_gender", title="Pronouns after names: people and a language model",
    description="Gardner & Brown-Schmidt (2024) on their real per-trial data: the authors' glmer "
                "models reproduced; the model's P(he/she/they) after the same stories; which "
                "participants (men or women) the model resembles.",
    summary="Pronouns after first, last and full names: the authors' glmer models on real "
            "people, a model's P(he/she/they), men vs women (Gardner & Brown-Schmidt 2024)",
    datasets=("gardner2024",), add_flags=add_flags, model="optional",
    load=steps.load, score=steps.score, fit=steps.fit, tables=steps.tables, report=steps.report,
)
main = STUDY.main

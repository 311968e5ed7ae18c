"""`python -m studies.pronoun_memory`: the study's declaration (steps in steps.py).

load Gardner's Exp 1A, 1B, 2 (trials, prompts from the files people saw) -> the
model reads each list's materials and answers every memory question and
sentence beginning (plus the distractor sweep and RUFF's they-fidelity) ->
the authors' glmer models refitted, with their Bayesian twins -> people vs
the model, like for like -> report.
"""
from __future__ import annotations

from studies.common import positive_int
from studies.pipeline import Study
from studies.pronoun_memory import steps


def add_flags(parser):
    parser.add_argument("--no-distractors", action="store_true",
                        help="score the faithful condition only: no sweep over 1, 4, 12 "
                             "characters in context with and without the math filler, and no "
                             "RUFF comparison")
    parser.add_argument("--ruff-per-seed", type=int, default=36, metavar="N",
                        help="RUFF instances per seed and number of distractors for "
                             "pronoun_fidelity's they-fidelity of the same model (a multiple of "
                             "36; its they quarter is scored; 0 skips it; default: %(default)s)")
    parser.add_argument("--ruff-results", default=None, metavar="RESULTS_JSON",
                        help="read pronoun_fidelity's they-fidelity from the results.json of a "
                             "`python -m studies.pronoun_fidelity` run instead of sampling")
    parser.add_argument("--n-boot", type=positive_int, default=1000,
                        help="bootstrap replicates of the people-vs-model intervals and the "
                             "alignment (default: %(default)s)")


STUDY = Study(
    name="pronoun_memory", title="Pronoun memory and production: people and a language model",
    description="Gardner's experiments on memory for and production of singular they (Exp 1A, "
                "1B, 2; real per-trial data): the authors' glmer models reproduced, with their "
                "failed fit flagged; a language model reads what each participant read and "
                "answers the same memory questions and sentence beginnings; people vs the "
                "model like for like (they vs he+she, the PSA and biographies); RUFF-style "
                "distractors; which participants the model resembles.",
    summary="Memory for and production of singular they: Gardner's glmer models on real people, "
            "a model reading the same materials, people vs model (Gardner 2023)",
    datasets=("gardner2023",), add_flags=add_flags, model="optional",
    load=steps.load, score=steps.score, fit=steps.fit, tables=steps.tables, report=steps.report,
)
main = STUDY.main

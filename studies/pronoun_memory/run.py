"""`python -m studies.pronoun_memory`: the study's declaration (steps in steps.py).

load Gardner's Exp 1A, 1B, 2 (trials, prompts from the files people saw) -> the
model reads each list's materials and answers every memory question and
sentence beginning (plus the distractor sweep and RUFF's they-fidelity) ->
the authors' glmer models refitted, with their Bayesian twins -> people vs
the model, like for like -> report.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from studies.common import positive_int
from studies.pipeline import Study
from studies.pronoun_memory import steps


def experiment_list(text: str) -> list[str]:
    """argparse type for --experiments: '1a,2' -> ['1a', '2'] (of 1a, 1b, 2)."""
    found = [t.strip().lower() for t in text.split(",") if t.strip()]
    unknown = [t for t in found if t not in ("1a", "1b", "2")]
    if not found or unknown:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of 1a, 1b, 2; "
                                         f"found {text!r}")
    return list(dict.fromkeys(found))


def ruff_sample_size(text: str) -> int:
    """argparse type for --ruff-per-seed: 0, or a multiple of 36 (pronoun_fidelity's sample
    is balanced over case x pronoun set x distractor pronoun in blocks of 36)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, found {text!r}") from None
    if value < 0 or value % 36:
        raise argparse.ArgumentTypeError(f"expected 0 or a multiple of 36, found {value}")
    return value


def ruff_results_file(text: str) -> str:
    """argparse type for --ruff-results: a pronoun_fidelity results.json with its accuracy
    table (checked now, not after the scoring)."""
    from gbstats.data.validate import require_readable_file
    from gbstats.errors import DataValidationError
    from studies.pronoun_memory.ruff import ruff_accuracy_table

    try:
        # a folder, '-' or a missing path each said "no such file" before (issue 44)
        require_readable_file(text, column="--ruff-results")
        ruff_accuracy_table(Path(text))
    except DataValidationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def add_flags(parser):
    parser.add_argument("--experiments", type=experiment_list, default=["1a", "1b", "2"],
                        metavar="LIST",
                        help="experiments the model reads and is compared on, e.g. 1a or 1a,2 "
                             "(default: 1a,1b,2; the authors' models are always fitted)")
    parser.add_argument("--no-distractors", action="store_true",
                        help="score the faithful condition only: no sweep over 1, 4, 12 "
                             "characters in context with and without the math filler, and no "
                             "RUFF comparison")
    parser.add_argument("--ruff-per-seed", type=ruff_sample_size, default=36, metavar="N",
                        help="RUFF instances per seed and number of distractors for "
                             "pronoun_fidelity's they-fidelity of the same model (a multiple of "
                             "36; its they quarter is scored; 0 skips it; default: %(default)s)")
    parser.add_argument("--ruff-results", type=ruff_results_file, default=None,
                        metavar="RESULTS_JSON",
                        help="read pronoun_fidelity's they-fidelity from the results.json of a "
                             "`python -m studies.pronoun_fidelity` run instead of sampling")
    parser.add_argument("--option-orders", choices=("all", "latin"), default="all",
                        help="the orders the memory question's options are listed in, the "
                             "choice averaged over them: all six (default; the same set "
                             "whatever order the options start in) or the three rotations of a "
                             "Latin square (each option once in each position; about 0.7x the "
                             "scoring work)")
    parser.add_argument("--human-twins", action="store_true",
                        help="also fit the Bayesian twins of the six main models (memory and "
                             "production per experiment; several minutes each on 2 cores)")
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

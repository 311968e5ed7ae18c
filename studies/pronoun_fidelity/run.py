"""`python -m studies.pronoun_fidelity`: the study's declaration (steps in steps.py).

load RUFF templates -> draw the balanced samples -> per model: context-free
choices and forced choice on every sampled instance -> accuracy, Welch's tests,
error attribution, case consistency, the logistic mixed model -> report.
"""
from __future__ import annotations

import argparse

from studies.pipeline import Study
from studies.pronoun_fidelity import steps
from studies.pronoun_fidelity.instances import MAX_DISTRACTORS
from studies.pronoun_fidelity.steps import DEFAULT_BLOCKS, DEFAULT_PER_SEED, FULL_PER_SEED


def parse_distractors(text: str) -> list[int]:
    """'0-5', '0,5', '3' -> sorted distinct distractor counts."""
    values: set[int] = set()
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            values.update(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a range like 0-5 or a list like 0,5; "
                                         f"found {text!r}") from None
    if not values or min(values) < 0 or max(values) > MAX_DISTRACTORS:
        raise argparse.ArgumentTypeError(f"distractor counts must lie in 0-{MAX_DISTRACTORS}; "
                                         f"found {text!r}")
    return sorted(values)


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--counts", action="store_true",
                   help="print the full dataset's number of unique instances per number of "
                        "distractors and exit (nothing is scored)")
    p.add_argument("--distractors", type=parse_distractors, default=list(range(6)),
                   metavar="RANGE", help="numbers of distractors to evaluate, e.g. 0-5 "
                                         "(default) or 0,5")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--per-seed", type=int, default=None, metavar="N",
                      help=f"instances per seed and number of distractors (default: "
                           f"{DEFAULT_PER_SEED}, a stratified sample of the full design's "
                           f"{FULL_PER_SEED}: its first {DEFAULT_BLOCKS} of {FULL_PER_SEED // 36} "
                           f"blocks of 36, the same cells in every seed); any N stays balanced "
                           f"over case x pronoun set x distractor pronoun in blocks of 36")
    size.add_argument("--full-design", action="store_true",
                      help=f"score the full design: {FULL_PER_SEED} instances per seed and "
                           f"number of distractors, every occupation x case x pronoun set x "
                           f"distractor pronoun once (about an hour on a 2-core CPU)")
    p.add_argument("--occupations", type=int, default=None, metavar="N",
                   help="quick runs only: use the first N occupations of the task file "
                        "(the report says so)")
    p.add_argument("--backend", default="lme4", choices=["lme4", "none"],
                   help="frequentist GLMM backend: lme4 (default; needs R) or none")


STUDY = Study(
    name="pronoun_fidelity",
    summary="Pronoun use fidelity with distractors (Gautam et al. 2024, RUFF)",
    title="Pronoun use fidelity with distractors (RUFF)",
    description="Pronoun use fidelity with distractors (Gautam et al. 2024, RUFF): after an "
                "introduction ties an occupation to a pronoun and 0-5 sentences about "
                "someone else with another pronoun, does the model reuse the right pronoun?",
    datasets=("ruff2024",),
    add_flags=add_flags,
    model="many",
    shortcut=steps.print_counts,
    engine=True,  # --engine ray: its scoring is large
    load=steps.load, score=steps.score, fit=steps.fit, report=steps.report,
)
main = STUDY.main

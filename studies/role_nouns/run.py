"""`python -m studies.role_nouns`: the study's declaration (steps in steps.py).

load the production data and P(V) -> score "NAME is a VARIANT from STATE." for
every name x set x variant x state (unless --model none) -> the three methods'
P(V | C) -> each group's log-likelihood, permutation tests, proportions ->
the direct method vs the Bayesian one -> the human data's own GLMM -> report.
"""
from __future__ import annotations

import argparse

from studies.pipeline import Study
from studies.role_nouns import steps
from studies.role_nouns.ranking import SPEC as RANKING
from studies.role_nouns.stimuli import STATES


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--states", type=int, default=None, metavar="N",
                   help=f"score a seeded sample of N states for a quick run (default: all "
                        f"{len(STATES)})")
    p.add_argument("--sets", default=None, metavar="SET[,SET...]",
                   help="restrict the whole study (people and model) to these role-noun sets, "
                        "named by their gender-neutral form, e.g. firefighter,actor; for quick "
                        "runs (the left-out trials are counted as exclusions). Default: all 20")
    p.add_argument("--n-boot", type=int, default=2000,
                   help="bootstrap resamples of participants for CIs (default: %(default)s)")
    p.add_argument("--n-perm", type=int, default=5000,
                   help="permutations for the best-vs-next group test (default: %(default)s)")
    p.add_argument("--no-lme4", action="store_true",
                   help="skip the lme4 GLMM of the human data")


STUDY = Study(
    name="role_nouns",
    summary="Which attitude group does a model's choice of role nouns resemble? (Watson et "
            "al. 2023 on Papineau et al. 2022)",
    title="Role nouns: which group does the model resemble?",
    description="Role nouns (Watson, Beekhuizen & Stevenson 2023 on the production data of "
                "Papineau, Podesva & Degen 2022): which attitude group does a language "
                "model's choice of firefighter / fireman / firewoman resemble?",
    datasets=("papineau2022", "watson2023"),
    add_flags=add_flags,
    model="optional",
    engine=True,  # --engine ray: its scoring is large
    load=steps.load, score=steps.score, fit=steps.fit, report=steps.report,
    ranking=RANKING,
)
main = STUDY.main

"""`python -m studies.cognitive_bias`: the study's declaration (steps in steps.py).

load the QA, MAZE and system tables -> QA accuracy, Delta_QA -> stereotype x
alpha GLMMs (lme4, Bayesian twin) -> MAZE -> systems on the human scale -> a
language model as a coreference model -> report.
"""
from __future__ import annotations

import argparse

from studies.cognitive_bias import steps
from studies.cognitive_bias import uncertainty as U
from studies.cognitive_bias.steps import IGNORE_CHOICES
from studies.pipeline import Study


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help="score only N wino sentences with the language model (half pro, half "
                        "anti, lowest ids first), for quick runs; default: all")
    p.add_argument("--ignore-non-coreference", default="wino", choices=sorted(IGNORE_CHOICES),
                   help="where answers of the gender opposite to the pronoun's are ignored: "
                        "wino (default; as the authors' published table), both, or none")
    p.add_argument("--drop-repeated-responses", action="store_true",
                   help="keep only the first response recorded at a session position (62 wino, "
                        "32 BUG repeats); default: count every response, as the published "
                        "Table 2 does")
    p.add_argument("--n-boot", type=int, default=U.N_BOOT, metavar="B",
                   help="bootstrap replicates (participants x sentences) for the Delta_QA and "
                        f"Delta_MAZE intervals (default {U.N_BOOT})")
    p.add_argument("--no-lme4", action="store_true",
                   help="skip the lme4 GLMMs and the MAZE LMM (they need R)")
    p.add_argument("--glmm-optimizer", default=None,
                   choices=["bobyqa", "Nelder_Mead", "nloptwrap", "nlminbwrap"],
                   help="lme4 optimizer for the GLMMs (default: glmer's own); use bobyqa "
                        "when the report flags a GLMM that did not converge")


STUDY = Study(
    name="cognitive_bias",
    summary="Humans under time pressure vs coreference models (Lior & Stanovsky 2023)",
    title="Humans under time pressure versus coreference models",
    description="Humans under time pressure versus coreference models (Lior & Stanovsky "
                "2023): QA accuracy on pro/anti-stereotypical sentences at each time "
                "fraction alpha, a stereotype x alpha GLMM, MAZE response times, the "
                "SpanBERT and s2e systems on the human scale and on the MAZE curves, and a "
                "language model used as a coreference model.",
    datasets=(steps.DATASET,),
    add_flags=add_flags,
    model="optional",
    load=steps.load, fit=steps.fit, report=steps.report,
)
main = STUDY.main

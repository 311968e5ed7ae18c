"""`python -m studies.genda_lens`: the study's declaration (steps in steps.py).

load the Danish sentences -> coreference tasks from a predictions file (if
given) -> LM tasks (unless --model none) -> effect sizes with bootstrap CIs ->
mixed model of log relative perplexity -> report.
"""
from __future__ import annotations

import argparse

from studies.genda_lens import steps
from studies.pipeline import Study


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--predictions", default=None, metavar="FILE",
                   help="a coreference system's clusters, JSON Lines: one line per sentence, "
                        '{"item": "dawinobias.pro.1", "clusters": [[[0, 10], [45, 48]]]}, '
                        "mentions as [start, end) character offsets into the table's sentence "
                        "(see studies/genda_lens/predictions.py). Items of the dawinobias "
                        "and/or abc tables; a table with no line in the file is skipped")
    p.add_argument("--write-template", default=None, metavar="FILE",
                   help="write a predictions template (every sentence's item and text, with "
                        "empty clusters, JSON Lines) for your coreference system to fill, and "
                        "exit; respects --limit")
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help="quick runs: only the first N DaWinoBias sentences per condition "
                        "(pro/anti) and the first N ABC sentence groups per stereotype file")
    p.add_argument("--mean", action="store_true",
                   help="ABC LM effect size from the mean relative perplexity instead of the "
                        "median (the default; see the report)")
    p.add_argument("--n-boot", type=int, default=1000,
                   help="bootstrap resamples of sentences for the CIs (default: %(default)s)")
    p.add_argument("--backend", default="auto", choices=["auto", "lme4", "statsmodels"],
                   help="mixed-model backend (default: lme4 when R is installed, else "
                        "statsmodels)")


STUDY = Study(
    name="genda_lens",
    summary="Danish gender bias in coreference and LMs (GenDa Lens: DaWinoBias, ABC)",
    title="GenDa Lens: gender bias in Danish coreference and language models",
    description="GenDa Lens (2023): gender bias in Danish coreference (DaWinoBias pro vs "
                "anti F1; ABC anti-reflexive FPR by gender) and in language models "
                "(gbstats' variants, not GenDa Lens' metrics: DaWinoBias two-way pronoun "
                "choice; ABC perplexity ratio), with bootstrap CIs "
                "and a mixed model. Coreference tasks need --predictions; LM tasks run "
                "with --model (use --model none to skip them).",
    datasets=(steps.DATASET,),
    add_flags=add_flags,
    model="optional",
    bayes=False,
    shortcut=steps.write_template,
    load=steps.load, score=steps.score, fit=steps.fit, tables=steps.tables,
    report=steps.report,
)
main = STUDY.main

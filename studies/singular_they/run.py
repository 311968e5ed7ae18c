"""`python -m studies.singular_they`: the study's declaration (steps in steps.py).

load stimuli -> score the target form -> fit closeness x gender -> join with
human judgements (or the SIMULATED panel) -> correlations per group, tests of
alignment, Mann-Whitney tests, the human data's own model -> report.
"""
from __future__ import annotations

import argparse

from studies.pipeline import Study
from studies.singular_they import steps
from studies.singular_they.ranking import SPEC as RANKING


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--human", default=None, metavar="FILE",
                   help="trial-level human judgements (see README for the columns; the "
                        "Camilliere et al. camilliere_data.txt layout is accepted). "
                        "Without it the study runs on a SIMULATED panel")
    p.add_argument("--stimuli", default="camilliere2021", metavar="NAME|FILE",
                   help="the sentences to score: camilliere2021 (default; the 335 published "
                        "stimuli of Camilliere et al. 2021, typos corrected unless --human "
                        "or --as-published is given), gbstats (the "
                        "335 sentences gbstats wrote, data/singular_they/stimuli.tsv), or "
                        "your own file with the columns of data/singular_they/stimuli.tsv")
    p.add_argument("--as-published", action="store_true",
                   help="score the published stimuli exactly as published, without the "
                        "corrections in data/singular_they/camilliere_corrections.csv "
                        "(the default with --human: participants rated the published text)")
    p.add_argument("--keep-corrections", action="store_true",
                   help="with --human: score the corrected text anyway (by default real "
                        "ratings imply the text as published; the report says which text "
                        "was scored and why)")
    p.add_argument("--backend", default="both", choices=["both", "lme4", "statsmodels"],
                   help="mixed-model backend(s) for the model-side LMM: both (default; lme4 "
                        "and statsmodels, which must agree), or one of them")
    p.add_argument("--n-boot", type=int, default=2000,
                   help="bootstrap resamples for correlation CIs (default: %(default)s)")
    p.add_argument("--alignment-twin", action="store_true",
                   help="also fit the Bayesian twin of the RQ2 alignment mixed model (every "
                        "rating, crossed random effects: about a minute on 2 cores, so off by "
                        "default; the lme4 fit is always made)")
    p.add_argument("--write-stimuli", action="store_true",
                   help="regenerate data/singular_they/stimuli.tsv (gbstats' own frames) "
                        "from the frames and exit")


STUDY = Study(
    name="singular_they",
    summary="Surprisal of singular they by antecedent type; closeness x gender; alignment "
            "with linguistic-stage and attitude groups (Watson et al. 2023)",
    title="Singular *they*: language model vs. people",
    description="Singular 'they' (Watson, Beekhuizen & Stevenson 2023; design of Camilliere "
                "et al. 2021): how surprising is 'they' after each kind of antecedent for a "
                "language model, does closeness x gender explain it, and which group of "
                "people does the model's pattern resemble?",
    add_flags=add_flags,
    shortcut=steps.write_stimuli,
    load=steps.load, score=steps.score, fit=steps.fit, report=steps.report,
    ranking=RANKING,
)
main = STUDY.main

"""`python -m studies.winopron`: the study's declaration (steps in steps.py).

load templates -> instantiate with 4 pronoun sets (in memory) -> resolve
(a predictions file, or a language model by candidate substitution) ->
F1, consistency and pronominal-bias tables -> report.
"""
from __future__ import annotations

import argparse

from studies.pipeline import Study
from studies.winopron import steps


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--predictions", default=None, metavar="FILE",
                   help="an external system's predictions (TSV or JSONL: sentence_id, "
                        "prediction = occupation | participant | none); replaces --model")
    p.add_argument("--allow-missing", action="store_true",
                   help="count sentences without a prediction as 'none' (logged) instead of "
                        "stopping with an error")
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help="quick run on the first N occupations only (all their templates, "
                        "pronoun sets and versions)")
    p.add_argument("--lm-method", default="substitution", choices=["substitution", "probe"],
                   help="how a language model resolves: substitution (default; the pronoun is "
                        "replaced by each candidate, so the answer is the same for every "
                        "pronoun set) or probe (pronoun-aware: the sentence followed by "
                        "'In this sentence, \"<pronoun>\" refers to the <candidate>.')")
    p.add_argument("--write-ids", default=None, metavar="FILE",
                   help="write the sentence ids (no texts) a predictions file must use, "
                        "as TSV, and exit")


STUDY = Study(
    name="winopron",
    summary="Coreference bias beyond the binary (WinoPron, Gautam et al. 2024)",
    title="WinoPron: coreference with he, she, they and xe",
    description="WinoPron (Gautam et al. 2024): coreference with he, she, they and xe in "
                "three grammatical cases; F1, pronoun and disambiguation consistency, and "
                "the pronominal bias method. The resolver is a predictions file "
                "(--predictions) or a language model by candidate substitution (--model).",
    datasets=(steps.DATASET,),
    add_flags=add_flags,
    model="optional",
    bayes=False,
    r_fits=False,  # its tables are counts and rates: no mixed model
    shortcut=steps.write_ids,
    load=steps.load, score=steps.score, report=steps.report,
)
main = STUDY.main

"""The score-table contract shared by every scorer (see DESIGN.md, "Scores are long tables").

Units are explicit: `logprob` is the natural log of the probability, summed
over the scored span; `surprisal_bits` = -logprob / ln 2. Reductions are
named (`sum`, `mean`), never lambdas. Every table records `scoring`, `model`,
`revision` and `bos` so two tables can only be compared knowingly.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError

LN2 = math.log(2.0)
SCORINGS = ("causal", "masked", "pll_original", "pll_word_l2r")
BOS_OPTIONS = ("prepend", "none")
PROVENANCE_COLUMNS = ["scoring", "model", "revision", "bos"]


def surprisal_bits(logprob):
    """Surprisal in bits from a natural-log probability (works on floats and arrays)."""
    return -np.asarray(logprob, dtype=float) / LN2 if not np.isscalar(logprob) else -logprob / LN2


def reduce_sum(values: list[float]) -> float:
    """Summed log-probability: log P(span) by the chain rule."""
    return float(math.fsum(values))


def reduce_mean(values: list[float]) -> float:
    """Mean log-probability per token (minicons' default reduction)."""
    return float(math.fsum(values) / len(values)) if values else float("nan")


REDUCTIONS = {"sum": reduce_sum, "mean": reduce_mean}


def get_reduction(name: str):
    from gbstats.errors import UnknownNameError

    if name not in REDUCTIONS:
        raise UnknownNameError("reduction", name, list(REDUCTIONS))
    return REDUCTIONS[name]


def score_schema(extra: dict | None = None):
    """pandera schema of a sequence-level score table (one row per item[, variant])."""
    import pandera.pandas as pa

    columns = {
        "item": pa.Column(nullable=False),
        "logprob": pa.Column(float, pa.Check.le(1e-6), nullable=True),
        "surprisal_bits": pa.Column(float, pa.Check.ge(-1e-6), nullable=True),
        "n_tokens": pa.Column(int, pa.Check.ge(0)),
        "scoring": pa.Column(str, pa.Check.isin(SCORINGS)),
        "model": pa.Column(str),
        "revision": pa.Column(str),
        "bos": pa.Column(str, pa.Check.isin(BOS_OPTIONS)),
    }
    columns.update(extra or {})
    return pa.DataFrameSchema(columns, name="score table", strict=False)


def finish_table(df: pd.DataFrame, *, lm, scoring: str, bos: str, source: str,
                 extra_schema: dict | None = None) -> pd.DataFrame:
    """Add surprisal and provenance columns, order them, validate against the contract."""
    from gbstats.data.validate import check_output_schema

    df = df.copy()
    df["logprob"] = df["logprob"].astype(float)
    df["surprisal_bits"] = -df["logprob"] / LN2
    df["n_tokens"] = df["n_tokens"].astype(int)
    df["scoring"], df["model"], df["revision"], df["bos"] = scoring, lm.name, lm.revision, bos
    first = [c for c in ["item", "variant", "text", "prefix", "continuation", "word_index", "word",
                         "token_index", "token", "span"] if c in df.columns]
    rest = [c for c in df.columns if c not in first]
    df = df[first + rest].reset_index(drop=True)
    return check_output_schema(df, score_schema(extra_schema), source=source)


def recorded_scoring(scores: pd.DataFrame, *, source: str = "scores") -> str:
    """The one scoring method a score table records in its `scoring` column.

    Reports describe what ran from this, not from the model's kind: the table
    is what the numbers came from (a masked model scores with a PLL variant,
    a causal one with "causal"), and a cached table keeps saying so.
    """
    if "scoring" not in scores.columns:
        raise DataValidationError("the score table records no scoring method", source=source,
                                  column="scoring", expected="a `scoring` column",
                                  found=", ".join(map(str, scores.columns)))
    methods = sorted(set(scores["scoring"].dropna()))
    if len(methods) != 1:
        raise DataValidationError("the score table mixes scoring methods", source=source,
                                  column="scoring", expected="one method",
                                  found=str(methods) if methods else "none")
    return methods[0]

"""Probabilities over a set of alternatives: softmax and normalisation within groups.

`softmax_within` turns log-scores into probabilities within each group (the
variants of one frame, the candidates of one item). What it does with values
that are not finite is decided here, once:

- NaN is a missing score. The group's probabilities would be normalised over
  an incomplete set, which is wrong, so either the call fails naming the
  group (`on_missing="raise"`, the default) or every probability of that
  group is NaN (`on_missing="nan"`: the caller drops and counts the group).
- -inf is log 0: that alternative gets probability 0 and the rest share 1.
  A group whose values are all -inf cannot be normalised and is treated as
  missing.
- +inf is not a log-probability, and always raises.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError, UnknownNameError

ON_MISSING = ("raise", "nan")


def softmax_within(df: pd.DataFrame, logvalue: str, by: str | list[str], *,
                   on_missing: str = "raise") -> pd.Series:
    """exp(logvalue) normalised to sum to 1 within each `by` group, computed stably as
    exp(x - logsumexp(group)). Non-finite values: see the module docstring."""
    if on_missing not in ON_MISSING:
        raise UnknownNameError("on_missing option", on_missing, list(ON_MISSING))
    values = df[logvalue].astype(float)
    if np.isposinf(values).any():
        bad = df.loc[np.isposinf(values), by].iloc[0]
        raise DataValidationError("a log-probability is +inf", source="model scores", column=logvalue,
                                  expected="log-probabilities <= 0 or -inf",
                                  found=f"{by}={bad!r}" if isinstance(by, str) else repr(bad.tolist()))
    keys = [df[b] for b in ([by] if isinstance(by, str) else by)]

    def within(series: pd.Series, reduction: str) -> pd.Series:
        return series.groupby(keys, sort=False).transform(reduction)

    # pandas' grouped reductions, not a Python function per group: on role_nouns' 26,400
    # frames cProfile put 92 of the warm score step's 103 profiled seconds in that loop.
    # groupby leaves out a row whose key is NaN: it has no group, so it counts as missing.
    no_group = pd.concat(keys, axis=1).isna().any(axis=1)
    neginf = pd.Series(np.isneginf(values.to_numpy()), index=values.index)
    missing = (no_group | within(values.isna(), "any").eq(True)
               | within(neginf, "all").eq(True))
    if no_group.any() and on_missing == "raise":
        row = no_group.to_numpy().nonzero()[0][0]
        raise DataValidationError(
            "a row has no value in the grouping column(s), so it belongs to no group",
            source="model scores", column=by if isinstance(by, str) else ", ".join(by),
            expected="a value in every row", found=f"NaN in row {row} (counting from 0)")
    if missing.any() and on_missing == "raise":
        bad = df.loc[missing, by].iloc[0]
        raise DataValidationError(
            "a group has a missing (NaN) log-probability, or only -inf ones, so its "
            "probabilities cannot be normalised", source="model scores", column=logvalue,
            expected="a finite log-probability for at least one alternative and no NaN",
            found=f"{by}={bad!r}" if isinstance(by, str) else repr(bad.tolist()))
    # exp(x - max) / sum(exp(x - max)) is exp(x - logsumexp(group)): stable, and -inf -> 0
    group_max = within(values, "max").where(~missing, 0.0)
    weights = pd.Series(np.exp((values - group_max).to_numpy()), index=values.index)
    return (weights / within(weights, "sum")).where(~missing, np.nan).rename(None)


def normalise_within(df: pd.DataFrame, value: str, by: str) -> pd.Series:
    """value / sum(value) within each `by` group (e.g. corpus counts -> P(V) over a set).

    Raises naming the group when a group's values sum to 0 or NaN.
    """
    totals = df.groupby(by, sort=False)[value].transform("sum")
    if (totals <= 0).any() or totals.isna().any():
        bad = df.loc[(totals <= 0) | totals.isna(), by].iloc[0]
        raise DataValidationError("cannot normalise: the values of a group sum to 0 or NaN",
                                  source="model scores", column=value,
                                  expected="positive, finite values", found=f"{by}={bad!r}")
    return df[value] / totals

"""Bias and accuracy metrics with their formulas written down.

Conventions:
- Δ (`delta`) is always pro minus anti (pro-stereotypical minus
  anti-stereotypical), so a positive Δ means the pro-stereotypical condition
  scores higher.
- A metric whose denominator is zero is undefined: it is returned as NaN
  (never 0, never a crash) and an `UndefinedMetricWarning` says which value
  and why. Reports can collect these with `warnings.catch_warnings(record=True)`.
- Functions accept scalars or array-likes and return a float for scalar input,
  a numpy array otherwise.
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError


class UndefinedMetricWarning(RuntimeWarning):
    """A metric's formula divides by zero (or takes log of 0) for some input: result NaN."""


def _scalar_or_array(values: np.ndarray, scalar_input: bool):
    return float(values) if scalar_input else values


def _as_numbers(values, name: str) -> tuple[np.ndarray, bool]:
    scalar = np.ndim(values) == 0
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise DataValidationError(f"{name} must be numeric", source=name,
                                  expected="a number or an array of numbers",
                                  found=repr(values)) from None
    return array, scalar


def _require_nonnegative(array: np.ndarray, name: str, what: str) -> None:
    negative = array < 0
    if np.any(negative):
        raise DataValidationError(f"{name} must not be negative ({what})", source=name,
                                  expected=">= 0", found=repr(array[negative].flat[0]))


def _warn_undefined(mask: np.ndarray, metric: str, reason: str) -> None:
    n = int(np.sum(mask))
    if n:
        warnings.warn(f"{metric} is undefined for {n} value(s): {reason}; returned NaN",
                      UndefinedMetricWarning, stacklevel=3)


def _safe_ratio(numerator: np.ndarray, denominator: np.ndarray, metric: str,
                reason: str) -> np.ndarray:
    zero = np.broadcast_to(denominator == 0, np.broadcast(numerator, denominator).shape)
    _warn_undefined(zero, metric, reason)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(zero, np.nan, numerator / np.where(denominator == 0, 1,
                                                            denominator))


def delta(pro, anti):
    """Δ = pro - anti (e.g. accuracy or F1 on pro- minus anti-stereotypical items)."""
    p, scalar_p = _as_numbers(pro, "pro")
    a, scalar_a = _as_numbers(anti, "anti")
    return _scalar_or_array(p - a, scalar_p and scalar_a)


def log2_ratio(p, a):
    """log2(p / a), e.g. log2(P/A) or log2(FPR_M / FPR_F); values must be >= 0.

    Undefined (NaN with an `UndefinedMetricWarning`) when a == 0 (division by
    zero) or p == 0 (log of 0): a ratio with a zero rate has no finite size.
    NaN inputs give NaN.
    """
    pv, scalar_p = _as_numbers(p, "p")
    av, scalar_a = _as_numbers(a, "a")
    _require_nonnegative(pv, "p", "it is a rate or probability")
    _require_nonnegative(av, "a", "it is a rate or probability")
    pv, av = np.broadcast_arrays(pv, av)
    zero_a, zero_p = av == 0, (pv == 0) & (av != 0)
    _warn_undefined(zero_a, "log2(p/a)", "the denominator a is 0")
    _warn_undefined(zero_p, "log2(p/a)", "the numerator p is 0, so log2(p/a) = -inf")
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(zero_a | zero_p, np.nan,
                       np.log2(np.where(zero_a | zero_p, 1, pv) /
                               np.where(zero_a | zero_p, 1, av)))
    return _scalar_or_array(out, scalar_p and scalar_a)


def fpr(fp, tn):
    """False-positive rate FPR = FP / (FP + TN); NaN with a warning when FP + TN = 0."""
    f, scalar_f = _as_numbers(fp, "fp")
    t, scalar_t = _as_numbers(tn, "tn")
    _require_nonnegative(f, "fp", "it is a count")
    _require_nonnegative(t, "tn", "it is a count")
    out = _safe_ratio(f, f + t, "FPR",
                      "there are no negatives (FP + TN = 0)")
    return _scalar_or_array(out, scalar_f and scalar_t)


def accuracy(n_correct, n_total):
    """Accuracy = n_correct / n_total; NaN with a warning when n_total = 0."""
    c, scalar_c = _as_numbers(n_correct, "n_correct")
    t, scalar_t = _as_numbers(n_total, "n_total")
    _require_nonnegative(c, "n_correct", "it is a count")
    _require_nonnegative(t, "n_total", "it is a count")
    if np.any(c > t):
        raise DataValidationError("more correct answers than answers", source="n_correct",
                                  expected="n_correct <= n_total",
                                  found=f"n_correct {c.max():g} > n_total")
    out = _safe_ratio(c, t, "accuracy", "there are no items (n_total = 0)")
    return _scalar_or_array(out, scalar_c and scalar_t)


def f1(tp, fp, fn):
    """F1 = 2 TP / (2 TP + FP + FN), the harmonic mean of precision and recall.

    Written this way it is defined whenever there is at least one positive or
    one positive prediction: no predictions at all (TP = FP = 0, FN > 0) gives
    F1 = 0, and all predictions wrong gives 0. Only TP = FP = FN = 0 (no
    positives and no positive predictions) is undefined: NaN with a warning
    (scikit-learn would return 0 there; NaN keeps "nothing to score" apart
    from "scored and failed").
    """
    t, st = _as_numbers(tp, "tp")
    p, sp = _as_numbers(fp, "fp")
    n, sn = _as_numbers(fn, "fn")
    for arr, name in ((t, "tp"), (p, "fp"), (n, "fn")):
        _require_nonnegative(arr, name, "it is a count")
    out = _safe_ratio(2 * t, 2 * t + p + n, "F1",
                      "there are no positives and no positive predictions "
                      "(TP + FP + FN = 0)")
    return _scalar_or_array(out, st and sp and sn)


def confusion_counts(y_true, y_pred, *, positive) -> dict[str, int]:
    """TP, FP, FN, TN of label arrays for the class `positive`.

    Arrays must have equal length and no missing labels (a missing label
    cannot be counted as right or wrong; exclude it upstream and log it).
    """
    truth, pred = pd.Series(list(y_true)), pd.Series(list(y_pred))
    if len(truth) != len(pred):
        raise DataValidationError("y_true and y_pred differ in length", source="y_pred",
                                  expected=f"{len(truth)} labels", found=f"{len(pred)}")
    for series, name in ((truth, "y_true"), (pred, "y_pred")):
        if series.isna().any():
            pos = int(np.flatnonzero(series.isna().to_numpy())[0])
            raise DataValidationError(f"{int(series.isna().sum())} missing label(s)",
                                      source=name, row=pos + 1, expected="a label",
                                      found="missing")
    is_true, is_pred = (truth == positive).to_numpy(), (pred == positive).to_numpy()
    return {"tp": int((is_true & is_pred).sum()), "fp": int((~is_true & is_pred).sum()),
            "fn": int((is_true & ~is_pred).sum()), "tn": int((~is_true & ~is_pred).sum())}


def f1_from_labels(y_true, y_pred, *, positive) -> float:
    """F1 for class `positive` from label arrays (see `f1` for the formula)."""
    c = confusion_counts(y_true, y_pred, positive=positive)
    return f1(c["tp"], c["fp"], c["fn"])


def accuracy_from_labels(y_true, y_pred) -> float:
    """Share of positions where y_pred equals y_true (NaN with a warning if empty)."""
    truth, pred = pd.Series(list(y_true)), pd.Series(list(y_pred))
    if len(truth) != len(pred):
        raise DataValidationError("y_true and y_pred differ in length", source="y_pred",
                                  expected=f"{len(truth)} labels", found=f"{len(pred)}")
    if truth.isna().any() or pred.isna().any():
        raise DataValidationError("missing label(s)", source="y_true/y_pred",
                                  expected="no missing labels", found="NaN")
    return accuracy(int((truth.to_numpy() == pred.to_numpy()).sum()), len(truth))


def group_minimum_consistency(table: pd.DataFrame, *, unit: str, over: str,
                              score: str = "correct",
                              expected_levels: Sequence | None = None) -> pd.DataFrame:
    """A unit's score is its worst score over the levels of `over`.

    E.g. unit="template", over="pronoun_set", score="correct": a template
    counts as solved only if it is solved under every pronoun set. The score
    is first averaged within each unit x level (so several sentences per cell
    give that cell's accuracy), then

        consistency(unit) = min over levels of mean(score | unit, level).

    With 0/1 scores and one row per cell this is 1 exactly when the unit is
    right under all levels. The overall consistency score is the mean of the
    `consistency` column.

    Every unit must have every level (`expected_levels`, default: all levels
    in the table): a minimum over an incomplete set would overstate the
    score, so a missing cell is an error, as is a missing score.

    Returns one row per unit: unit, consistency, worst_level (a level where
    the minimum is reached, first in sorted order), n_levels.
    """
    for col in (unit, over, score):
        if col not in table.columns:
            raise DataValidationError(f"missing column {col!r}", source="table", column=col,
                                      expected=f"columns {unit}, {over}, {score}",
                                      found=f"columns {', '.join(map(str, table.columns))}")
    if len(table) == 0:
        raise DataValidationError("no rows", source="table", expected="at least one row",
                                  found="0 rows")
    values = pd.to_numeric(table[score], errors="coerce")
    if values.isna().any() or table[[unit, over]].isna().any().any():
        bad = values.isna() | table[[unit, over]].isna().any(axis=1)
        label = table.index[np.flatnonzero(bad.to_numpy())[0]]
        raise DataValidationError(
            f"{int(bad.sum())} row(s) with a missing or non-numeric value (first at index "
            f"{label!r})", source="table", column=score, expected="complete rows")
    frame = pd.DataFrame({"unit": table[unit].to_numpy(), "level": table[over].to_numpy(),
                          "score": values.to_numpy()})
    levels = list(expected_levels) if expected_levels is not None else sorted(
        frame["level"].unique(), key=str)
    unknown = sorted(set(frame["level"]) - set(levels), key=str)
    if unknown:
        raise DataValidationError(f"unexpected level(s) of {over!r}", source="table",
                                  column=over, expected=f"one of {levels!r}",
                                  found=repr(unknown))
    cells = frame.groupby(["unit", "level"])["score"].mean().unstack("level")
    cells = cells.reindex(columns=levels)
    incomplete = cells.isna().any(axis=1)
    if incomplete.any():
        first = cells.index[incomplete.to_numpy()][0]
        lacking = [lv for lv in levels if pd.isna(cells.loc[first, lv])]
        raise DataValidationError(
            f"{int(incomplete.sum())} {unit}(s) lack some level of {over!r}, so their "
            "minimum would be over an incomplete set", source="table", column=over,
            expected=f"every {unit} under all of {levels!r}",
            found=f"{unit} {first!r} lacks {lacking!r}")
    return pd.DataFrame({
        unit: cells.index.to_numpy(),
        "consistency": cells.min(axis=1).to_numpy(),
        "worst_level": cells.idxmin(axis=1).to_numpy(),
        "n_levels": len(levels),
    })

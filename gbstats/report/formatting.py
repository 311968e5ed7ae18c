"""Cell formatting shared by every table writer (LaTeX, Markdown), the same in both.

Numbers (`format_number`):

* floats are shown with `digits` significant digits, trailing zeros kept
  (0.5 -> "0.500", 0.012345 -> "0.0123");
* a float with more integer digits than `digits` is rounded to an integer, not
  to zeros (an AIC of 12345.6 -> "12346", not "12300");
* a non-zero float below 0.001 in absolute value is shown in scientific
  notation ("4.50e-04"; in LaTeX $4.50\\times10^{-4}$);
* integers, and float columns whose values are all whole numbers (counts that
  became floats in a merge), are shown as integers;
* missing values (NaN, None, pd.NA) are shown as "--".

p-values are formatted as APA-style papers do (`format_p_value`): "< .001"
below .001, otherwise three decimals without the leading zero (".023",
"1.000"). A p-value outside [0, 1] is a bug upstream and raises.
"""
from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError

MISSING = "--"
P_BELOW = 0.001

# Friendlier headers for the columns of FitResult.coefs and the test tables;
# `column_labels=` overrides them, and any other column keeps its own name.
DEFAULT_COLUMN_LABELS = {
    "term": "Term", "estimate": "Estimate", "se": "SE", "ci_low": "CI low",
    "ci_high": "CI high", "stat": "Statistic", "df": "df", "p_value": "p",
    "backend": "Backend",
}

# Control characters (newlines, tabs, NUL, C1 controls, Unicode line and
# paragraph separators) would end a table row or stop pdflatex; every writer
# turns them into plain spaces.
CONTROL_CHARS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def is_missing(value: Any) -> bool:
    """True for None, NaN, pd.NA and NaT (but not for strings or containers)."""
    if value is None:
        return True
    try:
        return bool(pd.isna(value)) if np.ndim(value) == 0 else False
    except (TypeError, ValueError):
        return False


def format_number(value: Any, digits: int = 3) -> str:
    """Format one number with `digits` significant digits (rules in the module doc)."""
    if digits < 1:
        raise ValueError(f"digits must be at least 1, got {digits}")
    if is_missing(value):
        return MISSING
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    x = float(value)
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    # Round to significant digits first, so that 0.9996 -> 1.00 (three
    # significant digits), not 1.000.
    rounded = float(f"{x:.{digits - 1}e}")
    magnitude = math.floor(math.log10(abs(rounded)))
    if magnitude < -3:
        return f"{x:.{digits - 1}e}"
    decimals = max(digits - 1 - magnitude, 0)
    text = f"{x:.{decimals}f}"
    return "0" if float(text) == 0 else text  # no "-0"


def format_p_value(p: Any) -> str:
    """Format a p-value as papers do: "< .001", else 3 decimals without the leading zero."""
    if is_missing(p):
        return MISSING
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"a p-value must lie in [0, 1], found {p!r}")
    if p < P_BELOW:
        return "< .001"
    text = f"{p:.3f}"
    return text[1:] if text.startswith("0") else text


def _is_whole_float_column(series: pd.Series) -> bool:
    if not pd.api.types.is_float_dtype(series.dtype):
        return False
    finite = series[np.isfinite(series)]
    # Beyond 1e15 a float no longer holds every integer exactly.
    return (len(finite) > 0 and bool((finite == np.round(finite)).all())
            and bool((finite.abs() < 1e15).all()))


def is_numeric_column(series: pd.Series) -> bool:
    return (pd.api.types.is_numeric_dtype(series.dtype)
            and not pd.api.types.is_bool_dtype(series.dtype))


def _format_column(series: pd.Series, digits: int, is_p: bool) -> list[str]:
    """Plain-text cells of one column; raises with the row for a bad p-value."""
    if is_p:
        cells = []
        for row, value in enumerate(series, start=1):
            if not is_missing(value) and not isinstance(value, numbers.Real):
                raise DataValidationError("p-value is not a number", source="table",
                                          row=row, column=str(series.name),
                                          expected="a number in [0, 1]", found=repr(value))
            try:
                cells.append(format_p_value(value))
            except ValueError:
                raise DataValidationError("p-value outside [0, 1]", source="table", row=row,
                                          column=str(series.name), expected="0 <= p <= 1",
                                          found=repr(value)) from None
        return cells
    whole = _is_whole_float_column(series)
    cells = []
    for value in series:
        if is_missing(value):
            cells.append(MISSING)
        elif isinstance(value, (numbers.Real, np.number)) and not isinstance(value, (bool, np.bool_)):
            cells.append(str(int(value)) if whole and math.isfinite(value)
                         else format_number(value, digits))
        else:
            cells.append(str(value))
    return cells


def table_frame(df: pd.DataFrame, columns: Sequence[str] | None) -> pd.DataFrame:
    """The columns to show: a named index becomes columns; an unnamed one is dropped."""
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"expected a pandas DataFrame, found {type(df).__name__}")
    if isinstance(df.columns, pd.MultiIndex):
        raise DataValidationError("multi-level column headers are not supported",
                                  source="table", expected="one header row",
                                  found=f"{df.columns.nlevels} levels")
    if any(name is not None for name in df.index.names):
        df = df.reset_index()
    duplicated = df.columns[df.columns.duplicated()].tolist()
    if duplicated:
        raise DataValidationError("duplicate column names", source="table",
                                  expected="unique column names", found=str(duplicated))
    if columns is not None:
        missing = [c for c in columns if c not in df.columns]
        if missing:
            raise DataValidationError("columns requested for the table are missing",
                                      source="table", expected=f"columns {list(columns)}",
                                      found=f"missing {missing}; the table has {list(df.columns)}")
        df = df[list(columns)]
    if df.shape[1] == 0:
        raise DataValidationError("the table has no columns", source="table",
                                  expected="at least one column", found="none")
    return df


def format_cells(df: pd.DataFrame, digits: int = 3, p_columns: Sequence[str] = ("p_value",),
                 columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Every cell of `df` as plain text: numbers, p-values and missing values formatted."""
    df = table_frame(df, columns)
    return pd.DataFrame({col: _format_column(df[col], digits, col in p_columns)
                         for col in df.columns}, columns=df.columns)


def header_labels(columns, column_labels: Mapping | None) -> list[str]:
    labels = {**DEFAULT_COLUMN_LABELS, **(column_labels or {})}
    return [str(labels.get(c, c)) for c in columns]

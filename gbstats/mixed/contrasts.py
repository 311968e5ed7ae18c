"""Factor codings (contrasts) as R defines them, for every backend.

``contrasts={"close": "sum"}`` in `fit_lmm`, `fit_glmm` or `fit_bayes` codes
the factor ``close`` as R's ``contr.sum`` does; any factor not named keeps
``"treatment"`` (R's default, ``contr.treatment``). A factor may also get a
user matrix: one row per level (in the factor's level order) and one column
per contrast.

R names a contrast-coded column ``<variable><contrast column name>``:

* treatment: the column names are the levels after the reference, so a term
  reads ``closedistant``;
* sum: ``contr.sum`` has no column names, so R numbers them: ``close1``,
  ``close2``; level j (j < k) gets +1 in column j, the last level -1 in every
  column, so each coefficient is the deviation of a level from the unweighted
  mean of the level means and the intercept is that grand mean;
* a user matrix: a pandas DataFrame's column names, or ``1``, ``2``, ... for a
  bare array (as R does for a matrix without colnames);
* centered_helmert: Fraundorf's ``centerfactor`` (the weighted, centred
  Helmert coding of Gardner & Brown-Schmidt 2024, among others): numbered
  ``1``, ``2``, ... as R numbers a matrix without colnames. For contrast i the
  i-th reference level gets -0.5, the earlier reference levels 0 and every
  other level +0.5; then the column is centred on its observation-weighted
  mean, so that with unequal cell sizes the intercept is the mean over
  observations and each contrast is uncorrelated with the intercept.
  ``"centered_helmert"`` takes R's default reference levels (the first k-1
  levels, in order) and the fitted rows' counts; ``CenteredHelmert(reference=
  ("last", "first"), counts={...})`` names them, and may fix the counts (an
  analysis that sets the coding on the whole data set and then fits a subset
  keeps the whole set's weights, because R's ``[.factor`` keeps a factor's
  contrasts attribute).

`Coding` holds one factor's resolved coding; `resolve_contrasts` checks a
user's ``contrasts=`` against the factors of a fit and returns one `Coding` per
factor, so every engine codes the same columns under the same names.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gbstats.errors import GbstatsError

CODING_NAMES = ("treatment", "sum", "centered_helmert")


@dataclass(frozen=True)
class CenteredHelmert:
    """The weighted, centred Helmert coding as a `contrasts=` value.

    `reference`: the k-1 reference levels, one per contrast, in contrast
    order (None: the first k-1 levels, R's ``centerfactor`` default).
    `counts`: observations per level used for the centring, as
    ``((level, n), ...)`` or a dict (None: the rows being fitted).
    """

    reference: tuple[str, ...] | None = None
    counts: tuple[tuple[str, int], ...] | None = None

    def __post_init__(self):
        if self.reference is not None:
            object.__setattr__(self, "reference", tuple(str(r) for r in self.reference))
        if isinstance(self.counts, Mapping):
            object.__setattr__(self, "counts", tuple((str(k), int(v)) for k, v in self.counts.items()))


@dataclass(frozen=True)
class Coding:
    """One factor's contrast coding: `matrix[i, j]` is level i's value in
    contrast column j, named `names[j]` (R's name is variable + names[j])."""

    variable: str
    kind: str                  # "treatment", "sum", "centered_helmert" or "matrix"
    levels: tuple[str, ...]
    matrix: np.ndarray
    names: tuple[str, ...]

    def weights(self, column: int) -> dict[str, float]:
        """{level: value} of one contrast column."""
        return {lv: float(self.matrix[i, column]) for i, lv in enumerate(self.levels)}

    def describe(self) -> str:
        """How a report names this coding, e.g. "close: sum (contr.sum; close1 = +1 for ...)"."""
        if self.kind == "treatment":
            return f"{self.variable}: treatment (reference level {self.levels[0]!r})"
        if self.kind == "sum":
            # Name each term: a reader of "close1" must not have to know R's column naming.
            plus = ", ".join(f"{self.variable}{name} = +1 for {level!r}"
                             for name, level in zip(self.names, self.levels))
            return (f"{self.variable}: sum-to-zero (R's contr.sum; {plus}; {self.levels[-1]!r} "
                    "= -1 in every column, other levels 0; main effects are deviations from "
                    "the mean of the level means)")
        rows = "; ".join(f"{lv} = {list(np.round(self.matrix[i], 6))}"
                         for i, lv in enumerate(self.levels))
        if self.kind == "centered_helmert":
            return (f"{self.variable}: weighted centred Helmert (R's centerfactor; each column "
                    f"centred on its observation-weighted mean; {rows})")
        terms = [f"{self.variable}{name}" for name in self.names]   # the coefficient names
        return f"{self.variable}: user matrix with columns {terms} ({rows})"

    def to_record(self) -> dict:
        """A JSON-able record for fit_stats["contrasts"]."""
        return {"kind": self.kind, "levels": list(self.levels), "names": list(self.names),
                "matrix": self.matrix.tolist()}


def contr_treatment(variable: str, levels) -> Coding:
    levels = tuple(levels)
    return Coding(variable, "treatment", levels, np.eye(len(levels))[:, 1:], levels[1:])


def contr_sum(variable: str, levels) -> Coding:
    levels = tuple(levels)
    k = len(levels)
    matrix = np.vstack([np.eye(k - 1), -np.ones(k - 1)])
    return Coding(variable, "sum", levels, matrix, tuple(str(j) for j in range(1, k)))


def centered_helmert(variable: str, levels, counts: Mapping[str, int],
                     reference=None) -> Coding:
    """Fraundorf's ``centerfactor`` as a `Coding` (see the module docstring).

    `counts` maps every level to its number of observations; `reference`
    lists k-1 distinct levels (default: the first k-1). Like ``centerfactor``
    it takes up to three levels: with more, its Helmert scheme has not been
    checked against R here.
    """
    levels = tuple(levels)
    k = len(levels)
    if k < 2 or k > 3:
        raise GbstatsError(f"centered_helmert for {variable!r}: {k} levels {list(levels)}; "
                           "expected 2 or 3 (as R's centerfactor)")
    reference = tuple(levels[:k - 1]) if reference is None else tuple(reference)
    if len(reference) != k - 1 or len(set(reference)) != k - 1:
        raise GbstatsError(f"centered_helmert for {variable!r}: reference levels {list(reference)}; "
                           f"expected {k - 1} distinct levels, one per contrast")
    unknown = [r for r in reference if r not in levels]
    if unknown:
        raise GbstatsError(f"centered_helmert for {variable!r}: reference level(s) {unknown} are "
                           f"not levels of the factor; its levels are {list(levels)}")
    missing = [lv for lv in levels if lv not in counts]
    if missing:
        raise GbstatsError(f"centered_helmert for {variable!r}: no observation count for level(s) "
                           f"{missing}; expected a count for each of {list(levels)}")
    n = np.array([float(counts[lv]) for lv in levels])
    if np.any(n < 0) or n.sum() <= 0:
        raise GbstatsError(f"centered_helmert for {variable!r}: counts {dict(zip(levels, n))}; "
                           "expected non-negative counts with a positive total")
    matrix = np.empty((k, k - 1))
    for i, ref in enumerate(reference):
        column = np.full(k, 0.5)
        column[[levels.index(r) for r in reference[:i]]] = 0.0
        column[levels.index(ref)] = -0.5
        matrix[:, i] = column - (n * column).sum() / n.sum()
    return Coding(variable, "centered_helmert", levels, matrix,
                  tuple(str(j) for j in range(1, k)))


def user_coding(variable: str, levels, spec) -> Coding:
    """A user's matrix: a DataFrame (index = levels, any order; columns = names)
    or an array/list of rows in level order (columns named 1, 2, ...)."""
    levels = tuple(levels)
    k = len(levels)
    if isinstance(spec, pd.DataFrame):
        index = [str(i) for i in spec.index]
        if sorted(index) != sorted(levels):
            # a default RangeIndex means "rows in level order"
            if not isinstance(spec.index, pd.RangeIndex):
                raise GbstatsError(
                    f"contrast matrix for {variable!r}: its index {index} must list the factor's "
                    f"levels {list(levels)} (or be a plain 0..k-1 index for rows in level order)")
            matrix = spec.to_numpy(dtype=float)
        else:
            matrix = spec.set_axis(index).loc[list(levels)].to_numpy(dtype=float)
        names = tuple(str(c) for c in spec.columns)
    else:
        try:
            matrix = np.asarray(spec, dtype=float)
        except (TypeError, ValueError) as exc:
            raise GbstatsError(f"contrast for {variable!r}: cannot read {spec!r} as a matrix "
                               f"({exc}); expected 'treatment', 'sum' or a {k} x {k - 1} matrix") from exc
        if matrix.ndim == 1:
            matrix = matrix[:, None]
        names = tuple(str(j) for j in range(1, matrix.shape[1] + 1))
    if matrix.ndim != 2 or matrix.shape != (k, k - 1):
        raise GbstatsError(
            f"contrast matrix for {variable!r} has shape {matrix.shape}; expected {k} rows (levels "
            f"{list(levels)}) and {k - 1} columns, one per contrast (R's complete coding)")
    if not np.all(np.isfinite(matrix)):
        raise GbstatsError(f"contrast matrix for {variable!r} holds non-finite values: {matrix.tolist()}")
    with_intercept = np.column_stack([np.ones(k), matrix])
    if np.linalg.matrix_rank(with_intercept) < k:
        raise GbstatsError(
            f"contrast matrix for {variable!r} is not of full rank together with the intercept "
            f"(rank {np.linalg.matrix_rank(with_intercept)} < {k} levels): some level differences "
            "could not be estimated")
    if len(set(names)) != len(names):
        raise GbstatsError(f"contrast matrix for {variable!r} repeats a column name: {list(names)}")
    return Coding(variable, "matrix", levels, matrix, names)


def resolve_contrasts(contrasts: Mapping | None, levels: Mapping[str, list[str]],
                      formula: str = "",
                      counts: Mapping[str, Mapping[str, int]] | None = None) -> dict[str, Coding]:
    """One `Coding` per factor in `levels`: the user's choice, else treatment.

    `counts` ({factor: {level: rows}}, the fitted rows) weights a
    centered_helmert coding that does not fix its own counts.

    An unknown coding name, a matrix of the wrong shape, or a name that is not
    a factor of the formula is an error (a typo must not silently leave a
    factor on treatment coding).
    """
    contrasts = dict(contrasts or {})
    unknown = [v for v in contrasts if v not in levels]
    if unknown:
        raise GbstatsError(
            f"contrasts given for {unknown}, which {'are' if len(unknown) > 1 else 'is'} not a factor "
            f"of {formula!r}; its factors are {list(levels)} (numeric columns take no contrasts)")
    out = {}
    for var, lv in levels.items():
        spec = contrasts.get(var, "treatment")
        if isinstance(spec, str):
            if spec == "treatment":
                out[var] = contr_treatment(var, lv)
            elif spec == "sum":
                out[var] = contr_sum(var, lv)
            elif spec == "centered_helmert":
                out[var] = centered_helmert(var, lv, _level_counts(var, counts, formula))
            else:
                raise GbstatsError(f"unknown contrast {spec!r} for {var!r}; expected one of "
                                   f"{list(CODING_NAMES)} or a {len(lv)} x {len(lv) - 1} matrix")
        elif isinstance(spec, CenteredHelmert):
            given = dict(spec.counts) if spec.counts is not None else _level_counts(var, counts, formula)
            out[var] = centered_helmert(var, lv, given, spec.reference)
        else:
            out[var] = user_coding(var, lv, spec)
    return out


def _level_counts(var: str, counts, formula: str) -> dict:
    if not counts or var not in counts:
        raise GbstatsError(f"centered_helmert for {var!r} in {formula!r} needs the number of rows "
                           "per level; pass CenteredHelmert(counts=...) or fit through "
                           "fit_lmm/fit_glmm/fit_bayes, which count the fitted rows")
    return dict(counts[var])


def describe_codings(codings: Mapping[str, Coding]) -> str:
    """One sentence for a table note: which coding each factor uses."""
    if not codings:
        return "No factor predictors (no contrasts)."
    return "Factor coding: " + "; ".join(c.describe() for c in codings.values()) + "."


def codings_from_records(records: Mapping[str, Mapping]) -> dict[str, Coding]:
    """The inverse of `Coding.to_record` (fit_stats["contrasts"] -> codings)."""
    return {var: Coding(var, r["kind"], tuple(r["levels"]), np.asarray(r["matrix"], float).reshape(
        len(r["levels"]), len(r["names"])), tuple(r["names"])) for var, r in records.items()}

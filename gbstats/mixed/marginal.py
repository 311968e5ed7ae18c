"""Estimated marginal means and their pairwise contrasts: `marginal_means`.

``marginal_means(fit, "close", by="gendered")`` is R's
``emmeans(fit, pairwise ~ close | gendered)``: the model's prediction for each
level of `specs` (within each level of `by`), averaged with equal weights
over the levels of the model's other factors, with numeric covariates at
their mean (emmeans' reference grid), and the differences between every pair
of those means within each `by` group.

How each backend computes them:

* lme4: R's emmeans itself on the fitted model, with Satterthwaite df for
  LMMs (as the coefficient tests) and z for GLMMs;
* statsmodels: the same reference grid built here, means = L b, SEs from
  the fixed-effect covariance (sqrt(diag(L V L'))), z tests (statsmodels has
  no df for mixed models);
* bambi: L times every posterior draw of the fixed effects: posterior mean,
  SD and 95% equal-tailed interval; no tests, so no adjustment.

``scale="response"`` (GLMMs) gives probabilities, and contrasts as
differences of probabilities (emmeans' ``regrid``), rather than log-odds and
log odds ratios. ``adjust`` corrects the p-values of the pairwise contrasts
within each `by` group: "tukey" (Tukey's HSD, the studentized range; emmeans'
default for pairwise comparisons), "holm", or "none"; intervals get the
matching adjustment (Tukey, or Bonferroni for "holm", as emmeans does).
Means are never adjusted.

The result, `MarginalMeans`, holds two tidy tables with the same columns on
every backend, ready for `gbstats.report.latex.to_latex_table`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations, product

import numpy as np
import pandas as pd
from scipy import stats

from gbstats.errors import GbstatsError
from gbstats.mixed.formula import model_matrix
from gbstats.mixed.results import FitResult

ADJUSTMENTS = ("tukey", "holm", "none")
SCALES = ("link", "response")
VALUE_COLUMNS = ["estimate", "se", "df", "ci_low", "ci_high", "stat", "p_value"]


@dataclass
class MarginalMeans:
    """means      one row per cell: the specs and by columns, then
                  estimate, se, df, ci_low, ci_high, stat, p_value
    contrasts  one row per pair within a by group: contrast ("a - b"), the by
               columns, then the same value columns (p_value adjusted)
    specs, by, scale, adjust, backend: what was asked and how it was computed
    notes      sentences for a table note"""

    means: pd.DataFrame
    contrasts: pd.DataFrame
    specs: list[str]
    by: list[str]
    scale: str
    adjust: str
    backend: str
    notes: list[str] = field(default_factory=list)


def _as_list(value) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def marginal_means(fit: FitResult, specs, by=None, *, scale: str = "link", adjust: str = "tukey",
                   level: float = 0.95, reverse: bool = False) -> MarginalMeans:
    """Estimated marginal means of `specs` (within `by`) and their pairwise
    contrasts; see the module doc. `specs` and `by` name factor predictors.
    ``reverse=True`` gives later-minus-earlier contrasts ("pro - anti"),
    emmeans' ``revpairwise``."""
    specs, by = _as_list(specs), _as_list(by)
    _check_request(fit, specs, by, scale, adjust, level)
    if fit.backend == "lme4":
        means, pairs = _lme4(fit, specs, by, scale, adjust, level, reverse)
        adjust_used = adjust
    elif fit.backend == "statsmodels":
        means, pairs = _from_vcov(fit, specs, by, adjust, level, reverse)
        adjust_used = adjust
    else:
        means, pairs = _from_draws(fit, specs, by, scale, level, reverse)
        adjust_used = "none"
    return MarginalMeans(means, pairs, specs, by, scale, adjust_used, fit.backend,
                         _notes(fit, specs, by, scale, adjust_used, level))


def _check_request(fit: FitResult, specs, by, scale, adjust, level) -> None:
    if not isinstance(fit, FitResult) or fit.handle is None:
        raise GbstatsError("marginal_means needs a FitResult from fit_lmm, fit_glmm or fit_bayes "
                           "(one that still carries its fitted model)")
    factors = list(fit.handle.prepared.levels)
    fixed_vars = {v for t in fit.handle.parsed.fixed_terms for v in t}
    if not specs:
        raise GbstatsError("marginal_means: name at least one factor in specs, e.g. specs='close'")
    unknown = [v for v in specs + by if v not in factors or v not in fixed_vars]
    if unknown:
        raise GbstatsError(f"marginal_means: {unknown} not factor(s) among the fixed effects of "
                           f"{fit.formula!r}; its factors are {[f for f in factors if f in fixed_vars]}")
    if set(specs) & set(by):
        raise GbstatsError(f"marginal_means: {sorted(set(specs) & set(by))} given in both specs and by")
    if scale not in SCALES:
        raise GbstatsError(f"marginal_means: scale {scale!r}; expected one of {list(SCALES)}")
    if adjust not in ADJUSTMENTS:
        raise GbstatsError(f"marginal_means: adjust {adjust!r}; expected one of {list(ADJUSTMENTS)}")
    if not 0 < level < 1:
        raise GbstatsError(f"marginal_means: level {level!r} must lie between 0 and 1")


def _notes(fit, specs, by, scale, adjust, level) -> list[str]:
    grid = ("Marginal means average the model's predictions with equal weights over the levels "
            "of the other factors, numeric covariates at their mean (emmeans' reference grid)")
    notes = [grid + "."]
    if fit.family != "gaussian":
        notes.append("Scale: probabilities; contrasts are differences of probabilities."
                     if scale == "response" else "Scale: log-odds; contrasts are log odds ratios.")
    how = {"lme4": "by R's emmeans, " + ("Satterthwaite df" if fit.family == "gaussian" else "z tests"),
           "statsmodels": "from the fixed effects and their covariance, z tests",
           "bambi": "from the posterior draws: posterior mean, SD and equal-tailed interval"}
    notes.append(f"Computed {how[fit.backend]}; {round(level * 100)}% intervals.")
    if fit.backend != "bambi":
        notes.append({"tukey": "Pairwise p-values and intervals adjusted by Tukey's method within each "
                               "family",
                      "holm": "Pairwise p-values adjusted by Holm's method (intervals by Bonferroni) "
                              "within each family",
                      "none": "Pairwise p-values and intervals not adjusted for multiplicity"}[adjust]
                     + (f" (one family per level of {', '.join(by)})." if by else "."))
    return notes


# --------------------------------------------------------------------------
# lme4: R's emmeans

def _lme4(fit, specs, by, scale, adjust, level, reverse):
    from gbstats.mixed.engines import lme4 as engine

    means, pairs = engine.emmeans(fit.handle, specs, by, scale, adjust, level, reverse)
    return _tidy_emmeans(means, specs + by), _tidy_emmeans(pairs, ["contrast"] + by)


def _tidy_emmeans(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """emmeans' summary columns -> ours (emmean/prob/response/estimate ->
    estimate, SE -> se, lower.CL/asymp.LCL -> ci_low, t.ratio/z.ratio ->
    stat, p.value -> p_value; an infinite df (z) -> NaN, as in coefs)."""
    rename = {"emmean": "estimate", "prob": "estimate", "response": "estimate", "rate": "estimate",
              "SE": "se", "lower.CL": "ci_low", "asymp.LCL": "ci_low", "upper.CL": "ci_high",
              "asymp.UCL": "ci_high", "t.ratio": "stat", "z.ratio": "stat", "p.value": "p_value"}
    out = table.rename(columns=rename)
    out["df"] = pd.to_numeric(out["df"], errors="coerce").replace([np.inf, -np.inf], np.nan)
    for key in keys:
        out[key] = out[key].astype(str)
    return out[keys + VALUE_COLUMNS].reset_index(drop=True)


# --------------------------------------------------------------------------
# the reference grid, for statsmodels and bambi

def _cells(levels: dict, names: list[str]) -> list[tuple]:
    """Every combination of the named factors' levels, the first varying fastest (emmeans' order)."""
    return [tuple(reversed(c)) for c in product(*[levels[n] for n in reversed(names)])]


def grid_matrix(fit: FitResult, specs: list[str], by: list[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """(cells, L): one row of L per cell of specs x by, the average of the
    model-matrix rows of the reference grid in that cell."""
    handle = fit.handle
    parsed, prepared = handle.parsed, handle.prepared
    fixed_vars = list(dict.fromkeys(v for t in parsed.fixed_terms for v in t))
    factors = [v for v in fixed_vars if v in prepared.levels]
    numeric = [v for v in fixed_vars if v not in prepared.levels]
    grid = pd.DataFrame(_cells(prepared.levels, factors), columns=factors)
    for var in numeric:
        grid[var] = float(prepared.frame[var].astype(float).mean())
    matrix = model_matrix(parsed.intercept, parsed.fixed_terms, grid, prepared.levels, handle.codings)
    names = specs + by
    cells = pd.DataFrame(_cells(prepared.levels, names), columns=names)
    rows = []
    for cell in cells.itertuples(index=False):
        inside = np.logical_and.reduce([grid[n].to_numpy() == v for n, v in zip(names, cell)])
        rows.append(matrix.to_numpy()[inside].mean(axis=0))
    return cells, np.vstack(rows)


def _pairs(cells: pd.DataFrame, specs: list[str], by: list[str], reverse: bool = False
           ) -> tuple[pd.DataFrame, np.ndarray]:
    """Pairwise differences (i - j, i before j; j - i with `reverse`) within
    each by group, in emmeans' order: (labels, C)."""
    labels, rows = [], []
    groups = [()] if not by else list(dict.fromkeys(map(tuple, cells[by].to_numpy().tolist())))
    for group in groups:
        inside = (np.ones(len(cells), bool) if not by else
                  np.logical_and.reduce([cells[b].to_numpy() == v for b, v in zip(by, group)]))
        index = np.flatnonzero(inside)
        for i, j in combinations(index, 2):
            if reverse:
                i, j = j, i
            row = np.zeros(len(cells))
            row[i], row[j] = 1.0, -1.0
            name = lambda k: " ".join(str(cells.iloc[k][s]) for s in specs)  # noqa: E731
            labels.append({"contrast": f"{name(i)} - {name(j)}", **dict(zip(by, group)),
                           "_family": group, "_k": len(index)})
            rows.append(row)
    return pd.DataFrame(labels), np.vstack(rows) if rows else np.zeros((0, len(cells)))


def _from_vcov(fit, specs, by, adjust, level, reverse=False):
    from gbstats.mixed.engines import statsmodels as engine

    beta, vcov = engine.fixed_effects(fit.handle)
    cells, L = grid_matrix(fit, specs, by)
    z = stats.norm.ppf(0.5 + level / 2)
    means = _wald(cells, L @ beta, L @ vcov @ L.T, z)
    labels, C = _pairs(cells, specs, by, reverse)
    K = C @ L
    est, cov = K @ beta, K @ vcov @ K.T
    se = np.sqrt(np.diag(cov))
    table = labels.copy()
    table["estimate"], table["se"], table["df"] = est, se, np.nan
    table["stat"] = est / se
    raw_p = 2 * stats.norm.sf(np.abs(table["stat"]))
    table["p_value"], half = _adjusted(table, raw_p, se, adjust, level)
    table["ci_low"], table["ci_high"] = est - half, est + half
    return means, table[["contrast"] + by + VALUE_COLUMNS].reset_index(drop=True)


def _wald(cells, est, cov, z) -> pd.DataFrame:
    out = cells.astype(str).copy()
    se = np.sqrt(np.diag(cov))
    out["estimate"], out["se"], out["df"] = est, se, np.nan
    out["ci_low"], out["ci_high"] = est - z * se, est + z * se
    out["stat"] = est / se
    out["p_value"] = 2 * stats.norm.sf(np.abs(out["stat"]))
    return out


def _adjusted(table: pd.DataFrame, raw_p: np.ndarray, se: np.ndarray, adjust: str, level: float):
    """(adjusted p-values, interval half-widths) for z statistics, family by family."""
    p = np.asarray(raw_p, float).copy()
    half = stats.norm.ppf(0.5 + level / 2) * se
    for _family, idx in table.groupby("_family", sort=False).indices.items():
        k, m = int(table["_k"].iloc[idx[0]]), len(idx)
        if adjust == "tukey" and k > 2:
            # Tukey's HSD: |z| * sqrt(2) against the studentized range of k means (df infinite)
            p[idx] = stats.studentized_range.sf(np.abs(table["stat"].to_numpy()[idx]) * np.sqrt(2), k, np.inf)
            half[idx] = stats.studentized_range.ppf(level, k, np.inf) / np.sqrt(2) * se[idx]
        elif adjust == "holm" and m > 1:
            p[idx] = holm(p[idx])
            half[idx] = stats.norm.ppf(1 - (1 - level) / (2 * m)) * se[idx]
    return p, half


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjustment (Holm 1979): the i-th smallest of m
    p-values times (m - i + 1), made monotone, capped at 1."""
    p = np.asarray(p_values, float)
    order = np.argsort(p)
    m = len(p)
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out


# --------------------------------------------------------------------------
# bambi: posterior draws

def _from_draws(fit, specs, by, scale, level, reverse=False):
    from gbstats.mixed.bayes import fixed_effect_draws

    draws = fixed_effect_draws(fit)
    cells, L = grid_matrix(fit, specs, by)
    cell_draws = draws @ L.T
    if scale == "response" and fit.family != "gaussian":
        cell_draws = 1 / (1 + np.exp(-cell_draws))
    labels, C = _pairs(cells, specs, by, reverse)
    return (_summarise(cells.astype(str), cell_draws, level),
            _summarise(labels[["contrast"] + by], cell_draws @ C.T, level))


def _summarise(keys: pd.DataFrame, draws: np.ndarray, level: float) -> pd.DataFrame:
    out = keys.reset_index(drop=True).copy()
    out["estimate"], out["se"], out["df"] = draws.mean(axis=0), draws.std(axis=0, ddof=1), np.nan
    out["ci_low"] = np.quantile(draws, 0.5 - level / 2, axis=0)
    out["ci_high"] = np.quantile(draws, 0.5 + level / 2, axis=0)
    out["stat"], out["p_value"] = np.nan, np.nan
    return out

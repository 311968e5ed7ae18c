"""Population-averaged (marginal) effects of a binomial GLMM, beside its conditional ones.

A glmer coefficient is *conditional* (subject-specific): the change in log-odds for a
participant and an item whose random effects are held fixed. Averaged over the
population of participants and items the change is smaller in absolute value, because
averaging probabilities over a normal random effect flattens the logistic curve
(Zeger, Liang & Albert 1988, Biometrics 44, 1049-1060). A language model's next-word
probability is fitted to text written by many people, so when it is set beside people's
effect the population-averaged one is the closer analogue; a report that puts a
conditional estimate beside a marginal one must say which is which.

What is computed (`population_averaged_contrast`): for design rows L_k (cells of the
design: a condition, a rating) and weights w_k, the effect sum_k w_k g(L_k beta) with

    conditional:  g(eta) = eta
    marginal:     g(eta) = logit E[expit(eta + u)],  u ~ N(0, sigma^2),

sigma^2 the sum of the fit's random-intercept variances (every grouping factor's
intercept adds to the linear predictor of a new participant on a new item). The
expectation is computed by Gauss-Hermite quadrature (`marginal_probability`). A slope is
a central difference (`slope_rows`); a difference between conditions is +1 / -1
weights over its cells. The SE is the delta method with the fixed effects' covariance
(vcov(beta) from lme4) and sigma^2 treated as known, so it is a little too small for the
marginal effect; the gradient of g is E[p(1 - p)] / (pbar (1 - pbar)) times L_k.

This is the marginal effect implied by the fitted GLMM (model-based), not a GEE
estimate. Random slopes make sigma^2 depend on the row; they are not supported (an
error says so).

A linear mixed model of a logit (a language model's logit P(she) per prompt, say) has
the same two readings: its fixed effects are effects on the mean logit, and the logit
of the mean probability over frames, names and prompts is flatter. With
`logit_response=True` a gaussian fit is read that way, sigma^2 then including the
residual variance (the prompt-level spread around the random effects), so that a
model's effect and people's can be set side by side on one (population-averaged) scale.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit, logit

from gbstats.errors import GbstatsError
from gbstats.mixed.contrasts import codings_from_records
from gbstats.mixed.formula import model_matrix, parse_formula

MARGINAL_METHOD = ("population-averaged: logit of the fitted probability averaged over the "
                   "random intercepts (Gauss-Hermite), delta-method SE with the variances "
                   "treated as known")
N_NODES = 60


def intercept_variance(fit, include_residual: bool = False) -> float:
    """Sum of the random-intercept variances of a fit (and of the residual variance with
    `include_residual`); an error for random slopes."""
    rv = fit.ranef_var
    if not include_residual:
        rv = rv[rv["group"] != "Residual"]
    slopes = rv[(rv["group"] != "Residual")
                & ~rv["term"].astype(str).isin(["(Intercept)", "Intercept", "1", "", "nan"])]
    if len(slopes):
        raise GbstatsError(f"population-averaged effects of {fit.formula!r}: random slopes "
                           f"({', '.join(f'{g}: {t}' for g, t in zip(slopes['group'], slopes['term']))}) "
                           "make the averaging depend on the row; refit with random intercepts only")
    return float(rv["variance"].sum())


def marginal_probability(eta, sigma2: float, n_nodes: int = N_NODES) -> tuple[np.ndarray, np.ndarray]:
    """(E[expit(eta + u)], E[expit'(eta + u)]) for u ~ N(0, sigma2), by Gauss-Hermite."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(n_nodes)
    weights = weights / weights.sum()
    z = np.asarray(eta, dtype=float)[..., None] + np.sqrt(max(sigma2, 0.0)) * nodes
    p = expit(z)
    return (p * weights).sum(axis=-1), (p * (1 - p) * weights).sum(axis=-1)


def fixed_effects(fit) -> tuple[pd.Series, np.ndarray]:
    """(beta by term, vcov) of a frequentist fit (lme4 records vcov in fit_stats)."""
    vcov = fit.fit_stats.get("vcov")
    if vcov is None:
        raise GbstatsError(f"the {fit.backend} fit of {fit.formula!r} carries no covariance of "
                           "its fixed effects (fit_stats['vcov']); refit with the lme4 backend")
    beta = fit.coefs.set_index("term")["estimate"]
    vcov = np.asarray(vcov, dtype=float)
    if vcov.shape != (len(beta), len(beta)):
        raise GbstatsError(f"fit_stats['vcov'] of {fit.formula!r} is {vcov.shape}, expected "
                           f"{(len(beta), len(beta))}")
    return beta, vcov


def design_rows(fit, rows: pd.DataFrame) -> pd.DataFrame:
    """The fixed-effect design (R's model.matrix, the fit's own codings) of `rows`, which
    hold a value for every predictor (factor levels as strings)."""
    parsed = parse_formula(fit.formula)
    if not isinstance(rows, pd.DataFrame) or len(rows) == 0:
        raise GbstatsError("design rows must be a non-empty DataFrame with a value for every "
                           f"predictor of {fit.formula!r}")
    needed = [v for v in parsed.variables if any(v in term for term in parsed.fixed_terms)]
    missing = [v for v in needed if v not in rows.columns]
    if missing:
        raise GbstatsError(f"the design rows have no column for predictor(s) "
                           f"{', '.join(missing)} of {fit.formula!r}; expected a value for "
                           f"every predictor ({', '.join(needed)}) in every row, found columns "
                           f"{', '.join(map(str, rows.columns))}")
    blank = [v for v in needed if rows[v].isna().any()]
    if blank:
        raise GbstatsError(f"the design rows have missing values of {', '.join(blank)} (row "
                           f"{int(np.flatnonzero(rows[blank[0]].isna().to_numpy())[0]) + 1}); "
                           f"every row needs a value for every predictor of {fit.formula!r}")
    codings = codings_from_records(fit.fit_stats.get("contrasts") or {})
    levels = {v: list(c.levels) for v, c in codings.items()}
    unknown = {v: sorted(set(rows[v].astype(str)) - set(levels[v])) for v in levels if v in rows}
    unknown = {v: bad for v, bad in unknown.items() if bad}
    if unknown:
        raise GbstatsError(f"levels {unknown} are not levels of the fit of {fit.formula!r}")
    frame = rows.copy()
    for v in levels:
        frame[v] = frame[v].astype(str)
    design = model_matrix(parsed.intercept, parsed.fixed_terms, frame, levels, codings)
    return design[list(fit.coefs["term"])]


def slope_rows(at: pd.DataFrame, variable: str, step: float = 1e-3
               ) -> tuple[pd.DataFrame, np.ndarray]:
    """(rows, weights) of a central-difference slope in `variable` at each row of `at`,
    averaged over those rows (weights 1 / (2 step n))."""
    up, down = at.assign(**{variable: at[variable] + step}), at.assign(
        **{variable: at[variable] - step})
    n = len(at)
    return (pd.concat([up, down], ignore_index=True),
            np.r_[np.full(n, 1 / (2 * step * n)), np.full(n, -1 / (2 * step * n))])


def _averaging_variance(fit, logit_response: bool) -> float:
    if fit.family in ("binomial", "bernoulli"):
        return intercept_variance(fit)
    if fit.family == "gaussian" and logit_response:
        return intercept_variance(fit, include_residual=True)
    raise GbstatsError(f"population-averaged effects need a binomial GLMM, or a linear model "
                       f"of a logit with logit_response=True; {fit.formula!r} is {fit.family}")


def population_averaged_contrast(fit, rows: pd.DataFrame, weights: Sequence[float], *,
                                 logit_response: bool = False, n_nodes: int = N_NODES,
                                 confidence: float = 0.95) -> dict:
    """The conditional and the population-averaged value of sum_k w_k g(L_k beta)
    (module docstring) for a binomial GLMM (or an LMM of a logit, `logit_response`):
    estimates, delta-method SEs and Wald intervals, sigma^2 and the method."""
    sigma2 = _averaging_variance(fit, logit_response)
    beta, vcov = fixed_effects(fit)
    design = design_rows(fit, rows).to_numpy(dtype=float)
    w = np.asarray(weights, dtype=float)
    if w.shape != (design.shape[0],):
        raise GbstatsError(f"{len(w)} weights for {design.shape[0]} rows")
    eta = design @ beta.to_numpy()
    pbar, dens = marginal_probability(eta, sigma2, n_nodes)
    conditional = float(w @ eta)
    grad_c = w @ design
    marginal = float(w @ logit(pbar))
    grad_m = (w * dens / (pbar * (1 - pbar))) @ design
    crit = stats.norm.ppf(1 - (1 - confidence) / 2)
    se_c = float(np.sqrt(grad_c @ vcov @ grad_c))
    se_m = float(np.sqrt(grad_m @ vcov @ grad_m))
    return {"conditional": conditional, "conditional_se": se_c,
            "conditional_ci_low": conditional - crit * se_c,
            "conditional_ci_high": conditional + crit * se_c,
            "marginal": marginal, "marginal_se": se_m,
            "marginal_ci_low": marginal - crit * se_m, "marginal_ci_high": marginal + crit * se_m,
            "random_intercept_variance": sigma2, "method": MARGINAL_METHOD}


def population_averaged_probabilities(fit, rows: pd.DataFrame, *, logit_response: bool = False,
                                      n_nodes: int = N_NODES) -> pd.DataFrame:
    """Per row: the conditional probability at random effects 0 (expit(L beta)) and the
    population-averaged probability E[expit(L beta + u)]."""
    sigma2 = _averaging_variance(fit, logit_response)
    beta, _ = fixed_effects(fit)
    eta = design_rows(fit, rows).to_numpy(dtype=float) @ beta.to_numpy()
    pbar, _ = marginal_probability(eta, sigma2, n_nodes)
    return rows.assign(p_conditional=expit(eta), p_population=pbar)


def cells(values: Mapping[str, Sequence]) -> pd.DataFrame:
    """Every combination of the given predictor values, as design rows."""
    index = pd.MultiIndex.from_product(list(values.values()), names=list(values))
    return index.to_frame(index=False)

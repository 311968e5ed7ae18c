"""The statsmodels engine: `MixedLM` fitted by REML, as lme4's lmer is by default.

MixedLM fits one grouping factor with a random intercept and/or correlated
random slopes. It cannot fit crossed or several grouping factors, uncorrelated
terms for one group, or a maximum-likelihood GLMM; those formulas raise an
error that names the lme4 backend. Its tests are Wald z tests, so df is NaN.
"""
from __future__ import annotations

import warnings as pywarnings

import numpy as np
import pandas as pd
from scipy import stats

from gbstats.errors import GbstatsError
from gbstats.mixed.formula import ParsedFormula, model_matrix, r_term_names
from gbstats.mixed.results import RANEF_COLUMNS, FitHandle, FitResult, wald_table

LME4_HINT = "use backend='lme4' (R + lme4 + pymer4; `gbstats check` shows whether they are installed)"
# lme4's isSingular() default: a relative (to sigma) Cholesky factor entry below 1e-4.
SINGULAR_TOL = 1e-4
OPTIMIZERS = ("lbfgs", "bfgs", "nm")


class UnsupportedByStatsmodels(GbstatsError):
    """A formula or family statsmodels MixedLM cannot fit."""


def check_supported(parsed: ParsedFormula, family: str) -> None:
    if family != "gaussian":
        raise UnsupportedByStatsmodels(
            f"the statsmodels backend cannot fit a {family} GLMM ({parsed.text!r}): statsmodels has "
            f"no maximum-likelihood GLMM (its BinomialBayesMixedGLM is variational Bayes); {LME4_HINT}")
    if len(parsed.random) > 1:
        what = ("crossed random effects" if len(parsed.groups) > 1
                else "several random terms for one grouping factor")
        raise UnsupportedByStatsmodels(
            f"the statsmodels backend cannot fit {what} in {parsed.text!r}: MixedLM takes one "
            f"grouping factor with one (correlated) random term; {LME4_HINT}")


def fit(parsed: ParsedFormula, prepared, family: str) -> FitResult:
    check_supported(parsed, family)
    from statsmodels.regression.mixed_linear_model import MixedLM

    # A fresh 0..n-1 index: statsmodels aligns exog, exog_re and groups by position.
    frame = prepared.frame.reset_index(drop=True)
    random = parsed.random[0]
    exog = model_matrix(parsed.intercept, parsed.fixed_terms, frame, prepared.levels,
                        prepared.codings)
    exog_re = model_matrix(random.intercept, random.terms, frame, prepared.levels, prepared.codings)
    model = MixedLM(frame[parsed.response].astype(float), exog, groups=frame[random.group],
                    exog_re=exog_re)
    result, messages = _fit_reml(model, parsed.text)
    terms = r_term_names(parsed.intercept, parsed.fixed_terms, prepared.levels, prepared.codings)
    coefs = _coef_table(result, terms)
    ranef = _ranef_table(result, random.group, list(exog_re.columns))
    warnings = list(prepared.warnings) + messages
    if _is_singular(result):
        warnings.append("boundary (singular) fit: a random-effect variance is (near) zero or a "
                        "correlation is +/-1 (lme4's isSingular() criterion)")
    stats = {**_fit_stats(result, prepared, parsed, exog, exog_re),
             "ci_method": "REML; Wald z tests and 95% Wald intervals (estimate +/- 1.96 x SE)"}
    return FitResult(formula=parsed.text, backend="statsmodels", family=family, coefs=coefs,
                     ranef_var=ranef, fit_stats=stats, warnings=warnings,
                     handle=FitHandle("statsmodels", result, parsed, prepared, dict(prepared.codings)))


def _fit_reml(model, formula: str, reml: bool = True):
    """REML (or, with reml=False, ML) fit, trying optimizers in turn; returns
    (result, messages).

    L-BFGS (statsmodels' default) first. Its line search can step into a
    region where a matrix is singular and raise instead of reporting
    non-convergence, and statsmodels' own fallback (method=[...]) only reacts
    to non-convergence; so each optimizer is tried here, and every failure
    and warning is kept as a message on the result.
    """
    messages = []
    for method in OPTIMIZERS:
        with pywarnings.catch_warnings(record=True) as caught:
            pywarnings.simplefilter("always")
            try:
                result = model.fit(reml=reml, method=method)
            except (np.linalg.LinAlgError, ValueError) as exc:
                result, failure = None, f"statsmodels: optimizer {method} failed ({exc})"
        messages += [f"statsmodels: {w.message}" for w in caught]
        if result is not None and result.converged:
            return result, list(dict.fromkeys(messages))
        messages.append(failure if result is None else f"statsmodels: optimizer {method} did not converge")
    raise GbstatsError(f"statsmodels MixedLM could not fit {formula!r} with any of {list(OPTIMIZERS)}: "
                       f"{messages}; try backend='lme4'")


def _coef_table(result, terms: list[str]) -> pd.DataFrame:
    est = result.fe_params.to_numpy()
    se = result.bse_fe.to_numpy()
    z = est / se
    return wald_table(terms, est, se, z, np.full(len(est), np.nan), 2 * stats.norm.sf(np.abs(z)))


def _ranef_table(result, group: str, re_terms: list[str]) -> pd.DataFrame:
    cov = np.asarray(result.cov_re)
    variances = list(np.diag(cov)) + [float(result.scale)]
    out = pd.DataFrame({"group": [group] * len(re_terms) + ["Residual"],
                        "term": re_terms + [""], "variance": variances})
    out["sd"] = np.sqrt(out["variance"].clip(lower=0))
    return out[RANEF_COLUMNS]


def _is_singular(result) -> bool:
    relative = np.asarray(result.cov_re) / float(result.scale)
    try:
        chol = np.linalg.cholesky(relative)
    except np.linalg.LinAlgError:
        return True
    return bool(np.any(np.abs(np.diag(chol)) < SINGULAR_TOL))


def n_parameters(result) -> int:
    """lme4's count: fixed effects, random-effect covariance parameters, sigma."""
    k_re = result.cov_re.shape[0]
    return len(result.fe_params) + k_re * (k_re + 1) // 2 + 1


def _fit_stats(result, prepared, parsed: ParsedFormula, exog: pd.DataFrame, exog_re: pd.DataFrame) -> dict:
    nobs = int(result.nobs)
    # statsmodels leaves AIC/BIC undefined for REML fits, so compute them the
    # way lme4 does for its REML criterion.
    n_par = n_parameters(result)
    loglik = float(result.llf)
    return {"nobs": nobs, "loglik": loglik, "aic": -2 * loglik + 2 * n_par,
            "bic": -2 * loglik + n_par * np.log(nobs), "n_dropped_na": prepared.n_dropped_na,
            "exclusions": prepared.exclusions.to_records(),
            "n_groups": {parsed.random[0].group: int(prepared.frame[parsed.random[0].group].nunique())},
            "reml": True}


# --------------------------------------------------------------------------
# questions asked of a fitted model (compare_models, marginal_means, random_effects)

def ml_fit(handle) -> dict:
    """The model refitted by maximum likelihood (as lme4's anova() does before
    a likelihood-ratio test): npar, aic, bic, loglik, deviance."""
    result = handle.native
    if result.model.reml:
        result, _ = _fit_reml(result.model, handle.parsed.text, reml=False)
    loglik, n_par, nobs = float(result.llf), n_parameters(result), int(result.nobs)
    return {"npar": n_par, "aic": -2 * loglik + 2 * n_par, "bic": -2 * loglik + n_par * np.log(nobs),
            "loglik": loglik, "deviance": -2 * loglik}


def fixed_effects(handle) -> tuple[np.ndarray, np.ndarray]:
    """(beta, vcov(beta)): the fixed-effect block of statsmodels' covariance,
    the one its SEs come from."""
    result = handle.native
    k = len(result.fe_params)
    return result.fe_params.to_numpy(float), np.asarray(result.cov_params())[:k, :k]


def ranef_tables(handle) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(conditional modes with conditional SDs, VarCorr-like rows), in the
    columns `gbstats.mixed.engines.lme4.ranef_tables` returns. statsmodels'
    random_effects_cov is Var(b | y) at the estimated parameters, which is
    what lme4's condVar reports."""
    result = handle.native
    group = handle.parsed.random[0].group
    terms = list(result.cov_re.columns)
    names = r_term_names(handle.parsed.random[0].intercept, handle.parsed.random[0].terms,
                         handle.prepared.levels, handle.codings)
    vals = []
    for term, name in zip(terms, names):
        for level in sorted(result.random_effects):
            cov = np.asarray(result.random_effects_cov[level])
            j = terms.index(term)
            vals.append({"group": group, "term": name, "level": str(level),
                         "estimate": float(result.random_effects[level][term]),
                         "se": float(np.sqrt(cov[j, j]))})
    cov_re = np.asarray(result.cov_re)
    sd = np.sqrt(np.clip(np.diag(cov_re), 0, None))
    pars = [{"group": group, "var1": n, "var2": "", "sdcor": sd[i], "vcov": cov_re[i, i]}
            for i, n in enumerate(names)]
    pars += [{"group": group, "var1": names[i], "var2": names[j],
              "sdcor": cov_re[i, j] / (sd[i] * sd[j]), "vcov": cov_re[i, j]}
             for i in range(len(names)) for j in range(i + 1, len(names))]
    pars.append({"group": "Residual", "var1": "", "var2": "", "sdcor": np.sqrt(result.scale),
                 "vcov": float(result.scale)})
    return pd.DataFrame(vals), pd.DataFrame(pars)


__all__ = ["fit", "check_supported", "UnsupportedByStatsmodels", "ml_fit", "fixed_effects",
           "ranef_tables"]

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


def unsupported_reason(parsed: ParsedFormula, family: str) -> str | None:
    """Why MixedLM cannot fit this model, in a few words ("a binomial GLMM", "crossed
    random effects"), or None when it can. The runner's fallback note and
    `check_supported`'s error both say it this way."""
    if family != "gaussian":
        return f"a {family} GLMM"
    if len(parsed.random) > 1:
        return ("crossed random effects" if len(parsed.groups) > 1
                else "several random terms for one grouping factor")
    return None


def check_supported(parsed: ParsedFormula, family: str) -> None:
    what = unsupported_reason(parsed, family)
    if what is None:
        return
    why = ("statsmodels has no maximum-likelihood GLMM (its BinomialBayesMixedGLM is "
           "variational Bayes)" if family != "gaussian" else
           "MixedLM takes one grouping factor with one (correlated) random term")
    raise UnsupportedByStatsmodels(
        f"the statsmodels backend cannot fit {what} in {parsed.text!r}: {why}; {LME4_HINT}")


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


class StatsmodelsFitFailed(GbstatsError):
    """No optimizer gave statsmodels MixedLM a usable fit."""


def _fit_reml(model, formula: str, reml: bool = True):
    """REML (or, with reml=False, ML) fit, trying optimizers in turn; returns
    (result, messages).

    L-BFGS (statsmodels' default) first. Its line search can step into a
    region where a matrix is singular and raise instead of reporting
    non-convergence, and statsmodels' own fallback (method=[...]) only reacts
    to non-convergence; so each optimizer is tried here. A result that says
    it converged is not trusted on its word either: L-BFGS "converged" on a
    factorial design to an intercept of 0 with SE NaN and log-likelihood +inf
    (issue 24; lme4: 3.3765, SE 0.128), so a fit is accepted only when
    `unusable_reason` finds nothing wrong with it. The accepted fit's warnings
    are kept on the result, each once with its count; a rejected optimizer
    leaves one line saying why.
    """
    notes, attempts, rejected_warnings = [], [], []
    for method in OPTIMIZERS:
        with pywarnings.catch_warnings(record=True) as caught:
            pywarnings.simplefilter("always")
            try:
                result = model.fit(reml=reml, method=method)
            except (np.linalg.LinAlgError, ValueError) as exc:
                result, reason = None, f"failed ({exc})"
            if result is not None:
                reason = "did not converge" if not result.converged else unusable_reason(result)
        found = [f"statsmodels: {w.message}" for w in caught]
        if result is not None and reason is None:
            return result, notes + tally_messages(found, counted=True)
        attempts.append(f"optimizer {method} {reason}")
        # the rejected fit's own warnings describe a fit nobody sees: counted here, listed
        # in the error only if no optimizer succeeds
        notes.append(f"statsmodels: optimizer {method} {reason} ({len(found)} warnings); "
                     "tried the next")
        rejected_warnings += found
    raise StatsmodelsFitFailed(
        f"statsmodels MixedLM could not fit {formula!r} ({'REML' if reml else 'ML'}): no optimizer "
        f"gave a usable fit ({'; '.join(attempts)}); their warnings: "
        f"{summarize(tally_messages(rejected_warnings, counted=True))}; try backend='lme4'")


def unusable_reason(result) -> str | None:
    """Why a 'converged' MixedLM result is not a fit (None when it is one): the
    log-likelihood, fixed effects, their SEs and the variance components must be
    finite, and the fixed effects' covariance (the inverse Hessian their SEs come
    from) positive definite."""
    llf = float(result.llf)
    if not np.isfinite(llf):
        return f"gave an unusable fit (log-likelihood {llf})"
    fe = np.asarray(result.fe_params, dtype=float)
    if not np.all(np.isfinite(fe)):
        return "gave an unusable fit (a fixed effect is not finite)"
    se = np.asarray(result.bse_fe, dtype=float)
    if not np.all(np.isfinite(se)) or np.any(se <= 0):
        return f"gave an unusable fit (fixed-effect SEs {np.round(se, 6).tolist()})"
    variances = np.append(np.diag(np.asarray(result.cov_re, dtype=float)), float(result.scale))
    if not np.all(np.isfinite(variances)) or np.any(variances < 0):
        return f"gave an unusable fit (variance components {np.round(variances, 6).tolist()})"
    k = len(fe)
    # statsmodels' inverse Hessian (its SEs) and lme4's (X' V^-1 X)^-1 (the SEs reported)
    for vcov in (np.asarray(result.cov_params(), dtype=float)[:k, :k], gls_vcov(result)):
        try:
            np.linalg.cholesky((vcov + vcov.T) / 2)
        except np.linalg.LinAlgError:
            return "gave an unusable fit (the fixed effects' covariance is not positive definite)"
    return None


def tally_messages(messages, counted: bool = False) -> list[str]:
    """Each distinct message once, in first-seen order; with counted=True, a message seen
    n > 1 times ends in "(n times)" (an optimizer can repeat one overflow warning
    thousands of times)."""
    counts: dict[str, int] = {}
    for message in messages:
        counts[message] = counts.get(message, 0) + 1
    if not counted:
        return list(counts)
    return [m if n == 1 else f"{m} ({n} times)" for m, n in counts.items()]


def summarize(messages: list[str], limit: int = 8, width: int = 300) -> str:
    """At most `limit` messages of at most `width` characters each, and how many more."""
    shown = [m if len(m) <= width else m[:width] + "..." for m in messages[:limit]]
    more = len(messages) - len(shown)
    return "; ".join(shown) + (f"; and {more} more" if more else "") if shown else "none"


def gls_vcov(result) -> np.ndarray:
    """lme4's vcov(beta): (X' V^-1 X)^-1 at the estimated variances, V = Z Psi Z' + sigma^2 I
    per group.

    statsmodels' own SEs invert the joint information of the fixed effects and the
    variance parameters, which in an unbalanced design differs from lme4's by ~0.2%
    (issue 24 asks the two engines to agree within 1e-3). V^-1 is never formed: by the
    push-through identity V^-1 = (I - Z M^-1 Psi Z') / sigma^2 with M = sigma^2 I + Psi Z'Z,
    which needs neither Psi^-1 (Psi may be singular) nor an n_g x n_g matrix.
    """
    model = result.model
    psi, scale = np.asarray(result.cov_re, dtype=float), float(result.scale)
    k = model.exog.shape[1]
    information = np.zeros((k, k))
    for x, z in zip(model.exog_li, model.exog_re_li):
        m = scale * np.eye(psi.shape[0]) + psi @ (z.T @ z)
        zx = z.T @ x
        information += (x.T @ x - zx.T @ np.linalg.solve(m, psi @ zx)) / scale
    return np.linalg.inv(information)


def _coef_table(result, terms: list[str]) -> pd.DataFrame:
    est = result.fe_params.to_numpy()
    se = np.sqrt(np.diag(gls_vcov(result)))
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
    """(beta, vcov(beta)): lme4's covariance of the fixed effects (`gls_vcov`), the one
    the coefficient table's SEs come from."""
    result = handle.native
    return result.fe_params.to_numpy(float), gls_vcov(result)


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


__all__ = ["fit", "check_supported", "unsupported_reason", "UnsupportedByStatsmodels", "ml_fit", "fixed_effects",
           "ranef_tables"]

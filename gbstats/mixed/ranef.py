"""The rest of a mixed model's story: random effects as a table, R2 and ICC.

`random_effects(fit)` returns one tidy table in broom.mixed's split
(``tidy(fit, effects = c("fixed", "ran_pars", "ran_vals"))``):

    effect    "fixed", "ran_pars" or "ran_vals"
    group     grouping factor ("Residual" for the residual SD; "" for fixed)
    level     the group's level (ran_vals only)
    term      fixed: the coefficient; ran_pars: "sd__(Intercept)",
              "cor__(Intercept).x", "sd__Observation" (residual), as
              broom.mixed names them; ran_vals: the random-effect column
    estimate  coefficient, SD / correlation, or conditional mode (BLUP)
    se        fixed: its SE; ran_vals: the conditional SD (lme4's
              ``condVar``; statsmodels' ``random_effects_cov``; bambi's
              posterior SD); ran_pars: NaN (as broom.mixed without profiling)

`r2_nakagawa(fit)` gives Nakagawa & Schielzeth's (2013) marginal and
conditional R2, extended to random slopes by Johnson (2014), and the ICC, as
R's ``performance::r2_nakagawa`` and ``performance::icc`` compute them:

    var_fixed     variance of the fixed-effect predictions X b (n - 1 denominator)
    var_random    for each random term, the mean over rows of z_i' Sigma z_i
                  (the term's design row z_i, its covariance Sigma), summed over
                  terms; with random intercepts only, the sum of their variances
    var_residual  sigma^2 (gaussian) or pi^2 / 3 (binomial, logit link: the
                  distribution-specific variance)
    r2_marginal    = var_fixed / (var_fixed + var_random + var_residual)
    r2_conditional = (var_fixed + var_random) / (same total)
    icc_adjusted   = var_random / (var_random + var_residual)
    icc_unadjusted = var_random / (same total as R2)
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from gbstats.errors import GbstatsError
from gbstats.mixed.formula import model_matrix
from gbstats.mixed.results import FitResult

TIDY_COLUMNS = ["effect", "group", "level", "term", "estimate", "se"]


def _require_handle(fit, what: str) -> None:
    if not isinstance(fit, FitResult) or fit.handle is None:
        raise GbstatsError(f"{what} needs a FitResult from fit_lmm, fit_glmm or fit_bayes that still "
                           "carries its fitted model")


def _engine(fit):
    if fit.backend == "lme4":
        from gbstats.mixed.engines import lme4 as engine
    elif fit.backend == "statsmodels":
        from gbstats.mixed.engines import statsmodels as engine
    else:
        raise GbstatsError(f"no frequentist engine for backend {fit.backend!r}")
    return engine


def random_effects(fit: FitResult) -> pd.DataFrame:
    """fixed, ran_pars and ran_vals rows in one table (see the module doc)."""
    _require_handle(fit, "random_effects")
    fixed = pd.DataFrame({"effect": "fixed", "group": "", "level": "", "term": fit.coefs["term"],
                          "estimate": fit.coefs["estimate"], "se": fit.coefs["se"]})
    if fit.backend == "bambi":
        vals, pars = _bambi_tables(fit)
    else:
        vals, pars = _engine(fit).ranef_tables(fit.handle)
        pars = _ran_pars(pars)
    vals = vals.assign(effect="ran_vals")
    return pd.concat([fixed, pars.assign(effect="ran_pars"), vals],
                     ignore_index=True)[TIDY_COLUMNS]


def _ran_pars(varcorr: pd.DataFrame) -> pd.DataFrame:
    """VarCorr rows (group, var1, var2, sdcor) -> broom.mixed's ran_pars terms."""
    def term(row) -> str:
        if row["group"] == "Residual":
            return "sd__Observation"
        return f"cor__{row['var1']}.{row['var2']}" if row["var2"] else f"sd__{row['var1']}"

    return pd.DataFrame({"group": varcorr["group"].astype(str), "level": "",
                         "term": varcorr.apply(term, axis=1), "estimate": varcorr["sdcor"].astype(float),
                         "se": np.nan})


def _bambi_tables(fit: FitResult) -> tuple[pd.DataFrame, pd.DataFrame]:
    from gbstats.mixed.bayes import group_term_labels, r_term_name, variable_draws

    post = fit.idata.posterior
    vals = []
    for name, (factor, labels) in group_term_labels(fit.handle.native).items():
        values = post[name]
        level_dim = [d for d in values.dims if d not in ("chain", "draw")]
        levels = [str(v) for v in values[level_dim[-1]].values] if level_dim else []
        draws = variable_draws(post, name).reshape(-1, len(levels), len(labels)) if len(labels) > 1 \
            else variable_draws(post, name)[:, :, None]
        for j, label in enumerate(labels):
            for i, level in enumerate(levels):
                d = draws[:, i, j]
                vals.append({"group": factor, "level": level, "term": r_term_name(label),
                             "estimate": float(d.mean()), "se": float(d.std(ddof=1))})
    pars = fit.ranef_var.assign(
        term=lambda t: np.where(t["group"] == "Residual", "sd__Observation", "sd__" + t["term"]),
        level="", se=np.nan).rename(columns={"sd": "estimate"})
    return pd.DataFrame(vals, columns=["group", "level", "term", "estimate", "se"]), \
        pars[["group", "level", "term", "estimate", "se"]]


# --------------------------------------------------------------------------
# R2 and ICC

def _covariances(varcorr: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """{VarCorr group: covariance matrix over its terms} from vcov rows."""
    out: dict[str, pd.DataFrame] = {}
    for group, rows in varcorr[varcorr["group"] != "Residual"].groupby("group", sort=False):
        names = list(rows.loc[rows["var2"] == "", "var1"])
        cov = pd.DataFrame(0.0, index=names, columns=names)
        for row in rows.itertuples():
            second = row.var2 or row.var1
            cov.loc[row.var1, second] = cov.loc[second, row.var1] = row.vcov
        out[group] = cov
    return out


def variance_components(fit: FitResult) -> dict[str, float]:
    """var_fixed, var_random, var_residual as the module doc defines them."""
    _require_handle(fit, "r2_nakagawa")
    if fit.backend == "bambi":
        raise GbstatsError("r2_nakagawa: Bayesian fits are not supported (a posterior R2 needs one "
                           "value per draw; use fit_lmm/fit_glmm, or R's performance::r2_bayes)")
    if fit.family not in ("gaussian", "binomial"):
        raise GbstatsError(f"r2_nakagawa: family {fit.family!r} is not supported")
    handle = fit.handle
    parsed, prepared = handle.parsed, handle.prepared
    engine = _engine(fit)
    beta, _ = engine.fixed_effects(handle)
    X = model_matrix(parsed.intercept, parsed.fixed_terms, prepared.frame, prepared.levels,
                     handle.codings).to_numpy()
    var_fixed = float(np.var(X @ beta, ddof=1))
    _, varcorr = engine.ranef_tables(handle)
    covariances = _covariances(varcorr)
    var_random = 0.0
    for group, cov in covariances.items():
        base = re.sub(r"\.\d+$", "", group) if group not in parsed.groups else group
        terms = [r for r in parsed.random if r.group == base]
        columns = {}
        for term in terms:
            Z = model_matrix(term.intercept, term.terms, prepared.frame, prepared.levels, handle.codings)
            columns.update({c: Z[c].to_numpy() for c in Z.columns})
        names = list(cov.index)
        missing = [n for n in names if n not in columns]
        if missing:
            raise GbstatsError(f"r2_nakagawa: random-effect columns {missing} of group {group!r} "
                               f"were not found in the design of {fit.formula!r}")
        Z = np.column_stack([columns[n] for n in names])
        var_random += float(np.mean(np.sum((Z @ cov.to_numpy()) * Z, axis=1)))
    if fit.family == "gaussian":
        var_residual = float(varcorr.loc[varcorr["group"] == "Residual", "vcov"].iloc[0])
    else:
        var_residual = float(np.pi ** 2 / 3)  # logistic distribution variance (logit link)
    return {"var_fixed": var_fixed, "var_random": var_random, "var_residual": var_residual}


def r2_nakagawa(fit: FitResult) -> dict[str, float]:
    """Marginal and conditional R2 and the ICC (adjusted and unadjusted),
    with the variance components they come from (see the module doc)."""
    v = variance_components(fit)
    total = v["var_fixed"] + v["var_random"] + v["var_residual"]
    return {"r2_marginal": v["var_fixed"] / total,
            "r2_conditional": (v["var_fixed"] + v["var_random"]) / total,
            "icc_adjusted": v["var_random"] / (v["var_random"] + v["var_residual"]),
            "icc_unadjusted": v["var_random"] / total, **v}


__all__ = ["random_effects", "r2_nakagawa", "variance_components"]

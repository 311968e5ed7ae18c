"""Comparing two fits of one data set: `compare_models`.

For lme4 and statsmodels fits it is a likelihood-ratio test, as lme4's
``anova(small, large)``: models fitted by REML are refitted by maximum
likelihood first (REML likelihoods of models with different fixed effects are
not comparable), and the table gives each fit's npar, AIC, BIC, logLik and
deviance (of the ML fits) with the chi-square statistic, its df (the
difference in parameters) and p-value. For lme4 the ML fits are lme4's own
(``refitML``, ``logLik``, ``AIC``, ``BIC``: the steps of ``anova.merMod``,
which itself refuses models whose data frames differ in unused columns);
statsmodels fits are refitted with ``reml=False``.

For Bayesian fits (bambi) it is PSIS-LOO (Vehtari, Gelman & Gabry 2017) with
ArviZ, in the layout of loo's ``loo_compare``: best model first, its
``elpd_diff`` 0, the others' difference and its SE, and Pareto-k diagnostics
for each fit (a warning names the fits with k > 0.7, where the importance-
sampling estimate is unreliable).

Both fits must come from the same engine, with the same response and family,
on the same rows (rows dropped for a missing value in a column only one
formula uses would make the likelihoods incomparable), and the small model's
parameters must be a subset of the large one's; otherwise a `GbstatsError`
says which condition failed and where.
"""
from __future__ import annotations

import warnings as py_warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from gbstats.errors import GbstatsError
from gbstats.mixed.formula import r_term_names
from gbstats.mixed.results import FitResult


@dataclass
class ModelComparison:
    """A comparison table (one row per model) with what a reader must know.

    method    "likelihood-ratio test" or "PSIS-LOO"
    table     LRT: model, formula, npar, aic, bic, loglik, deviance, chisq, df,
              p_value (small model first; chisq/df/p_value on the large one's
              row). LOO: model, formula, elpd_loo, se, p_loo, looic,
              elpd_diff, se_diff, n_pareto_k_high (above ArviZ's threshold),
              n_pareto_k_ok (0.5 to the threshold); best model first.
    notes     sentences for the table note (ML refit, boundary tests).
    warnings  Pareto-k and similar problems, for the report's warnings.
    """

    method: str
    table: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def compare_models(small: FitResult, large: FitResult, names: tuple[str, str] = ("small", "large")
                   ) -> ModelComparison:
    """Compare a model with a larger model that contains it (see the module doc).

    ``names`` label the two rows of the table (default "small", "large").
    """
    for fit, name in ((small, names[0]), (large, names[1])):
        require_handle(fit, name)
    require_same_data(small, large, names)
    require_nested(small, large, names)
    if small.backend == "bambi":
        return _loo_comparison(small, large, names)
    return _likelihood_ratio(small, large, names)


# --------------------------------------------------------------------------
# checks

def require_handle(fit, name: str) -> None:
    if not isinstance(fit, FitResult):
        raise GbstatsError(f"compare_models: {name} is a {type(fit).__name__}, expected a FitResult "
                           "from fit_lmm, fit_glmm or fit_bayes")
    if fit.handle is None:
        raise GbstatsError(f"compare_models: the {name} fit ({fit.formula!r}) carries no fitted model "
                           "(a FitResult built by hand or read back from JSON); refit it with "
                           "fit_lmm, fit_glmm or fit_bayes")


def require_same_data(small: FitResult, large: FitResult, names) -> None:
    """Same engine, family and response, and the very same rows."""
    if small.backend != large.backend:
        raise GbstatsError(f"compare_models: {names[0]} was fitted with {small.backend} and {names[1]} "
                           f"with {large.backend}; fit both with one backend")
    if small.family != large.family:
        raise GbstatsError(f"compare_models: {names[0]} is a {small.family} model and {names[1]} a "
                           f"{large.family} model; their likelihoods are not comparable")
    response_small, response_large = small.handle.parsed.response, large.handle.parsed.response
    if response_small != response_large:
        raise GbstatsError(f"compare_models: the models explain different responses "
                           f"({response_small!r} in {small.formula!r}, {response_large!r} in "
                           f"{large.formula!r})")
    rows_small = small.handle.prepared.frame.index
    rows_large = large.handle.prepared.frame.index
    same_rows = rows_small.equals(rows_large) and np.array_equal(
        small.handle.prepared.frame[response_small].to_numpy(),
        large.handle.prepared.frame[response_large].to_numpy())
    if not same_rows:
        only_small = rows_small.difference(rows_large)
        only_large = rows_large.difference(rows_small)
        where = []
        if len(only_small):
            where.append(f"{len(only_small)} row(s) only in {names[0]} (first index {only_small[0]})")
        if len(only_large):
            where.append(f"{len(only_large)} row(s) only in {names[1]} (first index {only_large[0]})")
        raise GbstatsError(
            f"compare_models: the models were fitted on different rows ({len(rows_small)} rows for "
            f"{names[0]}, {len(rows_large)} for {names[1]}"
            + (f": {'; '.join(where)}" if where else "; same row labels but different data")
            + "). This happens when a column only one formula uses has missing values; drop those "
            "rows from the data before fitting both models")


def fixed_columns(fit: FitResult) -> list[str]:
    return list(fit.coefs["term"])


def random_columns(fit: FitResult) -> dict[str, set[str]]:
    """{grouping factor: names of its random-effect columns}."""
    handle = fit.handle
    out: dict[str, set[str]] = {}
    for term in handle.parsed.random:
        names = r_term_names(term.intercept, term.terms, handle.prepared.levels, handle.codings)
        out.setdefault(term.group, set()).update(names)
    return out


def require_nested(small: FitResult, large: FitResult, names) -> None:
    """The small model's fixed columns and random columns (per grouping factor)
    must all be in the large model, and the two must differ."""
    shared = set(small.handle.codings) & set(large.handle.codings)
    recoded = [v for v in shared if small.handle.codings[v].to_record()
               != large.handle.codings[v].to_record()]
    if recoded:
        raise GbstatsError(f"compare_models: factor(s) {recoded} are coded differently in the two fits "
                           "(fit_stats['contrasts']); use the same contrasts in both")
    missing_fixed = [t for t in fixed_columns(small) if t not in fixed_columns(large)]
    random_small, random_large = random_columns(small), random_columns(large)
    missing_random = [f"{c} | {g}" for g, cols in random_small.items()
                      for c in sorted(cols - random_large.get(g, set()))]
    if missing_fixed or missing_random:
        raise GbstatsError(
            f"compare_models: {names[0]} ({small.formula!r}) is not nested in {names[1]} "
            f"({large.formula!r}): "
            + "; ".join(filter(None, [
                f"fixed effect(s) {missing_fixed} are not in {names[1]}" if missing_fixed else "",
                f"random effect(s) {missing_random} are not in {names[1]}" if missing_random else ""]))
            + ". Pass the smaller model first")
    same_fixed = set(fixed_columns(small)) == set(fixed_columns(large))
    same_random = {g: c for g, c in random_small.items()} == random_large and \
        len(small.handle.parsed.random) == len(large.handle.parsed.random)
    if same_fixed and same_random:
        raise GbstatsError(f"compare_models: {names[0]} and {names[1]} have the same parameters "
                           f"({small.formula!r}, {large.formula!r}); there is nothing to test")


# --------------------------------------------------------------------------
# likelihood-ratio test

def _ml_rows(small: FitResult, large: FitResult) -> pd.DataFrame:
    if small.backend == "lme4":
        from gbstats.mixed.engines import lme4 as engine
    else:
        from gbstats.mixed.engines import statsmodels as engine

    rows = pd.DataFrame([engine.ml_fit(small.handle), engine.ml_fit(large.handle)])
    # as lme4's anova.merMod: chisq = 2 * max(0, difference in logLik)
    chisq = max(0.0, 2 * (rows.loc[1, "loglik"] - rows.loc[0, "loglik"]))
    df = int(rows.loc[1, "npar"] - rows.loc[0, "npar"])
    rows["chisq"] = [np.nan, chisq]
    rows["df"] = [np.nan, df]
    rows["p_value"] = [np.nan, float(stats.chi2.sf(chisq, df))]
    return rows


def _likelihood_ratio(small: FitResult, large: FitResult, names) -> ModelComparison:
    rows = _ml_rows(small, large)
    if rows.loc[0, "npar"] >= rows.loc[1, "npar"]:
        raise GbstatsError(f"compare_models: {names[0]} has {rows.loc[0, 'npar']} parameters and "
                           f"{names[1]} {rows.loc[1, 'npar']}; the larger model must come second")
    table = pd.concat([pd.DataFrame({"model": list(names), "formula": [small.formula, large.formula]}),
                       rows.reset_index(drop=True)], axis=1)
    notes = []
    if small.fit_stats.get("reml") or large.fit_stats.get("reml"):
        notes.append("REML fits were refitted by maximum likelihood for the test, as lme4's anova() "
                     "does; AIC, BIC, logLik and deviance are those of the ML fits.")
    notes.append("Likelihood-ratio test: chisq = 2 x (logLik large - logLik small), df = difference "
                 "in the number of parameters.")
    if random_columns(small) != random_columns(large) or \
            len(small.handle.parsed.random) != len(large.handle.parsed.random):
        notes.append("The models differ in random effects: a variance tested at its boundary (0) "
                     "makes the chi-square p-value conservative (Pinheiro & Bates 2000, sec. 2.4.1).")
    return ModelComparison("likelihood-ratio test", table, notes)


# --------------------------------------------------------------------------
# PSIS-LOO for Bayesian fits

def loo_of(fit: FitResult):
    """ArviZ's PSIS-LOO of a bambi fit, computing the pointwise
    log-likelihood once (fit_bayes(loo=True) already stores it; otherwise
    bambi adds it to the fit's InferenceData, so a second call is free)."""
    import arviz as az

    from gbstats.mixed.bayes import add_log_likelihood

    idata = fit.idata
    add_log_likelihood(fit)  # in the units the model was sampled in (fit_bayes standardize)
    with py_warnings.catch_warnings(record=True) as caught:
        py_warnings.simplefilter("always")
        loo = az.loo(idata, pointwise=True)
    return loo, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def pareto_k_counts(loo) -> dict[str, float]:
    """Observations above the Pareto-k threshold, where the LOO estimate for
    that point is unreliable: ArviZ's sample-size-dependent threshold
    min(1 - 1/log10(S), 0.7) (Vehtari et al. 2024, "Pareto smoothed
    importance sampling"), and the count between 0.5 and it."""
    k = np.asarray(loo.pareto_k)
    threshold = float(getattr(loo, "good_k", 0.7) or 0.7)
    return {"threshold": threshold, "n_k_ok": int(((k > 0.5) & (k <= threshold)).sum()),
            "n_k_high": int((k > threshold).sum())}


def _loo_comparison(small: FitResult, large: FitResult, names) -> ModelComparison:
    rows, warnings = [], []
    for fit, name in ((small, names[0]), (large, names[1])):
        loo, messages = loo_of(fit)
        counts = pareto_k_counts(loo)
        pointwise = np.asarray(loo.loo_i).ravel()
        rows.append({"model": name, "formula": fit.formula, "elpd_loo": float(loo.elpd_loo),
                     "se": float(loo.se), "p_loo": float(loo.p_loo), "looic": -2 * float(loo.elpd_loo),
                     "n_pareto_k_high": counts["n_k_high"], "n_pareto_k_ok": counts["n_k_ok"],
                     "_pointwise": pointwise})
        if counts["n_k_high"]:
            warnings.append(f"PSIS-LOO for {name} ({fit.formula!r}): {counts['n_k_high']} observation(s) "
                            f"with Pareto k > {counts['threshold']:.2f}, where the LOO estimate is "
                            "unreliable; run more draws, or use K-fold cross-validation")
        # ArviZ's own warning repeats the count above in prose
        warnings += [f"PSIS-LOO for {name}: {m}" for m in messages if "Pareto" not in m]
    rows.sort(key=lambda r: -r["elpd_loo"])
    best = rows[0]["_pointwise"]
    for row in rows:
        diff = row["_pointwise"] - best
        # loo_compare: the SE of a difference from the pointwise differences,
        # sqrt(n * var(diff)) (Vehtari et al. 2017, eq. 24).
        row["elpd_diff"] = float(diff.sum())
        row["se_diff"] = float(np.sqrt(len(diff) * np.var(diff, ddof=1))) if row is not rows[0] else 0.0
        del row["_pointwise"]
    table = pd.DataFrame(rows)[["model", "formula", "elpd_loo", "se", "p_loo", "looic", "elpd_diff",
                                "se_diff", "n_pareto_k_high", "n_pareto_k_ok"]]
    notes = ["PSIS-LOO (ArviZ): elpd_loo is the expected log predictive density for a new "
             "observation; best model first, elpd_diff and se_diff relative to it (loo_compare's "
             "layout). A difference within about 2 se_diff is not a clear preference."]
    return ModelComparison("PSIS-LOO", table, notes, warnings)

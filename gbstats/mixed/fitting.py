"""Fit one formula on several engines, stack the results, collect the warnings.

Studies fit the same lme4-syntax formula with a frequentist engine (lme4, or
statsmodels for gaussian models with one grouping factor) and, unless told
otherwise, with its Bayesian twin (bambi/PyMC). The results are keyed by one
vocabulary of backend labels, `BACKENDS`, so that every table and every
warning names an engine the same way:

    fits = fit_with_twin("surprisal ~ close + (1|frame)", rows, backends=["lme4"],
                         bayes=True, draws=500, seed=1)
    stack_fits(fits)              # one tidy coefficient table with a `backend` column
    fit_warnings(fits, "model")   # ["model [lme4]: ...", "model [pymc]: ..."]
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from gbstats.errors import GbstatsError

# The backend labels every study uses: the frequentist engines, then the Bayesian one.
BACKENDS = ("lme4", "statsmodels", "pymc")
FREQUENTIST_BACKENDS = ("lme4", "statsmodels")
BAYES_BACKEND = "pymc"

# The columns of a stacked coefficient table (FitResult.coefs plus `backend`).
FIT_COLUMNS = ["backend", "term", "estimate", "se", "ci_low", "ci_high", "stat", "df", "p_value"]

# lme4 family name -> the bambi family of the same model.
_BAYES_FAMILY = {"gaussian": "gaussian", "binomial": "bernoulli"}


def fit_frequentist(formula: str, data: pd.DataFrame, backend: str, *,
                    family: str = "gaussian", optimizer: str | None = None,
                    contrasts: Mapping | None = None):
    """One lme4 or statsmodels fit: an LMM for `family="gaussian"`, a GLMM for "binomial".
    `contrasts` codes factors (gbstats.mixed.contrasts; treatment when None)."""
    from gbstats.mixed.lmm import fit_glmm, fit_lmm

    if backend not in FREQUENTIST_BACKENDS:
        raise GbstatsError(f"unknown frequentist backend {backend!r}; expected one of "
                           f"{', '.join(FREQUENTIST_BACKENDS)}")
    if family == "gaussian":
        return fit_lmm(formula, data, backend=backend, optimizer=optimizer, contrasts=contrasts)
    if family == "binomial":
        return fit_glmm(formula, data, family="binomial", backend=backend, optimizer=optimizer,
                        contrasts=contrasts)
    raise GbstatsError(f"unsupported family {family!r}; expected one of "
                       f"{', '.join(_BAYES_FAMILY)}")


def fit_bayes_twin(formula: str, data: pd.DataFrame, *, family: str = "gaussian",
                   draws: int = 1000, tune: int | None = None, seed: int | None = None,
                   loo: bool = True, contrasts: Mapping | None = None,
                   priors: Mapping | None = None):
    """The Bayesian (bambi/PyMC) twin of a frequentist fit: the same formula and family.

    `tune` defaults to `draws`, so that a quick run (small `draws`) stays quick.
    `priors` go to bambi (gbstats.mixed.bayes.fit_bayes; None: its defaults).
    """
    from gbstats.mixed.bayes import fit_bayes

    if family not in _BAYES_FAMILY:
        raise GbstatsError(f"unsupported family {family!r}; expected one of "
                           f"{', '.join(_BAYES_FAMILY)}")
    return fit_bayes(formula, data, family=_BAYES_FAMILY[family], priors=priors, draws=draws,
                     tune=draws if tune is None else tune, seed=seed, loo=loo, contrasts=contrasts)


def fit_with_twin(formula: str, data: pd.DataFrame, *, backends: Sequence[str] = ("lme4",),
                  family: str = "gaussian", bayes: bool = True, draws: int = 1000,
                  tune: int | None = None, seed: int | None = None, loo: bool = True,
                  optimizer: str | None = None, contrasts: Mapping | None = None,
                  priors: Mapping | None = None, use_cache: bool = False,
                  cache_dir=None) -> dict:
    """{backend label: FitResult}: each frequentist backend asked for, then "pymc" if `bayes`.

    `backends` may be empty (Bayesian fit only). The order of the dict is the
    order of the rows in `stack_fits`. `priors` are the twin's (bambi's
    defaults when None). With `use_cache=True` a fit whose
    formula, data, options and fitting code are unchanged since an earlier
    call is reused from `<cache_dir>/fits/` (`gbstats.mixed.fit_cache`; its
    fit_stats["reused_from_cache"] says so, and it carries no `idata`).
    """
    from gbstats.mixed.fit_cache import cached_fit

    cache = {"use_cache": use_cache, "cache_dir": cache_dir}
    fits = {b: cached_fit(fit_frequentist, formula, data, backend=b, family=family,
                          optimizer=optimizer, contrasts=contrasts, **cache)
            for b in backends}
    if bayes:
        # priors enter the cache key only when given, so default-prior keys stay as they were
        options = {"priors": priors} if priors is not None else {}
        fits[BAYES_BACKEND] = cached_fit(fit_bayes_twin, formula, data, family=family,
                                         draws=draws, tune=tune, seed=seed, loo=loo,
                                         contrasts=contrasts, **options, **cache)
    return fits


def reused_fits_note(fits: Mapping[str, Mapping]) -> list[str]:
    """A note naming the fits reused from the fit cache, e.g. {"model LMM": fits, ...}."""
    reused = [f"{what} [{label}]" for what, group in fits.items()
              for label, fit in group.items() if fit.fit_stats.get("reused_from_cache")]
    if not reused:
        return []
    return [f"reused from the fit cache (formula, data, settings and fitting code unchanged "
            f"since an earlier run; --no-cache refits): {', '.join(reused)}"]


def stack_fits(fits: Mapping, columns: Sequence[str] = FIT_COLUMNS) -> pd.DataFrame:
    """Stack FitResults keyed by a backend label into one tidy table (a `backend` column)."""
    columns = list(columns)
    rows = [fit.coefs.assign(backend=label)[columns] for label, fit in fits.items()]
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=columns)


def coding_note(fits: Mapping) -> str:
    """How the fits code their factor predictors (which level is +1 / -1, the reference level,
    or the matrix), one sentence for a table caption; "" when no predictor is a factor.

    The fits of one call share one coding (the same formula, data and contrasts), so the
    first fit that recorded one speaks for all.
    """
    from gbstats.mixed.contrasts import codings_from_records, describe_codings

    for fit in fits.values():
        records = fit.fit_stats.get("contrasts") or {}
        if records:
            return describe_codings(codings_from_records(records))
    return ""


def fit_warnings(fits: Mapping, what: str) -> list[str]:
    """Every fit's warnings, each prefixed with what was fitted and the backend label."""
    return [f"{what} [{label}]: {w}" for label, fit in fits.items() for w in fit.warnings]

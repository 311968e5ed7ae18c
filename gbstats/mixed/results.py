"""One result shape for every fit: lme4, statsmodels and PyMC alike.

Column names are identical across engines so that tables from different
backends can be concatenated and compared row by row.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

COEF_COLUMNS = ["term", "estimate", "se", "ci_low", "ci_high", "stat", "df", "p_value"]
RANEF_COLUMNS = ["group", "term", "variance", "sd"]
WALD_Z = float(stats.norm.ppf(0.975))


class StoredPosterior:
    """A posterior kept as the pickle it was stored as, until a step reads it.

    A fit reused from the fit cache carries one in place of its InferenceData:
    unpickling an InferenceData imports ArviZ (about 2 s on the 2-core machine)
    and builds xarray objects of up to 16 MB, and most runs that reuse a
    Bayesian fit only read its tables. `FitResult.idata` turns it into the
    InferenceData the first time it is read (`PosteriorField`).
    """

    __slots__ = ("payload",)

    def __init__(self, payload: bytes):
        self.payload = payload

    def load(self):
        import pickle

        return pickle.loads(self.payload)


class PosteriorField:
    """FitResult.idata: an ordinary attribute, except that a StoredPosterior put there is
    unpickled on first read and replaced by what it holds, so every reader (ArviZ's
    functions included) sees a real InferenceData. A data descriptor (with __set__) so
    that the dataclass's __init__ goes through it; its class-level value, None, is the
    field's default."""

    def __set_name__(self, owner, name):
        self.private = f"_{name}"

    def __get__(self, instance, owner=None):
        if instance is None:
            return None
        value = instance.__dict__.get(self.private)
        if isinstance(value, StoredPosterior):
            value = instance.__dict__[self.private] = value.load()
        return value

    def __set__(self, instance, value):
        instance.__dict__[self.private] = value


@dataclass
class FitResult:
    """A fitted model as tidy tables.

    coefs      one row per fixed-effect term: COEF_COLUMNS. For Bayesian fits,
               estimate/se are the posterior mean/SD, ci_* the 95% equal-tailed
               interval, and stat/df/p_value are NaN.
    ranef_var  one row per random-effect variance component: RANEF_COLUMNS
               (group "Residual" for the residual variance of an LMM).
    fit_stats  a dict: nobs, loglik, aic, bic (or loo/elpd for Bayesian fits),
               n_dropped_na, and engine-specific counts.
    warnings   human-readable strings: convergence, singular fit, R-hat, ESS,
               divergences, dropped rows. Reports print them.
    idata      ArviZ InferenceData for Bayesian fits, else None. A fit reused
               from the fit cache holds it pickled until it is first read
               (`StoredPosterior`).
    handle     what later questions about the fit need (the engine's own model
               object, the parsed formula, the rows and factor codings used):
               `compare_models`, `marginal_means` and `random_effects` read
               it. Not part of the result's value (not compared, not shown).
    """

    formula: str
    backend: str
    family: str
    coefs: pd.DataFrame
    ranef_var: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=RANEF_COLUMNS))
    fit_stats: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    idata: Any = PosteriorField()
    handle: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        missing = [c for c in COEF_COLUMNS if c not in self.coefs.columns]
        if missing:
            raise ValueError(f"coefs table lacks columns {missing}; expected {COEF_COLUMNS}")
        self.coefs = self.coefs[COEF_COLUMNS].reset_index(drop=True)

    def coef(self, term: str) -> pd.Series:
        """The coefs row for one term, with an error listing the known terms."""
        rows = self.coefs[self.coefs["term"] == term]
        if rows.empty:
            raise KeyError(f"term {term!r} not in this {self.backend} fit of {self.formula!r}; "
                           f"terms are {list(self.coefs['term'])}")
        return rows.iloc[0]

    def tidy(self) -> pd.DataFrame:
        """coefs with backend and formula columns, ready to stack across fits."""
        out = self.coefs.copy()
        out.insert(0, "backend", self.backend)
        out.insert(1, "formula", self.formula)
        return out


@dataclass
class FitHandle:
    """The engine-side state of a fit: `native` is lme4's merMod (through
    pymer4's Lmer), statsmodels' MixedLMResults or bambi's Model; `parsed`
    the formula, `prepared` the checked rows (`gbstats.mixed.lmm.PreparedData`),
    `codings` {factor: contrasts.Coding}."""

    engine: str
    native: Any
    parsed: Any
    prepared: Any
    codings: dict
    extra: dict = field(default_factory=dict)


def group_counts(fit) -> dict[str, int]:
    """Levels of each grouping factor a fit used: `fit_stats["n_groups"]` where the engine
    recorded it, else counted in the data the live handle holds ({} when neither)."""
    recorded = (fit.fit_stats or {}).get("n_groups")
    if recorded:
        return {str(g): int(n) for g, n in recorded.items()}
    handle = getattr(fit, "handle", None)
    parsed, prepared = getattr(handle, "parsed", None), getattr(handle, "prepared", None)
    if parsed is None or prepared is None:
        return {}
    return {g: int(prepared.frame[g].nunique()) for g in parsed.groups if g in prepared.frame}


def wald_table(terms, estimate, se, stat, df, p_value) -> pd.DataFrame:
    """A coefs table with Wald 95% CIs: estimate +/- qnorm(0.975) * se.

    Lives here, next to the result shape, so that the engines and gbstats.mixed.lmm
    both import it from below instead of from each other.
    """
    estimate, se = np.asarray(estimate, float), np.asarray(se, float)
    return pd.DataFrame({"term": list(terms), "estimate": estimate, "se": se,
                         "ci_low": estimate - WALD_Z * se, "ci_high": estimate + WALD_Z * se,
                         "stat": np.asarray(stat, float), "df": np.asarray(df, float),
                         "p_value": np.asarray(p_value, float)})


def records_seconds(fit_function):
    """Decorate a fitting function so that its result's fit_stats["seconds"] holds the
    fit's wall time (a study's runner sums them into its time split)."""
    @functools.wraps(fit_function)
    def timed(*args, **kwargs):
        started = time.perf_counter()
        result = fit_function(*args, **kwargs)
        result.fit_stats["seconds"] = round(time.perf_counter() - started, 3)
        return result
    return timed

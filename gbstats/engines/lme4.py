"""The lme4 engine: R's lme4 (and lmerTest for LMMs) through pymer4 0.8.

This is the only module that imports pymer4 or rpy2, and it does so inside
functions: importing pymer4 starts R.
"""
from __future__ import annotations

import functools
import importlib.util
import shutil
import warnings as pywarnings

import numpy as np
import pandas as pd

from gbstats.errors import GbstatsError, MissingDependencyError
from gbstats.formula import ParsedFormula, r_term_names
from gbstats.results import RANEF_COLUMNS, FitResult, wald_table

INSTALL_HINT = ("install R with lme4 and lmerTest (Debian: apt-get install r-base-core r-cran-lme4 "
                "r-cran-lmertest) and `pip install pymer4==0.8.2 rpy2==3.5.17`; `gbstats check` "
                "shows what is missing")


def available() -> bool:
    """R on the PATH and pymer4/rpy2 importable (checked without starting R)."""
    return (shutil.which("R") is not None and importlib.util.find_spec("pymer4") is not None
            and importlib.util.find_spec("rpy2") is not None)


def require() -> None:
    if not available():
        raise MissingDependencyError(f"backend='lme4' needs R and pymer4: {INSTALL_HINT}")


def _lmer_class():
    require()
    try:
        from pymer4.models import Lmer
    except ImportError as exc:  # e.g. R present but its lme4 package missing
        raise MissingDependencyError(f"pymer4 failed to import ({exc}); {INSTALL_HINT}") from exc
    return Lmer


def fit(parsed: ParsedFormula, prepared, family: str, optimizer: str | None = None) -> FitResult:
    """Fit with lmer (REML, Satterthwaite) or glmer (Laplace, Wald z).

    `optimizer` becomes lme4's ``(g)lmerControl(optimizer=...)``; None keeps
    lme4's default.
    """
    Lmer = _lmer_class()
    from rpy2.rinterface_lib.embedded import RRuntimeError

    model = Lmer(parsed.text, data=_r_ready_frame(prepared), family=family)
    with pywarnings.catch_warnings():
        # pymer4 0.8.2 calls pandas' deprecated DataFrame.applymap: a note about
        # pymer4's own code, not about this fit. lme4's messages are collected
        # from model.warnings below.
        pywarnings.filterwarnings("ignore", category=FutureWarning, message=".*applymap.*")
        try:
            model.fit(REML=True, summarize=False, no_warnings=True, verbose=False,
                      control=f"optimizer='{optimizer}'" if optimizer else "")
        except RRuntimeError as exc:
            raise GbstatsError(f"lme4 could not fit {parsed.text!r} ({family}): "
                               f"{str(exc).strip()}") from exc

    expected = r_term_names(parsed.intercept, parsed.fixed_terms, prepared.levels)
    coefs = _coef_table(model, family)
    if list(coefs["term"]) != expected:
        # lme4 drops columns of a rank-deficient design; say which, rather than
        # return a table whose rows differ from the other backends'.
        raise GbstatsError(f"lme4 returned terms {list(coefs['term'])} for {parsed.text!r}, "
                           f"expected {expected}; the fixed-effect design may be rank deficient "
                           "(a factor combination that never occurs, or collinear predictors)")
    warnings = list(prepared.warnings) + _fit_warnings(model)
    if family == "gaussian" and coefs["df"].isna().all():
        warnings.append("lmerTest could not compute Satterthwaite df; df and p_value are missing")
    stats = {**_fit_stats(model, prepared, parsed, family), "optimizer": optimizer or "lme4 default"}
    return FitResult(formula=parsed.text, backend="lme4", family=family, coefs=coefs,
                     ranef_var=_ranef_table(model), fit_stats=stats, warnings=warnings)


def _r_ready_frame(prepared) -> pd.DataFrame:
    """A copy (pymer4 adds fitted values and residuals to the frame it gets)
    whose factor predictors are pandas Categoricals in our level order, which
    rpy2 turns into R factors with those levels: treatment contrasts with the
    same reference level, hence the same term names, as the other backends.
    (pymer4's own `factors=` option installs a contrast matrix, and R then
    names the terms "f1", "f2" instead of "fb".)"""
    frame = prepared.frame.copy()
    for var, levels in prepared.levels.items():
        frame[var] = pd.Categorical(frame[var], categories=levels)
    return frame


def _coef_table(model, family: str) -> pd.DataFrame:
    c = model.coefs
    if family == "gaussian":
        stat = c["T-stat"]
        df = c["DF"] if "DF" in c.columns else np.full(len(c), np.nan)
        p = c["P-val"] if "P-val" in c.columns else np.full(len(c), np.nan)
    else:
        stat, df, p = c["Z-stat"], np.full(len(c), np.nan), c["P-val"]
    return wald_table(c.index, c["Estimate"], c["SE"], stat, df, p)


def _ranef_table(model) -> pd.DataFrame:
    rv = model.ranef_var
    out = pd.DataFrame({"group": list(rv.index), "term": list(rv["Name"].astype(str)),
                        "variance": rv["Var"].astype(float).to_numpy(),
                        "sd": rv["Std"].astype(float).to_numpy()})
    return out[RANEF_COLUMNS]


def _fit_warnings(model) -> list[str]:
    """lme4's convergence and singular-fit messages, as plain strings."""
    found = []
    for w in model.warnings or []:
        items = w if isinstance(w, (list, tuple, np.ndarray)) else [w]
        found += [str(x) for x in items]
    if _is_singular(model) and not any("singular" in w for w in found):
        found.append("boundary (singular) fit: lme4::isSingular() is TRUE; a variance is "
                     "(near) zero or a correlation is +/-1")
    return list(dict.fromkeys(found))


@functools.lru_cache(maxsize=None)
def _r_function(name: str):
    """An R function by its qualified name, e.g. "lme4::isSingular". (rpy2's
    importr() would wrap every function of the package: seconds per call.)"""
    from rpy2 import robjects

    return robjects.r(name)


def _is_singular(model) -> bool:
    return bool(_r_function("lme4::isSingular")(model.model_obj)[0])


def _fit_stats(model, prepared, parsed: ParsedFormula, family: str) -> dict:
    nobs = int(_r_function("stats::nobs")(model.model_obj)[0])
    return {"nobs": nobs, "loglik": float(model.logLike), "aic": float(model.AIC),
            "bic": float(model.BIC), "n_dropped_na": prepared.n_dropped_na,
            "exclusions": prepared.exclusions.to_records(),
            "n_groups": {g: int(prepared.frame[g].nunique()) for g in parsed.groups},
            "reml": family == "gaussian"}

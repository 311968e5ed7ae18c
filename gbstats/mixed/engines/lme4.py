"""The lme4 engine: R's lme4 (and lmerTest for LMMs) through pymer4 0.8.

This is the only module that imports pymer4 or rpy2, and it does so inside
functions: importing pymer4 starts R.

R starts once per process, on the first lme4 fit, and loads only what that
fit needs. rpy2's `importr(pkg)` wraps every function of a package in Python
when called (seconds for `base` and `stats`), and pymer4 0.8.2 calls it for
base three times at import and for lmerTest (or lme4) on every fit. pymer4 is
therefore imported with a lazy `importr` (`LazyRPackage`): the package is
attached exactly as importr attaches it, and a function is looked up and
wrapped the first time pymer4 uses it. The R calls pymer4 makes, and so the
fits, are unchanged. Measured costs: benchmarks/results/singular_they.json
("r_startup").
"""
from __future__ import annotations

import functools
import importlib.util
import shutil
import sys
import warnings as pywarnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from gbstats.errors import GbstatsError, MissingDependencyError
from gbstats.mixed.formula import ParsedFormula, is_syntactic_r_name, r_term_names, renamed
from gbstats.mixed.results import RANEF_COLUMNS, FitHandle, FitResult, wald_table

INSTALL_HINT = ("install R with lme4 and lmerTest (Debian: apt-get install r-base-core r-cran-lme4 "
                "r-cran-lmertest) and `pip install pymer4==0.8.2 rpy2==3.5.17`; `gbstats check` "
                "shows what is missing")


def available() -> bool:
    """R on the PATH and pymer4/rpy2 importable (checked without starting R)."""
    return (shutil.which("R") is not None and importlib.util.find_spec("pymer4") is not None
            and importlib.util.find_spec("rpy2") is not None)


def r_off_path() -> Path | None:
    """An R executable that is installed but not on the PATH (R_HOME, or where Debian, a
    source build or rig put it), or None."""
    import glob
    import os

    places = [Path(os.environ["R_HOME"]) / "bin" / "R"] if os.environ.get("R_HOME") else []
    places += [Path(p) for p in ("/usr/lib/R/bin/R", "/usr/local/lib/R/bin/R", "/usr/bin/R",
                                 "/usr/local/bin/R", "/opt/homebrew/bin/R")]
    places += [Path(p) for p in sorted(glob.glob("/opt/R/*/bin/R"))]
    return next((p for p in places if p.is_file() and os.access(p, os.X_OK)), None)


def require() -> None:
    if available():
        return
    if shutil.which("R") is None:
        found = r_off_path()
        if found is not None:
            # installed, only not found: "not installed" sent people to reinstall R (issue 44)
            raise MissingDependencyError(
                f"backend='lme4' needs R on the PATH: R is installed at {found}, but it is not "
                f"on the PATH; add its folder (export PATH=\"{found.parent}:$PATH\")")
        raise MissingDependencyError(f"backend='lme4' needs R, which is not installed (no R on "
                                     f"the PATH): {INSTALL_HINT}")
    missing = [m for m in ("pymer4", "rpy2") if importlib.util.find_spec(m) is None]
    raise MissingDependencyError(f"backend='lme4' needs the Python package(s) "
                                 f"{', '.join(missing)}, not installed: {INSTALL_HINT}")


class LazyRPackage:
    """What rpy2's `importr(name)` returns, with its functions wrapped on first use.

    The package is attached (`require`, messages suppressed) at once, as
    importr does, so R code that calls its functions unqualified works. An
    attribute is the R object of that name in the package's namespace, or
    with "_" read as "." (importr's translation: `model_matrix` is
    `model.matrix`), converted and wrapped as importr would.
    """

    def __init__(self, name: str):
        from rpy2.robjects.packages import LibraryError, quiet_require

        if not quiet_require(name):
            raise LibraryError(f"the R package {name} could not be loaded")
        self.__rname__ = name

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        from rpy2 import robjects
        from rpy2.rinterface import RTYPES
        from rpy2.robjects.functions import DocumentedSTFunction

        namespace = robjects.r["asNamespace"](self.__rname__)
        for rname in dict.fromkeys([attr, attr.replace("_", ".")]):
            if robjects.r["exists"](rname, envir=namespace, inherits=False)[0]:
                found = robjects.conversion.get_conversion().rpy2py(namespace[rname])
                if getattr(found, "typeof", None) == RTYPES.CLOSXP:
                    found = DocumentedSTFunction(found, packagename=self.__rname__)
                setattr(self, attr, found)  # later uses skip the lookup
                return found
        raise AttributeError(f"R package {self.__rname__} has no object {attr!r}")


@functools.lru_cache(maxsize=None)
def lazy_importr(name: str) -> LazyRPackage:
    """One LazyRPackage per R package and process (pymer4 asks for lmerTest on every fit)."""
    return LazyRPackage(name)


def _importr_lazily(original):
    """An importr for pymer4: plain calls give the (cached) LazyRPackage."""
    def importr(name, *args, **kwargs):
        return original(name, *args, **kwargs) if args or kwargs else lazy_importr(name)
    return importr


@functools.lru_cache(maxsize=1)
def lmer_class():
    """pymer4's Lmer, imported once with `lazy_importr` in place of rpy2's importr."""
    require()
    import sys

    import rpy2.robjects.packages as rpackages

    original = rpackages.importr
    lazy = _importr_lazily(original)
    rpackages.importr = lazy  # pymer4's modules bind it at import
    try:
        from pymer4.models import Lmer
    except ImportError as exc:  # e.g. R present but its lme4 package missing
        raise MissingDependencyError(f"pymer4 failed to import ({exc}); {INSTALL_HINT}") from exc
    finally:
        rpackages.importr = original
    # (the module, not the class the package re-exports under the same name)
    sys.modules["pymer4.models.Lmer"].importr = lazy  # Lmer.fit asks for lmerTest/lme4 each time
    return Lmer


def fit(parsed: ParsedFormula, prepared, family: str, optimizer: str | None = None) -> FitResult:
    """Fit with lmer (REML, Satterthwaite) or glmer (Laplace, Wald z).

    `optimizer` becomes lme4's ``(g)lmerControl(optimizer=...)``; None keeps
    lme4's default.
    """
    Lmer = lmer_class()
    from rpy2.rinterface_lib.embedded import RRuntimeError

    # R sees safe aliases for names it would mangle (defect 9); every table comes back
    # under the user's names.
    aliases = r_aliases(parsed)
    r_parsed, r_prepared = (renamed(parsed, aliases), aliased(prepared, aliases)) if aliases \
        else (parsed, prepared)
    coded = {v: c for v, c in r_prepared.codings.items() if c.kind != "treatment"}
    model_class = _with_contrasts(Lmer, coded) if coded else Lmer
    model = model_class(r_parsed.text, data=_r_ready_frame(r_prepared), family=family)
    with pywarnings.catch_warnings():
        # pymer4 0.8.2 calls pandas' deprecated DataFrame.applymap: a note about
        # pymer4's own code, not about this fit. lme4's messages are collected
        # from model.warnings below.
        pywarnings.filterwarnings("ignore", category=FutureWarning, message=".*applymap.*")
        try:
            model.fit(REML=True, summarize=False, no_warnings=True, verbose=False,
                      control=f"optimizer='{optimizer}'" if optimizer else "",
                      factors={v: list(c.levels) for v, c in coded.items()} or None)
        except RRuntimeError as exc:
            raise GbstatsError(f"lme4 could not fit {parsed.text!r} ({family}): "
                               f"{restore_text(str(exc).strip(), aliases)}") from exc

    expected = r_term_names(parsed.intercept, parsed.fixed_terms, prepared.levels, prepared.codings)
    r_expected = r_term_names(r_parsed.intercept, r_parsed.fixed_terms, r_prepared.levels,
                              r_prepared.codings)
    coefs = _coef_table(model, family)
    if list(coefs["term"]) != r_expected:
        # lme4 drops columns of a rank-deficient design; say which, rather than
        # return a table whose rows differ from the other backends'.
        found = [restore_text(t, aliases) for t in coefs["term"]]
        raise GbstatsError(f"lme4 returned terms {found} for {parsed.text!r}, "
                           f"expected {expected}; the fixed-effect design may be rank deficient "
                           "(a factor combination that never occurs, or collinear predictors)")
    coefs["term"] = expected  # the same terms in the same order, under the user's names
    warnings = list(prepared.warnings) + [restore_text(w, aliases) for w in _fit_warnings(model)]
    if family == "gaussian" and coefs["df"].isna().all():
        warnings.append("lmerTest could not compute Satterthwaite df; df and p_value are missing")
    stats = {**_fit_stats(model, prepared, parsed, family), "optimizer": optimizer or "lme4 default",
             "ci_method": CI_METHOD[family]}
    # vcov(beta) in the coefs' order, kept with the result so that a fit reused from the
    # fit cache (no live R object) can still give population-averaged effects
    # (gbstats.mixed.population)
    stats["vcov"] = np.asarray(_r_function("function(m) as.matrix(vcov(m))")(model.model_obj),
                               dtype=float).tolist()
    if aliases:
        stats["r_aliases"] = dict(aliases)
    return FitResult(formula=parsed.text, backend="lme4", family=family, coefs=coefs,
                     ranef_var=restore_names(_ranef_table(model), aliases), fit_stats=stats,
                     warnings=warnings,
                     handle=FitHandle("lme4", model, parsed, prepared, dict(prepared.codings),
                                      extra={"r_aliases": dict(aliases)}))


# --------------------------------------------------------------------------
# column names R cannot take as they are (defect 9)

def needs_alias(name: str) -> bool:
    """A column R would mangle: a reserved word, a space, a leading digit or underscore."""
    return not is_syntactic_r_name(name)


def r_aliases(parsed: ParsedFormula) -> dict[str, str]:
    """{column: alias} for the formula's columns that are not syntactic R names (`if`,
    `my col`, `_x`, `2nd`). An alias is `gbstats_col<i>_`: no alias is a substring of
    another (the trailing "_"), so `restore_text` can map R's labels back by substitution
    (R builds a term name as column + level, e.g. `gbstats_col2_neutral`)."""
    taken = set(parsed.columns)
    out, i = {}, 0
    for column in parsed.columns:
        if needs_alias(column):
            i += 1
            while f"gbstats_col{i}_" in taken:
                i += 1
            out[column] = f"gbstats_col{i}_"
    return out


def aliased(prepared, aliases: dict[str, str]):
    """PreparedData with its frame's columns, levels and codings under the aliases."""
    def name(v: str) -> str:
        return aliases.get(v, v)

    return replace(prepared, frame=prepared.frame.rename(columns=aliases),
                   levels={name(v): lv for v, lv in prepared.levels.items()},
                   codings={name(v): replace(c, variable=name(v)) for v, c in prepared.codings.items()})


def restore_text(text: str, aliases: dict[str, str]) -> str:
    for column, alias in aliases.items():
        text = text.replace(alias, column)
    return text


def restore_names(table: pd.DataFrame, aliases: dict[str, str]) -> pd.DataFrame:
    """A table from R with every alias, in column names and string cells, back to the
    user's column name."""
    if not aliases:
        return table
    out = table.rename(columns=lambda c: restore_text(c, aliases) if isinstance(c, str) else c)
    for column in out.columns:
        if out[column].dtype == object:
            out[column] = out[column].map(lambda v: restore_text(v, aliases) if isinstance(v, str) else v)
    return out


def handle_aliases(handle) -> dict[str, str]:
    return handle.extra.get("r_aliases", {}) if handle.extra else {}


CI_METHOD = {
    "gaussian": ("REML; 95% t intervals with the Satterthwaite df of each coefficient's "
                 "lmerTest t test (estimate +/- qt(0.975, df) x SE)"),
    "binomial": "Laplace ML; Wald z tests and 95% Wald intervals (estimate +/- 1.96 x SE)",
}


def _with_contrasts(Lmer, codings):
    """pymer4's Lmer, but handing lme4 our contrast matrices, with row names =
    levels and column names = the coding's names, so that R names the terms as
    `r_term_names` does (``close1`` for contr.sum, ``close<colname>`` for a
    user matrix). pymer4's own `_make_factors` would rebuild the matrices from
    "human readable" weights and drop our names.

    The matrices go to lme4 twice: as (g)lmer's ``contrasts=`` argument and as
    each factor's ``contrasts()`` attribute in the data frame R receives.
    The argument alone codes only the fixed part: lme4 builds a random
    slope's columns (``(1 + f | g)``) from the factor's own attribute, so
    those slopes would silently be treatment-coded (variances named
    ``fb``, ``fc``), a different parametrisation that can end at another
    optimum. R users set ``contrasts(d$f) <- m``, which codes both."""

    def r_matrices():
        from rpy2 import robjects

        matrices = {}
        for var, coding in codings.items():
            values = robjects.FloatVector(coding.matrix.ravel(order="F"))
            matrix = robjects.r["matrix"](values, nrow=len(coding.levels))
            matrix.rownames = robjects.StrVector(list(coding.levels))
            matrix.colnames = robjects.StrVector(list(coding.names))
            matrices[var] = matrix
        return robjects.ListVector(matrices)

    class CodedLmer(Lmer):
        def _make_factors(self, factor_dict, ordered=False):
            self.factors = factor_dict
            return r_matrices(), self.data

        def fit(self, *args, **kwargs):
            module = sys.modules[Lmer.__module__]
            plain = module.pandas2R

            def with_contrast_attributes(frame):
                return _r_function(SET_CONTRASTS)(plain(frame), r_matrices())

            module.pandas2R = with_contrast_attributes  # pymer4 converts the data with it
            try:
                return super().fit(*args, **kwargs)
            finally:
                module.pandas2R = plain

    return CodedLmer


# R: every coded factor of the data frame gets its matrix as contrasts() attribute
SET_CONTRASTS = "function(d, m) { for (v in names(m)) contrasts(d[[v]]) <- m[[v]]; d }"


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
    table = wald_table(c.index, c["Estimate"], c["SE"], stat, df, p)
    return t_intervals(table) if family == "gaussian" else table


def t_intervals(coefs: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Replace Wald z intervals by t intervals with each row's own df (the
    Satterthwaite df of its test), so that a 95% interval excludes 0 exactly
    when p < .05. Rows without a df (lmerTest failed) keep their z interval."""
    from scipy import stats as sps

    out = coefs.copy()
    df = out["df"].to_numpy(dtype=float)
    has_df = np.isfinite(df)
    quantile = sps.t.ppf(0.5 + level / 2, np.where(has_df, df, 1.0))
    half = quantile * out["se"].to_numpy(dtype=float)
    out.loc[has_df, "ci_low"] = (out["estimate"] - half)[has_df]
    out.loc[has_df, "ci_high"] = (out["estimate"] + half)[has_df]
    return out


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


# --------------------------------------------------------------------------
# questions asked of a fitted lme4 model (compare_models, marginal_means,
# random_effects); each one calls R on the merMod that pymer4 holds

def _to_pandas(r_frame) -> pd.DataFrame:
    from rpy2 import robjects
    from rpy2.robjects import pandas2ri
    from rpy2.robjects.conversion import localconverter

    with localconverter(robjects.default_converter + pandas2ri.converter):
        frame = robjects.conversion.get_conversion().rpy2py(r_frame)
    frame = frame.reset_index(drop=True)
    for col in frame.columns:  # R factors arrive as Categoricals; keep plain labels
        if isinstance(frame[col].dtype, pd.CategoricalDtype):
            frame[col] = frame[col].astype(str)
    return frame


_ML_FIT_CALL = """
function(m) {
  if (lme4::isREML(m)) m <- lme4::refitML(m)
  ll <- stats::logLik(m)
  c(npar = attr(ll, "df"), aic = stats::AIC(m), bic = stats::BIC(m), loglik = as.numeric(ll))
}
"""


def ml_fit(handle) -> dict:
    """The model refitted by ML when it was fitted by REML (lme4's
    ``refitML``, as ``anova()`` does): npar, aic, bic, loglik, deviance."""
    from rpy2.rinterface_lib.embedded import RRuntimeError

    try:
        npar, aic, bic, loglik = np.asarray(_r_function(_ML_FIT_CALL)(handle.native.model_obj), float)
    except RRuntimeError as exc:
        raise GbstatsError(f"lme4 could not refit {handle.parsed.text!r} by ML: {str(exc).strip()}") from exc
    return {"npar": int(npar), "aic": aic, "bic": bic, "loglik": loglik, "deviance": -2 * loglik}


_EMMEANS_CALL = """
function(fit, specs, by, lmer_df, type, adjust, level, reverse) {
  args <- list(fit, specs = specs, level = level)
  if (length(by)) args$by <- by
  if (inherits(fit, "lmerMod")) args$lmer.df <- lmer_df
  emm <- suppressMessages(do.call(emmeans::emmeans, args))
  if (type == "response") emm <- emmeans::regrid(emm)
  list(means = as.data.frame(summary(emm, infer = c(TRUE, TRUE), level = level)),
       pairs = as.data.frame(summary(pairs(emm, adjust = adjust, reverse = reverse),
                                     infer = c(TRUE, TRUE),
                                     level = level)))
}
"""

EMMEANS_DF = {"gaussian": "satterthwaite"}


def emmeans(handle, specs: list[str], by: list[str], type: str, adjust: str,
            level: float, reverse: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """R's emmeans on the fitted model: (means, pairwise contrasts) as R
    returns them (columns emmean/prob, SE, df, lower.CL/asymp.LCL, ...).
    LMMs use Satterthwaite df (as the coefficient tests do), GLMMs z."""
    from rpy2 import robjects
    from rpy2.rinterface_lib.embedded import RRuntimeError

    aliases = handle_aliases(handle)
    try:
        out = _r_function(_EMMEANS_CALL)(
            handle.native.model_obj, robjects.StrVector([aliases.get(v, v) for v in specs]),
            robjects.StrVector([aliases.get(v, v) for v in by]),
            "satterthwaite", type, adjust, level, reverse)
    except RRuntimeError as exc:
        raise GbstatsError(f"R's emmeans failed on {handle.parsed.text!r} (specs {specs}, by {by}): "
                           f"{restore_text(str(exc).strip(), aliases)}") from exc
    return (restore_names(_to_pandas(out.rx2("means")), aliases),
            restore_names(_to_pandas(out.rx2("pairs")), aliases))


_RANEF_CALL = """
function(fit) {
  re <- as.data.frame(lme4::ranef(fit, condVar = TRUE))
  vc <- as.data.frame(lme4::VarCorr(fit))
  list(vals = data.frame(group = as.character(re$grpvar), term = as.character(re$term),
                         level = as.character(re$grp), estimate = re$condval, se = re$condsd),
       pars = data.frame(group = vc$grp, var1 = ifelse(is.na(vc$var1), "", vc$var1),
                         var2 = ifelse(is.na(vc$var2), "", vc$var2), sdcor = vc$sdcor,
                         vcov = vc$vcov))
}
"""


def ranef_tables(handle) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(conditional modes with conditional SDs, VarCorr rows) from lme4:
    ``ranef(fit, condVar = TRUE)`` and ``VarCorr(fit)``."""
    out = _r_function(_RANEF_CALL)(handle.native.model_obj)
    aliases = handle_aliases(handle)
    return (restore_names(_to_pandas(out.rx2("vals")), aliases),
            restore_names(_to_pandas(out.rx2("pars")), aliases))


def fixed_effects(handle) -> tuple[np.ndarray, np.ndarray]:
    """(beta, vcov(beta)) in the coefs table's order."""
    model = handle.native.model_obj
    beta = np.asarray(_r_function("lme4::fixef")(model), dtype=float)
    vcov = np.asarray(_r_function("function(m) as.matrix(vcov(m))")(model), dtype=float)
    return beta, vcov


# --------------------------------------------------------------------------
# the penalised GLMM: blme::bglmer

# blme's default normal fixed-effect prior (Chung, Rabe-Hesketh, Dorie,
# Gelman & Liu 2013, "A nondegenerate penalized likelihood estimator for
# variance parameters in multilevel models", Psychometrika 78(4); blme's
# `normal(sd = c(10, 2.5))`): SD 10 for the intercept and 2.5 for every other
# coefficient on the log-odds scale. Weak where the data speak (a log-odds of
# 2.5 is odds of 12 to 1) and finite where glmer's estimate runs off to
# infinity under separation. No covariance prior (cov.prior = NULL), so the
# variance components are glmer's.
BGLMER_FIXEF_SD = (10.0, 2.5)
BLME_HINT = ("install blme (Debian: apt-get install r-cran-blme); `gbstats check` shows "
             "what is missing")

_BGLMER_CALL = """
function(formula, data, sd_intercept, sd_other) {
  f <- stats::as.formula(formula)
  messages <- character(0)
  fit <- withCallingHandlers(
    # bglmer reads its priors unevaluated, as blme's own names: the SDs are
    # spliced into the call as numbers
    eval(bquote(blme::bglmer(f, data = data, family = stats::binomial,
                             fixef.prior = normal(sd = c(.(sd_intercept), .(sd_other))),
                             cov.prior = NULL))),
    warning = function(w) { messages <<- c(messages, conditionMessage(w))
                            invokeRestart("muffleWarning") },
    message = function(m) { messages <<- c(messages, trimws(conditionMessage(m)))
                            invokeRestart("muffleMessage") })
  co <- stats::coef(summary(fit))
  vc <- as.data.frame(lme4::VarCorr(fit))
  vc <- vc[is.na(vc$var2), ]
  ll <- stats::logLik(fit)
  list(terms = rownames(co), estimate = unname(co[, 1]), se = unname(co[, 2]),
       z = unname(co[, 3]), p = unname(co[, 4]),
       grp = as.character(vc$grp), var1 = as.character(vc$var1), vcov = vc$vcov, sdcor = vc$sdcor,
       loglik = as.numeric(ll), aic = stats::AIC(fit), bic = stats::BIC(fit),
       nobs = stats::nobs(fit), singular = lme4::isSingular(fit),
       messages = unique(c(messages, fit@optinfo$conv$lme4$messages)))
}
"""


def fit_bglmer(parsed: ParsedFormula, prepared, fixef_sd: tuple[float, float] = BGLMER_FIXEF_SD
               ) -> FitResult:
    """A binomial GLMM penalised by a weak normal prior on the fixed effects
    (blme's bglmer, Laplace; a posterior mode): Wald z tests and 95% Wald
    intervals from the penalised fit's curvature, backend "blme"."""
    require()
    from rpy2 import robjects
    from rpy2.rinterface_lib.embedded import RRuntimeError
    from rpy2.robjects import pandas2ri
    from rpy2.robjects.conversion import localconverter

    coded = [v for v, c in prepared.codings.items() if c.kind != "treatment"]
    if coded:
        raise GbstatsError(f"the penalised GLMM (bglmer) takes treatment-coded factors only; "
                           f"{coded} have other contrasts")
    if not robjects.r("requireNamespace")("blme", quietly=True)[0]:
        raise MissingDependencyError(f"the penalised GLMM needs the R package blme: {BLME_HINT}")
    with localconverter(robjects.default_converter + pandas2ri.converter):
        r_data = robjects.conversion.get_conversion().py2rpy(_r_ready_frame(prepared))
    try:
        out = _r_function(_BGLMER_CALL)(parsed.text, r_data, float(fixef_sd[0]), float(fixef_sd[1]))
    except RRuntimeError as exc:
        raise GbstatsError(f"blme::bglmer could not fit {parsed.text!r}: {str(exc).strip()}") from exc
    res = {name: out.rx2(name) for name in out.names}
    terms = list(res["terms"])
    expected = r_term_names(parsed.intercept, parsed.fixed_terms, prepared.levels, prepared.codings)
    if terms != expected:
        raise GbstatsError(f"bglmer returned terms {terms} for {parsed.text!r}, expected {expected}; "
                           "the fixed-effect design may be rank deficient")
    coefs = wald_table(terms, np.asarray(res["estimate"]), np.asarray(res["se"]),
                       np.asarray(res["z"]), np.full(len(terms), np.nan), np.asarray(res["p"]))
    ranef = pd.DataFrame({"group": list(res["grp"]),
                          "term": [str(t) for t in res["var1"]],
                          "variance": np.asarray(res["vcov"], float),
                          "sd": np.asarray(res["sdcor"], float)})[RANEF_COLUMNS]
    warnings = list(prepared.warnings) + [str(m) for m in res["messages"]]
    if bool(res["singular"][0]) and not any("singular" in w for w in warnings):
        warnings.append("boundary (singular) fit: lme4::isSingular() is TRUE; a variance is "
                        "(near) zero or a correlation is +/-1")
    stats = {"nobs": int(res["nobs"][0]), "loglik": float(res["loglik"][0]),
             "aic": float(res["aic"][0]), "bic": float(res["bic"][0]),
             "n_dropped_na": prepared.n_dropped_na, "exclusions": prepared.exclusions.to_records(),
             "n_groups": {g: int(prepared.frame[g].nunique()) for g in parsed.groups},
             "reml": False, "fixef_prior": f"normal(sd = c({fixef_sd[0]:g}, {fixef_sd[1]:g}))",
             "cov_prior": "none",
             "ci_method": ("blme::bglmer, Laplace posterior mode under Normal(0, "
                           f"{fixef_sd[0]:g}) on the intercept and Normal(0, {fixef_sd[1]:g}) on "
                           "the other fixed effects; Wald z tests and 95% Wald intervals "
                           "(estimate +/- 1.96 x SE)")}
    return FitResult(formula=parsed.text, backend="blme", family="binomial", coefs=coefs,
                     ranef_var=ranef, fit_stats=stats, warnings=list(dict.fromkeys(warnings)),
                     handle=FitHandle("blme", None, parsed, prepared, dict(prepared.codings)))

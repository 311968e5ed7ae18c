"""Linear and generalized linear mixed models: `fit_lmm`, `fit_glmm`.

One lme4 formula, several engines:

* ``backend="lme4"``: R's lme4 through pymer4. LMMs are fitted by REML with
  lmerTest's Satterthwaite df and p-values; GLMMs by maximum likelihood
  (Laplace) with Wald z tests. Any formula lme4 accepts within the syntax of
  `gbstats.mixed.formula` (crossed and multiple grouping factors, random slopes).
* ``backend="statsmodels"``: `statsmodels.MixedLM`, REML, for LMMs with one
  grouping factor (random intercept and/or correlated slopes). Its tests are
  Wald z tests (df is NaN). Anything else raises an error naming the lme4 backend.
* ``backend="auto"``: lme4 when R and pymer4 are importable, else statsmodels,
  with a one-line notice in the result's warnings.

Confidence intervals are 95% intervals of the same kind as the test beside
them: for lme4 LMMs, t intervals with the coefficient's Satterthwaite df
(estimate +/- qt(0.975, df) * se, the interval that inverts lmerTest's t
test); for GLMMs and statsmodels, Wald z intervals, estimate +/- qnorm(0.975)
* se (lme4's ``confint(method="Wald")``). ``fit_stats["ci_method"]`` names it
and `fit_notes` puts it into table notes. Factors are coded by ``contrasts``
(treatment unless asked; see `gbstats.mixed.contrasts`).

The data are checked before any engine sees them (see `prepare_data`): rows
with a missing value in a column the formula uses are dropped and counted
(``fit_stats["n_dropped_na"]`` and a warning); a missing column, a constant
response, a one-level factor or grouping factor, and a non-0/1 response to a
binomial GLMM are errors. Warnings from the engine (convergence, singular fit)
land in ``FitResult.warnings``. The library never refits a simpler model on
its own: `refit_simpler` does it when asked and records what it dropped.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import pandas as pd

from gbstats.mixed.clean_process import r_fit
from gbstats.mixed.contrasts import describe_codings, resolve_contrasts
from gbstats.mixed.design import between_factor_terms, with_design_check
from gbstats.errors import DataValidationError, GbstatsError
from gbstats.exclusions import ExclusionLog
from gbstats.mixed.formula import (ParsedFormula, as_factor_strings, factor_levels, is_factor,
                             parse_formula)
from gbstats.mixed.results import FitResult, records_seconds

BACKENDS = ("auto", "lme4", "statsmodels")
FAMILIES = ("gaussian", "binomial")
# DataValidationError prints "file <source>"; the data here is an in-memory frame.
DATA_SOURCE = "<data frame passed to the fit>"


@dataclass
class PreparedData:
    """The rows and columns a fit uses, checked and coded for every engine.

    frame     only the formula's columns, no missing values; factor predictors
              hold their level strings, grouping factors are strings, a
              binomial response is 0/1 integers.
    levels    {factor predictor: levels}, first level = reference.
    n_dropped_na, exclusions, warnings: what preparation dropped and said.
    codings   {factor predictor: contrasts.Coding}, treatment unless asked.
    """

    frame: pd.DataFrame
    levels: dict[str, list[str]]
    n_dropped_na: int = 0
    warnings: list[str] = field(default_factory=list)
    exclusions: ExclusionLog = field(default_factory=ExclusionLog)
    codings: dict = field(default_factory=dict)


@records_seconds
def fit_lmm(formula: str, data: pd.DataFrame, backend: str = "auto", *,
            optimizer: str | None = None, contrasts: dict | None = None) -> FitResult:
    """Fit a linear mixed model written in lme4 syntax, e.g.
    ``fit_lmm("surprisal ~ close + gendered + (1|frame)", df)``.

    Returns a `FitResult`: coefs (R term names, Wald 95% CIs; Satterthwaite
    t tests with lme4, z tests with statsmodels), ranef_var (variances and SDs,
    "Residual" included), fit_stats (nobs, loglik, aic, bic, n_dropped_na,
    n_groups; REML fit, so loglik is the REML log-likelihood as lme4 reports
    it) and warnings. The caller's data frame is never modified.

    ``optimizer`` (lme4 backend only) names lme4's optimizer, e.g. "bobyqa"
    or "Nelder_Mead" (``lmerControl(optimizer=...)``); it is recorded in
    ``fit_stats["optimizer"]``. Switching optimizers after a convergence
    warning is the user's decision, never done silently.

    ``contrasts`` codes factors: ``{"close": "sum"}`` (R's contr.sum, terms
    ``close1``, ...), ``"treatment"`` (the default) or a matrix (see
    `gbstats.mixed.contrasts`). The coding of every factor is recorded in
    ``fit_stats["contrasts"]`` and described by `fit_notes`.

    Intervals: with lme4, 95% t intervals with the Satterthwaite df of the
    coefficient's own test (estimate +/- qt(0.975, df) * se), so interval and
    p-value agree; with statsmodels, Wald z intervals. ``fit_stats["ci_method"]``
    says which.
    """
    return _fit(formula, data, "gaussian", backend, optimizer, contrasts)


@records_seconds
def fit_glmm(formula: str, data: pd.DataFrame, family: str = "binomial",
             backend: str = "auto", *, optimizer: str | None = None,
             contrasts: dict | None = None, penalised: bool = False) -> FitResult:
    """Fit a generalized linear mixed model (lme4's glmer, Laplace ML).

    Only ``family="binomial"`` (logit link) is supported; the response must be
    0/1 or boolean. Tests are Wald z (df NaN), CIs Wald 95%. statsmodels has
    no maximum-likelihood GLMM, so this needs the lme4 backend. ``optimizer``
    as in `fit_lmm` (``glmerControl(optimizer=...)``); ``contrasts`` as in
    `fit_lmm`.

    Separation (`gbstats.mixed.separation`) is checked on every binomial fit:
    before fitting, by Konis' linear program on the fixed-effect design, and
    after, by estimates or SEs beyond 10 on the log-odds scale; either puts a
    "separation" warning in the result (and so in its table's note).

    ``penalised=True`` fits blme's ``bglmer`` instead of ``glmer``: the same
    model with a weak Normal(0, 10) prior on the intercept and Normal(0, 2.5)
    on the other fixed effects (`gbstats.mixed.engines.lme4.BGLMER_FIXEF_SD`),
    whose estimates stay finite under separation; backend "blme", treatment
    coding only. It needs R's blme package.
    """
    if family != "binomial":
        raise GbstatsError(f"fit_glmm: family {family!r} is not supported; expected 'binomial' "
                           "(for a gaussian response use fit_lmm)")
    if penalised:
        return _fit_penalised(formula, data, backend, optimizer, contrasts)
    return _fit(formula, data, family, backend, optimizer, contrasts)


def _fit_penalised(formula: str, data: pd.DataFrame, backend: str, optimizer: str | None,
                   contrasts: dict | None) -> FitResult:
    from gbstats.mixed.engines import lme4 as lme4_engine

    if backend not in ("auto", "lme4", "blme"):
        raise GbstatsError(f"fit_glmm(penalised=True) fits blme::bglmer through R; backend "
                           f"{backend!r} cannot, use backend='lme4'")
    if optimizer is not None:
        raise GbstatsError("fit_glmm(penalised=True) uses bglmer's default optimizer; "
                           f"optimizer={optimizer!r} is not supported")
    parsed = parse_formula(formula)
    if not parsed.random:
        raise GbstatsError(f"formula {formula!r} has no random term such as (1|participant); "
                           "a mixed model needs at least one")
    prepared = prepare_data(parsed, data, "binomial", contrasts)
    design = between_factor_terms(parsed, data)
    result = r_fit(lme4_engine.fit_bglmer, parsed, prepared)
    result.fit_stats["contrasts"] = {v: c.to_record() for v, c in prepared.codings.items()}
    return with_design_check(with_separation_check(result, parsed, prepared), design)


def with_separation_check(result: FitResult, parsed: ParsedFormula, prepared: PreparedData
                          ) -> FitResult:
    """Add the separation checks (`gbstats.mixed.separation`) to a binomial fit:
    fit_stats["separated_terms"] / ["large_estimate_terms"] and warnings."""
    from gbstats.mixed.formula import model_matrix
    from gbstats.mixed.separation import (large_estimate_terms, separated_terms,
                                          separation_warnings)

    design = model_matrix(parsed.intercept, parsed.fixed_terms, prepared.frame, prepared.levels,
                          prepared.codings)
    separated = separated_terms(design, prepared.frame[parsed.response].to_numpy())
    large = large_estimate_terms(result.coefs)
    result.fit_stats["separated_terms"] = separated
    result.fit_stats["large_estimate_terms"] = large
    result.warnings.extend(separation_warnings(separated, large,
                                               penalised=result.backend == "blme"))
    return result


LME4_OPTIMIZERS = ("bobyqa", "Nelder_Mead", "nloptwrap", "nlminbwrap")


def _fit(formula: str, data: pd.DataFrame, family: str, backend: str,
         optimizer: str | None = None, contrasts: dict | None = None) -> FitResult:
    parsed = parse_formula(formula)
    if not parsed.random:
        raise GbstatsError(f"formula {formula!r} has no random term such as (1|participant); "
                           "a mixed model needs at least one")
    engine, notice = choose_backend(backend)
    if optimizer is not None:
        if optimizer not in LME4_OPTIMIZERS:
            raise GbstatsError(f"optimizer {optimizer!r} is not an lme4 optimizer; expected one of "
                               f"{', '.join(LME4_OPTIMIZERS)}")
        if engine.__name__ != "gbstats.mixed.engines.lme4":
            raise GbstatsError(f"optimizer={optimizer!r} is an lme4 setting, but the backend is "
                               f"{engine.__name__.rsplit('.', 1)[-1]}; use backend='lme4'")
    prepared = prepare_data(parsed, data, family, contrasts)
    # before the fit, on the caller's whole frame: the factor a predictor varies between
    # is usually a column the formula does not name (gbstats.mixed.design)
    design = between_factor_terms(parsed, data)
    # an R fit runs in the clean process where a study asked for it (gbstats.mixed.clean_process)
    fit = partial(r_fit, engine.fit) if engine.__name__ == "gbstats.mixed.engines.lme4" \
        else engine.fit
    result = (fit(parsed, prepared, family, optimizer=optimizer) if optimizer
              else fit(parsed, prepared, family))
    result.fit_stats["contrasts"] = {v: c.to_record() for v, c in prepared.codings.items()}
    if notice:
        result.warnings.insert(0, notice)
    if family == "binomial":
        result = with_separation_check(result, parsed, prepared)
    return with_design_check(result, design)


def choose_backend(backend: str):
    """(engine module, notice or "") for a backend name; "auto" prefers lme4."""
    from gbstats.mixed.engines import lme4 as lme4_engine
    from gbstats.mixed.engines import statsmodels as sm_engine

    if backend == "lme4":
        lme4_engine.require()
        return lme4_engine, ""
    if backend == "statsmodels":
        return sm_engine, ""
    if backend == "auto":
        if lme4_engine.available():
            return lme4_engine, ""
        return sm_engine, ("backend='auto' used statsmodels because R/lme4/pymer4 are not "
                           "installed (see `gbstats check`)")
    raise GbstatsError(f"unknown backend {backend!r}; expected one of {list(BACKENDS)}")


# --------------------------------------------------------------------------
# input checks

def prepare_data(parsed: ParsedFormula, data: pd.DataFrame, family: str = "gaussian",
                 contrasts: dict | None = None) -> PreparedData:
    """Check `data` against the formula and code it for the engines (a copy);
    `contrasts` is resolved to one coding per factor (`resolve_contrasts`)."""
    if not isinstance(data, pd.DataFrame):
        raise DataValidationError("a mixed model needs a pandas DataFrame", source=DATA_SOURCE,
                                  expected="pandas.DataFrame", found=type(data).__name__)
    require_formula_columns(parsed, data)
    if len(data) == 0:
        # Checked here, before any engine: lme4 and statsmodels fail on an empty
        # frame with messages that name neither the data nor the formula.
        raise DataValidationError(f"the data for {parsed.text!r} have no rows",
                                  source=DATA_SOURCE, expected="at least one row per group",
                                  found="0 rows")
    frame, n_dropped, notes = drop_missing_rows(data[parsed.columns].copy(), parsed.text)
    check_response(frame, parsed.response, family)
    require_finite(frame, [parsed.response] + [v for v in parsed.predictors if not is_factor(frame[v])])
    levels = {}
    for var in parsed.predictors:
        if is_factor(frame[var]):
            levels[var] = factor_levels(frame[var])
            _require_two_levels(frame[var], var, levels[var], "factor", parsed.text)
            frame[var] = as_factor_strings(frame[var])
    for group in parsed.groups:
        frame[group] = as_factor_strings(frame[group])
        _require_two_levels(frame[group], group, sorted(frame[group].unique()),
                            "grouping factor", parsed.text)
    if family == "binomial":
        frame[parsed.response] = frame[parsed.response].astype(int)
    exclusions = ExclusionLog()
    if n_dropped:
        exclusions.record("missing value in a formula column", n_dropped, stage="prepare_data")
    return PreparedData(frame=frame, levels=levels, n_dropped_na=n_dropped, warnings=notes,
                        exclusions=exclusions,
                        codings=resolve_contrasts(
                            contrasts, levels, parsed.text,
                            counts={v: frame[v].value_counts().to_dict() for v in levels}))


def require_formula_columns(parsed: ParsedFormula, data: pd.DataFrame) -> None:
    missing = [c for c in parsed.columns if c not in data.columns]
    if missing:
        raise DataValidationError(
            f"formula {parsed.text!r} names column(s) {missing} that are not in the data",
            source=DATA_SOURCE, expected=f"columns {parsed.columns}",
            found=f"available columns {list(data.columns)}")


def drop_missing_rows(frame: pd.DataFrame, formula: str) -> tuple[pd.DataFrame, int, list[str]]:
    """Drop rows with a missing value in any formula column; count them by column."""
    missing = frame.isna()
    rows = missing.any(axis=1)
    n = int(rows.sum())
    if n == 0:
        return frame, 0, []
    if n == len(frame):
        raise DataValidationError(f"every row has a missing value in a column of {formula!r}",
                                  source=DATA_SOURCE, expected="some complete rows",
                                  found=f"missing values per column {missing.sum().to_dict()}")
    per_column = {c: int(k) for c, k in missing.sum().items() if k}
    note = (f"dropped {n} of {len(frame)} rows with missing values "
            f"(missing per column: {per_column})")
    return frame.loc[~rows], n, [note]


def require_finite(frame: pd.DataFrame, numeric_columns: list[str]) -> None:
    """Infinite values are not missing values: they are errors, with their place."""
    for col in numeric_columns:
        values = frame[col]
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            bad = ~np.isfinite(values.to_numpy(dtype=float))
            if bad.any():
                first = values.index[bad.argmax()]
                raise DataValidationError(
                    f"{int(bad.sum())} infinite value(s) (first at index {first!r})",
                    source=DATA_SOURCE, column=col, expected="finite numbers",
                    found=f"{values.loc[first]!r}")


def check_response(frame: pd.DataFrame, response: str, family: str) -> None:
    y = frame[response]
    if family == "binomial":
        if pd.api.types.is_bool_dtype(y):
            values = y.astype(int)
        elif pd.api.types.is_numeric_dtype(y):
            values = y
        else:
            raise DataValidationError("a binomial GLMM needs a 0/1 or boolean response",
                                      source=DATA_SOURCE, column=response, expected="0/1 or True/False",
                                      found=f"dtype {y.dtype}, values {_some(y)}")
        bad = ~values.isin([0, 1])
        if bad.any():
            first = bad.idxmax()
            raise DataValidationError(
                f"a binomial GLMM needs a 0/1 response; {int(bad.sum())} row(s) hold other values "
                f"(first at index {first!r})", source=DATA_SOURCE, column=response,
                expected="values 0 and 1", found=f"values {_some(y[bad])}")
    elif not pd.api.types.is_numeric_dtype(y) or pd.api.types.is_bool_dtype(y):
        raise DataValidationError("a linear mixed model needs a numeric response", source=DATA_SOURCE,
                                  column=response, expected="numbers",
                                  found=f"dtype {y.dtype}, values {_some(y)}")
    if y.nunique() < 2:
        raise DataValidationError("the response is constant, so there is nothing to model",
                                  source=DATA_SOURCE, column=response,
                                  expected="at least two distinct values",
                                  found=f"every one of {len(y)} rows is {y.iloc[0]!r}")


def _require_two_levels(values: pd.Series, column: str, levels: list, what: str, formula: str) -> None:
    if len(levels) < 2:
        raise DataValidationError(
            f"{what} {column!r} in {formula!r} has a single level, so its effect cannot be estimated",
            source=DATA_SOURCE, column=column, expected="at least two levels",
            found=f"only {levels!r} in {len(values)} rows (after dropping missing values)")


def _some(values: pd.Series, k: int = 5) -> str:
    uniq = pd.unique(values).tolist()  # Python scalars: repr shows 2, not np.int64(2)
    shown = ", ".join(repr(v) for v in uniq[:k])
    return f"{shown}{', ...' if len(uniq) > k else ''} ({len(uniq)} distinct)"


# --------------------------------------------------------------------------
# explicit simplification

def near_zero_components(result: FitResult, rel_tol: float = 1e-4) -> list[str]:
    """Random terms whose SD is (near) zero relative to the residual SD (or to
    1 for a GLMM), listed as "group: term". A list to read, not a decision."""
    rv = result.ranef_var
    resid = rv.loc[rv["group"] == "Residual", "sd"]
    scale = float(resid.iloc[0]) if len(resid) else 1.0
    small = rv[(rv["group"] != "Residual") & (rv["sd"] < rel_tol * scale)]
    return [f"{g}: {t}" for g, t in zip(small["group"], small["term"])]


def refit_simpler(formula: str, data: pd.DataFrame, drop: list[str], *,
                  family: str = "gaussian", backend: str = "auto",
                  contrasts: dict | None = None) -> FitResult:
    """Refit `formula` without the random terms in `drop`, and say so.

    `drop` names random terms as written in the formula, e.g.
    ``["1 + close | frame"]`` or ``["(1|item)"]``. The returned result records
    ``fit_stats["refit_from"]`` (the original formula) and
    ``fit_stats["dropped_random_terms"]``, and its first warning states the
    simplification, so a report cannot show the simpler model as if it were
    the one asked for. Nothing is dropped unless the caller names it.
    """
    if not drop:
        raise GbstatsError("refit_simpler: name the random term(s) to drop, e.g. drop=['1 + x | g']")
    simpler = parse_formula(formula).without_random(list(drop))
    if not simpler.random:
        raise GbstatsError(f"refit_simpler: dropping {list(drop)} from {formula!r} leaves no random "
                           "term; fit a fixed-effects model instead")
    if family == "gaussian":
        result = fit_lmm(simpler.text, data, backend=backend, contrasts=contrasts)
    else:
        result = fit_glmm(simpler.text, data, family=family, backend=backend, contrasts=contrasts)
    result = replace(result, fit_stats={**result.fit_stats, "refit_from": formula,
                                        "dropped_random_terms": list(drop)})
    result.warnings.insert(0, f"explicit refit: {formula!r} simplified to {simpler.text!r} "
                              f"by dropping random term(s) {list(drop)} at the caller's request")
    return result


# --------------------------------------------------------------------------
# what a table of this fit must say

def fit_notes(result: FitResult) -> list[str]:
    """Sentences for a table note: the factor coding and how the intervals
    and tests were computed, so a reader knows what a main effect means."""
    from gbstats.mixed.contrasts import codings_from_records

    notes = [describe_codings(codings_from_records(result.fit_stats.get("contrasts", {})))]
    method = result.fit_stats.get("ci_method")
    if method:
        notes.append(f"Intervals and tests: {method}.")
    return notes

"""Bayesian mixed models through bambi / PyMC, returned as a `FitResult`.

`fit_bayes` takes the same lme4-syntax formula as `fit_lmm`/`fit_glmm` and
returns the same result shape, so a Bayesian and an lme4 fit of one formula
can be stacked and compared row by row:

    coefs      posterior mean (estimate), posterior SD (se), 95% equal-tailed
               interval (ci_low, ci_high); stat, df, p_value are NaN
    ranef_var  posterior mean of each group-level SD squared (variance) and of
               the SD itself (sd); plus the residual for gaussian models
    fit_stats  nobs, n_draws, n_chains, sampler, mass_matrix, max_rhat and
               min_ess_bulk (every parameter), rhat_max, ess_bulk_min,
               ess_tail_min, divergences and converged (the reported
               parameters), loo/elpd (if asked), the priors actually used
    warnings   R-hat > 1.01, bulk or tail ESS < 400, divergences, dropped NaN rows,
               LOO Pareto-k problems
    idata      the ArviZ InferenceData

The steps are small functions over DataFrames: parse the formula and check the
data with the same code as `fit_lmm` (`gbstats.mixed.formula`, `gbstats.mixed.lmm`), so
bad input gets the same error on every backend; drop (and count) incomplete
rows; give factors R's level order; build the bambi model and check that its
fixed-effect columns are R's; sample; tidy the posterior with ArviZ. PyMC,
bambi and ArviZ are imported inside the functions that need them, so
`import gbstats` stays cheap.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import threading
import warnings as py_warnings
from collections.abc import Mapping
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gbstats.errors import GbstatsError, MissingDependencyError, UnknownNameError
from gbstats.exclusions import ExclusionLog
from gbstats.mixed.design import between_factor_terms, with_design_check
from gbstats.mixed.formula import ParsedFormula, bambi_to_r_name, fixed_effect_names, parse_formula
from gbstats.mixed.results import (COEF_COLUMNS, RANEF_COLUMNS, FitHandle, FitResult,
                                   records_seconds)

# Families a user can name, and the bambi family each one becomes. lme4's
# `binomial` on a 0/1 response is bambi's `bernoulli`.
FAMILIES = {"gaussian": "gaussian", "bernoulli": "bernoulli", "binomial": "bernoulli"}

SAMPLERS = ("pymc", "nutpie")
# nutpie against PyMC's own NUTS (benchmarks/bayes_samplers.py, results in
# benchmarks/results/bayes_samplers.json), end to end with compilation, minimum
# over interleaved repetitions, on a shared and heavily loaded 2-core machine:
# a 7,500-trial crossed GLMM took 2.0x less time with nutpie (2.4x in an
# earlier run), the 160-row LMM 1.06x (2.75x earlier); posterior means agreed
# to 0.01 and bulk ESS was similar. Hence nutpie by default.
DEFAULT_SAMPLER = "nutpie"

# Diagnostic thresholds (Vehtari et al. 2021, "Rank-normalization, folding,
# and localization"): R-hat above 1.01, or a bulk or tail ESS under 400, means
# the posterior summaries (means, SDs, 95% interval ends) should not be
# trusted yet; so does any divergent transition.
RHAT_MAX = 1.01
ESS_BULK_MIN = 400
ESS_TAIL_MIN = 400

# nutpie's mass-matrix adaptation. "low_rank" (Seyboldt's low-rank modified
# mass matrix, nutpie.sample(low_rank_modified_mass_matrix=True)) learns the
# correlations between parameters that a diagonal mass matrix cannot (the
# fixed effects of a crossed GLMM and its intercept are strongly correlated);
# benchmarks/bayes_samplers.py --mass-matrix measures it against "diag"
# (benchmarks/results/bayes_samplers.json, "mass_matrix"): on the 7,500-trial
# QA GLMM at 2 chains x 1,000 draws, the reported parameters' bulk ESS was 488
# against 181 (tail 766 against 410), R-hat 1.002 against 1.009; per second,
# compilation included, on the shared 2-core machine, 1.5x the bulk ESS and
# 1.05x the tail ESS (not the 2x of an earlier hand run). With "diag" that
# twin misses the bulk-ESS figure at 1,000 draws and needs a refit.
MASS_MATRICES = ("diag", "low_rank")
DEFAULT_MASS_MATRIX = "low_rank"

# Default priors: rstanarm's weakly-informative, data-scaled defaults
# (Gabry & Goodrich, "Prior distributions for rstanarm models", rstanarm
# vignette, defaults since rstanarm 2.21 (July 2020); Gelman, Hill & Vehtari,
# "Regression and Other Stories", 2020, sec. 9.5 and 13.5):
#   coefficient of design column x: Normal(0, 2.5 * sd(y) / sd(x)) for a gaussian
#     response, Normal(0, 2.5 / sd(x)) on the log-odds scale;
#   intercept (predictors centred): Normal(mean(y), 2.5 * sd(y)) gaussian,
#     Normal(0, 2.5) log-odds.
# sd() is R's sample SD (n - 1); a factor level's column is its 0/1 indicator,
# so a balanced two-level factor gets SD 2.5 / 0.5 = 5 on the log-odds scale.
# bambi 0.17's own bernoulli defaults were Normal(0, 1) on every factor
# column, which shrank a simulated -4.5 log-odds effect to -3.2 (issue 25).
PRIOR_SCALE = 2.5
PRIOR_SOURCE = ("rstanarm's default weakly-informative priors, autoscaled to the data "
                "(Gabry & Goodrich, rstanarm 'priors' vignette, 2020): coefficients "
                "Normal(0, 2.5 sd(y)/sd(x)) (gaussian) or Normal(0, 2.5/sd(x)) (log-odds); "
                "intercept with centred predictors Normal(mean(y), 2.5 sd(y)) or Normal(0, 2.5); "
                "group-level SDs HalfNormal with bambi 0.17's data-scaled SD; residual SD "
                "bambi's HalfStudentT(4, sd(y))")


# --------------------------------------------------------------------------
# Formula and data checks: shared with fit_lmm/fit_glmm
# --------------------------------------------------------------------------

def prepare_bayes_data(formula: str, data: pd.DataFrame, family: str,
                       log: ExclusionLog, contrasts: Mapping | None = None
                       ) -> tuple[pd.DataFrame, ParsedFormula, list[str]]:
    """Check the data exactly as the lme4/statsmodels backends do, then code
    factors for bambi. Returns (frame, parsed formula, notes).

    The checks (missing column, constant response, one-level factor or
    grouping factor, non-0/1 binomial response, missing values dropped and
    counted) are `gbstats.mixed.lmm.prepare_data`'s, so every backend refuses the
    same input with the same message.

    formulae sorts the levels of an *unordered* categorical but honours the
    order of an *ordered* one (still with treatment contrasts), so each factor
    becomes an ordered categorical with R's level order (`factor_levels`:
    sorted, or a pandas Categorical's own order); the first level is then the
    reference, as in R.

    A factor with another coding (``contrasts``, see `gbstats.mixed.contrasts`)
    becomes numeric columns named as R names its terms (``close1``, ...), and
    the returned formula uses them (`bambi_coded_formula`).
    """
    frame, parsed, notes, _prepared = _prepare(formula, data, family, log, contrasts)
    return frame, parsed, notes


def _prepare(formula: str, data: pd.DataFrame, family: str, log: ExclusionLog,
             contrasts: Mapping | None):
    from gbstats.mixed.lmm import prepare_data

    parsed = parse_formula(formula)
    prepared = prepare_data(parsed, data, "binomial" if family == "bernoulli" else family, contrasts)
    if prepared.n_dropped_na:
        log.record("missing value in a formula column", prepared.n_dropped_na, stage="fit_bayes")
    frame = prepared.frame.copy()
    for var, levels in prepared.levels.items():
        frame[var] = pd.Categorical(frame[var], categories=levels, ordered=True)
    frame = frame.reset_index(drop=True)
    coded = {v: c for v, c in prepared.codings.items() if c.kind != "treatment"}
    if coded:
        frame, parsed = bambi_coded_formula(parsed, frame, coded)
    return frame, parsed, list(prepared.warnings), prepared


def bambi_coded_formula(parsed: ParsedFormula, frame: pd.DataFrame, codings: Mapping
                        ) -> tuple[pd.DataFrame, ParsedFormula]:
    """Replace each factor in `codings` by numeric contrast columns named as
    R names the terms (``close`` -> ``close1``, ``close2`` under contr.sum),
    and rewrite the formula to use them. formulae has no contr.sum or user
    matrices for an ordered factor, and a product of contrast columns is
    exactly R's interaction column, so bambi then estimates R's coefficients.

    R codes a factor by indicators of every level in a term whose margin is
    absent (``a:b`` without ``a``); with a non-treatment coding that case is
    refused here rather than coded differently from R."""
    from gbstats.mixed.formula import contrast_coded

    present = set(parsed.fixed_terms) | {()}
    for var in codings:
        unmarginal = [":".join(t) for t in parsed.fixed_terms
                      if var in t and not contrast_coded(t, var, present)]
        if unmarginal or not parsed.intercept:
            raise GbstatsError(
                f"fit_bayes: contrasts for {var!r} in {parsed.text!r} need every term holding it to "
                f"have its margins in the model, and an intercept (R would code "
                f"{unmarginal or 'the first factor'} by indicators instead); write a * b, or use "
                "treatment coding")
    frame = frame.copy()
    columns: dict[str, list[str]] = {}
    for var, coding in codings.items():
        columns[var] = []
        for j, name in enumerate(coding.names):
            column = f"{var}{name}"
            if column in frame.columns:
                raise GbstatsError(f"fit_bayes: the contrast column {column!r} for {var!r} would "
                                   "overwrite a data column of that name; rename the column")
            frame[column] = frame[var].astype(str).map(coding.weights(j)).astype(float)
            columns[var].append(column)

    def expand(term) -> list[str]:
        per_var = [columns.get(v, [v]) for v in term]
        # R varies the first variable fastest
        return [":".join(reversed(combo)) for combo in product(*reversed(per_var))]

    fixed = [name for t in parsed.fixed_terms for name in expand(t)]
    random = []
    for r in parsed.random:
        lhs = [name for t in r.terms for name in expand(t)]
        random.append(f"({' + '.join(['1' if r.intercept else '0', *lhs])} | {r.group})")
    text = f"{parsed.response} ~ {' + '.join(fixed + random) if fixed or random else '1'}"
    return frame, parse_formula(text)


def independent_effects_note(parsed: ParsedFormula) -> list[str]:
    """bambi has no correlation between the effects of one group term."""
    multi = [f"({r.text})" for r in parsed.random if int(r.intercept) + len(r.terms) > 1]
    if not multi:
        return []
    return [f"group-level effects within {', '.join(multi)} are modelled as independent "
            "(bambi has no correlation parameter): the lme4 counterpart is (1|g) + (0 + x|g), "
            "not (1 + x|g)"]


# --------------------------------------------------------------------------
# Priors
# --------------------------------------------------------------------------

def _is_prior_spec(value) -> bool:
    return (isinstance(value, Mapping) and "dist" in value) or (
        isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str)
        and isinstance(value[1], Mapping))


def to_bambi_prior(spec):
    """A prior given as bmb.Prior, ("Normal", {"mu": 0, "sigma": 1}) or
    {"dist": "Normal", "mu": 0, "sigma": 1}; arguments may be priors themselves."""
    import bambi as bmb

    if isinstance(spec, bmb.Prior):
        return spec
    if not _is_prior_spec(spec):
        raise GbstatsError(f"cannot read prior {spec!r}; expected a bambi.Prior, "
                           "('Normal', {'mu': 0, 'sigma': 1}) or "
                           "{'dist': 'Normal', 'mu': 0, 'sigma': 1}")
    if isinstance(spec, tuple):
        dist, args = spec
    else:
        dist, args = spec["dist"], {k: v for k, v in spec.items() if k != "dist"}
    return bmb.Prior(dist, **{k: to_bambi_prior(v) if _is_prior_spec(v) or isinstance(v, bmb.Prior)
                              else v for k, v in args.items()})


def prior_keys(model) -> list[str]:
    """The names a prior may be set under, as bambi knows them."""
    parent = model.components[model.family.likelihood.parent]
    keys = list(parent.common_terms) + list(parent.group_specific_terms)
    if parent.intercept_term is not None:
        keys.append("Intercept")
    keys += [name for name in model.family.likelihood.params if name != model.family.likelihood.parent]
    return keys + ["common", "group_specific"]


def bambi_priors(priors: Mapping[str, Any] | None, model) -> dict:
    """User priors keyed by formula term ("x", "close:gendered", "1|frame",
    "sigma", "(Intercept)"/"Intercept", or "common"/"group_specific")."""
    if not priors:
        return {}
    known = prior_keys(model)
    out = {}
    for key, spec in priors.items():
        # "(1 | frame)" as written in the formula is bambi's "1|frame"
        name = re.sub(r"\s+", "", key)
        name = name[1:-1] if name.startswith("(") and name.endswith(")") and "|" in name else name
        name = "Intercept" if name in ("(Intercept)", "1") else name
        if name not in known:
            raise UnknownNameError("prior term", key, known + ["(Intercept)"])
        out[name] = to_bambi_prior(spec)
    return out


def priors_used(model, scales: Mapping[str, float] | None = None) -> dict[str, str]:
    """Every prior of a built model as text, for the record. With `scales`
    (`predictor_scales`: the model was built on standardized predictors), the
    prior of a term holding a standardized predictor is given per unit of the
    original predictor, as the coefficients are reported."""
    parent = model.components[model.family.likelihood.parent]
    out = {}
    if parent.intercept_term is not None:
        out["(Intercept)"] = str(parent.intercept_term.prior)
    for name, term in {**parent.common_terms, **parent.group_specific_terms}.items():
        factor = term_scale(name, scales or {})
        out[name] = str(term.prior if factor == 1.0 else widened_prior(term.prior, 1.0 / factor))
    for name, comp in model.components.items():
        if name != model.family.likelihood.parent and hasattr(comp, "prior"):
            out[name] = str(comp.prior)
    return {k: re.sub(r"\s+", " ", v) for k, v in out.items()}


def default_priors(model, frame: pd.DataFrame, response: str, family: str,
                   widen: float = 1.0) -> dict:
    """The default priors (PRIOR_SOURCE) for a built bambi model, as
    {bambi term name: bambi.Prior}, every scale multiplied by `widen`
    (2.0 for a prior-sensitivity refit).

    Coefficient scales come from the SDs of bambi's own design columns (so a
    factor's levels and an interaction's products get the SD of the column the
    coefficient multiplies). Group-level terms keep bambi's data-scaled
    HalfNormal SD on the group SD, widened by `widen`; the residual SD keeps
    bambi's HalfStudentT(4, sd(y)).
    """
    import bambi as bmb

    if not widen > 0:
        raise GbstatsError(f"prior widening factor must be positive, found {widen!r}")
    parent = model.components[model.family.likelihood.parent]
    y = frame[response].to_numpy(dtype=float)
    gaussian = family == "gaussian"
    y_scale = float(np.std(y, ddof=1)) if gaussian else 1.0
    out = {}
    design = parent.design.common
    for name, term in parent.common_terms.items():
        columns = np.asarray(design[name], dtype=float).reshape(len(frame), -1)
        sd_x = columns.std(axis=0, ddof=1)
        if not (sd_x > 0).all():
            continue  # an all-constant column: require_full_rank refuses it
        sigma = widen * PRIOR_SCALE * y_scale / sd_x
        out[name] = bmb.Prior("Normal", mu=0.0, sigma=sigma if sigma.size > 1 else float(sigma[0]))
    if parent.intercept_term is not None:
        out["Intercept"] = bmb.Prior("Normal", mu=float(y.mean()) if gaussian else 0.0,
                                     sigma=widen * PRIOR_SCALE * y_scale)
    if widen != 1.0:
        for name, term in parent.group_specific_terms.items():
            out[name] = widened_prior(term.prior, widen)
    return out


def widened_prior(prior, widen: float):
    """A copy of a bambi prior whose scale arguments (sigma, and a nested
    hyperprior's sigma) are multiplied by `widen`."""
    import bambi as bmb

    args = {}
    for key, value in prior.args.items():
        if isinstance(value, bmb.Prior):
            args[key] = widened_prior(value, widen)
        elif key == "sigma":
            args[key] = np.asarray(value, dtype=float) * widen
        else:
            args[key] = value
    return bmb.Prior(prior.name, **args)


# --------------------------------------------------------------------------
# Numeric predictors on a common scale while sampling
# --------------------------------------------------------------------------
# Why (issue 34): role_nouns' twin, neutral ~ name_gender * attitude_score +
# (1|participant) + (1|role_noun_set), never converged (R-hat 2.23, bulk ESS 3
# after 33 minutes). One chain was fine; the other started with the
# attitude_score coefficient at 0.77 and logp -51,900 against about -3,150 at
# the posterior, its step size fell to 5e-5 and every draw ran into the
# maximum tree depth (1,023 gradient evaluations against 15 for the good
# chain), so it crawled for the whole warm-up and never reached the posterior.
# The cause is the predictor's scale together with how chains start: nutpie
# (through PyMC) starts every parameter at its prior's centre plus a U(-1, 1)
# jitter on the sampler's scale, with a unit mass matrix. attitude_score runs
# 0-70 (SD 15.8), so its coefficient's posterior SD is 0.005: a jitter of 0.77
# is 150 posterior SDs away and shifts the linear predictor by up to 54
# log-odds. Divided by its SD, the predictor's coefficient has a posterior SD
# of 0.07 and the same jitter moves the linear predictor by a few units at
# most; the twin then converged at its first attempt (R-hat 1.004, bulk ESS
# 529 at 1,000 draws; benchmarks/results/bayes_samplers.json, "role_nouns").
# Dividing a predictor by a constant is an exact reparametrisation: the
# autoscaled priors scale with it (Normal(0, 2.5/sd(x)), bambi's group SDs
# likewise), so the posterior, once multiplied back, is the same; R-hat and
# ESS of a parameter do not change under a linear map. Predictors are not
# centred here (bambi centres the design columns itself), so every
# coefficient keeps its meaning.

def predictor_scales(formula: str, prepared, priors: Mapping[str, Any] | None = None
                     ) -> dict[str, float]:
    """{numeric predictor: its sample SD} for the predictors sampled standardized.

    Every numeric predictor of the fixed or group-level terms, except those
    of a term that carries a user-given prior (that prior is in the
    predictor's own units and is used as given) and all of them when a prior
    is given for "common" or "group_specific". Factors, the response and
    grouping factors are never scaled."""
    parsed = parse_formula(formula)
    frame = prepared.frame
    numeric = [v for v in parsed.predictors if v not in prepared.levels and v in frame
               and pd.api.types.is_numeric_dtype(frame[v])
               and not pd.api.types.is_bool_dtype(frame[v])]
    keys = [re.sub(r"[\s()]", "", k) for k in (priors or {})]
    if {"common", "group_specific"} & set(keys):
        return {}
    with_prior = {v for k in keys for v in k.split("|")[0].split(":")}
    scales = {}
    for var in numeric:
        sd = float(np.std(frame[var].to_numpy(dtype=float), ddof=1))
        if var not in with_prior and np.isfinite(sd) and sd > 0:
            scales[var] = sd
    return scales


def term_scale(term_name: str, scales: Mapping[str, float]) -> float:
    """What a term's coefficient is multiplied by when its standardized
    predictors are used: the product of their SDs ("x:a" -> sd(x); a group
    term "x|g" -> sd(x); "1|g" -> 1)."""
    expr = term_name.split("|", 1)[0]
    return float(np.prod([scales[v] for v in expr.split(":") if v in scales]))


def standardized_frame(frame: pd.DataFrame, scales: Mapping[str, float]) -> pd.DataFrame:
    """The frame with every predictor in `scales` divided by its SD."""
    return frame.assign(**{var: frame[var] / sd for var, sd in scales.items()})


def rescale_posterior(idata, model, scales: Mapping[str, float], to: str = "original") -> None:
    """Convert, in place, the posterior of a model built on standardized
    predictors to the original units (`to="original"`: each coefficient, group
    effect and group SD of a term holding scaled predictors divided by
    `term_scale`; their log-scale copies shifted) or back (`to="sampled"`).
    The intercept is unchanged (bambi's centring adds mean(x) * beta, the same
    in both units), and so is the residual SD."""
    if to not in ("original", "sampled"):
        raise ValueError(f"rescale_posterior: to={to!r}, expected 'original' or 'sampled'")
    if not scales:
        return
    sign = -1.0 if to == "original" else 1.0
    post = idata.posterior
    parent = model.components[model.family.likelihood.parent]
    for name in [*parent.common_terms, *parent.group_specific_terms]:
        factor = term_scale(name, scales)
        if factor == 1.0:
            continue
        for var in (name, f"{name}_sigma"):
            if var in post:
                post[var] = post[var] * factor ** sign
        if f"{name}_sigma_log__" in post:
            post[f"{name}_sigma_log__"] = post[f"{name}_sigma_log__"] + sign * np.log(factor)


def add_log_likelihood(fit: FitResult) -> None:
    """Put the pointwise log-likelihood into `fit.idata` (for PSIS-LOO), once.

    The likelihood is evaluated by the model that was sampled, so a posterior
    reported in original units is taken back to the sampled units for it; the
    values are the same either way (the reparametrisation is exact)."""
    idata = fit.idata
    if "log_likelihood" in idata.groups():
        return
    model = fit.handle.native
    scales = (fit.handle.extra or {}).get("predictor_scales") or {}
    with group_effects_by_sparse_product(model):
        if not scales:
            model.compute_log_likelihood(idata)
            return
        sampled = idata.copy()
        rescale_posterior(sampled, model, scales, to="sampled")
        model.compute_log_likelihood(sampled)
    idata.add_groups({"log_likelihood": sampled.log_likelihood})


@contextlib.contextmanager
def group_effects_by_sparse_product(model):
    """Within the block, bambi computes the group-level part of the linear predictor on
    the fitted data (Z u, for every draw) as a SciPy sparse product.

    bambi 0.17 converts Z to a pydata-sparse array and contracts it with the draws through
    xarray's einsum: for pronoun_fidelity's twin test (2,880 rows, 2 x 1,200 draws) that
    took 6 s of PSIS-LOO's 9.4 s, where the product itself is ~10 million multiply-adds
    (each row of Z has one non-zero per group term). The draws are laid out exactly as
    bambi lays them out (its own code, below), and only the product differs, so the values
    are the same up to the order of a row's few additions; tests/stats/test_bayes_scaling.py
    compares the two. Anything else (new data, a multivariate response) is bambi's."""
    patched = []
    for component in getattr(model, "distributional_components", {}).values():
        original = getattr(component, "predict_group_specific", None)
        if original is None or not getattr(component, "group_specific_terms", None):
            continue
        component.predict_group_specific = _sparse_group_prediction(component, original)
        patched.append(component)
    try:
        yield
    finally:
        for component in patched:
            del component.predict_group_specific  # back to the class's method


def _sparse_group_prediction(component, original):
    def predict_group_specific(posterior, data, in_sample, to_stack_dims, design_matrix_dims,
                               sample_new_groups, random_seed):
        if not in_sample or len(to_stack_dims) != 2:
            return original(posterior, data, in_sample, to_stack_dims, design_matrix_dims,
                            sample_new_groups, random_seed)
        import scipy.sparse
        import xarray as xr
        from bambi.utils import get_aliased_name

        # the columns of u in the order of Z's columns, as bambi builds them
        # (bambi.model_components.DistributionalComponent.predict_group_specific)
        columns = []
        for term in component.group_specific_terms.values():
            if term.alias:
                expr_dim, factor_dim = term.alias + "__expr_dim", term.alias + "__factor_dim"
            else:
                expr, factor = term.name.split("|")
                expr_dim, factor_dim = expr + "__expr_dim", factor + "__factor_dim"
            draws = posterior[get_aliased_name(term)]
            columns.append(draws.to_numpy() if len(draws.coords) == 3
                           else draws.stack(column=(factor_dim, expr_dim)).to_numpy())
        u = np.concatenate(columns, axis=-1)  # (chain, draw, column)
        chains, n_draws, width = u.shape
        z = scipy.sparse.csr_matrix(component.design.group.design_matrix)
        values = np.asarray(z @ u.reshape(chains * n_draws, width).T)
        return xr.DataArray(values.reshape(z.shape[0], chains, n_draws),
                            dims=[design_matrix_dims[0], "chain", "draw"])
    return predict_group_specific


# --------------------------------------------------------------------------
# Naming: bambi/formulae labels -> R model.matrix names
# --------------------------------------------------------------------------

def r_term_name(bambi_label: str) -> str:
    """bambi "close[distant]:gendered[yes]" -> R "closedistant:genderedyes";
    "Intercept" -> "(Intercept)"; numeric terms are unchanged."""
    return bambi_to_r_name(bambi_label)


def fixed_effect_name_map(parsed: ParsedFormula, frame: pd.DataFrame, model) -> dict[str, str]:
    """bambi label of every fixed-effect column -> R's model.matrix name.

    The columns are matched by the set of their parts, because formulae names
    an interaction in the order written ("x:ap" for `x:a`) where R orders by
    first appearance in the formula ("ap:x" when `a` came first).

    Refuses (before minutes of sampling) when bambi's columns are not R's: a
    different coding, say of `a:b` without main effects, would make the
    Bayesian coefficients mean something other than lme4's under one name.
    """
    r_names = fixed_effect_names(parsed, frame)
    r_by_parts = {frozenset(name.split(":")): name for name in r_names}
    labels = [label for labels in common_term_labels(model).values() for label in labels]
    mapping = {label: r_by_parts.get(frozenset(r_term_name(label).split(":"))) for label in labels}
    if None in mapping.values() or sorted(mapping.values()) != sorted(r_names):
        raise GbstatsError(
            f"bambi codes the fixed effects of {parsed.text!r} differently from R: "
            f"bambi's columns are {[r_term_name(label) for label in labels]}, R's model.matrix "
            f"gives {r_names}; write the formula with its main effects (e.g. a * b rather "
            "than a:b) or use fit_lmm/fit_glmm")
    # in R's column order, which coef_table keeps
    return dict(sorted(mapping.items(), key=lambda item: r_names.index(item[1])))


def require_full_rank(parsed: ParsedFormula, model, name_map: Mapping[str, str]) -> None:
    """lme4 drops aliased fixed-effect columns with a message; here that would
    leave a coefficient the data say nothing about (bambi even scales its
    prior by 1/sd = infinity for an all-zero column), so it is an error."""
    design = model.components[model.family.likelihood.parent].design.common
    if design is None:
        return
    matrix = np.asarray(design.design_matrix, dtype=float)
    rank = np.linalg.matrix_rank(matrix)
    if rank == matrix.shape[1]:
        return
    labels = [label for labels in common_term_labels(model).values() for label in labels]
    empty = [name_map.get(label, label) for label, col in zip(labels, matrix.T) if not col.any()]
    raise GbstatsError(
        f"the fixed effects of {parsed.text!r} are not all estimable from these data: "
        f"the design has {matrix.shape[1]} columns but rank {rank}"
        + (f"; all-zero columns (empty cells): {empty}" if empty else
           "; some columns are linear combinations of others")
        + ". Drop or merge the aliased terms.")


def common_term_labels(model) -> dict[str, list[str]]:
    """Posterior variable -> bambi label of each of its columns, in order."""
    parent_name = model.family.likelihood.parent
    design = model.components[parent_name].design.common
    if design is None:
        return {}
    return {name: list(term.labels) for name, term in design.terms.items()}


def group_term_labels(model) -> dict[str, tuple[str, list[str]]]:
    """bambi group term "c|g" -> (grouping factor "g", labels of its effects)."""
    parent_name = model.family.likelihood.parent
    design = model.components[parent_name].design.group
    out = {}
    if design is None:
        return out
    for name, term in design.terms.items():
        expr, factor = name.split("|", 1)
        if expr == "1":
            labels = ["Intercept"]
        else:
            # labels read "c[a]|g[g0]", one per effect x group: keep the effect part
            labels = list(dict.fromkeys(lab.split("|", 1)[0] for lab in term.labels))
        out[name] = (factor, labels)
    return out


# --------------------------------------------------------------------------
# Tidy summaries from the posterior
# --------------------------------------------------------------------------

def variable_draws(posterior, var: str) -> np.ndarray:
    """(chain*draw, k) array of a posterior variable."""
    arr = posterior[var].values
    return arr.reshape(arr.shape[0] * arr.shape[1], -1)


def coef_table(idata, model, name_map: Mapping[str, str]) -> pd.DataFrame:
    """One row per fixed-effect column, named by `name_map` and in its order (R's)."""
    post = idata.posterior
    rows = []
    for var, labels in common_term_labels(model).items():
        draws = variable_draws(post, var)
        if draws.shape[1] != len(labels):
            raise GbstatsError(f"internal: posterior {var!r} has {draws.shape[1]} columns "
                               f"but bambi names {len(labels)}: {labels}")
        for j, label in enumerate(labels):
            d = draws[:, j]
            lo, hi = np.quantile(d, [0.025, 0.975])
            rows.append({"term": name_map[label], "estimate": d.mean(), "se": d.std(ddof=1),
                         "ci_low": lo, "ci_high": hi,
                         "stat": np.nan, "df": np.nan, "p_value": np.nan})
    order = {name: i for i, name in enumerate(dict.fromkeys(name_map.values()))}
    table = pd.DataFrame(rows, columns=COEF_COLUMNS)
    return table.sort_values("term", key=lambda t: t.map(order), kind="stable").reset_index(drop=True)


def ranef_table(idata, model, family: str) -> pd.DataFrame:
    post = idata.posterior
    rows = []
    for name, (factor, labels) in group_term_labels(model).items():
        draws = variable_draws(post, f"{name}_sigma")
        for j, label in enumerate(labels):
            sd = draws[:, j]
            rows.append({"group": factor, "term": r_term_name(label),
                         "variance": float(np.mean(sd ** 2)), "sd": float(np.mean(sd))})
    if family == "gaussian" and "sigma" in post:
        sd = variable_draws(post, "sigma")[:, 0]
        # lme4's VarCorr names the residual row "Residual" with no term
        rows.append({"group": "Residual", "term": "", "variance": float(np.mean(sd ** 2)),
                     "sd": float(np.mean(sd))})
    return pd.DataFrame(rows, columns=RANEF_COLUMNS)


def reported_variables(idata, model) -> list[str]:
    """The posterior variables a report shows: every fixed effect (the
    intercept included), every group-level SD, and the residual SD."""
    parent = model.components[model.family.likelihood.parent]
    names = list(common_term_labels(model))
    if parent.intercept_term is not None:
        names.append("Intercept")
    names += [f"{name}_sigma" for name in group_term_labels(model)]
    names += [name for name in model.family.likelihood.params
              if name != model.family.likelihood.parent]
    return [v for v in dict.fromkeys(names) if v in idata.posterior.data_vars]


def diagnostics(idata, model=None) -> dict[str, Any]:
    """Convergence figures of a posterior.

    Over every parameter (fixed effects, group SDs, every group-level effect,
    sigma): max_rhat, min_ess_bulk. Over the *reported* parameters
    (`reported_variables`; all parameters when `model` is None): rhat_max,
    ess_bulk_min, ess_tail_min; and the number of divergent transitions
    (n_divergences, divergences). `converged` is True when the reported
    figures meet RHAT_MAX, ESS_BULK_MIN, ESS_TAIL_MIN with no divergence.

    R-hat and ESS are ArviZ's definitions, computed for all parameters at once
    (`gbstats.mixed.mcmc_diagnostics`; ArviZ's per-parameter loop took ~25 s for the
    1,500 item effects of a 7,500-trial GLMM)."""
    from gbstats.mixed.mcmc_diagnostics import extremes_summary

    # nutpie also stores unconstrained copies ("1|frame_sigma_log__"); they
    # duplicate the constrained parameters, so only those are checked
    names = [v for v in idata.posterior.data_vars if not v.endswith("__")]
    every = extremes_summary({v: idata.posterior[v].values for v in names})
    shown = (extremes_summary({v: idata.posterior[v].values
                               for v in reported_variables(idata, model)})
             if model is not None else every)
    diverging = idata.sample_stats["diverging"].values if "sample_stats" in idata.groups() else None
    n_div = int(diverging.sum()) if diverging is not None else 0
    out = {"max_rhat": every["rhat_max"], "min_ess_bulk": every["ess_bulk_min"],
           "n_divergences": n_div, **shown, "divergences": n_div}
    out["converged"] = bool(out["rhat_max"] <= RHAT_MAX and out["ess_bulk_min"] >= ESS_BULK_MIN
                            and out["ess_tail_min"] >= ESS_TAIL_MIN and n_div == 0)
    return out


def diagnostic_warnings(diag: Mapping[str, Any], n_draws_total: int) -> list[str]:
    """Warnings for the reported parameters' figures (`diagnostics`)."""
    out = []
    if not diag["rhat_max"] <= RHAT_MAX:
        out.append(f"R-hat up to {diag['rhat_max']:.3f} (> {RHAT_MAX}): the chains disagree; "
                   "run more tune/draws before trusting the summaries")
    if not diag["ess_bulk_min"] >= ESS_BULK_MIN:
        out.append(f"bulk ESS down to {diag['ess_bulk_min']:.0f} (< {ESS_BULK_MIN}) from "
                   f"{n_draws_total} draws: run more draws")
    if not diag["ess_tail_min"] >= ESS_TAIL_MIN:
        out.append(f"tail ESS down to {diag['ess_tail_min']:.0f} (< {ESS_TAIL_MIN}) from "
                   f"{n_draws_total} draws: the 95% interval ends are unreliable; run more draws")
    if diag["n_divergences"]:
        out.append(f"{diag['n_divergences']} divergent transition(s): the posterior may be "
                   "biased; raise target_accept or reparameterize")
    return out


def convergence_note(diag: Mapping[str, Any]) -> str:
    """One sentence for a table note: the figures, and whether they pass."""
    figures = (f"R-hat max {diag['rhat_max']:.3f}, bulk ESS min {diag['ess_bulk_min']:.0f}, "
               f"tail ESS min {diag['ess_tail_min']:.0f}, {diag['divergences']} divergence(s)")
    if diag.get("converged"):
        return f"converged ({figures})"
    return (f"NOT CONVERGED ({figures}; needs R-hat <= {RHAT_MAX}, bulk and tail ESS >= "
            f"{ESS_BULK_MIN}, no divergences): do not read these estimates as reliable")


def loo_stats(fit: FitResult) -> tuple[dict[str, float], list[str]]:
    """PSIS-LOO via ArviZ; Pareto-k warnings are returned, not swallowed."""
    import arviz as az

    add_log_likelihood(fit)
    with py_warnings.catch_warnings(record=True) as caught:
        py_warnings.simplefilter("always")
        loo = az.loo(fit.idata)
    notes = [f"LOO: {w.message}" for w in caught if issubclass(w.category, UserWarning)]
    stats = {"elpd_loo": float(loo.elpd_loo), "elpd_loo_se": float(loo.se),
             "p_loo": float(loo.p_loo), "looic": float(-2 * loo.elpd_loo)}
    return stats, notes


# --------------------------------------------------------------------------
# The fit
# --------------------------------------------------------------------------

def _require_engines() -> None:
    from gbstats.blas import configure_pytensor

    configure_pytensor()  # before PyTensor's first import (gbstats.blas says why)
    try:
        import arviz  # noqa: F401
        import bambi  # noqa: F401
        import pymc  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            f"fit_bayes needs bambi, PyMC and ArviZ ({exc.name} is missing); "
            "install them with `pip install gbstats[bayes]`") from exc
    keep_numba_sources_private()
    plain_numba_slice_error()


NUMBA_SOURCES_PREFIX = "gbstats-numba-sources-"
_numba_sources: Path | None = None


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def keep_numba_sources_private() -> Path | None:
    """Send the source files PyTensor writes for numba into a folder of this process's own,
    removed when the process ends.

    PyTensor compiles each numba function from generated source that it first writes to a
    `NamedTemporaryFile(delete=False)` in TMPDIR and never removes: about 11 files per
    Bayesian fit, left behind for good (issue 44, case 15). Here both of its writers
    (pytensor.link.utils and pytensor.link.numba.cache) get that class with `dir=` this
    folder; the folder goes at exit (normal end, an error, Ctrl-C, SIGTERM, which the
    runner turns into an exit), and a folder whose process was killed (SIGKILL) is removed
    by the next process that fits. Returns the folder (None where PyTensor is missing)."""
    global _numba_sources
    if _numba_sources is not None:
        return _numba_sources
    import atexit
    import functools
    import importlib
    import shutil
    import tempfile

    base = Path(tempfile.gettempdir())
    for old in base.glob(f"{NUMBA_SOURCES_PREFIX}*"):
        pid = old.name[len(NUMBA_SOURCES_PREFIX):].split("-")[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _process_alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    try:
        # <prefix><pid>-<random>: the pid tells the clean-up above whose folder it is
        folder = Path(tempfile.mkdtemp(prefix=f"{NUMBA_SOURCES_PREFIX}{os.getpid()}-",
                                       dir=base))
    except OSError:
        return None  # an unwritable TMPDIR: PyTensor will fail on it with its own message
    patched = functools.partial(tempfile.NamedTemporaryFile, dir=str(folder))
    for name in ("pytensor.link.utils", "pytensor.link.numba.cache"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "NamedTemporaryFile"):
            module.NamedTemporaryFile = patched
    atexit.register(shutil.rmtree, folder, True)
    _numba_sources = folder
    return folder


_slice_error_plain = False


def plain_numba_slice_error() -> bool:
    """Compile numba's slice-assignment shape check with a fixed message, as numba does for
    its other targets, instead of its CPU message built with f-strings from both shapes.

    nutpie's compiled logp copies the gradient with `out[...] = grad`. numba lowers every
    slice assignment with a branch that raises on a shape mismatch, and on the CPU that
    branch formats both shapes into the message: numba compiles its string formatting
    (str of integers, join, f-strings) for it, once per process and never from its disk
    cache, since nutpie's function cannot be cached. Measured on the 2-core machine
    (issue 41): 3.8 s for a lone `a[...] = b` in a fresh process against 0.3 s with this
    message; nutpie's compilation of a 335-row LMM of singular_they's model twin's shape
    (surprisal ~ close + gendered + (1|frame)), in a fresh process with PyTensor's numba
    cache warm, went from 10.6 s to 7.0 s (sampling it: 0.4 s). The branch is never taken
    there (nutpie checks the dimensions before the copy), and the compiled code's arithmetic is
    the same: the draws are the same bits (tests/stats/test_bayes.py). Only where some
    other numba code in the process assigns a slice of the wrong shape does its
    ValueError now read "cannot assign slice from input of different size" without the
    two shapes. Returns whether numba's check was replaced (False where numba is missing
    or no longer has it)."""
    global _slice_error_plain
    if _slice_error_plain:
        return True
    try:
        import numba.np.arrayobj as arrayobj
        from numba.extending import overload
    except ImportError:
        return False
    if not callable(getattr(arrayobj, "raise_with_shape_context", None)):
        return False  # a numba that checks shapes otherwise: nothing to replace

    def raise_with_shape_context(src_shapes, index_shape):
        """A stub numba compiles through the overload below."""

    @overload(raise_with_shape_context)
    def _plain_message(src_shapes, index_shape):
        def impl(src_shapes, index_shape):
            raise ValueError("cannot assign slice from input of different size")
        return impl

    # fancy_setslice reads the module's global when it lowers a slice assignment
    arrayobj.raise_with_shape_context = raise_with_shape_context
    _slice_error_plain = True
    return True


# A twin's refits (`gbstats.mixed.fitting.fit_bayes_twin`) rebuild the very model the attempt
# before them sampled: the same formula, data, family and priors; only the draws, tuning
# steps, seed and target acceptance differ, and those are nutpie.sample's arguments, not
# the compiled model's. PyMC compiles the model afresh on every pm.sample (numba: about
# 12 s per attempt on a quiet 2-core machine, most of an attempt at 100 draws, and several
# times that under load, issue 41), so within `reuse_compiled_models()` nutpie compiles a
# model once per thread and a later fit of the same model samples that compiled model.
# "The same model" is checked, not assumed: PyMC's own description of the model (every
# variable with its distribution and parameters), its dimensions and coordinates, the
# bytes of its observed and constant data, and the compile options. The memo lives only
# for one twin's attempts, whose inputs are the same by construction: the check is a
# safety net, not the reason the reuse is right.
_compile_memo = threading.local()
_compile_patch_lock = threading.Lock()


def model_signature(model) -> str:
    """A digest of what a compiled PyMC model depends on (see `reuse_compiled_models`)."""
    from pymc.backends.arviz import find_constants, find_observations

    digest = hashlib.sha256(model.str_repr(formatting="plain").encode())
    # the variables' shapes through their dimensions and coordinates (model.initial_point()
    # would say them too, but compiles a function: 7 s on a 20,000-row GLMM under load)
    for name, values in sorted(model.coords.items()):
        digest.update(f"{name}{None if values is None else list(values)}".encode())
    for name, dims in sorted(model.named_vars_to_dims.items()):
        digest.update(f"{name}{tuple(dims)}".encode())
    for found in (find_observations(model), find_constants(model)):
        for name, value in sorted(found.items()):
            array = np.ascontiguousarray(np.asarray(value))
            digest.update(f"{name}{array.dtype}{array.shape}".encode())
            digest.update(array.tobytes())
    return digest.hexdigest()


def _install_compile_memo() -> None:
    import nutpie

    with _compile_patch_lock:
        original = nutpie.compile_pymc_model
        if getattr(original, "gbstats_memo", False):
            return

        @functools.wraps(original)
        def compile_pymc_model(model, *args, **kwargs):
            memo = getattr(_compile_memo, "models", None)
            if memo is None:  # outside reuse_compiled_models(), or another thread
                return original(model, *args, **kwargs)
            key = (model_signature(model), repr(args), repr(sorted(kwargs.items())))
            if key not in memo:
                memo[key] = original(model, *args, **kwargs)
            return memo[key]

        compile_pymc_model.gbstats_memo = True
        nutpie.compile_pymc_model = compile_pymc_model


@contextlib.contextmanager
def reuse_compiled_models():
    """Within the block, in this thread, a model nutpie has compiled is not compiled again:
    a fit of the same model (`model_signature`) samples the compiled one. The numbers are
    those of a fresh compilation (the same code, seeded by nutpie.sample's seed)."""
    try:
        _install_compile_memo()
    except ImportError:  # no nutpie: PyMC's own sampler compiles as before
        yield
        return
    outer = getattr(_compile_memo, "models", None)
    _compile_memo.models = {} if outer is None else outer
    try:
        yield
    finally:
        _compile_memo.models = outer


def require_whole_posterior(idata, draws: int, chains: int) -> None:
    """Both samplers (nutpie and PyMC's NUTS) catch Ctrl-C and return the draws made so far
    as if sampling had finished: a truncated posterior would then be summarised, cached and
    reported as a whole one. Raise KeyboardInterrupt again instead."""
    sizes = idata.posterior.sizes
    if sizes.get("draw", draws) < draws or sizes.get("chain", chains) < chains:
        raise KeyboardInterrupt(f"sampling was interrupted after {sizes.get('draw')} of "
                                f"{draws} draws")


def sample_kwargs(sampler: str, chains: int, target_accept: float | None,
                  mass_matrix: str = DEFAULT_MASS_MATRIX) -> dict:
    if sampler not in SAMPLERS:
        raise UnknownNameError("sampler", sampler, list(SAMPLERS))
    if mass_matrix not in MASS_MATRICES:
        raise UnknownNameError("mass matrix", mass_matrix, list(MASS_MATRICES))
    kwargs: dict[str, Any] = {"inference_method": sampler}
    # chains run in parallel, one per core (at most): processes for PyMC's NUTS, threads
    # for nutpie (its own default too, said here so that it does not depend on one)
    cores = max(1, min(chains, os.cpu_count() or 1))
    if sampler == "pymc":
        kwargs["cores"] = cores
    else:
        kwargs["nuts_sampler_kwargs"] = {"cores": cores}
        if mass_matrix == "low_rank":
            kwargs["nuts_sampler_kwargs"]["low_rank_modified_mass_matrix"] = True
    if target_accept is not None:
        kwargs["target_accept"] = target_accept
    return kwargs


def require_sampling_counts(**counts) -> None:
    """draws and chains must be whole numbers >= 1, tune >= 0: checked before any
    compilation, since PyMC otherwise fails only after the model is built (about
    20 s), with an OverflowError or an IndexError that names no parameter."""
    for name, value in counts.items():
        low = 0 if name == "tune" else 1
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise GbstatsError(f"fit_bayes: parameter {name}={value!r} is invalid; expected a "
                               f"whole number >= {low}")


def build_model(formula: str, frame: pd.DataFrame, family: str, noncentered: bool):
    """The bambi model, with bambi's own refusals (e.g. an interaction with a
    single observed combination) reported with the formula."""
    import bambi as bmb

    try:
        return bmb.Model(formula, frame, family=family, noncentered=noncentered)
    except ValueError as exc:
        raise GbstatsError(f"bambi cannot build a model of {formula!r} from these data: {exc}") from exc


@records_seconds
def fit_bayes(formula: str, data: pd.DataFrame, family: str = "gaussian",
              priors: Mapping[str, Any] | None = None, *,
              draws: int = 2000, tune: int = 1000, chains: int = 2, seed: int | None = 1,
              sampler: str = DEFAULT_SAMPLER, target_accept: float | None = None,
              noncentered: bool = True, loo: bool = True, progressbar: bool = False,
              contrasts: Mapping | None = None, prior_widen: float = 1.0,
              mass_matrix: str = DEFAULT_MASS_MATRIX, standardize: bool = True) -> FitResult:
    """Fit a Bayesian (generalized) linear mixed model with bambi/PyMC.

    formula   lme4 syntax as `gbstats.mixed.formula` reads it for every backend, e.g.
              "surprisal ~ close + gendered + (1|frame)" or
              "correct ~ stereotype * alpha + (1|participant) + (1|item)";
              a formula without random terms gives a Bayesian regression.
              Factors use treatment contrasts with the first sorted level (or a
              pandas Categorical's first category) as reference, as in R, and
              coefficients carry R's names ("genderedyes"). bambi models the
              effects of one group term as *independent*: `(1 + x | g)` is
              lme4's `(1 | g) + (0 + x | g)`, without the correlation (a note
              in `warnings` says so).
    family    "gaussian" (identity link), or "bernoulli"/"binomial" (logit link,
              0/1 response; 1 is the outcome whose probability is modelled).
    priors    overrides, keyed by formula term as bambi names it: "Intercept"
              (or "(Intercept)"), "x", "close", "close:gendered", "1|frame",
              "x|frame", "sigma", or "common"/"group_specific" for all of a kind.
              A value is a bambi.Prior, ("Normal", {"mu": 0, "sigma": 1}) or
              {"dist": "Normal", "mu": 0, "sigma": 1}; a hyperprior nests:
              {"dist": "Normal", "mu": 0, "sigma": {"dist": "HalfNormal", "sigma": 1}}.
    draws, tune, chains, seed
              posterior draws and tuning steps per chain, number of chains, and
              the random seed (a fixed default, so a rerun gives the same numbers).
              2 chains fit 2 cores. 2,000 draws because with 1,000 the bulk ESS
              of the group SD of a 160-row random-intercept model sat near 350,
              under the 400 that reliable R-hat/MCSE need; sampling is cheap
              next to compilation for models of this size.
    sampler   "nutpie" (default; compiled with numba, chains in threads) or
              "pymc" (PyMC's NUTS, one process per chain).
    target_accept  NUTS target acceptance (default 0.8; raise it on divergences).
    noncentered  bambi's non-centred group-level effects (the default), best
              when groups carry little information each; with many
              observations per group `noncentered=False` often mixes better
              (higher ESS for the group SDs).
    loo       compute PSIS-LOO (elpd_loo, its SE, p_loo, looic) into fit_stats.
    progressbar  show the sampler's progress bar.
    prior_widen  multiplies the scale of every default prior (2.0: a
              prior-sensitivity refit with priors twice as wide); priors given
              in `priors` are used as given.
    mass_matrix  nutpie's mass-matrix adaptation: "low_rank" (default,
              MASS_MATRICES says why) or "diag"; PyMC's NUTS always adapts a
              diagonal one.
    standardize  sample with every numeric predictor divided by its SD
              (`predictor_scales` lists which; a predictor whose term has a
              prior in `priors` keeps its units), then report everything per
              unit of the original predictor. An exact reparametrisation that
              keeps chains from starting hundreds of posterior SDs away from
              the posterior (the section "Numeric predictors on a common scale"
              says why); fit_stats["predictor_scales"] records the SDs.
              False samples on the predictors' own scales.
    contrasts factor codings as in `fit_lmm`: {"close": "sum"} (R's
              contr.sum, terms close1, ...), "treatment" or a matrix; recorded
              in fit_stats["contrasts"]. A non-treatment factor is given to
              bambi as numeric contrast columns (`bambi_coded_formula`), so its
              default priors are those of numeric slopes, and a prior for one
              is keyed by the column's R name ("close1"), not by the factor.

    Default priors (`default_priors`; the exact priors used are recorded in
    `fit_stats["priors"]`, their source in `fit_stats["prior_source"]`):
    rstanarm's weakly-informative priors scaled to the data (PRIOR_SOURCE).

    gaussian, on the response scale, sd() the sample SD in the data:
      - coefficient of design column x: Normal(0, 2.5 * sd(y) / sd(x))
        (a factor level's column x is its 0/1 indicator);
      - intercept, with predictors centred: Normal(mean(y), 2.5 * sd(y))
        (the reported intercept is on the original scale);
      - residual SD sigma: HalfStudentT(nu=4, sigma=sd(y)) (bambi's);
      - group-level effects: Normal(0, tau), tau ~ HalfNormal(s) (bambi's
        data-scaled s).
    bernoulli, on the log-odds scale:
      - coefficient of design column x: Normal(0, 2.5 / sd(x));
      - intercept, with predictors centred: Normal(0, 2.5);
      - group-level SDs: bambi's HalfNormal(2.5) for intercepts (widened by
        the slope priors times predictor means), HalfNormal(2.5 / sd(x)) for
        slopes.

    Returns a FitResult (backend "bambi"): see this module's docstring. Rows
    with a missing value in a formula column are dropped and counted
    (fit_stats["n_dropped_na"], a warning, and fit_stats["exclusions"]).
    """
    require_sampling_counts(draws=draws, tune=tune, chains=chains)
    _require_engines()
    family_key = str(family).lower()
    if family_key not in FAMILIES:
        raise UnknownNameError("family", str(family), list(FAMILIES))
    bambi_family = FAMILIES[family_key]
    run_kwargs = sample_kwargs(sampler, chains, target_accept, mass_matrix)

    log = ExclusionLog()
    frame, parsed, notes, prepared = _prepare(formula, data, bambi_family, log, contrasts)
    design = between_factor_terms(formula, data)

    scales = predictor_scales(formula, prepared, priors) if standardize else {}
    frame = standardized_frame(frame, scales)
    model = build_model(parsed.text, frame, bambi_family, noncentered)
    model.set_priors(priors=default_priors(model, frame, parsed.response, bambi_family,
                                           prior_widen) or None)
    if priors:
        chosen = bambi_priors(priors, model)
        model.set_priors(priors={k: v for k, v in chosen.items()
                                 if k not in ("common", "group_specific")} or None,
                         common=chosen.get("common"), group_specific=chosen.get("group_specific"))
    name_map = fixed_effect_name_map(parsed, frame, model)
    require_full_rank(parsed, model, name_map)
    model.build()
    idata = model.fit(draws=draws, tune=tune, chains=chains, random_seed=seed,
                      progressbar=progressbar, **run_kwargs)
    require_whole_posterior(idata, draws, chains)
    rescale_posterior(idata, model, scales, to="original")

    result_warnings = notes + independent_effects_note(parsed)
    diag = diagnostics(idata, model)
    result_warnings += diagnostic_warnings(diag, draws * chains)
    stats: dict[str, Any] = {
        "nobs": len(frame), "n_dropped_na": sum(e.n for e in log.entries), "n_draws": draws, "n_tune": tune,
        "n_chains": chains, "seed": seed, "sampler": sampler, "noncentered": noncentered, **diag,
        "target_accept": target_accept if target_accept is not None else 0.8,
        # the sampler's own time (warm-up and draws), without building and compiling
        "sampling_seconds": (float(idata.posterior.attrs["sampling_time"])
                             if "sampling_time" in idata.posterior.attrs else None),
        "mass_matrix": mass_matrix if sampler == "nutpie" else "diag",
        "priors": priors_used(model, scales), "prior_source": PRIOR_SOURCE, "prior_widen": prior_widen,
        "predictor_scales": dict(scales),
        "priors_given": sorted(priors) if priors else [], "exclusions": log.to_records(),
        "contrasts": {v: c.to_record() for v, c in prepared.codings.items()},
        "ci_method": "posterior mean and SD; 95% equal-tailed posterior intervals",
    }
    handle = FitHandle("bambi", model, parse_formula(formula), prepared, dict(prepared.codings),
                       extra={"name_map": name_map, "bambi_parsed": parsed,
                              "predictor_scales": dict(scales)})
    fit = FitResult(formula=formula, backend="bambi", family=family_key,
                    coefs=coef_table(idata, model, name_map),
                    ranef_var=ranef_table(idata, model, bambi_family),
                    fit_stats=stats, warnings=result_warnings, idata=idata, handle=handle)
    if loo:
        with_loo(fit)
    return with_design_check(fit, design)


def with_loo(fit: FitResult) -> FitResult:
    """Add PSIS-LOO (`loo_stats`) to a fit made with loo=False: its figures to fit_stats,
    its Pareto-k notes to the warnings."""
    values, notes = loo_stats(fit)
    fit.fit_stats.update(values)
    fit.warnings.extend(notes)
    return fit


def fixed_effect_draws(fit: FitResult) -> np.ndarray:
    """(draws, k) posterior draws of the fixed effects, columns in the
    coefs table's (R's) order."""
    model, name_map = fit.handle.native, fit.handle.extra["name_map"]
    columns = {}
    for var, labels in common_term_labels(model).items():
        draws = variable_draws(fit.idata.posterior, var)
        for j, label in enumerate(labels):
            columns[name_map[label]] = draws[:, j]
    return np.column_stack([columns[t] for t in fit.coefs["term"]])

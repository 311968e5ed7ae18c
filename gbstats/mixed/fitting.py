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

import contextvars
import logging
import math
import time
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


# How far `fit_bayes_twin` goes to reach the convergence figures (R-hat <= 1.01,
# bulk and tail ESS >= 400 on every reported parameter, no divergence): each
# retry doubles draws and tuning steps, starts its chains afresh from the next
# seed (a chain that started badly is not replayed), and after divergences also
# raises NUTS's target acceptance (smaller steps). Two budgets stop it: the
# draws (up to MAX_DRAWS_FACTOR x the draws asked for) and the time
# (TWIN_TIME_BUDGET_S seconds for all attempts: a retry is not started when it
# would overrun them, `next_attempt_seconds`). The time budget is a backstop
# for a posterior that will not converge, not a target: an attempt on the
# largest twins took 1-3 minutes on a quiet 2-core machine and up to 12 on the
# shared, loaded one (cognitive_bias' QA GLMMs), so 20 minutes leaves room for
# the refits the draws budget allows there, and a twin that cannot converge
# stops within 20 minutes instead of running for 33. A twin still short of
# the figures then is returned with fit_stats["converged"] False, which
# `twin_notes` prints as NOT CONVERGED, with what stopped it
# (fit_stats["stopped_by"]).
MAX_DRAWS_FACTOR = 4
TWIN_TIME_BUDGET_S = 1200.0
RETRY_TARGET_ACCEPT = (0.9, 0.95, 0.99)
SEED_LIMIT = 2**32  # numpy and PyMC take seeds 0 .. 2**32 - 1

# Progress of long fits (each twin attempt), as log records: a study's runner shows
# them on stderr (studies.common.show_gbstats_progress); in a notebook,
# logging.basicConfig(level=logging.INFO) does.
PROGRESS = logging.getLogger("gbstats.progress")
# The name of the fit whose twin is sampling, when the twin runs in a worker thread
# (gbstats.mixed.background) while the run prints its own lines: its progress lines then
# say which twin they are about ("human model twin, attempt 1/3: ...").
TWIN_LABEL: contextvars.ContextVar[str | None] = contextvars.ContextVar("gbstats_twin_label",
                                                                        default=None)


def _twin_progress(line: str) -> None:
    label = TWIN_LABEL.get()
    # a fit named as a twin already ("model side: exp1_m_cond (twin)") is not said twice
    PROGRESS.info(f"{label.removesuffix(' (twin)')} twin, attempt "
                  f"{line.removeprefix('twin attempt ')}" if label else line)


def fit_bayes_twin(formula: str, data: pd.DataFrame, *, family: str = "gaussian",
                   draws: int = 1000, tune: int | None = None, seed: int | None = None,
                   loo: bool = True, contrasts: Mapping | None = None,
                   priors: Mapping | None = None, prior_widen: float = 1.0,
                   max_draws: int | None = None, target_accept: float | None = None,
                   max_seconds: float | None = None):
    """The Bayesian (bambi/PyMC) twin of a frequentist fit: the same formula and family.

    `tune` defaults to `draws`, so that a quick run (small `draws`) stays quick.
    `priors` overrides default priors as `fit_bayes` reads them ({"x": {"dist":
    "Normal", "mu": 0, "sigma": 2}}, ...); `prior_widen` widens every default
    prior (2.0 for a sensitivity refit).

    Converging is part of the fit: while the reported parameters miss the
    figures (`gbstats.mixed.bayes.diagnostics`), the model is refitted from the
    next seed (seed + 1, ...) as `next_attempt_plan` says: with twice the draws
    and tuning steps, or, when divergences were the only fault, with the same
    draws at a higher target acceptance. Two budgets stop the
    refits: `max_draws` per chain (default MAX_DRAWS_FACTOR x `draws`) and
    `max_seconds` for all attempts together (default TWIN_TIME_BUDGET_S; a
    refit is not started when its predicted time, `next_attempt_seconds`,
    would overrun it). Every attempt's figures, seed and seconds are kept in
    fit_stats["attempts"], what ended the loop in fit_stats["stopped_by"]
    ("converged", "draws budget" or "time budget"); the result is the last
    attempt, converged or not (fit_stats["converged"]). Each attempt is
    announced on the "gbstats.progress" logger. With `loo`, PSIS-LOO is computed
    once, for the reported attempt (an attempt's "seconds" leave it out).
    """
    from gbstats.mixed.bayes import fit_bayes, reuse_compiled_models

    if family not in _BAYES_FAMILY:
        raise GbstatsError(f"unsupported family {family!r}; expected one of "
                           f"{', '.join(_BAYES_FAMILY)}")
    limit = MAX_DRAWS_FACTOR * draws if max_draws is None else max_draws
    if limit < draws:
        raise GbstatsError(f"the twin's refit budget is {limit} draws per chain, below the "
                           f"{draws} draws asked for; expected a budget of at least the draws "
                           f"(--max-draws {draws} or more, or leave it out: {MAX_DRAWS_FACTOR}x "
                           f"the draws)")
    budget = TWIN_TIME_BUDGET_S if max_seconds is None else float(max_seconds)
    if not budget > 0:
        raise GbstatsError(f"the twin's time budget must be a positive number of seconds, "
                           f"found {max_seconds!r}")
    tune = draws if tune is None else tune
    attempts = []
    started = time.perf_counter()
    # the refits sample the model the first attempt compiled (gbstats.mixed.bayes says why)
    with reuse_compiled_models():
        while True:
            number = len(attempts) + 1
            # attempts so far, this one, and the doublings the draws budget still allows (a
            # divergence-only refit, which keeps the draws, adds one when it happens)
            most = number + _doublings_left(draws, limit)
            attempt_seed = None if seed is None else (seed + number - 1) % SEED_LIMIT
            _twin_progress(twin_attempt_start(number, most, draws, tune, attempts))
            began = time.perf_counter()
            fit = fit_bayes(formula, data, family=_BAYES_FAMILY[family], draws=draws, tune=tune,
                            seed=attempt_seed, loo=False, contrasts=contrasts, priors=priors,
                            prior_widen=prior_widen, target_accept=target_accept)
            seconds = time.perf_counter() - began
            stats = fit.fit_stats
            attempts.append({**{k: stats[k] for k in ("n_draws", "n_tune", "target_accept",
                                                      "rhat_max", "ess_bulk_min", "ess_tail_min",
                                                      "divergences", "converged")},
                             "seed": attempt_seed, "seconds": round(seconds, 2),
                             "sampling_seconds": stats.get("sampling_seconds")})
            elapsed = time.perf_counter() - started
            plan = next_attempt_plan(stats, draws, tune, limit)
            if stats["converged"]:
                stopped = "converged"
            elif plan is None:
                stopped = "draws budget"
            elif elapsed + (seconds if plan["draws"] == draws else next_attempt_seconds(
                    seconds, stats.get("sampling_seconds"))) > budget:
                stopped = "time budget"
            else:
                stopped = None
            _twin_progress(twin_attempt_end(number, most, attempts[-1], stopped, elapsed, budget))
            if stopped is not None:
                break
            draws, tune, target_accept = plan["draws"], plan["tune"], plan["target_accept"]
    if loo:
        # Only the reported attempt's LOO: on cognitive_bias' 3,675-trial wino twin it took
        # 11.4 s at 1,000 draws x 2 chains (and grows with the draws), and the loop spent
        # it in vain on every attempt it refitted.
        from gbstats.mixed.bayes import with_loo

        with_loo(fit)
    fit.fit_stats.update(attempts=attempts, stopped_by=stopped, time_budget_s=budget,
                         max_draws=limit, seconds=round(time.perf_counter() - started, 2))
    if len(attempts) > 1:
        fit.warnings.append(
            f"refitted {len(attempts) - 1} time(s), each from a fresh seed, to reach the "
            f"convergence figures; the reported fit used {draws} draws x {stats['n_chains']} "
            f"chains after {tune} tuning steps (target_accept {stats['target_accept']}, seed "
            f"{attempts[-1]['seed']})")
    return fit


def _doublings_left(draws: int, limit: int) -> int:
    return max(0, int(math.floor(math.log2(limit / draws)))) if limit >= draws else 0


def next_attempt_plan(stats: Mapping, draws: int, tune: int, limit: int) -> dict | None:
    """The settings of the refit after an attempt that did not converge, or None when the
    draws budget leaves no refit.

    The rule (issue 44): an attempt whose R-hat and ESS met the figures and whose only
    fault is divergent transitions is refitted with the *same* draws at the next higher
    target acceptance: divergences come from a step size too large for the posterior's
    curvature, which smaller steps cure and more draws do not (Betancourt 2017, "A
    conceptual introduction to Hamiltonian Monte Carlo", sec. 6.2). Doubling there only
    doubled the cost (one divergence in 4,000 draws of role_nouns' GLMM twin). Every
    other miss doubles the draws and tuning steps, also raising the target acceptance
    after divergences. Target acceptance only rises, through RETRY_TARGET_ACCEPT, so at
    most len(RETRY_TARGET_ACCEPT) refits keep the draws: the attempts are bounded by
    1 + log2(limit / draws) + len(RETRY_TARGET_ACCEPT)."""
    from gbstats.mixed.bayes import ESS_BULK_MIN, ESS_TAIL_MIN, RHAT_MAX

    current = stats["target_accept"]
    higher = next((t for t in RETRY_TARGET_ACCEPT if t > current), None)
    mixed_well = (stats["rhat_max"] <= RHAT_MAX and stats["ess_bulk_min"] >= ESS_BULK_MIN
                  and stats["ess_tail_min"] >= ESS_TAIL_MIN)
    if stats["divergences"] and mixed_well and higher is not None:
        return {"draws": draws, "tune": tune, "target_accept": higher}
    if 2 * draws > limit:
        return None
    raised = (higher or current) if stats["divergences"] else current
    return {"draws": 2 * draws, "tune": 2 * tune, "target_accept": raised}


def next_attempt_seconds(seconds: float, sampling_seconds: float | None) -> float:
    """The predicted time of a refit with twice the draws and tuning steps: the sampling
    doubles, building and compiling the model do not (twice the whole attempt when the
    sampler did not say how long it sampled)."""
    if sampling_seconds is None or not 0 <= sampling_seconds <= seconds:
        return 2 * seconds
    return seconds + sampling_seconds


def twin_attempt_start(number: int, most: int, draws: int, tune: int, earlier: list) -> str:
    """The progress line before a twin attempt: "twin attempt 2/3: refit at 2,000 draws ..."."""
    what = "sampling" if number == 1 else "refit at"
    line = f"twin attempt {number}/{most}: {what} {draws:,} draws per chain after {tune:,} tuning steps"
    if earlier:
        last = earlier[-1]
        line += (f" (attempt {number - 1}: R-hat {last['rhat_max']:.3f}, bulk ESS "
                 f"{last['ess_bulk_min']:.0f}, tail ESS {last['ess_tail_min']:.0f}, "
                 f"{last['divergences']} divergences)")
    return line


def twin_attempt_end(number: int, most: int, attempt: dict, stopped: str | None,
                     elapsed: float, budget: float) -> str:
    """The progress line after a twin attempt: its figures, and what comes next."""
    figures = (f"R-hat {attempt['rhat_max']:.3f}, bulk ESS {attempt['ess_bulk_min']:.0f}, tail "
               f"ESS {attempt['ess_tail_min']:.0f}, {attempt['divergences']} divergences")
    outcome = {"converged": "converged",
               "draws budget": "NOT CONVERGED, and the draws budget is spent",
               "time budget": (f"NOT CONVERGED, and a refit would overrun the time budget "
                               f"({elapsed:.0f} of {budget:.0f} s used)"),
               None: "not converged yet: refitting"}[stopped]
    return (f"twin attempt {number}/{most} took {attempt['seconds']:.0f} s: {figures}; "
            f"{outcome}")


def twin_record(fit) -> dict:
    """What results.json records of one Bayesian twin: its convergence figures,
    settings and priors (`Run.record_fits` collects one per twin)."""
    stats = fit.fit_stats
    keys = ("rhat_max", "ess_bulk_min", "ess_tail_min", "divergences", "converged", "n_draws",
            "n_tune", "n_chains", "sampler", "mass_matrix", "target_accept", "seed", "priors",
            "prior_source", "prior_widen", "priors_given", "predictor_scales", "attempts",
            "stopped_by", "max_draws", "time_budget_s", "seconds", "reused_from_cache")
    return {"formula": fit.formula, "family": fit.family,
            **{k: stats[k] for k in keys if k in stats}}


def is_twin(fit) -> bool:
    """A Bayesian (bambi/PyMC) fit, whatever label a study keys it by."""
    return getattr(fit, "backend", None) == "bambi"


def bayes_twins_of(fits: Mapping) -> dict:
    """{label: FitResult} of the Bayesian fits among `fits` (labels as the study keys them:
    "pymc", "pymc, alpha numeric", ...)."""
    return {label: fit for label, fit in fits.items() if is_twin(fit)}


def twin_notes(fits: Mapping) -> list[str]:
    """Table-note sentences for each Bayesian twin among `fits` (a {backend
    label: FitResult} dict): whether it converged, with its figures, and its
    priors. An unconverged twin is marked NOT CONVERGED, never shown as fine."""
    from gbstats.mixed.bayes import convergence_note

    notes = []
    for label, fit in bayes_twins_of(fits).items():
        stats = fit.fit_stats
        if "rhat_max" not in stats:
            continue
        priors = "; ".join(f"{term} ~ {prior}" for term, prior in stats.get("priors", {}).items())
        stopped = ""
        if not stats.get("converged") and stats.get("stopped_by") in ("draws budget", "time budget"):
            stopped = (f"; refitting stopped at the {stats['stopped_by']} ("
                       + (f"{stats['max_draws']} draws per chain" if stats["stopped_by"] == "draws budget"
                          else f"{stats['time_budget_s']:.0f} s") + ")")
        notes += [f"Bayesian twin [{label}]: {convergence_note(stats)}; "
                  f"{stats['n_chains']} chains x {stats['n_draws']} draws{stopped}.",
                  f"Priors [{label}]: {priors}."]
    return notes


def frequentist_notes(fits: Mapping) -> list[str]:
    """Table-note sentences for the lme4/statsmodels/blme fits among `fits`: their
    convergence, singular-fit and separation warnings, so that a table never hides them."""
    notes = []
    for label, fit in fits.items():
        if is_twin(fit):
            continue
        flagged = [w for w in fit.warnings if any(k in w.lower() for k in FIT_PROBLEM_WORDS)]
        notes += [f"[{label}] {in_words_for_a_table(w)}" for w in flagged]
    return list(dict.fromkeys(notes))


def in_words_for_a_table(message: str) -> str:
    """An engine's message as a table note says it: lme4's "boundary (singular) fit: see
    help('isSingular')" and "Model failed to converge with max|grad| = ..." in words, not
    R's (issue 43: no code in captions or notes). The Warnings section keeps the message
    as the engine printed it."""
    import re

    if "boundary (singular) fit" in message:
        return ("singular fit: a random-effect variance was estimated at zero (or a "
                "correlation at ±1), so that part of the model is not identified by the data")
    grad = re.search(r"failed to converge with max\|grad\| = ([0-9.eE+-]+) \(tol = "
                     r"([0-9.eE+-]+)", message)
    if grad:
        return (f"the optimiser did not converge (largest gradient {float(grad.group(1)):.3g}, "
                f"tolerance {float(grad.group(2)):.3g}); read these estimates with caution")
    return message


# Words that mark a frequentist fit's own trouble in lme4's / statsmodels'
# messages (lme4: "boundary (singular) fit", "Model failed to converge",
# "Hessian is numerically singular"; gbstats: "quasi-complete separation").
FIT_PROBLEM_WORDS = ("singular", "converge", "hessian", "separation", "eigenvalue", "boundary")


def design_notes(fits: Mapping) -> list[str]:
    """The design check's findings among `fits` (`gbstats.mixed.design`: a predictor that
    varies only between the levels of a factor with no random effect), each once: every
    engine fitted the same formula on the same rows, so they report the same finding."""
    from gbstats.mixed.design import is_design_warning

    return list(dict.fromkeys(w for fit in fits.values() for w in fit.warnings
                              if is_design_warning(w)))


def table_notes(fits: Mapping) -> list[str]:
    """Everything a table of these fits must say about them: frequentist fit
    problems (`frequentist_notes`), the design check (`design_notes`) and the
    twin's convergence and priors."""
    return frequentist_notes(fits) + design_notes(fits) + twin_notes(fits)


def fit_with_twin(formula: str, data: pd.DataFrame, *, backends: Sequence[str] = ("lme4",),
                  family: str = "gaussian", bayes: bool = True, draws: int = 1000,
                  tune: int | None = None, seed: int | None = None, loo: bool = True,
                  optimizer: str | None = None, contrasts: Mapping | None = None,
                  use_cache: bool = False, cache_dir=None, priors: Mapping | None = None,
                  prior_widen: float = 1.0, twin_seconds: float | None = None,
                  twin_started=None, max_draws: int | None = None,
                  target_accept: float | None = None) -> dict:
    """{backend label: FitResult}: each frequentist backend asked for, then "pymc" if `bayes`.

    `backends` may be empty (Bayesian fit only). `priors` and `prior_widen`
    go to the twin (`fit_bayes_twin`), and so do `twin_seconds`, its time
    budget (`max_seconds`), `max_draws`, its refits' budget of draws per
    chain, and `target_accept`, its first attempt's target acceptance. The order of the dict is the order of the rows in `stack_fits`. With `use_cache=True` a fit whose
    formula, data, options and fitting code are unchanged since an earlier
    call is reused from `<cache_dir>/fits/` (`gbstats.mixed.fit_cache`; its
    fit_stats["reused_from_cache"] says so, and it carries no `idata`).
    `twin_started`: the twin of these very inputs, already started in the background
    (a Future from `gbstats.mixed.background.BackgroundFits.take`), collected after the
    frequentist fits instead of fitting it again.
    """
    from gbstats.mixed.fit_cache import cached_fit

    cache = {"use_cache": use_cache, "cache_dir": cache_dir}
    fits = {b: cached_fit(fit_frequentist, formula, data, backend=b, family=family,
                          optimizer=optimizer, contrasts=contrasts, **cache)
            for b in backends}
    if bayes:
        fits[BAYES_BACKEND] = (
            twin_started.result() if twin_started is not None
            else cached_fit(fit_bayes_twin, formula, data,
                            **twin_options(family=family, draws=draws, tune=tune, seed=seed,
                                           loo=loo, contrasts=contrasts, priors=priors,
                                           prior_widen=prior_widen, max_seconds=twin_seconds,
                                           max_draws=max_draws, target_accept=target_accept),
                            **cache))
    return fits


def twin_options(*, family: str = "gaussian", draws: int = 1000, tune: int | None = None,
                 seed: int | None = None, loo: bool = True, contrasts: Mapping | None = None,
                 priors: Mapping | None = None, prior_widen: float = 1.0,
                 max_seconds: float | None = None, max_draws: int | None = None,
                 target_accept: float | None = None) -> dict:
    """The keywords of `fit_bayes_twin` as fit_with_twin passes them: one place, so that a
    twin started in the background (`studies.pipeline.Run.start_twin`) has the very
    fit-cache key of the one fit_with_twin would make."""
    return {"family": family, "draws": draws, "tune": tune, "seed": seed, "loo": loo,
            "contrasts": contrasts, "priors": priors, "prior_widen": prior_widen,
            "max_seconds": max_seconds, "max_draws": max_draws, "target_accept": target_accept}


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


# --------------------------------------------------------------------------
# prior sensitivity

SENSITIVITY_COLUMNS = ["term", "estimate", "ci_low", "ci_high", "estimate_wide", "ci_low_wide",
                       "ci_high_wide", "shift_in_sd", "converged_wide"]


def twin_refit_inputs(fit) -> tuple[pd.DataFrame, dict]:
    """(rows, contrasts) that refit a Bayesian twin exactly: the rows it used
    (factors as Categoricals in its level order, so the references stay) and
    each factor's coding. Needs the fit's handle (a fresh fit, not one reused
    from the fit cache)."""
    handle = fit.handle
    if handle is None or handle.prepared is None:
        raise GbstatsError(f"the twin of {fit.formula!r} was reused from the fit cache and "
                           "carries no data to refit; rerun with --no-cache")
    prepared = handle.prepared
    rows = prepared.frame.copy()
    for var, levels in prepared.levels.items():
        rows[var] = pd.Categorical(rows[var], categories=levels)
    contrasts = {}
    for var, coding in prepared.codings.items():
        if coding.kind == "matrix":
            contrasts[var] = pd.DataFrame(coding.matrix, index=list(coding.levels),
                                          columns=list(coding.names))
        elif coding.kind != "treatment":
            contrasts[var] = coding.kind
    return rows, contrasts


def prior_sensitivity(fit, widen: float = 2.0, max_draws: int | None = None) -> pd.DataFrame:
    """Refit a Bayesian twin with every default prior `widen` times wider
    (the same draws, seed and target acceptance; refitted until converged as
    `fit_bayes_twin` does, up to `max_draws` draws per chain, at least the draws
    of the fit) and put the fixed effects side by side:
    SENSITIVITY_COLUMNS, where shift_in_sd = (estimate_wide - estimate) / the
    default fit's posterior SD. Priors the caller set explicitly stay as set."""
    stats = fit.fit_stats
    rows, contrasts = twin_refit_inputs(fit)
    family = {"bernoulli": "binomial", "binomial": "binomial"}.get(fit.family, fit.family)
    wide = fit_bayes_twin(fit.formula, rows, family=family, draws=stats["n_draws"],
                          tune=stats["n_tune"], seed=stats.get("seed"), loo=False,
                          contrasts=contrasts or None,
                          target_accept=stats.get("target_accept"),
                          prior_widen=widen * stats.get("prior_widen", 1.0),
                          max_draws=None if max_draws is None else max(max_draws,
                                                                       stats["n_draws"]))
    base = fit.coefs.set_index("term")
    other = wide.coefs.set_index("term").loc[base.index]
    table = pd.DataFrame({"term": base.index, "estimate": base["estimate"].to_numpy(),
                          "ci_low": base["ci_low"].to_numpy(), "ci_high": base["ci_high"].to_numpy(),
                          "estimate_wide": other["estimate"].to_numpy(),
                          "ci_low_wide": other["ci_low"].to_numpy(),
                          "ci_high_wide": other["ci_high"].to_numpy()})
    table["shift_in_sd"] = (table["estimate_wide"] - table["estimate"]) / base["se"].to_numpy()
    table["converged_wide"] = bool(wide.fit_stats["converged"])
    return table[SENSITIVITY_COLUMNS]

"""Twins sample with numeric predictors divided by their SD, and refit from fresh seeds
within a draws budget and a time budget (issue 34).

Every fit is a real bambi/PyMC (nutpie) run. The reparametrisation is checked to be
exact where exactness can be checked without Monte Carlo error: the priors, as
recorded in the predictors' own units, are the priors of a model built on the
unscaled data, and the pointwise log-likelihood at the reported draws is what the
unscaled model gives at those draws. The slow test is the case that showed the
problem: role_nouns' human GLMM, which did not converge in 33 minutes with its
predictor on the 0-100 scale, converges at its first attempt.
"""
from __future__ import annotations

import math

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gbstats.mixed.bayes import add_log_likelihood, fit_bayes, predictor_scales, rescale_posterior

REFERENCE = Path(__file__).resolve().parents[1] / "reference"
FORMULA = "y ~ x * cond + (1 + x | subject)"


def wide_x_data() -> pd.DataFrame:
    """random_intercept.csv with x on a scale of hundreds (its SD about 90)."""
    data = pd.read_csv(REFERENCE / "random_intercept.csv")
    return data.assign(x=data["x"] * 100)


@pytest.fixture(scope="module")
def both_ways():
    data = wide_x_data()
    common = {"draws": 50, "tune": 50, "chains": 2, "seed": 3, "loo": False}
    return (data, fit_bayes(FORMULA, data, **common),
            fit_bayes(FORMULA, data, standardize=False, **common))


def numbers(text: str) -> list[float]:
    return [float(v) for v in re.findall(r"-?\d+\.?\d*(?:e-?\d+)?", text)]


def test_the_scaled_predictor_and_its_sd_are_recorded(both_ways):
    data, scaled, plain = both_ways
    assert scaled.fit_stats["predictor_scales"] == {"x": pytest.approx(data["x"].std(ddof=1))}
    assert plain.fit_stats["predictor_scales"] == {}


def test_priors_are_recorded_in_the_predictors_own_units(both_ways):
    # the model sampled on x / sd(x) has priors whose scale, per unit of x, is exactly
    # that of the model built on x itself (rstanarm's 2.5 / sd(x) scales with x)
    _, scaled, plain = both_ways
    assert scaled.fit_stats["priors"].keys() == plain.fit_stats["priors"].keys()
    for term, prior in plain.fit_stats["priors"].items():
        assert numbers(scaled.fit_stats["priors"][term]) == pytest.approx(numbers(prior),
                                                                          rel=2e-4), term


def test_log_likelihood_at_the_reported_draws_is_the_unscaled_models(both_ways):
    # the draws are reported per unit of x; the unscaled model evaluated at them gives
    # the log-likelihood the scaled model computed (to rounding): an exact reparametrisation
    _, scaled, plain = both_ways
    add_log_likelihood(scaled)
    copy = scaled.idata.copy()
    del copy.log_likelihood
    plain.handle.native.compute_log_likelihood(copy)
    assert np.abs(copy.log_likelihood["y"].values
                  - scaled.idata.log_likelihood["y"].values).max() < 1e-9


def test_posterior_units_round_trip(both_ways):
    _, scaled, _ = both_ways
    model, scales = scaled.handle.native, scaled.fit_stats["predictor_scales"]
    idata = scaled.idata.copy()
    before = idata.posterior["x|subject_sigma"].values.copy()
    rescale_posterior(idata, model, scales, to="sampled")
    assert idata.posterior["x|subject_sigma"].values == pytest.approx(before * scales["x"])
    assert idata.posterior["x:cond"].values == pytest.approx(
        scaled.idata.posterior["x:cond"].values * scales["x"])
    rescale_posterior(idata, model, scales, to="original")
    assert idata.posterior["x|subject_sigma"].values == pytest.approx(before)
    # the intercept does not depend on the units of x (bambi centres the columns)
    assert idata.posterior["Intercept"].values == pytest.approx(
        scaled.idata.posterior["Intercept"].values)


def test_a_predictor_with_a_user_prior_keeps_its_units():
    from gbstats.mixed.lmm import prepare_data
    from gbstats.mixed.formula import parse_formula

    data = wide_x_data()
    prepared = prepare_data(parse_formula(FORMULA), data)
    assert set(predictor_scales(FORMULA, prepared)) == {"x"}
    assert predictor_scales(FORMULA, prepared, {"x": {"dist": "Normal", "mu": 0, "sigma": 1}}) == {}
    assert predictor_scales(FORMULA, prepared, {"x|subject": ("Normal", {"mu": 0})}) == {}
    assert predictor_scales(FORMULA, prepared, {"common": ("Normal", {"mu": 0})}) == {}
    # a prior on another term leaves x scaled
    assert set(predictor_scales(FORMULA, prepared, {"cond": ("Normal", {"mu": 0})})) == {"x"}


@pytest.fixture(scope="module")
def twin_with_one_refit():
    """fit_bayes_twin at 20 draws with a budget of 40 on random_intercept.csv, made once for
    the two tests that read it (each made the same call, and each call compiled the model
    again: about 5 s, issue 41): the fit, the lines it logged on "gbstats.progress", and
    the models nutpie compiled for it."""
    import logging

    import nutpie

    from gbstats.mixed.fitting import fit_bayes_twin

    lines, compiled = [], []

    class Keep(logging.Handler):  # on the logger itself, as the progress_records fixture
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logger = logging.getLogger("gbstats.progress")
    handler, level = Keep(), logger.level
    compile_model = nutpie.compile_pymc_model

    def counting(model, *args, **kwargs):
        compiled.append(model)
        return compile_model(model, *args, **kwargs)

    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    nutpie.compile_pymc_model = counting
    try:
        data = pd.read_csv(REFERENCE / "random_intercept.csv")
        fit = fit_bayes_twin("y ~ x + (1|subject)", data, draws=20, max_draws=40, seed=7,
                             loo=False)
    finally:
        nutpie.compile_pymc_model = compile_model
        logger.removeHandler(handler)
        logger.setLevel(level)
    return fit, lines, compiled


def test_refits_start_from_fresh_seeds_and_say_what_stopped_them(twin_with_one_refit):
    from gbstats.mixed.fitting import twin_notes

    fit, lines, _ = twin_with_one_refit
    stats = fit.fit_stats
    # 2 x 20 draws cannot reach an ESS of 400: one refit at 40 draws, from seed 8
    assert [a["n_draws"] for a in stats["attempts"]] == [20, 40]
    assert [a["seed"] for a in stats["attempts"]] == [7, 8]
    assert stats["stopped_by"] == "draws budget" and stats["converged"] is False
    assert all(a["seconds"] > 0 for a in stats["attempts"])
    assert lines[0].startswith("twin attempt 1/2: sampling 20 draws per chain")
    assert lines[2].startswith("twin attempt 2/2: refit at 40 draws per chain")
    assert "R-hat" in lines[2] and "draws budget is spent" in lines[3]
    assert "stopped at the draws budget (40 draws per chain)" in twin_notes({"pymc": fit})[0]


def test_a_refit_samples_the_model_compiled_once_and_gives_a_fresh_fits_numbers(
        twin_with_one_refit, monkeypatch):
    """The refits of a twin differ from its first attempt only in nutpie.sample's arguments
    (draws, tuning, seed, target acceptance): the model is compiled once, and the refit's
    draws are exactly those of the same settings fitted on their own, compiled afresh."""
    import nutpie

    from gbstats.mixed.bayes import fit_bayes

    fit, _, compiled_for_twin = twin_with_one_refit
    last = fit.fit_stats["attempts"][-1]
    assert len(fit.fit_stats["attempts"]) == 2 and len(compiled_for_twin) == 1
    compiled = []
    compile_model = nutpie.compile_pymc_model

    def counting(model, *args, **kwargs):
        compiled.append(model)
        return compile_model(model, *args, **kwargs)

    monkeypatch.setattr(nutpie, "compile_pymc_model", counting)
    data = pd.read_csv(REFERENCE / "random_intercept.csv")
    alone = fit_bayes("y ~ x + (1|subject)", data, draws=last["n_draws"], tune=last["n_tune"],
                      seed=last["seed"], target_accept=last["target_accept"], loo=False)
    assert len(compiled) == 1  # outside a twin's refits every fit compiles its model
    for name in fit.idata.posterior.data_vars:
        np.testing.assert_array_equal(fit.idata.posterior[name].values,
                                      alone.idata.posterior[name].values, err_msg=name)
    pd.testing.assert_frame_equal(fit.coefs, alone.coefs)


def test_the_time_budget_stops_refits():
    from gbstats.mixed.fitting import fit_bayes_twin, twin_notes

    data = pd.read_csv(REFERENCE / "random_intercept.csv")
    # any attempt takes longer than a millisecond, so no refit fits the budget
    fit = fit_bayes_twin("y ~ x + (1|subject)", data, draws=20, seed=7, loo=False,
                         max_seconds=0.001)
    assert len(fit.fit_stats["attempts"]) == 1
    assert fit.fit_stats["stopped_by"] == "time budget"
    assert "stopped at the time budget (0 s)" in twin_notes({"pymc": fit})[0]


@pytest.mark.slow
@pytest.mark.needs_r
def test_role_nouns_human_glmm_twin_converges_at_its_first_attempt(data_dir):
    # The study's own call (seed 2023; studies.role_nouns.steps.glmm_twin_settings at the
    # default --draws 1000): with attitude_score on its 0-100 scale one chain never reached
    # the posterior (R-hat 2.23 after 4,000 draws).
    from gbstats.data.registry import load_dataset
    from gbstats.mixed.fitting import fit_bayes_twin
    from gbstats.mixed.lmm import fit_glmm
    from studies.role_nouns import analysis as A

    rows = A.glmm_rows(load_dataset("papineau2022", data_dir).tables["trials"])
    draws = A.GLMM_TWIN_DRAWS_FACTOR * 1000
    fit = fit_bayes_twin(A.GLMM_FORMULA, rows, family="binomial", draws=draws, seed=2023,
                         loo=False, target_accept=A.GLMM_TWIN_TARGET_ACCEPT)
    stats = fit.fit_stats
    # What holds on any machine (issue 44: the same seed gives other draws on another
    # machine's floating point; here attempt 1 had 2 divergences in 2,000 draws, on the
    # machine that wrote the test none): it converged within its budgets, every figure of
    # the reported fit within its limit, each refit as `next_attempt_plan` rules from the
    # attempt before it, and no more attempts than that rule allows.
    from gbstats.mixed.bayes import ESS_BULK_MIN, ESS_TAIL_MIN, RHAT_MAX
    from gbstats.mixed.fitting import MAX_DRAWS_FACTOR, RETRY_TARGET_ACCEPT, next_attempt_plan

    attempts = stats["attempts"]
    assert (attempts[0]["n_draws"], attempts[0]["target_accept"]) == (
        draws, A.GLMM_TWIN_TARGET_ACCEPT)
    assert stats["converged"] and stats["stopped_by"] == "converged", attempts
    assert stats["rhat_max"] <= RHAT_MAX and stats["divergences"] == 0
    assert stats["ess_bulk_min"] >= ESS_BULK_MIN and stats["ess_tail_min"] >= ESS_TAIL_MIN
    assert len(attempts) <= 1 + math.log2(MAX_DRAWS_FACTOR) + len(RETRY_TARGET_ACCEPT)
    for before, after in zip(attempts, attempts[1:]):
        plan = next_attempt_plan(before, before["n_draws"], before["n_tune"],
                                 MAX_DRAWS_FACTOR * draws)
        assert (after["n_draws"], after["target_accept"]) == (plan["draws"],
                                                              plan["target_accept"]), attempts
    assert stats["predictor_scales"] == {"attitude_score": pytest.approx(
        rows["attitude_score"].std(ddof=1))}
    # reported per point of the 0-100 score, as glmer reports it: the two agree within
    # a fifth of the glmer SE (the posterior is close to normal with 5,420 trials)
    glmer = fit_glmm(A.GLMM_FORMULA, rows, family="binomial", backend="lme4")
    for term in ("attitude_score", "name_genderwomen:attitude_score"):
        ours, theirs = fit.coef(term), glmer.coef(term)
        assert abs(ours["estimate"] - theirs["estimate"]) < 0.2 * theirs["se"], term
        assert ours["se"] == pytest.approx(theirs["se"], rel=0.15), term


def test_the_refit_rule_keeps_the_draws_when_divergences_were_the_only_fault():
    from gbstats.mixed.fitting import RETRY_TARGET_ACCEPT, next_attempt_plan

    mixed = {"rhat_max": 1.002, "ess_bulk_min": 900.0, "ess_tail_min": 1100.0}
    # one divergence, everything else met: smaller steps, same draws (not twice the cost)
    plan = next_attempt_plan({**mixed, "divergences": 1, "target_accept": 0.8}, 1000, 1000, 4000)
    assert plan == {"draws": 1000, "tune": 1000, "target_accept": 0.9}
    # ... even when the draws budget is spent: keeping the draws costs no budget
    assert next_attempt_plan({**mixed, "divergences": 1, "target_accept": 0.9}, 4000, 4000,
                             4000) == {"draws": 4000, "tune": 4000, "target_accept": 0.95}
    # no higher target acceptance left: the draws double, as for any other miss
    top = RETRY_TARGET_ACCEPT[-1]
    assert next_attempt_plan({**mixed, "divergences": 2, "target_accept": top}, 1000, 500,
                             4000) == {"draws": 2000, "tune": 1000, "target_accept": top}
    # a low ESS: twice the draws and tuning, the target acceptance unchanged
    low = {**mixed, "ess_bulk_min": 250.0, "divergences": 0, "target_accept": 0.8}
    assert next_attempt_plan(low, 1000, 1000, 4000) == {"draws": 2000, "tune": 2000,
                                                        "target_accept": 0.8}
    # a low ESS and divergences: twice the draws, and smaller steps
    assert next_attempt_plan({**low, "divergences": 3}, 1000, 1000, 4000)["target_accept"] == 0.9
    # the draws budget spent on a doubling: no refit
    assert next_attempt_plan(low, 4000, 4000, 4000) is None
    # an R-hat miss is not cured by smaller steps alone
    assert next_attempt_plan({**mixed, "rhat_max": 1.05, "divergences": 1, "target_accept": 0.8},
                             1000, 1000, 4000)["draws"] == 2000


def test_a_refit_is_predicted_to_double_the_sampling_not_the_compilation():
    from gbstats.mixed.fitting import next_attempt_seconds

    # 100 s of which 60 s sampling: building and compiling (40 s) again, sampling twice
    assert next_attempt_seconds(100.0, 60.0) == 160.0
    # the sampler did not say (or said something impossible): twice the whole attempt
    assert next_attempt_seconds(100.0, None) == 200.0
    assert next_attempt_seconds(100.0, 130.0) == 200.0


def test_chains_run_in_parallel_one_per_core():
    import os

    from gbstats.mixed.bayes import sample_kwargs

    cores = min(2, os.cpu_count() or 1)
    # nutpie runs its chains on threads, PyMC's NUTS on processes: both one per core
    nutpie = sample_kwargs("nutpie", 2, None)
    assert nutpie["nuts_sampler_kwargs"] == {"cores": cores, "low_rank_modified_mass_matrix": True}
    assert sample_kwargs("nutpie", 2, None, "diag")["nuts_sampler_kwargs"] == {"cores": cores}
    assert sample_kwargs("pymc", 2, None)["cores"] == cores
    assert sample_kwargs("nutpie", 1, None)["nuts_sampler_kwargs"]["cores"] == 1


def test_the_group_effects_for_the_log_likelihood_are_bambis_own():
    """add_log_likelihood computes Z u by a SciPy sparse product where bambi contracts a
    pydata-sparse array through einsum (6 s of 9.4 s of LOO on 2,880 rows, issue 41): on
    random draws for numeric and categorical group terms both give the same values, up to
    the order of each row's few additions."""
    import bambi as bmb
    import xarray as xr
    from bambi.utils import get_aliased_name

    from gbstats.mixed.bayes import group_effects_by_sparse_product

    data = pd.read_csv(REFERENCE / "random_intercept.csv")
    model = bmb.Model("y ~ x + (1 + x | subject) + (0 + cond | subject)", data)
    model.build()
    graph, rng = model.backend.model, np.random.default_rng(1)
    component = model.distributional_components[model.family.likelihood.parent]
    draws = {}
    for term in component.group_specific_terms.values():
        name = get_aliased_name(term)
        dims = graph.named_vars_to_dims[name]
        draws[name] = xr.DataArray(
            rng.normal(size=[2, 7, *(len(graph.coords[d]) for d in dims)]),
            dims=["chain", "draw", *dims],
            coords={"chain": [0, 1], "draw": list(range(7)),
                    **{d: list(graph.coords[d]) for d in dims}})
    assert any(len(d.dims) == 4 for d in draws.values())  # a categorical term is among them
    args = (xr.Dataset(draws), None, True, ("chain", "draw"), ("__obs__", "__variables__"),
            False, None)
    bambis = component.predict_group_specific(*args)
    with group_effects_by_sparse_product(model):
        ours = component.predict_group_specific(*args)
    assert "predict_group_specific" not in vars(component)  # bambi's own again after
    assert ours.dims == bambis.dims == ("__obs__", "chain", "draw")
    np.testing.assert_allclose(ours.values, bambis.values, rtol=0, atol=1e-12)

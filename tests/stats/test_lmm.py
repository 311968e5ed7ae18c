"""fit_lmm / fit_glmm against lme4 reference values, and their input checks.

Reference values: tests/reference/lme4_refs.json, written by
`Rscript tests/reference/make_refs.R` from the seeded CSVs that
tests/reference/make_data.py writes (R and lme4 versions are in the JSON).
"""
from __future__ import annotations

import json
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gbstats.errors import DataValidationError, GbstatsError, MissingDependencyError
from gbstats.mixed.formula import (FormulaError, bambi_to_r_name, fixed_effect_names, model_matrix,
                             parse_formula, r_term_names)
from gbstats.mixed.lmm import fit_glmm, fit_lmm, near_zero_components, refit_simpler

REF_DIR = Path(__file__).resolve().parents[1] / "reference"
REFS = json.loads((REF_DIR / "lme4_refs.json").read_text())
MODELS = REFS["models"]
# Models statsmodels MixedLM can fit: a single grouping factor.
SINGLE_GROUP = ["random_intercept", "random_slope"]

# The tolerances the project states for lme4 (same engine, so any difference
# is only our bridge): estimates rtol 1e-4, SEs rtol 1e-3.
RTOL_EST, RTOL_SE = 1e-4, 1e-3


def design(name: str) -> pd.DataFrame:
    return pd.read_csv(REF_DIR / MODELS[name]["data"])


def ref_fixed(name: str) -> pd.DataFrame:
    return pd.DataFrame(MODELS[name]["fixed"]).astype({"df": float})


def fitter(name: str):
    return fit_lmm if MODELS[name]["family"] == "gaussian" else fit_glmm


@lru_cache(maxsize=None)
def cached_fit(name: str, backend: str):
    """One fit per model and backend for the whole module (R start-up is slow)."""
    return fitter(name)(MODELS[name]["formula"], design(name), backend=backend)


# --------------------------------------------------------------------------
# formula parsing and R's term names (no R needed)

@pytest.mark.parametrize("formula", list(REFS["term_names"]))
def test_term_names_match_r_model_matrix(formula):
    data = pd.DataFrame({"a": ["p", "q", "r", "p"], "b": ["u", "v", "u", "v"],
                         "x": [1.0, 2.0, 3.0, 4.0], "c": [True, False, True, False]})
    assert fixed_effect_names("y " + formula, data) == REFS["term_names"][formula]


def test_parse_formula_splits_fixed_and_random_parts():
    parsed = parse_formula("correct ~ stereotype * alpha + (1 + alpha | participant) + (1|item)")
    assert parsed.response == "correct"
    assert parsed.fixed_terms == (("stereotype",), ("alpha",), ("stereotype", "alpha"))
    assert [(r.group, r.intercept, r.terms) for r in parsed.random] == [
        ("participant", True, (("alpha",),)), ("item", True, ())]
    assert parsed.columns == ["correct", "stereotype", "alpha", "participant", "item"]


@pytest.mark.parametrize("formula, problem", [
    ("y ~ log(x) + (1|g)", "compute the transformed column"),
    ("y ~ x + (1|a/b)", "must be one column name"),
    ("y ~ x + (x||g)", "'||'"),
    ("y ~ x - z + (1|g)", "'- 1'"),
    ("y ~ (x + (1|g)", "unbalanced"),
    ("y ~ x + 1|g", "in parentheses"),
    ("y x", "exactly one '~'"),
])
def test_unsupported_formula_syntax_is_named(formula, problem):
    with pytest.raises(FormulaError, match=problem.replace("(", r"\(").replace("|", r"\|")):
        parse_formula(formula)


def test_model_matrix_values_follow_treatment_coding():
    # By hand: cond has levels anti < pro (sorted), so condpro is 1 for "pro"
    # rows; the interaction column is condpro * x.
    data = pd.DataFrame({"cond": ["pro", "anti", "pro"], "x": [2.0, 3.0, -1.0]})
    parsed = parse_formula("y ~ cond * x")
    mm = model_matrix(parsed.intercept, parsed.fixed_terms, data, {"cond": ["anti", "pro"]})
    expected = pd.DataFrame({"(Intercept)": [1.0, 1.0, 1.0], "condpro": [1.0, 0.0, 1.0],
                             "x": [2.0, 3.0, -1.0], "condpro:x": [2.0, 0.0, -1.0]})
    pd.testing.assert_frame_equal(mm, expected)


def test_categorical_level_order_sets_the_reference():
    data = pd.DataFrame({"cond": pd.Categorical(["pro", "anti"], categories=["pro", "anti"])})
    assert r_term_names(True, (("cond",),), {"cond": ["pro", "anti"]}) == ["(Intercept)", "condanti"]
    assert fixed_effect_names("y ~ cond", data) == ["(Intercept)", "condanti"]


@pytest.mark.parametrize("bambi, r", [
    ("Intercept", "(Intercept)"), ("x", "x"), ("gendered[yes]", "genderedyes"),
    ("close[distant]:gendered[yes]", "closedistant:genderedyes"), ("cond[pro]:x", "condpro:x"),
    ("1|frame", "1|frame"),
])
def test_bambi_names_map_to_r_names(bambi, r):
    assert bambi_to_r_name(bambi) == r


def test_import_does_not_start_r():
    code = ("import sys, gbstats, gbstats.mixed.lmm, gbstats.mixed.formula, gbstats.mixed.engines.lme4, "
            "gbstats.mixed.engines.statsmodels; "
            "assert not {'rpy2', 'pymer4'} & set(sys.modules), sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


# --------------------------------------------------------------------------
# lme4 backend against the reference script

@pytest.mark.needs_r
@pytest.mark.parametrize("name", list(MODELS))
def test_lme4_backend_matches_reference(name):
    result, ref = cached_fit(name, "lme4"), ref_fixed(name)
    assert list(result.coefs["term"]) == list(ref["term"])
    np.testing.assert_allclose(result.coefs["estimate"], ref["estimate"], rtol=RTOL_EST)
    np.testing.assert_allclose(result.coefs["se"], ref["se"], rtol=RTOL_SE)
    np.testing.assert_allclose(result.coefs["stat"], ref["stat"], rtol=RTOL_SE)
    # Wald CIs: lme4's confint(method = "Wald"); atol covers bounds near zero.
    np.testing.assert_allclose(result.coefs["ci_low"], ref["ci_low"], rtol=RTOL_SE, atol=1e-6)
    np.testing.assert_allclose(result.coefs["ci_high"], ref["ci_high"], rtol=RTOL_SE, atol=1e-6)
    np.testing.assert_allclose(result.coefs["p_value"], ref["p_value"], rtol=1e-3)
    if MODELS[name]["family"] == "gaussian":  # Satterthwaite df from lmerTest
        np.testing.assert_allclose(result.coefs["df"], ref["df"], rtol=1e-3)
    else:  # Wald z: no df
        assert result.coefs["df"].isna().all()
    ref_var = pd.DataFrame(MODELS[name]["varcor"])
    assert list(result.ranef_var["group"]) == list(ref_var["group"])
    assert list(result.ranef_var["term"]) == list(ref_var["term"])
    np.testing.assert_allclose(result.ranef_var["variance"], ref_var["variance"], rtol=RTOL_SE)
    stats = result.fit_stats
    assert stats["nobs"] == MODELS[name]["nobs"] and stats["n_dropped_na"] == 0
    for key in ("loglik", "aic", "bic"):
        np.testing.assert_allclose(stats[key], MODELS[name][key], rtol=1e-6)
    assert result.warnings == []  # the reference fits are regular (is_singular false, no messages)
    assert not MODELS[name]["is_singular"] and not MODELS[name]["lme4_messages"]


@pytest.mark.needs_r
def test_lme4_does_not_modify_callers_data():
    data = design("crossed").astype({"cond": "category"})
    before = data.copy()
    fit_lmm(MODELS["crossed"]["formula"], data, backend="lme4")
    pd.testing.assert_frame_equal(data, before)


@pytest.mark.needs_r
def test_lme4_singular_fit_is_flagged():
    # Groups with no between-group variance at all: the response is pure noise
    # around a group-free mean, so lme4's REML estimate of the group SD is 0.
    rng = np.random.default_rng(7)
    data = pd.DataFrame({"g": np.repeat([f"g{i}" for i in range(8)], 10),
                         "x": rng.normal(size=80)})
    data["y"] = 0.3 * data["x"] + rng.normal(size=80)
    # Make the group means exactly equal so the group variance is exactly 0.
    data["y"] -= data.groupby("g")["y"].transform("mean") - data["y"].mean()
    result = fit_lmm("y ~ x + (1|g)", data, backend="lme4")
    assert any("singular" in w for w in result.warnings), result.warnings
    assert near_zero_components(result) == ["g: (Intercept)"]


@pytest.mark.needs_r
def test_lme4_reports_rank_deficient_design():
    # x2 = 2 * x is collinear with x: lme4 drops a column, and the result
    # would no longer have the terms every other backend reports.
    data = design("random_intercept").assign(x2=lambda d: 2 * d["x"])
    with pytest.raises(GbstatsError, match="rank deficient"):
        fit_lmm("y ~ x + x2 + (1|subject)", data, backend="lme4")


@pytest.mark.needs_r
def test_auto_backend_prefers_lme4():
    result = fit_lmm(MODELS["random_intercept"]["formula"], design("random_intercept"))
    assert result.backend == "lme4" and result.warnings == []


@pytest.mark.needs_r
def test_glmm_accepts_boolean_response():
    data = design("binomial_glmm").assign(correct=lambda d: d["correct"].astype(bool))
    result = fit_glmm(MODELS["binomial_glmm"]["formula"], data, backend="lme4")
    np.testing.assert_allclose(result.coefs["estimate"], ref_fixed("binomial_glmm")["estimate"],
                               rtol=RTOL_EST)


# --------------------------------------------------------------------------
# statsmodels backend

@pytest.mark.parametrize("name", SINGLE_GROUP)
def test_statsmodels_agrees_with_lme4(name):
    result, ref = cached_fit(name, "statsmodels"), ref_fixed(name)
    assert result.backend == "statsmodels"
    assert list(result.coefs["term"]) == list(ref["term"])
    # Both maximise the same REML criterion, with different optimisers (L-BFGS
    # vs bobyqa) and stopping rules, so estimates agree to optimiser precision.
    np.testing.assert_allclose(result.coefs["estimate"], ref["estimate"], rtol=1e-4)
    ref_var = pd.DataFrame(MODELS[name]["varcor"])
    np.testing.assert_allclose(result.ranef_var["variance"], ref_var["variance"], rtol=1e-3)
    assert list(result.ranef_var["term"]) == list(ref_var["term"])
    np.testing.assert_allclose(result.fit_stats["loglik"], MODELS[name]["loglik"], rtol=1e-6)
    np.testing.assert_allclose(result.fit_stats["aic"], MODELS[name]["aic"], rtol=1e-6)
    # SEs differ by design: lme4 takes sqrt(diag((X' V^-1 X)^-1)) at the
    # estimated variances, statsmodels inverts the joint information of fixed
    # effects and variance parameters. In an unbalanced design the two differ
    # slightly (0.2% here), hence rtol 1e-2 rather than 1e-3.
    np.testing.assert_allclose(result.coefs["se"], ref["se"], rtol=1e-2)
    # statsmodels reports Wald z tests: df is NaN, p from the normal.
    assert result.coefs["df"].isna().all()


def test_statsmodels_refuses_crossed_random_effects():
    with pytest.raises(GbstatsError, match="crossed random effects.*backend='lme4'"):
        fit_lmm(MODELS["crossed"]["formula"], design("crossed"), backend="statsmodels")


def test_statsmodels_refuses_glmm():
    with pytest.raises(GbstatsError, match="binomial GLMM.*backend='lme4'"):
        fit_glmm(MODELS["binomial_glmm"]["formula"], design("binomial_glmm"), backend="statsmodels")


def test_statsmodels_does_not_modify_callers_data():
    data = design("random_intercept")
    before = data.copy()
    fit_lmm(MODELS["random_intercept"]["formula"], data, backend="statsmodels")
    pd.testing.assert_frame_equal(data, before)


def test_auto_backend_falls_back_to_statsmodels_with_a_notice(monkeypatch):
    from gbstats.mixed.engines import lme4 as lme4_engine

    monkeypatch.setattr(lme4_engine, "available", lambda: False)
    result = fit_lmm(MODELS["random_intercept"]["formula"], design("random_intercept"))
    assert result.backend == "statsmodels"
    assert result.warnings[0].startswith("backend='auto' used statsmodels")
    with pytest.raises(MissingDependencyError, match="r-cran-lme4"):
        fit_lmm(MODELS["random_intercept"]["formula"], design("random_intercept"), backend="lme4")


# --------------------------------------------------------------------------
# bad input (checked before any engine runs, so statsmodels is enough)

FORMULA = "y ~ x + cond + (1 | subject)"


def test_missing_column_lists_available_columns():
    data = design("random_intercept").drop(columns="cond")
    with pytest.raises(DataValidationError, match=r"\['cond'\].*available columns \['subject', 'x', 'y'\]"):
        fit_lmm(FORMULA, data, backend="statsmodels")


def test_constant_response_is_an_error():
    data = design("random_intercept").assign(y=3.0)
    with pytest.raises(DataValidationError, match="column 'y'.*constant.*3.0"):
        fit_lmm(FORMULA, data, backend="statsmodels")


def test_one_level_factor_is_an_error():
    data = design("random_intercept").assign(cond="pro")
    with pytest.raises(DataValidationError, match="column 'cond'.*factor 'cond'.*single level.*'pro'"):
        fit_lmm(FORMULA, data, backend="statsmodels")


def test_one_level_grouping_factor_is_an_error():
    data = design("random_intercept").assign(subject="s01")
    with pytest.raises(DataValidationError, match="grouping factor 'subject'.*single level"):
        fit_lmm(FORMULA, data, backend="statsmodels")


def test_non_binary_response_to_binomial_glmm_is_an_error():
    data = design("binomial_glmm")
    data.loc[5, "correct"] = 2
    with pytest.raises(DataValidationError, match=r"column 'correct'.*1 row.*index 5.*values 2"):
        fit_glmm(MODELS["binomial_glmm"]["formula"], data, backend="statsmodels")


def test_string_response_to_lmm_is_an_error():
    data = design("random_intercept").assign(y="fast")
    with pytest.raises(DataValidationError, match="numeric response"):
        fit_lmm(FORMULA, data, backend="statsmodels")


def test_missing_values_are_counted_dropped_and_warned():
    data = design("random_intercept")
    data.loc[[3, 10], "y"] = np.nan
    data.loc[10, "x"] = np.nan        # same row as a missing y: one row, not two
    data.loc[20, "cond"] = None
    data["unused"] = np.nan           # a column the formula does not use is ignored
    result = fit_lmm(FORMULA, data, backend="statsmodels")
    assert result.fit_stats["n_dropped_na"] == 3
    assert result.fit_stats["nobs"] == len(data) - 3
    assert [(e["reason"], e["n"]) for e in result.fit_stats["exclusions"]] == [
        ("missing value in a formula column", 3)]
    assert any("dropped 3 of 300 rows" in w and "'y': 2" in w for w in result.warnings)
    complete = fit_lmm(FORMULA, data.drop(index=[3, 10, 20]).drop(columns="unused"),
                       backend="statsmodels")
    pd.testing.assert_frame_equal(result.coefs, complete.coefs)


def test_mixed_model_needs_a_random_term():
    with pytest.raises(GbstatsError, match="no random term"):
        fit_lmm("y ~ x", design("random_intercept"), backend="statsmodels")


def test_unknown_backend_and_family_are_errors():
    with pytest.raises(GbstatsError, match="unknown backend 'lmer'"):
        fit_lmm(FORMULA, design("random_intercept"), backend="lmer")
    with pytest.raises(GbstatsError, match="family 'poisson'"):
        fit_glmm(FORMULA, design("random_intercept"), family="poisson")


# --------------------------------------------------------------------------
# explicit simplification

def test_refit_simpler_records_what_it_dropped():
    data = design("crossed")
    result = refit_simpler(MODELS["crossed"]["formula"], data, drop=["(1 | item)"],
                           backend="statsmodels")
    assert result.formula == "y ~ cond + (1 | subject)"
    assert result.fit_stats["refit_from"] == MODELS["crossed"]["formula"]
    assert result.fit_stats["dropped_random_terms"] == ["(1 | item)"]
    assert result.warnings[0].startswith("explicit refit:")
    direct = fit_lmm("y ~ cond + (1 | subject)", data, backend="statsmodels")
    pd.testing.assert_frame_equal(result.coefs, direct.coefs)


def test_refit_simpler_rejects_unknown_or_all_terms():
    with pytest.raises(FormulaError, match=r"no random term\(s\) \['\(1\|item\)'\]"):
        refit_simpler(MODELS["random_slope"]["formula"], design("random_slope"), drop=["(1|item)"],
                      backend="statsmodels")
    with pytest.raises(GbstatsError, match="leaves no random term"):
        refit_simpler(MODELS["random_slope"]["formula"], design("random_slope"),
                      drop=["1 + x | subject"], backend="statsmodels")


def test_infinite_values_are_errors_not_dropped():
    data = design("random_intercept")
    data.loc[7, "x"] = np.inf
    with pytest.raises(DataValidationError, match="column 'x'.*infinite.*index 7"):
        fit_lmm(FORMULA, data, backend="statsmodels")


@pytest.mark.parametrize("written", ["x | subject", "(1 + x|subject)", "1+x | subject"])
def test_refit_simpler_matches_random_terms_however_written(written):
    parsed = parse_formula("y ~ x + (1 + x | subject) + (1 | item)")
    assert parsed.without_random([written]).text == "y ~ x + (1 | item)"


@pytest.mark.needs_r
def test_lme4_errors_come_back_as_gbstats_errors():
    # One observation per subject: lme4 refuses a random intercept that is
    # confounded with the residual ("number of levels of each grouping factor
    # must be < number of observations").
    data = design("random_intercept").drop_duplicates("subject")
    with pytest.raises(GbstatsError, match="lme4 could not fit.*number of levels"):
        fit_lmm(FORMULA, data, backend="lme4")


@settings(max_examples=40, deadline=None)
@given(k_a=st.integers(2, 5), k_b=st.integers(2, 4), reps=st.integers(1, 3),
       order=st.sampled_from(["a * b", "b * a", "a + b + a:b", "a:b + b + a"]))
def test_full_factorial_design_has_one_column_per_cell(k_a, k_b, reps, order):
    # With treatment contrasts, a*b has 1 + (ka-1) + (kb-1) + (ka-1)(kb-1)
    # = ka*kb columns, and on a design with every cell present the matrix has
    # full rank: exactly one parameter per cell mean, whatever the writing order.
    cells = [(f"a{i}", f"b{j}") for i in range(k_a) for j in range(k_b)] * reps
    data = pd.DataFrame(cells, columns=["a", "b"])
    parsed = parse_formula(f"y ~ {order}")
    levels = {"a": sorted(data["a"].unique()), "b": sorted(data["b"].unique())}
    mm = model_matrix(parsed.intercept, parsed.fixed_terms, data, levels)
    assert mm.shape[1] == k_a * k_b
    assert np.linalg.matrix_rank(mm.to_numpy()) == k_a * k_b
    assert list(mm.columns[:1]) == ["(Intercept)"] and mm.columns[-1].count(":") == 1


# --------------------------------------------------------------------------
# choosing lme4's optimizer (explicitly; never done behind the user's back)

@pytest.mark.needs_r
@pytest.mark.parametrize("name, optimizer", [("random_intercept", "Nelder_Mead"),
                                             ("binomial_glmm", "bobyqa")])
def test_other_lme4_optimizer_reaches_the_same_optimum(name, optimizer):
    """On these regular models every optimizer converges to the reference
    optimum; rtol 1e-3 is the optimizers' own convergence tolerance scale,
    looser than the same-optimizer 1e-4 above."""
    result = fitter(name)(MODELS[name]["formula"], design(name), backend="lme4",
                          optimizer=optimizer)
    ref = ref_fixed(name)
    np.testing.assert_allclose(result.coefs["estimate"], ref["estimate"], rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(result.coefs["se"], ref["se"], rtol=1e-3)
    assert result.fit_stats["optimizer"] == optimizer


def test_unknown_optimizer_is_named():
    with pytest.raises(GbstatsError, match="not an lme4 optimizer"):
        fit_lmm(MODELS["random_intercept"]["formula"], design("random_intercept"),
                backend="statsmodels", optimizer="adam")


def test_optimizer_on_statsmodels_backend_says_use_lme4():
    with pytest.raises(GbstatsError, match="use backend='lme4'"):
        fit_lmm(MODELS["random_intercept"]["formula"], design("random_intercept"),
                backend="statsmodels", optimizer="bobyqa")

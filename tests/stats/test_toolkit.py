"""The statistician's toolkit against R: contrasts, compare_models,
marginal_means, random_effects and r2_nakagawa.

Reference values: tests/reference/toolkit_refs.json, written by
`Rscript tests/reference/make_toolkit_refs.R` (lme4, lmerTest, emmeans,
performance; versions in the JSON) from the seeded CSVs of
tests/reference/make_data.py. Tolerances are the lme4 tests' own: rtol 1e-4
for estimates, 1e-3 for SEs (same engine, so a difference is our bridge);
statsmodels is compared looser where its optimiser or SE formula differs,
with the reason beside the tolerance.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from gbstats.mixed.compare import compare_models
from gbstats.mixed.contrasts import resolve_contrasts
from gbstats.errors import GbstatsError
from gbstats.mixed.formula import fixed_effect_names, parse_formula
from gbstats.mixed.lmm import fit_glmm, fit_lmm, fit_notes
from gbstats.mixed.marginal import _adjusted, holm, marginal_means
from gbstats.mixed.ranef import r2_nakagawa, random_effects
from gbstats.report.latex import to_latex_table
from tolerances import monte_carlo_close

REF_DIR = Path(__file__).resolve().parents[1] / "reference"
REFS = json.loads((REF_DIR / "toolkit_refs.json").read_text())
MODELS = REFS["models"]
RTOL_EST, RTOL_SE = 1e-4, 1e-3
# glmer itself is not reproducible to 1e-4 from one R process to the next: on
# this machine the factorial GLMM's intercept is -0.13995377 in some processes
# and -0.13993624 in others (same data, same call, even with one BLAS thread),
# so GLMM estimates are compared at 1e-3 (with an absolute floor for values
# near zero) and SEs at the usual 1e-3.
RTOL_GLMM_EST, ATOL_GLMM_EST = 1e-3, 1e-4
STANCE_MATRIX = pd.DataFrame(REFS["stance_matrix"]["rows"], index=REFS["stance_matrix"]["levels"],
                             columns=REFS["stance_matrix"]["names"])


def data(name: str) -> pd.DataFrame:
    return pd.read_csv(REF_DIR / MODELS[name]["data"])


def contrasts_of(name: str) -> dict:
    """The R script's contrasts, in gbstats' spelling ("sum" or the matrix)."""
    given = MODELS[name]["contrasts"] or {}  # jsonlite writes an empty list for none
    return {v: STANCE_MATRIX if c == "matrix" else c for v, c in given.items()}


@lru_cache(maxsize=None)
def fit(name: str, backend: str = "lme4"):
    spec = MODELS[name]
    fitter = fit_lmm if spec["family"] == "gaussian" else fit_glmm
    return fitter(spec["formula"], data(name), backend=backend, contrasts=contrasts_of(name))


def ref_table(rows) -> pd.DataFrame:
    """Records from the JSON as a frame; R's NA (JSON null) becomes NaN in numeric columns."""
    table = pd.DataFrame(rows)
    for col in table.columns:
        if table[col].map(lambda v: v is None or isinstance(v, (int, float))).all():
            table[col] = table[col].astype(float)
    return table


# --------------------------------------------------------------------------
# contrasts

@pytest.mark.parametrize("name", [n for n in MODELS if MODELS[n]["contrasts"]])
def test_contrast_term_names_match_r(name):
    d = data(name)
    parsed = parse_formula(MODELS[name]["formula"])
    levels = {v: sorted(d[v].unique()) for v in parsed.predictors if d[v].dtype == object}
    codings = resolve_contrasts(contrasts_of(name), levels)
    assert fixed_effect_names(parsed, d, codings) == [r["term"] for r in MODELS[name]["fixed"]]


@pytest.mark.needs_r
@pytest.mark.parametrize("name", ["fact_lmm_sum", "fact_lmm_matrix", "fact_glmm_sum", "ri_sum",
                                  "fact_lmm_treat"])
def test_lme4_contrast_coded_fits_match_r(name):
    result, ref = fit(name), ref_table(MODELS[name]["fixed"])
    assert list(result.coefs["term"]) == list(ref["term"])
    rtol, atol = (RTOL_EST, 1e-8) if MODELS[name]["family"] == "gaussian" else (RTOL_GLMM_EST, ATOL_GLMM_EST)
    np.testing.assert_allclose(result.coefs["estimate"], ref["estimate"], rtol=rtol, atol=atol)
    np.testing.assert_allclose(result.coefs["se"], ref["se"], rtol=RTOL_SE)
    np.testing.assert_allclose(result.coefs["stat"], ref["stat"], rtol=RTOL_SE)
    np.testing.assert_allclose(result.coefs["p_value"], ref["p_value"], rtol=1e-3)
    # LMM: t intervals with Satterthwaite df; GLMM: Wald z (see make_toolkit_refs.R)
    np.testing.assert_allclose(result.coefs["ci_low"], ref["ci_low"], rtol=RTOL_SE, atol=1e-6)
    np.testing.assert_allclose(result.coefs["ci_high"], ref["ci_high"], rtol=RTOL_SE, atol=1e-6)
    for key in ("loglik", "aic", "bic"):
        np.testing.assert_allclose(result.fit_stats[key], MODELS[name][key], rtol=1e-6)


def test_statsmodels_sum_coding_matches_r():
    result, ref = fit("ri_sum", "statsmodels"), ref_table(MODELS["ri_sum"]["fixed"])
    assert list(result.coefs["term"]) == ["(Intercept)", "x", "cond1", "cond2"]
    # same REML optimum, another optimiser: estimates to 1e-4; SEs differ by
    # design (statsmodels inverts the joint information, see test_lmm.py)
    np.testing.assert_allclose(result.coefs["estimate"], ref["estimate"], rtol=1e-4)
    np.testing.assert_allclose(result.coefs["se"], ref["se"], rtol=1e-2)


def test_sum_coding_is_a_reparametrisation_of_treatment_coding():
    """By hand: with treatment coding the cell means of cond (anti, neutral,
    pro; x = 0) are b0, b0 + b1, b0 + b2. contr.sum codes anti = (1, 0),
    neutral = (0, 1), pro = (-1, -1), so its intercept is their mean,
    b0 + (b1 + b2) / 3, cond1 = anti - mean = -(b1 + b2) / 3 and
    cond2 = neutral - mean = b1 - (b1 + b2) / 3.

    The REML log-likelihood is not invariant: it holds -1/2 log|X' V^-1 X|,
    and X_sum = X_treat A with A's columns the sum-coded columns written in
    treatment terms: (1, 0, 0), anti - pro = (1, -1, -2), neutral - pro =
    (0, 1, -1) over (1, neutral, pro); det A = 1 x ((-1)(-1) - (1)(-2)) = 3,
    so the sum-coded REML log-likelihood is lower by log|det A| = log 3."""
    d = data("ri_treat")
    treat = fit_lmm("y ~ x + cond + (1 | subject)", d, backend="statsmodels")
    summed = fit_lmm("y ~ x + cond + (1 | subject)", d, backend="statsmodels", contrasts={"cond": "sum"})
    b0, b1, b2 = (treat.coef(t)["estimate"] for t in ("(Intercept)", "condneutral", "condpro"))
    expected = [b0 + (b1 + b2) / 3, -(b1 + b2) / 3, b1 - (b1 + b2) / 3]
    got = [summed.coef(t)["estimate"] for t in ("(Intercept)", "cond1", "cond2")]
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    np.testing.assert_allclose(summed.fit_stats["loglik"], treat.fit_stats["loglik"] - np.log(3),
                               rtol=1e-7)


def test_coding_is_recorded_and_shown_in_table_notes():
    result = fit("ri_sum", "statsmodels")
    assert result.fit_stats["contrasts"]["cond"]["kind"] == "sum"
    assert result.fit_stats["contrasts"]["cond"]["matrix"] == [[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]
    notes = fit_notes(result)
    assert "contr.sum" in notes[0] and "Wald z" in notes[1]
    latex = to_latex_table(result.coefs, "Sum-coded fit", "tab:sum", notes=notes)
    assert "contr.sum" in latex and "deviations from the mean of the level means" in latex
    treat = fit_lmm("y ~ x + cond + (1 | subject)", data("ri_treat"), backend="statsmodels")
    assert "treatment (reference level 'anti')" in fit_notes(treat)[0]


@pytest.mark.parametrize("contrasts, message", [
    ({"stance": "sum"}, r"\['stance'\], which is not a factor.*factors are \['cond'\]"),
    ({"x": "sum"}, "not a factor"),
    ({"cond": "helmert"}, "unknown contrast 'helmert'.*'treatment', 'sum'"),
    ({"cond": np.ones((3, 1))}, r"shape \(3, 1\); expected 3 rows.*2 columns"),
    ({"cond": [[1, 1], [2, 2], [3, 3]]}, "not of full rank"),
    ({"cond": pd.DataFrame([[1, 0], [0, 1], [-1, -1]], index=["a", "b", "c"])}, "must list the factor's levels"),
])
def test_bad_contrasts_are_named(contrasts, message):
    with pytest.raises(GbstatsError, match=message):
        fit_lmm("y ~ x + cond + (1 | subject)", data("ri_treat"), backend="statsmodels",
                contrasts=contrasts)


# --------------------------------------------------------------------------
# model comparison

LRT_COLUMNS = ["npar", "aic", "bic", "loglik", "deviance", "chisq", "df", "p_value"]


@pytest.mark.needs_r
@pytest.mark.parametrize("case", ["fixed_interaction", "random_item", "glmm_interaction", "single_group"])
def test_lrt_matches_lme4_anova(case):
    spec = REFS["lrt"][case]
    comparison = compare_models(fit(spec["small"]), fit(spec["large"]))
    ref = ref_table(spec["table"])
    assert comparison.method == "likelihood-ratio test"
    assert list(comparison.table["npar"]) == list(ref["npar"])
    for col in ["aic", "bic", "loglik", "deviance"]:
        np.testing.assert_allclose(comparison.table[col], ref[col], rtol=1e-6)
    np.testing.assert_allclose(comparison.table["chisq"].iloc[1], ref["chisq"].iloc[1], rtol=1e-4)
    assert comparison.table["df"].iloc[1] == ref["df"].iloc[1]
    np.testing.assert_allclose(comparison.table["p_value"].iloc[1], ref["p_value"].iloc[1], rtol=1e-3)
    if MODELS[spec["large"]]["family"] == "gaussian":
        assert any("refitted by maximum likelihood" in n for n in comparison.notes)
    assert any("boundary" in n for n in comparison.notes) == (case == "random_item")


def test_statsmodels_lrt_matches_lme4_anova():
    spec = REFS["lrt"]["single_group"]
    comparison = compare_models(fit("ri_small", "statsmodels"), fit("ri_treat", "statsmodels"))
    ref = ref_table(spec["table"])
    assert list(comparison.table["npar"]) == list(ref["npar"])
    # the same ML optimum from another optimiser
    np.testing.assert_allclose(comparison.table["loglik"], ref["loglik"], rtol=1e-6)
    np.testing.assert_allclose(comparison.table["aic"], ref["aic"], rtol=1e-6)
    np.testing.assert_allclose(comparison.table["chisq"].iloc[1], ref["chisq"].iloc[1], rtol=1e-3)
    np.testing.assert_allclose(comparison.table["p_value"].iloc[1], ref["p_value"].iloc[1], rtol=1e-2)


def test_compare_models_refuses_models_that_are_not_nested():
    small, large = fit("ri_small", "statsmodels"), fit("ri_treat", "statsmodels")
    with pytest.raises(GbstatsError, match=r"small \('y ~ x \+ cond.*is not nested in large.*"
                                           r"\['condneutral', 'condpro'\].*smaller model first"):
        compare_models(large, small)
    with pytest.raises(GbstatsError, match="same parameters"):
        compare_models(small, small)


def test_compare_models_refuses_different_rows():
    d = data("ri_treat")
    d["w"] = np.arange(len(d), dtype=float)
    d.loc[[4, 9], "w"] = np.nan
    small = fit_lmm("y ~ x + (1 | subject)", d, backend="statsmodels")
    large = fit_lmm("y ~ x + w + (1 | subject)", d, backend="statsmodels")
    with pytest.raises(GbstatsError, match=r"different rows \(300 rows for small, 298 for large: "
                                           r"2 row\(s\) only in small \(first index 4\)"):
        compare_models(small, large)


def test_compare_models_refuses_other_codings_and_backends():
    d = data("ri_treat")
    small = fit_lmm("y ~ cond + (1 | subject)", d, backend="statsmodels", contrasts={"cond": "sum"})
    large = fit_lmm("y ~ x + cond + (1 | subject)", d, backend="statsmodels")
    with pytest.raises(GbstatsError, match=r"\['cond'\] are coded differently"):
        compare_models(small, large)


# --------------------------------------------------------------------------
# marginal means

def _compare_emmeans(result, ref, keys, rtol_se=RTOL_SE, glmm=False):
    ref = ref_table(ref)
    value = next(c for c in ("emmean", "prob", "estimate") if c in ref.columns)
    for key in keys:
        assert list(result[key]) == list(ref[key].astype(str)), key
    rtol, atol = (RTOL_GLMM_EST, ATOL_GLMM_EST) if glmm else (RTOL_EST, 1e-8)
    np.testing.assert_allclose(result["estimate"], ref[value], rtol=rtol, atol=atol)
    np.testing.assert_allclose(result["se"], ref["SE"], rtol=rtol_se)
    low = "lower.CL" if "lower.CL" in ref.columns else "asymp.LCL"
    high = "upper.CL" if "upper.CL" in ref.columns else "asymp.UCL"
    atol_ci = max(1e-4 * rtol_se / RTOL_SE, atol)
    np.testing.assert_allclose(result["ci_low"], ref[low], rtol=rtol_se, atol=atol_ci)
    np.testing.assert_allclose(result["ci_high"], ref[high], rtol=rtol_se, atol=atol_ci)
    if ref["df"].notna().all():
        np.testing.assert_allclose(result["df"], ref["df"], rtol=1e-3)
    else:
        assert result["df"].isna().all()
    # p-values far in the tail magnify an SE difference, so compare log p
    # (a p-value that underflows to 0 in R must do so here too: log 0 = -inf)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(np.log(result["p_value"]), np.log(ref["p.value"]),
                                   rtol=1e-3 * rtol_se / RTOL_SE)


@pytest.mark.needs_r
@pytest.mark.parametrize("case", [c for c in REFS["emmeans"] if not c.startswith("single_group_")])
def test_lme4_marginal_means_match_emmeans(case):
    spec = REFS["emmeans"][case]
    specs = spec["specs"] if isinstance(spec["specs"], list) else [spec["specs"]]
    by = spec["by"] if isinstance(spec["by"], list) else [spec["by"]]
    result = marginal_means(fit(spec["model"]), specs, by=by, scale=spec["type"], adjust=spec["adjust"],
                            reverse=spec["reverse"])
    glmm = MODELS[spec["model"]]["family"] != "gaussian"
    _compare_emmeans(result.means, spec["means"], specs + by, glmm=glmm)
    _compare_emmeans(result.contrasts, spec["contrasts"], ["contrast"] + by, glmm=glmm)
    assert result.backend == "lme4" and result.adjust == spec["adjust"]
    to_latex_table(result.contrasts, "Pairwise contrasts", "tab:pairs", notes=result.notes)


@pytest.mark.parametrize("adjust", ["none", "tukey", "holm"])
def test_statsmodels_marginal_means_match_emmeans(adjust):
    spec = REFS["emmeans"][{"none": "single_group_asymptotic", "tukey": "single_group_tukey",
                            "holm": "single_group_holm"}[adjust]]
    result = marginal_means(fit("ri_treat", "statsmodels"), "cond", adjust=adjust)
    reversed_ = marginal_means(fit("ri_treat", "statsmodels"), "cond", adjust=adjust, reverse=True)
    assert list(reversed_.contrasts["contrast"]) == ["neutral - anti", "pro - anti", "pro - neutral"]
    np.testing.assert_allclose(reversed_.contrasts["estimate"], -result.contrasts["estimate"])
    # statsmodels' SEs differ from lme4's by up to 0.2% on this design (see
    # test_lmm.py), hence rtol 1e-2 on SEs, intervals and p-values
    _compare_emmeans(result.means, spec["means"], ["cond"], rtol_se=1e-2)
    _compare_emmeans(result.contrasts, spec["contrasts"], ["contrast"], rtol_se=1e-2)


@pytest.mark.parametrize("adjust", ["tukey", "holm"])
def test_adjustments_equal_emmeans_given_the_same_z(adjust):
    """The adjustment alone, exactly: emmeans' unadjusted z ratios in, its
    adjusted p-values and interval half-widths out."""
    raw = ref_table(REFS["emmeans"]["single_group_asymptotic"]["contrasts"])
    adjusted = ref_table(REFS["emmeans"][f"single_group_{adjust}"]["contrasts"])
    table = pd.DataFrame({"stat": raw["z.ratio"], "_family": [()] * 3, "_k": 3})
    p, half = _adjusted(table, raw["p.value"].to_numpy(), raw["SE"].to_numpy(), adjust, 0.95)
    np.testing.assert_allclose(p, adjusted["p.value"], rtol=1e-4)
    np.testing.assert_allclose(half, adjusted["asymp.UCL"] - adjusted["estimate"], rtol=1e-4)


def test_holm_by_hand():
    # p = (.01, .04, .03): sorted .01, .03, .04 times 3, 2, 1 = .03, .06, .04,
    # made monotone: .03, .06, .06
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])


def test_marginal_means_requests_are_checked():
    result = fit("ri_treat", "statsmodels")
    with pytest.raises(GbstatsError, match=r"\['x'\] not factor.*factors are \['cond'\]"):
        marginal_means(result, "x")
    with pytest.raises(GbstatsError, match="adjust 'bonferroni'"):
        marginal_means(result, "cond", adjust="bonferroni")


# --------------------------------------------------------------------------
# random effects, R2, ICC

@pytest.mark.needs_r
@pytest.mark.parametrize("case", ["slope", "crossed", "glmm"])
def test_lme4_random_effects_match_ranef_condvar(case):
    ref = REFS["ranef"][case]
    table = random_effects(fit(ref["model"]))
    vals = table[table["effect"] == "ran_vals"].reset_index(drop=True)
    want = ref_table(ref["ran_vals"])
    assert list(vals["group"]) == list(want["group"]) and list(vals["level"]) == list(want["level"])
    assert list(vals["term"]) == list(want["term"])
    glmm = MODELS[ref["model"]]["family"] != "gaussian"
    rtol, atol = (RTOL_GLMM_EST, ATOL_GLMM_EST) if glmm else (RTOL_EST, 1e-7)
    np.testing.assert_allclose(vals["estimate"], want["estimate"], rtol=rtol, atol=atol)
    np.testing.assert_allclose(vals["se"], want["se"], rtol=RTOL_SE)
    pars = table[table["effect"] == "ran_pars"]
    np.testing.assert_allclose(pars["estimate"], ref_table(ref["ran_pars"])["sdcor"], rtol=RTOL_SE)
    fixed = table[table["effect"] == "fixed"]
    assert list(fixed["term"]) == [r["term"] for r in MODELS[ref["model"]]["fixed"]]


def test_statsmodels_random_effects_match_ranef_condvar():
    ref = REFS["ranef"]["slope"]
    table = random_effects(fit("slope", "statsmodels"))
    vals = table[table["effect"] == "ran_vals"].reset_index(drop=True)
    want = ref_table(ref["ran_vals"])
    assert list(vals["term"]) == list(want["term"]) and list(vals["level"]) == list(want["level"])
    # same REML optimum, another optimiser
    np.testing.assert_allclose(vals["estimate"], want["estimate"], rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(vals["se"], want["se"], rtol=1e-3)
    pars = table[table["effect"] == "ran_pars"]
    assert list(pars["term"]) == ["sd__(Intercept)", "sd__x", "cor__(Intercept).x", "sd__Observation"]
    np.testing.assert_allclose(pars["estimate"], ref_table(ref["ran_pars"])["sdcor"], rtol=1e-3)


@pytest.mark.needs_r
@pytest.mark.parametrize("name", list(REFS["r2_icc"]))
def test_lme4_r2_and_icc_match_performance(name):
    got, want = r2_nakagawa(fit(name)), REFS["r2_icc"][name]
    rtol = RTOL_EST if MODELS[name]["family"] == "gaussian" else RTOL_GLMM_EST
    for key in ("r2_marginal", "r2_conditional", "icc_adjusted", "icc_unadjusted"):
        np.testing.assert_allclose(got[key], want[key], rtol=rtol, err_msg=key)


@pytest.mark.parametrize("name", ["ri_treat", "slope"])
def test_statsmodels_r2_and_icc_match_performance(name):
    got, want = r2_nakagawa(fit(name, "statsmodels")), REFS["r2_icc"][name]
    for key in ("r2_marginal", "r2_conditional", "icc_adjusted", "icc_unadjusted"):
        np.testing.assert_allclose(got[key], want[key], rtol=1e-3, err_msg=key)


# --------------------------------------------------------------------------
# t intervals for lme4 LMMs (issue 19, item 9): coverage by simulation

@pytest.mark.slow
@pytest.mark.needs_r
def test_satterthwaite_t_interval_coverage():
    """A between-group effect with 8 groups: z intervals undercover (their
    df is infinite where the information is that of ~6 groups), t intervals
    with the Satterthwaite df hold 95%. 300 simulated data sets; a 95%
    interval's coverage estimate then has SE ~1.3 points, so 0.92 is a
    3-SE lower bound."""
    rng = np.random.default_rng(19)
    n_sims, hits_t, hits_z = 300, 0, 0
    for _ in range(n_sims):
        g = np.repeat(np.arange(8), 6)
        treated = (g % 2).astype(float)
        y = 0.5 * treated + rng.normal(0, 1.0, 8)[g] + rng.normal(0, 0.5, g.size)
        d = pd.DataFrame({"g": [f"g{i}" for i in g], "treated": treated, "y": y})
        row = fit_lmm("y ~ treated + (1 | g)", d, backend="lme4").coef("treated")
        hits_t += row["ci_low"] <= 0.5 <= row["ci_high"]
        half_z = stats.norm.ppf(0.975) * row["se"]
        hits_z += row["estimate"] - half_z <= 0.5 <= row["estimate"] + half_z
    print(f"coverage of 95% intervals over {n_sims} data sets: t (Satterthwaite df) "
          f"{hits_t / n_sims:.3f}, z {hits_z / n_sims:.3f}")
    assert hits_t / n_sims >= 0.92, hits_t / n_sims
    assert hits_t > hits_z


# --------------------------------------------------------------------------
# Bayesian fits: contrasts, marginal means from draws, LOO comparison

BAYES = {"draws": 1000, "tune": 1000, "chains": 2, "seed": 17}
SUM = {"close": "sum", "stance": "sum"}


@pytest.fixture(scope="module")
def bayes_fits():
    """The factorial LMM with and without the interaction, sum-coded (one
    bambi sampling each; LOO stored by fit_bayes for the large model and
    computed by compare_models for the small one)."""
    from gbstats.mixed.bayes import fit_bayes

    d = data("fact_lmm_sum")
    large = fit_bayes(MODELS["fact_lmm_sum"]["formula"], d, contrasts=SUM, **BAYES)
    small = fit_bayes(MODELS["fact_lmm_add"]["formula"], d, contrasts=SUM, loo=False, **BAYES)
    return small, large


def test_bayes_sum_coding_agrees_with_lme4(bayes_fits):
    _, large = bayes_fits
    ref = ref_table(MODELS["fact_lmm_sum"]["fixed"])
    assert list(large.coefs["term"]) == list(ref["term"])  # close1, stance1, close1:stance2, ...
    assert large.fit_stats["contrasts"]["stance"]["kind"] == "sum"
    # well-identified data, weak priors: posterior means within 0.3 posterior SD of
    # lme4's REML estimates, and posterior SDs within 20% of lme4's SEs
    assert np.all(np.abs(large.coefs["estimate"] - ref["estimate"]) < 0.3 * large.coefs["se"])
    np.testing.assert_allclose(large.coefs["se"], ref["se"], rtol=0.2)


def test_bayes_marginal_means_agree_with_emmeans(bayes_fits):
    _, large = bayes_fits
    spec = REFS["emmeans"]["stance_by_close_sum"]
    result = marginal_means(large, "stance", by="close")
    for got, want in ((result.means, ref_table(spec["means"])), (result.contrasts, ref_table(spec["contrasts"]))):
        value = "emmean" if "emmean" in want.columns else "estimate"
        assert np.all(np.abs(got["estimate"] - want[value]) < 0.3 * got["se"])
        np.testing.assert_allclose(got["se"], want["SE"], rtol=0.2)
        assert got["p_value"].isna().all() and (got["ci_low"] < got["estimate"]).all()
    assert result.adjust == "none" and any("posterior draws" in n for n in result.notes)


def test_bayes_loo_comparison_runs_with_diagnostics(bayes_fits):
    small, large = bayes_fits
    comparison = compare_models(small, large)
    table = comparison.table
    assert comparison.method == "PSIS-LOO"
    # the interaction is real (LRT chi2(2) = 24.4 in toolkit_refs.json): the large model ranks first
    assert list(table["model"]) == ["large", "small"]
    assert table["elpd_diff"].iloc[0] == 0 and table["elpd_diff"].iloc[1] < 0
    assert table["se_diff"].iloc[1] > 0
    np.testing.assert_allclose(table["looic"], -2 * table["elpd_loo"])
    assert large.fit_stats["elpd_loo"] == pytest.approx(table["elpd_loo"].iloc[0])
    # every observation is counted in at most one Pareto-k band, and a count
    # above ArviZ's threshold comes with a warning naming the fit
    nobs = small.fit_stats["nobs"]
    assert ((table["n_pareto_k_high"] + table["n_pareto_k_ok"]) <= nobs).all()
    for row in table.itertuples():
        warned = any(w.startswith(f"PSIS-LOO for {row.model} ") and "Pareto k >" in w
                     for w in comparison.warnings)
        assert warned == (row.n_pareto_k_high > 0)


def test_bayes_random_effects_agree_with_lme4_conditional_modes(bayes_fits):
    _, large = bayes_fits
    table = random_effects(large)
    vals = table[table["effect"] == "ran_vals"]
    want = ref_table(REFS["ranef"]["crossed"]["ran_vals"])
    merged = vals.merge(want, on=["group", "level", "term"], suffixes=("", "_lme4"))
    assert len(merged) == len(want) == 24 + 36
    assert np.corrcoef(merged["estimate"], merged["estimate_lme4"])[0, 1] > 0.99
    # A posterior SD is a Monte Carlo estimate, and not lme4's conditional SD either (that
    # one holds the variance parameters fixed). Each is compared within 25% of lme4's SD
    # (the difference between the two quantities) plus 4 Monte Carlo standard errors of
    # the posterior SD (ArviZ's mcse(method="sd")): issue 24 saw 0.2097 vs 0.1677 on another
    # machine, 25.04% off, compared without its Monte Carlo error.
    mcse = posterior_sd_mcse(large)
    merged = merged.merge(mcse, on=["group", "level", "term"])
    assert len(merged) == 60 and (merged["mcse_sd"] > 0).all()
    outside = [row for row in merged.itertuples()
               if not monte_carlo_close(row.se, row.se_lme4, row.mcse_sd, k=4.0, model_rtol=0.25)]
    assert not outside, outside
    # and the rule does fail: a posterior SD 40% off lme4's is outside it
    row = merged.iloc[0]
    assert not monte_carlo_close(1.4 * row.se_lme4, row.se_lme4, row.mcse_sd, k=4.0, model_rtol=0.25)


def posterior_sd_mcse(fit) -> pd.DataFrame:
    """ArviZ's Monte Carlo standard error of each random effect's posterior SD, keyed like
    random_effects' ran_vals rows (group, level, term)."""
    import arviz as az

    from gbstats.mixed.bayes import group_term_labels, r_term_name

    post = fit.idata.posterior
    rows = []
    # arviz 0.23's numba path of mcse(method="sd") fails on an array ("only 0-dimensional
    # arrays can be converted"); its plain NumPy path computes the same formula
    numba_was_on = az.Numba.numba_flag
    az.Numba.disable_numba()
    try:
        mcse_all = az.mcse(post, method="sd")
    finally:
        if numba_was_on:
            az.Numba.enable_numba()
    for name, (factor, labels) in group_term_labels(fit.handle.native).items():
        mcse = mcse_all[name]
        # levels on the last dimension, as gbstats.mixed.ranef reads the draws
        level_dim = list(mcse.dims)[-1]
        values = mcse.values.reshape(len(mcse[level_dim]), len(labels))
        for j, label in enumerate(labels):
            for i, level in enumerate(mcse[level_dim].values):
                rows.append({"group": factor, "level": str(level), "term": r_term_name(label),
                             "mcse_sd": float(values[i, j])})
    return pd.DataFrame(rows)


def test_toolkit_names_are_exported_as_functions():
    """`from gbstats import random_effects` must give the function even after
    its module has been imported (a module named like the function would
    shadow it as an attribute of the package)."""
    import importlib

    import gbstats

    for module in ("gbstats.mixed.ranef", "gbstats.mixed.compare", "gbstats.mixed.marginal", "gbstats.mixed.contrasts"):
        importlib.import_module(module)
    for name in ("compare_models", "marginal_means", "random_effects", "r2_nakagawa", "fit_notes",
                 "resolve_contrasts"):
        assert callable(getattr(gbstats, name)), name

"""The model table (gbstats.report.model_table) against R: its numbers are lme4's.

Reference values were recorded by R scripts in tests/reference/ (R 4.2.2, lme4, lmerTest,
performance), not by this code:
- lme4_refs.json (make_refs.R): fixed effects, variance components, logLik, AIC, nobs;
- toolkit_refs.json (make_toolkit_refs.R): VarCorr's SDs and correlation of the random-slope
  model, and performance::r2_nakagawa's R².
A cell shows a reference value rounded to the table's decimals (three for every estimate
below 10 in size, one for log-likelihood and AIC: the module docstring's rules), so each
test rounds the R value the same way and compares strings. Term labels are derived by hand
from the coding matrices (each expected label says how).
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gbstats.mixed.results import COEF_COLUMNS, FitResult
from gbstats.report.latex import render_latex
from gbstats.report.markdown import render_markdown
from gbstats.report.model_table import model_table, term_label, codings_of, predictors_of
from gbstats.report.table_grammar import grammar_problems

REF = Path(__file__).resolve().parents[1] / "reference"
LME4 = json.loads((REF / "lme4_refs.json").read_text())["models"]
TOOLKIT = json.loads((REF / "toolkit_refs.json").read_text())

needs_r = pytest.mark.needs_r


@lru_cache(maxsize=None)
def lme4_fit(name: str, backend: str = "lme4"):
    from gbstats.mixed.lmm import fit_glmm, fit_lmm

    ref = LME4[name]
    data = pd.read_csv(REF / ref["data"])
    fitter = fit_lmm if ref["family"] == "gaussian" else fit_glmm
    return fitter(ref["formula"], data, backend=backend)


@lru_cache(maxsize=None)
def factorial_fit(coding: str):
    from gbstats.mixed.contrasts import CenteredHelmert
    from gbstats.mixed.lmm import fit_lmm

    data = pd.read_csv(REF / "factorial.csv")
    stance = TOOLKIT["stance_matrix"]
    contrasts = {
        "treatment": None,
        "sum": {"close": "sum", "stance": "sum"},
        "matrix": {"stance": pd.DataFrame(stance["rows"], index=stance["levels"],
                                          columns=stance["names"])},
        "helmert": {"stance": CenteredHelmert(reference=("anti", "neutral"))},
    }[coding]
    formula = ("y ~ close * stance + (1 | subject) + (1 | item)" if coding in ("treatment", "sum")
               else "y ~ close + stance + (1 | subject) + (1 | item)")
    return fit_lmm(formula, data, backend="lme4", contrasts=contrasts)


def cells_by_label(table) -> dict[str, list[str]]:
    """{row label: [cell per model]} of the estimate rows (the SE row follows each)."""
    out = {}
    for i, row in enumerate(table.rows):
        if row.role == "estimate":
            out[row.label] = [table.cells[m][i] for m in table.cells]
    return out


def se_cells(table, term: str) -> list[str]:
    i = next(i for i, r in enumerate(table.rows) if r.key == f"coef:{term}" and r.role != "estimate")
    return [table.cells[m][i] for m in table.cells]


# --- numbers: lme4's, rounded as the table rounds ---------------------------------------------

@needs_r
def test_random_slope_model_cells_are_lme4s():
    ref = LME4["random_slope"]
    table = model_table({"lme4": lme4_fit("random_slope")}, correlations=True,
                        gof=("nobs", "groups", "loglik", "aic", "r2"),
                        groups={"subject": "Participants"})
    cells = cells_by_label(table)
    for fixed in ref["fixed"]:
        label = "Intercept" if fixed["term"] == "(Intercept)" else fixed["term"]
        assert cells[label] == [f"{fixed['estimate']:.3f}"]
        assert se_cells(table, fixed["term"]) == [f"({fixed['se']:.3f})"]
    sds = {(v["group"], v["term"]): v["sd"] for v in ref["varcor"]}
    assert cells["Intercept (participants)"] == [f"{sds[('subject', '(Intercept)')]:.3f}"]
    assert cells["x (participants)"] == [f"{sds[('subject', 'x')]:.3f}"]
    assert cells["Residual"] == [f"{sds[('Residual', '')]:.3f}"]
    cor = next(p["sdcor"] for p in TOOLKIT["ranef"]["slope"]["ran_pars"] if p["var2"] == "x")
    assert cells["Correlation of intercept and x (participants)"] == [f"{cor:.3f}"]
    assert cells["Observations"] == [str(ref["nobs"])] and cells["Participants"] == ["30"]
    assert cells["Log-likelihood"] == [f"{ref['loglik']:.1f}"]
    assert cells["AIC"] == [f"{ref['aic']:.1f}"]
    r2 = TOOLKIT["r2_icc"]["slope"]
    assert cells["R² marginal"] == [f"{r2['r2_marginal']:.3f}"]
    assert cells["R² conditional"] == [f"{r2['r2_conditional']:.3f}"]


@needs_r
def test_the_frame_holds_the_fit_at_full_precision():
    fit = lme4_fit("random_slope")
    frame = model_table(fit).frame.set_index(["row", "quantity"])["value"]
    for rec in fit.coefs.itertuples():
        for quantity in ("estimate", "se", "ci_low", "ci_high", "p_value"):
            assert frame[(f"coef:{rec.term}", quantity)] == getattr(rec, quantity)
    assert frame[("gof:loglik", "loglik")] == fit.fit_stats["loglik"]


@needs_r
def test_binomial_glmm_fit_rows_are_ml_and_say_nothing_of_reml():
    ref = LME4["binomial_glmm"]
    table = model_table(lme4_fit("binomial_glmm"))
    cells = cells_by_label(table)
    assert cells["Log-likelihood"] == [f"{ref['loglik']:.1f}"] and cells["AIC"] == [f"{ref['aic']:.1f}"]
    assert not any("REML" in n for n in table.notes)
    assert any("Laplace ML" in n for n in table.notes)


@needs_r
def test_the_reml_caveat_only_where_a_likelihood_row_is_shown():
    fit = lme4_fit("random_slope")
    caveat = "REML criteria"
    assert any(caveat in n for n in model_table(fit).notes)
    shown = model_table(fit, gof=("nobs", "groups"))
    assert not any(row.key.startswith(("gof:loglik", "gof:aic")) for row in shown.rows)
    assert not any(caveat in n for n in shown.notes)
    assert any(caveat in n for n in model_table(fit, gof=("aic",)).notes)


@needs_r
def test_one_term_one_row_across_engines_and_a_union_across_formulas():
    from gbstats.mixed.lmm import fit_lmm

    data = pd.read_csv(REF / "random_intercept.csv")
    smaller = fit_lmm("y ~ x + (1 | subject)", data, backend="lme4")
    table = model_table({"lme4": lme4_fit("random_intercept"),
                         "statsmodels": lme4_fit("random_intercept", "statsmodels"),
                         "without cond": smaller})
    cells = cells_by_label(table)
    ref = {f["term"]: f for f in LME4["random_intercept"]["fixed"]}
    # lme4 and statsmodels agree to the optimisers' precision: the same cell at 3 decimals
    assert cells["x"][:2] == [f"{ref['x']['estimate']:.3f}"] * 2
    labels = [r.label for r in table.rows if r.role == "estimate" and r.panel == "Fixed effects"]
    assert labels == ["Intercept", "x", "cond: neutral vs anti", "cond: pro vs anti"]  # one per term
    assert cells["cond: pro vs anti"][2] == ""        # not in the smaller model


@needs_r
def test_stars_are_off_by_default_and_follow_the_p_values_when_asked():
    fit = lme4_fit("binomial_glmm")
    plain = cells_by_label(model_table(fit))
    assert not any("*" in c for cells in plain.values() for c in cells)
    starred = model_table(fit, stars=True, terms={"condpro:x": "Interaction"})
    for fixed in LME4["binomial_glmm"]["fixed"]:
        p = fixed["p_value"]
        marks = "***" if p < .001 else "**" if p < .01 else "*" if p < .05 else ""
        label = {"(Intercept)": "Intercept", "condpro:x": "Interaction"}.get(fixed["term"])
        label = label or term_label(fixed["term"], codings_of(fit), predictors_of(fit))
        assert cells_by_label(starred)[label] == [f"{fixed['estimate']:.3f}{marks}"]
    assert "* p < .05, ** p < .01, *** p < .001." in starred.notes


@needs_r
def test_a_published_column_and_the_difference():
    ref = {f["term"]: f for f in LME4["random_intercept"]["fixed"]}
    published = pd.DataFrame({"term": ["x", "condpro"], "estimate": [0.5, -0.25], "se": [0.1, 0.2]})
    table = model_table({"Ours": lme4_fit("random_intercept")}, published=published)
    assert list(table.cells) == ["Ours", "Published", "Difference"]
    i = next(i for i, r in enumerate(table.rows) if r.key == "coef:x" and r.role == "estimate")
    assert table.cells["Published"][i] == "0.500" and table.cells["Published"][i + 1] == "(0.100)"
    assert table.cells["Difference"][i] == f"{ref['x']['estimate'] - 0.5:.3f}"
    with pytest.raises(ValueError, match="does not have"):
        model_table(lme4_fit("random_intercept"), published={"nope": 1.0})


# --- term labels from the codings (hand-derived) ----------------------------------------------

@needs_r
@pytest.mark.parametrize("coding, expected", [
    # treatment: each level against the first (sorted) level
    ("treatment", ["Intercept", "Closeness: near vs distant", "Stance: neutral vs anti",
                   "Stance: pro vs anti", "Closeness: near vs distant × Stance: neutral vs anti",
                   "Closeness: near vs distant × Stance: pro vs anti"]),
    # sum: contr.sum's column j is level j against the mean of the level means
    ("sum", ["Intercept", "Closeness: distant vs mean of levels", "Stance: anti vs mean of levels",
             "Stance: neutral vs mean of levels",
             "Closeness: distant vs mean of levels × Stance: anti vs mean of levels",
             "Closeness: distant vs mean of levels × Stance: neutral vs mean of levels"]),
    # the Lin/Mid matrix anti (-1, .5), neutral (0, -1), pro (1, .5): the inverse of
    # [1 | C] gives Lin = (pro - anti) / 2 and Mid = (anti + pro) / 3 - 2 neutral / 3
    ("matrix", ["Intercept", "Closeness: near vs distant", "Stance: pro vs anti",
                "Stance: anti+pro vs neutral"]),
    # centred Helmert with references (anti, neutral): column 1 anti -.5, neutral and pro
    # +.5 (mean of neutral and pro against anti); column 2 anti 0, neutral -.5, pro +.5
    ("helmert", ["Intercept", "Closeness: near vs distant", "Stance: neutral+pro vs anti",
                 "Stance: pro vs neutral"]),
])
def test_term_labels_read_the_coding(coding, expected):
    table = model_table(factorial_fit(coding), variables={"close": "Closeness", "stance": "Stance"})
    assert [r.label for r in table.rows
            if r.role == "estimate" and r.panel == "Fixed effects"] == expected


@needs_r
def test_coding_notes_name_the_reference_and_the_matrix():
    notes = " ".join(model_table(factorial_fit("matrix"), variables={"stance": "Stance"}).notes)
    assert "close: treatment coding, reference level distant." in notes
    assert "Stance: a user coding matrix (anti = (-1, 0.5); neutral = (0, -1); pro = (1, 0.5))" \
        in notes


# --- every result shape ---------------------------------------------------------------------

def bayes_result() -> FitResult:
    """A Bayesian twin's result shape (backend "bambi"): what fit_bayes returns, by hand."""
    coefs = pd.DataFrame({"term": ["(Intercept)", "x"], "estimate": [1.2, 0.7], "se": [0.09, 0.06],
                          "ci_low": [1.02, 0.58], "ci_high": [1.38, 0.82], "stat": np.nan,
                          "df": np.nan, "p_value": np.nan})[COEF_COLUMNS]
    ranef = pd.DataFrame({"group": ["subject", "Residual"], "term": ["(Intercept)", ""],
                          "variance": [0.2, 0.25], "sd": [0.45, 0.5]})
    stats = {"nobs": 360, "elpd_loo": -330.4, "rhat_max": 1.002, "ess_bulk_min": 900,
             "ess_tail_min": 800, "divergences": 0, "converged": True, "n_chains": 2,
             "n_draws": 1000, "priors": {"x": "Normal(0, 2.5)"},
             "ci_method": "posterior mean and SD; 95% equal-tailed posterior intervals"}
    return FitResult("y ~ x + (1 | subject)", "bambi", "gaussian", coefs, ranef, stats)


def test_a_bayesian_column_has_no_stars_no_likelihood_and_its_convergence_in_the_notes():
    table = model_table({"Bayesian": bayes_result()}, stars=True)
    cells = cells_by_label(table)
    assert cells["x"] == ["0.700"] and se_cells(table, "x") == ["(0.060)"]
    assert "Log-likelihood" not in cells and cells["ELPD (LOO)"] == ["-330.4"]
    notes = " ".join(table.notes)
    # the priors (a formula's terms and a distribution's code) are listed elsewhere, and the
    # notes say where (issue 43: no code in notes)
    assert "Bayesian twin [Bayesian]: converged" in notes and "Priors [Bayesian]" not in notes
    assert "priors are listed in the report's section on the Bayesian twins" in notes
    assert "posterior mean and SD" in notes


def test_an_interval_instead_of_the_se():
    table = model_table({"Bayesian": bayes_result()}, statistic="ci")
    assert se_cells(table, "x") == ["[0.580, 0.820]"]


def test_a_fit_reused_from_the_cache_says_what_it_cannot_show():
    table = model_table(bayes_result(), correlations=True, gof=("nobs", "r2"))
    notes = " ".join(table.notes)
    assert "correlations need the fitted model" in notes and "R² (Nakagawa) needs" in notes
    assert cells_by_label(table)["R² marginal"] == ["--"]


def test_bad_input_is_a_clear_error():
    with pytest.raises(TypeError, match="FitResults"):
        model_table({"a": "not a fit"})
    with pytest.raises(ValueError, match="statistic"):
        model_table(bayes_result(), statistic="t")
    with pytest.raises(ValueError, match="gof"):
        model_table(bayes_result(), gof=("deviance",))
    with pytest.raises(ValueError, match="at least one"):
        model_table({})


# --- presented: the grammar, Markdown and LaTeX -------------------------------------------------

@needs_r
def test_spanning_headers_markdown_latex_and_the_grammar():
    fits = {("Data A", "lme4"): lme4_fit("random_intercept"),
            ("Data A", "statsmodels"): lme4_fit("random_intercept", "statsmodels"),
            ("Data B", "lme4"): lme4_fit("random_slope")}
    presented = model_table(fits, groups={"subject": "Participants"}).presented(
        "Two data sets", "tab:two")
    assert grammar_problems(presented) == []
    md = render_markdown(presented)
    assert md.splitlines()[0].split("|")[2].strip() == "Data A: lme4"
    tex = render_latex(presented)
    assert r"\multicolumn{2}{c}{Data A} & \multicolumn{1}{c}{Data B}" in tex
    assert r"\cmidrule(lr){2-3}\cmidrule(lr){4-4}" in tex
    assert re.search(r"S\[table-format=-?\d+\.3", tex)     # decimal-aligned model columns
    assert r"\multicolumn{4}{@{}l}{\textit{Random effects (SD)}}" in tex


def test_an_estimate_below_the_tables_precision_is_shown_at_its_own_scale():
    # issue 44, case 4: a significant slope per raw count (about 1.8e-9) printed as
    # 0.000 (0.000); it now keeps two significant digits, and a note says to rescale
    from gbstats.mixed.lmm import fit_lmm

    rng = np.random.default_rng(8)
    n = 300
    data = pd.DataFrame({"subject": np.repeat(np.arange(30), 10),
                         "count": rng.uniform(0, 2e9, n)})
    data["y"] = 2.0 + 1.8e-9 * data["count"] + rng.normal(0, 0.3, n) \
        + np.repeat(rng.normal(0, 0.5, 30), 10)
    fit = fit_lmm("y ~ count + (1 | subject)", data, backend="statsmodels")
    table = model_table({"M": fit}, variables={"count": "Count"})
    coef = fit.coef("count")
    assert cells_by_label(table)["Count"] == [f"{coef['estimate']:.1e}"]
    assert se_cells(table, "count") == [f"({coef['se']:.1e})"]
    assert float(cells_by_label(table)["Count"][0]) == pytest.approx(1.8e-9, rel=0.2)
    assert cells_by_label(table)["Intercept"][0] == f"{fit.coef('(Intercept)')['estimate']:.3f}"
    assert any(n.startswith("Count: estimates too small") for n in table.notes)
    presented = table.presented("A tiny slope", "tab:tiny")
    assert grammar_problems(presented) == []
    assert f"{coef['estimate']:.1e}" in render_latex(presented)


def test_the_design_check_is_one_sentence_in_the_studys_words():
    from gbstats.report.model_table import design_check_note
    from gbstats.report.table_grammar import prose_problems

    fit = bayes_result()
    fit.fit_stats["design_check"] = [{"term": "GenderRatingCentered", "factor": "FirstName",
                                      "n_levels": 40, "rows_per_level": 12.0,
                                      "also_constant_within": "", "suggestion": "(1 | FirstName)"}]
    # the same finding from two engines is said once
    notes = design_check_note({"lme4": fit, "statsmodels": fit},
                              {"GenderRatingCentered": "the first name's gender rating, centred",
                               "FirstName": "first names"})
    assert notes == ["Design check: the first name's gender rating, centred varies only between "
                     "the 40 levels of first names, which the model gives no random effect, so "
                     "its test counts rows within one level as independent evidence "
                     "(pseudo-replication); random intercepts for first names would account "
                     "for it."]
    assert prose_problems(notes[0]) == []

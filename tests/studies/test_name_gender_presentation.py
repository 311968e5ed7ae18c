"""studies/name_gender/presentation.py: the words its tables print (issue 32).

The weights below are derived by hand: Fraundorf's centred Helmert coding of (first, full,
last) with reference levels last, then first (the authors' Exp 3-4 coding), puts its first
contrast between last and the other two and its second between first and full, whatever
the counts; the authors' fixed Exp 1-2 coding names those two comparisons
"last vs first/full" and "first vs full"."""
from __future__ import annotations

import pandas as pd

from gbstats.mixed.contrasts import centered_helmert
from gbstats.report.model_table import Coded
from studies.name_gender import presentation as P


def coded(coding) -> Coded:
    return Coded(coding.variable, coding.kind, tuple(coding.levels), tuple(coding.names),
                 coding.matrix)


def test_helmert_contrasts_take_the_fixed_contrasts_names():
    # unequal counts, as in Exp 3 (the weights move, the levels each contrast compares do not)
    helmert = centered_helmert("Condition", ["first", "full", "last"],
                               {"first": 2950, "full": 2950, "last": 3004},
                               reference=("last", "first"))
    names = P.fixed_names(coded(helmert))
    assert names == {helmert.names[0]: "last vs first/full", helmert.names[1]: "first vs full"}


def test_fit_settings_view_is_in_words():
    settings = pd.DataFrame({
        "experiment": [1, 3], "model": ["m_cond", "m_noOther"], "formula": ["f", "g"],
        "rows": ["all", "no_other"], "coding": ["fixed", "centered_helmert"],
        "nobs": [10, 8], "n_participants": [4, 3], "n_items": [2, 2],
        "loglik": [-1.0, -2.0], "aic": [4.0, 6.0],
        "optimizer": ["glmerControl default: bobyqa, then Nelder_Mead"] * 2, "nAGQ": [1, 1],
        "published_in": ["a", "b"]})
    view = P.fit_settings_view(settings)
    assert list(view["model"]) == ["Condition", "He or she only"]
    assert list(view["rows"]) == ["All trials", "He, she responses"]
    assert list(view["coding"]) == ["Authors' fixed", "Centred Helmert"]
    assert list(view["heading"]) == ["Exp 1 (production: she or not)",
                                     "Exp 3 (production: she or not)"]
    assert "Nelder_Mead" not in view["optimizer"].iloc[0]


def test_treatment_pieces_without_a_recorded_coding():
    # the alignment GLMM's factors as R codes them by default (reference: first level)
    assert P.piece_words("Conditionfull") == "Condition: full vs first"
    assert P.piece_words("groupnonmale") == "Group: non-male vs men"
    assert P.piece_words("model_logit") is None


def test_comparison_view_puts_the_primary_family_first():
    comp = pd.DataFrame({
        "experiment": [1, 1, 3], "condition": ["first", "all", "all"],
        "family": ["secondary: per condition, corrected r",
                   "primary: men vs non-male, corrected r", "secondary: alignment GLMM"],
        "estimate": [0.1, 0.2, 0.3], "ci_low": [0.0] * 3, "ci_high": [0.5] * 3,
        "p_value": [0.5] * 3, "p_holm": [0.5] * 3, "p_equivalence_holm": [0.5] * 3,
        "verdict": ["no evidence either way"] * 3, "equivalence_bound": [0.1] * 3})
    view = P.comparison_view(comp)
    assert view["heading"].iloc[0].startswith("Primary")
    assert list(view["test"]) == ["Exp 1", "Exp 1, first name", "Exp 3"]
    assert list(view["verdict"]) == ["Neither shown"] * 3


def test_twin_diagnostics_name_each_fit_in_words():
    table = pd.DataFrame({"fit": ["exp1_m_nameGender", "exp3_m_noOther model side",
                                  "exp1 alignment"], "max_rhat": [1.0] * 3})
    assert list(P.twin_view(table)["fit"]) == ["Exp 1, condition × rating",
                                               "Exp 3, he or she only, model side",
                                               "Exp 1 alignment"]


def test_twin_diagnostics_table_shows_a_fractional_ess(tmp_path):
    """The default run's twins give ArviZ's fractional bulk ESS (583.66 in the run that
    failed at its report: the table had declared it a count). It is shown rounded, and the
    record keeps it exact."""
    from gbstats.report.study_report import StudyReport

    report = StudyReport("name_gender", tmp_path, "t")
    diagnostics = pd.DataFrame({"fit": ["exp1_m_nameGender"], "max_rhat": [1.0041],
                                "min_ess_bulk": [583.6620395607994], "n_draws": [2000],
                                "n_chains": [2], "sampler": ["nutpie"]})
    P.twin_diagnostics_table(report, diagnostics)
    tex = (tmp_path / "tables" / "twin_diagnostics.tex").read_text()
    assert " 584 " in tex and "583.6" not in tex
    assert report.tables["twin_diagnostics"]["min_ess_bulk"].iloc[0] == 583.6620395607994


def test_a_renamed_twin_reads_as_its_lme4_fit_in_the_model_table():
    """The twin is fitted with formula-safe contrast names ("first_vs_full") and renamed
    back; its recorded coding is renamed with its terms, so the table reads its rows as the
    lme4 fit's ("Condition: full vs first"), not as a treatment contrast of a level named
    "first vs full" ("Condition: first vs full vs first", which made the default run's
    model_side_models row labels wrong and the table wider than the page)."""
    from gbstats.mixed.contrasts import user_coding
    from gbstats.mixed.results import COEF_COLUMNS, FitResult
    from studies.name_gender.human import FIXED_2, bambi_safe, rename_terms

    safe, back = bambi_safe({"Condition": FIXED_2})

    def fit(contrasts, names, backend):
        coefs = pd.DataFrame([{c: 0.0 for c in COEF_COLUMNS} | {"term": t}
                              for t in ["(Intercept)", *names, f"{names[0]}:GenderRatingCentered"]])
        coding = user_coding("Condition", ["first", "full"], contrasts["Condition"])
        return FitResult("y ~ Condition * GenderRatingCentered", backend, "gaussian", coefs,
                         fit_stats={"contrasts": {"Condition": coding.to_record()}})

    lme4 = fit({"Condition": FIXED_2}, ["Conditionfirst vs full"], "lme4")
    twin = rename_terms(fit(safe, ["Conditionfirst_vs_full"], "bambi"), back)
    assert twin.fit_stats["contrasts"]["Condition"]["names"] == ["first vs full"]
    assert list(twin.coefs["term"]) == list(lme4.coefs["term"])
    from gbstats.report.model_table import codings_of, predictors_of, term_label

    for one in (lme4, twin):   # the main effect is read off the coding, alike
        assert term_label("Conditionfirst vs full", codings_of(one), predictors_of(one),
                          P.VARIABLES, P.LEVELS) == "Condition: full vs first"
    words = P.all_term_words({("Exp 1", "lme4"): lme4, ("Exp 1", "twin"): twin})
    assert "Conditionfirst vs full" not in words   # no treatment-coding reading overrides it
    assert words["Conditionfirst vs full:GenderRatingCentered"] == "Full vs first × gender rating"

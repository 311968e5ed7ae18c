"""The house grammar of tables (gbstats.report.table_grammar): digits by kind, words for
headers and cells, repeated settings in the notes, wide tables split, short captions, and
the checks that find a table breaking those rules.

Expected strings are derived by hand from the rules in table_grammar's module docstring.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gbstats.errors import DataValidationError
from gbstats.report.latex import render_latex
from gbstats.report.markdown import render_markdown
from gbstats.report.table_grammar import (MAX_COLUMNS, SIMULATED_NOTE, cell_problems,
                                          choose_decimals, format_fixed, grammar_problems,
                                          header_problems, present, shorten_caption)


# --- digits by kind -----------------------------------------------------------------------

@pytest.mark.parametrize("values, expected", [
    ([0.5, 0.061765, 1.0023], 3),     # below 10: three decimals for every value
    ([12.3, 0.5], 2),                  # below 1000: two
    ([1234.5, 2.0], 1),                # larger: one
    ([496.0, 531.0], 0),               # whole numbers: none
    ([0.00012, -0.0003], 5),           # all would read 0.000: two significant digits of 3e-4
    ([np.nan, None], 3),               # nothing to go by
])
def test_choose_decimals(values, expected):
    assert choose_decimals(values) == expected


def test_a_column_has_one_number_of_decimals_and_no_scientific_notation():
    # the example: 0.061765 beside 1.0023, and 6.60e-4, in one column
    table = present(pd.DataFrame({"x": [0.061765, 1.0023, 6.60e-4]}), "c")
    assert table.parts[0].columns[0].cells == ["0.062", "1.002", "0.001"]


def test_negative_zero_and_infinity():
    assert format_fixed(-0.0001, 3) == "0.000"
    assert format_fixed(float("inf"), 2) == "∞" and format_fixed(float("-inf"), 2) == "-∞"
    assert format_fixed(np.nan, 2) == "--"


def test_kinds_p_values_counts_booleans_and_intervals():
    df = pd.DataFrame({"term": ["a", "b"], "estimate": [0.12345, -1.5], "se": [0.05, 0.2],
                       "ci_low": [0.02, -1.9], "ci_high": [0.22, -1.1],
                       "p_value": [0.0004, 0.0346], "n_trials": [40, 41],
                       "converged": [True, False]})
    table = present(df, "Fit")
    cells = {c.label: c.cells for c in table.parts[0].columns}
    # estimate, SE and the interval share three decimals (everything below 10)
    assert cells["Estimate"] == ["0.123", "-1.500"] and cells["SE"] == ["0.050", "0.200"]
    assert cells["95% CI"] == ["[0.020, 0.220]", "[-1.900, -1.100]"]
    assert cells["p"] == ["< .001", ".035"]
    assert cells["Trials"] == ["40", "41"]
    assert cells["Converged"] == ["yes", "no"]
    assert [c.kind for c in table.parts[0].columns] == [
        "text", "number", "number", "interval", "p", "count", "text"]


def test_a_p_value_outside_the_unit_interval_names_row_and_column():
    with pytest.raises(DataValidationError) as err:
        present(pd.DataFrame({"p_holm": [0.2, 1.5]}), "c")
    assert err.value.row == 2 and err.value.column == "p_holm"


def test_a_declared_count_that_is_not_whole_is_an_error():
    with pytest.raises(DataValidationError, match="whole number"):
        present(pd.DataFrame({"n": [1.5, 2.0]}), "c", kinds={"n": "count"})


# --- words -----------------------------------------------------------------------------------

def test_headers_come_from_labels_then_the_house_words():
    table = present(pd.DataFrame({"std_error": [0.1, 0.2], "n_participants": [3, 4],
                                  "my_col": [1.0, 2.5]}), "c", labels={"my_col": "Rating"},
                    settings_to_notes=False)
    assert [c.label for c in table.parts[0].columns] == ["SE", "Participants", "Rating"]


def test_values_are_mapped_to_words():
    table = present(pd.DataFrame({"source": ["human", "s2e"], "x": [1.5, 2.5]}), "c",
                    values={"source": {"human": "People"}})
    assert table.parts[0].columns[0].cells == ["People", "s2e"]


@pytest.mark.parametrize("header, bad", [
    ("std_error", True), ("n_boot_undefined", True), ("delta", True), ("nobs", True),
    ("SE", False), ("p", False), ("95% CI", False), ("Participants", False), ("df", False),
    ("α", False), ("lme4", False), ("p (Holm)", False)])
def test_header_problems(header, bad):
    assert bool(header_problems([header])) is bad


@pytest.mark.parametrize("cell, bad", [
    ("False", True), ("True", True), ("nan", True), ("None", True), ("inf", True),
    ("below_calibrated_design", True), ("glmerControl default: Nelder_Mead", True),
    ("(Intercept)", True), ("stereotypepro:alpha", True),
    ("yes", False), ("0.123", False), ("Stereotype: pro vs anti", False), ("--", False),
    ("men's", False), ("log2(F1 pro / F1 anti)", False), ("< .001", False),
    ("Stereotype: pro vs anti × α", False), ("tests/reference/x_y.R", False)])
def test_cell_problems(cell, bad):
    assert bool(cell_problems([cell])) is bad


# --- layout ------------------------------------------------------------------------------------

def test_repeated_settings_move_to_the_notes_and_results_stay():
    df = pd.DataFrame({"dataset": ["wino", "BUG"], "n_boot": [1000, 1000],
                       "test": ["permutation", "permutation"], "rule": ["head", "head"],
                       "n_agree": [0, 0], "estimate": [0.1, 0.2]})
    table = present(df, "Deltas", settings=["rule"])
    # n_agree is a result that happens to be 0 twice: it stays
    assert [c.label for c in table.parts[0].columns] == ["Data set", "n_agree", "Estimate"]
    assert table.notes == ["In every row: Bootstrap replicates: 1000; test: permutation; "
                           "rule: head."]


def test_a_one_row_table_and_kept_columns_keep_their_settings():
    one = present(pd.DataFrame({"test": ["x"], "estimate": [0.1]}), "c")
    assert [c.label for c in one.parts[0].columns] == ["test", "Estimate"]
    kept = present(pd.DataFrame({"test": ["x", "x"], "estimate": [0.1, 0.2]}), "c", keep=["test"])
    assert len(kept.parts[0].columns) == 2


def test_groups_become_headings():
    df = pd.DataFrame({"dataset": ["wino", "wino", "BUG"], "alpha": [0.25, 0.5, 0.25],
                       "accuracy": [0.8, 0.9, 0.7]})
    table = present(df, "c", groups="dataset", values={"dataset": {"wino": "Wino"}})
    assert table.parts[0].headings == {0: "Wino", 2: "BUG"}
    assert [c.label for c in table.parts[0].columns] == ["alpha", "Accuracy"]
    md = render_markdown(table)
    assert md.splitlines()[2].split("|")[1].strip() == "*Wino*"


def test_a_wide_table_is_split_repeating_its_keys():
    df = pd.DataFrame({"source": ["a", "b"], **{f"m{i}": [0.1 * i, 0.2] for i in range(10)}})
    table = present(df, "Wide")
    assert len(table.parts) == 2
    assert all(len(p.columns) <= MAX_COLUMNS for p in table.parts)
    assert [p.columns[0].label for p in table.parts] == ["Source", "Source"]
    assert sum(len(p.columns) - 1 for p in table.parts) == 10
    assert not any("columns" in p for p in grammar_problems(table))


def test_a_long_caption_keeps_its_first_sentence():
    long = ("Delta_QA of people per alpha and of each system. With 95% bootstrap intervals and "
            "p-values; p_holm: Holm within family, per dataset, every system by alpha, and "
            "several more words to pass the limit")
    caption, rest = shorten_caption(long)
    assert caption == "Delta_QA of people per alpha and of each system."
    assert rest.startswith("With 95% bootstrap intervals")
    assert shorten_caption("Short caption.") == ("Short caption.", "")


def test_simulated_comes_first_in_the_notes():
    table = present(pd.DataFrame({"x": [1.5]}), "c", notes=["Other note."], simulated=True)
    assert table.notes == [SIMULATED_NOTE, "Other note."]
    assert r"\textbf{SIMULATED data}" in render_latex(table)


# --- the checks find a table below the standard ---------------------------------------------

def test_grammar_problems_of_an_unconverted_table():
    df = pd.DataFrame({"model": ["m1", "m2"], "below_calibrated_design": [False, True],
                       "std_err": [0.1, 0.2], **{f"c{i}": [1.0, 2.0] for i in range(8)}})
    problems = grammar_problems(present(df, "x " * 40, split=False, short_caption=False,
                                        values={"below_calibrated_design": {False: "False"}}))
    text = "\n".join(problems)
    assert "caption has 40 words" in text
    assert "11 columns" in text
    assert "header 'std_err' is an identifier" in text
    assert "cell 'False' is a literal" in text


def test_a_table_by_the_rules_has_no_problems():
    df = pd.DataFrame({"dataset": ["wino", "BUG"], "estimate": [0.1, 0.25], "se": [0.01, 0.02],
                       "p_value": [0.01, 0.5]})
    assert grammar_problems(present(df, "Stereotype effect per data set",
                                    labels={"dataset": "Data set"})) == []


def test_a_resampling_p_at_its_floor_reads_as_a_bound_not_a_value():
    # issue 40: 1,000 bootstrap replicates cannot give p below 2 / 1,001 = .001998, which
    # printed as ".002", as if exact
    from gbstats.report.latex import render_latex
    from gbstats.report.table_grammar import grammar_problems, present

    floor = 2 / 1001
    df = pd.DataFrame({"contrast": ["gap", "PSA"], "estimate": [1.2, 0.19],
                       "p_value": [floor, 0.2]})
    shown = present(df, "Contrasts", p_floors={"p_value": floor})
    cells = next(c for c in shown.parts[0].columns if c.kind == "p").cells
    assert cells == ["≤ .002", ".200"]
    assert grammar_problems(shown) == []
    assert r"\ensuremath{\leq}" in render_latex(shown)
    # without a floor, the same value is a plain p
    plain = present(df, "Contrasts")
    assert next(c for c in plain.parts[0].columns if c.kind == "p").cells == [".002", ".200"]


def test_a_corrected_correlation_above_1_is_shown_at_the_bound_with_a_note():
    # issue 40/43: corrected correlations with intervals up to 1.355 were printed as such
    from gbstats.report.table_grammar import grammar_problems, present

    df = pd.DataFrame({"group": ["men", "non-male"], "r_corrected": [0.97, 1.08],
                       "ci_low": [0.80, 0.91], "ci_high": [1.12, 1.355]})
    caps = {c: (-1.0, 1.0) for c in ("r_corrected", "ci_low", "ci_high")}
    shown = present(df, "Corrected correlations", caps=caps, labels={"r_corrected": "Corrected r"})
    cells = {c.label: c.cells for c in shown.parts[0].columns}
    # shown at the bound and flagged (the notes say what the flag means)
    assert any(cell.endswith("1.000‡]") for cell in next(v for k, v in cells.items() if "CI" in k))
    assert "1.080" not in str(cells) and "1.355" not in str(cells)
    assert any("shown at the bound" in n for n in shown.notes)
    assert grammar_problems(shown) == []
    assert df["ci_high"].tolist() == [1.12, 1.355]          # the data are not changed
    plain = present(df.assign(ci_high=[0.99, 0.98], r_corrected=[0.9, 0.8]), "x", caps=caps)
    assert not any("bound" in n for n in plain.notes)


# --- words, not code, in captions and notes (issue 43) ------------------------------------

@pytest.mark.parametrize("text, what", [
    # the issue's own examples, as they were printed
    ("GenderRatingCentered + (1 | FirstName)", "formula syntax"),
    ("GenderRatingCentered, centred", "a joined-up name"),
    ("score\\_z on the items", "an identifier"),
    ("score_z on the items", "an identifier"),
    ("the logit_two_way model", "an identifier"),
    ("m_cond_noOther", "an identifier"),
    ("boundary (singular) fit: see help('isSingular')", "a function call"),
    ("see help('isSingular')", "a camelCase name"),
    ("as gbstats.alignment.ceiling computes it", "a module path"),
    ("scored as in pronoun_fidelity", "an identifier"),
    ("rating ~ score + (1|item)", "formula syntax"),
    ("fitted as `y ~ x`", "a code span"),
    ("the run's --seed", "a command-line option"),
    ("the item:group intercepts", "an R term name"),
    ("estimate +/- qt(0.975, df) x SE", "a function call"),
])
def test_prose_problems_find_code_in_a_caption_or_note(text, what):
    from gbstats.report.table_grammar import prose_problems

    assert any(what in p for p in prose_problems(text)), (text, prose_problems(text))


@pytest.mark.parametrize("text", [
    "The first name's gender rating, centred; random intercepts for first names.",
    "Satterthwaite df (lmerTest); e.g. 12:30, a 1:2 ratio, i.e. p < .05.",
    "Kept as estimated in results.json; Watson et al. (2023), p. 12.",
    "SmolLM2-135M and TinyLlama, scored with PyMC and statsmodels; the SE(s).",
    "Design check: closeness varies only between frames.",
])
def test_prose_problems_pass_words_a_paper_prints(text):
    from gbstats.report.table_grammar import prose_problems

    assert prose_problems(text) == []


def test_a_design_check_said_twice_is_a_problem():
    from gbstats.report.table_grammar import prose_problems

    twice = "Design check: closeness varies only between frames. Design check: again."
    assert any("2 times" in p for p in prose_problems(twice))


def test_grammar_problems_read_the_caption_and_every_note():
    table = present(pd.DataFrame({"x": [1.5, 2.5]}), "Fit of `rating ~ score`",
                    notes=["A random intercept (1 | FirstName)."])
    problems = grammar_problems(table)
    assert any(p.startswith("caption holds") for p in problems)
    assert any(p.startswith("note holds formula syntax") for p in problems)


# --- SIMULATED where the eye lands --------------------------------------------------------

def test_a_simulated_table_says_so_in_its_caption_and_notes():
    table = present(pd.DataFrame({"Rating": [1.5, 2.5]}), "People's ratings by closeness",
                    simulated=True)
    assert table.caption == "SIMULATED: People's ratings by closeness"
    assert table.notes[0] == SIMULATED_NOTE and grammar_problems(table) == []
    assert "SIMULATED" in render_latex(table).split(r"\caption{", 1)[1].split("}", 1)[0]
    # a real table's caption is left as it is
    assert present(pd.DataFrame({"x": [1.5]}), "Ratings").caption == "Ratings"


def test_a_simulated_table_without_the_label_in_its_caption_cannot_be_written(tmp_path):
    from gbstats.report.study_report import StudyReport
    from gbstats.report.table_grammar import PresentedTable

    table = present(pd.DataFrame({"x": [1.5, 2.5]}), "Ratings", simulated=True)
    unlabelled = PresentedTable("Ratings", table.parts, table.notes, "tab:r")
    assert any("SIMULATED" in p for p in grammar_problems(unlabelled))
    report = StudyReport("demo", tmp_path, "Demo")
    with pytest.raises(ValueError, match="SIMULATED"):
        report._write_table("ratings", unlabelled, pd.DataFrame({"x": [1.5, 2.5]}))
    assert not (tmp_path / "tables" / "ratings.tex").exists()


def test_a_simulated_model_table_says_so_in_its_caption():
    from gbstats.report.model_table import ModelTable

    table = ModelTable({}, [], {}, [], pd.DataFrame()).presented("Fit", simulated=True)
    assert table.caption == "SIMULATED: Fit"


# --- a model's formula in words -----------------------------------------------------------

def test_formula_in_words_names_every_term_and_grouping_factor():
    from gbstats.report.formula_words import formula_in_words
    from gbstats.report.table_grammar import prose_problems

    # expected by hand: response, the fixed terms in order, each random term
    text = formula_in_words(
        "GenderRatingCentered ~ cond * rating_c + (1 + rating_c | FirstName) + (1 | SubjID)",
        {"GenderRatingCentered": "the gender rating", "cond": "the condition",
         "rating_c": "the first name's gender rating, centred"},
        {"FirstName": "first names", "SubjID": "participants"})
    assert text == ("the gender rating regressed on the condition, the first name's gender "
                    "rating, centred and their interaction, with random intercepts and slopes "
                    "for the first name's gender rating, centred by first names, and random "
                    "intercepts for participants")
    # names nobody gave words for are still words, never identifiers
    plain = formula_in_words("score_z ~ item_kind + (1 | item:group)")
    assert plain == ("score z regressed on item kind, with random intercepts for items "
                     "within groups") and prose_problems(plain) == []


def test_a_report_keeps_the_formula_for_its_methods_section(tmp_path):
    import json

    from gbstats.report.study_report import StudyReport

    report = StudyReport("demo", tmp_path, "Demo")
    words = report.formula("fit", "rating ~ score + (1 | item)", {"rating": "the rating",
                                                                 "score": "the score"})
    assert words == "the rating regressed on the score, with random intercepts for items"
    report.table("fit", pd.DataFrame({"x": [1.5]}), "Fit", notes=[words])
    report.write({"study": "demo"})
    md = (tmp_path / "report.md").read_text()
    assert "## Methods: model formulas" in md and "`rating ~ score + (1 | item)`" in md
    assert json.loads((tmp_path / "results.json").read_text())["formulas"] == {
        "fit": "rating ~ score + (1 | item)"}


# --- correlations capped for display, with a flag -----------------------------------------

def test_a_capped_correlation_is_flagged_in_its_cell_and_named_in_the_notes():
    from gbstats.report.table_grammar import CAP_FLAG, correlation_caps

    df = pd.DataFrame({"pair": ["a", "b"], "r_corrected": [1.355, 0.5],
                       "ci_low": [0.9, 0.2], "ci_high": [1.08, 0.7]})
    table = present(df, "Corrected r", labels={"r_corrected": "Corrected r", "pair": "Pair"},
                    caps=correlation_caps("r_corrected", "ci_low", "ci_high"))
    cells = {c.label: c.cells for c in table.parts[0].columns}
    assert cells["Corrected r"] == [f"1.000{CAP_FLAG}", "0.500"]
    assert cells["95% CI"] == [f"[0.900, 1.000{CAP_FLAG}]", "[0.200, 0.700]"]
    assert any(n.startswith("Corrected r, 95% CI: values beyond") for n in table.notes)
    assert grammar_problems(table) == []


# --- every table states N -----------------------------------------------------------------

@pytest.mark.parametrize("headers, rows, caption, notes, expected", [
    (["Group", "Participants", "r"], [], "r by group", "", True),      # a count column
    (["Term", "lme4"], ["Intercept", "Observations"], "Fit", "", True),  # a model table's row
    (["Effect", "Estimate"], [], "Effects", "N = 148 participants, 2,960 ratings.", True),
    (["Pair", "r"], ["Stage, all items (335 items)"], "Ceilings", "", True),  # a heading
    (["Effect", "Estimate"], [], "Effects", "Each effect is a difference.", False),
])
def test_states_n_finds_a_count_column_row_or_sentence(headers, rows, caption, notes, expected):
    from gbstats.report.table_grammar import states_n

    assert states_n(headers, rows, caption, notes) is expected


def test_groups_get_one_heading_each_in_the_order_they_first_appear():
    # name_gender's blocks ran Exp 1, 3, 1, 3 and pronoun_memory repeated Memory/Production
    df = pd.DataFrame({"experiment": ["Exp 1", "Exp 3", "Exp 1", "Exp 3"],
                       "effect": ["a", "b", "c", "d"], "Estimate": [1.5, 2.5, 3.5, 4.5]})
    table = present(df, "Effects", groups="experiment", labels={"effect": "Effect"})
    part = table.parts[0]
    assert part.headings == {0: "Exp 1", 2: "Exp 3"}
    assert part.columns[0].cells == ["a", "c", "b", "d"]
    assert part.columns[1].cells == ["1.500", "3.500", "2.500", "4.500"]

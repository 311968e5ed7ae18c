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
    assert any(cell.endswith("1.000]") for cell in next(v for k, v in cells.items() if "CI" in k))
    assert "1.080" not in str(cells) and "1.355" not in str(cells)
    assert any("shown at the bound" in n for n in shown.notes)
    assert grammar_problems(shown) == []
    assert df["ci_high"].tolist() == [1.12, 1.355]          # the data are not changed
    plain = present(df.assign(ci_high=[0.99, 0.98], r_corrected=[0.9, 0.8]), "x", caps=caps)
    assert not any("bound" in n for n in plain.notes)

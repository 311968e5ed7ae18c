"""How the singular-they tables read (studies/singular_they/presentation.py): the print views
keep every row of the tables results.json records, put words where the records hold codes,
and leave the records alone.

The recorded tables come from the study's baseline (tests/reference/study_baselines/
singular_they.json, made by make_baselines.py from a run of the study), so no model or R is
needed here; the whole report is checked by tests/studies/test_study_tables.py (slow).
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from gbstats.data.camilliere2021 import read_corrections
from gbstats.report.table_grammar import cell_problems, header_problems, present
from studies.singular_they import panel as PANEL
from studies.singular_they import presentation as V
from studies.singular_they.stimuli import CORRECTIONS_FILE

BASELINE = (Path(__file__).resolve().parents[1] / "reference" / "study_baselines"
            / "singular_they.json")


@pytest.fixture(scope="module")
def recorded() -> dict[str, pd.DataFrame]:
    tables = json.loads(BASELINE.read_text())["tables"]
    return {name: pd.DataFrame.from_records(rows) for name, rows in tables.items()}


def text_cells(view: pd.DataFrame) -> list[str]:
    return [str(v) for c in view.columns if view[c].dtype == object for v in view[c]]


def test_typo_excerpts_show_the_words_around_each_typo():
    corrections = read_corrections(CORRECTIONS_FILE)
    shown = {(o, c): V.typo_excerpts(o, c) for o, c in zip(corrections["original"],
                                                            corrections["corrected"])}
    # derived by hand from the four corrections: the differing characters, and two whole
    # words (besides the one the typo touches) of the shared text on each side
    assert sorted(shown.values()) == sorted([
        ("…shake my hand..", "…shake my hand."),
        ("…to avoid them..", "…to avoid them."),
        ("TWhen you address…", "When you address…"),
        ("Someone said that my son bought My nephew should…", "My nephew should…")])
    assert V.typo_excerpts("a b", "a c") == ("a b", "a c")   # short: nothing cut


def test_typo_view_groups_by_antecedent_type_and_gives_each_reason():
    corrections = read_corrections(CORRECTIONS_FILE)
    view, notes = V.typos_view(corrections)
    assert len(view) == len(corrections)
    assert list(view["type"]) == ["Close, gendered", "Close, gendered", "Distant, non-gendered",
                                  "Plural NP"]
    assert list(view["itm"]) == [14, 37, 7, 26]
    assert all(f"-{int(i):02d}: " in notes[0] for i in corrections["itm"])


def test_the_recorded_parameter_table_is_unchanged_and_its_view_has_the_parts(recorded):
    pd.testing.assert_frame_equal(PANEL.parameter_table(2023), recorded["panel_parameters"]
                                  [["parameter", "stage", "value", "source"]])
    view = V.parameters_view(PANEL.parameter_rows(2023))
    assert len(view) == len(recorded["panel_parameters"])
    assert list(dict.fromkeys(view["stage"])) == ["Every stage", "Non-innovators", "Innovators",
                                                  "Super-innovators"]
    familiarity = view[view["parameter"].str.startswith("Familiarity")]
    assert list(familiarity["simulated_mean"]) == pytest.approx([0.65, 0.53, 1.30])
    assert set(view["source"]) == {"published", "calibrated", "illustrative", "run setting"}


def test_alignment_views_keep_every_row_in_words(recorded):
    reliability, notes = V.reliability_view(recorded["group_reliability"])
    views = {
        "group_reliability": reliability,
        "corrected_comparisons": V.corrected_comparisons_view(
            recorded["corrected_comparisons"], recorded["group_reliability"]),
        "size_matched_comparisons": V.size_matched_view(recorded["size_matched_comparisons"],
                                                        recorded["group_reliability"]),
        "group_correlations": V.correlations_view(recorded["group_correlations"])[0],
        "group_correlation_comparisons": V.steiger_view(
            recorded["group_correlation_comparisons"]),
        "mann_whitney": V.mann_whitney_view(recorded["mann_whitney"])[0],
        "human_main_effects": V.main_effects_view(recorded["human_main_effects"]),
        "model_vs_human_effects": V.side_by_side_view(recorded["model_vs_human_effects"]),
    }
    # the side-by-side view leaves out the intercepts and all but one engine per side (its
    # own test below); results.json keeps them
    table = recorded["model_vs_human_effects"]
    shown = table[(table["term"] != "(Intercept)")
                  & (table["backend"] == table.groupby("side")["backend"].transform("first"))]
    for name, view in views.items():
        assert len(view) == len(shown if name == "model_vs_human_effects" else recorded[name]), \
            name
        assert not cell_problems(text_cells(view)), (name, cell_problems(text_cells(view)))
    # the groups in their order under each heading, the item count in the heading
    first = reliability[reliability["heading"] == "Linguistic stage, all items (335 items)"]
    assert [g.rstrip("†") for g in first["group"]] == V.STAGE_ORDER
    assert reliability.loc[reliability["heading"].str.startswith("Nonbinary"), "group"] \
        .str.rstrip("†").tolist()[:3] == V.NB_ORDER
    # every recorded bootstrap failure is named in the notes
    undefined = recorded["group_reliability"]["n_boot_undefined"].sum()
    assert undefined > 0 and any(f"{undefined} for super-innovator" in n for n in notes)


def test_mann_whitney_view_names_the_people_without_a_score(recorded):
    view, notes = V.mann_whitney_view(recorded["mann_whitney"])
    assert list(dict.fromkeys(view["comparison"])) == ["Non-innovators vs innovators",
                                                       "Innovators vs super-innovators"]
    missing = int(recorded["mann_whitney"][["n_nan_a", "n_nan_b"]].to_numpy().sum())
    assert notes == [f"People without a score, left out of that test: {missing} "
                     "non-innovators (nonbinary acceptance)."]


def test_side_by_side_view_orders_effects_as_the_regressions(recorded):
    view = V.side_by_side_view(recorded["model_vs_human_effects"])
    # the effects in the regressions' order; no intercepts (issue 43: a surprisal and a rating
    # have no common zero), and one engine per side
    assert list(dict.fromkeys(view["effect"])) == [w for w in V.EFFECT_WORDS.values()
                                                   if w != "Intercept"]
    assert view.groupby("side")["backend"].nunique().max() == 1
    table = present(view, "Effects", labels=V.SIDE_LABELS, groups="effect")
    assert not header_problems([c.label for c in table.parts[0].columns])


def test_alignment_tests_note_states_p_and_holm_in_apa(recorded):
    note = V.alignment_tests_note(recorded["alignment_lmm"], "stage")
    assert "super-innovator p < .001 (Holm p < .001)" in note
    assert "p = < " not in note and "score_z" not in note and "medium" not in note
    assert "medium p = " in V.alignment_tests_note(recorded["alignment_lmm"], "nb_group")

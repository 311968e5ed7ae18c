"""RQ2's corrected views (studies.singular_they.alignment) on the simulated panel.

The model side is a stand-in score with a known relation to the panel: minus
the innovators' mean rating of the item's antecedent type (from
studies.singular_they.panel.STAGE_MEANS) plus item noise, so no language
model is needed; the checks are structural or follow from the design.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from studies.singular_they import alignment as AL
from studies.singular_they import presentation as V
from studies.singular_they.human import add_nb_groups
from studies.singular_they.panel import STAGE_MEANS, STAGE_SIZES, simulate_panel
from studies.singular_they.stimuli import load_stimuli


@pytest.fixture(scope="module")
def data():
    stimuli = load_stimuli()
    rng = np.random.default_rng(7)
    scored = stimuli.assign(surprisal=-stimuli["antecedent_type"].map(STAGE_MEANS["innovator"])
                            + rng.normal(0, 0.5, len(stimuli)))
    return scored, add_nb_groups(simulate_panel(stimuli, seed=3))


def test_reliability_table_rows_and_intervals(data):
    scored, human = data
    table = AL.reliability_table(scored, human, n_boot=150, seed=1)
    assert list(table.columns) == AL.GROUP_RELIABILITY_FIELDS
    # 2 groupings x 2 item sets x 3 groups (every nb group is present in the panel)
    assert len(table) == 12
    assert (table["ci_low"] <= table["r_corrected"]).all()
    assert (table["r_corrected"] <= table["ci_high"]).all()
    stage = table[(table["grouping"] == "stage") & (table["item_set"] == "all items")]
    assert dict(zip(stage["group"], stage["n_participants"])) == STAGE_SIZES
    # the Latin square gives each group's item means few raters: the smallest
    # group has the least reliable means
    by = stage.set_index("group")["reliability"]
    assert by["super-innovator"] < by["innovator"]


def test_corrected_comparisons_and_design_note(data):
    scored, human = data
    rel, comp = AL.corrected_tables(scored, human, n_boot=100, seed=1)
    pd.testing.assert_frame_equal(rel, AL.reliability_table(scored, human, n_boot=100, seed=1))
    assert list(comp.columns) == AL.CORRECTED_COMPARISON_FIELDS
    # 2 groupings x 2 item sets x 3 pairs of 3 groups
    assert len(comp) == 12
    by = rel.set_index(["grouping", "item_set", "group"])["r_corrected"]
    for r in comp.itertuples():
        assert r.r_corrected_a == by[(r.grouping, r.item_set, r.group_a)]
        assert r.difference == pytest.approx(r.r_corrected_a - r.r_corrected_b)
        assert r.ci_low <= r.difference <= r.ci_high
        assert r.statistic == pytest.approx(r.difference / r.se)
    table = AL.holm_families(comp, AL.corrected_comparison_family)
    assert set(table["family"]) == {"corrected r difference, by stage",
                                    "corrected r difference, by nb_group"}
    # The panel's Latin square gives each person 55 of the 335 items: the 16
    # super-innovators have 2.6 raters per item on all items (inside the benchmark's
    # sparse design, 335 items x 2.5) but 2.0 on the 320 items without the inanimate
    # controls, where the other groups have 5.0-11.1 (below 6 with fewer than 335 items:
    # non-innovators 5.4, low 5.0, high 5.5). The note names exactly those rows.
    flagged = {(r.grouping, r.item_set, r.group)
               for r in rel[rel["below_calibrated_design"]].itertuples()}
    without = "without inanimate controls"
    assert flagged == {("stage", without, "super-innovator"),
                       ("stage", without, "non-innovator"),
                       ("nb_group", without, "low"), ("nb_group", without, "high")}
    # the report's view marks exactly those rows with a dagger, which its notes explain
    shown, notes = V.reliability_view(rel)
    marked = {(h, g.rstrip("†")) for h, g in zip(shown["heading"], shown["group"])
              if g.endswith("†")}
    assert marked == {("Linguistic stage, without inanimate controls (320 items)",
                       "super-innovator"),
                      ("Linguistic stage, without inanimate controls (320 items)",
                       "non-innovator"),
                      ("Nonbinary acceptance, without inanimate controls (320 items)", "low"),
                      ("Nonbinary acceptance, without inanimate controls (320 items)", "high")}
    assert any(n.startswith("† ") and "30 items × 6 raters per item" in n for n in notes)
    unmarked, notes = V.reliability_view(rel[~rel["below_calibrated_design"]])
    assert not any(g.endswith("†") for g in unmarked["group"])
    assert not any(n.startswith("†") for n in notes)


def test_size_matched_table_and_holm_families(data):
    scored, human = data
    table = AL.holm_families(AL.size_matched_table(scored, human, n_boot=100, seed=1),
                             AL.size_matched_family)
    stage = table[table["grouping"] == "stage"]
    assert (stage["matched_size"] == 16).all() and len(stage) == 2 * 3
    assert set(table["family"]) == {"size-matched, by stage", "size-matched, by nb_group"}
    assert (table["family_size"] == 6).all()
    assert (table["p_holm"] >= table["p_value"]).all()
    assert (table["ci_low"] <= table["difference"]).all()
    assert (table["difference"] <= table["ci_high"]).all()


@pytest.mark.slow
@pytest.mark.needs_r
def test_alignment_lmm_table(data):
    scored, human = data
    table, fits = AL.alignment_lmm_table(scored, human, backends=["lme4"], bayes=False,
                                         draws=0, seed=1)
    assert list(table.columns) == AL.ALIGNMENT_LMM_FIELDS
    stage = table[table["grouping"] == "stage"]
    assert list(stage["term"])[-2:] == ["score_z:group[innovator]",
                                        "score_z:group[super-innovator]"]
    table = AL.holm_families(table, AL.lmm_family)
    aligned = table[table["family"] != ""]
    assert len(aligned) == 4 and (aligned["family_size"] == 2).all()
    assert table.loc[table["term"] == "(Intercept)", "family"].eq("").all()


def test_corrected_comparisons_carry_the_equivalence_test_and_verdict():
    """The primary test of RQ2 (issue 31): TOST at the stated bound and a verdict, by hand."""
    from scipy import stats

    from studies.singular_they.alignment import EQUIVALENCE_BOUND, with_equivalence

    table = pd.DataFrame({"difference": [0.01, 0.30, 0.05], "se": [0.03, 0.05, 0.08],
                          "p_value": [0.74, 1e-9, 0.53], "p_holm": [0.74, 3e-9, 0.74]})
    out = with_equivalence(table)
    assert out["primary"].all() and (out["equivalence_bound"] == EQUIVALENCE_BOUND).all()
    b = EQUIVALENCE_BOUND
    assert out["p_equivalence"].iloc[0] == pytest.approx(
        max(stats.norm.sf((0.01 + b) / 0.03), stats.norm.cdf((0.01 - b) / 0.03)))
    assert list(out["verdict"]) == [f"equivalent within the bound (+/-{b:g})", "difference",
                                    "no evidence either way at this sensitivity"]
    # in one family the TOST p-values are Holm-adjusted too: .0013 x 3 is still below .05,
    # the other two (.5 and ~1) stay where they are or rise to the running maximum
    family = with_equivalence(table.assign(family="stage"))
    p = family["p_equivalence"]
    assert family["p_equivalence_holm"].iloc[0] == pytest.approx(3 * p.iloc[0])
    assert (family["p_equivalence_holm"] >= p).all()
    assert family["verdict"].iloc[0].startswith("equivalent")


def test_profile_table_one_row_per_pair(data):
    scored, human = data
    table = AL.profile_table(scored, human, n_boot=20, seed=1)
    stage_pairs = len(STAGE_SIZES) * (len(STAGE_SIZES) - 1) // 2
    assert (table["grouping"] == "stage").sum() == 2 * stage_pairs      # two item sets
    ceiling = np.sqrt(2 * (1 - np.minimum(table["r_profiles_corrected"], 1)))
    np.testing.assert_allclose(table["max_alignment_difference"], ceiling)


def test_holm_families_keeps_its_columns_when_no_row_has_a_p_value():
    # groups too small to test give NaN p-values everywhere: the table still has p_holm
    # (NaN) and the report's views read it (a KeyError reached the user before)
    table = pd.DataFrame({"grouping": ["stage"], "item_set": ["all"], "group_a": ["a"],
                          "group_b": ["b"], "difference": [0.1], "se": [float("nan")],
                          "p_value": [float("nan")]})
    out = AL.with_equivalence(AL.holm_families(table, AL.corrected_comparison_family))
    assert out["p_holm"].isna().all() and out["family"].tolist() == [""]
    # never tested, so neither a difference nor "no evidence either way" (issue 44, case 5)
    assert out["verdict"].tolist()[0].startswith("not computed (")
    assert "not computed, outside the family" in AL.comparison_notes(out)[0]

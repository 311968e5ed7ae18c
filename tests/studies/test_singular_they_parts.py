"""studies.singular_they: gbstats' own frames (--stimuli gbstats), the simulated panel,
the human-data loader, analyses.

Expected counts come from the design as published (Watson et al. 2023,
Camilliere et al. 2021): 40 frames x 8 antecedent types + 15 inanimate
controls = 335 stimuli; target forms split 10/10/10/10 over the 40 frames.
The published stimuli themselves (the default) are tested in
test_singular_they_camilliere.py.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gbstats.errors import DataValidationError
from studies.singular_they import analysis as A
from studies.singular_they.human import load_human, nb_acceptance_group
from studies.singular_they.panel import STAGE_SIZES, expected_close_gendered_effects, simulate_panel
from studies.singular_they.stimuli import (ANTECEDENT_TYPES, STIMULI_DIR, expand_stimuli,
                                           load_stimuli, read_controls, read_frames)


@pytest.fixture(scope="module")
def stimuli():
    return load_stimuli()


def test_design_counts(stimuli):
    assert len(stimuli) == 40 * 8 + 15
    counts = stimuli["antecedent_type"].value_counts()
    assert all(counts[t] == 40 for t in ANTECEDENT_TYPES if t != "inanimate")
    assert counts["inanimate"] == 15
    frames = stimuli[stimuli["antecedent_type"] != "inanimate"].drop_duplicates("frame")
    assert frames["target_form"].value_counts().to_dict() == {
        "they": 10, "them": 10, "their": 10, "themselves": 10}
    assert stimuli["item"].is_unique
    # only the four bold conditions carry the closeness and gender indicators
    assert stimuli["close"].notna().sum() == 160


def test_every_sentence_is_prefix_target_rest(stimuli):
    for row in stimuli.itertuples():
        assert row.sentence.startswith(row.prefix + " " + row.target_form)
        assert row.prefix[0].isupper()


def test_committed_stimuli_file_is_the_expansion_of_the_frames():
    committed = pd.read_csv(STIMULI_DIR / "stimuli.tsv", sep="\t", dtype=str,
                            keep_default_na=False)
    fresh = expand_stimuli(read_frames(), read_controls()).astype(str).replace("nan", "")
    pd.testing.assert_frame_equal(committed, fresh[committed.columns], check_dtype=False)


def test_names_are_the_papers(stimuli):
    gendered = set(stimuli.loc[stimuli["antecedent_type"] == "gendered_name", "antecedent"])
    assert len(gendered) == 40 and {"Aaron", "Zoey", "Penelope"} <= gendered
    neutral = set(stimuli.loc[stimuli["antecedent_type"] == "nongendered_name", "antecedent"])
    assert len(neutral) == 21 and {"Taylor", "Pat", "Remi"} <= neutral


def test_nb_acceptance_groups_follow_the_paper():
    assert [nb_acceptance_group(v) for v in (0, 1, 2, 3, 4, 5)] == [
        "low", "medium", "medium", "high", "high", "high"]
    assert nb_acceptance_group(np.nan) is None


def test_panel_design_is_a_latin_square(stimuli):
    panel = simulate_panel(stimuli, seed=1)
    assert panel["participant"].nunique() == sum(STAGE_SIZES.values())
    per_person = panel.merge(stimuli[["item", "antecedent_type"]], on="item") \
        .groupby(["participant", "antecedent_type"]).size().unstack()
    # 40 frames over 8 types in rotation: 5 of each frame type, plus all 15 controls
    assert (per_person.drop(columns="inanimate") == 5).all().all()
    assert (per_person["inanimate"] == 15).all()


def test_expected_effects_by_hand():
    # one stage with mean 5 (distant, no), 4 (close, no), 3 (distant, yes), 1 (close, yes):
    # intercept 5, close -1, gendered -2, interaction 1 - 4 - 3 + 5 = -1
    from studies.singular_they import panel as P

    means = {"distant_nongendered": 5, "close_nongendered": 4, "distant_gendered": 3,
             "close_gendered": 1}
    saved = {s: dict(P.STAGE_MEANS[s]) for s in P.STAGES}
    try:
        for s in P.STAGES:
            P.STAGE_MEANS[s].update(means)
        got = expected_close_gendered_effects()
    finally:
        for s in P.STAGES:
            P.STAGE_MEANS[s].clear()
            P.STAGE_MEANS[s].update(saved[s])
    assert got == {"(Intercept)": 5, "close": -1, "gendered": -2, "close:gendered": -1}


@pytest.mark.needs_r
@pytest.mark.slow
def test_human_model_recovers_the_panels_effects(stimuli):
    """The lme4 fit of the human-side model on a large simulated panel recovers
    the population effects that the generating parameters imply.

    Tolerance: |estimate - truth| < 3.29 SE, the two-sided 99.9% bound, per
    term. A larger panel (4x the published stage sizes) keeps SEs small; the
    pooled model omits the stage-specific slopes, so the bound is loose on
    purpose rather than a 95% coverage claim.
    """
    from gbstats.mixed.lmm import fit_lmm

    sizes = {s: 4 * n for s, n in STAGE_SIZES.items()}
    panel = simulate_panel(stimuli, seed=11, stage_sizes=sizes)
    fit = fit_lmm(A.HUMAN_FORMULA, A.human_model_rows(panel, stimuli), backend="lme4")
    truth = expected_close_gendered_effects(sizes)
    for term, value in truth.items():
        row = fit.coef(term)
        assert abs(row["estimate"] - value) < 3.29 * row["se"], (term, row["estimate"], value)


@pytest.mark.needs_r
@pytest.mark.slow
def test_sum_coded_human_model_reports_main_effects(stimuli):
    """Under sum coding the human model's close and gendered effects are main
    effects. By hand, from the treatment-coded truth (intercept I at distant,
    non-gendered; close c; gendered g; interaction i) the cell means are
    I, I + c, I + g, I + c + g + i, so close - distant averaged over gender
    marking is ((I + c) + (I + c + g + i) - I - (I + g)) / 2 = c + i / 2, and
    gendered - nongendered is g + i / 2. Tolerance as in the test above."""
    from gbstats.mixed.lmm import fit_lmm

    sizes = {s: 4 * n for s, n in STAGE_SIZES.items()}
    panel = simulate_panel(stimuli, seed=11, stage_sizes=sizes)
    rows = A.human_factor_rows(A.human_model_rows(panel, stimuli))
    fit = fit_lmm(A.HUMAN_FORMULA, rows, backend="lme4", contrasts=A.HUMAN_CONTRASTS)
    assert list(fit.coefs["term"]) == ["(Intercept)", "close1", "gendered1", "close1:gendered1"]
    truth = expected_close_gendered_effects(sizes)
    effects = A.human_main_effects({"lme4": fit}).set_index("effect")
    assert effects.loc["close", "coding"] == "close = +1, distant = -1"
    for effect, value in (("close", truth["close"] + truth["close:gendered"] / 2),
                          ("gendered", truth["gendered"] + truth["close:gendered"] / 2)):
        row = effects.loc[effect]
        assert row["estimate"] == pytest.approx(2 * fit.coef(f"{effect}1")["estimate"])
        assert abs(row["estimate"] - value) < 3.29 * row["se"], (effect, row["estimate"], value)
    # the report's model table says the coding in the study's words
    from gbstats.report.model_table import model_table
    from studies.singular_they import presentation as V

    notes = " ".join(model_table(V.engine_models({"lme4": fit}), terms=V.HUMAN_TERMS,
                                 variables=V.HUMAN_VARIABLES).notes)
    assert "Closeness: sum-to-zero coding" in notes and "Gender marking: sum-to-zero" in notes


def test_surprisal_by_type_on_hand_data():
    scored = pd.DataFrame({"antecedent_type": ["plural"] * 3 + ["inanimate"],
                           "surprisal": [1.0, 2.0, 3.0, 5.0]})
    out = A.surprisal_by_type(scored).set_index("antecedent_type")
    assert out.loc["plural", "mean"] == 2.0
    # t(0.975, 2) = 4.302653; sd = 1; half width = 4.302653 / sqrt(3)
    assert out.loc["plural", "ci_high"] == pytest.approx(2.0 + 4.302653 / np.sqrt(3), rel=1e-6)
    assert np.isnan(out.loc["inanimate", "ci_low"])


def _within_design(values: dict) -> pd.DataFrame:
    """{frame: {antecedent type: surprisal}} as scored rows."""
    return pd.DataFrame([{"frame": f, "antecedent_type": t, "surprisal": v}
                         for f, by_type in values.items() for t, v in by_type.items()])


def test_within_item_intervals_ignore_how_much_frames_differ():
    # every frame is 1 bit lower for "plural" than for "quantified": the frames differ a
    # lot (0, 10, 20 bits), the difference not at all, so the within-item interval is 0 wide
    scored = _within_design({f: {"quantified": base + 1.0, "plural": base}
                             for f, base in (("a", 0.0), ("b", 10.0), ("c", 20.0))})
    out = A.surprisal_within_items(scored).set_index("antecedent_type")
    assert out.loc["plural", "mean"] == pytest.approx(10.0)
    assert out.loc["plural", "ci_high"] - out.loc["plural", "ci_low"] == pytest.approx(0.0)
    between = A.surprisal_by_type(scored).set_index("antecedent_type")
    assert between.loc["plural", "ci_high"] - between.loc["plural", "ci_low"] > 40


def test_within_item_interval_by_hand_with_moreys_correction():
    # 3 frames x 2 types; by hand: frame means 2, 4, 3; grand mean 3; normalised
    # "plural" values 1 - 2 + 3 = 2, 4 - 4 + 3 = 3, 4 - 3 + 3 = 4: SD 1. Morey (2008):
    # half width = t(.975, 2) * 1 / sqrt(3) * sqrt(2 / (2 - 1)) = 4.302653 * 0.816497
    scored = _within_design({"a": {"plural": 1.0, "quantified": 3.0},
                             "b": {"plural": 4.0, "quantified": 4.0},
                             "c": {"plural": 4.0, "quantified": 2.0},
                             "d": {"plural": 9.0}})          # lacks a type: left out
    out = A.surprisal_within_items(scored).set_index("antecedent_type")
    assert out.loc["plural", "n"] == 3 and out.loc["plural", "mean"] == pytest.approx(3.0)
    half = 4.302653 / np.sqrt(3) * np.sqrt(2)
    assert out.loc["plural", "ci_high"] == pytest.approx(3.0 + half, rel=1e-6)
    assert out.loc["plural", "interval"] == "within items"


def test_inanimate_controls_keep_a_between_item_interval():
    scored = pd.concat([_within_design({"a": {"plural": 1.0, "quantified": 3.0},
                                        "b": {"plural": 4.0, "quantified": 4.0}}),
                        pd.DataFrame({"frame": ["i1", "i2", "i3"], "surprisal": [1.0, 2.0, 3.0],
                                      "antecedent_type": "inanimate"})])
    out = A.surprisal_within_items(scored).set_index("antecedent_type")
    assert out.loc["inanimate", "interval"] == "between items"
    # t(0.975, 2) = 4.302653; sd = 1
    assert out.loc["inanimate", "ci_high"] == pytest.approx(2.0 + 4.302653 / np.sqrt(3))


# --- the human-data loader -------------------------------------------------------------

CAMILLIERE = """ID exp cond itm rating clust nBAcc gId
p1 practice gname 1 4 1 2 1
p1 exp gname 1 3 1 2 1
p1 exp gfamily 2 2 1 2 1
p1 exp inanimate 43 1 1 2 1
p2 exp ngnoun 1 6 2 NA NA
p2 exp plural 2 7 2 NA NA
"""


def write(tmp_path, text, name):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def published(data_dir):
    from studies.singular_they.stimuli import select_stimuli

    return select_stimuli(None, data_dir)[0]


def test_camilliere_layout_is_read_and_practice_counted(tmp_path, published):
    trials, log = load_human(write(tmp_path, CAMILLIERE, "camilliere_data.txt"), published)
    assert len(trials) == 5
    assert set(trials["item"]) == {"gname-01", "gfamily-02", "inanimate-43", "ngnoun-01",
                                   "plural-02"}
    assert trials.set_index("participant")["stage"].to_dict() == {"p1": "innovator",
                                                                  "p2": "non-innovator"}
    records = {r["reason"]: r["n"] for r in log.to_records()}
    assert records["practice trials (exp == 'practice')"] == 1
    assert trials.loc[trials["participant"] == "p2", "nb_group"].isna().all()


def test_camilliere_unknown_condition_names_row_and_column(tmp_path, published):
    bad = CAMILLIERE.replace("p2 exp plural", "p2 exp plurall")
    with pytest.raises(DataValidationError) as exc:
        load_human(write(tmp_path, bad, "c.txt"), published)
    assert exc.value.row == 7 and exc.value.column == "cond"


GBSTATS = ("participant,item,rating,stage,nb_acceptance\n"
           "a,f01-plural,6,innovator,3\n"
           "a,f02-close_gendered,2,innovator,3\n"
           "b,i01,1,non-innovator,0\n")


def test_gbstats_layout_round_trip(tmp_path, stimuli):
    trials, log = load_human(write(tmp_path, GBSTATS, "h.csv"), stimuli)
    assert trials["nb_group"].tolist() == ["high", "high", "low"]
    assert log.to_records()[-1]["n"] == 0


@pytest.mark.parametrize("mutate, column, row", [
    (lambda t: t.replace("a,f02-close_gendered", "a,f99-close_gendered"), "item", 3),
    (lambda t: t.replace("b,i01,1,non-innovator", "b,i01,1,noninnovator"), "stage", 4),
    (lambda t: t + "a,f01-plural,5,innovator,3\n", "participant", 5),
    (lambda t: t.replace("b,i01,1,non-innovator,0", "b,i01,1,non-innovator,7"), "nb_acceptance", 4),
    (lambda t: t.replace("a,f02-close_gendered,2,innovator", "a,f02-close_gendered,2,super-innovator"),
     "stage", 2),
    (lambda t: t.replace(",6,", ",six,"), "rating", 2),
    (lambda t: t.replace("stage", "stages"), "stage", None),
])
def test_bad_human_files_get_clean_errors(tmp_path, stimuli, mutate, column, row):
    with pytest.raises(DataValidationError) as exc:
        load_human(write(tmp_path, mutate(GBSTATS), "h.csv"), stimuli)
    assert exc.value.column == column and exc.value.row == row
    assert "h.csv" in str(exc.value)


def test_empty_human_file(tmp_path, stimuli):
    with pytest.raises(DataValidationError, match="empty"):
        load_human(write(tmp_path, "", "h.csv"), stimuli)

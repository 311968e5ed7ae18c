"""The design check (gbstats.mixed.design) on designs whose answer is known by construction.

Each design is built so that which predictor varies between which factor is a fact of the
construction, not of the code: a rating drawn once per first name is constant within first
names; a condition assigned per trial varies within them; and so on.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gbstats.errors import DataValidationError
from gbstats.mixed.design import (DESIGN_CHECK_PREFIX, between_factor_terms, candidate_factors,
                                  design_warnings)
from gbstats.mixed.formula import parse_formula


def names_by_frames(seed: int = 0, n_names: int = 21, n_frames: int = 8) -> pd.DataFrame:
    """The name_gender model side in miniature: every first name in every frame, in two
    conditions; the rating is a property of the name (drawn once per name)."""
    rng = np.random.default_rng(seed)
    names = [f"name{i:02d}" for i in range(n_names)]
    rating = dict(zip(names, rng.uniform(1, 7, n_names)))
    rows = [{"first_name": n, "frame": f"f{j}", "condition": c}
            for n in names for j in range(n_frames) for c in ("first", "full")]
    out = pd.DataFrame(rows)
    out["rating"] = out["first_name"].map(rating) - 4.0
    name_effect = dict(zip(names, rng.normal(size=n_names)))   # what a name adds beyond its rating
    out["trial_noise"] = rng.normal(size=len(out))          # varies within every factor
    out["y"] = 0.3 * out["rating"] + out["first_name"].map(name_effect) + out["trial_noise"]
    return out


def terms(table: pd.DataFrame) -> dict:
    return dict(zip(table["term"], table["factor"]))


def test_between_factor_predictor_without_its_random_effect_is_reported():
    data = names_by_frames()
    table = between_factor_terms("y ~ rating + (1|frame)", data)
    assert terms(table) == {"rating": "first_name"}
    row = table.iloc[0]
    assert row["n_levels"] == 21 and row["suggestion"] == "(1 | first_name)"
    assert row["rows_per_level"] == pytest.approx(len(data) / 21)
    [text] = design_warnings("y ~ rating + (1|frame)", data)
    assert text.startswith(DESIGN_CHECK_PREFIX)
    assert "rating" in text and "first_name" in text and "(1 | first_name)" in text


def test_with_the_random_effect_nothing_is_reported():
    data = names_by_frames()
    assert between_factor_terms("y ~ rating + (1|frame) + (1|first_name)", data).empty
    # a random slope term alone is no random intercept for the factor
    table = between_factor_terms("y ~ rating + (1|frame) + (0 + trial_noise|first_name)", data)
    assert terms(table) == {"rating": "first_name"}


def test_within_predictor_is_not_reported():
    data = names_by_frames()
    assert between_factor_terms("y ~ trial_noise + condition + (1|frame)", data).empty


def test_interaction_is_reported_only_when_every_part_is_between():
    data = names_by_frames()
    # condition varies within names, so condition:rating varies within names too
    table = between_factor_terms("y ~ condition * rating + (1|frame)", data)
    assert terms(table) == {"rating": "first_name"}
    # a second name-level predictor: their interaction is name-level as well
    data["name_length"] = data["first_name"].map(
        {n: float(i % 5) for i, n in enumerate(sorted(data["first_name"].unique()))})
    table = between_factor_terms("y ~ rating * name_length + (1|frame)", data)
    assert terms(table) == {"rating": "first_name", "name_length": "first_name",
                            "rating:name_length": "first_name"}


def crossed(seed: int = 1, n_people: int = 30, n_items: int = 24) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [{"participant": f"p{p}", "item": f"i{i}"} for p in range(n_people)
            for i in range(n_items)]
    out = pd.DataFrame(rows)
    item_x = dict(zip([f"i{i}" for i in range(n_items)], rng.normal(size=n_items)))
    person_x = dict(zip([f"p{p}" for p in range(n_people)], rng.normal(size=n_people)))
    out["item_x"] = out["item"].map(item_x)
    out["person_x"] = out["participant"].map(person_x)
    out["y"] = rng.normal(size=len(out))
    return out


def test_crossed_design():
    data = crossed()
    full = "y ~ item_x + person_x + (1|participant) + (1|item)"
    assert between_factor_terms(full, data).empty
    assert terms(between_factor_terms("y ~ item_x + person_x + (1|participant)", data)) == {
        "item_x": "item"}
    assert terms(between_factor_terms("y ~ item_x + person_x + (1|item)", data)) == {
        "person_x": "participant"}


def nested(seed: int = 2) -> pd.DataFrame:
    """Full names nested in first names (3 each), as in Gardner's Exp 3; people x names."""
    rng = np.random.default_rng(seed)
    firsts = [f"first{i}" for i in range(12)]
    items = [(f, f"{f} last{k}") for f in firsts for k in range(3)]
    rows = [{"participant": f"p{p}", "first_name": f, "item": it}
            for p in range(20) for f, it in items]
    out = pd.DataFrame(rows)
    out["rating"] = out["first_name"].map(dict(zip(firsts, rng.uniform(1, 7, 12))))
    out["school"] = out["participant"].map({f"p{p}": f"s{p // 5}" for p in range(20)})
    out["school_x"] = out["school"].map({f"s{s}": float(s) for s in range(4)})
    out["y"] = rng.normal(size=len(out))
    return out


def test_nested_design():
    data = nested()
    # items nested in first names: the item intercept does not carry the first-name variance
    table = between_factor_terms("y ~ rating + (1|participant) + (1|item)", data)
    assert terms(table) == {"rating": "first_name"}
    # with the coarser factor's intercept it is covered, finer factors included
    assert between_factor_terms("y ~ rating + (1|participant) + (1|first_name)", data).empty
    # neither has one: the coarsest is named, the finer one listed
    table = between_factor_terms("y ~ rating + (1|participant)", data)
    assert terms(table) == {"rating": "first_name"}
    assert table.iloc[0]["also_constant_within"] == "item"
    # a school-level predictor: participants (nested in schools) do not cover it
    table = between_factor_terms("y ~ school_x + (1|participant) + (1|item)", data)
    assert terms(table) == {"school_x": "school"}
    assert between_factor_terms("y ~ school_x + (1|school) + (1|item)", data).empty


def test_numeric_and_categorical_relabellings_are_not_reported():
    data = names_by_frames()
    # a categorical predictor and a column that only names its levels
    data["condition_label"] = data["condition"].map({"first": "First name", "full": "Full name"})
    assert between_factor_terms("y ~ condition + (1|frame)", data).empty
    # a centred predictor and its raw integer version
    data["raw_score"] = (data["rating"] * 10).round().astype(int)
    data["centred_score"] = data["raw_score"] - data["raw_score"].mean()
    table = between_factor_terms("y ~ centred_score + (1|frame) + (1|first_name)", data)
    assert table.empty
    # a 0/1 predictor that one text column relabels
    data["is_first"] = (data["condition"] == "first").astype(float)
    assert between_factor_terms("y ~ is_first + (1|frame)", data).empty


def test_a_code_of_the_fixed_design_cells_is_not_a_unit():
    """singular_they's design: close x gendered, 4 cells named by antecedent_type, 40 frames.
    The cell code is a function of the fixed factors: a random effect for it would be
    confounded with them, so it is not reported; a frame-level predictor still is."""
    rng = np.random.default_rng(5)
    cells = {"gfamily": ("close", "yes"), "gnoun": ("distant", "yes"),
             "spkknows": ("close", "no"), "ngnoun": ("distant", "no")}
    rows = pd.DataFrame([(f"f{k:02d}", t) for k in range(40) for t in cells],
                        columns=["frame", "antecedent_type"])
    rows["close"] = rows["antecedent_type"].map(lambda t: cells[t][0])
    rows["gendered"] = rows["antecedent_type"].map(lambda t: cells[t][1])
    rows["surprisal"] = rng.normal(size=len(rows))
    assert between_factor_terms("surprisal ~ close + gendered + (1|frame)", rows).empty
    rows["frame_length"] = rows["frame"].map({f"f{k:02d}": float(k % 7) for k in range(40)})
    table = between_factor_terms("surprisal ~ close + frame_length + (1|antecedent_type)", rows)
    assert terms(table) == {"frame_length": "frame"}


def test_numeric_predictor_one_to_one_with_an_identifier_is_reported():
    """21 names, 21 distinct ratings: the name is the unit, not a relabelling."""
    data = names_by_frames()
    assert data.groupby("first_name")["rating"].first().nunique() == 21
    assert terms(between_factor_terms("y ~ rating + (1|frame)", data)) == {"rating": "first_name"}


def test_unreplicated_factor_is_not_a_unit():
    data = names_by_frames()
    data["row_id"] = [f"r{i}" for i in range(len(data))]
    table = between_factor_terms("y ~ trial_noise + (1|frame)", data)
    assert table.empty


def test_rows_missing_a_formula_value_are_left_out_as_the_fit_leaves_them():
    data = names_by_frames()
    # last-name rows carry no rating (as in Gardner's Exp 1) and a reused first-name key
    extra = data.head(40).assign(rating=np.nan, first_name="(last name)")
    both = pd.concat([data, extra], ignore_index=True)
    assert terms(between_factor_terms("y ~ rating + (1|frame)", both)) == {"rating": "first_name"}


def test_candidates_and_named_factors():
    data = names_by_frames()
    parsed = parse_formula("y ~ rating + (1|frame)")
    assert candidate_factors(parsed, data) == ["frame", "first_name", "condition"]
    assert between_factor_terms(parsed, data, factors=["frame"]).empty
    with pytest.raises(DataValidationError, match="not in the data"):
        between_factor_terms(parsed, data, factors=["first_nam"])


def test_statsmodels_fit_carries_the_warning_and_the_table_notes_show_it_once():
    from gbstats.mixed.fitting import table_notes
    from gbstats.mixed.lmm import fit_lmm

    data = names_by_frames()
    fit = fit_lmm("y ~ rating + (1|frame)", data, backend="statsmodels")
    found = [w for w in fit.warnings if w.startswith(DESIGN_CHECK_PREFIX)]
    assert len(found) == 1 and "first_name" in found[0]
    assert fit.fit_stats["design_check"][0]["factor"] == "first_name"
    notes = table_notes({"statsmodels": fit, "again": fit})
    assert notes.count(found[0]) == 1
    clean = fit_lmm("y ~ trial_noise + (1|frame)", data, backend="statsmodels")
    assert clean.fit_stats["design_check"] == []
    assert not any(w.startswith(DESIGN_CHECK_PREFIX) for w in clean.warnings)


@pytest.mark.needs_r
def test_lme4_fit_carries_the_warning():
    from gbstats.mixed.lmm import fit_lmm

    data = names_by_frames()
    fit = fit_lmm("y ~ condition * rating + (1|frame)", data, backend="lme4")
    found = [w for w in fit.warnings if w.startswith(DESIGN_CHECK_PREFIX)]
    assert len(found) == 1 and found[0].split()[2] == "rating"
    fixed = fit_lmm("y ~ condition * rating + (1|frame) + (1|first_name)", data, backend="lme4")
    assert fixed.fit_stats["design_check"] == []
    # the fix matters: the rating's df falls from the rows' count towards the names'
    df_before = fit.coef("rating")["df"]
    df_after = fixed.coef("rating")["df"]
    assert df_before > 100 and df_after < 25


def test_an_age_column_beside_a_participant_intercept_is_no_unit_of_replication():
    # issue 44: with a between-subject group and (1 | participant), an integer age column
    # (most ages held by one participant) was named: "add (1 | age)", in every table note
    rng = np.random.default_rng(3)
    # 30 people, 24 ages: six ages are held by two people each, of the same group (as
    # happens by chance in a small pilot), the rest by one
    ages = np.r_[[18, 18, 19, 19, 20, 20], np.arange(24, 33),      # group a: 15 people
                 [21, 21, 22, 22, 23, 23], np.arange(33, 42)]       # group b: 15 people
    people = pd.DataFrame({"participant": [f"p{i}" for i in range(30)],
                           "group": np.repeat(["a", "b"], 15), "age": ages})
    assert people.groupby("age")["group"].nunique().max() == 1 and people["age"].nunique() == 24
    trials = people.loc[people.index.repeat(12)].reset_index(drop=True)
    trials["y"] = rng.normal(size=len(trials))
    found = between_factor_terms("y ~ group + (1 | participant)", trials)
    assert found.empty, found
    # schools holding many participants each are a unit of replication: still named
    people["school"] = np.repeat([f"s{k}" for k in range(6)], 5)
    trials = people.loc[people.index.repeat(12)].reset_index(drop=True)
    trials["y"] = rng.normal(size=len(trials))
    found = between_factor_terms("y ~ group + (1 | participant)", trials)
    assert found["factor"].tolist() == ["school"]


def test_lme4_messages_read_as_words_in_table_notes():
    # issue 43: "see help('isSingular')" and max|grad| in a table's note are R, not words
    from gbstats.mixed.fitting import in_words_for_a_table

    singular = in_words_for_a_table("boundary (singular) fit: see help('isSingular')")
    assert "isSingular" not in singular and "estimated at zero" in singular
    grad = in_words_for_a_table("Model failed to converge with max|grad| = 0.0425739 "
                                "(tol = 0.002, component 1)")
    assert grad == ("the optimiser did not converge (largest gradient 0.0426, tolerance "
                    "0.002); read these estimates with caution")
    assert in_words_for_a_table("quasi-complete separation of x") == "quasi-complete separation of x"

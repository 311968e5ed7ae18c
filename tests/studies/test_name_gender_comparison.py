"""name_gender's like-for-like pieces on the real trials, with model scores set by hand.

People's counts are facts of the published data (Exp 1: 77 singular-they and 337
repeated-name responses, the codebook's categories; 681 Other responses in all); the
model's side is given constant probabilities so that every ratio is known.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gbstats.alignment.like_for_like import model_shares
from gbstats.exclusions import ExclusionLog
from studies.name_gender import alignment as A
from studies.name_gender import comparison as C
from studies.name_gender import model_side as M
from studies.name_gender.stimuli import pronoun_prompts


@pytest.fixture(scope="module")
def tables(data_dir):
    from gbstats.data.registry import load_dataset

    return load_dataset("gardner2024", data_dir).tables


def fake_scores(tables) -> pd.DataFrame:
    """P(he) .3, P(she) .1, P(they) .1, P(name) .05 at every prompt."""
    prompts = pronoun_prompts(tables)
    raw = prompts.assign(p_raw_he=0.3, p_raw_she=0.1, p_raw_they=0.1, p_raw_name=0.05)
    out = model_shares(raw, M.OPTION_SETS, target="she")
    return M.with_ratings(out.assign(p_she=0.2, p_he=0.6, p_they=0.2, she_logit=np.log(0.25),
                                     logit_two_way=np.log(1 / 3)), tables)


def test_response_shares_count_the_published_categories(tables):
    shares = C.response_shares(tables, fake_scores(tables))
    e1 = tables["exp1"]
    by = shares.set_index(["experiment", "condition", "option_set"])
    for cond, part in e1.groupby("Condition"):
        two = by.loc[(1, cond, "he, she")]
        assert two["people_n"] == (part["He"] + part["She"]).sum()
        assert two["people_share"] == pytest.approx(part["She"].sum() / two["people_n"])
        assert two["people_coverage"] == pytest.approx(1 - part["Other"].mean())
        four = by.loc[(1, cond, "he, she, they, the name")]
        typed = part["OtherType"].isin(["singular they", "repeat name"]).sum()
        assert four["people_n"] == two["people_n"] + typed
        assert two["model_share"] == pytest.approx(0.25)              # .1 / (.3 + .1)
        assert four["model_share"] == pytest.approx(0.1 / 0.55)
        assert four["model_coverage"] == pytest.approx(0.55)
        assert by.loc[(1, cond, "all responses"), "people_share"] == pytest.approx(
            part["She"].mean())
    assert (e1["OtherType"] == "singular they").sum() == 77
    assert (e1["OtherType"] == "repeat name").sum() == 337
    # Exp 3 codes no kind of Other: only the two-way ratio exists on both sides
    assert set(shares.loc[shares["experiment"] == 3, "option_set"]) == {"all responses",
                                                                        "he, she"}


def test_they_shares_like_for_like(tables):
    """People's they among he, she and singular they, against the model's P(they) among the
    three (.1 / .5 in fake_scores); the 77 singular-they responses of the codebook."""
    out = C.they_shares(tables, fake_scores(tables)).set_index("condition")
    e1 = tables["exp1"]
    assert out["people_n"].sum() == len(e1)
    assert (out["people_they_all"] * out["people_n"]).sum() == pytest.approx(77)
    for cond, part in e1.groupby("Condition"):
        they = int((part["OtherType"] == "singular they").sum())
        three = int((part["He"] + part["She"]).sum()) + they
        row = out.loc[cond]
        assert row["people_n_in_set"] == three
        assert row["people_share"] == pytest.approx(they / three)
        assert row["people_coverage"] == pytest.approx(three / len(part))
        assert row["people_ci_low"] <= row["people_share"] <= row["people_ci_high"]
        assert row["model_share"] == pytest.approx(0.2)               # .1 / (.3 + .1 + .1)
        assert row["model_coverage"] == pytest.approx(0.5)
        assert row["model_raw_they"] == pytest.approx(0.1)


def test_response_coverage_per_condition(tables):
    table = C.coverage_table(fake_scores(tables))
    assert set(table["option_set"]) == set(M.OPTION_SET_LABELS.values())
    row = table[(table["experiment"] == 3) & (table["option_set"] == "he, she, they")].iloc[0]
    assert (row["mass_mean"], row["mass_min"], row["mass_max"]) == pytest.approx((0.5,) * 3)
    assert table.groupby("experiment")["n_prompts"].sum().to_dict() == {1: 182 * 3, 3: 189 * 3}


def test_group_trials_keep_he_she_responses_and_count_the_rest(tables):
    items = M.item_table(fake_scores(tables), tables, by_condition=True)
    log = ExclusionLog()
    grouped = A.group_trials(tables["exp1"], items, log, 1)
    e1 = tables["exp1"]
    records = {r["reason"]: r["n"] for r in log.to_records()}
    no_gender = int(e1["SubjGenderMale"].isna().sum())
    others = int((e1["Other"][e1["SubjGenderMale"].notna()] == 1).sum())
    assert records[next(k for k in records if "gender not recorded" in k)] == no_gender
    assert records[next(k for k in records if "Other response" in k)] == others
    assert len(grouped) + sum(records.values()) == len(e1)
    assert set(grouped["group"]) == {A.MEN, A.NON_MALE}
    assert grouped.loc[grouped["group"] == A.MEN, "Participant"].nunique() == 244
    assert grouped["model_logit"].notna().all()


def test_effect_weights(tables):
    mirrors = {m.key: m for m in M.MIRRORS}
    specs = {name: (grid, w) for name, grid, w in
             C.effect_specs(mirrors["exp1_m_cond"], tables)}
    grid, w = specs["last minus first and full"]
    assert dict(zip(grid["Condition"], w)) == {"first": -0.5, "full": -0.5, "last": 1.0}
    specs = {name: (grid, w) for name, grid, w in
             C.effect_specs(mirrors["exp3_m_noOther"], tables)}
    grid, w = specs["rating slope (per point)"]
    # a slope of 1 per point in every condition reads as 1, whatever the condition weights
    x = grid["GenderRatingCentered"].to_numpy()
    assert float(w @ x) == pytest.approx(1.0)
    counts = tables["exp3"]["Condition"].value_counts()
    up = grid["GenderRatingCentered"] > 0
    share = pd.Series(w[up.to_numpy()], index=grid.loc[up, "Condition"])
    assert (share / share.sum()).to_dict() == pytest.approx((counts / counts.sum()).to_dict())


def test_prompt_sensitivity_by_hand():
    rows = pd.DataFrame({
        "variant": ["a", "a", "b", "b"], "Condition": ["first"] * 4,
        "prompt_id": ["p1", "p2", "p1", "p2"], "share_two_way": [0.2, 0.4, 0.3, 0.3],
        "share_three_way": [0.1, 0.2, 0.15, 0.15], "coverage_three_way": [0.4, 0.4, 0.5, 0.3]})
    out = C.prompt_sensitivity(rows, "a").set_index("layout")
    assert out.loc["a", "mean_abs_change"] == 0
    assert out.loc["b", "mean_abs_change"] == pytest.approx(0.1)
    assert out.loc["b", "max_abs_change"] == pytest.approx(0.1)
    assert out.loc["b", "share_two_way"] == pytest.approx(0.3)
    assert np.isnan(out.loc["b", "r_with_default"])                  # b is constant


def test_item_correlations_holm_over_the_family():
    rng = np.random.default_rng(0)
    items = pd.DataFrame({"experiment": np.repeat([1, 3], 30),
                          "Condition": np.tile(np.repeat(["first", "full", "last"], 10), 2),
                          "share_two_way": rng.uniform(size=60)})
    items["she_share"] = items["share_two_way"] + rng.normal(0, 0.3, 60)
    out = A.item_correlations(items)
    assert len(out) == 8 and (out["family_size"] == 8).all()
    assert (out["p_holm"] >= out["p_value"]).all()


def test_verdict_sentence_follows_the_test():
    """Issue 40: the words come from the test of the difference, never from whether two
    intervals overlap. Exp 3's last-name effect (model -0.45 against people's -0.21) once
    read "the model shows the people's pattern" because the intervals overlapped."""
    from studies.name_gender.verdicts import verdict_sentence

    base = {"people_estimate": -0.21, "people_se": 0.08, "model_estimate": -0.45,
            "model_se": 0.11, "estimate": 0.24, "ci_low": 0.02, "ci_high": 0.46,
            "equivalence_bound": 0.2}
    differs = verdict_sentence(pd.Series({**base, "p_holm": 0.004, "p_equivalence_holm": 0.6,
                                          "verdict": "differs (p = .004, Holm)"}))
    assert "**the model differs from people** (p = .004, Holm)" in differs
    alike = verdict_sentence(pd.Series({**base, "p_holm": 0.9, "p_equivalence_holm": 0.01,
                                        "verdict": "equivalent within ±0.2"}))
    assert "**equivalent within ±0.2** (TOST p = .010, Holm)" in alike
    neither = verdict_sentence(pd.Series({**base, "p_holm": 0.3, "p_equivalence_holm": 0.4,
                                          "verdict": "inconclusive"}))
    assert "**inconclusive**" in neither and "TOST p = .400" in neither
    for text in (differs, alike, neither):
        assert "overlap" not in text and "pattern" not in text


def test_item_correlations_resample_first_names_not_items():
    # issue 40: Exp 3's items are 21 first names x 3 surnames x 3 conditions; a Fisher-z
    # interval with items as units was 1.8 times too narrow. Here the items of a first
    # name share most of both sides' value, so the first names are the real units.
    rng = np.random.default_rng(5)
    names = [f"Name{k}" for k in range(21)]
    rows = []
    for name in names:
        shared_x, shared_y = rng.normal(), rng.normal()
        for surname in ("Young", "Bell", "Ward"):
            for cond in ("first", "full", "last"):
                common = rng.normal()
                rows.append({"experiment": 3, "Condition": cond, "item_key": f"{name} {surname}",
                             "share_two_way": shared_x + 0.6 * shared_y + 0.3 * common,
                             "she_share": shared_y + 0.3 * common + 0.2 * rng.normal()})
    items = pd.DataFrame(rows)
    out = A.item_correlations(items, n_boot=1000, seed=1).set_index("condition")
    row = out.loc["all"]
    assert row["n_items"] == 189 and row["n_first_names"] == 21 and row["unit"] == "first names"
    fisher_half = 2 * 1.96 / np.sqrt(189 - 3)           # the old interval's width, on z
    width_z = np.arctanh(row["ci_high"]) - np.arctanh(row["ci_low"])
    assert width_z > 1.4 * fisher_half
    assert row["p_value"] >= 2 / 1001
    assert A.first_name_of(pd.Series(["Blair Young", "Matthew"])).tolist() == ["Blair", "Matthew"]

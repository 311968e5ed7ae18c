"""name_gender's model side on the embedded model: P(he/she/they) where people continued.

Three real prompts (two Exp 1 frames, one Exp 3 story) are scored through the
study's `score_prompts`; the same continuations are scored here directly with
models.causal.score_continuations and normalised by hand. The model-side LMMs are
checked against lmerTest on recorded scores (tests/reference/name_gender_model_side.R).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from studies.name_gender import model_side as M
from studies.name_gender.stimuli import pronoun_prompts


@pytest.fixture(scope="module")
def tables(data_dir):
    from gbstats.data.registry import load_dataset

    return load_dataset("gardner2024", data_dir).tables


@pytest.mark.needs_model
@pytest.mark.slow
def test_three_way_choice_equals_direct_scores(smollm, tables, tmp_path):
    from models.causal import score_continuations

    prompts = pronoun_prompts(tables)
    some = pd.concat([prompts.iloc[[0, 1]], prompts[prompts["experiment"] == 3].iloc[[0]]],
                     ignore_index=True)
    scored = M.score_prompts(some, smollm, cache_dir=tmp_path / "cache")
    assert scored["prefix"].iloc[0].endswith(",")            # "... After making coffee,"
    assert scored["prefix"].iloc[2].startswith(some["prefix"].iloc[2][:40])
    raw = {}
    for word in ("he", "she", "they"):
        direct = score_continuations(list(some["prefix"]), [f" {word}"] * len(some), lm=smollm,
                                     use_cache=False)
        raw[word] = np.exp(direct["logprob"].to_numpy())
        np.testing.assert_allclose(scored[f"p_raw_{word}"], raw[word], rtol=1e-5)
    total = raw["he"] + raw["she"] + raw["they"]
    np.testing.assert_allclose(scored["p_she"], raw["she"] / total, rtol=1e-5)
    np.testing.assert_allclose(scored[["p_he", "p_she", "p_they"]].sum(axis=1), 1, rtol=1e-12)
    np.testing.assert_allclose(scored["she_logit"],
                               np.log(raw["she"] / total) - np.log(1 - raw["she"] / total),
                               rtol=1e-5)
    assert set(scored["scoring"]) == {"causal"}


def test_model_rows_use_the_peoples_centring_and_coding(tables):
    prompts = pronoun_prompts(tables)
    fake = prompts.assign(p_she=0.3, she_logit=np.log(0.3 / 0.7))
    rated = M.with_ratings(fake, tables)
    people_mean = tables["exp1"]["GenderRating"].mean()
    e1 = rated[(rated["experiment"] == 1) & rated["GenderRating"].notna()]
    np.testing.assert_allclose(e1["GenderRatingCentered"], e1["GenderRating"] - people_mean)
    assert rated.loc[(rated["experiment"] == 1) & (rated["Condition"] == "last"),
                     "GenderRating"].isna().all()
    mirrors = {m.key: m for m in M.MIRRORS}
    rows, contrasts = M.mirror_rows(rated.assign(logit_two_way=0.0), tables,
                                    mirrors["exp1_m_nameGender"])
    assert set(rows["Condition"]) == {"first", "full"}
    assert isinstance(contrasts["Condition"], pd.DataFrame)
    rows, contrasts = M.mirror_rows(rated.assign(logit_two_way=0.0), tables,
                                    mirrors["exp1_m_cond"])
    assert set(rows["Condition"]) == {"first", "full", "last"}      # last names kept
    assert list(contrasts["Condition"].columns) == ["last vs first/full", "first vs full"]
    rows3, contrasts3 = M.mirror_rows(rated.assign(logit_two_way=0.0), tables,
                                      mirrors["exp3_m_noOther"])
    assert len(rows3) == 189
    assert dict(contrasts3["Condition"].counts) == tables["exp3"]["Condition"].value_counts().to_dict()


def test_name_parts_of_the_prompts(tables):
    prompts = pronoun_prompts(tables)
    e1 = prompts[prompts["experiment"] == 1].set_index("prompt")
    assert e1.loc["e1-f01-Matthew", ["first_name", "name_unit", "name_word"]].tolist() == [
        "Matthew"] * 3
    assert e1.loc["e1-f01-Matthew_Smith", "first_name"] == "Matthew"
    last = e1.loc["e1-f01-Walker"]
    assert pd.isna(last["first_name"]) and last["name_unit"] == last["name_word"] == "Walker"
    e3 = prompts[prompts["experiment"] == 3].set_index("prompt")
    assert e3.loc["e3-last-1A-Chris_Miller", ["first_name", "name_word"]].tolist() == [
        "Chris", "Miller"]
    assert "After Miller discussed" in e3.loc["e3-last-1A-Chris_Miller", "prefix"]
    assert prompts.groupby("experiment")["first_name"].nunique().tolist() == [21, 21]


def test_prompt_layouts(tables):
    from studies.name_gender.stimuli import DEFAULT_VARIANT, PROMPT_VARIANTS, exp3_prompt_variants

    prompts = pronoun_prompts(tables)
    layouts = exp3_prompt_variants(prompts)
    assert len(layouts) == 189 * len(PROMPT_VARIANTS)
    one = layouts[layouts["item_key"].eq("Chris Miller") & layouts["Condition"].eq("first")]
    text = dict(zip(one["variant"], one["prefix"]))
    default = prompts.set_index("prompt").loc["e3-first-1A-Chris_Miller", "prefix"]
    assert text[DEFAULT_VARIANT] == default                        # scores shared with the run
    assert text["page break, comma"].count("\n\n") == 1
    assert text["page break, comma"].replace("\n\n", " ") == default
    assert text["one text, ellipsis"].endswith("this study\u2026")
    assert text["page break, ellipsis"].endswith("school.\n\nAfter Chris discussed the results "
                                                 "of this study\u2026")
    assert one.loc[one["variant"] == DEFAULT_VARIANT, "prompt"].iloc[0] == "e3-first-1A-Chris_Miller"
    assert layouts["prompt"].is_unique


R_REFS = Path(__file__).resolve().parents[1] / "reference" / "name_gender_model_side_refs.json"
SCORES = Path(__file__).resolve().parents[1] / "reference" / "name_gender_model_scores.csv"


def r_fits():
    import json

    refs = json.loads(R_REFS.read_text())
    mirrors = {f"mirror_{m.key}": m for m in M.MIRRORS}
    out = []
    for name, ref in refs.items():
        if name == "versions":
            continue
        if name in mirrors:
            m = mirrors[name]
            out.append((name, ref, m.experiment, "first_full" if m.subset == "first_full"
                        else "all", m.coding))
        else:
            exp = 1 if "exp1" in name else 3
            out.append((name, ref, exp, "first_full" if exp == 1 else "all",
                        "fixed" if exp == 1 else "centered_helmert"))
    return out


@pytest.mark.needs_r
@pytest.mark.parametrize("name, ref, experiment, subset, coding", r_fits(),
                         ids=[f[0] for f in r_fits()])
def test_model_side_fits_match_lmertest(tables, name, ref, experiment, subset, coding):
    """gbstats' lme4 path on the recorded model scores against lmerTest on the same rows
    (tests/reference/name_gender_model_side.R): estimates, SEs, Satterthwaite df, p.
    The earlier formula without a first-name term is what the design check flags."""
    from gbstats.mixed.lmm import fit_lmm

    scores = pd.read_csv(SCORES)
    rows = scores[scores["experiment"] == experiment]
    if name.startswith("mirror_"):                    # the story x condition cell (issue 40)
        rows = rows.assign(frame_condition=rows["frame"] + ":" + rows["Condition"])
    if subset == "first_full":
        rows = rows[rows["Condition"] != "last"]
    contrasts = M.condition_coding(experiment, subset, coding, tables)
    fit = fit_lmm(ref["formula"], rows.reset_index(drop=True), backend="lme4",
                  contrasts=contrasts)
    got = fit.coefs.set_index("term")
    assert list(got.index) == ref["terms"]
    np.testing.assert_allclose(got["estimate"], ref["estimate"], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got["se"], ref["se"], rtol=1e-3)
    np.testing.assert_allclose(got["df"], ref["df"], rtol=1e-2)
    np.testing.assert_allclose(np.log(got["p_value"]), np.log(ref["p"]), rtol=1e-2, atol=1e-3)
    flagged = [f["term"] for f in fit.fit_stats["design_check"]]
    if "first_name" in ref["formula"] or name.startswith("mirror_"):
        assert flagged == []
    else:
        assert flagged == ["GenderRatingCentered"]        # the rating, between first names


def test_the_issue_quotes_these_r_numbers():
    """Issue 31 quotes Exp 1's earlier slope 0.258 (SE 0.061) and, with (1 | first_name),
    0.247 (SE 0.124, df 19, p = .061); the recorded R run gives them."""
    import json

    refs = json.loads(R_REFS.read_text())
    before, after = refs["earlier_exp1"], refs["earlier_exp1_first_name"]
    k = before["terms"].index("GenderRatingCentered")
    assert (round(before["estimate"][k], 3), round(before["se"][k], 3)) == (0.258, 0.061)
    k = after["terms"].index("GenderRatingCentered")
    assert (round(after["estimate"][k], 3), round(after["se"][k], 3),
            round(after["df"][k]), round(after["p"][k], 3)) == (0.247, 0.124, 19, 0.061)


@pytest.mark.needs_r
def test_results_json_model_side_models_reads_as_lmertest(tables):
    """results.json's `model_side_models` (comparison.model_side_models over the run's own
    row selection, M.mirror_rows) on the recorded scores: the columns issue 31 names, one
    row per term of each mirror, and the numbers of lmerTest's fits of the same mirrors."""
    import json

    from gbstats.mixed.lmm import fit_lmm
    from studies.name_gender import comparison as C

    refs = json.loads(R_REFS.read_text())
    scores = pd.read_csv(SCORES)
    fits = {}
    for mirror in M.MIRRORS:
        rows, contrasts = M.mirror_rows(scores, tables, mirror)
        fits[mirror.key] = {"lme4": fit_lmm(mirror.formula, rows, backend="lme4",
                                            contrasts=contrasts)}
    entry = C.model_side_models(fits)
    assert {"experiment", "model", "term", "estimate", "std_error", "df"} <= set(entry.columns)
    for mirror in M.MIRRORS:
        ref = refs[f"mirror_{mirror.key}"]
        got = entry[(entry["experiment"] == mirror.experiment)
                    & (entry["model"] == mirror.model)].set_index("term")
        assert list(got.index) == ref["terms"]
        np.testing.assert_allclose(got["estimate"], ref["estimate"], rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got["std_error"], ref["se"], rtol=1e-3)
        np.testing.assert_allclose(got["df"], ref["df"], rtol=1e-2)
    # one name per coefficient (issue 40): Exp 3's centred Helmert "Condition1" compares
    # last with first and full, as Exp 1's fixed "last vs first/full" does; the report's
    # model tables name both so, and results.json's `coefficient` says the same
    names = dict(zip(zip(entry["model"], entry["term"]), entry["coefficient"]))
    assert names[("m_noOther", "Condition1")] == "Conditionlast vs first/full"
    assert names[("m_noOther", "Condition2:GenderRatingCentered")] == \
        "Conditionfirst vs full:GenderRatingCentered"
    assert names[("m_cond", "Conditionlast vs first/full")] == "Conditionlast vs first/full"

"""name_gender's model side on the embedded model: P(he/she/they) where people continued.

Three real prompts (two Exp 1 frames, one Exp 3 story) are scored through the
study's `score_prompts`; the same continuations are scored here directly with
models.causal.score_continuations and normalised by hand.
"""
from __future__ import annotations


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
    rows, contrasts = M.model_rating_rows(rated, tables, 1)
    assert set(rows["Condition"]) == {"first", "full"}
    assert isinstance(contrasts["Condition"], pd.DataFrame)
    rows3, contrasts3 = M.model_rating_rows(rated, tables, 3)
    assert len(rows3) == 189
    assert dict(contrasts3["Condition"].counts) == tables["exp3"]["Condition"].value_counts().to_dict()

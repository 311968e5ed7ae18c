"""gbstats.alignment.like_for_like on tables whose answers are counted by hand."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from gbstats.alignment.like_for_like import (model_shares, people_shares, response_coverage,
                                             wilson_interval)
from gbstats.errors import DataValidationError

SETS = {"he_she": ("he", "she"), "he_she_they": ("he", "she", "they")}


def test_wilson_interval_matches_statsmodels():
    for k, n in [(0, 10), (3, 10), (10, 10), (37, 412)]:
        low, high = wilson_interval(k, n)
        ref = proportion_confint(k, n, method="wilson")
        assert (float(low), float(high)) == pytest.approx(ref, abs=1e-12)
    low, high = wilson_interval(0, 0)
    assert np.isnan(low) and np.isnan(high)


def test_model_shares_by_hand():
    scored = pd.DataFrame({"p_raw_he": [0.2, 0.1], "p_raw_she": [0.1, 0.3],
                           "p_raw_they": [0.1, 0.0]})
    out = model_shares(scored, SETS, target="she")
    assert list(out["share_he_she"]) == pytest.approx([1 / 3, 0.75])
    assert list(out["share_he_she_they"]) == pytest.approx([0.25, 0.75])
    assert list(out["coverage_he_she_they"]) == pytest.approx([0.4, 0.4])
    with pytest.raises(DataValidationError, match="without its target"):
        model_shares(scored, {"x": ("he", "they")}, target="she")
    with pytest.raises(DataValidationError, match="missing column"):
        model_shares(scored, {"x": ("she", "name")}, target="she")


def test_people_shares_by_hand():
    # condition a: he, he, she, other(they), other(name); condition b: she, other(name)
    trials = pd.DataFrame({"cond": list("aaaaabb"), "he": [1, 1, 0, 0, 0, 0, 0],
                           "she": [0, 0, 1, 0, 0, 1, 0], "they": [0, 0, 0, 1, 0, 0, 0]})
    out = people_shares(trials, SETS, target="she", by=["cond"]).set_index(["cond", "option_set"])
    a2, a3 = out.loc[("a", "he_she")], out.loc[("a", "he_she_they")]
    assert (a2["n_trials"], a2["n_in_set"], a2["n_target"]) == (5, 3, 1)
    assert a2["share"] == pytest.approx(1 / 3) and a2["coverage"] == pytest.approx(3 / 5)
    assert a3["share"] == pytest.approx(1 / 4) and a3["coverage"] == pytest.approx(4 / 5)
    assert (a2["ci_low"], a2["ci_high"]) == pytest.approx(proportion_confint(1, 3, method="wilson"))
    b2 = out.loc[("b", "he_she")]
    assert (b2["n_in_set"], b2["share"], b2["coverage"]) == (1, 1.0, 0.5)


def test_response_coverage_by_hand():
    scored = pd.DataFrame({"cond": ["a", "a", "b"], "p_raw_he": [0.2, 0.1, 0.3],
                           "p_raw_she": [0.1, 0.3, 0.1], "p_raw_they": [0.1, 0.0, 0.05]})
    out = response_coverage(scored, SETS, by=["cond"]).set_index(["cond", "option_set"])
    row = out.loc[("a", "he_she_they")]
    assert (row["mass_mean"], row["mass_min"], row["mass_max"]) == pytest.approx((0.4, 0.4, 0.4))
    row = out.loc[("a", "he_she")]
    assert (row["mass_mean"], row["mass_min"], row["mass_max"]) == pytest.approx((0.35, 0.3, 0.4))
    assert out.loc[("b", "he_she"), "n_prompts"] == 1

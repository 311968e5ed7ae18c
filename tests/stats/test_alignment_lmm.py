"""The alignment mixed model against lme4 itself.

Reference: tests/reference/alignment_lmm_refs.json, written by
`Rscript tests/reference/alignment_lmm.R` from tests/reference/alignment_panel.csv
(made by tests/reference/make_alignment_data.py). R computes score_z, the
factors and item x group itself, so the test checks gbstats' data preparation
as well as the fit.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gbstats.alignment.mixed_model import (alignment_lmm_rows, alignment_terms, fit_alignment_lmm,
                                   readable_term)
from gbstats.errors import DataValidationError

REF_DIR = Path(__file__).resolve().parents[1] / "reference"
REFS = json.loads((REF_DIR / "alignment_lmm_refs.json").read_text())
# the project's stated tolerances for lme4 through our bridge
RTOL_EST, RTOL_SE = 1e-4, 1e-3


def panel() -> tuple[pd.DataFrame, pd.DataFrame]:
    data = pd.read_csv(REF_DIR / "alignment_panel.csv")
    scores = data[["item", "score"]].drop_duplicates().reset_index(drop=True)
    return scores, data[["participant", "group", "item", "rating"]]


@lru_cache(maxsize=None)
def fitted(item_by_group: bool):
    scores, trials = panel()
    return fit_alignment_lmm(scores, trials, group="group", score="score",
                             item_by_group=item_by_group)


def test_rows_standardise_the_score_over_items():
    scores, trials = panel()
    rows = alignment_lmm_rows(scores, trials, group="group", score="score")
    per_item = rows.groupby("item_id")["score_z"].first()
    assert per_item.mean() == pytest.approx(0, abs=1e-12)
    assert per_item.std(ddof=1) == pytest.approx(1, rel=1e-12)
    assert list(rows["group_level"].cat.categories) == ["alpha", "beta", "gamma"]
    assert rows["item_group"].nunique() == 24 * 3 and len(rows) == REFS["nobs"]
    ordered = alignment_lmm_rows(scores, trials, group="group", score="score",
                                 group_order=["gamma", "alpha", "beta"])
    assert list(ordered["group_level"].cat.categories) == ["gamma", "alpha", "beta"]
    with pytest.raises(DataValidationError, match="missing from group_order"):
        alignment_lmm_rows(scores, trials, group="group", score="score",
                           group_order=["alpha", "beta"])
    with pytest.raises(DataValidationError, match="does not vary"):
        alignment_lmm_rows(scores.assign(score=1.0), trials, group="group", score="score")


@pytest.mark.needs_r
@pytest.mark.parametrize("item_by_group,key", [(True, "with_item_group"), (False, "item_only")])
def test_matches_lme4(item_by_group, key):
    table, fits = fitted(item_by_group)
    ref = pd.DataFrame(REFS[key]["fixed"])
    ref["term"] = ref["term"].map(readable_term)
    got = table[table["backend"] == "lme4"].set_index("term")
    assert list(got.index) == list(ref["term"])
    ref = ref.set_index("term")
    np.testing.assert_allclose(got["estimate"], ref["estimate"], rtol=RTOL_EST, atol=1e-8)
    np.testing.assert_allclose(got["se"], ref["se"], rtol=RTOL_SE)
    np.testing.assert_allclose(got["df"], ref["df"], rtol=1e-3)
    np.testing.assert_allclose(got["p_value"], ref["p_value"], rtol=1e-3, atol=1e-12)
    if item_by_group:
        assert not fits["lme4"].warnings
    else:   # without (1 | item:group) the design check names the missing unit (README: the
        # group test rejected 38% of null panels without it)
        warned = fits["lme4"].warnings
        assert all(w.startswith("design check: ") and "add (1 | item_group)" in w
                   for w in warned), warned
        assert sorted(w.split(" varies only")[0] for w in warned) == [
            "design check: group_level", "design check: score_z:group_level"]
    # the alignment differences are the two score_z:group terms
    assert list(table.loc[alignment_terms(table), "term"]) == ["score_z:group[beta]",
                                                               "score_z:group[gamma]"]

"""The named contrast "centered_helmert" (Fraundorf's centerfactor) against R.

References:
- tests/reference/centered_helmert_refs.json, written by
  tests/reference/centered_helmert.R (R 4.2.2, lme4 1.1.31), which centres each
  column on its mean over the observations (R's own factor indexing), not on
  count-weighted level values as gbstats does;
- the matrices Gardner & Brown-Schmidt printed for their Exp 3 and 4
  (tests/reference/gardner2024_published.json, from
  analysis/exp{3,4}_analysis_main.md at commit 67cf6d4), to their printed digits.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gbstats.errors import GbstatsError
from gbstats.mixed.contrasts import CenteredHelmert, centered_helmert, resolve_contrasts

REF = Path(__file__).resolve().parents[1] / "reference"
R_REFS = json.loads((REF / "centered_helmert_refs.json").read_text())
PUBLISHED = json.loads((REF / "gardner2024_published.json").read_text())["contrasts"]


def as_list(value):
    return [value] if isinstance(value, str) else list(value)  # jsonlite unboxes length-1 vectors


@pytest.mark.parametrize("case", ["exp3", "exp4", "toy3_default", "toy2_default"])
def test_matches_r(case):
    ref = R_REFS[case]
    coding = centered_helmert("x", ref["levels"], ref["counts"], as_list(ref["reference"]))
    np.testing.assert_allclose(coding.matrix, np.array(ref["matrix"], float).reshape(
        len(ref["levels"]), -1), rtol=0, atol=1e-12)
    assert coding.names == tuple(str(j) for j in range(1, len(ref["levels"])))


@pytest.mark.parametrize("case", ["toy3_default", "toy2_default"])
def test_default_reference_levels_are_the_first_k_minus_1(case):
    ref = R_REFS[case]
    via_name = resolve_contrasts({"x": "centered_helmert"}, {"x": ref["levels"]},
                                 counts={"x": ref["counts"]})["x"]
    np.testing.assert_allclose(via_name.matrix, np.array(ref["matrix"], float).reshape(
        len(ref["levels"]), -1), atol=1e-12)


@pytest.mark.parametrize("exp", ["exp3", "exp4"])
def test_matches_the_authors_printed_matrices(exp):
    counts = R_REFS[exp]["counts"]
    coding = centered_helmert("Condition", ["first", "full", "last"], counts, ("last", "first"))
    for i, row in enumerate(PUBLISHED[exp]["matrix"]):
        for j, printed in enumerate(row):
            digits = len(printed.split(".")[1])
            assert abs(coding.matrix[i, j] - float(printed)) <= 0.5 * 10 ** -digits


def test_columns_are_centred_over_observations():
    counts = {"a": 3, "b": 10, "c": 1}
    coding = centered_helmert("x", ["a", "b", "c"], counts, ("c", "a"))
    n = np.array([3, 10, 1])
    np.testing.assert_allclose(n @ coding.matrix, 0, atol=1e-12)
    # before centring: reference -0.5, earlier reference 0, others +0.5
    np.testing.assert_allclose(np.diff(coding.matrix[:, 0])[[0]], 0)      # a, b both +0.5
    assert coding.matrix[2, 0] - coding.matrix[0, 0] == pytest.approx(-1.0)
    assert coding.matrix[2, 1] - coding.matrix[1, 1] == pytest.approx(-0.5)   # c: 0 vs b: +0.5


def test_spec_with_fixed_counts_ignores_the_fitted_rows():
    spec = CenteredHelmert(reference=("last", "first"), counts={"first": 2835, "full": 2499,
                                                                 "last": 3570})
    coding = resolve_contrasts({"Condition": spec}, {"Condition": ["first", "full", "last"]},
                               counts={"Condition": {"first": 1, "full": 1, "last": 1}})["Condition"]
    np.testing.assert_allclose(coding.matrix, np.array(R_REFS["exp3"]["matrix"]), atol=1e-12)
    assert "centerfactor" in coding.describe()


@pytest.mark.parametrize("levels, counts, reference, message", [
    (["a", "b", "c", "d"], {"a": 1, "b": 1, "c": 1, "d": 1}, None, "expected 2 or 3"),
    (["a", "b", "c"], {"a": 1, "b": 1, "c": 1}, ("a",), "expected 2 distinct"),
    (["a", "b", "c"], {"a": 1, "b": 1, "c": 1}, ("a", "a"), "expected 2 distinct"),
    (["a", "b", "c"], {"a": 1, "b": 1, "c": 1}, ("a", "z"), "not levels of the factor"),
    (["a", "b", "c"], {"a": 1, "b": 1}, None, "no observation count for level"),
])
def test_bad_specs_are_clear_errors(levels, counts, reference, message):
    with pytest.raises(GbstatsError, match=message):
        centered_helmert("x", levels, counts, reference)


def test_named_coding_without_counts_is_an_error():
    with pytest.raises(GbstatsError, match="needs the number of rows per level"):
        resolve_contrasts({"x": "centered_helmert"}, {"x": ["a", "b"]})


@pytest.mark.needs_r
@pytest.mark.slow
def test_lme4_fit_with_the_coding_matches_glmer_in_r(data_dir):
    """Exp 3's main model through gbstats (fit_glmm, lme4 engine, the named
    coding counted from the fitted rows) against the same glmer run in R."""
    from gbstats.data.gardner2024 import read_trials
    from gbstats.mixed.lmm import fit_glmm

    exp3 = read_trials(data_dir / "gardner2024", 3)
    exp3 = exp3.assign(GenderRatingCentered=exp3["GenderRating"] - exp3["GenderRating"].mean())
    ref = R_REFS["exp3_glmer"]
    fit = fit_glmm(ref["formula"], exp3, family="binomial", backend="lme4",
                   contrasts={"Condition": CenteredHelmert(reference=("last", "first"))})
    assert list(fit.coefs["term"]) == ref["terms"]
    # The same R, lme4 and data: the only difference left is the order in
    # which rpy2 hands over the columns, which moves glmer's optimizer path in
    # the 5th decimal at most.
    np.testing.assert_allclose(fit.coefs["estimate"], ref["estimate"], rtol=0, atol=2e-4)
    np.testing.assert_allclose(fit.coefs["se"], ref["se"], rtol=2e-3)
    variance = fit.ranef_var.set_index("group")["variance"]
    for group, value in ref["variance"].items():
        assert variance[group] == pytest.approx(value, abs=2e-4)
    assert fit.fit_stats["loglik"] == pytest.approx(ref["logLik"], abs=1e-3)

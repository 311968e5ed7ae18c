"""Separation in binomial GLMMs: Konis' linear program, the checks glmer fits
carry, and the penalised fit (blme::bglmer) against R.

Reference values: tests/reference/bglmer_reference.R (which also writes the
seeded data, separation_glmm.csv) -> bglmer_refs.json.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gbstats.mixed.engines import lme4 as lme4_engine
from gbstats.mixed.separation import large_estimate_terms, separated_terms

REFERENCE = Path(__file__).resolve().parents[1] / "reference"
needs_r = pytest.mark.skipif(not lme4_engine.available(), reason="R/lme4 not installed")


def design(**columns) -> pd.DataFrame:
    n = len(next(iter(columns.values())))
    return pd.DataFrame({"(Intercept)": np.ones(n), **columns})


# Hand-derived cases. Overlap: with x = 0, 1 and both outcomes at each x,
# no beta != 0 keeps every s_i x_i' beta >= 0, so the MLE exists.
def test_overlapping_data_are_not_separated():
    d = design(x=[0, 0, 1, 1])
    assert separated_terms(d, [0, 1, 0, 1]) == []


def test_a_cell_with_one_outcome_is_quasi_completely_separated():
    # every x = 1 row is a 1: beta = (0, 1) gives s_i x_i' beta = 0 on the
    # x = 0 rows and 1 on the x = 1 rows, a separating direction along x
    d = design(x=[0, 0, 1, 1, 1])
    assert separated_terms(d, [0, 1, 1, 1, 1]) == ["x"]


def test_complete_separation_on_a_numeric_predictor():
    # y = 1 exactly when x > 2.5: complete separation (x - 2.5 splits them)
    d = design(x=[1.0, 2.0, 3.0, 4.0])
    assert "x" in separated_terms(d, [0, 0, 1, 1])


def test_large_estimates_are_flagged():
    coefs = pd.DataFrame({"term": ["(Intercept)", "a", "b"], "estimate": [0.1, 35.0, -1.0],
                          "se": [0.2, 3.8e6, 0.4]})
    assert large_estimate_terms(coefs) == ["a"]


@pytest.fixture(scope="module")
def refs():
    return json.loads((REFERENCE / "bglmer_refs.json").read_text())


@pytest.fixture(scope="module")
def separated_data():
    return pd.read_csv(REFERENCE / "separation_glmm.csv")


@needs_r
def test_glmer_fit_reports_the_separation_and_the_boundary(refs, separated_data):
    from gbstats.mixed.fitting import frequentist_notes
    from gbstats.mixed.lmm import fit_glmm

    fit = fit_glmm(refs["formula"], separated_data, backend="lme4")
    assert fit.fit_stats["separated_terms"] == ["condc"]
    assert "condc" in fit.fit_stats["large_estimate_terms"]
    notes = frequentist_notes({"lme4": fit})
    assert any("quasi-complete separation" in n and "condc" in n for n in notes)
    assert any("singular" in n for n in notes)  # the subject SD is 0 in R too


@needs_r
def test_bglmer_matches_r(refs, separated_data):
    from gbstats.mixed.lmm import fit_glmm

    fit = fit_glmm(refs["formula"], separated_data, penalised=True)
    assert fit.backend == "blme"
    ref = pd.DataFrame(refs["bglmer"]["fixed"]).set_index("term")
    assert list(fit.coefs["term"]) == list(ref.index)
    coefs = fit.coefs.set_index("term")
    np.testing.assert_allclose(coefs["estimate"], ref["estimate"], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(coefs["se"], ref["se"], rtol=1e-3)
    np.testing.assert_allclose(coefs["p_value"], ref["p"], rtol=1e-3, atol=1e-8)
    assert fit.fit_stats["loglik"] == pytest.approx(refs["bglmer"]["loglik"], rel=1e-6)
    # finite where glmer's runs off: the penalised condc sits far below glmer's
    glmer_condc = next(r for r in refs["glmer"]["fixed"] if r["term"] == "condc")
    assert coefs.loc["condc", "estimate"] < 10 < glmer_condc["estimate"]
    assert any("penalised (bglmer) estimates" in w for w in fit.warnings)

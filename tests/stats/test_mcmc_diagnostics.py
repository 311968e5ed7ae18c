"""Vectorised R-hat and bulk ESS equal ArviZ's, parameter by parameter.

ArviZ (az.rhat, az.ess(method="bulk")) is the reference implementation of
Vehtari et al. (2021); gbstats computes the same quantities for all
parameters at once because ArviZ's per-parameter loop dominated the time of a
large GLMM's diagnostics.
"""
from __future__ import annotations

import arviz as az
import numpy as np
import pytest

from gbstats.mixed import mcmc_diagnostics as D


def _ar1(rng, phi, chains, n, k):
    x = np.zeros((chains, n, k))
    noise = rng.normal(size=(chains, n, k))
    for t in range(1, n):
        x[:, t] = phi * x[:, t - 1] + noise[:, t]
    return x


def _cases():
    rng = np.random.default_rng(2021)
    return {
        "autocorrelated": _ar1(rng, 0.9, 2, 1000, 40),
        "antithetic, odd length, 4 chains": _ar1(rng, -0.7, 4, 501, 15),
        "independent": rng.normal(size=(2, 1000, 20)),
        "ties (discrete values)": rng.integers(0, 4, size=(2, 300, 8)).astype(float),
        "barely moving": _ar1(rng, 0.995, 2, 1000, 6),
        "chains disagree": _ar1(rng, 0.5, 2, 400, 6) + np.array([0.0, 3.0])[:, None, None],
        "very short": _ar1(rng, 0.3, 2, 9, 4),
    }


@pytest.mark.parametrize("name", list(_cases()))
def test_rhat_and_bulk_ess_equal_arviz(name):
    draws = _cases()[name]
    ds = az.convert_to_dataset({"u": draws})
    np.testing.assert_allclose(D.ess_bulk(draws), az.ess(ds, method="bulk")["u"].values,
                               rtol=1e-10)
    np.testing.assert_allclose(D.rhat(draws), az.rhat(ds)["u"].values, rtol=1e-12)


def test_summary_takes_the_extremes_over_every_variable_and_skips_constants():
    cases = _cases()
    posterior = {"a": cases["autocorrelated"][:, :, :3],
                 "b": (cases["independent"][:, :, :6]
                       + np.array([0.0, 0.3])[:, None, None]).reshape(2, 1000, 2, 3),
                 "constant": np.ones((2, 1000))}
    max_rhat, min_ess = D.summary(posterior)
    ds = az.convert_to_dataset({k: v for k, v in posterior.items() if k != "constant"})
    assert max_rhat == pytest.approx(max(float(az.rhat(ds)[v].max()) for v in ("a", "b")))
    assert min_ess == pytest.approx(min(float(az.ess(ds, method="bulk")[v].min())
                                        for v in ("a", "b")))


@pytest.mark.parametrize("name", list(_cases()))
def test_tail_ess_equals_arviz(name):
    draws = _cases()[name]
    ds = az.convert_to_dataset({"u": draws})
    np.testing.assert_allclose(D.ess_tail(draws), az.ess(ds, method="tail")["u"].values,
                               rtol=1e-10)


def test_extremes_summary_has_the_tail_minimum():
    cases = _cases()
    posterior = {"a": cases["autocorrelated"][:, :, :3], "b": cases["independent"][:, :, :4]}
    extremes = D.extremes_summary(posterior)
    ds = az.convert_to_dataset(posterior)
    assert extremes["ess_tail_min"] == pytest.approx(
        min(float(az.ess(ds, method="tail")[v].min()) for v in ("a", "b")))

"""gbstats.mixed.population: population-averaged effects of a binomial GLMM.

References: the averaged probability by adaptive quadrature (scipy.integrate.quad) of
expit(eta + u) N(u; 0, sigma^2); the conditional effect is the GLMM's own coefficient
(by construction of the design rows); the Zeger, Liang & Albert (1988) approximation
beta / sqrt(1 + c^2 sigma^2), c = 16 sqrt(3) / (15 pi), as a sanity bound.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats
from scipy.special import expit, logit

from gbstats.mixed.population import (cells, marginal_probability, population_averaged_contrast,
                                      population_averaged_probabilities, slope_rows)


@pytest.mark.parametrize("eta, sigma2", [(0.0, 1.0), (-2.0, 0.5), (1.3, 2.5), (0.4, 0.0)])
def test_quadrature_matches_adaptive_integration(eta, sigma2):
    sd = np.sqrt(sigma2)
    if sd == 0:
        expected = expit(eta)
    else:
        expected = integrate.quad(lambda u: expit(eta + u) * stats.norm.pdf(u, 0, sd),
                                  -12 * sd, 12 * sd)[0]
    got, dens = marginal_probability(np.array([eta]), sigma2)
    assert got[0] == pytest.approx(expected, abs=1e-10)
    if sd > 0:
        expected_dens = integrate.quad(
            lambda u: expit(eta + u) * (1 - expit(eta + u)) * stats.norm.pdf(u, 0, sd),
            -12 * sd, 12 * sd)[0]
        assert dens[0] == pytest.approx(expected_dens, abs=1e-10)


def simulated_glmm(seed: int = 4, n_people: int = 80, n_items: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = pd.DataFrame([(p, i) for p in range(n_people) for i in range(n_items)],
                        columns=["participant", "item"])
    rows["participant"] = "p" + rows["participant"].astype(str)
    rows["item"] = "i" + rows["item"].astype(str)
    x_item = dict(zip([f"i{i}" for i in range(n_items)], rng.normal(size=n_items)))
    rows["x"] = rows["item"].map(x_item)
    rows["cond"] = np.where(rng.random(len(rows)) < 0.5, "a", "b")
    u_p = rows["participant"].map(dict(zip([f"p{p}" for p in range(n_people)],
                                           rng.normal(0, 1.2, n_people))))
    u_i = rows["item"].map(dict(zip([f"i{i}" for i in range(n_items)],
                                    rng.normal(0, 0.6, n_items))))
    eta = -0.3 + 0.9 * rows["x"] + 0.7 * (rows["cond"] == "b") + u_p + u_i
    rows["y"] = (rng.random(len(rows)) < expit(eta)).astype(int)
    return rows


@pytest.fixture(scope="module")
def glmm_fit():
    from gbstats.mixed.lmm import fit_glmm

    return fit_glmm("y ~ x + cond + (1|participant) + (1|item)", simulated_glmm(),
                    backend="lme4")


@pytest.mark.needs_r
def test_conditional_slope_is_the_coefficient_and_marginal_is_by_quadrature(glmm_fit):
    fit = glmm_fit
    at = pd.DataFrame({"x": [0.0], "cond": ["a"]})
    rows, weights = slope_rows(at, "x")
    out = population_averaged_contrast(fit, rows, weights)
    coef = fit.coef("x")
    assert out["conditional"] == pytest.approx(coef["estimate"], rel=1e-6)
    assert out["conditional_se"] == pytest.approx(coef["se"], rel=1e-4)
    sigma2 = fit.ranef_var["variance"].sum()
    beta0 = fit.coef("(Intercept)")["estimate"]
    # by hand: d/dx logit(pbar(beta0 + beta_x x)) at x = 0, by adaptive quadrature
    def pbar(eta):
        sd = np.sqrt(sigma2)
        return integrate.quad(lambda u: expit(eta + u) * stats.norm.pdf(u, 0, sd),
                              -12 * sd, 12 * sd, epsabs=1e-13)[0]
    h = 1e-4
    by_hand = (logit(pbar(beta0 + coef["estimate"] * h))
               - logit(pbar(beta0 - coef["estimate"] * h))) / (2 * h)
    assert out["marginal"] == pytest.approx(by_hand, rel=1e-5)
    assert abs(out["marginal"]) < abs(out["conditional"])          # attenuation
    zeger = coef["estimate"] / np.sqrt(1 + (16 * np.sqrt(3) / (15 * np.pi)) ** 2 * sigma2)
    assert out["marginal"] == pytest.approx(zeger, rel=0.05)
    # the marginal SE shrinks with the estimate (delta method, variances known)
    assert out["marginal_se"] / out["conditional_se"] == pytest.approx(
        out["marginal"] / out["conditional"], rel=0.05)


@pytest.mark.needs_r
def test_condition_difference_and_probabilities(glmm_fit):
    fit = glmm_fit
    grid = cells({"x": [0.0], "cond": ["a", "b"]})
    out = population_averaged_contrast(fit, grid, [-1.0, 1.0])
    assert out["conditional"] == pytest.approx(fit.coef("condb")["estimate"], rel=1e-6)
    probs = population_averaged_probabilities(fit, grid)
    assert out["marginal"] == pytest.approx(logit(probs["p_population"]).diff().iloc[1], rel=1e-9)
    # averaging pulls probabilities towards one half
    assert (np.abs(probs["p_population"] - 0.5) < np.abs(probs["p_conditional"] - 0.5)).all()


@pytest.mark.needs_r
def test_random_slopes_and_gaussian_fits_are_refused():
    from gbstats.errors import GbstatsError
    from gbstats.mixed.lmm import fit_glmm, fit_lmm

    data = simulated_glmm(n_people=30, n_items=10)
    sloped = fit_glmm("y ~ x + (1 + x|participant)", data, backend="lme4")
    with pytest.raises(GbstatsError, match="random slopes"):
        population_averaged_contrast(sloped, *slope_rows(pd.DataFrame({"x": [0.0]}), "x"))
    data["z"] = data["x"] + np.random.default_rng(0).normal(size=len(data))
    linear = fit_lmm("z ~ x + (1|participant)", data, backend="lme4")
    with pytest.raises(GbstatsError, match="binomial"):
        population_averaged_contrast(linear, *slope_rows(pd.DataFrame({"x": [0.0]}), "x"))
    # read as a model of a logit, the residual joins the averaging variance
    out = population_averaged_contrast(linear, *slope_rows(pd.DataFrame({"x": [0.0]}), "x"),
                                       logit_response=True)
    assert out["random_intercept_variance"] == pytest.approx(linear.ranef_var["variance"].sum())
    assert out["conditional"] == pytest.approx(linear.coef("x")["estimate"], rel=1e-6)
    assert abs(out["marginal"]) < abs(out["conditional"])


@pytest.mark.needs_r
def test_rows_lacking_a_predictor_or_a_value_are_refused_by_name(glmm_fit):
    # issue 44, case 11: a KeyError: 'freq'-style traceback before
    from gbstats.errors import GbstatsError

    with pytest.raises(GbstatsError, match=r"no column for predictor\(s\) cond"):
        population_averaged_contrast(glmm_fit, *slope_rows(pd.DataFrame({"x": [0.0]}), "x"))
    with pytest.raises(GbstatsError, match=r"missing values of cond \(row 2\)"):
        population_averaged_contrast(glmm_fit, pd.DataFrame({"x": [0.0, 0.0],
                                                             "cond": ["a", None]}), [-1.0, 1.0])

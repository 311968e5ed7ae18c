"""Parameter recovery: fit_lmm's 95% Wald intervals cover the true fixed effects.

Over seeded simulations from a known random-intercept model, count how often
each coefficient's interval covers its true value. The count is Binomial(n,
0.95) if the intervals are calibrated, so the test is a two-sided exact
binomial test of that hypothesis (alpha 0.001: the simulations are seeded, so
the outcome is fixed, and a rejection at that level means miscalibration, e.g.
SEs 20% too small give ~89% coverage, which n = 200 rejects).

Backend: statsmodels, which runs 200 fits in under a minute on 2 cores; a
pymer4/lme4 fit costs about 0.5 s more (the R bridge, and extras pymer4
computes), which would double the time for the same count. The lme4
backend's LMM intervals are t intervals with each coefficient's Satterthwaite
df (checked against R in tests/stats/test_lmm.py); their coverage with few
groups, where t and z differ, is simulated in tests/stats/test_toolkit.py
(test_satterthwaite_t_interval_coverage).

Design: 40 subjects x 8 trials; with 40 groups the normal-quantile (Wald)
interval for the intercept, whose SE depends on the between-subject variance,
is close to its nominal level.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from gbstats.mixed.lmm import fit_lmm

FORMULA = "y ~ x + cond + (1 | subject)"
TRUTH = {"(Intercept)": 1.0, "x": 0.5, "condb": -0.4}
SD_SUBJECT, SD_RESIDUAL = 0.7, 1.0
N_SUBJECTS, N_TRIALS = 40, 8
ALPHA = 0.001


def simulate(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    subject = np.repeat(np.arange(N_SUBJECTS), N_TRIALS)
    x = rng.normal(size=subject.size)
    cond = rng.choice(["a", "b"], size=subject.size)
    y = (TRUTH["(Intercept)"] + TRUTH["x"] * x + TRUTH["condb"] * (cond == "b")
         + rng.normal(scale=SD_SUBJECT, size=N_SUBJECTS)[subject]
         + rng.normal(scale=SD_RESIDUAL, size=subject.size))
    return pd.DataFrame({"subject": subject.astype(str), "x": x, "cond": cond, "y": y})


def coverage_counts(backend: str, n_sims: int, first_seed: int) -> dict[str, int]:
    covered = dict.fromkeys(TRUTH, 0)
    for seed in range(first_seed, first_seed + n_sims):
        coefs = fit_lmm(FORMULA, simulate(seed), backend=backend).coefs.set_index("term")
        for term, true in TRUTH.items():
            covered[term] += int(coefs.loc[term, "ci_low"] <= true <= coefs.loc[term, "ci_high"])
    return covered


def assert_calibrated(covered: dict[str, int], n_sims: int) -> None:
    for term, k in covered.items():
        test = stats.binomtest(k, n_sims, 0.95)
        ci = test.proportion_ci(confidence_level=0.95)
        assert test.pvalue > ALPHA, (
            f"{term}: {k}/{n_sims} intervals cover the truth ({k / n_sims:.3f}, 95% CI "
            f"{ci.low:.3f}-{ci.high:.3f}); binomial test of 0.95 gives p = {test.pvalue:.2g}")


@pytest.mark.slow
def test_fit_lmm_intervals_cover_truth_at_nominal_rate():
    n_sims = 200
    assert_calibrated(coverage_counts("statsmodels", n_sims, first_seed=1000), n_sims)


def test_binomial_check_rejects_undercoverage():
    # The check can fail: 178/200 (89%, what SEs 20% too small would give)
    # is rejected, 188/200 (94%) is not.
    with pytest.raises(AssertionError, match="178/200"):
        assert_calibrated({"x": 178}, 200)
    assert_calibrated({"x": 188}, 200)

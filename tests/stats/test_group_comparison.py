"""gbstats.alignment.group_comparison: the ceiling, equivalence, Holm and the verdict.

Reference values are derived by hand (formulas in each test) or are facts of a simulated
panel whose truth is set by construction (gbstats.alignment.simulation).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from gbstats.alignment.group_comparison import (
    COMPARISON_COLUMNS, equivalence_p_value, finish_comparisons, holm_within_families,
    max_alignment_difference, profile_agreement, profile_agreement_from_matrices,
    smallest_equivalence_bound, verdict)
from gbstats.alignment.simulation import panel_to_long, simulate_alignment_panel
from gbstats.errors import DataValidationError


def test_ceiling_formula_is_reached_by_the_difference_of_the_profiles():
    """max over x of corr(x, a) - corr(x, b) is sqrt(2 (1 - rho_ab)), reached at x = za - zb."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=500)
    b = 0.9 * a + np.sqrt(1 - 0.81) * rng.normal(size=500)
    rho = np.corrcoef(a, b)[0, 1]
    za, zb = (a - a.mean()) / a.std(), (b - b.mean()) / b.std()
    best = np.corrcoef(za - zb, a)[0, 1] - np.corrcoef(za - zb, b)[0, 1]
    assert best == pytest.approx(float(max_alignment_difference(rho)), rel=1e-12)
    for _ in range(200):                      # and no other score does better
        x = rng.normal(size=500) + rng.normal() * (za - zb)
        diff = abs(np.corrcoef(x, a)[0, 1] - np.corrcoef(x, b)[0, 1])
        assert diff <= best + 1e-12
    assert float(max_alignment_difference(0.97)) == pytest.approx(np.sqrt(0.06))
    assert float(max_alignment_difference(1.03)) == 0.0     # a corrected r above 1 is capped


def test_equivalence_p_value_by_hand():
    # d = 0, se = .05, bound = .1: both one-sided tests give P(Z > 2)
    assert float(equivalence_p_value(0.0, 0.05, 0.1)) == pytest.approx(stats.norm.sf(2.0))
    # d = .03: the upper test dominates, P(Z < (.03 - .1) / .05) = Phi(-1.4)
    assert float(equivalence_p_value(0.03, 0.05, 0.1)) == pytest.approx(stats.norm.cdf(-1.4))
    assert float(equivalence_p_value(-0.03, 0.05, 0.1)) == pytest.approx(stats.norm.cdf(-1.4))
    # at the bound the TOST p is at least .5: equivalence is never claimed there
    assert float(equivalence_p_value(0.1, 0.01, 0.1)) == pytest.approx(0.5)
    assert np.isnan(equivalence_p_value(0.0, 0.05, np.nan))
    # p < .05 exactly when the 90% interval lies inside the bounds
    d, se = 0.02, 0.04
    low, high = d - stats.norm.ppf(0.95) * se, d + stats.norm.ppf(0.95) * se
    for bound in (0.05, 0.08, 0.0858, 0.09, 0.12):
        inside = -bound < low and high < bound
        assert (float(equivalence_p_value(d, se, bound)) < 0.05) == inside
    assert float(smallest_equivalence_bound(d, se)) == pytest.approx(high)


def test_verdicts():
    assert verdict(0.01, 0.9, 0.1) == "difference"
    assert verdict(0.4, 0.01, 0.1) == "equivalent within the bound (+/-0.1)"
    assert verdict(0.4, 0.3, 0.1) == "no evidence either way at this sensitivity"
    assert verdict(0.4, np.nan, np.nan).startswith("no evidence of a difference")


def test_holm_by_hand():
    table = pd.DataFrame({"family": ["a", "a", "a", "b"], "p_value": [0.01, 0.04, 0.03, 0.2]})
    out = holm_within_families(table)
    # Holm: sorted .01, .03, .04 times 3, 2, 1, then the running maximum
    assert list(out["p_holm"]) == pytest.approx([0.03, 0.06, 0.06, 0.2])
    assert list(out["family_size"]) == [3, 3, 3, 1]


def rows(**overrides) -> pd.DataFrame:
    base = {"family": ["primary", "primary"], "group_a": ["men"] * 2,
            "group_b": ["non-male"] * 2, "test": ["t"] * 2, "primary": [True, True],
            "scale": ["corrected correlation"] * 2, "estimate": [0.02, -0.2],
            "se": [0.04, 0.05], "ci_low": [np.nan] * 2, "ci_high": [np.nan] * 2,
            "p_value": [0.6, 6e-5], "equivalence_bound": [0.1, 0.1]}
    base.update(overrides)
    return pd.DataFrame(base)


def test_finish_comparisons():
    out = finish_comparisons(rows())
    assert list(out.columns) == COMPARISON_COLUMNS
    assert list(out["p_holm"]) == pytest.approx([0.6, 1.2e-4])
    assert out["verdict"].iloc[1] == "difference"
    assert out["p_equivalence"].iloc[0] == pytest.approx(
        max(stats.norm.sf((0.02 + 0.1) / 0.04), stats.norm.cdf((0.02 - 0.1) / 0.04)))
    assert out["verdict"].iloc[0].startswith("equivalent")
    # Holm over the family's two TOST p-values (.023 and .977 for -0.2, beyond the bound):
    # the smaller is doubled, .046, still below .05
    assert out["p_equivalence_holm"].iloc[0] == pytest.approx(2 * out["p_equivalence"].iloc[0])
    with pytest.raises(DataValidationError, match="mixing primary and secondary"):
        finish_comparisons(rows(primary=[True, False]))
    with pytest.raises(DataValidationError, match="without its columns"):
        finish_comparisons(rows().drop(columns="equivalence_bound"))


def test_profile_agreement_recovers_a_known_profile_correlation():
    """Two groups' true profiles: m_g = rho_g x + sqrt(1 - rho_g^2) (sqrt(c) z + sqrt(1 - c) z_g),
    so corr(m_a, m_b) = rho_a rho_b + sqrt(1 - rho_a^2) sqrt(1 - rho_b^2) c over the items."""
    rho_a, rho_b, c = 0.6, 0.5, 0.8
    truth = rho_a * rho_b + np.sqrt(1 - rho_a**2) * np.sqrt(1 - rho_b**2) * c
    x, groups = simulate_alignment_panel({"a": 60, "b": 80}, {"a": rho_a, "b": rho_b},
                                         n_items=400, shared_item=c, sd_noise=2.0, seed=3)
    table = profile_agreement_from_matrices(groups, n_boot=200, rng=np.random.default_rng(1))
    row = table.iloc[0]
    assert row["r_profiles"] < row["r_profiles_corrected"]        # noise attenuates
    assert row["r_profiles_corrected"] == pytest.approx(truth, abs=0.06)
    assert row["ci_low"] < truth < row["ci_high"]
    assert row["max_alignment_difference"] == pytest.approx(
        np.sqrt(2 * (1 - min(1, row["r_profiles_corrected"]))))
    assert row["max_alignment_difference_upper"] >= row["max_alignment_difference"]


def test_profile_agreement_from_long_trials_matches_the_matrices():
    x, groups = simulate_alignment_panel({"a": 20, "b": 25}, 0.4, n_items=60, seed=5)
    _, trials = panel_to_long(x, groups)
    from_long = profile_agreement(trials, group="group", rating="rating", n_boot=50, seed=2)
    from_matrices = profile_agreement_from_matrices(groups, n_boot=50,
                                                    rng=np.random.default_rng(2))
    pd.testing.assert_frame_equal(from_long, from_matrices)
    with pytest.raises(DataValidationError, match="two groups"):
        profile_agreement(trials[trials["group"] == "a"], group="group", rating="rating")


@pytest.mark.slow
def test_equivalence_claim_false_positive_rate_at_the_bound():
    """Groups whose alignments differ by exactly the bound: the equivalence claim
    (TOST p < .05) must be made in at most 5% of panels (+ 2 Monte Carlo SEs)."""
    from gbstats.alignment.reliability import alignment_tables_from_matrices

    bound, claims, n_panels = 0.2, 0, 60
    for seed in range(n_panels):
        x, groups = simulate_alignment_panel({"a": 40, "b": 40}, {"a": 0.6, "b": 0.6 - bound},
                                             n_items=120, sd_noise=1.5, seed=1000 + seed)
        _, _, comparison = alignment_tables_from_matrices(
            x, groups, n_boot=50, n_var_boot=60, n_splits=40, rng=np.random.default_rng(seed))
        row = comparison.iloc[0]
        claims += float(equivalence_p_value(row["difference"], row["se"], bound)) < 0.05
    rate = claims / n_panels
    assert rate <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / n_panels)

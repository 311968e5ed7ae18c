"""Hypothesis tests: pingouin-based results must equal scipy's on seeded data.

scipy is an independent implementation of each test (pingouin calls scipy for
the statistic and p-value, but we check our whole wrapper: column mapping, NaN
handling, unrounded CIs). Reference CIs are computed from their textbook
formulas in the test, not copied from our output.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from gbstats.errors import DataValidationError, UnknownNameError
from gbstats.exclusions import ExclusionLog
from gbstats.inference.hypothesis_tests import (RESULT_COLUMNS, correct_pvalues, correlation,
                                      mann_whitney, welch_ttest)


@pytest.fixture
def samples():
    rng = np.random.default_rng(20260101)
    return rng.normal(0.0, 1.0, 23), rng.normal(0.6, 2.0, 31)


@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
def test_welch_matches_scipy(samples, alternative):
    a, b = samples
    res = welch_ttest(a, b, label_a="A", label_b="B", alternative=alternative).iloc[0]
    ref = stats.ttest_ind(a, b, equal_var=False, alternative=alternative)
    assert res["statistic"] == pytest.approx(ref.statistic, rel=1e-10)
    assert res["p_value"] == pytest.approx(ref.pvalue, rel=1e-10)
    assert res["df"] == pytest.approx(ref.df, rel=1e-10)
    assert (res["n_a"], res["n_b"]) == (23, 31)
    assert res["estimate"] == pytest.approx(a.mean() - b.mean())
    if alternative == "two-sided":
        # CI of the mean difference: diff +- t_{.975, df} * sqrt(va/na + vb/nb),
        # the Welch interval (R's t.test default). Unrounded, unlike pingouin's display.
        ci = ref.confidence_interval(0.95)
        assert res["ci_low"] == pytest.approx(ci.low, rel=1e-9)
        assert res["ci_high"] == pytest.approx(ci.high, rel=1e-9)
    # Cohen's d with the pooled SD, signed (a < b here, so negative).
    na, nb = a.size, b.size
    pooled = np.sqrt(((na - 1) * a.var(ddof=1) + (nb - 1) * b.var(ddof=1)) / (na + nb - 2))
    assert res["effect_size"] == pytest.approx((a.mean() - b.mean()) / pooled, rel=1e-9)
    assert res["effect_size"] < 0


@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
def test_mann_whitney_matches_scipy(samples, alternative):
    a, b = samples
    res = mann_whitney(a, b, alternative=alternative).iloc[0]
    ref = stats.mannwhitneyu(a, b, alternative=alternative)
    assert res["statistic"] == ref.statistic
    assert res["p_value"] == pytest.approx(ref.pvalue, rel=1e-10)
    # rank-biserial r = 2 U_a / (n_a n_b) - 1 (Wendt 1972)
    assert res["effect_size"] == pytest.approx(2 * ref.statistic / (a.size * b.size) - 1)
    assert res["ci_low"] <= res["effect_size"] <= res["ci_high"]


def test_mann_whitney_with_ties_matches_scipy():
    a = [1, 2, 2, 3, 3, 3, 4, 5]
    b = [3, 4, 4, 5, 5, 5, 6, 6, 7]
    res = mann_whitney(a, b, alternative="less").iloc[0]
    ref = stats.mannwhitneyu(a, b, alternative="less")
    assert res["statistic"] == ref.statistic
    assert res["p_value"] == pytest.approx(ref.pvalue, rel=1e-10)


def test_mann_whitney_bootstrap_ci_is_seeded(samples):
    a, b = samples
    first = mann_whitney(a, b, seed=3)
    assert first.equals(mann_whitney(a, b, seed=3))
    assert not first.equals(mann_whitney(a, b, seed=4))


@pytest.mark.parametrize("method", ["pearson", "spearman"])
def test_correlation_matches_scipy(samples, method):
    rng = np.random.default_rng(7)
    x = rng.normal(size=40)
    y = 0.5 * x + rng.normal(size=40)
    res = correlation(x, y, method=method).iloc[0]
    ref = stats.pearsonr(x, y) if method == "pearson" else stats.spearmanr(x, y)
    assert res["estimate"] == pytest.approx(ref[0], rel=1e-10)
    assert res["p_value"] == pytest.approx(ref[1], rel=1e-8)
    # Fisher-z 95% CI: tanh(atanh(r) +- 1.959964 / sqrt(n - 3))
    half = stats.norm.ppf(0.975) / np.sqrt(40 - 3)
    assert res["ci_low"] == pytest.approx(np.tanh(np.arctanh(ref[0]) - half), rel=1e-9)
    assert res["ci_high"] == pytest.approx(np.tanh(np.arctanh(ref[0]) + half), rel=1e-9)


def test_results_share_one_shape(samples):
    a, b = samples
    table = pd.concat([welch_ttest(a, b), mann_whitney(a, b), correlation(a[:20], b[:20])],
                      ignore_index=True)
    assert list(table.columns) == RESULT_COLUMNS
    assert list(table["test"]) == ["welch_t", "mann_whitney_u", "pearson_correlation"]


def test_nan_values_are_dropped_and_counted(samples):
    a, b = samples
    a_nan = np.concatenate([a, [np.nan, np.nan]])
    log = ExclusionLog()
    res = welch_ttest(a_nan, list(b) + [np.nan], label_a="A", exclusions=log).iloc[0]
    assert (res["n_a"], res["n_nan_a"], res["n_nan_b"]) == (23, 2, 1)
    assert res["statistic"] == pytest.approx(stats.ttest_ind(a, b, equal_var=False).statistic)
    assert [e.n for e in log.entries] == [2, 1]
    with pytest.raises(DataValidationError, match="2 missing value"):
        welch_ttest(a_nan, b, nan_policy="raise")


def test_correlation_counts_incomplete_pairs():
    x = [1.0, 2, np.nan, 4, 5, 6, 7, 8]
    y = [2.0, 1, 3, np.nan, np.nan, 7, 5, 9]
    res = correlation(x, y).iloc[0]
    # pair 3 lacks x; pairs 4 and 5 lack y; 5 complete pairs remain
    assert (res["n_a"], res["n_nan_a"], res["n_nan_b"]) == (5, 1, 2)
    assert res["estimate"] == pytest.approx(stats.pearsonr([1, 2, 6, 7, 8],
                                                           [2, 1, 7, 5, 9])[0])


@pytest.mark.parametrize("func", [welch_ttest, mann_whitney])
def test_empty_and_too_small_samples_get_clear_errors(func):
    with pytest.raises(DataValidationError, match="empty.*0 values \\(2 missing removed\\)"):
        func([np.nan, np.nan], [1.0, 2.0, 3.0], label_a="women")
    with pytest.raises(DataValidationError, match="too few observations"):
        func([1.0], [1.0, 2.0, 3.0])


def test_degenerate_inputs_get_clear_errors():
    with pytest.raises(DataValidationError, match="both samples are constant"):
        welch_ttest([1, 1, 1], [2, 2, 2])
    with pytest.raises(DataValidationError, match="nothing to rank"):
        mann_whitney([1, 1, 1], [1, 1])
    with pytest.raises(DataValidationError, match="constant sample"):
        correlation([1, 2, 3, 4], [5, 5, 5, 5], label_y="ratings")
    with pytest.raises(DataValidationError, match="equal length"):
        correlation([1, 2, 3], [1, 2])
    with pytest.raises(DataValidationError, match="non-numeric"):
        welch_ttest([1, "x", 3], [1, 2, 3])
    with pytest.raises(UnknownNameError, match="(?i)did you mean 'two-sided'"):
        mann_whitney([1, 2], [3, 4], alternative="two_sided")
    with pytest.raises(UnknownNameError, match="kendall"):
        correlation([1, 2, 3], [3, 2, 1], method="kendall")


def test_correct_pvalues_holm_by_hand():
    # Holm by hand for p = (0.01, 0.04, 0.03, 0.20), m = 4:
    # sorted 0.01, 0.03, 0.04, 0.20 -> x(4,3,2,1) = 0.04, 0.09, 0.08, 0.20,
    # running maximum -> 0.04, 0.09, 0.09, 0.20; back in input order:
    table = pd.DataFrame({"name": list("abcd"), "p_value": [0.01, 0.04, 0.03, 0.20]})
    out = correct_pvalues(table, "holm")
    np.testing.assert_allclose(out["p_adjusted"], [0.04, 0.09, 0.09, 0.20])
    assert list(out["reject"]) == [True, False, False, False]
    assert list(out["name"]) == list("abcd")  # other columns kept
    assert "p_adjusted" not in table  # the input is not modified


def test_correct_pvalues_bh_by_hand_and_against_statsmodels():
    # BH by hand, m = 4: sorted p 0.01, 0.03, 0.04, 0.20 times m/rank = 0.04, 0.06,
    # 0.0533.., 0.20; running minimum from the top -> 0.04, 0.0533.., 0.0533.., 0.20
    table = pd.DataFrame({"p_value": [0.01, 0.04, 0.03, 0.20]})
    out = correct_pvalues(table, "fdr_bh")
    np.testing.assert_allclose(out["p_adjusted"], [0.04, 0.16 / 3, 0.16 / 3, 0.20])
    from statsmodels.stats.multitest import multipletests
    for method in ("bonferroni", "sidak", "fdr_by"):
        ref = multipletests(table["p_value"], method="bonferroni" if method == "bonferroni"
                            else method)[1]
        np.testing.assert_allclose(correct_pvalues(table, method)["p_adjusted"], ref)


def test_correct_pvalues_errors():
    with pytest.raises(DataValidationError, match="missing or outside"):
        correct_pvalues(pd.DataFrame({"p_value": [0.1, np.nan]}))
    with pytest.raises(DataValidationError, match="no p-value column 'p'"):
        correct_pvalues(pd.DataFrame({"p_value": [0.1]}), column="p")
    with pytest.raises(UnknownNameError, match="(?i)did you mean 'holm'"):
        correct_pvalues(pd.DataFrame({"p_value": [0.1]}), "hol")


def test_correlation_one_sided_and_other_levels():
    rng = np.random.default_rng(11)
    x = rng.normal(size=30)
    y = 0.3 * x + rng.normal(size=30)
    r = stats.pearsonr(x, y)[0]
    greater = correlation(x, y, alternative="greater").iloc[0]
    assert greater["p_value"] == pytest.approx(
        stats.pearsonr(x, y, alternative="greater").pvalue, rel=1e-8)
    # one-sided 95% bound: tanh(atanh(r) - z_.95 / sqrt(n - 3)), upper end 1
    assert greater["ci_low"] == pytest.approx(
        np.tanh(np.arctanh(r) - stats.norm.ppf(0.95) / np.sqrt(27)), rel=1e-9)
    assert greater["ci_high"] == 1.0
    wide = correlation(x, y, confidence=0.99).iloc[0]
    assert wide["ci_low"] == pytest.approx(
        np.tanh(np.arctanh(r) - stats.norm.ppf(0.995) / np.sqrt(27)), rel=1e-9)


def test_numerical_warnings_travel_with_the_result():
    # nearly identical values make scipy warn of precision loss (catastrophic
    # cancellation); the warning belongs in the result row, not only on stderr
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # none may escape
        res = welch_ttest([0.5, 0.5, 0.5 + 1e-12], [0.4, 0.4, 0.4]).iloc[0]
    assert "precision loss" in res["warning"].lower()
    clean = welch_ttest([1.0, 2.0, 3.0], [2.0, 3.0, 5.0]).iloc[0]
    assert clean["warning"] == ""


def test_adjusted_p_values_are_pingouin_s_bit_for_bit_on_random_families():
    # issue 41: the corrections no longer import pingouin (with seaborn and pyplot, about
    # 1 s of a warm run); what they compute must not move: Holm, Bonferroni and both FDR
    # methods equal pingouin.multicomp exactly (ties, values on the alpha grid and p = 1
    # included), and so does `reject`
    import pingouin

    rng = np.random.default_rng(7)
    for i in range(600):
        p = rng.random(int(rng.integers(1, 25))) ** rng.uniform(0.5, 4)
        if i % 3 == 0:
            p = np.round(p * 20) / 400         # many exact ties and values near 0.05
        if i % 5 == 0:
            p[0] = 1.0
        for method in ("holm", "bonf", "fdr_bh", "fdr_by", "sidak"):
            reject, adjusted = pingouin.multicomp(p, alpha=0.05, method=method)
            out = correct_pvalues(pd.DataFrame({"p_value": p}), method)
            if method == "sidak":   # -expm1(m log1p(-p)) against 1 - (1 - p)^m
                np.testing.assert_allclose(out["p_adjusted"], adjusted, rtol=0, atol=1e-14)
            else:
                np.testing.assert_array_equal(out["p_adjusted"], np.asarray(adjusted, float))
            np.testing.assert_array_equal(out["reject"], np.asarray(reject, bool))

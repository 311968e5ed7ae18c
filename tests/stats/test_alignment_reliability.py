"""Reliability, corrected correlations, two-way bootstrap and size-matched comparisons.

References are hand-worked (shown in each test) or follow from the generating
model of gbstats.alignment.simulation (derivations in the comments).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from gbstats.alignment.reliability import (GroupRatings, bc_interval, bc_test_p_value,
                                           centred_percentile_interval,
                                           compare_corrected_correlations,
                                           compare_size_matched, corrected_correlation,
                                           corrected_r_interval,
                                           group_reliability, random_halves,
                                           reliability_from_matrices, reliability_rows,
                                           size_matched_from_matrices, size_matched_r,
                                           spearman_brown,
                                           weighted_correlation, weighted_item_means)
from gbstats.alignment.simulation import panel_to_long, simulate_alignment_panel
from gbstats.errors import DataValidationError


# ---------------------------------------------------------------- kernels

def test_weighted_correlation_equals_correlation_of_repeated_items():
    # An item weight k counts the item k times, so the weighted r must equal the
    # ordinary r of the data with each item repeated k times.
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=12), rng.normal(size=12)
    w = rng.integers(0, 4, size=12).astype(float)
    expected = np.corrcoef(np.repeat(a, w.astype(int)), np.repeat(b, w.astype(int)))[0, 1]
    assert weighted_correlation(a, b, w)[()] == pytest.approx(expected, rel=1e-12)
    # NaN cells drop out, as if the item were absent
    b_nan = b.copy()
    b_nan[3] = np.nan
    keep = np.arange(12) != 3
    expected = np.corrcoef(np.repeat(a[keep], w[keep].astype(int)),
                           np.repeat(b[keep], w[keep].astype(int)))[0, 1]
    assert weighted_correlation(a, b_nan, w)[()] == pytest.approx(expected, rel=1e-12)
    assert np.isnan(weighted_correlation(a[:2], b[:2], np.ones(2))[()])


def test_weighted_item_means_and_missing_cells():
    sums = np.array([[2.0, 0.0], [4.0, 6.0]])
    counts = np.array([[1.0, 0.0], [1.0, 2.0]])  # p1 never rated item 2; p2 rated it twice
    means = weighted_item_means(np.array([[1.0, 1.0], [2.0, 0.0]]), sums, counts)
    # row 1: item 1 = (2 + 4) / 2 = 3, item 2 = 6 / 2 = 3; row 2: item 1 = 4 / 2 = 2, item 2 none
    np.testing.assert_allclose(means[0], [3.0, 3.0])
    assert means[1, 0] == pytest.approx(2.0) and np.isnan(means[1, 1])


def test_split_half_reliability_hand_worked():
    # Two people, five items: the only split puts one person in each half, so the
    # reliability is Spearman-Brown of the correlation between the two people.
    # p1 = (1, 2, 3, 4, 5), p2 = (2, 1, 4, 3, 5): deviations (-2,-1,0,1,2) and
    # (-1,-2,1,0,2), cross products 2+2+0+0+4 = 8, sums of squares 10 and 10, so
    # r = 0.8 and rel = 2 * .8 / 1.8 = 0.888...
    sums = np.array([[1, 2, 3, 4, 5], [2, 1, 4, 3, 5]], dtype=float)
    counts = np.ones_like(sums)
    halves = random_halves(2, 7, np.random.default_rng(1))
    rel = reliability_rows(np.ones((1, 2)), np.ones(5), sums, counts, halves)[0]
    assert rel == pytest.approx(2 * 0.8 / 1.8, rel=1e-12)
    assert spearman_brown(np.array(0.8)) == pytest.approx(16 / 18)
    assert corrected_correlation(0.4, 0.64) == pytest.approx(0.5)
    assert np.isnan(corrected_correlation(0.4, -0.1))


def test_random_halves_are_balanced():
    halves = random_halves(9, 50, np.random.default_rng(2))
    assert halves.shape == (50, 9) and (halves.sum(axis=1) == 4).all()
    with pytest.raises(DataValidationError, match="at least 2 participants"):
        random_halves(1, 3, np.random.default_rng(0))


def test_reliability_matches_its_definition_on_a_large_panel():
    # Full design, sd_item = 1 (var of true means 1), noise SD 2, n = 16 people:
    # each item mean carries noise variance 4 / 16 = .25 (person offsets are the
    # same for every item in a full design and cancel from correlations), so
    # rel = 1 / (1 + .25) = .8, the noise ceiling sqrt(.8) = .894, and with
    # rho = .3 the raw r is about .3 * .894 = .268 while r / sqrt(rel) is about .3.
    # With 4,000 items the sampling SD of these estimates is about .01.
    x, groups = simulate_alignment_panel({"g": 16}, 0.3, n_items=4000, sd_slope=0.0, seed=3)
    rel, raw = reliability_from_matrices(x, groups, n_splits=100, n_boot=30, n_boot_splits=4,
                                         rng=np.random.default_rng(0))
    row = rel.iloc[0]
    assert row["reliability"] == pytest.approx(0.8, abs=0.02)
    assert row["noise_ceiling"] == pytest.approx(np.sqrt(0.8), abs=0.012)
    assert row["r"] == pytest.approx(0.3 * np.sqrt(0.8), abs=0.035)
    assert row["r_corrected"] == pytest.approx(0.3, abs=0.035)
    assert row["r_corrected"] == pytest.approx(row["r"] / row["noise_ceiling"], rel=1e-12)
    assert raw.iloc[0]["r"] == row["r"]


# ---------------------------------------------------------------- intervals

def test_bc_interval_hand_worked():
    # Draws symmetric around the estimate: z0 = Phi^-1(.5) = 0, so BC is the
    # plain percentile interval.
    draws = np.linspace(-1, 1, 2001)
    low, high, n = bc_interval(0.0, draws)
    assert n == 2001
    assert (low, high) == pytest.approx(tuple(np.quantile(draws, [0.025, 0.975])))
    # Estimate at the 84.13th percentile (z0 = 1): quantiles Phi(2 -+ 1.96) =
    # Phi(.04) = .516 and Phi(3.96) = .99996.
    est = np.quantile(draws, stats.norm.cdf(1.0))
    low, high, _ = bc_interval(est, draws)
    assert low == pytest.approx(np.quantile(draws, stats.norm.cdf(2 - 1.959964)), abs=2e-3)
    assert high == pytest.approx(np.quantile(draws, stats.norm.cdf(2 + 1.959964)), abs=2e-3)
    # an estimate beyond every draw: the interval is widened to contain it
    low, high, _ = bc_interval(5.0, draws)
    assert low <= 5.0 <= high
    assert bc_interval(np.nan, draws)[0] != bc_interval(np.nan, draws)[0]  # NaN


def test_bc_test_p_value_matches_a_normal_test():
    # Draws at the normal quantiles of N(d, 1): z0 = 0 and G(0) = Phi(-d), so
    # p = 2 (1 - Phi(|d|)), the z test.
    b = 20000
    for d in (0.5, 1.96, 3.0):
        draws = d + stats.norm.ppf((np.arange(b) + 0.5) / b)
        assert bc_test_p_value(d, draws) == pytest.approx(2 * stats.norm.sf(d), abs=2e-3)


def test_corrected_r_interval_with_an_exact_reliability_is_fishers():
    # With no uncertainty in the reliability (cov = [[v, 0], [0, 0]]), T(rho) =
    # atanh(r) - atanh(rho sqrt(rel)) has variance v whatever rho, so the bounds
    # solve atanh(rho sqrt(rel)) = atanh(r) -+ 1.96 sqrt(v): rho = tanh(atanh(r) -+
    # 1.96 sqrt(v)) / sqrt(rel), the Fisher-z interval of r scaled by the ceiling.
    # r = .3, rel = .64, v = 1/27 (30 items): tanh(.30952 -+ .37720) / .8.
    v, z = 1 / 27, stats.norm.ppf(0.975)
    low, high, se = corrected_r_interval(0.3, 0.64, np.array([[v, 0.0], [0.0, 0.0]]))
    assert low == pytest.approx(np.tanh(np.arctanh(0.3) - z * np.sqrt(v)) / 0.8, abs=1e-4)
    assert high == pytest.approx(np.tanh(np.arctanh(0.3) + z * np.sqrt(v)) / 0.8, abs=1e-4)
    # the interval is asymmetric around r_c = .375, longer towards 0 (Fisher's z)
    assert 0.375 - low > high - 0.375
    # delta-method SE of r_c: (1 - r^2) / sqrt(rel) * sqrt(v)
    assert se == pytest.approx(0.91 / 0.8 * np.sqrt(v), rel=1e-12)
    # a negative r mirrors the interval
    low_n, high_n, _ = corrected_r_interval(-0.3, 0.64, np.array([[v, 0.0], [0.0, 0.0]]))
    assert (low_n, high_n) == pytest.approx((-high, -low), abs=1e-4)


def test_corrected_r_interval_widens_with_an_uncertain_reliability():
    # Adding variance to log(rel) can only widen the interval (Var(T) grows for
    # every rho != 0), and a reliability that is not positive gives no interval.
    v = 1 / 27
    narrow = corrected_r_interval(0.3, 0.64, np.array([[v, 0.0], [0.0, 0.0]]))
    wide = corrected_r_interval(0.3, 0.64, np.array([[v, 0.0], [0.0, 0.05]]))
    assert wide[0] < narrow[0] and wide[1] > narrow[1] and wide[2] > narrow[2]
    assert np.isnan(corrected_r_interval(0.3, -0.1, np.eye(2) * v)[0])


def test_centred_percentile_interval_is_centred_on_the_estimate():
    # Replicates symmetric on the z scale around a point .05 below the
    # estimate's z (the shrinkage of duplicated people): after recentring, the
    # interval is tanh(atanh(r) -+ the replicates' own quantile spread), exactly.
    b, r = 4001, 0.3
    spread = 0.12 * stats.norm.ppf((np.arange(b) + 0.5) / b)
    draws = np.tanh(np.arctanh(r) - 0.05 + spread)
    low, high, n = centred_percentile_interval(r, draws)
    q = np.quantile(spread - spread.mean(), [0.025, 0.975])
    assert n == b
    assert (low, high) == pytest.approx(tuple(np.tanh(np.arctanh(r) + q)), abs=1e-9)
    # The BC interval of the same replicates is not centred: z0 = Phi^-1(Phi(.05 /
    # .12)) = .417, so BC takes the quantiles at 2 z0 -+ 1.96 of the spread, whose
    # centre is .12 * .833 - .05 = +.05 on the z scale: it overshoots by as much
    # as the replicates were shrunk (issue 25's "about .019 above r")
    bc_low, bc_high, _ = bc_interval(r, draws)
    assert abs((np.arctanh(bc_low) + np.arctanh(bc_high)) / 2 - np.arctanh(r)) > 0.02
    assert np.isnan(centred_percentile_interval(np.nan, draws)[0])


# ---------------------------------------------------------------- group_reliability

@pytest.fixture(scope="module")
def panel():
    x, groups = simulate_alignment_panel({"small": 16, "large": 89}, 0.35, n_items=120,
                                         sd_slope=0.2, items_per_person=80, seed=11)
    return panel_to_long(x, groups, group_column="team")


def test_group_reliability_tables(panel):
    scores, trials = panel
    rel, raw = group_reliability(scores, trials, group="team", score="score", n_boot=300,
                                 n_var_boot=100, n_splits=50, n_boot_splits=8, seed=4)
    assert list(rel["group"]) == ["large", "small"]
    for _, row in rel.iterrows():
        assert row["ci_low"] <= row["r_corrected"] <= row["ci_high"]
        # on the transformed scales the interval is about r_c -+ 1.96 se, not exactly
        half = stats.norm.ppf(0.975) * row["se"]
        assert row["ci_high"] - row["ci_low"] == pytest.approx(2 * half, rel=0.25)
        assert not row["below_calibrated_design"]
        assert 0 < row["reliability"] < 1
        assert row["n_boot"] + row["n_boot_undefined"] == 3 * 100  # three variance parts
    for _, row in raw.iterrows():
        assert row["ci_low"] <= row["r"] <= row["ci_high"]
        means = trials[trials["team"] == row["group"]].groupby("item")["rating"].mean()
        ref = stats.pearsonr(scores.set_index("item").loc[means.index, "score"], means)
        assert row["r"] == pytest.approx(ref[0], rel=1e-10)
        assert row["p_value"] == pytest.approx(ref[1], rel=1e-8)
    # the smaller group has the less reliable item means
    by = rel.set_index("group")
    assert by.loc["small", "reliability"] < by.loc["large", "reliability"]
    again, _ = group_reliability(scores, trials, group="team", score="score", n_boot=300,
                                 n_var_boot=100, n_splits=50, n_boot_splits=8, seed=4)
    pd.testing.assert_frame_equal(rel, again)


def test_group_reliability_bad_input(panel):
    scores, trials = panel
    with pytest.raises(DataValidationError, match="missing column.*'group'"):
        group_reliability(scores, trials, group="group", score="score")
    solo = trials[(trials["team"] == "large") | (trials["participant"] == "small000")]
    with pytest.raises(DataValidationError, match="one participant"):
        group_reliability(scores, solo, group="team", score="score", n_boot=10)


@pytest.mark.slow
def test_corrected_interval_covers_and_participant_only_does_not():
    # The fast version of benchmarks/alignment_calibration.py: 120 panels of 16
    # people (the issue's setting: 335 items, noise SD 2, person SD .5). The
    # truth is rho = .3. Binomial(120, .95) falls below 106 (88%) with
    # probability < .01, so a correct interval passes; and it exceeds 118
    # (98.3%) with probability < .02, which the old two-way BC interval of r_c
    # (coverage .986 in the benchmark: too wide) would often do. The
    # participant-only percentile interval of the raw r (the old method)
    # covered 27-45% in the issue's and the benchmark's runs, far below 90/120.
    covered_new, covered_old = 0, 0
    for seed in range(120):
        rng = np.random.default_rng(seed)
        x, groups = simulate_alignment_panel({"g": 16}, 0.3, seed=rng)
        rel, _ = reliability_from_matrices(x, groups, n_splits=40, n_boot=300, n_var_boot=100,
                                           n_boot_splits=8, rng=rng)
        covered_new += rel.iloc[0]["ci_low"] <= 0.3 <= rel.iloc[0]["ci_high"]
        g = groups[0]
        people = rng.multinomial(16, np.full(16, 1 / 16), size=300).astype(float)
        boot = weighted_correlation(x, weighted_item_means(people, g.sums, g.counts),
                                    np.ones(x.size))
        low, high = np.quantile(boot, [0.025, 0.975])
        covered_old += low <= 0.3 <= high
    assert 106 <= covered_new <= 118, f"corrected interval covered {covered_new}/120"
    assert covered_old < 90, f"participant-only interval covered {covered_old}/120"


def test_per_item_person_weights_draw_each_items_own_raters():
    # An incomplete design: who rated what is fixed; every item's column of
    # weights must sum to its number of raters and be 0 for everyone else,
    # and two items' draws must differ (they are independent).
    from gbstats.alignment.reliability import per_item_person_weights

    counts = np.array([[1, 1, 0, 1], [1, 0, 1, 1], [0, 1, 1, 1], [1, 1, 1, 1]], dtype=float)
    w = per_item_person_weights(counts, 500, np.random.default_rng(1))
    assert w.shape == (500, 4, 4)
    np.testing.assert_array_equal(w.sum(axis=1), np.broadcast_to(counts.sum(axis=0), (500, 4)))
    assert (w[:, counts == 0] == 0).all()
    assert not np.array_equal(w[:, :, 0], w[:, :, 3])
    # each rater's expected weight is 1 (a bootstrap draw of n among n)
    np.testing.assert_allclose(w.mean(axis=0)[counts > 0], 1.0, atol=0.15)


def test_person_centred_sums_take_out_each_persons_level():
    from gbstats.alignment.reliability import person_centred_sums

    sums = np.array([[2.0, 4.0, 0.0], [1.0, 1.0, 4.0]])
    counts = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    g = GroupRatings("g", np.array(["a", "b"], dtype=object), sums, counts)
    # person a: mean 3 over the 2 items rated; person b: mean 2 over 3
    np.testing.assert_allclose(person_centred_sums(g), [[-1.0, 1.0, 0.0], [-1.0, -1.0, 2.0]])


def test_variance_parts_separate_shared_people_from_noise():
    # From the generating model: without random slopes, people share nothing
    # across items that can move r (offsets shift every item mean alike), so
    # resampling people for all items at once and separately per item perturb
    # r_c alike (V_shared ~ V_indep, both the noise). With slopes of SD .5 the
    # group's mean slope is a shared draw: V_shared exceeds V_indep by about
    # the variance it adds. The total is always V_items + max(0, difference).
    from gbstats.alignment.reliability import corrected_r_variance

    # One panel's bootstrap variances rest on its 30 people (relative SE ~ .26),
    # so the comparison is of means over 12 panels.
    means = {}
    for slope in (0.0, 0.5):
        found = []
        for seed in range(12):
            x, groups = simulate_alignment_panel({"g": 30}, 0.3, sd_slope=slope, seed=seed)
            v = corrected_r_variance(x, groups[0], n_boot=150,
                                     halves=random_halves(30, 6, np.random.default_rng(seed)),
                                     rng=np.random.default_rng(100 + seed))
            assert v["variance"] == pytest.approx(v["items"] + max(0.0, v["shared"] - v["indep"]))
            assert v["undefined"] == 0
            found.append(v)
        means[slope] = {k: np.mean([v[k] for v in found]) for k in ("shared", "indep")}
    assert 0.8 < means[0.0]["shared"] / means[0.0]["indep"] < 1.25
    assert means[0.5]["shared"] > 3 * means[0.5]["indep"]


# ---------------------------------------------------------------- size matching

def test_compare_corrected_correlations_table(panel):
    scores, trials = panel
    from gbstats.alignment.reliability import group_alignment

    kwargs = dict(group="team", score="score", n_boot=50, n_var_boot=60, n_splits=20,
                  n_boot_splits=6, seed=3)
    out = compare_corrected_correlations(scores, trials, **kwargs)
    rel, _, same = group_alignment(scores, trials, **kwargs)
    pd.testing.assert_frame_equal(out, same)
    row, by = out.iloc[0], rel.set_index("group")["r_corrected"]
    assert (row["group_a"], row["group_b"]) == ("large", "small")
    assert row["difference"] == pytest.approx(by["large"] - by["small"])
    assert row["statistic"] == pytest.approx(row["difference"] / row["se"])
    assert row["p_value"] == pytest.approx(2 * stats.norm.sf(abs(row["statistic"])))
    assert row["ci_high"] - row["difference"] == pytest.approx(stats.norm.ppf(0.975) * row["se"])
    with pytest.raises(DataValidationError, match="at least two groups"):
        compare_corrected_correlations(scores, trials[trials["team"] == "small"], **kwargs)


def test_size_matched_smallest_group_keeps_its_raw_r(panel):
    scores, trials = panel
    out = compare_size_matched(scores, trials, group="team", score="score", n_subsamples=30,
                               n_boot=200, seed=2)
    row = out.iloc[0]
    assert (row["group_a"], row["group_b"], row["matched_size"]) == ("large", "small", 16)
    small = trials[trials["team"] == "small"].groupby("item")["rating"].mean()
    ref = stats.pearsonr(scores.set_index("item").loc[small.index, "score"], small)[0]
    assert row["r_b"] == pytest.approx(ref, rel=1e-10)  # a 16-of-16 subsample is the group
    assert row["difference"] == pytest.approx(row["r_a"] - row["r_b"])
    assert row["ci_low"] <= row["difference"] <= row["ci_high"]
    assert 0 < row["p_value"] <= 1


def test_size_matched_r_is_the_mean_over_subsamples():
    # Three people, four items, subsamples of 2: every subsample is one of the
    # three pairs, so with many subsamples the mean r is the mean of the three
    # pair correlations (each pair's item means are the mean of two people).
    x = np.array([0.0, 1.0, 2.0, 3.0])
    sums = np.array([[1, 2, 2, 4], [2, 1, 3, 3], [0, 2, 1, 5]], dtype=float)
    g = GroupRatings("g", np.array(["a", "b", "c"], dtype=object), sums, np.ones_like(sums))
    pairs = [(0, 1), (0, 2), (1, 2)]
    expected = np.mean([np.corrcoef(x, sums[list(p)].mean(axis=0))[0, 1] for p in pairs])
    got = size_matched_r(x, g, np.ones((1, 4)), 2, 6000, np.random.default_rng(0))[0]
    assert got == pytest.approx(expected, abs=0.01)


def test_resampled_subsamples_share_each_rows_bootstrap_people():
    # size == P: each subsample is the row's whole bootstrap sample, so all
    # subsamples of a row are equal, sum to P, and hold on average
    # P (1 - (1 - 1/P)^P) distinct people (the bootstrap's expected distinct count).
    from gbstats.alignment.reliability import resampled_subsample_weights

    w = resampled_subsample_weights(10, 10, 2000, 3, np.random.default_rng(5))
    rows = w.reshape(2000, 3, 10)
    assert (rows[:, 0] == rows[:, 1]).all() and (rows[:, 1] == rows[:, 2]).all()
    assert (w.sum(axis=1) == 10).all()
    distinct = (rows[:, 0] > 0).sum(axis=1).mean()
    assert distinct == pytest.approx(10 * (1 - 0.9 ** 10), abs=0.05)
    # size < P: each subsample has `size` draws, all from the row's bootstrap sample
    w = resampled_subsample_weights(12, 4, 500, 5, np.random.default_rng(6)).reshape(500, 5, 12)
    assert (w.sum(axis=2) == 4).all()


@pytest.mark.slow
def test_size_matched_test_holds_its_size():
    # Groups of 16 and 89 with the same alignment (rho = .3): the raw r of the
    # smaller group is lower by construction, but the size-matched test must
    # reject at about 5%. 100 panels: Binomial(100, .05) exceeds 12 with
    # probability < .002.
    rejections = 0
    for seed in range(100):
        rng = np.random.default_rng(1000 + seed)
        x, groups = simulate_alignment_panel({"a": 16, "b": 89}, 0.3, n_items=150, seed=rng)
        from gbstats.alignment.reliability import size_matched_from_matrices

        out = size_matched_from_matrices(x, groups, n_subsamples=20, n_boot=300,
                                         n_boot_subsamples=3, rng=rng)
        rejections += out.iloc[0]["p_value"] < 0.05
    assert rejections <= 12, f"{rejections}/100 rejections under the null"


# ---------------------------------------------------------------- issue 25: small designs, raw r

def _normal_interval_of_issue_13(parts, r_c, crit):
    """The interval this issue replaced: r_c -+ z sqrt(V_items + max(0, V_shared - V_indep)),
    on the r_c scale, without the small-sample factor."""
    reps = {k: corrected_correlation(*v) for k, v in parts.items()}

    def var(v):
        return np.var(v[np.isfinite(v)], ddof=1)

    se = np.sqrt(var(reps["items"]) + max(0.0, var(reps["shared"]) - var(reps["indep"])))
    return r_c - crit * se, r_c + crit * se


@pytest.mark.slow
def test_corrected_interval_covers_at_30_items_and_8_people():
    # Issue 25: at 30 items x 8 people the symmetric normal interval covered
    # .925 (misses lopsided). 800 panels, rho = .3, the issue's noise (SD 2,
    # person SD .5). For a 95% interval Binomial(800, .95) has mean 760 and SD
    # 6.2: below 748 (.935) with probability .03 and above 776 (.97) with
    # probability .005. The replaced interval, scored on the same panels,
    # covered 747 (below the bound); it is reported in the failure message.
    from gbstats.alignment.reliability import (multinomial_weights, transformed_covariance,
                                               variance_replicates)

    crit, covered, covered_old, above, below = stats.norm.ppf(0.975), 0, 0, 0, 0
    for seed in range(800):
        rng = np.random.default_rng([25, seed])
        x, groups = simulate_alignment_panel({"g": 8}, 0.3, n_items=30, seed=rng)
        g, ones = groups[0], np.ones((1, 8))
        r = float(weighted_correlation(x, weighted_item_means(ones, g.sums, g.counts),
                                       np.ones(30))[0])
        rel = float(reliability_rows(ones, np.ones(30), g.sums, g.counts,
                                     random_halves(8, 30, rng))[0])
        parts = variance_replicates(x, g, item_weights=multinomial_weights(30, 100, rng),
                                    halves=random_halves(8, 8, rng), rng=rng)
        low, high, _ = corrected_r_interval(r, rel, transformed_covariance(parts, 30)[0])
        covered += low <= 0.3 <= high
        above += 0.3 > high
        below += 0.3 < low
        old_low, old_high = _normal_interval_of_issue_13(parts, r / np.sqrt(rel), crit)
        covered_old += old_low <= 0.3 <= old_high
    message = f"covered {covered}/800 ({above} above, {below} below); replaced: {covered_old}"
    assert 748 <= covered <= 776, message
    # Neither side misses more than 4% (the replaced interval missed 5.2% above in
    # issue 25's probe): Binomial(800, .025) exceeds 32 with probability .003.
    # This run misses more below (24) than above (8), as the benchmark's 30 x 8
    # scenario does (README, "Which alignment number to cite", Limits).
    assert above <= 32 and below <= 32, message


@pytest.mark.slow
def test_raw_r_interval_is_centred_on_r_and_covers_its_target():
    # Groups of 6 people, 335 items, rho = .3, noise SD 2: the raw r's own
    # target is rho sqrt(rel_6) with rel_6 = 1 / (1 + 4 / 6) = .6 (module
    # docstring of gbstats.alignment.simulation: var(true means) 1, noise 4 / 6),
    # i.e. .2324. Duplicated people shrink the two-way replicates, so the BC
    # interval sat above r (+.022 on the z scale in a 300-panel probe) and
    # covered .903 there; the centred interval covered .957. 300 panels:
    # Binomial(300, .95) lies in [276, 294] with probability > .99.
    from gbstats.alignment.reliability import multinomial_weights, two_way_r

    target = 0.3 * np.sqrt(0.6)
    covered, covered_bc, offsets, offsets_bc = 0, 0, [], []
    for seed in range(300):
        rng = np.random.default_rng([26, seed])
        x, groups = simulate_alignment_panel({"g": 6}, 0.3, seed=rng)
        g = groups[0]
        r = float(weighted_correlation(x, weighted_item_means(np.ones((1, 6)), g.sums,
                                                              g.counts), np.ones(x.size))[0])
        draws = two_way_r(x, g, multinomial_weights(x.size, 400, rng), rng)
        for interval, hits, offs in ((centred_percentile_interval, "new", offsets),
                                     (bc_interval, "bc", offsets_bc)):
            low, high, _ = interval(r, draws)
            offs.append((np.arctanh(low) + np.arctanh(high)) / 2 - np.arctanh(r))
            inside = low <= target <= high
            if hits == "new":
                covered += inside
            else:
                covered_bc += inside
    assert 276 <= covered <= 294, f"centred interval covered {covered}/300 (BC {covered_bc})"
    # centred: its midpoint on the z scale is r's up to the replicates' skew
    assert abs(np.mean(offsets)) < 0.005
    assert np.mean(offsets_bc) > 0.01  # what the issue found


@pytest.mark.slow
def test_corrected_comparison_holds_its_size_where_size_matching_does_not():
    # Issue 25's unequal-noise null: two groups with the SAME alignment (rho =
    # .3), 6 people with noise SD 1.5 against 60 with noise SD 3. Cut to 6
    # people, the second group's item means have reliability 1 / (1 + 9 / 6) =
    # .4 against the first's 1 / (1 + 2.25 / 6) = .73 (sd_item 1), so their raw
    # r differ (.19 vs .26) at equal alignment: the size-matched test tests that,
    # not alignment. The corrected comparison must hold its size: 200 panels,
    # Binomial(200, .05) exceeds 18 (9%) with probability .004.
    from gbstats.alignment.reliability import alignment_tables_from_matrices

    rejected, rejected_matched = 0, 0
    for seed in range(200):
        rng = np.random.default_rng([27, seed])
        x, groups = simulate_alignment_panel({"a": 6, "b": 60}, 0.3, n_items=200,
                                             sd_noise={"a": 1.5, "b": 3.0}, seed=rng)
        _, _, comparison = alignment_tables_from_matrices(
            x, groups, n_splits=20, n_boot=1, n_var_boot=60, n_boot_splits=6, rng=rng)
        rejected += comparison.iloc[0]["p_value"] < 0.05
        if seed < 60:
            matched = size_matched_from_matrices(x, groups, n_subsamples=20, n_boot=100,
                                                 n_boot_subsamples=3, rng=rng)
            rejected_matched += matched.iloc[0]["p_value"] < 0.05
    assert rejected <= 18, f"corrected comparison: {rejected}/200 rejections under the null"
    # The size-matched test, on the first 60 of these panels, rejects well above 5%
    # (11/60 when written): for a test of size .05, 9 or more of 60 has probability
    # .007. That is why it left the README's "cite this" list.
    assert rejected_matched >= 9, f"size-matched: {rejected_matched}/60"

"""Alignment of a model with groups of people.

The central check is a constructed case where the winner is known before any
code runs: simulate groups whose responses come from different per-item
distributions and let the model's predicted distribution be exactly group A's.
By Gibbs' inequality, for every item sum_v p_A(v) ln p_A(v) >= sum_v p_G(v) ln p_A(v),
with equality only when p_G = p_A, so A's expected mean log-likelihood is the
highest and, with enough participants, the comparison must be significant.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from gbstats.alignment.groups import (compare_dependent_correlations, compare_group_correlations,
                               compare_group_loglik, group_correlations, group_loglik,
                               response_logprob)
from gbstats.errors import DataValidationError, UnknownNameError

VARIANTS = ["neutral", "masc", "fem"]


def simulate_choices(seed: int, n_items: int = 16, n_per_group: int = 30,
                     groups=("A", "B", "C")):
    """Each group has its own P(variant | item); participants sample all items from it."""
    rng = np.random.default_rng(seed)
    dist = {g: rng.dirichlet([1.5, 1.5, 1.5], size=n_items) for g in groups}
    rows = []
    for g in groups:
        for p in range(n_per_group):
            for i in range(n_items):
                rows.append({"participant": f"{g}{p:02d}", "attitude_group": g,
                             "item": f"item{i:02d}",
                             "name_gender": "man" if i % 2 else "woman",
                             "response": VARIANTS[rng.choice(3, p=dist[g][i])]})
    trials = pd.DataFrame(rows)
    model = pd.DataFrame([{"item": f"item{i:02d}", "variant": v, "prob": dist["A"][i, k]}
                          for i in range(n_items) for k, v in enumerate(VARIANTS)])
    return trials, model, dist


@pytest.fixture(scope="module")
def choices():
    return simulate_choices(seed=2023)


# ---------------------------------------------------------------- group_loglik

def test_hand_computed_loglik():
    # Two items with variants x/y. Model: item1 P(x)=.8, P(y)=.2; item2 P(x)=P(y)=.5.
    # Group g1: p1 says x on item1, y on item2; p2 says x on both.
    #   mean = (ln .8 + ln .5 + ln .8 + ln .5) / 4 = (ln .8 + ln .5) / 2
    # Group g2: p3 says y on item1 only.  mean = ln .2
    trials = pd.DataFrame({"participant": ["p1", "p1", "p2", "p2", "p3"],
                           "group": ["g1", "g1", "g1", "g1", "g2"],
                           "item": [1, 2, 1, 2, 1],
                           "response": ["x", "y", "x", "x", "y"]})
    model = pd.DataFrame({"item": [1, 1, 2, 2], "variant": ["x", "y", "x", "y"],
                          "prob": [0.8, 0.2, 0.5, 0.5]})
    out = group_loglik(trials, model, group="group", n_boot=200)
    assert list(out["group"]) == ["g1", "g2"]
    assert list(out["split"]) == ["all", "all"]
    assert out["mean_loglik"].tolist() == pytest.approx([(np.log(.8) + np.log(.5)) / 2,
                                                          np.log(.2)])
    assert out["n_participants"].tolist() == [2, 1]
    assert out["n_obs"].tolist() == [4, 1]


def test_model_matching_group_a_fits_a_best(choices):
    trials, model, dist = choices
    out = group_loglik(trials, model, group="attitude_group", split_by="name_gender", n_boot=500, seed=1)
    everyone = out[out["split"] == "all"].set_index("group")
    assert everyone["mean_loglik"].idxmax() == "A"
    # The expected value for each group is known from the generating
    # distributions: mean over items of sum_v p_G(v) ln p_A(v). The estimates
    # must land near it (each has 30 x 16 = 480 trials).
    for g in "ABC":
        expected = np.mean(np.sum(dist[g] * np.log(dist["A"]), axis=1))
        assert everyone.loc[g, "ci_low"] - 0.1 < expected < everyone.loc[g, "ci_high"] + 0.1
    assert set(out["split"]) == {"man", "woman", "all"}
    assert (out["ci_low"] <= out["mean_loglik"]).all()
    assert (out["mean_loglik"] <= out["ci_high"]).all()
    assert (out.loc[out["split"] == "all", "n_obs"] == 480).all()
    assert (out.loc[out["split"] != "all", "n_obs"] == 240).all()
    assert (out["n_participants"] == 30).all()


def test_split_levels_add_up_to_all(choices):
    trials, model, _ = choices
    out = group_loglik(trials, model, group="attitude_group", split_by="name_gender", n_boot=50)
    for g, rows in out.groupby("group"):
        rows = rows.set_index("split")
        pooled = (rows.loc["man", "mean_loglik"] * rows.loc["man", "n_obs"]
                  + rows.loc["woman", "mean_loglik"] * rows.loc["woman", "n_obs"]) / (
            rows.loc["all", "n_obs"])
        assert rows.loc["all", "mean_loglik"] == pytest.approx(pooled)


def test_bootstrap_resamples_participants_not_trials():
    # With a single participant every participant-resample is that same
    # person, so the CI collapses to the point estimate. A trial-level
    # bootstrap would give a wide interval here (the trials differ).
    trials = pd.DataFrame({"participant": ["solo"] * 6, "group": ["g"] * 6,
                           "item": [1, 2, 3, 4, 5, 6],
                           "response": ["x", "y", "x", "y", "x", "x"]})
    model = pd.DataFrame({"item": np.repeat([1, 2, 3, 4, 5, 6], 2),
                          "variant": ["x", "y"] * 6, "prob": [0.9, 0.1] * 6})
    row = group_loglik(trials, model, group="group", n_boot=300).iloc[0]
    assert row["ci_low"] == pytest.approx(row["mean_loglik"])
    assert row["ci_high"] == pytest.approx(row["mean_loglik"])


def test_participant_bootstrap_covers_under_participant_heterogeneity():
    # Every item: model P(x) = .8, P(y) = .2. Participant i chooses x with its own
    # probability q_i ~ Beta(2, 2) (mean .5) on each of 10 trials, so trials are
    # clustered within people (intra-class correlation 1 / (2 + 2 + 1) = .2).
    # True mean log-likelihood per trial = .5 ln .8 + .5 ln .2.
    # A participant-level bootstrap must cover it at close to the nominal 95%
    # (a trial-level bootstrap would cover it only ~75% of the time, because
    # the design effect 1 + 9 * .2 = 2.8 widens the true SE by sqrt(2.8)).
    truth = 0.5 * np.log(0.8) + 0.5 * np.log(0.2)
    model = pd.DataFrame({"item": [0, 0], "variant": ["x", "y"], "prob": [0.8, 0.2]})
    rng = np.random.default_rng(99)
    n_rep, n_people, n_trials, covered = 200, 40, 10, 0
    for rep in range(n_rep):
        q = rng.beta(2, 2, size=n_people)
        chose_x = rng.random((n_people, n_trials)) < q[:, None]
        trials = pd.DataFrame({
            "participant": np.repeat(np.arange(n_people), n_trials),
            "group": "g", "item": 0,
            "response": np.where(chose_x.ravel(), "x", "y")})
        row = group_loglik(trials, model, group="group", n_boot=400, seed=rep).iloc[0]
        covered += row["ci_low"] <= truth <= row["ci_high"]
    # binomial(200, .95) has sd 3.1; a percentile bootstrap with 40 clusters runs
    # slightly under nominal. 176/200 = 88% is > 4 sd below 95%.
    assert covered >= 176, f"coverage {covered}/{n_rep}"


def test_group_order_follows_categorical_order(choices):
    trials, model, _ = choices
    trials = trials.assign(attitude_group=pd.Categorical(
        trials["attitude_group"], categories=["C", "A", "B"]))
    out = group_loglik(trials, model, group="attitude_group", n_boot=20)
    assert list(out["group"]) == ["C", "A", "B"]


def test_loglik_is_seeded(choices):
    trials, model, _ = choices
    first = group_loglik(trials, model, group="attitude_group", n_boot=100, seed=5)
    pd.testing.assert_frame_equal(first, group_loglik(trials, model, group="attitude_group", n_boot=100, seed=5))


# ---------------------------------------------------------------- bad input

def _tiny():
    trials = pd.DataFrame({"participant": ["p1", "p1", "p2"], "group": ["a", "a", "b"],
                           "item": [1, 2, 1], "response": ["x", "y", "x"]})
    model = pd.DataFrame({"item": [1, 1, 2, 2], "variant": ["x", "y", "x", "y"],
                          "prob": [0.5, 0.5, 0.7, 0.3]})
    return trials, model


def test_probabilities_must_be_normalised_per_item():
    trials, model = _tiny()
    model.loc[3, "prob"] = 0.2
    with pytest.raises(DataValidationError, match=r"sum 0\.9 for item=2"):
        group_loglik(trials, model, group="group")


def test_response_missing_from_model_names_item_and_response():
    trials, model = _tiny()
    trials.loc[1, "response"] = "z"
    with pytest.raises(DataValidationError,
                       match=r"response 'z' for item item=2 is not one of the model's "
                             r"variants for that item \('x', 'y'\)"):
        group_loglik(trials, model, group="group")
    trials, model = _tiny()
    trials.loc[1, "item"] = 7
    with pytest.raises(DataValidationError, match="item item=7 is not in model_probs"):
        group_loglik(trials, model, group="group")


def test_zero_probability_response_is_an_error_not_a_drop():
    trials, model = _tiny()
    model["prob"] = [1.0, 0.0, 0.7, 0.3]
    trials.loc[0, "response"] = "y"
    with pytest.raises(DataValidationError,
                       match="probability 0 to response 'y' for item item=1"):
        group_loglik(trials, model, group="group")


def test_other_bad_inputs():
    trials, model = _tiny()
    with pytest.raises(DataValidationError, match="missing column.*'attitude_group'"):
        group_loglik(trials, model, group="attitude_group")  # default group column absent
    bad = trials.copy()
    bad.loc[2, "group"] = "a"
    bad.loc[2, "participant"] = "p1"
    bad.loc[0, "group"] = "b"
    with pytest.raises(DataValidationError, match="participant 'p1' in a, b"):
        group_loglik(bad, model, group="group")
    bad = trials.copy()
    bad.loc[1, "response"] = None
    with pytest.raises(DataValidationError, match="missing value"):
        group_loglik(bad, model, group="group")
    dup = pd.concat([model, model.iloc[[0]]])
    with pytest.raises(DataValidationError, match="duplicated item x variant"):
        group_loglik(trials, dup, group="group")
    negative = model.assign(prob=[1.2, -0.2, 0.7, 0.3])
    with pytest.raises(DataValidationError, match=r"in \[0, 1\]"):
        group_loglik(trials, negative, group="group")


def test_response_logprob_aligns_with_trials_index():
    trials, model = _tiny()
    trials.index = [10, 20, 30]
    logp = response_logprob(trials, model, item_keys=["item"])
    assert logp.index.tolist() == [10, 20, 30]
    assert logp.tolist() == pytest.approx([np.log(0.5), np.log(0.3), np.log(0.5)])


# ---------------------------------------------------------------- compare_group_loglik

def test_comparison_finds_the_matching_group_significant(choices):
    trials, model, _ = choices
    out = compare_group_loglik(trials, model, group="attitude_group", split_by="name_gender",
                               n_perm=2000, n_boot=500, seed=3)
    assert list(out["split"]) == ["man", "woman", "all"]
    assert (out["group_best"] == "A").all()
    everyone = out.set_index("split").loc["all"]
    assert everyone["p_value"] < 0.01
    assert everyone["difference"] > 0
    assert everyone["ci_low"] > 0  # the bootstrap CI excludes 0 too
    # the point values agree with group_loglik
    means = group_loglik(trials, model, group="attitude_group", n_boot=10).set_index("group")["mean_loglik"]
    assert everyone["loglik_best"] == pytest.approx(means["A"])
    assert everyone["loglik_next"] == pytest.approx(means[everyone["group_next"]])
    assert everyone["difference"] == pytest.approx(means["A"] - means[everyone["group_next"]])


def test_explicit_pair_is_ordered_by_fit(choices):
    trials, model, _ = choices
    out = compare_group_loglik(trials, model, group="attitude_group", groups=("B", "A"), n_perm=200, n_boot=50)
    assert (out.iloc[0]["group_best"], out.iloc[0]["group_next"]) == ("A", "B")
    with pytest.raises(UnknownNameError, match="(?i)did you mean 'A'"):
        compare_group_loglik(trials, model, group="attitude_group", groups=("AA", "B"), n_perm=10, n_boot=10)


def test_permutation_p_value_is_calibrated_under_the_null():
    # Two groups drawn from the same distribution: the model fits both equally
    # in expectation, so p < .05 should happen about 5% of the time. Over 100
    # seeded datasets, Binomial(100, .05) exceeds 13 rejections with
    # probability < .001.
    rng = np.random.default_rng(0)
    dist = rng.dirichlet([2, 2], size=6)
    model = pd.DataFrame([{"item": i, "variant": v, "prob": dist[i, k]}
                          for i in range(6) for k, v in enumerate("xy")])
    rejections = 0
    for rep in range(100):
        rows = []
        for g in ("a", "b"):
            for p in range(12):
                for i in range(6):
                    rows.append((f"{g}{p}", g, i, "xy"[rng.choice(2, p=dist[i])]))
        trials = pd.DataFrame(rows, columns=["participant", "group", "item", "response"])
        p_value = compare_group_loglik(trials, model, group="group", n_perm=199,
                                       n_boot=1, seed=rep).iloc[0]["p_value"]
        assert 1 / 200 <= p_value <= 1
        rejections += p_value < 0.05
    assert rejections <= 13


# ---------------------------------------------------------------- correlations

def simulate_ratings(seed: int, n_items: int = 40, n_per_group: int = 25):
    """Group 'close' rates items following the model score; 'far' barely does."""
    rng = np.random.default_rng(seed)
    score = rng.normal(size=n_items)
    item_effect = rng.normal(size=n_items)  # shared by both groups: makes y1, y2 correlated
    slope = {"close": -1.0, "far": -0.2}
    rows = []
    for g, b in slope.items():
        for p in range(n_per_group):
            person = rng.normal(scale=0.5)
            for i in range(n_items):
                rows.append({"participant": f"{g}{p}", "group": g, "item": i,
                             "rating": 4 + person + b * score[i] + 0.5 * item_effect[i]
                             + rng.normal()})
    return pd.DataFrame({"item": np.arange(n_items), "surprisal": score}), pd.DataFrame(rows)


@pytest.fixture(scope="module")
def ratings():
    return simulate_ratings(seed=5)


def test_group_correlations_point_values(ratings):
    scores, trials = ratings
    out = group_correlations(scores, trials, group="group", n_boot=300, seed=1).set_index("group")
    for g in ("close", "far"):
        means = trials[trials["group"] == g].groupby("item")["rating"].mean()
        ref = stats.pearsonr(scores.set_index("item").loc[means.index, "surprisal"], means)
        assert out.loc[g, "r"] == pytest.approx(ref[0], rel=1e-10)
        assert out.loc[g, "p_value"] == pytest.approx(ref[1], rel=1e-8)
        assert out.loc[g, "ci_low"] < out.loc[g, "r"] < out.loc[g, "ci_high"]
    assert out.loc["close", "r"] < out.loc["far", "r"] < 0.2
    assert out.loc["close", "n_items"] == 40 and out.loc["close", "n_participants"] == 25
    spearman = group_correlations(scores, trials, group="group", method="spearman", n_boot=50)
    means = trials[trials["group"] == "far"].groupby("item")["rating"].mean()
    assert spearman.set_index("group").loc["far", "r"] == pytest.approx(
        stats.spearmanr(scores["surprisal"], means)[0])


def test_correlation_bootstrap_recomputes_item_means_per_participant_resample():
    # One participant per group -> every resample is the same person, CI = point.
    scores = pd.DataFrame({"item": [1, 2, 3, 4], "surprisal": [1.0, 2.0, 3.0, 5.0]})
    trials = pd.DataFrame({"participant": ["p"] * 4, "group": ["g"] * 4,
                           "item": [1, 2, 3, 4], "rating": [5.0, 3.0, 4.0, 1.0]})
    row = group_correlations(scores, trials, group="group", n_boot=100,
                             ci_method="participant_percentile").iloc[0]
    assert row["ci_low"] == pytest.approx(row["r"])
    assert row["ci_high"] == pytest.approx(row["r"])


def test_two_way_interval_contains_its_estimate_and_participant_only_is_shrunk():
    # 16 people, noise SD 2: resampling people with replacement shrinks |r|, so
    # the old participant-only percentile interval sits on the near-zero side
    # of r (in the shipped singular-they report r = .316 had CI [.289, .328]).
    # The two-way interval (replicates recentred on r on the Fisher-z scale, issue
    # 25) must contain r every time, and its midpoint on the z scale is r's up to the
    # replicates' skew.
    from gbstats.alignment.simulation import panel_to_long, simulate_alignment_panel

    shift, z_offset = [], []
    for seed in range(8):
        x, groups = simulate_alignment_panel({"g": 16}, 0.3, n_items=335, seed=seed)
        scores, trials = panel_to_long(x, groups)
        for method in ("pearson", "spearman"):
            row = group_correlations(scores, trials, group="group", score="score",
                                     method=method, n_boot=300, seed=seed).iloc[0]
            assert row["ci_low"] <= row["r"] <= row["ci_high"], (seed, method)
            z_offset.append((np.arctanh(row["ci_low"]) + np.arctanh(row["ci_high"])) / 2
                            - np.arctanh(row["r"]))
        old = group_correlations(scores, trials, group="group", score="score", n_boot=300,
                                 seed=seed, ci_method="participant_percentile").iloc[0]
        shift.append((old["ci_low"] + old["ci_high"]) / 2 - old["r"])
    # r is about .27 here; the old interval's midpoint lies below it on average
    assert np.mean(shift) < -0.01, shift
    assert abs(np.mean(z_offset)) < 0.005, z_offset


def test_unrated_and_unscored_items(ratings):
    scores, trials = ratings
    extra = pd.concat([scores, pd.DataFrame({"item": [99], "surprisal": [0.0]})])
    out = group_correlations(extra, trials, group="group", n_boot=20)
    assert (out["n_items_unrated"] == 1).all() and (out["n_items"] == 40).all()
    with pytest.raises(DataValidationError, match="item=3 has ratings but no model score"):
        group_correlations(scores[scores["item"] != 3], trials, group="group", n_boot=20)


def test_compare_group_correlations_finds_the_closer_group(ratings):
    scores, trials = ratings
    row = compare_group_correlations(scores, trials, group="group").iloc[0]
    assert (row["group_best"], row["group_next"]) == ("close", "far")
    assert row["p_value"] < 0.001
    assert row["ci_high"] < 0  # r_close - r_far is clearly negative
    means = trials.groupby(["group", "item"])["rating"].mean().unstack("group")
    assert row["r_y1y2"] == pytest.approx(stats.pearsonr(means["close"], means["far"])[0])
    assert row["n"] == 40


# ---------------------------------------------------------------- Steiger and Zou

def test_steiger_and_zou_hand_worked_example():
    # r_xy1 = .5, r_xy2 = .3, r_y1y2 = .4, n = 103 (so sqrt(n - 3) = 10).
    # Steiger (1980) eq. 15 with the pooled rbar:
    #   rbar = .4, rbar^2 = .16, 1 - 2 rbar^2 = .68
    #   psi = .4 * .68 - .5 * .16 * (.68 - .16) = .272 - .0416 = .2304
    #   c = .2304 / (1 - .16)^2 = .2304 / .7056 = 16 / 49   (48^2 / 84^2)
    #   2 - 2c = 66 / 49, sqrt = sqrt(66) / 7 = 1.1605769
    #   atanh .5 = ln(3)/2 = .5493061, atanh .3 = ln(13/7)/2 = .3095196, diff .2397865
    #   Z = .2397865 * 10 / 1.1605769 = 2.066098;  p = 2 (1 - Phi(2.066098)) = .0388
    # Zou (2007), 95%, half-width in z = 1.959964 / 10 = .1959964:
    #   r1: tanh(.5493061 -+ .1959964) = tanh(.353310), tanh(.745303) = (.339308, .632338)
    #   r2: tanh(.3095196 -+ .1959964) = tanh(.113523), tanh(.505516) = (.113038, .466444)
    #   c = ((.4 - .5*.5*.3)(1 - .25 - .09 - .16) + .4^3) / ((1 - .25)(1 - .09))
    #     = (.325 * .5 + .064) / .6825 = .2265 / .6825 = .331868
    #   L = .2 - sqrt(.160692^2 + .166444^2 - 2c * .160692 * .166444)
    #     = .2 - sqrt(.025822 + .027704 - .017752) = .2 - .189140 = .010860
    #   U = .2 + sqrt(.132338^2 + .186962^2 - 2c * .132338 * .186962)
    #     = .2 + sqrt(.017513 + .034955 - .016422) = .2 + .189858 = .389858
    # (by hand to 6 decimals, hence the 2e-5 tolerance on the interval)
    row = compare_dependent_correlations(0.5, 0.3, 0.4, 103).iloc[0]
    assert row["difference"] == pytest.approx(0.2)
    assert row["statistic"] == pytest.approx(2.066098, rel=2e-6)
    assert row["p_value"] == pytest.approx(0.0388, abs=5e-4)
    assert row["ci_low"] == pytest.approx(0.010860, abs=2e-5)
    assert row["ci_high"] == pytest.approx(0.389858, abs=2e-5)
    # swapping the two correlations flips the sign of Z and mirrors the interval
    swapped = compare_dependent_correlations(0.3, 0.5, 0.4, 103).iloc[0]
    assert swapped["statistic"] == pytest.approx(-row["statistic"])
    assert swapped["ci_low"] == pytest.approx(-row["ci_high"])


def _simulated_correlations(rho_1, rho_2, rho_12, n, n_rep, seed):
    """Sample correlations r_xy1, r_xy2, r_y1y2 from n_rep trivariate-normal samples."""
    cov = np.array([[1, rho_1, rho_2], [rho_1, 1, rho_12], [rho_2, rho_12, 1]])
    data = np.random.default_rng(seed).multivariate_normal(np.zeros(3), cov,
                                                           size=(n_rep, n))
    data = data - data.mean(axis=1, keepdims=True)
    sd = np.sqrt((data ** 2).sum(axis=1))
    corr = lambda i, j: (data[:, :, i] * data[:, :, j]).sum(axis=1) / (sd[:, i] * sd[:, j])
    return corr(0, 1), corr(0, 2), corr(1, 2)


def test_steiger_rejects_at_nominal_rate_under_the_null():
    # Equal population correlations (.4 and .4) with correlated y1, y2 (.6):
    # rejection rate at .05 over 2000 samples of n = 60 must be near .05
    # (binomial sd .0049; the test is asymptotic, so allow .03 to .07).
    r1, r2, r12 = _simulated_correlations(0.4, 0.4, 0.6, 60, 2000, seed=1)
    p = np.array([compare_dependent_correlations(a, b, c, 60).iloc[0]["p_value"]
                  for a, b, c in zip(r1, r2, r12)])
    assert 0.03 <= (p < 0.05).mean() <= 0.07


def test_zou_interval_covers_the_true_difference():
    # Population difference .6 - .3 = .3; 95% intervals should cover it ~95% of the
    # time (Zou reports near-nominal coverage at such n); allow .92 to .98.
    r1, r2, r12 = _simulated_correlations(0.6, 0.3, 0.5, 80, 1000, seed=2)
    rows = [compare_dependent_correlations(a, b, c, 80).iloc[0] for a, b, c in zip(r1, r2, r12)]
    covered = np.mean([r["ci_low"] <= 0.3 <= r["ci_high"] for r in rows])
    assert 0.92 <= covered <= 0.98


def test_dependent_correlation_input_errors():
    with pytest.raises(DataValidationError, match="strictly between -1 and 1"):
        compare_dependent_correlations(1.0, 0.3, 0.4, 50)
    with pytest.raises(DataValidationError, match="n >= 4"):
        compare_dependent_correlations(0.5, 0.3, 0.4, 3)
    with pytest.raises(DataValidationError, match="not positive semi-definite"):
        compare_dependent_correlations(0.9, -0.9, 0.9, 50)


def test_wide_table_has_one_row_per_group(choices):
    from gbstats.alignment.groups import group_loglik_wide

    trials, model, _ = choices
    long = group_loglik(trials, model, group="attitude_group", split_by="name_gender", n_boot=20)
    wide = group_loglik_wide(long)
    assert list(wide["group"]) == ["A", "B", "C"]
    assert wide.loc[0, "mean_loglik_man"] == long.iloc[0]["mean_loglik"]
    assert wide.loc[2, "mean_loglik_all"] == long.iloc[8]["mean_loglik"]
    assert (wide["n_obs_all"] == 480).all() and (wide["n_participants"] == 30).all()


def test_split_column_may_also_be_an_item_key(choices):
    trials, model, _ = choices
    out = group_loglik(trials, model, group="attitude_group", split_by="item", n_boot=5)
    assert len(out) == 3 * (16 + 1)


def test_permutation_p_value_matches_full_enumeration():
    # Four participants with one trial each on an item where the model says
    # P(x) = .9, P(y) = .1. Group a chose x (loglik ln .9 each), group b chose y
    # (ln .1 each). Of the C(4, 2) = 6 ways to label two participants "a",
    # 2 give |difference| = ln .9 - ln .1 (the observed and its mirror) and 4
    # give 0, so the exact two-sided permutation p is 2/6 = 1/3; with 20,000
    # random permutations p = (1 + #extreme) / 20,001 lies within .01 of it.
    trials = pd.DataFrame({"participant": ["p1", "p2", "p3", "p4"],
                           "group": ["a", "a", "b", "b"], "item": 1,
                           "response": ["x", "x", "y", "y"]})
    model = pd.DataFrame({"item": [1, 1], "variant": ["x", "y"], "prob": [0.9, 0.1]})
    row = compare_group_loglik(trials, model, group="group", n_perm=20000, n_boot=10).iloc[0]
    assert row["difference"] == pytest.approx(np.log(0.9) - np.log(0.1))
    assert row["p_value"] == pytest.approx(1 / 3, abs=0.01)


# ---------------------------------------------------------------- published values

# Watson, Beekhuizen & Stevenson (2023)'s published corpus-prior log-likelihoods:
# tests/reference/watson2023_corpus_prior_loglik.csv (fixture watson_corpus_prior).


@pytest.fixture(scope="module")
def papineau(data_dir):
    from gbstats.data.registry import load_dataset

    return load_dataset("papineau2022", data_dir)


@pytest.mark.parametrize("set_type", ["3-way", "2-way"])
@pytest.mark.parametrize("grouping", ["attitude_group", "party"])
def test_reproduces_watson_corpus_prior_loglik(papineau, watson_corpus_prior, set_type,
                                               grouping):
    # The frequency prior P(V) needs no language model, so these published
    # numbers check group_loglik end to end on the real data and exclusions.
    data = papineau
    trials = data.tables["trials"]
    trials = trials[trials["set_type"] == set_type]
    out = group_loglik(trials, data.tables["variant_prior"], group=grouping,
                       item_keys=["role_noun_set"], prob="prior", split_by="name_gender",
                       n_boot=200).set_index(["group", "split"])
    for g in trials[grouping].unique():
        ref = watson_corpus_prior.loc[(set_type, g)]
        men, women, both = ref["loglik_men"], ref["loglik_women"], ref["loglik_all"]
        n_p, n_men, n_women, n_all = (ref["n_participants"], ref["n_obs_men"],
                                      ref["n_obs_women"], ref["n_obs_all"])
        assert out.loc[(g, "men"), "mean_loglik"] == pytest.approx(men, rel=1e-9)
        assert out.loc[(g, "women"), "mean_loglik"] == pytest.approx(women, rel=1e-9)
        assert out.loc[(g, "all"), "mean_loglik"] == pytest.approx(both, rel=1e-9)
        assert out.loc[(g, "all"), "n_participants"] == n_p
        assert (out.loc[(g, "men"), "n_obs"], out.loc[(g, "women"), "n_obs"],
                out.loc[(g, "all"), "n_obs"]) == (n_men, n_women, n_all)

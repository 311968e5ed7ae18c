"""Generic helpers moved out of the studies into gbstats: softmax_within and
normalise_within, binomial_tail_p, posterior_draws, wald_table.

References are hand-worked (derivations in comments) or scipy/statsmodels.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from gbstats.errors import DataValidationError, GbstatsError
from gbstats.inference.hypothesis_tests import binomial_tail_p
from gbstats.mixed.posterior import posterior_draws
from gbstats.inference.probabilities import normalise_within, softmax_within
from gbstats.mixed.results import WALD_Z, wald_table

# --- softmax_within ----------------------------------------------------------------


def test_softmax_within_by_hand():
    """Group a: log 1, log 3 -> 1/4, 3/4. Group b: -1000, -1000 - log 2 -> 2/3, 1/3 (the
    shift by the group's logsumexp keeps -1000 from underflowing)."""
    df = pd.DataFrame({"g": ["a", "b", "a", "b"],
                       "lp": [0.0, -1000.0, math.log(3), -1000.0 - math.log(2)]})
    np.testing.assert_allclose(softmax_within(df, "lp", "g"), [0.25, 2 / 3, 0.75, 1 / 3])


def test_softmax_within_nan_rule_is_explicit():
    df = pd.DataFrame({"g": ["a", "a", "b", "b"], "lp": [-1.0, np.nan, -1.0, -2.0]})
    with pytest.raises(DataValidationError, match="g='a'"):
        softmax_within(df, "lp", "g")                       # default: raise, naming the group
    out = softmax_within(df, "lp", "g", on_missing="nan")   # or the whole group NaN
    assert out.iloc[:2].isna().all()
    assert out.iloc[2] == pytest.approx(1 / (1 + math.exp(-1)))


def test_softmax_within_minus_inf_is_probability_zero_and_plus_inf_raises():
    df = pd.DataFrame({"g": ["a", "a", "b", "b"], "lp": [-np.inf, -1.0, -np.inf, -np.inf]})
    out = softmax_within(df, "lp", "g", on_missing="nan")
    assert out.iloc[0] == 0.0 and out.iloc[1] == 1.0        # log 0 -> probability 0
    assert out.iloc[2:].isna().all()                         # all -inf: nothing to normalise
    with pytest.raises(DataValidationError, match="only -inf"):
        softmax_within(df, "lp", "g")
    with pytest.raises(DataValidationError, match=r"\+inf"):
        softmax_within(pd.DataFrame({"g": ["a"], "lp": [np.inf]}), "lp", "g", on_missing="nan")


def test_softmax_within_equals_the_per_group_logsumexp_formula():
    """The grouped reductions against exp(x - logsumexp(group)) computed group by group
    with scipy, on 300 groups of 1-5 alternatives under two keys, in shuffled row order,
    with log-probabilities down to -2000 and some -inf (log 0) entries."""
    from scipy.special import logsumexp

    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 6, size=300)
    df = pd.DataFrame({"k1": np.repeat(np.arange(300) % 17, sizes),
                       "k2": np.repeat(np.arange(300) // 17, sizes),
                       "lp": rng.uniform(-2000, 0, size=sizes.sum())})
    firsts = np.cumsum(sizes) - sizes
    df.loc[firsts[sizes > 1][::3] + 1, "lp"] = -np.inf   # a zero-probability alternative
    df = df.sample(frac=1.0, random_state=1)
    expected = pd.concat([np.exp(g["lp"] - logsumexp(g["lp"].to_numpy()))
                          for _, g in df.groupby(["k1", "k2"])]).reindex(df.index)
    out = softmax_within(df, "lp", ["k1", "k2"])
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=0)
    np.testing.assert_allclose(out.groupby([df["k1"], df["k2"]]).sum(), 1.0, rtol=1e-12)


def test_softmax_within_a_row_without_a_group_key_counts_as_missing():
    df = pd.DataFrame({"g": ["a", None, "a"], "lp": [-1.0, -2.0, -1.0]})
    with pytest.raises(DataValidationError, match=r"no value in the grouping(.|\n)*row 1"):
        softmax_within(df, "lp", "g")
    out = softmax_within(df, "lp", "g", on_missing="nan")
    assert out.tolist()[0] == 0.5 and np.isnan(out.iloc[1]) and out.iloc[2] == 0.5


def test_forced_choice_uses_the_same_softmax():
    from models.forced_choice import normalise_over_variants

    df = pd.DataFrame({"item": [1, 1, 2, 2], "logprob": [-1.0, -3.0, np.nan, -1.0]})
    out = normalise_over_variants(df)
    np.testing.assert_allclose(out.iloc[:2], [1 / (1 + math.exp(-2)), 1 / (1 + math.exp(2))])
    assert out.iloc[2:].isna().all()


def test_normalise_within_by_hand_and_zero_total():
    df = pd.DataFrame({"g": ["a", "a", "b"], "v": [1.0, 3.0, 2.0]})
    np.testing.assert_allclose(normalise_within(df, "v", "g"), [0.25, 0.75, 1.0])
    with pytest.raises(DataValidationError, match="g='z'"):
        normalise_within(pd.DataFrame({"g": ["z"], "v": [0.0]}), "v", "g")


# --- binomial_tail_p -----------------------------------------------------------------


def test_binomial_tail_by_hand_and_against_scipy():
    # 0 of 12 at chance 1/4: P(X <= 0) = (3/4)^12
    assert binomial_tail_p(0, 12, 0.25) == pytest.approx(0.75 ** 12)
    # 12 of 12 at chance 1/4, upper tail: P(X >= 12) = (1/4)^12
    assert binomial_tail_p(12, 12, 0.25, tail="upper") == pytest.approx(0.25 ** 12)
    # 1 of 3 at 1/2: P(X <= 1) = (1 + 3) / 8
    assert binomial_tail_p(1, 3, 0.5) == pytest.approx(0.5)
    for k, n, p in [(3, 20, 0.3), (15, 40, 0.5), (7, 9, 0.2)]:
        assert binomial_tail_p(k, n, p) == pytest.approx(
            stats.binomtest(k, n, p, alternative="less").pvalue, rel=1e-10)
        assert binomial_tail_p(k, n, p, tail="upper") == pytest.approx(
            stats.binomtest(k, n, p, alternative="greater").pvalue, rel=1e-10)


def test_binomial_tail_without_a_count_and_bad_input():
    assert math.isnan(binomial_tail_p(None, 12, 0.25))
    assert math.isnan(binomial_tail_p(np.nan, 12, 0.25))
    assert math.isnan(binomial_tail_p(3, 0, 0.25))
    with pytest.raises(DataValidationError, match="successes=13, n=12"):
        binomial_tail_p(13, 12, 0.25)
    with pytest.raises(KeyError, match="middle"):
        binomial_tail_p(1, 2, 0.5, tail="middle")


# --- posterior_draws ------------------------------------------------------------------


def test_posterior_draws_flatten_chain_by_chain():
    import arviz as az

    idata = az.from_dict(posterior={"b": np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),
                                    "v": np.zeros((2, 3, 2))})
    np.testing.assert_array_equal(posterior_draws(idata, "b"), [1, 2, 3, 4, 5, 6])
    with pytest.raises(GbstatsError, match=r"no variable 'x'.*\['b', 'v'\]"):
        posterior_draws(idata, "x")
    with pytest.raises(GbstatsError, match="2 columns"):
        posterior_draws(idata, "v")


# --- wald_table -------------------------------------------------------------------------


def test_wald_table_by_hand():
    """estimate +/- qnorm(0.975) * se, with qnorm(0.975) = 1.959964 (R: qnorm(0.975))."""
    assert WALD_Z == pytest.approx(1.959963984540054)
    t = wald_table(["a", "b"], [1.0, -2.0], [0.5, 0.1], [2.0, -20.0], [np.nan, 10.0],
                   [0.0455, 1e-9])
    assert list(t.columns) == ["term", "estimate", "se", "ci_low", "ci_high", "stat", "df",
                               "p_value"]
    assert t.loc[0, "ci_low"] == pytest.approx(1 - 1.959963984540054 * 0.5)
    assert t.loc[1, "ci_high"] == pytest.approx(-2 + 1.959963984540054 * 0.1)
    assert np.isnan(t.loc[0, "df"]) and t.loc[1, "df"] == 10.0

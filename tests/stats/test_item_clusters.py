"""The group bootstrap draws the unit the items cluster in (issue 40): with cluster labels,
every item of a cluster gets its cluster's weight; without them the draw is the items'
own, from the same random stream as before (so earlier results are unchanged)."""
from __future__ import annotations

import numpy as np
import pytest

from gbstats.alignment.reliability import item_multinomial, multinomial_weights
from gbstats.errors import DataValidationError


def test_clusters_are_drawn_whole():
    clusters = np.repeat([f"name{k}" for k in range(21)], 9)        # 189 items, 21 names
    w = item_multinomial(189, 500, np.random.default_rng(1), clusters)
    assert w.shape == (500, 189)
    by_cluster = w.reshape(500, 21, 9)
    assert (by_cluster == by_cluster[:, :, :1]).all()                  # one weight per name
    assert (w.sum(axis=1) == 189).all()                                # 21 names drawn x 9


def test_without_clusters_the_stream_is_the_items_own():
    a = item_multinomial(30, 7, np.random.default_rng(2))
    b = multinomial_weights(30, 7, np.random.default_rng(2))
    np.testing.assert_array_equal(a, b)


def test_one_label_per_item():
    with pytest.raises(DataValidationError, match="one cluster label per item"):
        item_multinomial(10, 3, np.random.default_rng(0), np.arange(9))


def _cluster_trials(seed=1):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    names = [f"n{k}" for k in range(12)]
    mu = {n: rng.normal() for n in names}
    rows = [(p, "a" if p % 2 else "b", f"{n} s{s}", n,
             float(rng.random() < 1 / (1 + np.exp(-(mu[n] + 0.3 * s)))))
            for p in range(80) for n in names for s in range(3)]
    return pd.DataFrame(rows, columns=["participant", "group", "item", "first", "y"])


def test_profile_agreement_resamples_the_items_clusters_and_says_so():
    """Issue 40, item 3: the ceiling's interval draws first names whole, like the
    comparisons; the point estimate does not depend on the resampling."""
    from gbstats.alignment.group_comparison import profile_agreement

    trials = _cluster_trials()
    plain = profile_agreement(trials, group="group", rating="y", n_boot=200, seed=2)
    clustered = profile_agreement(trials, group="group", rating="y", n_boot=200, seed=2,
                                  item_cluster="first")
    assert clustered["r_profiles_corrected"].iloc[0] == plain["r_profiles_corrected"].iloc[0]
    assert clustered["resampled"].iloc[0] == "participants x clusters of items (first)"
    assert "resampled" not in plain.columns
    assert (clustered["ci_low"].iloc[0], clustered["ci_high"].iloc[0]) != \
        (plain["ci_low"].iloc[0], plain["ci_high"].iloc[0])


def test_an_item_in_two_clusters_is_refused():
    import pytest

    from gbstats.alignment.group_comparison import profile_agreement
    from gbstats.errors import DataValidationError

    trials = _cluster_trials()
    trials.loc[0, "first"] = "elsewhere"
    with pytest.raises(DataValidationError, match="exactly one cluster"):
        profile_agreement(trials, group="group", rating="y", n_boot=200, seed=2,
                          item_cluster="first")

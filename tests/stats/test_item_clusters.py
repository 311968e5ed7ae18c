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

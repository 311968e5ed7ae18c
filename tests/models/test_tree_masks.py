"""The packed rows' inputs (models.causal._band_inputs): ids, positions and the tree mask.

The mask and positions are built in numpy by depth level (issue 41); these tests
check them against layouts worked out by hand from the trie's definition: a token
sees itself and its ancestors in its own trie and nothing else, and its position is
its depth (0 for the first token of a text).
"""
from __future__ import annotations

import numpy as np

import models.causal as causal
from models.causal import CausalUnit, _band_inputs, _packed_layout, row_bands


def _units(sequences):
    return [CausalUnit("x", 0, list(s), list(range(1, len(s))), []) for s in sequences]


def test_one_tree_sees_its_ancestors_only():
    # trie of [1, 2, 3], [1, 2, 4], [1, 5]: nodes 0:1, 1:2 (under 0), 2:3 (under 1),
    # 3:4 (under 1), 4:5 (under 0)
    units = _units([[1, 2, 3], [1, 2, 4], [1, 5]])
    trees, packed, unit_row, unit_cols = _packed_layout(units, [(0, 2)] * 3)
    ids, positions, mask = _band_inputs(trees, packed, [0])
    assert ids.tolist() == [[1, 2, 3, 4, 5]]
    assert positions.tolist() == [[0, 1, 2, 2, 1]]
    assert mask.shape == (1, 1, 5, 5)
    assert mask[0, 0].astype(int).tolist() == [[1, 0, 0, 0, 0],
                                               [1, 1, 0, 0, 0],
                                               [1, 1, 1, 0, 0],
                                               [1, 1, 0, 1, 0],
                                               [1, 0, 0, 0, 1]]
    assert unit_row.tolist() == [0, 0, 0]
    assert [c.tolist() for c in unit_cols] == [[0, 1, 2], [0, 1, 3], [0, 4]]


def test_trees_in_one_row_do_not_see_each_other_and_padding_sees_one_key():
    # two groups: [7, 8] + [7, 9] (a trie of 3 nodes) and [5, 6, 6] alone (3 nodes),
    # packed into one row of 6 (PACK_TOKENS is far larger); then a band with a narrower
    # row below it is padded, and its padding queries see key 0 only
    units = _units([[7, 8], [7, 9], [5, 6, 6]])
    trees, packed, _, unit_cols = _packed_layout(units, [(0, 1), (0, 1), (1, 0)])
    assert len(packed) == 1
    ids, positions, mask = _band_inputs(trees, packed, [0])
    cols = [c.tolist() for c in unit_cols]
    # largest tree first: both trees have 3 nodes, so the first made (group 0) leads
    assert cols == [[0, 1], [0, 2], [3, 4, 5]]
    assert ids.tolist() == [[7, 8, 9, 5, 6, 6]]
    assert positions.tolist() == [[0, 1, 1, 0, 1, 2]]
    expected = np.zeros((6, 6), dtype=int)
    for query, keys in {0: [0], 1: [0, 1], 2: [0, 2], 3: [3], 4: [3, 4], 5: [3, 4, 5]}.items():
        expected[query, keys] = 1
    assert mask[0, 0].astype(int).tolist() == expected.tolist()


def test_a_band_pads_its_narrower_rows():
    # two rows of 3 and 2 tokens in one band (width 3): the second row's third column
    # is padding, whose query sees key 0 (no row of the softmax is all masked)
    trees = [([0], [1, 2, 3], [-1, 0, 1], [[0, 1, 2]]), ([1], [4, 5], [-1, 0], [[0, 1]])]
    ids, positions, mask = _band_inputs(trees, [[0], [1]], [0, 1])
    assert ids.tolist() == [[1, 2, 3], [4, 5, 0]]
    assert positions.tolist() == [[0, 1, 2], [0, 1, 0]]
    assert mask[1, 0].astype(int).tolist() == [[1, 0, 0], [1, 1, 0], [1, 0, 0]]
    assert mask[0, 0].astype(int).tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]


def test_a_cpu_pass_pads_a_row_by_little_and_other_devices_by_up_to_half():
    # a padded position costs a CPU as much as a real one and a pass costs only a few
    # positions, so rows share a CPU pass only within CPU_BAND_PAD tokens of its widest;
    # a GPU pass is dear, so rows within 2x of the widest share one
    pad = causal.CPU_BAND_PAD
    widths = [100, 100 - pad, 100 - pad - 1, 60, 50, 49]
    assert row_bands(widths, "cpu") == [[0, 1], [2], [3], [4, 5]]
    assert row_bands(widths, "cuda") == [[0, 1, 2, 3, 4], [5]]
    for device in ("cpu", "cuda", "mps"):
        bands = row_bands(widths, device)
        assert sorted(r for band in bands for r in band) == list(range(len(widths)))
        for band in bands:  # widest first in every pass: its width is the pass's width
            assert widths[band[0]] == max(widths[r] for r in band)

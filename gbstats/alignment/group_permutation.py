"""Does a model follow one group more closely than another? An exact test by permuting
participants' group labels (issue 40, item 6).

The primary group comparison (`gbstats.alignment.group_comparison`) is a z test of the
difference of corrected correlations with a bootstrap SE. In simulated designs shaped like
the analysed ones it rejected too often: 9% at equal alignment where each person saw 7 of
63 items (benchmarks/results/group_comparison_calibration.json). A permutation of the
group labels among participants is exact whatever the design, items per person or
response scale: under the null hypothesis that the groups are exchangeable (their members'
responses come from one distribution), every relabelling that keeps the group sizes is as
likely as the observed one, so

    p = (1 + #{T* >= T}) / (1 + B),  T = |r(x, mean_a) / sqrt(rel_a) - r(x, mean_b) / sqrt(rel_b)|

over B random relabellings (Phipson & Smyth 2010: the +1 keeps p exact, never 0). Each
participant keeps their own items and responses; only the label moves. T is the
difference of the two groups' corrected correlations with the model's scores, each
group's split-half reliability (Spearman-Brown) from a few random halves drawn afresh for
every relabelling: correcting keeps a difference in the groups' noise (one group answering
less consistently) from reading as a difference in alignment, and a statistic computed
the same way on every relabelling keeps the test exact.

What it tests: exchangeable groups, which equal alignment with profiles that agree closely
(r .99 and above in the analysed data) nearly is; it is conditional on the items shown.
The calibration benchmark reports its false-positive rate at equal alignment in the
analysed designs. The more responses per item, the better it sees that profiles agreeing
at .996 are not identical: a design with 57-71 responses per item per group rejected 7.0%
where exchangeable groups gave the nominal rate (the benchmark's `diagnosis` runs), so read
its calibration in a design from that design's own run.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gbstats.alignment.reliability import GroupRatings
from gbstats.errors import DataValidationError

PERMUTATION_METHOD = ("permutation of participants' group labels (group sizes kept), "
                      "statistic |corrected r with group a - corrected r with group b| "
                      "(split-half reliabilities), p = (1 + #{{T* >= T}}) / (1 + {b})")


def _item_means(sums: np.ndarray, counts: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """Rows of item means; an item with no response in a row takes the pooled mean (rare:
    it can only happen when a relabelling leaves an item with no response in one group)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
    return np.where(counts > 0, means, fallback)


def _row_correlations(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    xc = x - x.mean()
    mc = m - m.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (mc @ xc) / np.sqrt((mc * mc).sum(axis=1) * (xc @ xc))


def permutation_difference_test(x: np.ndarray, a: GroupRatings, b: GroupRatings, *,
                                n_perm: int = 999, rng: np.random.Generator,
                                n_splits: int = 4, chunk: int = 100) -> dict:
    """The permutation test of equal alignment (module docstring): the observed raw
    correlations of the model's item scores `x` with each group's item means, their
    difference (a minus b), and the permutation p over `n_perm` relabellings of the
    difference of corrected correlations (each group's split-half reliability from
    `n_splits` random halves, drawn afresh for every relabelling and for the observed one)."""
    x = np.asarray(x, dtype=float)
    if a.sums.shape[1] != x.size or b.sums.shape[1] != x.size:
        raise DataValidationError("the groups' matrices and the model's scores differ in items",
                                  source="permutation test", expected=f"{x.size} items",
                                  found=f"{a.sums.shape[1]} and {b.sums.shape[1]}")
    if n_perm < 1:
        raise DataValidationError("a permutation test needs relabellings", source="n_perm",
                                  expected="at least 1 (999 or more for a p below .01)",
                                  found=str(n_perm))
    sums = np.vstack([a.sums, b.sums])
    counts = np.vstack([a.counts, b.counts])
    pooled = _item_means(sums.sum(axis=0), counts.sum(axis=0), np.nan)
    n_a, n = a.n_participants, a.n_participants + b.n_participants

    def means(member: np.ndarray) -> np.ndarray:
        w = member.astype(float)
        return _item_means(w @ sums, w @ counts, pooled)

    def reliability(member: np.ndarray) -> np.ndarray:
        """Spearman-Brown split-half reliability of each row's group, averaged over
        `n_splits` random halves."""
        rel = np.zeros(member.shape[0])
        for _ in range(n_splits):
            half = rng.random(member.shape) < 0.5
            r = _paired_correlations(means(member & half), means(member & ~half))
            rel += 2 * r / (1 + r)
        return rel / n_splits

    def statistic(member_a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r_a, r_b = _row_correlations(x, means(member_a)), _row_correlations(x, means(~member_a))
        rel_a, rel_b = reliability(member_a), reliability(~member_a)
        with np.errstate(invalid="ignore"):
            corrected = r_a / np.sqrt(np.clip(rel_a, 1e-6, None)) - r_b / np.sqrt(
                np.clip(rel_b, 1e-6, None))
        return r_a, r_b, corrected

    observed = np.zeros((1, n), dtype=bool)
    observed[0, :n_a] = True
    r_a, r_b, t = statistic(observed)
    t_obs = abs(t[0])
    exceed, done = 0, 0
    while done < n_perm:
        k = min(chunk, n_perm - done)
        order = np.argsort(rng.random((k, n)), axis=1)
        _, _, t_perm = statistic(order < n_a)         # a random n_a of the n participants
        exceed += int((np.abs(t_perm) >= t_obs - 1e-12).sum())
        done += k
    return {"r_a": float(r_a[0]), "r_b": float(r_b[0]), "raw_difference": float(r_a[0] - r_b[0]),
            "statistic": float(t[0]), "p_value": (1 + exceed) / (1 + n_perm),
            "n_perm": int(n_perm), "n_splits": int(n_splits),
            "method": PERMUTATION_METHOD.format(b=n_perm)}


def _paired_correlations(m1: np.ndarray, m2: np.ndarray) -> np.ndarray:
    """Row-wise Pearson r of two (rows x items) matrices."""
    d1 = m1 - m1.mean(axis=1, keepdims=True)
    d2 = m2 - m2.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (d1 * d2).sum(axis=1) / np.sqrt((d1 * d1).sum(axis=1) * (d2 * d2).sum(axis=1))


def permutation_rows(x: np.ndarray, groups: Sequence[GroupRatings], *, n_perm: int = 999,
                     seed: int = 0) -> list[dict]:
    """`permutation_difference_test` for every pair of groups, in order."""
    rng = np.random.default_rng(seed)
    rows = []
    for pos, a in enumerate(groups):
        for b in groups[pos + 1:]:
            rows.append({"group_a": a.group, "group_b": b.group,
                         **permutation_difference_test(x, a, b, n_perm=n_perm, rng=rng)})
    return rows

"""Simulated rating panels with a KNOWN alignment, for calibrating alignment statistics.

Used by benchmarks/alignment_calibration.py (coverage and false-positive
rates) and by the test suite's fast coverage check; also usable for a power
analysis before collecting data.

Generative model (all normal, independent unless said otherwise):

    items i = 1..I:     x_i ~ N(0, 1)                        the model's score
    group g's TRUE item means:
        m_gi = mean + sd_item * (rho_g x_i + sqrt(1 - rho_g^2) z_gi)
        z_gi = sqrt(c) z_i + sqrt(1 - c) z'_gi,  z, z' ~ N(0, 1)
    participant p of group g, rating item i:
        y_pi = m_gi + u_p + b_p x_i + e_pi
        u_p ~ N(0, sd_person^2), b_p ~ N(0, sd_slope^2), e_pi ~ N(0, sd_noise^2)

Over the population of items, corr(x, m_g) = rho_g exactly: that is the
alignment the statistics must recover. The groups' item means share the
component z_i (correlation c of their non-model parts), as real groups
rating the same sentences do. b_p lets people differ in how strongly they
follow the model's dimension (the random slope of the mixed model); its mean
is 0, so the population's item means are still m_gi.

`items_per_person` < I gives an incomplete design: each participant rates a
random subset of that many items (a stand-in for a Latin square).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from gbstats.alignment.reliability import GroupRatings


def simulate_alignment_panel(group_sizes: dict[str, int], rho: dict[str, float] | float, *,
                             n_items: int = 335, sd_item: float = 1.0, sd_noise: float = 2.0,
                             sd_person: float = 0.5, sd_slope: float = 0.0,
                             shared_item: float = 0.5, items_per_person: int | None = None,
                             mean: float = 4.0, seed: int | np.random.Generator = 0
                             ) -> tuple[np.ndarray, list[GroupRatings]]:
    """(x, [GroupRatings per group]) drawn from the module's generative model.

    Matrices, not a long table, so that thousands of panels are cheap; use
    `panel_to_long` for the long format the study functions take.
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    rhos = rho if isinstance(rho, dict) else {g: float(rho) for g in group_sizes}
    x = rng.standard_normal(n_items)
    shared = rng.standard_normal(n_items)
    groups = []
    for g, n in group_sizes.items():
        own = np.sqrt(shared_item) * shared + np.sqrt(1 - shared_item) * rng.standard_normal(n_items)
        r = rhos[g]
        true_means = mean + sd_item * (r * x + np.sqrt(1 - r * r) * own)
        offsets = rng.normal(0, sd_person, n)
        slopes = rng.normal(0, sd_slope, n) if sd_slope > 0 else np.zeros(n)
        ratings = (true_means[None, :] + offsets[:, None] + slopes[:, None] * x[None, :]
                   + rng.normal(0, sd_noise, (n, n_items)))
        if items_per_person is None or items_per_person >= n_items:
            counts = np.ones((n, n_items))
        else:
            order = np.argsort(rng.random((n, n_items)), axis=1)
            counts = np.zeros((n, n_items))
            np.put_along_axis(counts, order[:, :items_per_person], 1.0, axis=1)
        groups.append(GroupRatings(g, np.array([f"{g}{k:03d}" for k in range(n)], dtype=object),
                                   ratings * counts, counts))
    return x, groups


def panel_to_long(x: np.ndarray, groups: Sequence[GroupRatings], *,
                  group_column: str = "group") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(item_scores, trials) long tables for a simulated panel: one row per rated cell."""
    item_scores = pd.DataFrame({"item": np.arange(x.size), "score": x})
    frames = []
    for g in groups:
        p_idx, i_idx = np.nonzero(g.counts)
        frames.append(pd.DataFrame({
            "participant": g.participants[p_idx], group_column: g.group, "item": i_idx,
            "rating": g.sums[p_idx, i_idx] / g.counts[p_idx, i_idx]}))
    return item_scores, pd.concat(frames, ignore_index=True)

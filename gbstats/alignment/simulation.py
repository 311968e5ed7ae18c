"""Simulated rating panels with a KNOWN alignment, for calibrating alignment statistics.

Used by benchmarks/alignment_calibration.py (coverage and false-positive
rates) and by the test suite's fast coverage checks; also usable for a power
analysis before collecting data.

Generative model (normal and independent unless an option says otherwise):

    items i = 1..I:     x_i ~ N(0, 1)                        the model's score
    group g's latent item values:
        m_gi = mean + sd_item * (rho_g x_i + sqrt(1 - rho_g^2) z_gi)
        z_gi = sqrt(c) z_i + sqrt(1 - c) z'_gi,  z, z' ~ N(0, 1)
    participant p of group g, rating item i:
        y_pi = mean + s_p (m_gi - mean) + u_p + b_p x_i + e_pi
        u_p ~ N(0, sd_person^2), b_p ~ N(0, sd_slope^2), e_pi ~ sd_p * noise

Over the population of items, corr(x, m_g) = rho_g exactly. The groups'
item values share the component z_i (correlation c of their non-model
parts), as real groups rating the same sentences do. b_p lets people differ
in how strongly they follow the model's dimension (the random slope of the
mixed model); its mean is 0.

Options for data the estimators do not assume (issue 25, item 4):
- `noise="t3"`: e is Student t with 3 df scaled to SD sd_p (heavy tails);
- `noise_sd_ratio=k`: sd_p = sd_noise * k^v, v ~ U(-1/2, 1/2), so raters'
  noise SDs span a factor k;
- `slope_range=(lo, hi)`: s_p ~ U(lo, hi), raters who use the latent value
  more or less steeply (mean 1, so the group's mean rating is still m_gi);
  without it s_p = 1;
- `rated_share=(lo, hi)`: each person rates a random share ~ U(lo, hi) of the
  items (a missing-cell design); `items_per_person` fixes the number instead;
- `likert=(1, 7)`: the rating is round(latent) clipped to the scale (floor
  and ceiling). The group's true item mean is then E[Likert rating | item],
  a nonlinear function of m_gi, and the alignment is corr(x, that mean):
  `true_alignment` computes it.
- `sd_noise` may be a dict per group (groups of different noise).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from gbstats.alignment.reliability import GroupRatings
from gbstats.errors import DataValidationError

NOISE_KINDS = ("normal", "t3")


def _per_group(value, groups) -> dict:
    return value if isinstance(value, dict) else {g: value for g in groups}


def simulate_alignment_panel(group_sizes: dict[str, int], rho: dict[str, float] | float, *,
                             n_items: int = 335, sd_item: float = 1.0,
                             sd_noise: float | dict[str, float] = 2.0,
                             sd_person: float = 0.5, sd_slope: float = 0.0,
                             shared_item: float = 0.5, items_per_person: int | None = None,
                             rated_share: tuple[float, float] | None = None,
                             noise: str = "normal", noise_sd_ratio: float = 1.0,
                             slope_range: tuple[float, float] | None = None,
                             likert: tuple[int, int] | None = None,
                             mean: float = 4.0, seed: int | np.random.Generator = 0
                             ) -> tuple[np.ndarray, list[GroupRatings]]:
    """(x, [GroupRatings per group]) drawn from the module's generative model.

    Matrices, not a long table, so that thousands of panels are cheap; use
    `panel_to_long` for the long format the study functions take.
    """
    if noise not in NOISE_KINDS:
        raise DataValidationError("unknown noise kind", source="noise",
                                  expected=" or ".join(NOISE_KINDS), found=repr(noise))
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    rhos = _per_group(rho, group_sizes)
    noise_sds = _per_group(sd_noise, group_sizes)
    x = rng.standard_normal(n_items)
    shared = rng.standard_normal(n_items)
    groups = []
    for g, n in group_sizes.items():
        own = np.sqrt(shared_item) * shared + np.sqrt(1 - shared_item) * rng.standard_normal(n_items)
        r = rhos[g]
        latent = sd_item * (r * x + np.sqrt(1 - r * r) * own)  # m_gi - mean
        offsets = rng.normal(0, sd_person, n)
        slopes = rng.normal(0, sd_slope, n) if sd_slope > 0 else np.zeros(n)
        steep = rng.uniform(*slope_range, n) if slope_range is not None else np.ones(n)
        # drawn only when asked for, so the default panels keep their random stream
        sd_p = (noise_sds[g] * noise_sd_ratio ** rng.uniform(-0.5, 0.5, n)
                if noise_sd_ratio != 1 else np.full(n, float(noise_sds[g])))
        if noise == "t3":
            e = rng.standard_t(3, (n, n_items)) / np.sqrt(3.0)  # t(3) has variance 3
        else:
            e = rng.standard_normal((n, n_items))
        ratings = (mean + steep[:, None] * latent[None, :] + offsets[:, None]
                   + slopes[:, None] * x[None, :] + sd_p[:, None] * e)
        if likert is not None:
            ratings = np.clip(np.round(ratings), likert[0], likert[1])
        counts = _rated_cells(n, n_items, items_per_person, rated_share, rng)
        groups.append(GroupRatings(g, np.array([f"{g}{k:03d}" for k in range(n)], dtype=object),
                                   ratings * counts, counts))
    return x, groups


def _rated_cells(n: int, n_items: int, items_per_person: int | None,
                 rated_share: tuple[float, float] | None, rng: np.random.Generator) -> np.ndarray:
    """(n, n_items) 0/1: which items each person rated."""
    if rated_share is not None:
        k = np.maximum(3, np.round(rng.uniform(*rated_share, n) * n_items)).astype(int)
    elif items_per_person is not None and items_per_person < n_items:
        k = np.full(n, items_per_person)
    else:
        return np.ones((n, n_items))
    order = np.argsort(rng.random((n, n_items)), axis=1)
    return (np.argsort(order, axis=1) < k[:, None]).astype(float)


def likert_item_means(latent: np.ndarray, sd_total: float, likert: tuple[int, int]) -> np.ndarray:
    """E[clip(round(latent + N(0, sd_total^2)), lo, hi)] for each latent item value.

    Exact through the normal CDF: P(rating >= k) = P(latent + e >= k - 1/2) for
    k = lo + 1..hi, and E = lo + sum_k P(rating >= k).
    """
    lo, hi = likert
    cuts = np.arange(lo + 1, hi + 1) - 0.5
    return lo + stats.norm.sf((cuts[None, :] - latent[:, None]) / sd_total).sum(axis=1)


def true_alignment(rho: float, *, likert: tuple[int, int] | None = None, sd_item: float = 1.0,
                   sd_noise: float = 2.0, sd_person: float = 0.5, mean: float = 4.0,
                   n_items: int = 1_000_000, seed: int = 0) -> float:
    """The alignment a panel's statistics estimate: corr over the item population
    (x, the group's true mean rating of the item).

    Without `likert` it is rho. With it, the true mean is `likert_item_means`
    of the latent value, with the person offset and the (normal) noise folded
    into one normal deviate; computed over `n_items` simulated items (Monte
    Carlo SE about (1 - rho^2) / sqrt(n_items), 1e-3 at the default).
    """
    if likert is None:
        return float(rho)
    rng = np.random.default_rng(seed)
    x, own = rng.standard_normal(n_items), rng.standard_normal(n_items)
    latent = mean + sd_item * (rho * x + np.sqrt(1 - rho * rho) * own)
    means = likert_item_means(latent, float(np.hypot(sd_noise, sd_person)), likert)
    return float(np.corrcoef(x, means)[0, 1])


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

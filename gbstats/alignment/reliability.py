"""Alignment you can defend: reliability, corrected correlations, two-way bootstrap, size matching.

The question "does the model resemble group A more than group B?" is usually
answered with the correlation, over items, between a model score x_i and the
group's mean rating ybar_gi. That number mixes two things: how well the model
tracks the group (alignment) and how noisy the group's item means are (how
many people rated each item). This module separates them.

Estimand
--------
For a group g, let m_gi be its TRUE mean rating of item i (the mean over the
population of people the group stands for). The alignment of the model with
g is

    rho_g = corr over the population of items (x_i, m_gi).

The observed item means are ybar_gi = m_gi + e_gi, with e_gi the sampling
noise of the few people who rated item i. Because e is independent of x,
corr(x, ybar) = rho_g * sqrt(rel_g), where rel_g = var(m) / var(ybar) is the
reliability of the item means (Spearman 1904, "The proof and measurement of
association between two things", Am. J. Psychol. 15, 72-101). So the raw r
is biased towards 0, and more so for small groups: comparing raw r across
groups of 16 and 89 people compares group sizes as much as alignment.

What this module computes
-------------------------
- `split_half_reliability`: the participants of a group are split at random
  into two halves, each half's item means are correlated over the items both
  halves rated, and the Spearman-Brown formula rel = 2 r_hh / (1 + r_hh)
  (Spearman 1910; Brown 1910) steps the half-length correlation up to the
  full group. The estimate is averaged over many random splits, which removes
  the arbitrariness of one split (Parsons, Kruijt & Fox 2019, "Psychological
  science needs a standard practice of reporting the reliability of
  cognitive-behavioral measurements", AMPPS 2, 378-395). Splitting people (not
  trials) keeps each person's offsets inside one half, so a design where
  different people rate different items (a Latin square) is handled: a
  person's offset is noise in the item means and is counted as such.
- The noise ceiling sqrt(rel): the largest correlation that even a perfect
  predictor of the true means could reach with these noisy item means.
- The attenuation-corrected correlation r_c = r / sqrt(rel) (Spearman 1904).
  The model's scores are deterministic (rescoring gives the same number), so
  their reliability is 1 and only the human side is corrected.
- The raw r's interval comes from a two-way bootstrap. Items are a sample
  from a population of possible stimuli and people are a sample from a
  population of people, so each replicate resamples both: items with
  replacement (shared by every group, because the groups rated the same
  items) and participants with replacement within their group (the
  "pigeonhole" bootstrap for crossed designs; McCullagh 2000, Bernoulli 6,
  285-301; Owen 2007, Ann. Appl. Stat. 1, 386-411).
- The corrected r's interval does not use it: the pigeonhole bootstrap counts
  the person x item noise twice (Owen 2007), once through the items (each
  item carries its noisy mean) and once through the people. For the raw r
  that is harmless here, but for r_c the interval came out ~25% too wide at
  16 people (coverage .986 at 95%). `corrected_r_variance` splits the
  variance instead, to first order in the perturbation of the item means:
      V_items   items resampled, people fixed: item sampling + the noise of
                each item mean (independent across items);
      V_shared  people resampled (the same draw for every item), items
                fixed: the noise again + what people share across items
                (people who follow the model's dimension more or less: a
                random slope);
      V_indep   people resampled independently for every item, items fixed,
                on person-centred ratings: the noise alone (the covariance
                across items of V_shared is gone; centring keeps a person's
                overall level, which moves every item mean alike in a crossed
                design and cannot change r, from posing as noise);
      Var(r_c) = V_items + max(0, V_shared - V_indep).
  Each part recomputes r and the reliability on every replicate.
  In an incomplete design (different people rate different items) a
  person's level is noise in the item means that V_items already counts and
  centring removes from V_indep, so there the interval is conservative.
- The interval of r_c (issue 25). The symmetric normal interval r_c -+ z SE
  covered .925 at 30 items x 8 people, its misses lopsided, because r_c's
  sampling distribution is skewed in small designs and its SE moves with
  the estimate. The same decomposition is now made for the pair (atanh r,
  log rel), scales on which the sampling variance hardly depends on the
  level (Fisher 1921 for r; the log for a ratio-like reliability), giving
  the 2 x 2 covariance C_items + psd(C_shared - C_indep), with C_items scaled
  by n/(n - 3) for n items (the bootstrap gives atanh r the variance 1/n,
  Fisher's is 1/(n - 3)). The interval is then the set of rho not rejected
  by the test atanh(r) - atanh(rho sqrt(rel)) = 0 (delta-method variance;
  `corrected_r_interval`): asymmetric where it should be, and the Fisher-z
  interval of r scaled by the ceiling when the reliability is exact. The
  `se` column is the delta-method SE of r_c. Coverage from 30 items x 6
  people to 335 x 89 and on data the model does not assume:
  benchmarks/results/alignment_calibration.json, `scenarios`.
- The raw r's interval recentres the two-way replicates on r on the Fisher-z
  scale (`centred_percentile_interval`). Resampling people with
  replacement makes the item means of a replicate noisier than the original
  ones (duplicated people count twice), so the replicates of a raw r are
  shrunk towards 0; a plain percentile interval can even exclude its own
  estimate. The bias-corrected (BC) interval (Efron 1982; Efron &
  Tibshirani 1993, 14.3), used before issue 25, shifts the percentiles by
  z0 = Phi^-1(share of replicates below r), a correction for the median,
  which overshot: the interval sat about .019 above r and covered .912
  against its own target. `bc_interval` is kept for the size-matched test.
- Comparing groups (`compare_corrected_correlations`): d = r_c,a - r_c,b,
  Var(d) = Var_items(d) + the two groups' people parts, the items part from
  replicates that resample the items jointly for both groups. It tests
  equal alignment. The size-matched comparison tests equal raw r at the
  smallest group's size: groups whose raters are noisier have a lower raw r
  at equal alignment, whatever the size, so it is not a test of alignment.

Which number to cite: the corrected correlation estimates rho_g, the
quantity a reader means by "alignment"; the raw r estimates rho_g sqrt(rel_g),
a property of this panel size. See the README, "Which alignment number to cite".
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from gbstats.alignment.ratings import (check_n_resamples, item_mean_matrices, ordered_levels,
                                       prepare_rating_frame, require_columns,
                                       require_no_missing)
from gbstats.blas import on_one_blas_thread
from gbstats.errors import DataValidationError, check_probability

RELIABILITY_COLUMNS = ["group", "reliability", "noise_ceiling", "r", "r_corrected", "se",
                       "ci_low", "ci_high", "n_items", "n_participants", "n_splits", "n_boot",
                       "n_boot_undefined", "ci_method", "below_calibrated_design"]
CORRECTED_CI_METHOD = ("test inversion on Fisher z of r and log reliability, variance "
                       "components: items + (people shared across items - people per item)")
CORRECTED_COMPARISON_COLUMNS = ["group_a", "group_b", "r_corrected_a", "r_corrected_b",
                                "difference", "se", "ci_low", "ci_high", "statistic",
                                "p_value", "n_boot", "test"]
CORRECTED_COMPARISON_TEST = ("z test of equal corrected correlations, variance components "
                             "(items resampled jointly, people per group), two-sided")
# The smallest designs whose coverage benchmarks/alignment_calibration.py shows: 30 items
# rated by 6 people each (every person rating every item), and 335 items with about 2.6
# raters per item (each person rating 16% of them). A table says when a group is outside
# both (below_calibrated_design).
MIN_CALIBRATED_ITEMS = 30
MIN_CALIBRATED_PEOPLE = 6
SPARSE_CALIBRATED_ITEMS = 335
SPARSE_CALIBRATED_RATERS = 2.5
RAW_R_COLUMNS = ["group", "r", "ci_low", "ci_high", "p_value", "n_items", "n_participants",
                 "n_boot", "ci_method"]
SIZE_MATCHED_COLUMNS = ["group_a", "group_b", "matched_size", "r_a", "r_b", "difference",
                        "ci_low", "ci_high", "p_value", "n_subsamples", "n_boot", "test"]
# rows of resample matrices processed at once: bounds memory to ~ROW_CHUNK x n_items floats
ROW_CHUNK = 4000


# --------------------------------------------------------------------------
# data: one participant x item matrix per group
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class GroupRatings:
    """A group's ratings as participant x item matrices (summed rating, count).

    `sums[p, i]` / `counts[p, i]` is participant p's mean rating of item i;
    counts are 0 where p did not rate i. Columns are the items of the shared
    item table, in its order, so every group's matrices line up.
    """

    group: object
    participants: np.ndarray
    sums: np.ndarray
    counts: np.ndarray

    @property
    def n_participants(self) -> int:
        return int(self.sums.shape[0])


def rating_matrices(item_scores: pd.DataFrame, trials: pd.DataFrame, *, group: str,
                    score: str, rating: str = "rating", item_keys: Sequence[str] = ("item",),
                    participant: str = "participant") -> tuple[np.ndarray, list[GroupRatings]]:
    """The model score per item and each group's participant x item rating matrices.

    Validates the inputs as `gbstats.alignment.groups.group_correlations` does (every
    rated item needs a score; one group per participant; numbers where
    numbers are expected) and returns (x, [GroupRatings per group]). Groups
    come in categorical order if the column is categorical, else sorted.
    """
    frame, scores = prepare_rating_frame(item_scores, trials, participant=participant,
                                          group=group, score=score, rating=rating,
                                          item_keys=item_keys)
    x = scores["_score"].to_numpy(dtype=float)
    out = []
    for g in ordered_levels(frame[group]):
        sub = frame[frame[group] == g]
        sums, counts = item_mean_matrices(sub, participant, len(scores))
        out.append(GroupRatings(g, np.array(ordered_levels(sub[participant]), dtype=object),
                                sums, counts))
    return x, out


# --------------------------------------------------------------------------
# vectorised kernels: rows are resamples, columns are items
# --------------------------------------------------------------------------

def weighted_item_means(weights: np.ndarray, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Item means for each row of participant weights: (weights @ sums) / (weights @ counts).

    weights is (R, P), sums and counts (P, I). NaN where no weighted rater.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        if counts.min() == 1 and counts.max() == 1:
            # complete design, one rating per cell: weights @ counts is each row's total
            # weight, the same number (weights are counts) at half the matrix products
            return (weights @ sums) / weights.sum(axis=1, keepdims=True)
        return (weights @ sums) / (weights @ counts)


def weighted_correlation(a: np.ndarray, b: np.ndarray, item_weights: np.ndarray) -> np.ndarray:
    """Pearson correlation of a and b over items, per row, with item weights.

    a, b and item_weights broadcast to (R, I). An item weight k counts the item
    k times (an item drawn k times by the bootstrap); NaN cells of a or b get
    weight 0. Rows with fewer than 3 distinct weighted items or no variance
    give NaN.
    """
    # The bootstraps call this on (replicates x items) arrays thousands of times (5 s of a
    # singular_they run): the sums of products go through einsum, which reads its operands
    # once without building their products, and a and b are broadcast as views, not copied.
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    shape = np.broadcast_shapes(a.shape, b.shape, np.shape(item_weights))
    ok = np.asarray(item_weights) > 0
    finite_a, finite_b = np.isfinite(a), np.isfinite(b)
    if not (finite_a.all() and finite_b.all()):
        ok = ok & finite_a & finite_b
        a, b = np.where(finite_a, a, 0.0), np.where(finite_b, b, 0.0)
    w = np.broadcast_to(np.where(ok, np.asarray(item_weights, dtype=float), 0.0), shape)
    a, b = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
    total = w.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        da = a - (np.einsum("...i,...i->...", w, a) / total)[..., None]
        db = b - (np.einsum("...i,...i->...", w, b) / total)[..., None]
        cov = np.einsum("...i,...i,...i->...", w, da, db)
        r = cov / np.sqrt(np.einsum("...i,...i,...i->...", w, da, da)
                          * np.einsum("...i,...i,...i->...", w, db, db))
    return np.where(np.count_nonzero(np.broadcast_to(ok, shape), axis=-1) < 3, np.nan, r)


def spearman_brown(r_half: np.ndarray) -> np.ndarray:
    """Reliability of the full group from the correlation of two halves: 2r / (1 + r)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return 2 * r_half / (1 + r_half)


def random_halves(n_participants: int, n_splits: int,
                  rng: np.random.Generator) -> np.ndarray:
    """(n_splits, P) 0/1 masks of the first half; each split puts floor(P/2) people in it."""
    if n_participants < 2:
        raise DataValidationError(
            "a split-half reliability needs at least 2 participants in the group",
            source="trials", expected=">= 2 participants", found=f"{n_participants}")
    order = np.argsort(rng.random((n_splits, n_participants)), axis=1)
    first = np.zeros((n_splits, n_participants))
    np.put_along_axis(first, order[:, : n_participants // 2], 1.0, axis=1)
    return first


def reliability_rows(person_weights: np.ndarray, item_weights: np.ndarray, sums: np.ndarray,
                     counts: np.ndarray, halves: np.ndarray) -> np.ndarray:
    """Split-half (Spearman-Brown) reliability for each row of weights, averaged over splits.

    person_weights (R, P), item_weights (R, I) or (I,), halves (S, P) masks.
    Row r's split s puts the people of half s (with their resampled weights)
    in one half and the rest in the other; items one half never rated drop
    out of that split's correlation. Returns (R,) mean Spearman-Brown values
    over the splits with a defined correlation (NaN if none).
    """
    n_rows, n_splits = person_weights.shape[0], halves.shape[0]
    first = (person_weights[:, None, :] * halves[None, :, :]).reshape(n_rows * n_splits, -1)
    second = (person_weights[:, None, :] * (1 - halves)[None, :, :]).reshape(n_rows * n_splits, -1)
    iw = np.asarray(item_weights, dtype=float)
    if iw.ndim == 2:
        iw = np.repeat(iw, n_splits, axis=0)
    r_half = weighted_correlation(weighted_item_means(first, sums, counts),
                                  weighted_item_means(second, sums, counts), iw)
    return _mean_over_splits(spearman_brown(r_half).reshape(n_rows, n_splits))


def _mean_over_splits(sb: np.ndarray) -> np.ndarray:
    """Row means over the splits with a defined value; NaN for a row with none."""
    ok = np.isfinite(sb)
    n = ok.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, np.where(ok, sb, 0.0).sum(axis=1) / np.maximum(n, 1), np.nan)


def corrected_correlation(r: np.ndarray, reliability: np.ndarray) -> np.ndarray:
    """r / sqrt(reliability) (Spearman 1904); NaN where the reliability is not positive."""
    r, reliability = np.asarray(r, float), np.asarray(reliability, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(reliability > 0, r / np.sqrt(np.where(reliability > 0, reliability, 1)),
                        np.nan)


def multinomial_weights(n: int, n_rows: int, rng: np.random.Generator) -> np.ndarray:
    """(n_rows, n) bootstrap counts: how often each of n units is drawn in each resample."""
    return rng.multinomial(n, np.full(n, 1.0 / n), size=n_rows).astype(float)


# --------------------------------------------------------------------------
# intervals
# --------------------------------------------------------------------------

def bc_interval(estimate: float, draws: np.ndarray, confidence: float = 0.95) -> tuple[float, float, int]:
    """Bias-corrected percentile interval (Efron 1982; Efron & Tibshirani 1993, 14.3).

    z0 = Phi^-1(#{draws < estimate} + #{draws == estimate} / 2) / B), the
    interval is the Phi(2 z0 -+ z_{1-alpha/2}) quantiles of the draws. With
    |z0| <= z_{1-alpha/2} it contains the estimate by construction; beyond that
    (the estimate outside the central range of its own replicates) the near
    bound is moved to the estimate, so the interval always contains it.
    Returns (low, high, number of finite draws); NaNs without finite draws.
    """
    check_probability(confidence, "confidence")
    draws = np.asarray(draws, float)
    draws = draws[np.isfinite(draws)]
    if draws.size == 0 or not np.isfinite(estimate):
        return np.nan, np.nan, int(draws.size)
    share = ((draws < estimate).sum() + 0.5 * (draws == estimate).sum()) / draws.size
    # keep z0 finite when every draw lies on one side of the estimate
    share = float(np.clip(share, 0.5 / draws.size, 1 - 0.5 / draws.size))
    z0 = stats.norm.ppf(share)
    crit = stats.norm.ppf(1 - (1 - confidence) / 2)
    low, high = np.quantile(draws, stats.norm.cdf([2 * z0 - crit, 2 * z0 + crit]))
    return float(min(low, estimate)), float(max(high, estimate)), int(draws.size)


def bc_test_p_value(estimate: float, draws: np.ndarray, null: float = 0.0) -> float:
    """Two-sided p-value that inverts the BC interval: the largest alpha whose
    1 - alpha BC interval still contains `null`.

    0 is on the boundary of the BC interval at level 1 - alpha when
    Phi^-1(G(null)) = 2 z0 -+ z_{1-alpha/2}, with G the empirical CDF of the
    draws, so p = 2 (1 - Phi(|Phi^-1(G(null)) - 2 z0|)). G is clipped to
    [1/(2B), 1 - 1/(2B)], so p is never exactly 0.
    """
    draws = np.asarray(draws, float)
    draws = draws[np.isfinite(draws)]
    if draws.size == 0 or not np.isfinite(estimate):
        return np.nan
    lo, hi = 0.5 / draws.size, 1 - 0.5 / draws.size

    def ecdf(value):
        share = ((draws < value).sum() + 0.5 * (draws == value).sum()) / draws.size
        return float(np.clip(share, lo, hi))

    z0 = stats.norm.ppf(ecdf(estimate))
    return float(2 * stats.norm.sf(abs(stats.norm.ppf(ecdf(null)) - 2 * z0)))


# --------------------------------------------------------------------------
# per-group reliability, raw and corrected correlations
# --------------------------------------------------------------------------

def _group_bootstrap(x: np.ndarray, g: GroupRatings, item_weights: np.ndarray,
                     halves: np.ndarray, rng: np.random.Generator, *,
                     resample_people: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Raw r and reliability for every replicate (rows of item_weights), in row chunks."""
    n_boot = item_weights.shape[0]
    r_out, rel_out = np.empty(n_boot), np.empty(n_boot)
    chunk = max(1, ROW_CHUNK // halves.shape[0])
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        people = (multinomial_weights(g.n_participants, stop - start, rng) if resample_people
                  else np.ones((stop - start, g.n_participants)))
        iw = item_weights[start:stop]
        means = weighted_item_means(people, g.sums, g.counts)
        r_out[start:stop] = weighted_correlation(x, means, iw)
        rel_out[start:stop] = reliability_rows(people, iw, g.sums, g.counts, halves)
    return r_out, rel_out


def two_way_r(x: np.ndarray, g: GroupRatings, item_weights: np.ndarray,
               rng: np.random.Generator) -> np.ndarray:
    """Raw r for every two-way replicate (rows of item_weights; people resampled per row)."""
    n_boot = item_weights.shape[0]
    out = np.empty(n_boot)
    for start in range(0, n_boot, ROW_CHUNK):
        stop = min(n_boot, start + ROW_CHUNK)
        people = multinomial_weights(g.n_participants, stop - start, rng)
        out[start:stop] = weighted_correlation(
            x, weighted_item_means(people, g.sums, g.counts), item_weights[start:stop])
    return out


def per_item_person_weights(counts: np.ndarray, n_rows: int,
                            rng: np.random.Generator) -> np.ndarray:
    """(n_rows, P, I) bootstrap counts that draw each item's raters independently.

    For item i, the people who rated it (counts[:, i] > 0) are drawn with
    replacement, as many as there are, separately for every item and row; a
    person who did not rate i always has weight 0 there.
    """
    n_people, n_items = counts.shape
    rated = counts > 0
    if rated.all():
        # complete design: every item's raters are everyone, so all items draw at once
        # (n draws with replacement among n people, counted: a multinomial, but drawn as
        # integers and counted with one bincount, far faster than numpy's multinomial)
        picks = rng.integers(0, n_people, size=(n_rows * n_items, n_people))
        cell = np.arange(n_rows * n_items)[:, None] * n_people + picks
        counts_drawn = np.bincount(cell.ravel(), minlength=n_rows * n_items * n_people)
        return counts_drawn.reshape(n_rows, n_items, n_people).transpose(0, 2, 1).astype(float)
    weights = np.zeros((n_rows, n_people, n_items))
    for item in range(n_items):
        raters = np.flatnonzero(rated[:, item])
        if raters.size:
            weights[:, raters, item] = rng.multinomial(
                raters.size, np.full(raters.size, 1.0 / raters.size), size=n_rows)
    return weights


def person_centred_sums(g: GroupRatings) -> np.ndarray:
    """g.sums with each person's own mean rating taken out of every rating they gave."""
    with np.errstate(invalid="ignore", divide="ignore"):
        level = g.sums.sum(axis=1) / g.counts.sum(axis=1)
    return g.sums - g.counts * np.nan_to_num(level)[:, None]


def _r_and_reliability_per_item_people(x: np.ndarray, g: GroupRatings, n_rows: int,
                                       halves: np.ndarray, rng: np.random.Generator
                                       ) -> tuple[np.ndarray, np.ndarray]:
    """(r, reliability) for replicates that draw each item's raters independently (V_indep's
    replicates), on person-centred ratings; the split-half reliability recomputed per row."""
    sums = person_centred_sums(g)
    n_people, n_items = g.counts.shape
    r_out, rel_out = np.empty(n_rows), np.empty(n_rows)
    # Rows per chunk bound the (rows, splits, items) and (rows, people, items) arrays. The
    # chunking fixes the random stream, so changing it changes every recorded interval.
    chunk = max(1, ROW_CHUNK * 100 // (halves.shape[0] * max(n_items, n_people)))
    for start in range(0, n_rows, chunk):
        stop = min(n_rows, start + chunk)
        w = per_item_person_weights(g.counts, stop - start, rng)
        # weighted sums over people, overall and per half: (S, P) @ (B, P, I) products
        weighted_sums, weighted_counts = w * sums, w * g.counts
        num, den = weighted_sums.sum(axis=1), weighted_counts.sum(axis=1)
        num_a, den_a = np.matmul(halves, weighted_sums), np.matmul(halves, weighted_counts)
        with np.errstate(invalid="ignore", divide="ignore"):
            r_out[start:stop] = weighted_correlation(x, num / den, np.ones(n_items))
            half_a = (num_a / den_a).reshape(-1, n_items)
            half_b = ((num[:, None, :] - num_a) / (den[:, None, :] - den_a)).reshape(-1, n_items)
        r_half = weighted_correlation(half_a, half_b, np.ones(n_items))
        rel_out[start:stop] = _mean_over_splits(spearman_brown(r_half).reshape(stop - start, -1))
    return r_out, rel_out


VARIANCE_PARTS = ("items", "shared", "indep")


def variance_replicates(x: np.ndarray, g: GroupRatings, *, item_weights: np.ndarray,
                        halves: np.ndarray, rng: np.random.Generator) -> dict:
    """{part: (r, reliability)} replicates of the three variance parts (module docstring).

    `item_weights` (B, I) drive the items part (people fixed); passing the same
    weights for several groups makes their items parts a joint resample, which
    a comparison between groups needs (they rated the same items). The people
    parts draw B replicates each.
    """
    n_boot = item_weights.shape[0]
    return {
        "items": _group_bootstrap(x, g, item_weights, halves, rng, resample_people=False),
        "shared": _group_bootstrap(x, g, np.ones((n_boot, x.size)), halves, rng),
        "indep": _r_and_reliability_per_item_people(x, g, n_boot, halves, rng),
    }


def _psd_part(matrix: np.ndarray) -> np.ndarray:
    """The positive semi-definite part of a symmetric matrix (negative eigenvalues set to 0):
    the matrix form of max(0, V_shared - V_indep)."""
    values, vectors = np.linalg.eigh(matrix)
    return (vectors * np.clip(values, 0, None)) @ vectors.T


def transformed_covariance(parts: dict, n_items: int | None = None) -> tuple[np.ndarray, int]:
    """Covariance of (atanh r, log reliability): k C_items + psd(C_shared - C_indep).

    k = n_items / (n_items - 3) (1 without n_items): the item bootstrap
    reproduces the large-sample variance 1/n of atanh r, where Fisher's is
    1/(n - 3); at 30 items that is 10% of the variance, and without it the
    interval covered .93 at 30 items x 8 people (issue 25). Replicates whose
    reliability is not positive have no log and are left out (returned as
    the count of undefined replicates).
    """
    covs, undefined = {}, 0
    for name in VARIANCE_PARTS:
        r, rel = parts[name]
        ok = np.isfinite(r) & np.isfinite(rel) & (rel > 0) & (np.abs(r) < 1)
        undefined += int((~ok).sum())
        pair = np.vstack([np.arctanh(r[ok]), np.log(rel[ok])])
        covs[name] = np.cov(pair) if ok.sum() > 2 else np.full((2, 2), np.nan)
    k = n_items / (n_items - 3) if n_items is not None and n_items > 3 else 1.0
    return k * covs["items"] + _psd_part(covs["shared"] - covs["indep"]), undefined


def corrected_r_variance(x: np.ndarray, g: GroupRatings, *, n_boot: int, halves: np.ndarray,
                         rng: np.random.Generator) -> dict:
    """Var(r_c) = V_items + max(0, V_shared - V_indep) on the r_c scale, with its parts, and
    the same decomposition of (atanh r, log reliability) as the 2 x 2 matrix "cov".

    Each part from `n_boot` replicates; replicates with an undefined r_c (a
    reliability that is not positive) are left out and counted in "undefined".
    """
    parts = variance_replicates(x, g, item_weights=multinomial_weights(x.size, n_boot, rng),
                                halves=halves, rng=rng)
    out = {"undefined": 0}
    for name, (r, rel) in parts.items():
        d = corrected_correlation(r, rel)
        out["undefined"] += int((~np.isfinite(d)).sum())
        d = d[np.isfinite(d)]
        out[name] = float(np.var(d, ddof=1)) if d.size > 1 else np.nan
    out["variance"] = out["items"] + max(0.0, out["shared"] - out["indep"])
    out["cov"], _ = transformed_covariance(parts, int((g.counts.sum(axis=0) > 0).sum()))
    return out


def corrected_r_interval(r: float, reliability: float, cov: np.ndarray,
                         confidence: float = 0.95, grid: int = 4000) -> tuple[float, float, float]:
    """Interval for rho from r, the reliability and the covariance of (atanh r, log rel).

    Test inversion on the stabilising scales: rho is inside when
        T(rho) = atanh(r) - atanh(rho sqrt(rel))
    satisfies T^2 <= z^2 Var(T), Var(T) by the delta method from `cov`
    (dT/d atanh r = 1, dT/d log rel = -u / (2 (1 - u^2)), u = rho sqrt(rel)).
    Fisher's z makes the sampling variance of r nearly free of r, and the log
    that of a reliability nearly free of its level, so the interval is
    asymmetric where r_c's sampling distribution is (small designs) and
    reduces to the Fisher-z interval of r / sqrt(rel) when rel is exact.
    Each bound is the first crossing walking out from r_c (the set can have a
    second piece near |rho| = 1 / sqrt(rel), where Var(T) explodes; it is not
    part of the interval). A side that never crosses ends at -+1 / sqrt(rel),
    the largest |rho| these data could show. Returns (low, high, se), se the
    delta-method SE of r_c.
    """
    if not (np.isfinite(r) and np.isfinite(reliability) and reliability > 0
            and np.all(np.isfinite(cov))):
        return np.nan, np.nan, np.nan
    crit = stats.norm.ppf(1 - (1 - confidence) / 2)
    a, root = np.arctanh(r), np.sqrt(reliability)
    r_c, bound = r / root, 1 / root
    grad = np.array([(1 - r * r) / root, -r_c / 2])
    se = float(np.sqrt(max(0.0, grad @ cov @ grad)))

    def first_crossing(end: float) -> float:
        rho = r_c + (end - r_c) * np.linspace(0, 1, grid + 1)[1:-1]
        u = rho * root
        t = a - np.arctanh(u)
        dl = -u / (2 * (1 - u * u))
        var = cov[0, 0] + 2 * dl * cov[0, 1] + dl * dl * cov[1, 1]
        excess = t * t - crit * crit * var
        out = np.flatnonzero(excess > 0)
        if out.size == 0:
            return float(end)
        k = out[0]
        if k == 0:
            return float(r_c + (rho[0] - r_c) * 0.5)
        # linear interpolation between the last point inside and the first outside
        f0, f1 = excess[k - 1], excess[k]
        return float(rho[k - 1] + (rho[k] - rho[k - 1]) * (-f0) / (f1 - f0))

    return first_crossing(-bound), first_crossing(bound), se


def _check_common_args(n_boot: int, n_splits: int, confidence: float) -> None:
    check_n_resamples(n_boot, "n_boot")
    check_n_resamples(n_splits, "n_splits")
    if not 0 < confidence < 1:
        raise DataValidationError("confidence must lie strictly between 0 and 1",
                                  source="confidence", expected="e.g. 0.95",
                                  found=repr(confidence))


def _checked_matrices(item_scores, trials, *, group, score, rating, item_keys, participant):
    """`rating_matrices`, with every group's correlation and reliability defined."""
    x, groups = rating_matrices(item_scores, trials, group=group, score=score, rating=rating,
                                item_keys=item_keys, participant=participant)
    for g in groups:
        rated = g.counts.sum(axis=0) > 0
        means = weighted_item_means(np.ones((1, g.n_participants)), g.sums, g.counts)[0]
        if rated.sum() < 3 or np.ptp(x[rated]) == 0 or np.ptp(means[rated]) == 0:
            raise DataValidationError(
                f"the correlation for group {g.group!r} is undefined", source="trials",
                column=group, expected="at least 3 rated items, with varying scores and "
                                       "varying mean ratings",
                found=f"{int(rated.sum())} rated item(s)")
        if g.n_participants < 2:
            raise DataValidationError(
                f"group {g.group!r} has one participant: its reliability is undefined",
                source="trials", column=group, expected=">= 2 participants per group",
                found="1 participant")
    return x, groups


def group_reliability(item_scores: pd.DataFrame, trials: pd.DataFrame, *, group: str,
                      score: str, rating: str = "rating", item_keys: Sequence[str] = ("item",),
                      participant: str = "participant", n_splits: int = 200,
                      n_boot: int = 1000, n_var_boot: int = 200, n_boot_splits: int = 20,
                      seed: int = 0, confidence: float = 0.95
                      ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Reliability, noise ceiling and attenuation-corrected correlation per group.

    `group` names the column that holds each participant's group (there is
    no default: it is always a study's own column). For each group:

    - reliability: split-half reliability of its item means, Spearman-Brown
      corrected, averaged over `n_splits` random splits of its participants;
    - noise_ceiling = sqrt(reliability);
    - r: the raw Pearson r of the model score with the group's item means
      (over the items the group rated);
    - r_corrected = r / noise_ceiling, with the delta-method standard error
      `se` and a `confidence` interval by test inversion on the Fisher-z and
      log-reliability scales (`corrected_r_interval`; module docstring), from
      the variance components of `variance_replicates`: `n_var_boot`
      replicates per component, the reliability recomputed on each over
      `n_boot_splits` splits that are the same in every replicate.
      Replicates where the reliability is not positive have no corrected r;
      they are counted in n_boot_undefined and left out;
    - below_calibrated_design: smaller, in items or in raters per item,
      than every design whose coverage the benchmark shows
      (`below_calibrated_design`); say so where the number is reported.

    Returns (reliability table with RELIABILITY_COLUMNS, raw-r table with
    RAW_R_COLUMNS): the second holds the raw r with an interval from `n_boot`
    two-way replicates (items shared by the groups, people within each
    group) recentred on r (`centred_percentile_interval`), and the usual
    t-test p-value with items as the units.
    """
    _check_common_args(n_boot, n_splits, confidence)
    check_n_resamples(n_boot_splits, "n_boot_splits")
    check_n_resamples(n_var_boot, "n_var_boot")
    x, groups = _checked_matrices(item_scores, trials, group=group, score=score, rating=rating,
                                  item_keys=item_keys, participant=participant)
    return reliability_from_matrices(x, groups, n_splits=n_splits, n_boot=n_boot,
                                     n_var_boot=n_var_boot, n_boot_splits=n_boot_splits,
                                     confidence=confidence, rng=np.random.default_rng(seed))


RAW_CI_METHOD = ("two-way bootstrap (participants and items), replicates centred on r on the "
                 "Fisher-z scale, percentile")


def centred_percentile_interval(estimate: float, draws: np.ndarray, confidence: float = 0.95
                                ) -> tuple[float, float, int]:
    """Percentile interval of replicates recentred on the estimate, on the Fisher-z scale.

    The two-way replicates of a raw r are shifted away from r: a replicate
    that draws a person twice has noisier item means, so its r is attenuated
    more (by about .024 in issue 25's probe). A BC interval corrects the
    median of the replicates, not their mean, and left the interval about
    .019 off centre (coverage .912). Here the replicates keep only their
    spread: z* = atanh(r*) - mean(atanh(r*)) + atanh(r), and the interval is
    tanh of the z* quantiles. Fisher's z makes the spread nearly free of r,
    so the recentred replicates stand for the sampling distribution around
    r. Returns (low, high, number of finite draws); NaNs without any.
    """
    check_probability(confidence, "confidence")
    draws = np.asarray(draws, float)
    draws = draws[np.isfinite(draws) & (np.abs(draws) < 1)]
    if draws.size == 0 or not np.isfinite(estimate) or abs(estimate) >= 1:
        return np.nan, np.nan, int(draws.size)
    z = np.arctanh(draws)
    z = z - z.mean() + np.arctanh(estimate)
    tail = (1 - confidence) / 2
    low, high = np.tanh(np.quantile(z, [tail, 1 - tail]))
    return float(low), float(high), int(draws.size)


def reliability_from_matrices(x: np.ndarray, groups: Sequence[GroupRatings], *,
                              n_splits: int = 200, n_boot: int = 1000, n_var_boot: int = 200,
                              n_boot_splits: int = 20, confidence: float = 0.95,
                              rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`group_reliability` on matrices (see there): (reliability table, raw-r table)."""
    rel, raw, _ = alignment_tables_from_matrices(
        x, groups, n_splits=n_splits, n_boot=n_boot, n_var_boot=n_var_boot,
        n_boot_splits=n_boot_splits, confidence=confidence, rng=rng, compare=False)
    return rel, raw


@on_one_blas_thread  # thousands of small matrix products (gbstats.blas)
def alignment_tables_from_matrices(x: np.ndarray, groups: Sequence[GroupRatings], *,
                                   n_splits: int = 200, n_boot: int = 1000,
                                   n_var_boot: int = 200, n_boot_splits: int = 20,
                                   confidence: float = 0.95, rng: np.random.Generator,
                                   compare: bool = True, item_clusters: np.ndarray | None = None
                                   ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
    """(reliability table, raw-r table, corrected comparison table or None) in one pass.

    The comparison (`compare_corrected_correlations`) reuses the replicates
    of the reliability table's intervals, so asking for both costs one.
    """
    item_weights = item_multinomial(x.size, n_boot, rng, item_clusters)
    # one item draw for every group's items part: the comparison needs them joint
    var_items = item_multinomial(x.size, n_var_boot, rng, item_clusters)
    rel_rows, raw_rows, parts = [], [], {}
    for g in groups:
        ones = np.ones((1, g.n_participants))
        rated = g.counts.sum(axis=0) > 0
        r = float(weighted_correlation(x, weighted_item_means(ones, g.sums, g.counts),
                                       np.ones(x.size))[0])
        reliability = float(reliability_rows(ones, np.ones(x.size), g.sums, g.counts,
                                             random_halves(g.n_participants, n_splits, rng))[0])
        r_c = float(corrected_correlation(r, reliability))
        parts[g.group] = variance_replicates(
            x, g, item_weights=var_items, rng=rng,
            halves=random_halves(g.n_participants, n_boot_splits, rng))
        cov, undefined = transformed_covariance(parts[g.group], int(rated.sum()))
        low, high, se = (corrected_r_interval(r, reliability, cov, confidence)
                         if np.isfinite(r_c) else (np.nan, np.nan, np.nan))
        n_items = int(rated.sum())
        rel_rows.append({
            "group": g.group, "reliability": reliability,
            "noise_ceiling": float(np.sqrt(reliability)) if reliability > 0 else np.nan,
            "r": r, "r_corrected": r_c, "se": se, "ci_low": low, "ci_high": high,
            "n_items": n_items, "n_participants": g.n_participants,
            "n_splits": int(n_splits), "n_boot": 3 * n_var_boot - undefined,
            "n_boot_undefined": undefined, "ci_method": CORRECTED_CI_METHOD,
            "below_calibrated_design": below_calibrated_design(
                n_items, float((g.counts[:, rated] > 0).sum(axis=0).mean()))})
        boot_r = two_way_r(x, g, item_weights, rng)
        raw_low, raw_high, raw_valid = centred_percentile_interval(r, boot_r, confidence)
        t = r * np.sqrt((n_items - 2) / max(1e-300, 1 - r * r))
        raw_rows.append({
            "group": g.group, "r": r, "ci_low": raw_low, "ci_high": raw_high,
            "p_value": float(2 * stats.t.sf(abs(t), n_items - 2)), "n_items": n_items,
            "n_participants": g.n_participants, "n_boot": raw_valid,
            "ci_method": RAW_CI_METHOD})
    rel_table = pd.DataFrame(rel_rows, columns=RELIABILITY_COLUMNS)
    raw_table = pd.DataFrame(raw_rows, columns=RAW_R_COLUMNS)
    warn_estimates(reliability_bounds_notes(rel_table))
    comparison = (corrected_comparison_table(rel_table, parts, confidence) if compare
                  else None)
    return rel_table, raw_table, comparison


def _g(value: float) -> str:
    return f"{value:.3g}"


def context_words(row, context: Sequence[str]) -> str:
    """" (a, b)": the values of a row's `context` columns, '' without any."""
    values = [str(getattr(row, c)) for c in context if hasattr(row, c)]
    return f" ({', '.join(values)})" if values else ""


def reliability_bounds_notes(table: pd.DataFrame, context: Sequence[str] = ()) -> list[str]:
    """Sentences for the rows of a reliability table (RELIABILITY_COLUMNS) whose numbers
    leave their range, [] when none does (issue 44, case 5). Nothing is clipped here: the
    table keeps every value as estimated, and a report prints these sentences beside it.

    - A split-half reliability is a share of variance, in [0, 1]. The Spearman-Brown step
      2r / (1 + r) of a negative half-correlation is below 0, and below -1 for a half
      correlation under -1/3 (pure noise in 24 people gave -4.8): such a group's item means
      hold no reliable differences, and it has no noise ceiling and no corrected r (NaN).
    - A corrected correlation, or an end of its interval, beyond [-1, 1]: the reliability is
      too low to divide by; the interval's ends reach +-1 / noise ceiling, the most these
      data could show, so an end beyond 1 says "anywhere up to 1".

    `context`: columns whose values name a row beside its group (a study's grouping).
    """
    notes = []
    for row in table.itertuples(index=False):
        where = context_words(row, context)
        rel = float(row.reliability)
        if not np.isfinite(rel) or rel <= 0:
            notes.append(
                f"Group {row.group}{where}: split-half reliability "
                f"{_g(rel) if np.isfinite(rel) else 'undefined'}, not in [0, 1]; its item means "
                "hold no reliable differences at this size, so it has no noise ceiling and no "
                "corrected correlation (left empty), and no comparison that needs one is "
                "computed.")
            continue
        beyond = [f"{name} {_g(v)}" for name, v in (
            ("corrected r", row.r_corrected), ("interval end", row.ci_low),
            ("interval end", row.ci_high)) if np.isfinite(v) and abs(v) > 1]
        if beyond:
            notes.append(
                f"Group {row.group}{where}: {', '.join(beyond)} beyond [-1, 1], because its "
                f"reliability ({_g(rel)}) is too low to correct by; a correlation cannot "
                "leave [-1, 1], so read such a value as 'anywhere up to the bound'.")
    return notes


def warn_estimates(notes: Sequence[str], stacklevel: int = 3) -> None:
    """Each sentence of `notes` as an EstimateWarning (gbstats.errors)."""
    import warnings

    from gbstats.errors import EstimateWarning

    for note in notes:
        warnings.warn(note, EstimateWarning, stacklevel=stacklevel)


def below_calibrated_design(n_items: int, raters_per_item: float) -> bool:
    """True for a group smaller than the designs whose coverage the benchmark shows: at
    least MIN_CALIBRATED_ITEMS items with MIN_CALIBRATED_PEOPLE raters per item, or at
    least SPARSE_CALIBRATED_ITEMS items with SPARSE_CALIBRATED_RATERS raters per item.
    Raters per item, not people, sets the noise of an item mean: in a Latin square 16
    people may give each item 2 or 3 raters."""
    if n_items >= SPARSE_CALIBRATED_ITEMS and raters_per_item >= SPARSE_CALIBRATED_RATERS:
        return False
    return n_items < MIN_CALIBRATED_ITEMS or raters_per_item < MIN_CALIBRATED_PEOPLE


# --------------------------------------------------------------------------
# comparison of corrected correlations (equal alignment)
# --------------------------------------------------------------------------

def _corrected_replicates(parts: dict) -> dict:
    return {name: corrected_correlation(*parts[name]) for name in VARIANCE_PARTS}


def corrected_comparison_table(rel_table: pd.DataFrame, parts: dict,
                               confidence: float = 0.95) -> pd.DataFrame:
    """Pairwise differences of corrected correlations, from the groups' variance replicates.

    Var(d) = Var_items(r_c,a - r_c,b) + sum over the two groups of
    max(0, V_shared - V_indep): the items part uses replicates that resampled
    the items jointly for both groups (their item means move together, so
    the difference's items variance is smaller than the sum); the people
    parts are independent, the groups being different people. Replicates
    with an undefined r_c in either group are left out of the items part.
    z = d / sqrt(Var(d)), two-sided normal p; interval d -+ z_{1-alpha/2} SE.
    """
    crit = stats.norm.ppf(1 - (1 - confidence) / 2)
    by_group = rel_table.set_index("group")
    reps = {g: _corrected_replicates(p) for g, p in parts.items()}

    def var(v):
        v = v[np.isfinite(v)]
        return float(np.var(v, ddof=1)) if v.size > 1 else np.nan

    groups, rows = list(rel_table["group"]), []
    for a_pos, a in enumerate(groups):
        for b in groups[a_pos + 1:]:
            d = float(by_group.loc[a, "r_corrected"] - by_group.loc[b, "r_corrected"])
            items = reps[a]["items"] - reps[b]["items"]
            people = sum(max(0.0, var(reps[g]["shared"]) - var(reps[g]["indep"]))
                         for g in (a, b))
            se = float(np.sqrt(var(items) + people))
            z = d / se if se > 0 else np.nan
            rows.append({
                "group_a": a, "group_b": b,
                "r_corrected_a": float(by_group.loc[a, "r_corrected"]),
                "r_corrected_b": float(by_group.loc[b, "r_corrected"]),
                "difference": d, "se": se, "ci_low": d - crit * se, "ci_high": d + crit * se,
                "statistic": z, "p_value": float(2 * stats.norm.sf(abs(z))),
                "n_boot": int(np.isfinite(items).sum()),
                "test": CORRECTED_COMPARISON_TEST})
    return pd.DataFrame(rows, columns=CORRECTED_COMPARISON_COLUMNS)


def group_alignment(item_scores: pd.DataFrame, trials: pd.DataFrame, *, group: str,
                    score: str, rating: str = "rating", item_keys: Sequence[str] = ("item",),
                    participant: str = "participant", n_splits: int = 200, n_boot: int = 1000,
                    n_var_boot: int = 200, n_boot_splits: int = 20, seed: int = 0,
                    confidence: float = 0.95, item_cluster: str | None = None
                    ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """`group_reliability`'s two tables and `compare_corrected_correlations`' table from
    one set of replicates: (reliability, raw r, corrected comparisons).

    The same numbers as the two functions with the same arguments and seed, at
    the cost of one. With a single group the comparison table is empty.
    `item_cluster` names a column of `item_scores` holding the unit the items cluster in
    (a first name): the bootstrap then draws those units, each with all its items
    (`item_multinomial`), instead of single items.
    """
    _check_common_args(n_boot, n_splits, confidence)
    check_n_resamples(n_boot_splits, "n_boot_splits")
    check_n_resamples(n_var_boot, "n_var_boot")
    x, groups = _checked_matrices(item_scores, trials, group=group, score=score, rating=rating,
                                  item_keys=item_keys, participant=participant)
    clusters = None
    if item_cluster is not None:
        require_columns(item_scores, [item_cluster], "item_scores")
        require_no_missing(item_scores, [item_cluster], "item_scores")
        clusters = item_scores[item_cluster].astype(str).to_numpy()   # rows = items, in order
    return alignment_tables_from_matrices(
        x, groups, n_splits=n_splits, n_boot=n_boot, n_var_boot=n_var_boot,
        n_boot_splits=n_boot_splits, confidence=confidence, rng=np.random.default_rng(seed),
        item_clusters=clusters)


def item_multinomial(n_items: int, n_rows: int, rng: np.random.Generator,
                     clusters: np.ndarray | None = None) -> np.ndarray:
    """Bootstrap weights over items, one row per replicate: `multinomial_weights` over the
    items, or with `clusters` (a label per item) over the clusters, every item of a cluster
    weighted as often as its cluster is drawn (the unit of inference is the cluster: issue
    40, first names in name_gender)."""
    if clusters is None:
        return multinomial_weights(n_items, n_rows, rng)
    clusters = np.asarray(clusters)
    if clusters.shape != (n_items,):
        raise DataValidationError("one cluster label per item", source="item clusters",
                                  expected=f"{n_items} labels", found=f"{clusters.size}")
    _, codes = np.unique(clusters, return_inverse=True)
    return multinomial_weights(int(codes.max()) + 1, n_rows, rng)[:, codes]


def compare_corrected_correlations(item_scores: pd.DataFrame, trials: pd.DataFrame, *,
                                   group: str, score: str, rating: str = "rating",
                                   item_keys: Sequence[str] = ("item",),
                                   participant: str = "participant", n_splits: int = 200,
                                   n_boot: int = 1000, n_var_boot: int = 200,
                                   n_boot_splits: int = 20, seed: int = 0,
                                   confidence: float = 0.95) -> pd.DataFrame:
    """Do two groups differ in alignment? Pairwise tests of equal corrected correlations.

    For every pair of groups (a, b), d = r_corrected_a - r_corrected_b (the
    corrected correlations of `group_reliability`, same settings and seed)
    with the variance of `corrected_comparison_table`: items resampled
    jointly for both groups, each group's people on their own. The null
    hypothesis is equal alignment (equal correlation over the population of
    items between the model score and the groups' true item means), not
    equal raw r: groups of different sizes, or of noisier raters, have
    different raw r at equal alignment, and the size-matched comparison
    (`compare_size_matched`) tests equal attenuated r, which noisier raters
    break (README, "Which alignment number to cite"). `n_boot` only fixes the
    random stream, so that the numbers equal `group_alignment`'s.

    Returns CORRECTED_COMPARISON_COLUMNS, one row per pair in group order.
    """
    _check_common_args(n_boot, n_splits, confidence)
    check_n_resamples(n_boot_splits, "n_boot_splits")
    check_n_resamples(n_var_boot, "n_var_boot")
    x, groups = _checked_matrices(item_scores, trials, group=group, score=score, rating=rating,
                                  item_keys=item_keys, participant=participant)
    if len(groups) < 2:
        raise DataValidationError("a comparison needs at least two groups", source="trials",
                                  column=group, expected="two or more groups",
                                  found=f"{[g.group for g in groups]}")
    _, _, table = alignment_tables_from_matrices(
        x, groups, n_splits=n_splits, n_boot=n_boot, n_var_boot=n_var_boot,
        n_boot_splits=n_boot_splits, confidence=confidence, rng=np.random.default_rng(seed))
    return table


# --------------------------------------------------------------------------
# size-matched comparison
# --------------------------------------------------------------------------

def subsample_weights(n_participants: int, size: int, n_rows: int,
                      rng: np.random.Generator) -> np.ndarray:
    """(n_rows, P) 0/1 masks, each choosing `size` participants without replacement."""
    order = np.argsort(rng.random((n_rows, n_participants)), axis=1)
    mask = np.zeros((n_rows, n_participants))
    np.put_along_axis(mask, order[:, :size], 1.0, axis=1)
    return mask


def resampled_subsample_weights(n_participants: int, size: int, n_rows: int, n_subsamples: int,
                                rng: np.random.Generator) -> np.ndarray:
    """(n_rows * n_subsamples, P) counts: per row, a bootstrap sample of the P people (with
    replacement), then `n_subsamples` subsamples of `size` of its P draws (without
    replacement of draws), rows' subsamples consecutive. The subsamples of one row share
    the row's people, as the point estimate's subsamples share the observed people."""
    boot = rng.integers(0, n_participants, size=(n_rows, n_participants))
    picked = []
    for _ in range(n_subsamples):
        positions = np.argsort(rng.random((n_rows, n_participants)), axis=1)[:, :size]
        picked.append(np.take_along_axis(boot, positions, axis=1))
    people = np.stack(picked, axis=1).reshape(n_rows * n_subsamples, size)
    flat = (np.arange(people.shape[0])[:, None] * n_participants + people).ravel()
    return np.bincount(flat, minlength=people.shape[0] * n_participants).reshape(
        people.shape[0], n_participants).astype(float)


def size_matched_r(x: np.ndarray, g: GroupRatings, item_weights: np.ndarray, size: int,
                   n_subsamples: int, rng: np.random.Generator, *,
                   resample_people: bool = False) -> np.ndarray:
    """Per row of item_weights: the group's r averaged over `n_subsamples` random
    subsamples of `size` participants (without replacement); with `resample_people`,
    subsamples of a fresh bootstrap sample of the people in every row
    (`resampled_subsample_weights`). (R,) array."""
    item_weights = np.atleast_2d(item_weights)
    n_rows = item_weights.shape[0]
    out = np.empty(n_rows)
    chunk = max(1, ROW_CHUNK // n_subsamples)
    for start in range(0, n_rows, chunk):
        stop = min(n_rows, start + chunk)
        people = (resampled_subsample_weights(g.n_participants, size, stop - start,
                                              n_subsamples, rng) if resample_people else
                  subsample_weights(g.n_participants, size, (stop - start) * n_subsamples, rng))
        r = weighted_correlation(x, weighted_item_means(people, g.sums, g.counts),
                                 np.repeat(item_weights[start:stop], n_subsamples, axis=0))
        with np.errstate(invalid="ignore"):
            out[start:stop] = np.nanmean(r.reshape(stop - start, n_subsamples), axis=1)
    return out


@on_one_blas_thread  # thousands of small matrix products (gbstats.blas)
def size_matched_from_matrices(x: np.ndarray, groups: Sequence[GroupRatings], *,
                               n_subsamples: int = 200, n_boot: int = 1000,
                               n_boot_subsamples: int = 5, confidence: float = 0.95,
                               rng: np.random.Generator) -> pd.DataFrame:
    """`compare_size_matched` on matrices (see there); one row per pair of groups."""
    size = min(g.n_participants for g in groups)
    if size < 2:
        raise DataValidationError("a size-matched comparison needs at least 2 participants "
                                  "in every group", source="trials",
                                  expected=">= 2 participants per group",
                                  found=f"a group of {size}")
    ones = np.ones((1, x.size))
    point = {g.group: float(size_matched_r(x, g, ones, size, n_subsamples, rng)[0])
             for g in groups}
    item_weights = multinomial_weights(x.size, n_boot, rng)
    boot = {g.group: size_matched_r(x, g, item_weights, size, n_boot_subsamples, rng,
                                    resample_people=True)
            for g in groups}
    rows = []
    for a_pos, a in enumerate(groups):
        for b in groups[a_pos + 1:]:
            d = point[a.group] - point[b.group]
            draws = boot[a.group] - boot[b.group]
            low, high, n_valid = bc_interval(d, draws, confidence)
            rows.append({
                "group_a": a.group, "group_b": b.group, "matched_size": size,
                "r_a": point[a.group], "r_b": point[b.group], "difference": d,
                "ci_low": low, "ci_high": high, "p_value": bc_test_p_value(d, draws),
                "n_subsamples": int(n_subsamples), "n_boot": n_valid,
                "test": "bootstrap over items and participants (subsamples of each "
                        "replicate's people), bias-corrected percentile inversion, two-sided"})
    return pd.DataFrame(rows, columns=SIZE_MATCHED_COLUMNS)


def compare_size_matched(item_scores: pd.DataFrame, trials: pd.DataFrame, *, group: str,
                         score: str, rating: str = "rating",
                         item_keys: Sequence[str] = ("item",),
                         participant: str = "participant", n_subsamples: int = 200,
                         n_boot: int = 1000, n_boot_subsamples: int = 5, seed: int = 0,
                         confidence: float = 0.95) -> pd.DataFrame:
    """Compare groups' raw correlations with the model at equal group sizes.

    Not a test of equal alignment (issue 25): it tests equal raw r among
    groups cut to the same size, and a group of noisier raters has a lower
    raw r at equal alignment and equal size (6 people with noise SD 1.5
    against 60 with SD 3: see `fpr_size_matched` in
    benchmarks/results/alignment_calibration.json). To test equal alignment
    use `compare_corrected_correlations`. Kept for comparison with earlier
    reports.

    Every group is subsampled (without replacement) to the size of the
    smallest group, `n_subsamples` times; a group's size-matched r is the mean
    over its subsamples of the Pearson r between the model score and the
    subsample's item means. Each group's r then carries the noise of the same
    number of people, so a difference between groups is not produced by
    group size. (It can still be produced by groups whose individual members
    are noisier raters; the corrected correlations of `group_reliability`
    address that.)

    Test, for every pair of groups (a, b): d = r_a - r_b. Its null
    distribution comes from `n_boot` replicates that resample the items with
    replacement (shared by both groups) and each group's people with
    replacement, then draw `n_boot_subsamples` subsamples of the matched size
    from that replicate's people (`resampled_subsample_weights`); p inverts
    the bias-corrected percentile interval (`bc_test_p_value`). Resampling the
    people matters when they differ in what they share across items (people
    who follow the model's dimension more or less strongly: a random slope):
    with the people held fixed the test rejected 9-12% at 5% under slopes of
    SD .2. A replicate's duplicated people shrink its r, more for the
    smallest group; the BC inversion recentres on the estimate. Size in
    benchmarks/alignment_calibration.py (400 null panels of 16 / 43 / 89
    people with the same alignment, smallest vs largest): 3.3% with person
    offsets only, 5.0% with slopes of SD .2 (`fpr_size_matched`).

    Returns SIZE_MATCHED_COLUMNS, one row per pair in group order.
    """
    check_n_resamples(n_subsamples, "n_subsamples")
    check_n_resamples(n_boot_subsamples, "n_boot_subsamples")
    _check_common_args(n_boot, 1, confidence)
    x, groups = rating_matrices(item_scores, trials, group=group, score=score, rating=rating,
                                item_keys=item_keys, participant=participant)
    if len(groups) < 2:
        raise DataValidationError("a comparison needs at least two groups", source="trials",
                                  column=group, expected="two or more groups",
                                  found=f"{[g.group for g in groups]}")
    return size_matched_from_matrices(x, groups, n_subsamples=n_subsamples, n_boot=n_boot,
                                      n_boot_subsamples=n_boot_subsamples,
                                      confidence=confidence, rng=np.random.default_rng(seed))

"""Cluster (and stratified cluster) bootstrap with percentile and bias-corrected intervals.

Resampling units are clusters (a sentence and its versions, a participant and
their trials): whole clusters are drawn with replacement, so a cluster's rows
stay together and the within-cluster dependence is kept. With `strata`, each
stratum keeps its own number of clusters, so a pro/anti or female/male cell
never changes size by chance.

Intervals, for a statistic theta with point estimate theta_hat and bootstrap
replicates theta*_1..B (Efron & Tibshirani 1993, ch. 13-14):

- percentile: the alpha/2 and 1 - alpha/2 quantiles of the replicates;
- bias-corrected (BC): the quantiles at Phi(2 z0 + z_alpha/2) and
  Phi(2 z0 + z_1-alpha/2), where z0 = Phi^-1(share of replicates below
  theta_hat) measures the median bias of the replicates. Replicates equal to
  theta_hat count half (discrete statistics such as accuracies often tie);
- BCa: also corrects for the change of the statistic's standard error with
  its value, through the acceleration a, estimated by the leave-one-cluster-
  out jackknife: a = sum d_i^3 / (6 (sum d_i^2)^(3/2)), d_i = mean(theta_(.)) -
  theta_(i). Quantiles at Phi(z0 + (z0 + z) / (1 - a (z0 + z))), z = z_alpha/2
  and z_1-alpha/2. With a = 0 this is BC.

Statistics may be undefined (NaN) in some replicates (an empty cell, a
division by zero): intervals use the defined replicates only and say how many
there were; an estimate undefined everywhere gets NaN bounds.
tests/stats/test_resampling.py checks BCa against scipy.stats.bootstrap and
simulates the coverage of the intervals.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy import stats

from gbstats.errors import DataValidationError, UnknownNameError

INTERVALS = ("percentile", "bc", "bca")


def cluster_plan(table: pd.DataFrame, unit: str, strata: str | None = None) -> list[tuple]:
    """Per stratum: (row positions grouped by cluster, start of each cluster, its number of rows).

    Computed once, so each replicate is only a draw of cluster numbers.
    """
    for column in [unit] + ([strata] if strata else []):
        if column not in table.columns:
            raise DataValidationError("the resampling column is missing", source="bootstrap",
                                      column=column, expected=f"a column {column!r}",
                                      found=str(list(table.columns)))
    plan = []
    keys = (np.zeros(len(table), dtype=int) if strata is None
            else pd.factorize(table[strata], sort=True)[0])
    for code in np.unique(keys):
        positions = np.flatnonzero(keys == code)
        units = pd.factorize(table[unit].to_numpy()[positions])[0]
        order = np.argsort(units, kind="stable")
        lengths = np.bincount(units)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        plan.append((positions[order], starts, lengths))
    return plan


def resample_positions(plan: list[tuple], rng: np.random.Generator) -> np.ndarray:
    """Row positions of one bootstrap replicate: clusters drawn with replacement per stratum."""
    out = []
    for flat, starts, lengths in plan:
        chosen = rng.integers(0, len(lengths), size=len(lengths))
        n = lengths[chosen]
        # the rows of each chosen cluster, in order: start of the cluster + 0, 1, ..., n - 1
        offsets = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n) + np.repeat(starts[chosen], n)
        out.append(flat[offsets])
    return np.concatenate(out) if out else np.array([], dtype=int)


def resample_rows(table: pd.DataFrame, unit: str, strata: str | None,
                  rng: np.random.Generator) -> pd.DataFrame:
    """One replicate table: whole clusters drawn with replacement, within each stratum if given."""
    return table.iloc[resample_positions(cluster_plan(table, unit, strata), rng)] \
        .reset_index(drop=True)


def _values(statistic: Callable, table: pd.DataFrame) -> np.ndarray:
    return np.atleast_1d(np.asarray(statistic(table), dtype=float))


def bootstrap_draws(table: pd.DataFrame, statistic: Callable, *, unit: str,
                    strata: str | None = None, n_boot: int = 1000, seed: int = 0,
                    n_values: int | None = None) -> np.ndarray:
    """(n_boot, k) replicates of statistic(table) -> k numbers, resampling clusters `unit`.

    The replicates depend only on (table, unit, strata, n_boot, seed): replicate
    b is drawn with numpy's default_rng(seed) after the b - 1 before it.
    `n_values` (k) saves one evaluation of the statistic when known.
    """
    if n_boot < 0:
        raise DataValidationError("the number of bootstrap replicates must be >= 0",
                                  source="bootstrap", expected="n_boot >= 0", found=str(n_boot))
    k = len(_values(statistic, table)) if n_values is None else n_values
    plan = cluster_plan(table, unit, strata)
    rng = np.random.default_rng(seed)
    draws = np.full((n_boot, k), np.nan)
    for b in range(n_boot):
        positions = resample_positions(plan, rng)
        # take() already copies the rows: a fresh 0..n-1 index on that copy gives the
        # replicate reset_index(drop=True) would, without copying the rows a second time
        replicate = table.take(positions)
        replicate.index = pd.RangeIndex(len(positions))
        draws[b] = _values(statistic, replicate)
    return draws


def _level_alpha(level: float) -> float:
    if not 0 < level < 1:
        raise DataValidationError("the interval level must be between 0 and 1",
                                  source="bootstrap", expected="0 < level < 1", found=str(level))
    return (1 - level) / 2


def _quantiles(draws: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Per column, the nan-quantile of the defined replicates at that column's prob."""
    out = np.full(draws.shape[1], np.nan)
    for j in range(draws.shape[1]):
        column = draws[:, j][~np.isnan(draws[:, j])]
        if column.size and not np.isnan(probs[j]):
            out[j] = np.quantile(column, probs[j])
    return out


def percentile_interval(draws: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) per column: quantiles alpha/2 and 1 - alpha/2 of the defined replicates."""
    alpha = _level_alpha(level)
    draws = np.asarray(draws, dtype=float).reshape(len(draws), -1)
    if len(draws) == 0:
        return np.full(draws.shape[1], np.nan), np.full(draws.shape[1], np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns -> NaN bounds
        return (np.nanquantile(draws, alpha, axis=0), np.nanquantile(draws, 1 - alpha, axis=0))


def bias_correction(draws: np.ndarray, point) -> np.ndarray:
    """z0 per column: Phi^-1(share of defined replicates below the point, ties counted half).

    Infinite when every replicate lies on one side (the interval is then
    undefined and given as NaN).
    """
    draws = np.asarray(draws, dtype=float).reshape(len(draws), -1)
    point = np.atleast_1d(np.asarray(point, dtype=float))
    defined = ~np.isnan(draws)
    n = defined.sum(axis=0)
    below = (draws < point).sum(axis=0) + 0.5 * (draws == point).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return stats.norm.ppf(np.where(n > 0, below / np.where(n > 0, n, 1), np.nan))


def jackknife_acceleration(table: pd.DataFrame, statistic: Callable, *, unit: str) -> np.ndarray:
    """BCa acceleration per value of the statistic, from leave-one-cluster-out estimates.

    a = sum d_i^3 / (6 (sum d_i^2)^(3/2)), d_i = mean_j(theta_(j)) - theta_(i)
    (Efron & Tibshirani 1993, eq. 14.15). 0 where every d_i is 0; NaN where a
    leave-one-out estimate is undefined.
    """
    clusters = pd.unique(table[unit])
    if len(clusters) < 2:
        raise DataValidationError("the jackknife needs at least two clusters", source="bootstrap",
                                  column=unit, expected=">= 2 clusters", found=str(len(clusters)))
    leave_out = np.vstack([_values(statistic, table[table[unit] != c].reset_index(drop=True))
                           for c in clusters])
    d = leave_out.mean(axis=0) - leave_out
    num, den = (d ** 3).sum(axis=0), (d ** 2).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / (6 * den ** 1.5), 0.0)


def bias_corrected_interval(draws: np.ndarray, point, level: float = 0.95,
                            acceleration=0.0) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) per column: BC (acceleration 0) or BCa (see the module docstring)."""
    alpha = _level_alpha(level)
    draws = np.asarray(draws, dtype=float).reshape(len(draws), -1)
    z0 = bias_correction(draws, point)
    a = np.broadcast_to(np.asarray(acceleration, dtype=float), z0.shape)
    bounds = []
    for z in stats.norm.ppf([alpha, 1 - alpha]):
        with np.errstate(divide="ignore", invalid="ignore"):
            prob = stats.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z)))
        prob = np.where(np.isfinite(z0), prob, np.nan)
        bounds.append(_quantiles(draws, prob))
    return bounds[0], bounds[1]


def cluster_bootstrap(table: pd.DataFrame, statistic: Callable, *, unit: str,
                      strata: str | None = None, n_boot: int = 1000, seed: int = 0,
                      level: float = 0.95, interval: str = "percentile") -> pd.DataFrame:
    """statistic(table) with a bootstrap interval, resampling clusters `unit` (within `strata`).

    Returns one row per value of the statistic: estimate, ci_low, ci_high,
    n_boot_defined (replicates where it was defined) and interval (the method).
    interval: "percentile", "bc" or "bca" (module docstring). BCa's jackknife
    leaves out one cluster at a time across strata. A replicate keeps the
    original cluster labels, so two copies of one cluster share a label: a
    statistic that groups by `unit` would see them as one cluster.
    """
    if interval not in INTERVALS:
        raise UnknownNameError("bootstrap interval", interval, list(INTERVALS))
    point = _values(statistic, table)
    draws = bootstrap_draws(table, statistic, unit=unit, strata=strata, n_boot=n_boot, seed=seed,
                            n_values=len(point))
    if interval == "percentile":
        low, high = percentile_interval(draws, level)
    else:
        a = jackknife_acceleration(table, statistic, unit=unit) if interval == "bca" else 0.0
        low, high = bias_corrected_interval(draws, point, level, a)
    return pd.DataFrame({"estimate": point, "ci_low": low, "ci_high": high,
                         "n_boot_defined": (~np.isnan(draws)).sum(axis=0), "interval": interval})

"""The MAZE analyses: outliers, pro/anti response-time CDFs, Delta_MAZE, and an LMM.

Outliers follow the interquartile-range rule within each dataset x condition
(the authors clean each relation group separately): a trial is an outlier when
its time is below Q1 - 1.5 IQR or above Q3 + 1.5 IQR, with Q1 and Q3 numpy's
default (linear) percentiles. The authors' script cuts a sorted list at the
positions nearest those fences, which can also drop the single largest kept
value; the plain rule is used here.

Delta_MAZE(p) = Q_anti(p) - Q_pro(p), with Q the empirical quantile function
(the inverse of the empirical CDF, numpy's "inverted_cdf"): at a cumulative
share p, how much slower the p-th anti trial is than the p-th pro trial.
Positive values mean anti-stereotypical pronouns are picked more slowly.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from gbstats.exclusions import ExclusionLog

STAGE = "cognitive_bias.maze"
LMM_FORMULA = "log_rt ~ stereotype + (1|participant) + (1|sentence)"
DELTA_GRID = np.round(np.arange(0.01, 1.0, 0.01), 2)   # for the figure
TABLE_GRID = np.round(np.arange(0.05, 1.0, 0.05), 2)   # for the report's table
IQR_FENCE = 1.5


def iqr_outliers(times: pd.Series, fence: float = IQR_FENCE) -> pd.Series:
    """True where a value lies outside [Q1 - fence*IQR, Q3 + fence*IQR]."""
    q1, q3 = np.percentile(times.to_numpy(dtype=float), [25, 75])
    spread = q3 - q1
    return (times < q1 - fence * spread) | (times > q3 + fence * spread)


def remove_outliers(maze: pd.DataFrame, log: ExclusionLog) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(kept trials, per dataset x condition counts and share of outliers)."""
    flagged = pd.Series(False, index=maze.index)
    rows = []
    for (dataset, condition), g in maze.groupby(["dataset", "condition"], sort=False):
        out = iqr_outliers(g["time_to_answer"])
        flagged.loc[g.index] = out
        rows.append({"dataset": dataset, "condition": condition, "n_trials": int(len(g)),
                     "n_outliers": int(out.sum()), "share_outliers": float(out.mean())})
    kept = maze
    for (dataset, condition), _ in maze.groupby(["dataset", "condition"], sort=False):
        mask = flagged.loc[kept.index] & (kept["dataset"] == dataset) \
            & (kept["condition"] == condition)
        kept = log.drop(kept, mask, f"{dataset} MAZE {condition}: response time outside "
                                    f"Q1 - {IQR_FENCE} IQR .. Q3 + {IQR_FENCE} IQR",
                        unit="trials", stage=STAGE)
    return kept.reset_index(drop=True), pd.DataFrame(rows)


def empirical_quantiles(times, grid=DELTA_GRID) -> np.ndarray:
    return np.quantile(np.asarray(times, dtype=float), grid, method="inverted_cdf")


def maze_delta(maze: pd.DataFrame, grid=DELTA_GRID) -> pd.DataFrame:
    """dataset, p, quantile_pro, quantile_anti, delta (ms) on the grid of cumulative shares."""
    parts = []
    for dataset, g in maze.groupby("dataset", sort=False):
        pro = empirical_quantiles(g.loc[g["condition"] == "pro", "time_to_answer"], grid)
        anti = empirical_quantiles(g.loc[g["condition"] == "anti", "time_to_answer"], grid)
        parts.append(pd.DataFrame({"dataset": dataset, "p": grid, "quantile_pro": pro,
                                   "quantile_anti": anti, "delta": anti - pro}))
    return pd.concat(parts, ignore_index=True)


def lmm_rows(maze: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "log_rt": maze["log_rt"].to_numpy(),
        "stereotype": pd.Categorical(maze["condition"], categories=["anti", "pro"]),
        "participant": maze["participant"].astype(str).to_numpy(),
        "sentence": maze["sentence_id"].astype(str).to_numpy(),
    })


def fit_maze_lmm(maze: pd.DataFrame, backend: str, *, use_cache: bool = False,
                 cache_dir=None) -> dict:
    """{dataset: FitResult} of log_rt ~ stereotype + (1|participant) + (1|sentence), reused
    from the fit cache when unchanged (`use_cache`)."""
    from gbstats.mixed.fit_cache import cached_fit
    from gbstats.mixed.lmm import fit_lmm

    return {dataset: cached_fit(fit_lmm, LMM_FORMULA, lmm_rows(g), backend=backend,
                                use_cache=use_cache, cache_dir=cache_dir)
            for dataset, g in maze.groupby("dataset", sort=False)}


def maze_lmm_table(fits: dict) -> pd.DataFrame:
    columns = ["dataset", "term", "estimate", "se", "ci_low", "ci_high", "stat", "df", "p_value"]
    parts = [r.coefs.assign(dataset=d)[columns] for d, r in fits.items()]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)

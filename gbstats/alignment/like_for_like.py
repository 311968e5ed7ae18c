"""Like-for-like quantities: the same ratio on both sides, and how much each side covers.

A person's response and a language model's next-word distribution live in different
response spaces. In Gardner & Brown-Schmidt's (2024) production task people wrote a
continuation coded he / she / other (other: mostly a repeated name, some singular
*they*, some other subjects); a model's next word is "he", "she", "they", the name, or
any of thousands of other words, and P(he) + P(she) + P(they) covers well under half of
its mass. "P(she)" on the two sides is therefore only comparable as a ratio over one
declared set of options present on both sides, for example

    people:  n(she) / (n(he) + n(she))            model:  P(she) / (P(he) + P(she))

and a report should say how much of each side the set covers: the share of people's
responses that fall in it (`people_shares`, column `coverage`) and the next-word
probability mass the options hold (`model_shares`, `response_coverage`).

Options are named once, in a mapping {option set name: options}; on the people side
each option is a 0/1 indicator column, on the model side a raw probability column
(`prefix` + option). Intervals for people's shares are Wilson score intervals over
trials (`wilson_interval`), which treat trials as independent: they describe the
observed share, not a population of people (that is the mixed models' job).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from gbstats.data.validate import require_indicator, require_probability
from gbstats.errors import DataValidationError, check_probability


def wilson_interval(successes, n, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for k successes out of n (Wilson 1927); NaN where n = 0."""
    check_probability(confidence, "confidence")
    k, n = np.asarray(successes, dtype=float), np.asarray(n, dtype=float)
    bad = ~((k >= 0) & (k <= n) & (n >= 0))
    if bad.any():
        # 12 successes of 10 gave an interval of NaN without a word (issue 44, new cases)
        pos = int(np.flatnonzero(bad.ravel())[0])
        raise DataValidationError("a count of successes must lie in 0..n", source="wilson_interval",
                                  expected="0 <= successes <= n",
                                  found=f"{k.ravel()[pos]:g} of {n.ravel()[pos]:g} (entry {pos + 1})")
    z = stats.norm.ppf(1 - (1 - confidence) / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # clipped: at k = 0 or k = n the bound is 0 or 1 exactly, up to rounding
    low = np.where(n > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
    high = np.where(n > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    return low, high


def _require(frame: pd.DataFrame, columns: Sequence[str], source: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataValidationError("missing column(s) for a like-for-like share", source=source,
                                  column=missing[0], expected=f"columns {list(columns)}",
                                  found=f"columns {list(frame.columns)}")


def model_shares(scored: pd.DataFrame, option_sets: Mapping[str, Sequence[str]], *,
                 target: str, prefix: str = "p_raw_") -> pd.DataFrame:
    """`scored` with, for every option set S, the target's share of the set's mass
    `share_<S>` = P(target) / sum over S of P(option), and the mass the set covers,
    `coverage_<S>` = sum over S of P(option) (raw next-word probabilities)."""
    out = scored.copy()
    for name, options in option_sets.items():
        if target not in options:
            raise DataValidationError("an option set without its target", source=name,
                                      expected=f"{target!r} among the options",
                                      found=repr(list(options)))
        probabilities = _probabilities(scored, [prefix + o for o in options])
        mass = probabilities.sum(axis=1)
        out[f"coverage_{name}"] = mass
        with np.errstate(invalid="ignore", divide="ignore"):
            out[f"share_{name}"] = probabilities[prefix + target] / mass
    return out


# Summed next-word probabilities of distinct words cannot exceed 1; a little rounding
# (float32 softmax) can.
MASS_TOLERANCE = 1e-4


def _probabilities(scored: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """The option columns as probabilities: numbers in [0, 1] whose sum per row is at
    most 1 (they are disjoint next words)."""
    _require(scored, columns, "model scores")
    values = pd.DataFrame({c: require_probability(scored, c, source="model scores",
                                                  row_offset=lambda pos: pos + 1)
                           for c in columns}, index=scored.index)
    mass = values.sum(axis=1)
    over = mass > 1 + MASS_TOLERANCE
    if over.any():
        pos = int(np.flatnonzero(over.to_numpy())[0])
        raise DataValidationError(
            "the options' probabilities sum to more than 1", source="model scores",
            row=pos + 1, column=columns[0],
            expected=f"disjoint next-word probabilities ({', '.join(columns)}) summing to "
                     f"at most 1", found=f"{float(mass.iloc[pos]):.4g}")
    return values


def people_shares(trials: pd.DataFrame, option_sets: Mapping[str, Sequence[str]], *,
                  target: str, by: Sequence[str], confidence: float = 0.95) -> pd.DataFrame:
    """Per `by` group and option set S: trials, trials in S (`n_in_set`), the target's
    count, its share of S with a Wilson interval, and the share of all trials S covers
    (`coverage`). Options are 0/1 indicator columns of `trials`; one row per group x set."""
    check_probability(confidence, "confidence")
    columns = sorted({o for opts in option_sets.values() for o in opts} | {target})
    _require(trials, list(by) + columns, "trials")
    indicators = trials[list(by)].copy()
    for column in columns:
        indicators[column] = require_indicator(trials, column, source="trials",
                                               row_offset=lambda pos: pos + 1)
    rows = []
    for keys, part in indicators.groupby(list(by), sort=True):
        keys = keys if isinstance(keys, tuple) else (keys,)
        for name, options in option_sets.items():
            in_set = int(part[list(options)].sum(axis=1).clip(upper=1).sum())
            hits = int(part[target].sum())
            low, high = wilson_interval(hits, in_set, confidence)
            rows.append({**dict(zip(by, keys)), "option_set": name, "n_trials": len(part),
                         "n_in_set": in_set, "n_target": hits,
                         "share": hits / in_set if in_set else np.nan,
                         "ci_low": float(low), "ci_high": float(high),
                         "coverage": in_set / len(part)})
    return pd.DataFrame(rows)


def response_coverage(scored: pd.DataFrame, option_sets: Mapping[str, Sequence[str]], *,
                      by: Sequence[str], prefix: str = "p_raw_") -> pd.DataFrame:
    """Per `by` group and option set: the next-word probability mass the set's options
    cover, mean, minimum and maximum over the group's prompts."""
    rows = []
    for keys, part in scored.groupby(list(by), sort=True):
        keys = keys if isinstance(keys, tuple) else (keys,)
        for name, options in option_sets.items():
            mass = _probabilities(part, [prefix + o for o in options]).sum(axis=1)
            rows.append({**dict(zip(by, keys)), "option_set": name, "options": ", ".join(options),
                         "n_prompts": len(part), "mass_mean": float(mass.mean()),
                         "mass_min": float(mass.min()), "mass_max": float(mass.max())})
    return pd.DataFrame(rows)

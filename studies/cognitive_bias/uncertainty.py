"""Uncertainty for Delta_QA and Delta_MAZE, people against systems (Lior & Stanovsky
2023, Figure 5 and Table 2), by a bootstrap over participants and sentences.

Resampling. People and sentences are crossed (every participant answers many
sentences, every sentence is answered by many participants), so both are
resampled at once: each replicate draws the participants with replacement and,
independently, the sentences with replacement, and a trial's weight is the
product of its participant's and its sentence's multiplicities (the two-way,
"pigeonhole" bootstrap; McCullagh 2000, Bernoulli 8: 325-356; Owen 2007, Ann.
Appl. Stat. 1: 502-545). A system has no participants: its sentences carry the
same sentence draw as the people, so a person-vs-system difference is paired
by sentence. The two-way bootstrap is known to be somewhat conservative (its
variance includes the interaction term once more); the coverage simulations in
tests/studies/test_cognitive_bias.py (`test_delta_*_intervals_cover_*`) measure
it on crossed designs of this study's size. Measured: people's Delta_QA 95%
intervals cover 0.995, a system's 0.96, and the system-vs-people test rejects a
true null at 0.01 (200 data sets); Delta_MAZE(0.5) intervals cover 0.99 and the
system-vs-people MAZE test rejects a true null at 0.08 (200 data sets) and 0.05
(300 more, another seed), 0.062 pooled: the QA side is conservative, the MAZE
test is close to its level, perhaps slightly liberal.

Intervals are percentile intervals of the replicates. The test of "system Delta
equals human Delta" inverts them: p = 2 min(P*(D <= 0), P*(D >= 0)), about the
smallest level at which the two-sided percentile interval of the difference D
excludes 0 (counted with +1, see `percentile_p_value`; at B = 200 and 0.05 it
rejects exactly when the uncounted version does).

Delta_MAZE of a system. The authors place a system with accuracy a_c in
condition c on the people's MAZE curve at time Q_c(a_c): the response time
within which a share a_c of people's correct c-trials were answered (Q_c the
empirical quantile function after the IQR outlier rule, as in maze.py). The
system's Delta_MAZE is Q_anti(a_anti) - Q_pro(a_pro), the same orientation as the
people's Delta_MAZE(p) = Q_anti(p) - Q_pro(p); a system with a_pro = a_anti = p
has exactly the people's Delta_MAZE(p). The comparison is therefore with the
people's Delta_MAZE at the system's mean share p = (a_pro + a_anti) / 2; a
negative difference means the system's pro/anti gap is larger, in human
response time, than people's at the same accuracy. The paper gives no test;
this construction is gbstats' and is named so in the report.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from studies.cognitive_bias import maze as M

N_BOOT = 1000
LEVEL = 0.95


# --------------------------------------------------------------------------- resampling

def bootstrap_draws(statistic: Callable[[list[np.ndarray]], np.ndarray],
                    n_levels: Sequence[int], *, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, k) replicates of statistic(level multiplicities per factor)."""
    rng = np.random.default_rng(seed)
    return np.vstack([statistic(crossed_level_counts(n_levels, rng)) for _ in range(n_boot)])


def crossed_level_counts(n_levels: Sequence[int], rng: np.random.Generator) -> list[np.ndarray]:
    """Multiplicities of every level of every factor in one draw."""
    return [np.bincount(rng.integers(0, n, n), minlength=n) for n in n_levels]


def percentile_interval(draws: np.ndarray, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    tail = (1 - level) / 2
    return np.nanquantile(draws, tail, axis=0), np.nanquantile(draws, 1 - tail, axis=0)


def percentile_p_value(draws: np.ndarray) -> np.ndarray:
    """Two-sided p of 'the quantity is 0', inverting the percentile interval:
    2 min(#(D* <= 0) + 1, #(D* >= 0) + 1) / (B + 1), capped at 1, over the B defined
    replicates (the +1 keeps p above 0: B replicates cannot show p < 2 / (B + 1);
    Davison & Hinkley 1997, sec. 4.2)."""
    defined = ~np.isnan(draws)
    n = defined.sum(axis=0)
    below = np.where(defined, draws <= 0, False).sum(axis=0)
    above = np.where(defined, draws >= 0, False).sum(axis=0)
    return np.minimum(1.0, 2 * (np.minimum(below, above) + 1) / (n + 1))


def _codes(values: pd.Series, levels: pd.Index) -> np.ndarray:
    code = levels.get_indexer(values)
    if (code < 0).any():
        raise ValueError("a value is missing from the resampling levels")
    return code


# --------------------------------------------------------------------------- Delta_QA

def _weighted_delta(correct: np.ndarray, pro: np.ndarray, weights: np.ndarray) -> float:
    w_pro, w_anti = weights * pro, weights * ~pro
    if w_pro.sum() == 0 or w_anti.sum() == 0:
        return np.nan
    return (w_pro @ correct) / w_pro.sum() - (w_anti @ correct) / w_anti.sum()


def qa_delta_statistic(trials: pd.DataFrame, systems: pd.DataFrame):
    """(labels, statistic(level counts)) for one dataset: people's Delta_QA per alpha,
    each system's Delta_QA, and every system-minus-people difference.

    `trials`: participant, sentence_id, alpha, condition, is_correct (analysed
    trials); `systems`: model, sentence_id, condition, correct. Levels: the
    participants, and the sentences of both tables.
    """
    participants = pd.Index(sorted(trials["participant"].unique()))
    sentences = pd.Index(sorted(set(trials["sentence_id"]) | set(systems["sentence_id"])))
    t_part = _codes(trials["participant"], participants)
    t_sent = _codes(trials["sentence_id"], sentences)
    alphas = sorted(trials["alpha"].unique())
    models = sorted(systems["model"].unique())
    by_alpha = {a: (trials["alpha"].to_numpy() == a) for a in alphas}
    t_correct = trials["is_correct"].to_numpy(dtype=float)
    t_pro = trials["condition"].to_numpy() == "pro"
    by_model = {m: (systems["model"].to_numpy() == m) for m in models}
    s_sent = _codes(systems["sentence_id"], sentences)
    s_correct = systems["correct"].to_numpy(dtype=float)
    s_pro = systems["condition"].to_numpy() == "pro"

    labels = ([("human", a, None) for a in alphas] + [(m, np.nan, None) for m in models]
              + [(m, a, "difference") for m in models for a in alphas])

    def statistic(counts: list[np.ndarray]) -> np.ndarray:
        w_trials = counts[0][t_part] * counts[1][t_sent]
        w_systems = counts[1][s_sent]
        human = {a: _weighted_delta(t_correct[m], t_pro[m], w_trials[m])
                 for a, m in by_alpha.items()}
        system = {k: _weighted_delta(s_correct[m], s_pro[m], w_systems[m])
                  for k, m in by_model.items()}
        return np.array([human[a] for a in alphas] + [system[m] for m in models]
                        + [system[m] - human[a] for m in models for a in alphas])

    return labels, statistic, (len(participants), len(sentences))


def qa_delta_uncertainty(trials: pd.DataFrame, systems: pd.DataFrame, *, n_boot: int = N_BOOT,
                         seed: int = 0, level: float = LEVEL) -> pd.DataFrame:
    """Per dataset: Delta_QA of people (per alpha) and systems with percentile intervals,
    and system minus people (per alpha) with interval and p-value."""
    rows = []
    for i, (dataset, mine) in enumerate(trials.groupby("dataset", sort=False)):
        labels, statistic, n_levels = qa_delta_statistic(
            mine, systems[systems["dataset"] == dataset])
        point = statistic([np.ones(n, dtype=np.int64) for n in n_levels])
        draws = bootstrap_draws(statistic, n_levels, n_boot=n_boot, seed=seed + i)
        rows.append(_summary(dataset, labels, point, draws, level))
    return pd.concat(rows, ignore_index=True)


def _summary(dataset, labels, point, draws, level) -> pd.DataFrame:
    low, high = percentile_interval(draws, level)
    p = percentile_p_value(draws)
    return pd.DataFrame({
        "dataset": dataset,
        "source": [source for source, _, _ in labels],
        "alpha": [alpha for _, alpha, _ in labels],
        "quantity": [kind or "delta" for _, _, kind in labels],
        "estimate": point, "ci_low": low, "ci_high": high,
        "p_value": [p[j] if kind == "difference" else np.nan
                    for j, (_, _, kind) in enumerate(labels)],
        "n_boot": int(draws.shape[0]),
    })


# --------------------------------------------------------------------------- Delta_MAZE

def cleaned_sorted(times: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The replicate's trials (each repeated `weight` times) after the IQR rule, sorted."""
    sample = np.sort(np.repeat(times, weights))
    if sample.size == 0:
        return sample
    # M.iqr_outliers' rule on the sorted array, without building a Series: it ran once per
    # condition in every replicate, and was most of a bootstrap's time (issue 41)
    q1, q3 = np.percentile(sample, [25, 75])
    spread = q3 - q1
    return sample[~((sample < q1 - M.IQR_FENCE * spread) | (sample > q3 + M.IQR_FENCE * spread))]


def quantile_at(sorted_times: np.ndarray, shares) -> np.ndarray:
    """Empirical quantile function (inverted CDF) of sorted times at `shares` in [0, 1]."""
    shares = np.clip(np.asarray(shares, dtype=float), 0, 1)
    if sorted_times.size == 0:
        return np.full(shares.shape, np.nan)
    return np.quantile(sorted_times, shares, method="inverted_cdf")


def maze_delta_statistic(maze: pd.DataFrame, systems: pd.DataFrame, grid=M.TABLE_GRID):
    """(labels, statistic(level counts), n_levels) for one dataset's MAZE trials (before
    outlier removal: the IQR rule is re-applied in every replicate) and the systems'
    per-sentence verdicts on the MAZE sentences."""
    participants = pd.Index(sorted(maze["participant"].unique()))
    sentences = pd.Index(sorted(set(maze["sentence_id"]) | set(systems["sentence_id"])))
    m_part = _codes(maze["participant"], participants)
    m_sent = _codes(maze["sentence_id"], sentences)
    times = maze["time_to_answer"].to_numpy(dtype=float)
    is_pro = maze["condition"].to_numpy() == "pro"
    models = sorted(systems["model"].unique())
    by_model = {m: (systems["model"].to_numpy() == m) for m in models}
    s_sent = _codes(systems["sentence_id"], sentences)
    s_correct = systems["correct"].to_numpy(dtype=float)
    s_pro = systems["condition"].to_numpy() == "pro"
    grid = np.asarray(grid, dtype=float)

    labels = [("human", "delta_maze", p) for p in grid]
    for m in models:
        labels += [(m, "accuracy_pro", np.nan), (m, "accuracy_anti", np.nan),
                   (m, "time_pro", np.nan), (m, "time_anti", np.nan),
                   (m, "delta_maze", np.nan), (m, "human_delta_maze_at_mean_share", np.nan),
                   (m, "difference", np.nan)]

    def statistic(counts: list[np.ndarray]) -> np.ndarray:
        w = counts[0][m_part] * counts[1][m_sent]
        pro_times = cleaned_sorted(times[is_pro], w[is_pro])
        anti_times = cleaned_sorted(times[~is_pro], w[~is_pro])
        out = list(quantile_at(anti_times, grid) - quantile_at(pro_times, grid))
        w_sys = counts[1][s_sent]
        for m, mask in by_model.items():
            wp, wa = w_sys * (mask & s_pro), w_sys * (mask & ~s_pro)
            a_pro = (wp @ s_correct) / wp.sum() if wp.sum() else np.nan
            a_anti = (wa @ s_correct) / wa.sum() if wa.sum() else np.nan
            t_pro = quantile_at(pro_times, a_pro).item() if np.isfinite(a_pro) else np.nan
            t_anti = quantile_at(anti_times, a_anti).item() if np.isfinite(a_anti) else np.nan
            mean_share = (a_pro + a_anti) / 2
            human = (quantile_at(anti_times, mean_share) - quantile_at(pro_times, mean_share)
                     ).item() if np.isfinite(mean_share) else np.nan
            out += [a_pro, a_anti, t_pro, t_anti, t_anti - t_pro, human,
                    (t_anti - t_pro) - human]
        return np.array(out, dtype=float)

    return labels, statistic, (len(participants), len(sentences))


def maze_delta_uncertainty(maze: pd.DataFrame, systems: pd.DataFrame, *, n_boot: int = N_BOOT,
                           seed: int = 0, level: float = LEVEL,
                           grid=M.TABLE_GRID) -> pd.DataFrame:
    """Per dataset: people's Delta_MAZE on `grid` and each system's placement on the MAZE
    curves (Figure 5), its Delta_MAZE, and system minus people, all with percentile
    intervals; p-value for the difference."""
    parts = []
    for i, (dataset, mine) in enumerate(maze.groupby("dataset", sort=False)):
        labels, statistic, n_levels = maze_delta_statistic(
            mine, systems[systems["dataset"] == dataset], grid)
        point = statistic([np.ones(n, dtype=np.int64) for n in n_levels])
        draws = bootstrap_draws(statistic, n_levels, n_boot=n_boot, seed=seed + i)
        low, high = percentile_interval(draws, level)
        p = percentile_p_value(draws)
        parts.append(pd.DataFrame({
            "dataset": dataset, "source": [s for s, _, _ in labels],
            "quantity": [q for _, q, _ in labels], "p": [g for _, _, g in labels],
            "estimate": point, "ci_low": low, "ci_high": high,
            "p_value": [p[j] if q == "difference" else np.nan
                        for j, (_, q, _) in enumerate(labels)],
            "n_boot": int(draws.shape[0])}))
    return pd.concat(parts, ignore_index=True)


def holm_within_datasets(table: pd.DataFrame, experiment: str) -> pd.DataFrame:
    """Holm-adjust the system-vs-people p-values, one family per dataset and experiment
    (QA: every system x alpha; MAZE: every system); `family` names it."""
    from gbstats.inference.hypothesis_tests import correct_pvalues

    out = table.assign(p_holm=np.nan, family=None)
    for dataset in out["dataset"].unique():
        tests = (out["dataset"] == dataset) & (out["quantity"] == "difference")
        if not tests.any():
            continue
        adjusted = correct_pvalues(out.loc[tests], "holm")
        out.loc[tests, "p_holm"] = adjusted["p_adjusted"].to_numpy()
        out.loc[tests, "family"] = (f"{experiment} {dataset}: {int(tests.sum())} "
                                    "system-vs-people tests")
    return out

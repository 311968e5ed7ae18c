"""Which group of people does a language model resemble? Alignment measures with uncertainty.

Two measures, each with a bootstrap CI and a test between groups (the
correlations' reliability-corrected and mixed-model views live in
`gbstats.alignment.reliability` and `gbstats.alignment.mixed_model`):

- **Log-likelihood** (`group_loglik`, `compare_group_loglik`): the mean natural
  log-probability, under the model's predicted distribution over an item's
  variants, of the variant each person actually chose (Watson, Beekhuizen &
  Stevenson 2023, Tables 1 and 5: the mean over a group's trials of
  log P_model(response | item)). Higher (closer to 0) = the model predicts
  that group's choices better.
- **Correlation** (`group_correlations`, `compare_group_correlations`,
  `compare_dependent_correlations`): the correlation over items between a
  model score (e.g. surprisal) and a group's mean rating of each item.

Why participants are resampled (and, for correlations, items too). A group's trials are not independent: each
participant contributes many, and participants differ. Resampling trials would
pretend every trial is a new person and give CIs that are too narrow.
Resampling whole participants (with all their trials) within their group keeps
each group's size and the dependence among a person's trials, and is the
standard cluster bootstrap.

Input tables are long (see DESIGN.md): `trials` has one row per participant x
item; `model_probs` has one row per item x variant. Nothing is dropped
silently: a trial whose response the model gives probability 0, or that the
model table lacks, is an error that names the item and the response. Exclude
such trials upstream, through an `ExclusionLog`, if that is what you mean.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from gbstats.alignment.ratings import (check_n_resamples, check_one_group_per_participant,
                                       item_mean_matrices, key_text, ordered_levels,
                                       prepare_rating_frame, require_columns,
                                       require_no_missing, require_numeric)
from gbstats.errors import DataValidationError, UnknownNameError, check_probability

ALL_LEVEL = "all"

LOGLIK_COLUMNS = ["group", "split", "mean_loglik", "ci_low", "ci_high",
                  "n_participants", "n_obs", "n_boot"]
LOGLIK_COMPARISON_COLUMNS = [
    "split", "group_best", "group_next", "loglik_best", "loglik_next", "difference",
    "ci_low", "ci_high", "p_value", "n_participants_best", "n_participants_next",
    "n_perm", "n_boot", "test"]
CORRELATION_CI_METHODS = ("two_way_centred", "two_way_bc", "participant_percentile")
CORRELATION_COLUMNS = ["group", "method", "r", "ci_low", "ci_high", "p_value",
                       "n_items", "n_items_unrated", "n_participants", "n_obs", "n_boot"]
DEPENDENT_CORRELATION_COLUMNS = [
    "r_xy1", "r_xy2", "r_y1y2", "n", "difference", "statistic", "p_value",
    "ci_low", "ci_high", "ci_level", "test", "ci_method"]


# --------------------------------------------------------------------------
# input checks
# --------------------------------------------------------------------------

def validate_model_probs(model_probs: pd.DataFrame, *, item_keys: Sequence[str],
                         variant: str = "variant", prob: str = "prob",
                         tol: float = 1e-6) -> pd.DataFrame:
    """Check a long table of a model's P(variant | item), normalised within each item.

    One row per item x variant, probabilities in [0, 1], summing to 1 within
    `tol` over each item's variants. Returns the table restricted to the key
    columns and `prob` as float.
    """
    item_keys = list(item_keys)
    require_columns(model_probs, item_keys + [variant, prob], "model_probs")
    require_no_missing(model_probs, item_keys + [variant], "model_probs")
    probs = require_numeric(model_probs, prob, "model_probs")
    out = model_probs[item_keys + [variant]].copy()
    out[prob] = probs
    outside = (probs < 0) | (probs > 1)
    if outside.any():
        pos = int(np.flatnonzero(outside)[0])
        raise DataValidationError(
            "probabilities must lie in [0, 1]", source="model_probs", column=prob,
            expected="0 <= prob <= 1",
            found=f"{probs[pos]!r} for {key_text(item_keys + [variant], tuple(out.iloc[pos][item_keys + [variant]]))}")
    dup = out.duplicated(subset=item_keys + [variant])
    if dup.any():
        pos = int(np.flatnonzero(dup.to_numpy())[0])
        raise DataValidationError(
            "duplicated item x variant", source="model_probs", column=variant,
            expected="one probability per item and variant",
            found=key_text(item_keys + [variant], tuple(out.iloc[pos][item_keys + [variant]])))
    sums = out.groupby(item_keys, observed=True, sort=False)[prob].sum()
    off = (sums - 1).abs() > tol
    if off.any():
        first = sums.index[off.to_numpy()][0]
        raise DataValidationError(
            f"{int(off.sum())} item(s) whose variant probabilities do not sum to 1 "
            f"(tolerance {tol:g}); normalise over each item's variants first",
            source="model_probs", column=prob, expected="sum over variants = 1",
            found=f"sum {sums[first]:.6g} for {key_text(item_keys, first)}")
    return out


def response_logprob(trials: pd.DataFrame, model_probs: pd.DataFrame, *,
                     item_keys: Sequence[str], response: str = "response",
                     variant: str = "variant", prob: str = "prob",
                     tol: float = 1e-6) -> pd.Series:
    """Natural log of the model's probability of each trial's response.

    Joins on the item keys and response == variant (never on position).
    Returns a float Series aligned with `trials.index`. An item the model
    table lacks, a response that is not one of the item's variants, or a
    response with probability 0 (log-likelihood -inf) is an error naming the
    item and the response.
    """
    item_keys = list(item_keys)
    probs = validate_model_probs(model_probs, item_keys=item_keys, variant=variant,
                                 prob=prob, tol=tol)
    require_columns(trials, item_keys + [response], "trials")
    require_no_missing(trials, item_keys + [response], "trials")
    keys = trials[item_keys + [response]].rename(columns={response: variant})
    try:
        joined = keys.merge(probs, on=item_keys + [variant], how="left",
                            validate="many_to_one")
    except (ValueError, TypeError) as exc:  # e.g. incompatible key dtypes
        raise DataValidationError(
            "trials cannot be joined to model_probs", source="trials",
            column=item_keys[0], expected="item keys and responses of the same type "
            "in both tables", found=str(exc)) from None
    if len(joined) != len(trials):  # many_to_one guarantees this; keep the contract explicit
        raise DataValidationError("the join of trials with model_probs changed the row "
                                  "count", source="trials",
                                  expected=f"{len(trials)} rows", found=f"{len(joined)} rows")
    p = joined[prob].to_numpy(dtype=float)
    unmatched = np.isnan(p)
    if unmatched.any():
        pos = int(np.flatnonzero(unmatched)[0])
        row = keys.iloc[pos]
        item_value = tuple(row[item_keys])
        item_mask = np.ones(len(probs), dtype=bool)
        for k, v in zip(item_keys, item_value):
            item_mask &= (probs[k] == v).to_numpy()
        if not item_mask.any():
            message = f"item {key_text(item_keys, item_value)} is not in model_probs"
            expected = "every item of trials to have model probabilities"
        else:
            known = ", ".join(map(repr, probs.loc[item_mask, variant]))
            message = (f"response {row[variant]!r} for item {key_text(item_keys, item_value)} "
                       f"is not one of the model's variants for that item ({known})")
            expected = "every response to be a variant the model scored"
        raise DataValidationError(
            f"{message}; {int(unmatched.sum())} trial(s) affected (first at index "
            f"{trials.index[pos]!r})", source="trials", column=response,
            expected=expected, found=repr(row[variant]))
    zero = p == 0
    if zero.any():
        pos = int(np.flatnonzero(zero)[0])
        row = keys.iloc[pos]
        raise DataValidationError(
            f"the model gives probability 0 to response {row[variant]!r} for item "
            f"{key_text(item_keys, tuple(row[item_keys]))}, so its log-likelihood is -inf; "
            f"{int(zero.sum())} trial(s) affected (first at index {trials.index[pos]!r}). "
            "Smooth the model's probabilities or exclude these trials explicitly",
            source="trials", column=response, expected="model probability > 0",
            found="probability 0")
    return pd.Series(np.log(p), index=trials.index, name="logprob")


# --------------------------------------------------------------------------
# log-likelihood per group
# --------------------------------------------------------------------------

def _participant_sums(frame: pd.DataFrame, participant: str, split_by: str | None,
                      split_levels: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per participant: summed log-prob and trial count, one column per split level + all.

    Returns (participant ids, sums [n_p x n_levels+1], counts [same]); the last
    column is "all".
    """
    ids = np.array(ordered_levels(frame[participant]), dtype=object)
    pos = pd.Index(ids).get_indexer(frame[participant])
    n_p, n_l = ids.size, len(split_levels) + 1
    sums, counts = np.zeros((n_p, n_l)), np.zeros((n_p, n_l))
    logp = frame["_logprob"].to_numpy()
    np.add.at(sums[:, -1], pos, logp)
    np.add.at(counts[:, -1], pos, 1)
    if split_by is not None:
        lvl = pd.Index(split_levels).get_indexer(frame[split_by])
        np.add.at(sums, (pos, lvl), logp)
        np.add.at(counts, (pos, lvl), 1)
    return ids, sums, counts


def _bootstrap_ratio_means(sums: np.ndarray, counts: np.ndarray, n_boot: int,
                           rng: np.random.Generator) -> np.ndarray:
    """Resample participants (rows) with replacement: per resample, sum/count per column.

    A resample is a vector of multinomial counts over the participants, so all
    resamples are one matrix product. Columns with no trial in a resample
    give NaN there.
    """
    n_p = sums.shape[0]
    weights = rng.multinomial(n_p, np.full(n_p, 1.0 / n_p), size=n_boot).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights @ sums) / (weights @ counts)


def _percentile_ci(draws: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Percentile CI per column over the finite draws; also the number of finite draws."""
    tail = (1 - level) / 2
    finite = np.isfinite(draws)
    n_valid = finite.sum(axis=0)
    low, high = np.full(draws.shape[1], np.nan), np.full(draws.shape[1], np.nan)
    for j in range(draws.shape[1]):
        if n_valid[j]:
            low[j], high[j] = np.quantile(draws[finite[:, j], j], [tail, 1 - tail])
    return low, high, n_valid


def _prepare_loglik_frame(trials, model_probs, *, participant, group, response, item_keys,
                          split_by, variant, prob, tol) -> tuple[pd.DataFrame, list, list]:
    item_keys = list(item_keys)
    # dict.fromkeys: the split column may also be an item key; keep one copy
    needed = list(dict.fromkeys([participant, group, response] + item_keys
                                + ([split_by] if split_by else [])))
    require_columns(trials, needed, "trials")
    require_no_missing(trials, needed, "trials")
    if len(trials) == 0:
        raise DataValidationError("no trials", source="trials",
                                  expected="at least one trial", found="0 rows")
    check_one_group_per_participant(trials, participant, group)
    frame = trials[needed].copy()
    frame["_logprob"] = response_logprob(trials, model_probs, item_keys=item_keys,
                                         response=response, variant=variant, prob=prob,
                                         tol=tol)
    split_levels = ordered_levels(frame[split_by]) if split_by else []
    if ALL_LEVEL in split_levels:
        raise DataValidationError(
            f"a level of the split column is called {ALL_LEVEL!r}, which is reserved for "
            "the pooled row", source="trials", column=split_by,
            expected=f"split levels other than {ALL_LEVEL!r}", found=repr(ALL_LEVEL))
    return frame, ordered_levels(frame[group]), split_levels


def group_loglik(trials: pd.DataFrame, model_probs: pd.DataFrame, *,
                 group: str, response: str = "response",
                 item_keys: Sequence[str] = ("item",), participant: str = "participant",
                 split_by: str | None = None, variant: str = "variant", prob: str = "prob",
                 n_boot: int = 2000, seed: int = 0, confidence: float = 0.95,
                 tol: float = 1e-6) -> pd.DataFrame:
    """Each group's mean log-likelihood of its responses under the model.

    mean_loglik = (1 / n_obs) * sum over the group's trials of
    ln P_model(response | item), in nats: the per-trial mean over the pooled
    trials, as in Watson et al. (2023). The CI is a percentile bootstrap that
    resamples participants with replacement within the group (`n_boot`
    resamples, `seed`); each resample's statistic is again the pooled
    per-trial mean.

    With `split_by` (e.g. "name_gender", a trial-level column), each group gets
    one row per split level plus one row with split == "all"; the same
    participant resamples are used for every level. Without it, one row per
    group with split == "all".

    Returns a long table with columns group, split, mean_loglik, ci_low,
    ci_high, n_participants (with at least one trial at that level), n_obs,
    n_boot (resamples with at least one trial at that level, which is all of
    them unless few participants contribute to a level). Groups come in
    categorical order if the column is categorical, else sorted.
    """
    check_n_resamples(n_boot, "n_boot")
    check_probability(confidence, "confidence")
    frame, groups, split_levels = _prepare_loglik_frame(
        trials, model_probs, participant=participant, group=group, response=response,
        item_keys=item_keys, split_by=split_by, variant=variant, prob=prob, tol=tol)
    rng = np.random.default_rng(seed)
    level_names = list(split_levels) + [ALL_LEVEL]
    records = []
    for g in groups:
        _, sums, counts = _participant_sums(frame[frame[group] == g], participant,
                                            split_by, split_levels)
        boot = _bootstrap_ratio_means(sums, counts, n_boot, rng)
        low, high, n_valid = _percentile_ci(boot, confidence)
        for j, level in enumerate(level_names):
            n_obs = int(counts[:, j].sum())
            records.append({
                "group": g, "split": level,
                "mean_loglik": sums[:, j].sum() / n_obs if n_obs else np.nan,
                "ci_low": low[j], "ci_high": high[j],
                "n_participants": int((counts[:, j] > 0).sum()), "n_obs": n_obs,
                "n_boot": int(n_valid[j])})
    return pd.DataFrame.from_records(records, columns=LOGLIK_COLUMNS)


def group_loglik_wide(table: pd.DataFrame) -> pd.DataFrame:
    """One row per group from `group_loglik`'s long table, for a paper-style table.

    Columns: group, then mean_loglik_<level>, ci_low_<level>, ci_high_<level>
    and n_obs_<level> for each split level (including "all"), then
    n_participants (of the "all" row). Levels keep their order from `table`.
    """
    missing = [c for c in LOGLIK_COLUMNS if c not in table.columns]
    if missing:
        raise DataValidationError("not a group_loglik table", source="table",
                                  column=missing[0], expected=f"columns {LOGLIK_COLUMNS}",
                                  found=f"columns {list(table.columns)}")
    levels = list(dict.fromkeys(table["split"]))
    groups = list(dict.fromkeys(table["group"]))
    indexed = table.set_index(["group", "split"])
    out = pd.DataFrame({"group": groups})
    for level in levels:
        for col in ("mean_loglik", "ci_low", "ci_high", "n_obs"):
            out[f"{col}_{level}"] = [indexed.loc[(g, level), col] if (g, level) in indexed.index
                                     else np.nan for g in groups]
    out["n_participants"] = [indexed.loc[(g, ALL_LEVEL), "n_participants"] for g in groups]
    return out


def _permutation_p_value(s_a, n_a, s_b, n_b, n_perm: int,
                         rng: np.random.Generator) -> tuple[float, float]:
    """Two-sided permutation p-value for the difference of pooled per-trial means.

    Participants (rows) of the two groups are pooled and their group labels
    shuffled, keeping each group's number of participants. p = (1 + #{|d*| >=
    |d|}) / (1 + n_perm), so p is never 0 (Phipson & Smyth 2010).
    """
    s = np.concatenate([s_a, s_b])
    n = np.concatenate([n_a, n_b])
    k, total = s_a.size, s.size
    observed = s_a.sum() / n_a.sum() - s_b.sum() / n_b.sum()
    # a tiny tolerance so that permutations equal to the observed split count
    # as "at least as extreme" despite floating-point reordering
    threshold = abs(observed) - 1e-12 * max(1.0, abs(observed))
    n_extreme = 0
    # permutations in chunks keep memory at about 1e6 cells for large panels
    chunk = max(1, min(n_perm, 1_000_000 // total))
    for start in range(0, n_perm, chunk):
        size = min(chunk, n_perm - start)
        order = np.argsort(rng.random((size, total)), axis=1)
        in_a = np.zeros((size, total))
        np.put_along_axis(in_a, order[:, :k], 1.0, axis=1)
        diffs = (in_a @ s) / (in_a @ n) - ((1 - in_a) @ s) / ((1 - in_a) @ n)
        n_extreme += int((np.abs(diffs) >= threshold).sum())
    return float((1 + n_extreme) / (1 + n_perm)), float(observed)


def compare_group_loglik(trials: pd.DataFrame, model_probs: pd.DataFrame, *,
                         group: str, response: str = "response",
                         item_keys: Sequence[str] = ("item",),
                         participant: str = "participant", split_by: str | None = None,
                         groups: tuple | None = None, variant: str = "variant",
                         prob: str = "prob", n_perm: int = 5000, n_boot: int = 2000,
                         seed: int = 0, confidence: float = 0.95,
                         tol: float = 1e-6) -> pd.DataFrame:
    """Does the best-fitting group fit significantly better than the next one?

    For each split level (and "all"), the groups are ranked by mean
    log-likelihood (as in `group_loglik`); the top two are compared, or the two
    named in `groups=(a, b)`, ordered so that group_best has the higher value.

    What is permuted. The two groups are different people, so there is no
    pairing of participants; what the groups share is the model and the item
    set. Participants are the exchangeable unit: under the null hypothesis
    that the model predicts both groups' responses equally well, a
    participant's group label is arbitrary. The test pools the participants
    of the two groups (each with all their trials at that split level),
    shuffles the labels `n_perm` times keeping the group sizes, and recomputes
    the difference of the pooled per-trial means. The p-value is two-sided and
    includes the observed labelling: p = (1 + #extreme) / (1 + n_perm).

    The CI of the difference is a percentile bootstrap resampling
    participants within each group independently.

    Caveat: with more than two groups, the pair is chosen because it ranks
    first and second; the p-value is the pairwise test and does not adjust
    for that choice (use `gbstats.inference.hypothesis_tests.correct_pvalues` across
    several comparisons).

    Returns one row per split level with columns split, group_best,
    group_next, loglik_best, loglik_next, difference (best - next, >= 0),
    ci_low, ci_high, p_value, n_participants_best, n_participants_next,
    n_perm, n_boot, test.
    """
    check_n_resamples(n_perm, "n_perm")
    check_n_resamples(n_boot, "n_boot")
    frame, all_groups, split_levels = _prepare_loglik_frame(
        trials, model_probs, participant=participant, group=group, response=response,
        item_keys=item_keys, split_by=split_by, variant=variant, prob=prob, tol=tol)
    if groups is not None:
        groups = tuple(groups)
        for g in groups:
            if g not in all_groups:
                raise UnknownNameError("group", str(g), [str(x) for x in all_groups])
        if len(groups) != 2 or groups[0] == groups[1]:
            raise DataValidationError("groups must name two different groups",
                                      source="groups", expected="(group_a, group_b)",
                                      found=repr(groups))
    elif len(all_groups) < 2:
        raise DataValidationError("a comparison needs at least two groups", source="trials",
                                  column=group, expected="two or more groups",
                                  found=f"only {all_groups!r}")
    rng = np.random.default_rng(seed)
    per_group = {g: _participant_sums(frame[frame[group] == g], participant, split_by,
                                      split_levels)[1:] for g in all_groups}
    records = []
    for j, level in enumerate(list(split_levels) + [ALL_LEVEL]):
        def rows_at_level(g):
            sums, counts = per_group[g]
            present = counts[:, j] > 0  # participants with trials at this level
            return sums[present, j], counts[present, j]

        means = {}
        for g in all_groups:
            s, n = rows_at_level(g)
            if n.sum() > 0:
                means[g] = s.sum() / n.sum()
        candidates = groups if groups is not None else tuple(means)
        missing = [g for g in candidates if g not in means]
        if missing or len(candidates) < 2:
            raise DataValidationError(
                f"cannot compare groups at split level {level!r}: some group has no trials "
                "there", source="trials", column=split_by or group,
                expected="trials from at least two groups at every split level",
                found=f"groups with trials: {sorted(map(str, means))}")
        ranked = sorted(candidates, key=lambda g: means[g], reverse=True)
        best, nxt = ranked[0], ranked[1]
        s_a, n_a = rows_at_level(best)
        s_b, n_b = rows_at_level(nxt)
        p_value, difference = _permutation_p_value(s_a, n_a, s_b, n_b, n_perm, rng)
        boot_a = _bootstrap_ratio_means(s_a[:, None], n_a[:, None], n_boot, rng)[:, 0]
        boot_b = _bootstrap_ratio_means(s_b[:, None], n_b[:, None], n_boot, rng)[:, 0]
        low, high, n_valid = _percentile_ci((boot_a - boot_b)[:, None], confidence)
        records.append({
            "split": level, "group_best": best, "group_next": nxt,
            "loglik_best": means[best], "loglik_next": means[nxt],
            "difference": difference, "ci_low": low[0], "ci_high": high[0],
            "p_value": p_value, "n_participants_best": int(s_a.size),
            "n_participants_next": int(s_b.size), "n_perm": int(n_perm),
            "n_boot": int(n_valid[0]),
            "test": "permutation of participant group labels, two-sided"})
    return pd.DataFrame.from_records(records, columns=LOGLIK_COMPARISON_COLUMNS)


# --------------------------------------------------------------------------
# correlations between model item scores and groups' mean ratings
# --------------------------------------------------------------------------

def _rowwise_correlation(x: np.ndarray, ys: np.ndarray, method: str) -> np.ndarray:
    """Correlation of x with each row of ys, skipping NaN cells of that row."""
    out = np.full(ys.shape[0], np.nan)
    complete = ~np.isnan(ys).any(axis=1)

    def corr_block(xv, block):
        if method == "spearman":
            xv = stats.rankdata(xv)
            block = stats.rankdata(block, axis=1)
        xc = xv - xv.mean()
        bc = block - block.mean(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (bc @ xc) / np.sqrt((bc ** 2).sum(axis=1) * (xc ** 2).sum())

    if complete.any():
        out[complete] = corr_block(x, ys[complete])
    for i in np.flatnonzero(~complete):  # rare: an item nobody in the resample rated
        keep = ~np.isnan(ys[i])
        if keep.sum() >= 3:
            out[i] = corr_block(x[keep], ys[i, keep][None, :])[0]
    return out


def _group_item_means(frame, scores, group_value, *, group, participant):
    sub = frame[frame[group] == group_value]
    sums, counts = item_mean_matrices(sub, participant, len(scores))
    rated = counts.sum(axis=0) > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums.sum(axis=0) / counts.sum(axis=0)
    return sub, sums, counts, rated, means


def group_correlations(item_scores: pd.DataFrame, trials: pd.DataFrame, *,
                       group: str, score: str = "surprisal",
                       rating: str = "rating", item_keys: Sequence[str] = ("item",),
                       participant: str = "participant", method: str = "pearson",
                       n_boot: int = 2000, seed: int = 0, confidence: float = 0.95,
                       ci_method: str = "two_way_centred") -> pd.DataFrame:
    """Correlate the model's item scores with each group's mean rating per item.

    For each group: the mean rating of each item over the group's trials,
    correlated (Pearson or Spearman) over the items the group rated with the
    model's `score`. `p_value` is the usual test of r = 0 with items as the
    units (scipy). `group` names the column holding each participant's group
    (no default: it is the study's own column).

    This is the raw correlation of Watson et al. (2023). It is attenuated by
    the noise in the group's item means, more so for smaller groups; for the
    alignment itself use `gbstats.alignment.reliability.group_reliability`
    (README: "Which alignment number to cite").

    CI (`ci_method`):
    - "two_way_centred" (default): `n_boot` replicates that resample the
      items (the same draw for every group) and the group's participants,
      every item mean recomputed; the replicates, recentred on r on the
      Fisher-z scale, give a percentile interval
      (`gbstats.alignment.reliability.centred_percentile_interval`). With
      method="spearman" each replicate ranks the resampled items' values
      once per distinct item (ties from repeated items are not re-ranked).
    - "two_way_bc": the same replicates, bias-corrected percentile interval
      (`gbstats.alignment.reliability.bc_interval`). Kept for comparison: it
      was the default until issue 25, which found it about .019 above r
      (duplicated people shrink the replicates, and BC corrects their median,
      not their mean) and covering .912 against its target.
    - "participant_percentile": the earlier interval, participants only,
      percentile. Kept for comparison: resampling people with replacement
      makes the item means noisier and shrinks |r|, so this interval can
      miss its own estimate, and it ignores that items are a sample
      (benchmarks/alignment_calibration.py: coverage_participant_only).

    Every rated item needs a score (else an error). Scored items the group
    never rated are counted in n_items_unrated and left out of that group's r.

    Returns one row per group: group, method, r, ci_low, ci_high, p_value,
    n_items, n_items_unrated, n_participants, n_obs, n_boot (resamples with a
    defined r).
    """
    if method not in ("pearson", "spearman"):
        raise UnknownNameError("correlation method", str(method), ["pearson", "spearman"])
    if ci_method not in CORRELATION_CI_METHODS:
        raise UnknownNameError("correlation CI method", str(ci_method),
                               list(CORRELATION_CI_METHODS))
    check_n_resamples(n_boot, "n_boot")
    check_probability(confidence, "confidence")
    frame, scores = prepare_rating_frame(item_scores, trials, participant=participant,
                                          group=group, score=score, rating=rating,
                                          item_keys=item_keys)
    x_all = scores["_score"].to_numpy()
    rng = np.random.default_rng(seed)
    # one item draw per replicate, shared by every group (they rated the same items)
    item_draws = rng.multinomial(len(scores), np.full(len(scores), 1.0 / len(scores)),
                                 size=n_boot).astype(float)
    records = []
    for g in ordered_levels(frame[group]):
        sub, sums, counts, rated, means = _group_item_means(
            frame, scores, g, group=group, participant=participant)
        x, y = x_all[rated], means[rated]
        if rated.sum() < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
            raise DataValidationError(
                f"the correlation for group {g!r} is undefined", source="trials",
                column=group, expected="at least 3 rated items, with varying scores and "
                                       "varying mean ratings",
                found=f"{int(rated.sum())} rated item(s); score range {np.ptp(x):g}, "
                      f"mean-rating range {np.ptp(y):g}")
        test = stats.pearsonr(x, y) if method == "pearson" else stats.spearmanr(x, y)
        n_p = sums.shape[0]
        weights = rng.multinomial(n_p, np.full(n_p, 1.0 / n_p), size=n_boot).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            boot_means = (weights @ sums[:, rated]) / (weights @ counts[:, rated])
        if ci_method == "participant_percentile":
            boot_r = _rowwise_correlation(x, boot_means, method)
            low, high, n_valid = _percentile_ci(boot_r[:, None], confidence)
        else:
            from gbstats.alignment.reliability import (bc_interval,
                                                       centred_percentile_interval,
                                                       weighted_correlation)

            xs, ys = x, boot_means
            if method == "spearman":
                xs = stats.rankdata(x)
                ys = stats.rankdata(np.where(np.isnan(boot_means), np.inf, boot_means), axis=1)
                ys[np.isnan(boot_means)] = np.nan
            boot_r = weighted_correlation(xs, ys, item_draws[:, rated])
            interval = (centred_percentile_interval if ci_method == "two_way_centred"
                        else bc_interval)
            low, high, n_valid = interval(float(test[0]), boot_r, confidence)
            low, high, n_valid = np.array([low]), np.array([high]), np.array([n_valid])
        records.append({
            "group": g, "method": method, "r": float(test[0]), "ci_low": low[0],
            "ci_high": high[0], "p_value": float(test[1]), "n_items": int(rated.sum()),
            "n_items_unrated": int((~rated).sum()), "n_participants": n_p,
            "n_obs": len(sub), "n_boot": int(n_valid[0])})
    return pd.DataFrame.from_records(records, columns=CORRELATION_COLUMNS)


def compare_dependent_correlations(r_xy1: float, r_xy2: float, r_y1y2: float, n: int, *,
                                   confidence: float = 0.95) -> pd.DataFrame:
    """Compare two correlations that share the variable x, measured on the same n units.

    Here x is the model's item score, y1 and y2 are two groups' mean ratings
    of the same n items: r_xy1 and r_xy2 are dependent because y1 and y2 are
    correlated through the items (r_y1y2), even though different people
    produced them.

    Test: Steiger (1980), Psychological Bulletin 87(2), 245-251, eq. 15 with
    the pooled correlation (his Z1*, as in R's cocor "steiger1980"):
        rbar = (r_xy1 + r_xy2) / 2
        psi  = r_y1y2 (1 - 2 rbar^2) - rbar^2 (1 - 2 rbar^2 - r_y1y2^2) / 2
        c    = psi / (1 - rbar^2)^2
        Z    = (atanh r_xy1 - atanh r_xy2) sqrt(n - 3) / sqrt(2 - 2c)
    two-sided p = 2 (1 - Phi(|Z|)).

    Interval: Zou (2007), Psychological Methods 12(4), 399-413, for the
    difference r_xy1 - r_xy2 of overlapping correlations. With (l_i, u_i)
    the Fisher-z CIs of each r and
        c = ((r_y1y2 - r_xy1 r_xy2 / 2)(1 - r_xy1^2 - r_xy2^2 - r_y1y2^2) + r_y1y2^3)
            / ((1 - r_xy1^2)(1 - r_xy2^2)),
        L = d - sqrt((r_xy1 - l1)^2 + (u2 - r_xy2)^2 - 2c (r_xy1 - l1)(u2 - r_xy2))
        U = d + sqrt((u1 - r_xy1)^2 + (r_xy2 - l2)^2 - 2c (u1 - r_xy1)(r_xy2 - l2)).

    Both treat the n items as the sampled units and the item means as exact;
    for uncertainty from the participants, use the bootstrap CIs of
    `group_correlations`. For Spearman correlations they are the usual
    large-sample approximation.

    Returns one row: r_xy1, r_xy2, r_y1y2, n, difference (r_xy1 - r_xy2),
    statistic (Steiger's Z), p_value, ci_low, ci_high (Zou), ci_level, test,
    ci_method.
    """
    check_probability(confidence, "confidence")
    values = {"r_xy1": r_xy1, "r_xy2": r_xy2, "r_y1y2": r_y1y2}
    for name, r in values.items():
        if not np.isfinite(r) or abs(r) >= 1:
            raise DataValidationError(
                "a correlation must lie strictly between -1 and 1 for the Fisher "
                "transform", source=name, expected="-1 < r < 1", found=repr(r))
    if int(n) != n or n < 4:
        raise DataValidationError("too few units for the dependent-correlation test",
                                  source="n", expected="an integer n >= 4 (the test uses "
                                  "n - 3)", found=repr(n))
    det = 1 - r_xy1 ** 2 - r_xy2 ** 2 - r_y1y2 ** 2 + 2 * r_xy1 * r_xy2 * r_y1y2
    if det < 0:
        raise DataValidationError(
            "these three correlations cannot hold together (their correlation matrix is "
            "not positive semi-definite)", source="r_xy1, r_xy2, r_y1y2",
            expected="a valid 3 x 3 correlation matrix",
            found=f"determinant {det:.4g}")
    rbar = (r_xy1 + r_xy2) / 2
    psi = r_y1y2 * (1 - 2 * rbar ** 2) - 0.5 * rbar ** 2 * (1 - 2 * rbar ** 2 - r_y1y2 ** 2)
    c_steiger = psi / (1 - rbar ** 2) ** 2
    z = (np.arctanh(r_xy1) - np.arctanh(r_xy2)) * np.sqrt(n - 3) / np.sqrt(2 - 2 * c_steiger)
    p_value = 2 * stats.norm.sf(abs(z))

    crit = stats.norm.ppf(1 - (1 - confidence) / 2)
    half = crit / np.sqrt(n - 3)
    l1, u1 = np.tanh(np.arctanh(r_xy1) - half), np.tanh(np.arctanh(r_xy1) + half)
    l2, u2 = np.tanh(np.arctanh(r_xy2) - half), np.tanh(np.arctanh(r_xy2) + half)
    c_zou = (((r_y1y2 - 0.5 * r_xy1 * r_xy2) * (1 - r_xy1 ** 2 - r_xy2 ** 2 - r_y1y2 ** 2)
              + r_y1y2 ** 3) / ((1 - r_xy1 ** 2) * (1 - r_xy2 ** 2)))
    d = r_xy1 - r_xy2
    low = d - np.sqrt((r_xy1 - l1) ** 2 + (u2 - r_xy2) ** 2
                      - 2 * c_zou * (r_xy1 - l1) * (u2 - r_xy2))
    high = d + np.sqrt((u1 - r_xy1) ** 2 + (r_xy2 - l2) ** 2
                       - 2 * c_zou * (u1 - r_xy1) * (r_xy2 - l2))
    return pd.DataFrame([{
        "r_xy1": float(r_xy1), "r_xy2": float(r_xy2), "r_y1y2": float(r_y1y2), "n": int(n),
        "difference": float(d), "statistic": float(z), "p_value": float(p_value),
        "ci_low": float(low), "ci_high": float(high), "ci_level": confidence,
        "test": "steiger1980_z", "ci_method": "zou2007"}],
        columns=DEPENDENT_CORRELATION_COLUMNS)


def compare_group_correlations(item_scores: pd.DataFrame, trials: pd.DataFrame, *,
                               group: str, score: str = "surprisal",
                               rating: str = "rating", item_keys: Sequence[str] = ("item",),
                               participant: str = "participant", method: str = "pearson",
                               groups: tuple | None = None,
                               confidence: float = 0.95) -> pd.DataFrame:
    """Is the model's score correlated more strongly with one group's ratings than another's?

    Computes each group's item means, takes the items both groups rated, and
    applies `compare_dependent_correlations` with x = score, y1 = the first
    group's means, y2 = the second's, r_y1y2 = their correlation over the same
    items. Without `groups`, compares the two groups with the largest |r|
    (the strongest alignment, whatever the sign: surprisal correlates
    negatively with naturalness ratings). group_best is the one with larger |r|.

    Returns the row of `compare_dependent_correlations` with group_best and
    group_next in front.
    """
    if method not in ("pearson", "spearman"):
        raise UnknownNameError("correlation method", str(method), ["pearson", "spearman"])
    check_probability(confidence, "confidence")
    frame, scores = prepare_rating_frame(item_scores, trials, participant=participant,
                                          group=group, score=score, rating=rating,
                                          item_keys=item_keys)
    x_all = scores["_score"].to_numpy()
    all_groups = ordered_levels(frame[group])
    candidates = tuple(groups) if groups is not None else tuple(all_groups)
    for g in candidates:
        if g not in all_groups:
            raise UnknownNameError("group", str(g), [str(x) for x in all_groups])
    if len(candidates) < 2 or (groups is not None and (len(candidates) != 2
                                                       or candidates[0] == candidates[1])):
        raise DataValidationError("a comparison needs two different groups", source="groups",
                                  expected="two groups", found=repr(candidates))
    corr = stats.pearsonr if method == "pearson" else stats.spearmanr
    rated, means, r = {}, {}, {}
    for g in candidates:
        _, _, _, rated[g], means[g] = _group_item_means(frame, scores, g, group=group,
                                                        participant=participant)
        if rated[g].sum() < 3:
            raise DataValidationError(
                f"the correlation for group {g!r} is undefined", source="trials", column=group,
                expected="at least 3 rated items", found=f"{int(rated[g].sum())} rated item(s)")
        r[g] = float(corr(x_all[rated[g]], means[g][rated[g]])[0])
    best, nxt = sorted(candidates, key=lambda g: abs(r[g]), reverse=True)[:2]
    common = rated[best] & rated[nxt]
    if common.sum() < 4:
        # disjoint item sets raised a raw ValueError from scipy (issue 44)
        raise DataValidationError(
            f"groups {best!r} and {nxt!r} rated {int(common.sum())} item(s) in common; the "
            "dependent-correlation test compares them on the same items", source="trials",
            column=group, expected="at least 4 items rated by both groups",
            found=f"{int(common.sum())} shared item(s)")
    x, y1, y2 = x_all[common], means[best][common], means[nxt][common]
    row = compare_dependent_correlations(float(corr(x, y1)[0]), float(corr(x, y2)[0]),
                                         float(corr(y1, y2)[0]), int(common.sum()),
                                         confidence=confidence)
    row.insert(0, "group_next", nxt)
    row.insert(0, "group_best", best)
    row.insert(2, "method", method)
    return row

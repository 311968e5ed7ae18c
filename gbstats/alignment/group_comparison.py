"""Group comparisons people can cite: one primary test, Holm within its family, an
equivalence bound, and the ceiling that the groups' own agreement puts on the question.

"Does the model resemble men more than non-male participants?" has four parts, and a
report that gives one of them alone can mislead:

1. **The ceiling** (`profile_agreement`). If the two groups answer the items alike, no
   model can resemble one much more than the other. With m_a, m_b the groups' true item
   profiles and rho_ab their correlation over items, for ANY model score x

       |corr(x, m_a) - corr(x, m_b)| <= sqrt(2 (1 - rho_ab))

   (standardise the three vectors over items; a correlation is then an inner product,
   and |<x, a> - <x, b>| = |<x, a - b>| <= |a - b| = sqrt(2 - 2 rho_ab) by
   Cauchy-Schwarz). rho_ab is estimated by the correlation of the groups' item means
   corrected for the noise of both (r_ab / sqrt(rel_a rel_b), split-half reliabilities
   as in `gbstats.alignment.reliability`), so the bound is on the alignments the
   corrected correlations estimate. Groups whose profiles agree at .97 leave room for a
   difference of at most .24, whatever the model.
2. **The primary test**: the difference of corrected correlations
   (`compare_corrected_correlations`), which tests equal alignment. It is declared
   primary in the table (`primary`), so a reader knows which p-value the conclusion
   rests on.
3. **Holm within the family** (`holm_within_families`): the primary tests of one
   question (e.g. two experiments) form one family; secondary views (a mixed model's
   interaction, per-condition comparisons) form their own.
4. **Equivalence** (`equivalence_p_value`): "no evidence of a difference" is not
   "equivalent". Two one-sided z tests (TOST; Schuirmann 1987) of |difference| >= bound
   with the comparison's own SE; p_equivalence < alpha means the (1 - 2 alpha) interval
   lies inside -bound..bound. `smallest_equivalence_bound` is the tightest bound these
   data could establish. The TOST p-values are Holm-adjusted within the family as the
   difference tests are (`holm_equivalence`, `p_equivalence_holm`). `verdict` states the
   conclusion in words that match the evidence (on the adjusted p-values): a difference,
   equivalence within the bound, or no evidence either way.

The equivalence claim's false-positive rate at the bound (true difference exactly
equal to the bound) is calibrated by `benchmarks/group_comparison_calibration.py`
(`benchmarks/results/group_comparison_calibration.json`): 0-2% in three designs, one of
them shaped like each of Gardner & Brown-Schmidt's (2024) production experiments. The
same runs put the primary test's false-positive rate at 3.5-4.0%, except in the sparse
Exp 3 shaped design (each person sees 7 of 63 items), where it was 9.0% (README, "How well
these are calibrated").
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from gbstats.alignment.ratings import check_n_resamples
from gbstats.alignment.reliability import (GroupRatings, group_alignment, multinomial_weights,
                                           random_halves, rating_matrices, reliability_rows,
                                           weighted_correlation, weighted_item_means)
from gbstats.blas import on_one_blas_thread
from gbstats.errors import DataValidationError, check_probability

# The default equivalence bound on the corrected-correlation scale: a difference in
# alignment smaller than .10 is treated as negligible. A study should state its own.
DEFAULT_EQUIVALENCE_BOUND = 0.10
PROFILE_COLUMNS = ["group_a", "group_b", "r_profiles", "reliability_a", "reliability_b",
                   "r_profiles_corrected", "ci_low", "ci_high", "max_alignment_difference",
                   "max_alignment_difference_upper", "n_items", "n_boot", "ci_method"]
PROFILE_CI_METHOD = ("two-way bootstrap (items jointly, people within each group), percentile "
                     "interval of the corrected correlation; reliabilities recomputed per replicate")
COMPARISON_COLUMNS = ["family", "group_a", "group_b", "test", "primary", "scale", "estimate",
                      "se", "ci_low", "ci_high", "p_value", "p_holm", "family_size",
                      "equivalence_bound", "p_equivalence", "p_equivalence_holm",
                      "smallest_equivalence_bound", "verdict"]
VERDICTS = ("difference", "equivalent within the bound", "no evidence either way")

# `verdict`'s conclusions (and a study's own "not interpretable" for a fit that did not
# converge) in a word or two, for a table cell; VERDICT_NOTE says what each means
SHORT_VERDICTS = (("difference", "Difference"), ("equivalent", "Equivalent"),
                  ("no evidence either way", "Neither shown"),
                  ("no evidence of a difference", "No difference shown"),
                  ("not interpretable", "Not converged"), ("not computed", "Not computed"))
VERDICT_NOTE = ("Conclusion: Difference, Holm p < .05; Equivalent, within the equivalence "
                "bound by TOST (Holm p < .05); Neither shown, neither test rejects at this "
                "sensitivity; No difference shown, Holm p >= .05 where there is no equivalence "
                "bound; Not converged, lme4 did not converge, so the row is not evidence; Not "
                "computed, the comparison could not be estimated (the reason is in the notes) "
                "and is not one of its family's tests")


def short_verdict(verdict: str) -> str:
    for start, words in SHORT_VERDICTS:
        if str(verdict).startswith(start):
            return words
    return str(verdict)


# --------------------------------------------------------------------------
# 1. the ceiling: how far the groups' item profiles differ at all
# --------------------------------------------------------------------------

def group_rating_matrices(trials: pd.DataFrame, *, group: str, rating: str,
                          item_keys: Sequence[str] = ("item",), participant: str = "participant"
                          ) -> tuple[pd.DataFrame, list[GroupRatings]]:
    """(items, [GroupRatings per group]) from long trials, without a model score: the
    items are every item key combination in `trials`, in sorted order (validated as
    `gbstats.alignment.reliability.rating_matrices` validates, which builds them)."""
    item_keys = list(item_keys)
    missing = [c for c in item_keys if c not in trials.columns]
    if missing:
        raise DataValidationError("missing column(s) for the profile agreement", source="trials",
                                  column=missing[0], expected=f"columns {item_keys}",
                                  found=f"columns {list(trials.columns)}")
    items = trials[item_keys].dropna().drop_duplicates().sort_values(item_keys)
    # the profiles need no model score: a constant one makes the item table
    _, groups = rating_matrices(items.assign(_no_score=0.0), trials, group=group,
                                score="_no_score", rating=rating, item_keys=item_keys,
                                participant=participant)
    return items.reset_index(drop=True), groups


def max_alignment_difference(rho_ab) -> np.ndarray:
    """The largest |corr(x, m_a) - corr(x, m_b)| any score x can reach when the profiles
    m_a, m_b correlate rho_ab: sqrt(2 (1 - rho_ab)), rho_ab bounded to [-1, 1] (module
    docstring), so the ceiling lies in [0, 2]: a corrected rho of -10 (noise) used to give a
    "ceiling" of 3.3, above the 2 that two correlations can differ by (issue 44, case 5)."""
    rho = np.clip(np.asarray(rho_ab, dtype=float), -1.0, 1.0)
    return np.sqrt(2 * (1 - rho))


def profile_bounds_notes(table: pd.DataFrame, context: Sequence[str] = ()) -> list[str]:
    """Sentences for the rows of a profile-agreement table (PROFILE_COLUMNS) whose ceiling
    is not what it seems, [] when none (issue 44, cases 5 and 6). The documented values:

    - a group's split-half reliability not positive (pure noise, or too few raters): the
      corrected r and the ceiling are not computed (NaN); nothing about the ceiling is known;
    - a corrected r above 1: the ceiling is 0 ("no model could differ"), which is estimation
      noise unless the reliabilities are high; the ceiling at the interval's lower end is the
      one to read;
    - a corrected r or the interval's lower end below -1: the ceiling uses the bound (at most 2).

    `context`: columns whose values name a row beside its pair (a study's grouping).
    """
    from gbstats.alignment.reliability import context_words

    notes = []
    for row in table.itertuples(index=False):
        pair = f"{row.group_a} vs {row.group_b}{context_words(row, context)}"
        rels = {row.group_a: float(row.reliability_a), row.group_b: float(row.reliability_b)}
        bad = [f"{g} {v:.3g}" for g, v in rels.items() if not np.isfinite(v) or v <= 0]
        if bad:
            notes.append(
                f"{pair}: the ceiling is not computed, because a split-half reliability is "
                f"not positive ({', '.join(bad)}): at this size that group's item means hold "
                "no reliable differences, so how far the two profiles differ is unknown.")
            continue
        point = float(row.r_profiles_corrected)
        if np.isfinite(point) and point > 1:
            notes.append(
                f"{pair}: the corrected r of the profiles is {point:.3g}, above 1 (noise, with "
                f"reliabilities {row.reliability_a:.3g} and {row.reliability_b:.3g}), so the "
                "ceiling shows as 0; that is not evidence that no model could differ: read "
                f"the ceiling at the interval's lower end ({row.max_alignment_difference_upper:.3g}).")
        elif any(np.isfinite(v) and v < -1 for v in (point, row.ci_low)):
            # (an upper end above 1 is common at high reliability and moves no ceiling; the
            # tables show it at the bound with their own note)
            notes.append(
                f"{pair}: the corrected r of the profiles or the lower end of its interval lies "
                f"below -1 (reliabilities {row.reliability_a:.3g} and "
                f"{row.reliability_b:.3g}); the ceiling uses the bound, so it is at most 2.")
    return notes


def _profile_statistics(a: GroupRatings, b: GroupRatings, wa: np.ndarray, wb: np.ndarray,
                        item_weights: np.ndarray, halves_a: np.ndarray, halves_b: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(r_ab, rel_a, rel_b) for each row of person weights (wa, wb) and item weights."""
    r = weighted_correlation(weighted_item_means(wa, a.sums, a.counts),
                             weighted_item_means(wb, b.sums, b.counts), item_weights)
    rel_a = reliability_rows(wa, item_weights, a.sums, a.counts, halves_a)
    rel_b = reliability_rows(wb, item_weights, b.sums, b.counts, halves_b)
    return r, rel_a, rel_b


def _corrected(r, rel_a, rel_b) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((rel_a > 0) & (rel_b > 0), r / np.sqrt(rel_a * rel_b), np.nan)


@on_one_blas_thread  # thousands of small matrix products (gbstats.blas)
def profile_agreement_from_matrices(groups: Sequence[GroupRatings], *, n_splits: int = 200,
                                    n_boot: int = 500, n_boot_splits: int = 20,
                                    confidence: float = 0.95, rng: np.random.Generator,
                                    item_clusters: np.ndarray | None = None) -> pd.DataFrame:
    """`profile_agreement` on matrices (every group's matrices over the same items);
    `item_clusters`: one label per item, to resample clusters of items whole."""
    from gbstats.alignment.reliability import item_multinomial

    rows = []
    tail = (1 - confidence) / 2
    for pos, a in enumerate(groups):
        for b in groups[pos + 1:]:
            n_items = a.sums.shape[1]
            common = int(((a.counts.sum(axis=0) > 0) & (b.counts.sum(axis=0) > 0)).sum())
            if common < 3:
                # disjoint item sets gave an all-NaN row (issue 44): there is no profile
                # to compare, so it is an error that says which groups and how many items
                raise DataValidationError(
                    f"groups {a.group!r} and {b.group!r} rated {common} item(s) in common, so "
                    "their item profiles cannot be correlated", source="trials",
                    expected="at least 3 items rated by both groups",
                    found=f"{common} shared item(s)")
            ones_a, ones_b = np.ones((1, a.n_participants)), np.ones((1, b.n_participants))
            r, rel_a, rel_b = _profile_statistics(
                a, b, ones_a, ones_b, np.ones(n_items),
                random_halves(a.n_participants, n_splits, rng),
                random_halves(b.n_participants, n_splits, rng))
            point = float(_corrected(r, rel_a, rel_b)[0])
            halves_a = random_halves(a.n_participants, n_boot_splits, rng)
            halves_b = random_halves(b.n_participants, n_boot_splits, rng)
            reps = []
            for start in range(0, n_boot, 50):
                k = min(50, n_boot - start)
                reps.append(_corrected(*_profile_statistics(
                    a, b, multinomial_weights(a.n_participants, k, rng),
                    multinomial_weights(b.n_participants, k, rng),
                    item_multinomial(n_items, k, rng, item_clusters), halves_a, halves_b)))
            reps = np.concatenate(reps)
            reps = reps[np.isfinite(reps)]
            low, high = (np.quantile(reps, [tail, 1 - tail]) if reps.size > 1
                         else (np.nan, np.nan))
            rated = (a.counts.sum(axis=0) > 0) & (b.counts.sum(axis=0) > 0)
            rows.append({
                "group_a": a.group, "group_b": b.group, "r_profiles": float(r[0]),
                "reliability_a": float(rel_a[0]), "reliability_b": float(rel_b[0]),
                "r_profiles_corrected": point, "ci_low": float(low), "ci_high": float(high),
                "max_alignment_difference": float(max_alignment_difference(point)),
                "max_alignment_difference_upper": float(max_alignment_difference(low)),
                "n_items": int(rated.sum()), "n_boot": int(reps.size),
                "ci_method": PROFILE_CI_METHOD})
    table = pd.DataFrame(rows, columns=PROFILE_COLUMNS)
    from gbstats.alignment.reliability import warn_estimates

    warn_estimates(profile_bounds_notes(table))
    return table


def profile_agreement(trials: pd.DataFrame, *, group: str, rating: str,
                      item_keys: Sequence[str] = ("item",), participant: str = "participant",
                      n_splits: int = 200, n_boot: int = 500, n_boot_splits: int = 20,
                      seed: int = 0, confidence: float = 0.95,
                      item_cluster: str | None = None) -> pd.DataFrame:
    """How far the groups' item profiles differ at all: for every pair of groups, the
    correlation of their item means over the items (`r_profiles`), each group's
    split-half reliability, the correlation corrected for both (`r_profiles_corrected`,
    which estimates rho_ab and can exceed 1 by noise), its two-way bootstrap interval,
    and the ceiling it puts on any model's difference in alignment between the groups,
    `max_alignment_difference` = sqrt(2 (1 - rho_ab)), also at the interval's lower end
    (`max_alignment_difference_upper`). PROFILE_COLUMNS, one row per pair.

    The interval resamples items (jointly for both groups) and people (within each
    group), the pigeonhole bootstrap, which counts the rating noise of the item means
    twice (`gbstats.alignment.reliability`, module docstring), so it errs wide;
    `benchmarks/group_comparison_calibration.py` records its coverage.

    Where a group's reliability is not positive the corrected r and the ceiling are NaN (not
    computed); a corrected r above 1 gives a ceiling of 0; the ceilings are bounded to
    [0, 2]. Each of these is said in an EstimateWarning (gbstats.errors), and
    `profile_bounds_notes` gives the same sentences for a report (issue 44, case 6).

    `item_cluster`: a column of `trials` naming the unit the items cluster in (first names
    in name_gender, issue 40); the bootstrap then draws those units whole, and a column
    `resampled` records it. Each item must belong to one cluster.
    """
    for value, name in ((n_boot, "n_boot"), (n_splits, "n_splits"),
                        (n_boot_splits, "n_boot_splits")):
        check_n_resamples(value, name)
    check_probability(confidence, "confidence")
    items, groups = group_rating_matrices(trials, group=group, rating=rating,
                                          item_keys=item_keys, participant=participant)
    if len(groups) < 2:
        raise DataValidationError("a profile agreement needs two groups", source="trials",
                                  column=group, expected="two or more groups",
                                  found=f"{[g.group for g in groups]}")
    clusters = (None if item_cluster is None
                else item_clusters_of(trials, items, list(item_keys), item_cluster))
    table = profile_agreement_from_matrices(groups, n_splits=n_splits, n_boot=n_boot,
                                            n_boot_splits=n_boot_splits,
                                            confidence=confidence,
                                            rng=np.random.default_rng(seed),
                                            item_clusters=clusters)
    if item_cluster is None:
        return table
    # the resampling unit, recorded in results.json (issue 40, item 3)
    return table.assign(resampled=f"participants x clusters of items ({item_cluster})")


def item_clusters_of(trials: pd.DataFrame, items: pd.DataFrame, item_keys: list[str],
                     cluster: str) -> np.ndarray:
    """The cluster label of each item of `items` (in its order), read from `trials`; an item
    in two clusters, or without one, is an error."""
    if cluster not in trials.columns:
        raise DataValidationError("the item cluster column is missing", source="trials",
                                  column=cluster, expected=f"a column {cluster!r}",
                                  found=f"columns {list(trials.columns)}")
    per_item = trials.dropna(subset=item_keys).groupby(item_keys)[cluster].agg(
        lambda v: v.dropna().astype(str).unique().tolist())
    bad = per_item[per_item.map(len) != 1]
    if len(bad):
        raise DataValidationError("each item must lie in exactly one cluster", source="trials",
                                  column=cluster, expected="one cluster per item",
                                  found=f"item {bad.index[0]!r}: {bad.iloc[0]}")
    keys = pd.MultiIndex.from_frame(items[item_keys]) if len(item_keys) > 1 \
        else pd.Index(items[item_keys[0]])
    return np.array([labels[0] for labels in per_item.reindex(keys)])


# --------------------------------------------------------------------------
# 2-4. the primary test, equivalence, Holm, the verdict
# --------------------------------------------------------------------------

def equivalence_p_value(estimate, se, bound) -> np.ndarray:
    """TOST p-value of |true difference| >= bound against |true difference| < bound:
    max of the two one-sided z tests, max(P(Z > (d + bound) / se), P(Z < (d - bound) / se)).
    NaN where the bound or the SE is missing."""
    d, s, b = (np.asarray(v, dtype=float) for v in (estimate, se, bound))
    if (np.isfinite(b) & (b < 0)).any():
        # a bound of -0.1 read as "no bound" and gave "no evidence of a difference" (issue 44)
        raise DataValidationError("an equivalence bound is a distance: it cannot be negative",
                                  source="equivalence_bound",
                                  expected="a bound > 0 (or NaN for no bound)",
                                  found=f"{b[np.isfinite(b) & (b < 0)].ravel()[0]:g}")
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = stats.norm.sf((d + b) / s)        # H0: d <= -bound
        upper = stats.norm.cdf((d - b) / s)       # H0: d >= +bound
    return np.where((b > 0) & (s > 0), np.maximum(lower, upper), np.nan)


def smallest_equivalence_bound(estimate, se, alpha: float = 0.05) -> np.ndarray:
    """The smallest bound at which TOST at `alpha` would claim equivalence: the larger
    |end| of the (1 - 2 alpha) interval, |d| + z_(1 - alpha) se."""
    check_probability(alpha, "alpha")
    d, s = np.asarray(estimate, dtype=float), np.asarray(se, dtype=float)
    return np.abs(d) + stats.norm.ppf(1 - alpha) * s


def verdict(p_adjusted: float, p_equivalence: float, bound: float, alpha: float = 0.05) -> str:
    """The conclusion in words that match the evidence (VERDICTS): a difference when the
    Holm-adjusted p is below alpha; equivalence when the TOST p is below alpha; else no
    evidence either way at this sensitivity."""
    check_probability(alpha, "alpha")
    if np.isfinite(p_adjusted) and p_adjusted < alpha:
        return VERDICTS[0]
    if np.isfinite(p_equivalence) and p_equivalence < alpha:
        return f"{VERDICTS[1]} (+/-{bound:g})"
    if np.isfinite(bound) and bound > 0:
        return f"{VERDICTS[2]} at this sensitivity"
    return "no evidence of a difference (no equivalence bound on this scale)"


def holm_within_families(table: pd.DataFrame, family: str = "family",
                         column: str = "p_value") -> pd.DataFrame:
    """`table` with p_holm and family_size: Holm within each family of tests (rows with
    a missing p-value get NaN and do not count towards their family's size)."""
    from gbstats.inference.hypothesis_tests import correct_within_families

    out = table.copy()
    out["p_holm"], out["family_size"] = np.nan, 0
    tested = out[column].notna()
    if tested.any():
        adjusted = correct_within_families(out[tested], family, "holm", column=column)
        out.loc[tested, "p_holm"] = adjusted["p_adjusted"].to_numpy()
        out.loc[tested, "family_size"] = adjusted["family_size"].to_numpy()
    return out


def holm_equivalence(table: pd.DataFrame, family: str = "family",
                     column: str = "p_equivalence") -> pd.Series:
    """The TOST p-values Holm-adjusted within each family, as the difference tests are:
    claiming equivalence for every test of a family is as many claims as there are tests.
    NaN where a row has no equivalence bound (it does not count towards its family)."""
    rows = table[[family]].assign(p_value=table[column].to_numpy())
    return holm_within_families(rows, family)["p_holm"]


def finish_comparisons(rows: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Holm within each family, the equivalence test where a bound is given (its p-value
    Holm-adjusted within the family too), and the verdict on the adjusted p-values, for a
    table of group comparisons (one row per test) with at least family, group_a, group_b,
    test, primary, scale, estimate, se, ci_low, ci_high, p_value and equivalence_bound (NaN: no bound on this scale). Returns COMPARISON_COLUMNS."""
    check_probability(alpha, "alpha")
    missing = [c for c in COMPARISON_COLUMNS if c not in rows.columns
               and c not in ("p_holm", "family_size", "p_equivalence", "p_equivalence_holm",
                             "smallest_equivalence_bound", "verdict")]
    if missing:
        raise DataValidationError("a group-comparison table without its columns",
                                  source="group comparisons", column=missing[0],
                                  expected=f"columns {COMPARISON_COLUMNS}",
                                  found=f"columns {list(rows.columns)}")
    primaries = rows.groupby("family")["primary"].agg(lambda s: set(map(bool, s)))
    mixed = [f for f, kinds in primaries.items() if len(kinds) > 1]
    if mixed:
        raise DataValidationError("a family mixing primary and secondary tests",
                                  source="group comparisons", column="primary",
                                  expected="every test of a family primary, or none",
                                  found=f"family {mixed[0]!r}")
    out = holm_within_families(rows.reset_index(drop=True))
    out["p_equivalence"] = equivalence_p_value(out["estimate"], out["se"],
                                               out["equivalence_bound"])
    out["smallest_equivalence_bound"] = smallest_equivalence_bound(out["estimate"], out["se"],
                                                                   alpha)
    out["p_equivalence_holm"] = holm_equivalence(out)
    out["verdict"] = [verdict(p, q, b, alpha) for p, q, b in
                      zip(out["p_holm"], out["p_equivalence_holm"], out["equivalence_bound"])]
    # a comparison that was never computed is neither a difference nor "neither shown"
    # (issue 44, case 5): it says so, with its reason, and is outside its Holm family
    untested = not_computed(out)
    if untested.any():
        reasons = (rows.reset_index(drop=True)["reason"] if "reason" in rows.columns
                   else pd.Series("", index=out.index)).fillna("")
        out.loc[untested, "verdict"] = [
            f"not computed ({r or 'no estimate or p-value'})" for r in reasons[untested]]
    return out[COMPARISON_COLUMNS]


def not_computed(table: pd.DataFrame) -> pd.Series:
    """Rows of a comparison table without an estimate, SE or p-value."""
    return table["estimate"].isna() | table["se"].isna() | table["p_value"].isna()


def holm_family_note(table: pd.DataFrame) -> str:
    """One sentence: how many tests each Holm family of a finished comparison table holds,
    and how many comparisons were not computed and are outside it (issue 44, case 5)."""
    parts = []
    for family, rows in table.groupby("family", sort=False):
        missing = int(not_computed(rows).sum())
        tested = len(rows) - missing
        part = f"{family}: {tested} test{'s' if tested != 1 else ''}"
        if missing:
            part += (f" ({missing} comparison{'s' if missing != 1 else ''} not computed, "
                     "outside the family)")
        parts.append(part)
    return "Holm families: " + "; ".join(parts) + "."


def corrected_comparison_rows(item_scores: pd.DataFrame, trials: pd.DataFrame, *, group: str,
                              score: str, rating: str, item_keys: Sequence[str] = ("item",),
                              participant: str = "participant",
                              equivalence_bound: float = DEFAULT_EQUIVALENCE_BOUND,
                              family: str = "primary", primary: bool = True,
                              n_splits: int = 200, n_var_boot: int = 200,
                              n_boot_splits: int = 20, n_boot: int = 1000, seed: int = 0,
                              confidence: float = 0.95, item_cluster: str | None = None
                              ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(reliability table, raw-r table, comparison rows) from one set of replicates
    (`gbstats.alignment.reliability.group_alignment`): the comparison rows carry the
    columns `finish_comparisons` reads, test "difference of corrected correlations".
    `item_cluster`: a column of `item_scores` naming the unit the items cluster in; the
    bootstrap then draws those units whole (recorded in the row's `resampling_unit`)."""
    rel, raw, comparison = group_alignment(
        item_scores, trials, group=group, score=score, rating=rating, item_keys=item_keys,
        participant=participant, n_splits=n_splits, n_boot=n_boot, n_var_boot=n_var_boot,
        n_boot_splits=n_boot_splits, seed=seed, confidence=confidence,
        item_cluster=item_cluster)
    unit = "items" if item_cluster is None else f"clusters of items ({item_cluster})"
    rows = pd.DataFrame({
        "family": family, "group_a": comparison["group_a"], "group_b": comparison["group_b"],
        "test": f"difference of corrected correlations (z, {unit} and people resampled)",
        "resampling_unit": f"{unit} jointly for both groups; people within each group",
        "primary": primary, "scale": "corrected correlation",
        "estimate": comparison["difference"], "se": comparison["se"],
        "ci_low": comparison["ci_low"], "ci_high": comparison["ci_high"],
        "p_value": comparison["p_value"], "equivalence_bound": float(equivalence_bound),
        "reason": [_no_corrected_reason(rel, a, b) for a, b in
                   zip(comparison["group_a"], comparison["group_b"])]})
    return rel, raw, rows


def _no_corrected_reason(rel: pd.DataFrame, a, b) -> str:
    """Why a pair has no difference of corrected correlations ('' when it has one)."""
    by_group = rel.set_index("group")
    missing = [f"{g}'s reliability {by_group.loc[g, 'reliability']:.3g} is not positive"
               for g in (a, b) if not np.isfinite(by_group.loc[g, "r_corrected"])]
    return ("no corrected correlation: " + " and ".join(missing)) if missing else ""

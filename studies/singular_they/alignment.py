"""RQ2 of the singular-*they* study: which group of people does the model resemble?

Three views, in the order the report gives them (gbstats README, "Which
alignment number to cite"):

1. `reliability_table`: per grouping, item set and group, the split-half
   reliability of the group's item means, its noise ceiling, and the model's
   correlation with the group corrected for attenuation, with a two-way
   bootstrap interval (gbstats.alignment.reliability). This is the alignment
   itself, not a property of how many people a group has.
   `corrected_tables` also gives pairwise tests of equal corrected correlations.
2. `size_matched_table`: every group subsampled to the smallest group's size,
   then compared pairwise (equal raw r at that size; not a test of equal alignment).
3. `alignment_lmm_table`: `rating ~ score_z * group + (1 + score_z |
   participant) + (1 | item) + (1 | item_group)` with lme4 (and PyMC), whose
   score_z:group terms are the alignment differences (gbstats.alignment.mixed_model).

The raw correlations of Watson et al. (2023) stay in
`studies.singular_they.analysis.alignment_correlations`, for comparability.
`holm_families` adds Holm-adjusted p-values within named families of tests
(issue 19, item 8).
"""
from __future__ import annotations

import pandas as pd

from studies.singular_they.analysis import ITEM_SETS, usable_groupings

# the model score every corrected view uses: surprisal (bits), the paper's measure
SCORE = "surprisal"
LMM_ITEM_SET = "all items"
GROUP_RELIABILITY_FIELDS = ["grouping", "item_set", "group", "reliability", "noise_ceiling",
                            "r", "r_corrected", "se", "ci_low", "ci_high", "n_items",
                            "n_participants", "n_boot_undefined", "below_calibrated_design"]
CORRECTED_COMPARISON_FIELDS = ["grouping", "item_set", "group_a", "group_b", "r_corrected_a",
                               "r_corrected_b", "difference", "se", "ci_low", "ci_high",
                               "statistic", "p_value"]
ALIGNMENT_LMM_FIELDS = ["grouping", "backend", "term", "estimate", "se", "ci_low", "ci_high",
                        "df", "p_value"]


def _subsets(scored: pd.DataFrame, human: pd.DataFrame, item_sets=None):
    """(grouping, present groups, item set name, items, trials) for every combination."""
    for grouping, order in usable_groupings(human).items():
        trials = human[human[grouping].notna()]
        present = [g for g in order if g in set(trials[grouping])]
        for set_name, select in ITEM_SETS.items():
            if item_sets is not None and set_name not in item_sets:
                continue
            items = select(scored)
            sub = trials[trials["item"].isin(items["item"])]
            sub = sub.assign(**{grouping: pd.Categorical(sub[grouping], present)})
            yield grouping, present, set_name, items[["item", SCORE]], sub


def corrected_tables(scored: pd.DataFrame, human: pd.DataFrame, *, n_boot: int, seed: int,
                     use_cache: bool = False, cache_dir=None
                     ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(reliability table, corrected comparisons) per grouping x item set, from one set of
    replicates (gbstats.alignment.reliability.group_alignment).

    The reliability table has a row per group: reliability, noise ceiling, corrected
    correlation and its interval. The comparisons test equal alignment for every pair
    of groups (difference of corrected correlations). Seeded bootstraps: with
    `use_cache` an unchanged computation is reused (gbstats.mixed.fit_cache.cached_call),
    so a re-run after a figure edit skips them.
    """
    from gbstats.alignment.reliability import group_alignment
    from gbstats.mixed.fit_cache import cached_call

    rel_rows, comp_rows = [], []
    for grouping, _, set_name, items, trials in _subsets(scored, human):
        (table, _, comparison), _ = cached_call(group_alignment, items, trials, group=grouping,
                                                score=SCORE, n_boot=n_boot, seed=seed,
                                                use_cache=use_cache, cache_dir=cache_dir)
        rel_rows.append(table.assign(grouping=grouping, item_set=set_name,
                                     group=table["group"].astype(str)))
        comp_rows.append(comparison.assign(grouping=grouping, item_set=set_name,
                                           group_a=comparison["group_a"].astype(str),
                                           group_b=comparison["group_b"].astype(str)))
    comparisons = pd.concat(comp_rows, ignore_index=True)
    return (pd.concat(rel_rows, ignore_index=True)[GROUP_RELIABILITY_FIELDS],
            comparisons[CORRECTED_COMPARISON_FIELDS])


def reliability_table(scored: pd.DataFrame, human: pd.DataFrame, *, n_boot: int,
                      seed: int, use_cache: bool = False, cache_dir=None) -> pd.DataFrame:
    """Reliability, noise ceiling and corrected correlation per grouping x item set x group
    (the first table of `corrected_tables`)."""
    return corrected_tables(scored, human, n_boot=n_boot, seed=seed, use_cache=use_cache,
                            cache_dir=cache_dir)[0]


def below_design_note(table: pd.DataFrame) -> str:
    """The reliability table's note on groups smaller than the benchmark's smallest design."""
    from gbstats.alignment.reliability import (MIN_CALIBRATED_ITEMS, MIN_CALIBRATED_PEOPLE,
                                               SPARSE_CALIBRATED_ITEMS,
                                               SPARSE_CALIBRATED_RATERS)

    small = table[table["below_calibrated_design"].astype(bool)]
    if small.empty:
        return ""
    which = ", ".join(sorted({f"{r.group} ({r.grouping}, {r.item_set})"
                              for r in small.itertuples()}))
    return (f" Smaller than the designs whose coverage the calibration benchmark shows "
            f"({MIN_CALIBRATED_ITEMS} items x {MIN_CALIBRATED_PEOPLE} raters per item, or "
            f"{SPARSE_CALIBRATED_ITEMS} items x {SPARSE_CALIBRATED_RATERS:g} raters per item), "
            f"so the interval is not calibrated for: {which}.")


def size_matched_table(scored: pd.DataFrame, human: pd.DataFrame, *, n_boot: int,
                       seed: int, use_cache: bool = False, cache_dir=None) -> pd.DataFrame:
    """Size-matched pairwise comparisons per grouping x item set (cached as above)."""
    from gbstats.alignment.reliability import compare_size_matched
    from gbstats.mixed.fit_cache import cached_call

    rows = []
    for grouping, _, set_name, items, trials in _subsets(scored, human):
        table, _ = cached_call(compare_size_matched, items, trials, group=grouping,
                               score=SCORE, n_boot=n_boot, seed=seed,
                               use_cache=use_cache, cache_dir=cache_dir)
        rows.append(table.assign(grouping=grouping, item_set=set_name))
    out = pd.concat(rows, ignore_index=True)
    out["group_a"], out["group_b"] = out["group_a"].astype(str), out["group_b"].astype(str)
    front = ["grouping", "item_set"]
    return out[front + [c for c in out.columns if c not in front and c != "test"]]


def alignment_lmm_table(scored: pd.DataFrame, human: pd.DataFrame, *, backends: list[str],
                        bayes: bool, draws: int, seed: int, use_cache: bool = False,
                        cache_dir=None) -> tuple[pd.DataFrame, dict]:
    """The alignment mixed model per grouping (all items), on every backend.

    The reference group is the first of the grouping's order (non-innovators;
    low acceptance), so each score_z:group[...] term is that group's slope minus
    the reference group's. Returns (table with ALIGNMENT_LMM_FIELDS, {grouping:
    {backend: FitResult}}).
    """
    from gbstats.alignment.mixed_model import fit_alignment_lmm

    tables, fits = [], {}
    for grouping, present, _, items, trials in _subsets(scored, human, [LMM_ITEM_SET]):
        table, fits[grouping] = fit_alignment_lmm(items, trials, group=grouping, score=SCORE,
                                                  group_order=present, backends=backends,
                                                  bayes=bayes, draws=draws, seed=seed,
                                                  use_cache=use_cache, cache_dir=cache_dir)
        tables.append(table.assign(grouping=grouping))
    return pd.concat(tables, ignore_index=True)[ALIGNMENT_LMM_FIELDS], fits


def holm_families(table: pd.DataFrame, family_of) -> pd.DataFrame:
    """Add `family` (family_of(row) for each row) and Holm-adjusted p-values within families.

    Rows without a p-value (e.g. Bayesian fits), or for which family_of returns
    None (tests that are not part of any claim, e.g. a model's intercept), get
    family "" and no adjustment.
    """
    from gbstats.inference.hypothesis_tests import correct_within_families

    if table.empty:
        return table
    out = table.copy()
    families = [family_of(row) for _, row in out.iterrows()]
    out["family"] = [f if f is not None else "" for f in families]
    has_p = out["p_value"].notna() & pd.Series([f is not None for f in families],
                                               index=out.index)
    out.loc[~has_p, "family"] = ""
    if has_p.any():
        adjusted = correct_within_families(out[has_p], "family", "holm")
        out.loc[has_p, "p_holm"] = adjusted["p_adjusted"]
        out.loc[has_p, "family_size"] = adjusted["family_size"]
    return out


def steiger_family(row) -> str:
    """Steiger comparisons: one family per grouping (all item sets, measures and pairs)."""
    return f"Steiger on raw r, by {row['grouping']}"


def corrected_comparison_family(row) -> str:
    return f"corrected r difference, by {row['grouping']}"


def size_matched_family(row) -> str:
    return f"size-matched, by {row['grouping']}"


def mann_whitney_family(row) -> str:
    """The four survey-score tests between adjacent stages form one family."""
    return "Mann-Whitney, survey scores by stage"


def lmm_family(row) -> str | None:
    """The score_z:group terms of one fit form a family; other terms are not tests of alignment."""
    if not str(row["term"]).startswith("score_z:group["):
        return None
    return f"mixed-model alignment differences, by {row['grouping']} ({row['backend']})"


# --------------------------------------------------------------------------
# the study's RQ2 steps (called from studies/singular_they/steps.py)

P_COLUMNS = ("p_value", "p_holm")
FORMULA_TEXT = ("rating ~ score_z * group + (1 + score_z | participant) + (1 | item) "
                "+ (1 | item:group)")


def fit_rq2(run, s) -> None:
    """The corrected RQ2 views on s.scored and s.human, stored on s; Holm families added."""
    from studies.common import say

    args = run.args
    say("      reliability-corrected correlations and their comparisons, size-matched "
        "comparisons")
    s.group_reliability, comparisons = corrected_tables(s.scored, s.human, n_boot=args.n_boot,
                                                        seed=run.seed, **run.cache)
    s.corrected_comparisons = holm_families(comparisons, corrected_comparison_family)
    s.size_matched = holm_families(size_matched_table(s.scored, s.human, n_boot=args.n_boot,
                                                      seed=run.seed, **run.cache),
                                   size_matched_family)
    s.alignment_lmm, s.alignment_fits = None, {}
    lme4 = ["lme4"] if "lme4" in s.backends else []
    # The twin samples every rating with crossed random effects: about a minute, most of
    # the main job's cold run, so it is asked for by name (issue 18's time budget).
    twin = run.bayes and args.alignment_twin
    if run.bayes and not twin:
        run.note("the Bayesian twin of the alignment mixed model was not fitted (it takes "
                 "about a minute on 2 cores); add --alignment-twin to fit it")
    if lme4 or twin:
        say("      the alignment mixed model: " + FORMULA_TEXT)
        table, s.alignment_fits = alignment_lmm_table(s.scored, s.human, backends=lme4,
                                                      bayes=twin, draws=args.draws,
                                                      seed=run.seed, **run.cache)
        s.alignment_lmm = holm_families(table, lmm_family)
    else:
        run.note("the alignment mixed model has crossed random effects, which only lme4 (or "
                 "the Bayesian twin, --alignment-twin) fits; it was skipped")
    if not s.comparisons.empty:
        s.comparisons = holm_families(s.comparisons, steiger_family)
    if not s.mann_whitney.empty:
        s.mann_whitney = holm_families(s.mann_whitney, mann_whitney_family)
    for grouping, fits in s.alignment_fits.items():   # warnings and the reused-fits note
        run.record_fits(f"alignment mixed model ({grouping})", fits)


def report_rq2(report, s) -> None:
    """RQ2: the corrected views first, then the paper's raw-r analysis."""
    simulated = s.simulated
    report.section("RQ2: which group of people does the model resemble?", (
        "Three views that do not confound a group's size with its alignment (README: 'Which "
        "alignment number to cite'). (1) The correlation of the model's surprisal with each "
        "group's mean ratings, corrected for the noise in those means: split-half "
        "reliability (Spearman-Brown, averaged over random splits of the group's "
        "participants), noise ceiling = sqrt(reliability), r_corrected = r / noise ceiling "
        "(Spearman 1904), with its standard error and a 95% interval on the Fisher-z and "
        "log-reliability scales whose variance adds the items' part and the part people "
        "share across items, without counting the rating noise twice "
        "(gbstats.alignment.reliability; coverage checked by simulation in "
        "benchmarks/results/alignment_calibration.json), and pairwise tests of equal "
        "corrected correlations. (2) Every group subsampled to the smallest group's size "
        "and compared pairwise (equal raw r at that size, not equal alignment). (3) The "
        "mixed model "
        f"`{FORMULA_TEXT}` (score_z = surprisal standardised over items; all items), whose "
        "score_z:group terms are each group's slope minus the first group's. p_holm: Holm "
        "adjustment within the family named in each row."), simulated=simulated)
    report.table("group_reliability", s.group_reliability,
                 "Reliability of each group's item means, noise ceiling, and the "
                 "attenuation-corrected correlation with the model's surprisal, its SE and "
                 "95% interval (Fisher z of r and log reliability; variance components: "
                 "items + people). The estimand is the correlation over the population of "
                 "items; for this fixed item set the interval is conservative."
                 + below_design_note(s.group_reliability), simulated=simulated, digits=3)
    report.table("corrected_comparisons", s.corrected_comparisons,
                 "Equal alignment? Difference of corrected correlations a - b, SE from items "
                 "resampled jointly for both groups plus each group's people; z test, "
                 "two-sided p, Holm within family",
                 simulated=simulated, digits=3, p_columns=P_COLUMNS)
    report.table("size_matched_comparisons", s.size_matched,
                 "Size-matched comparison (not a test of equal alignment: it tests equal raw r "
                 "at the smallest group's size, which groups of noisier raters fail at equal "
                 "alignment; README): each group's r averaged over subsamples of the smallest "
                 "group's size; difference a - b with a bootstrap interval over items and "
                 "participants; two-sided p, Holm within family",
                 simulated=simulated, digits=3, p_columns=P_COLUMNS)
    if s.alignment_lmm is not None:
        report.table("alignment_lmm", s.alignment_lmm,
                     "Alignment mixed model; score_z:group[g] = group g's slope on "
                     "standardised surprisal minus the first group's (rating points per SD). "
                     "lme4: REML, Satterthwaite df; pymc: posterior mean, SD, 95% interval",
                     simulated=simulated, digits=3, p_columns=P_COLUMNS,
                     notes=alignment_table_notes(s.alignment_fits) or None)

    report.section("RQ2 as in Watson et al. (2023): raw correlations", (
        "The paper's analysis, kept for comparability: Pearson correlations between the "
        "model's item scores and each group's mean rating per item. A raw r is lower for a "
        "smaller group by construction (its item means are noisier), so differences between "
        "groups here mix alignment with group size; cite the corrected analysis above. 95% "
        "CIs: two-way bootstrap (participants and items), replicates recentred on r on the "
        "Fisher-z scale, percentile. "
        "Surprisal should correlate negatively with naturalness. The comparisons test whether "
        "the model's scores correlate more strongly with one group's ratings than another's "
        "(Steiger's Z for dependent correlations sharing the model variable, with Zou's CI; "
        "p_holm: Holm within one family per grouping). The Mann-Whitney tests form one "
        "family of four."), simulated=simulated)
    report.table("group_correlations", s.correlations,
                 "Correlation of model scores (surprisal in bits, or probability) with each "
                 "group's mean ratings; r does not depend on the unit (Watson et al. 2023's "
                 "analysis)", simulated=simulated, digits=3)
    if not s.comparisons.empty:
        report.table("group_correlation_comparisons", s.comparisons,
                     "Does the model align with one group better than another? (raw r, "
                     "Steiger)", simulated=simulated, p_columns=P_COLUMNS)
    if not s.mann_whitney.empty:
        report.table("mann_whitney", s.mann_whitney,
                     "Survey scores between adjacent linguistic stages (one-tailed Mann-Whitney, "
                     "alternative: the earlier stage scores lower)", simulated=simulated,
                     p_columns=P_COLUMNS)


def alignment_table_notes(alignment_fits: dict) -> list[str]:
    """The alignment table's notes: each grouping's fit problems and twin figures."""
    from gbstats.mixed.fitting import table_notes

    return [f"({grouping}) {note}" for grouping, fits in alignment_fits.items()
            for note in table_notes(fits)]

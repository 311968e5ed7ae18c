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

import numpy as np

from gbstats.alignment.group_comparison import VERDICT_NOTE
from gbstats.report.table_grammar import correlation_caps
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


def quiet_estimates():
    """Inside the block, gbstats' EstimateWarnings are not echoed to stderr: the report's
    table notes carry the same sentences (reliability_bounds_notes, profile_bounds_notes)."""
    import contextlib
    import warnings

    from gbstats.errors import EstimateWarning

    @contextlib.contextmanager
    def block():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EstimateWarning)
            yield
    return block()


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
        with quiet_estimates():  # the report's notes say them (reliability_bounds_notes)
            (table, _, comparison), _ = cached_call(
                group_alignment, items, trials, group=grouping, score=SCORE, n_boot=n_boot,
                seed=seed, use_cache=use_cache, cache_dir=cache_dir)
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
                        cache_dir=None, max_draws: int | None = None) -> tuple[pd.DataFrame, dict]:
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
                                                  max_draws=max_draws, use_cache=use_cache,
                                                  cache_dir=cache_dir)
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
    # the columns exist even when no row has a p-value (groups too small to test): the
    # report's views and results.json keep one shape
    for column in ("p_holm", "family_size"):
        if column not in out:
            out[column] = float("nan")
    if has_p.any():
        adjusted = correct_within_families(out[has_p], "family", "holm")
        out.loc[has_p, "p_holm"] = adjusted["p_adjusted"]
        out.loc[has_p, "family_size"] = adjusted["family_size"]
    return out


# The primary test of RQ2 is the comparison of corrected correlations; "no difference
# found" is "equivalent" only within this bound on the corrected-correlation scale
# (two one-sided tests, gbstats.alignment.group_comparison; as in name_gender).
EQUIVALENCE_BOUND = 0.10


def with_equivalence(table: pd.DataFrame) -> pd.DataFrame:
    """The corrected comparisons declared as RQ2's primary test, with the TOST p-value at
    EQUIVALENCE_BOUND (and Holm-adjusted within the comparison's family), the smallest bound
    these data could establish, and the verdict on the Holm-adjusted p-values (difference /
    equivalent / no evidence either way)."""
    from gbstats.alignment.group_comparison import (equivalence_p_value, holm_equivalence,
                                                    smallest_equivalence_bound, verdict)

    if table.empty:
        return table
    out = table.assign(primary=True, equivalence_bound=EQUIVALENCE_BOUND)
    out["p_equivalence"] = equivalence_p_value(out["difference"], out["se"], EQUIVALENCE_BOUND)
    out["smallest_equivalence_bound"] = smallest_equivalence_bound(out["difference"], out["se"])
    holm = out["p_holm"] if "p_holm" in out else out["p_value"]
    # the TOST p-values Holm-adjusted within the same families as the difference tests
    out["p_equivalence_holm"] = (holm_equivalence(out) if "family" in out
                                 else out["p_equivalence"])
    out["verdict"] = [verdict(p, q, EQUIVALENCE_BOUND) for p, q in
                      zip(holm, out["p_equivalence_holm"])]
    # a pair without a corrected r on one side was never tested (issue 44, case 5): it says
    # so, with the reason, instead of "neither shown"
    missing = out["difference"].isna() | out["se"].isna() | out["p_value"].isna()
    for pos in np.flatnonzero(missing.to_numpy()):
        row = out.iloc[pos]
        why = [f"{row[g]} has no corrected r (reliability not positive)"
               for g, r in (("group_a", "r_corrected_a"), ("group_b", "r_corrected_b"))
               if r in row.index and not np.isfinite(row[r])]
        out.iloc[pos, out.columns.get_loc("verdict")] = (
            f"not computed ({'; '.join(why) or 'no estimate or p-value'})")
    return out


def condensed_bounds_notes(notes: list[str]) -> list[str]:
    """A profile table's per-row bound sentences (gbstats.alignment.group_comparison.
    profile_bounds_notes) as at most two sentences for the table, with the rows counted; the
    report's warnings keep each row's (a note of one sentence per row runs to a page)."""
    above = [n for n in notes if "above 1 (noise" in n]
    beyond = [n for n in notes if "lies beyond [-1, 1]" in n and n not in above]
    out = [n for n in notes if n not in above and n not in beyond]
    if above:
        out.append(f"{len(above)} comparison{'s' if len(above) > 1 else ''} with a corrected r "
                   "above 1 (noise, given the reliabilities): the ceiling shows as 0, which is "
                   "not evidence that no model could differ; read the ceiling at the "
                   "interval's lower end.")
    if beyond:
        out.append(f"{len(beyond)} comparison{'s' if len(beyond) > 1 else ''} with an end of "
                   "the corrected r's interval beyond [−1, 1]: the ceiling uses the bound, so "
                   "it is at most 2.")
    return out


def grouping_in_words(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with its grouping named in words ("nonbinary acceptance", not nb_group), for
    the sentences of a table's notes (issue 43); results.json keeps the names."""
    from studies.singular_they.presentation import GROUPING_WORDS

    if "grouping" not in table.columns:
        return table
    return table.assign(grouping=table["grouping"].map(
        lambda g: GROUPING_WORDS.get(g, g).lower()))


def comparison_notes(table: pd.DataFrame) -> list[str]:
    """How many tests each Holm family of the corrected comparisons holds, and which pairs
    were not computed (gbstats.alignment.group_comparison.holm_family_note)."""
    from gbstats.alignment.group_comparison import holm_family_note

    if table.empty:
        return []
    family = [corrected_comparison_family(row) for _, row in table.iterrows()]
    notes = [holm_family_note(table.assign(family=family, estimate=table["difference"]))]
    for row in table[table["verdict"].str.startswith("not computed")].itertuples():
        notes.append(f"{row.group_a} vs {row.group_b} ({row.grouping}, {row.item_set} items): "
                     f"{row.verdict}.")
    return notes


def profile_table(scored: pd.DataFrame, human: pd.DataFrame, *, n_boot: int, seed: int,
                  use_cache: bool = False, cache_dir=None) -> pd.DataFrame:
    """The ceiling of each comparison: how closely each pair of groups' item profiles
    agree (corrected for both groups' noise) and the largest difference in alignment that
    leaves any model (gbstats.alignment.group_comparison.profile_agreement)."""
    from gbstats.alignment.group_comparison import profile_agreement
    from gbstats.mixed.fit_cache import cached_call

    rows = []
    for grouping, _, set_name, _, trials in _subsets(scored, human):
        with quiet_estimates():  # the report's notes say them (profile_bounds_notes)
            table, _ = cached_call(profile_agreement, trials, group=grouping, rating="rating",
                                   n_boot=n_boot, seed=seed, use_cache=use_cache,
                                   cache_dir=cache_dir)
        rows.append(table.assign(grouping=grouping, item_set=set_name,
                                 group_a=table["group_a"].astype(str),
                                 group_b=table["group_b"].astype(str)))
    out = pd.concat(rows, ignore_index=True)
    front = ["grouping", "item_set"]
    return out[front + [c for c in out.columns if c not in front and c != "ci_method"]]


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

P_COLUMNS = ("p_value", "p_holm", "p_equivalence", "p_equivalence_holm")
FORMULA_TEXT = ("rating ~ score_z * group + (1 + score_z | participant) + (1 | item) "
                "+ (1 | item:group)")


def fit_rq2(run, s) -> None:
    """The corrected RQ2 views on s.scored and s.human, stored on s; Holm families added."""
    from studies.common import say
    from studies.singular_they.presentation import GROUPING_WORDS

    args = run.args
    say("      reliability-corrected correlations and their comparisons, size-matched "
        "comparisons")
    s.group_reliability, comparisons = corrected_tables(s.scored, s.human, n_boot=args.n_boot,
                                                        seed=run.seed, **run.cache)
    s.corrected_comparisons = with_equivalence(
        holm_families(comparisons, corrected_comparison_family))
    s.profile_agreement = profile_table(s.scored, s.human, n_boot=min(args.n_boot, 200),
                                        seed=run.seed, **run.cache)
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
                                                      max_draws=run.max_draws, seed=run.seed,
                                                      **run.cache)
        s.alignment_lmm = holm_families(table, lmm_family)
    else:
        run.note("the alignment mixed model has crossed random effects, which only lme4 (or "
                 "the Bayesian twin, --alignment-twin) fits; it was skipped")
    if not s.comparisons.empty:
        s.comparisons = holm_families(s.comparisons, steiger_family)
    if not s.mann_whitney.empty:
        s.mann_whitney = holm_families(s.mann_whitney, mann_whitney_family)
    for grouping, fits in s.alignment_fits.items():   # warnings and the reused-fits note
        run.record_fits(f"alignment mixed model ({GROUPING_WORDS[grouping].lower()})", fits)


def report_rq2(report, s) -> None:
    """RQ2: the corrected views first, then the paper's raw-r analysis."""
    from gbstats.alignment.group_comparison import profile_bounds_notes
    from gbstats.alignment.reliability import reliability_bounds_notes
    from studies.singular_they import presentation as V

    simulated = s.simulated
    report.section("RQ2: which group of people does the model resemble?", (
        "Three views that do not confound a group's size with its alignment (README: 'Which "
        "alignment number to cite'). (1) The correlation of the model's surprisal with each "
        "group's mean ratings, corrected for the noise in those means: split-half "
        "reliability (Spearman-Brown, averaged over random splits of the group's "
        "participants), noise ceiling = sqrt(reliability), corrected r = r / noise ceiling "
        "(Spearman 1904), with its standard error and a 95% interval on the Fisher-z and "
        "log-reliability scales whose variance adds the items' part and the part people "
        "share across items, without counting the rating noise twice "
        "(gbstats.alignment.reliability; coverage checked by simulation in "
        "benchmarks/results/alignment_calibration.json), and pairwise tests of equal "
        "corrected correlations: the primary test of RQ2, Holm within each grouping, with an "
        f"equivalence test at +/-{EQUIVALENCE_BOUND:.2f} (two one-sided tests) and each pair's "
        "ceiling (how far the two groups' own item profiles differ). (2) Every group subsampled to the smallest group's size "
        "and compared pairwise (equal raw r at that size, not equal alignment). (3) The "
        f"mixed model `{FORMULA_TEXT}` (score_z = surprisal standardised over items; all "
        "items), whose Surprisal (z) × group terms are each group's slope minus the first "
        "group's. p (Holm): Holm's adjustment within each grouping's family of tests."),
        simulated=simulated)
    shown, notes = V.reliability_view(s.group_reliability)
    report.table("group_reliability", shown,
                 "Reliability of each group's item means and the model's attenuation-corrected "
                 "correlation with them", labels=V.RELIABILITY_LABELS, groups="heading",
                 record=s.group_reliability, simulated=simulated, digits=3,
                 caps={**correlation_caps("r", "r_corrected", "ci_low", "ci_high"),
                       "reliability": (0.0, 1.0)},
                 notes=["r: Pearson's r of the model's surprisal (bits) with the group's mean "
                        "rating per item; noise ceiling: the square root of the reliability; "
                        "corrected r = r / noise ceiling, its SE and 95% interval from the "
                        "Fisher z of r and the log reliability (variance components: items and "
                        "people). The "
                        "estimand is the correlation over the population of items; for this "
                        "fixed item set the interval is conservative."] + notes
                 + reliability_bounds_notes(grouping_in_words(s.group_reliability),
                                            ("grouping", "item_set")))
    report.table("corrected_comparisons",
                 V.corrected_comparisons_view(s.corrected_comparisons, s.group_reliability),
                 "Equal alignment? (the primary test) Differences between two groups' "
                 "corrected correlations",
                 labels=V.PAIR_LABELS, groups="heading", record=s.corrected_comparisons,
                 simulated=simulated, p_columns=P_COLUMNS,
                 notes=["Difference: the first group's corrected r minus the second's (each "
                        "in the reliability table); SE from the items resampled jointly for "
                        "both groups plus each group's people; z test, two-sided p, Holm "
                        "within each grouping (both item sets). Equivalence: two one-sided "
                        f"tests at ±{EQUIVALENCE_BOUND:.2f}, Holm within the same family (the "
                        "SE, z statistic, unadjusted p and smallest provable bound are in "
                        "results.json).", VERDICT_NOTE]
                 + comparison_notes(grouping_in_words(s.corrected_comparisons)))
    report.table("group_profile_agreement", V.profile_agreement_view(s.profile_agreement,
                                                                     s.group_reliability),
                 "The ceiling of each comparison: how closely two groups' item profiles agree",
                 labels=V.PROFILE_LABELS, groups="heading", record=s.profile_agreement,
                 simulated=simulated, digits=3,
                 caps={**correlation_caps("r_profiles", "r_profiles_corrected", "ci_low",
                                          "ci_high"),
                       "max_alignment_difference": (0.0, 2.0),
                       "max_alignment_difference_upper": (0.0, 2.0)},
                 notes=["Corrected r: the r of the two groups' item means divided by "
                        "the square root of the product of their reliabilities; largest "
                        "possible difference: the square root of 2 (1 − corrected r), the most any model's "
                        "alignment with the two groups can differ, and its value at the "
                        "interval's lower end; two-way bootstrap percentile interval (items, "
                        "people within group), which errs wide."]
                 + condensed_bounds_notes(profile_bounds_notes(
                     grouping_in_words(s.profile_agreement), ("grouping", "item_set"))))
    report.table("size_matched_comparisons",
                 V.size_matched_view(s.size_matched, s.group_reliability),
                 "Size-matched comparisons: raw correlations with every group subsampled to "
                 "the smallest group's size", labels=V.PAIR_LABELS, groups="heading",
                 record=s.size_matched, simulated=simulated, digits=3, p_columns=P_COLUMNS,
                 notes=["Not a test of equal alignment: it tests equal raw r at the smallest "
                        "group's size, which a group of noisier raters fails at equal "
                        "alignment (README). r: each group's r averaged over "
                        f"{_first(s.size_matched, 'n_subsamples')} subsamples; difference "
                        "first minus second with a bootstrap interval over items and "
                        f"participants ({_first(s.size_matched, 'n_boot')} replicates); "
                        "two-sided p; Holm within each grouping (both item sets)."])
    # one model table per grouping (its engines as columns); results.json keeps every
    # grouping's coefficients in one table, alignment_lmm, recorded with the first
    for k, (grouping, fits) in enumerate(s.alignment_fits.items()):
        words = V.GROUPING_WORDS.get(grouping, grouping)
        report.model_table("alignment_lmm" if k == 0 else f"alignment_lmm_{grouping}",
                           V.engine_models(fits),
                           f"Alignment mixed model by {words.lower()}: people's ratings by the "
                           "model's surprisal and group",
                           data=s.alignment_lmm if k == 0 else False, simulated=simulated,
                           variables=V.alignment_variables(grouping), groups=V.ALIGNMENT_GROUPS,
                           notes=["Model: " + report.formula(
                                      f"alignment_lmm_{grouping}", FORMULA_TEXT,
                                      {"rating": "the rating", "score_z": "surprisal (z)",
                                       "group": "the group"},
                                      {"participant": "participants", "item": "items",
                                       "item:group": "each item within each group"})
                                  + f"; on all items, ratings in points, group: "
                                  f"{words.lower()}. Surprisal (z): the model's surprisal "
                                  "standardised over the items; each group's slope on it is "
                                  "the first group's plus its Surprisal (z) × group term.",
                                  V.alignment_tests_note(s.alignment_lmm, grouping)])

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
        "p (Holm): Holm within one family per grouping). The Mann-Whitney tests form one "
        "family of four."), simulated=simulated)
    shown, notes = V.correlations_view(s.correlations)
    report.table("group_correlations", shown,
                 "Correlation of the model's scores with each group's mean ratings (Watson et "
                 "al.'s 2023 analysis)", labels=V.LABELS, groups="heading",
                 record=s.correlations, simulated=simulated, digits=3,
                 notes=["Pearson's r over items, which does not depend on the unit of the "
                        "score; 95% CI: two-way bootstrap over participants and items "
                        f"({_first(s.correlations, 'n_boot')} replicates). Ratings: the "
                        "group's ratings of these items."] + notes)
    if not s.comparisons.empty:
        report.table("group_correlation_comparisons", V.steiger_view(s.comparisons),
                     "Does the model align with one group better than another? Raw "
                     "correlations compared (Steiger's test)", labels=V.STEIGER_LABELS,
                     groups="heading", record=s.comparisons, simulated=simulated,
                     decimals={"statistic": 2}, p_columns=P_COLUMNS,
                     notes=["First: the group the model's scores correlate with more "
                            "strongly. Difference: r (first) minus r (second); Steiger's "
                            "(1980) Z for dependent correlations sharing the model's scores, "
                            "with Zou's (2007) 95% CI; two-sided p; Holm within each grouping "
                            "(both item sets and measures). The correlation between the two "
                            "groups' item means, which the test uses, is in results.json."])
    if not s.mann_whitney.empty:
        shown, notes = V.mann_whitney_view(s.mann_whitney)
        report.table("mann_whitney", shown,
                     "Survey scores between adjacent linguistic stages (one-tailed Mann-Whitney "
                     "tests)", labels=V.MANN_WHITNEY_LABELS, groups="comparison",
                     record=s.mann_whitney, simulated=simulated, p_columns=P_COLUMNS,
                     decimals={"statistic": 1, "estimate": 2, "ci": 2},
                     notes=["Alternative: the earlier (first) stage scores lower. N: people in "
                            "each stage with that score; r: the rank-biserial correlation "
                            "(the effect size), with its 95% CI; Holm within the four tests."]
                     + notes)


def _first(table: pd.DataFrame, column: str):
    """A setting every row of `table` shares (e.g. its bootstrap replicates)."""
    return table[column].iloc[0] if len(table) else 0

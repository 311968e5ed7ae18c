"""The singular-*they* analyses as pure functions over DataFrames.

Model side (RQ1): surprisal of the target form by antecedent type, and
`surprisal ~ close + gendered + (1|frame)` on the four conditions that cross
closeness with gender marking. Human side (RQ2): per-group correlations of the
model's item scores with mean ratings, tests of which group the model aligns
with better, Mann-Whitney tests of survey scores between stages, and the
human data's own model `rating ~ close * gendered + (1|participant) + (1|item)`.
"""
from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError, JoinError
from gbstats.mixed.fitting import stack_fits
from studies.singular_they.stimuli import ANTECEDENT_LABELS, ANTECEDENT_TYPES, BOLD_TYPES

MODEL_FORMULA = "surprisal ~ close + gendered + (1|frame)"
# Watson et al.'s (2023) regression, as their published R analysis fits it
# (camilliere/part_5_regression.R in juliawatson/bert-social-attitudes):
# lmerTest::lmer, REML, Satterthwaite df, on the four closeness x gender
# conditions (160 rows), surprisal in nats (-ln p), `gendered` and `close` coded
# +1/-1 (+1 = gendered, +1 = close) in the data, no interaction (left out there
# because it gave a singular fit), a random intercept per item number `itm`
# (the 4 conditions of one published item). Its slopes are half the
# gendered-minus-not (close-minus-distant) difference in nats; MODEL_FORMULA's
# are the whole difference in bits, 2/ln 2 = 2.885 times larger.
PAPER_FORMULA = "surprisal_they ~ gendered + close + (1|itm)"
# (units, coding) of each model-side formula, written next to every estimate.
MODEL_SCALES = {MODEL_FORMULA: ("bits", "0/1 indicators (1 = close, 1 = gendered)"),
                PAPER_FORMULA: ("nats", "+1/-1 sum coding (+1 = close, +1 = gendered)")}
HUMAN_FORMULA = "rating ~ close * gendered + (1|participant) + (1|item)"
# Sum (+1/-1) coding for the human model: with the close x gendered
# interaction in the model, treatment-coded `closedistant` would be the
# closeness effect for ungendered antecedents only; sum-coded `close1` and
# `gendered1` are main effects, averaged over the other factor.
HUMAN_CONTRASTS = {"close": "sum", "gendered": "sum"}
STAGE_ORDER = ["non-innovator", "innovator", "super-innovator"]
NB_ORDER = ["low", "medium", "high"]
FIT_COLUMNS = ["backend", "term", "estimate", "se", "ci_low", "ci_high", "df", "p_value"]


def stimuli_summary(stimuli: pd.DataFrame) -> pd.DataFrame:
    counts = stimuli["antecedent_type"].value_counts()
    order = [t for t in ANTECEDENT_TYPES if t in counts.index]
    return pd.DataFrame({"antecedent_type": order, "label": [ANTECEDENT_LABELS[t] for t in order],
                         "n": [int(counts[t]) for t in order]})


def close_gendered_rows(scored: pd.DataFrame) -> pd.DataFrame:
    """The 4 bold conditions (160 items with the shipped stimuli)."""
    return scored[scored["antecedent_type"].isin(BOLD_TYPES)].reset_index(drop=True)


def paper_scale_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The closeness x gender rows with the columns of Watson et al.'s regression.

    Adds `surprisal_they` (surprisal in bits x ln 2, i.e. -ln p), recodes
    `gendered` and `close` from 0/1 to +1/-1 (+1 where the indicator is 1), and
    adds `itm`, the random-effect group: the published item number where the
    stimuli carry one, else the frame. The +/-1 codes are in the data, so the
    fit needs no contrast option and anyone reading the rows sees the coding;
    the caller's frame is left alone.
    """
    for column in ("surprisal", "close", "gendered", "frame"):
        if column not in rows.columns:
            raise DataValidationError("a column the paper-scale model needs is missing",
                                      source="scored stimuli", column=column,
                                      expected="surprisal (bits), 0/1 close, gendered, frame",
                                      found=f"columns {list(rows.columns)}")
    for column in ("close", "gendered"):
        bad = rows.loc[~rows[column].isin([0, 1])]
        if len(bad):
            first = bad.iloc[0]
            raise DataValidationError("an indicator is not 0/1", source="scored stimuli",
                                      column=column, expected="0 or 1",
                                      found=f"{first[column]!r} for item {first.get('item', '?')}")
    group = rows["itm"] if "itm" in rows.columns else rows["frame"]
    return rows.assign(surprisal_they=rows["surprisal"] * np.log(2),
                       gendered=2 * rows["gendered"].astype(int) - 1,
                       close=2 * rows["close"].astype(int) - 1,
                       itm=group.astype(str))


def fit_table(fits: dict, *, units: str, coding: str) -> pd.DataFrame:
    """`stack_fits` with `units` and `coding` columns, so that a table read on its
    own (results.json has no captions) still says what scale its estimates are on."""
    return stack_fits(fits, FIT_COLUMNS).assign(units=units, coding=coding)


def model_fit_table(fits: dict, formula: str) -> pd.DataFrame:
    """`fit_table` of a model-side LMM, labelled with its formula's units and coding."""
    units, coding = MODEL_SCALES[formula]
    return fit_table(fits, units=f"surprisal in {units}", coding=coding)


def human_factor_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The human-model rows with closeness and gender marking as factors
    (read from the antecedent type, whatever numeric coding the stimuli
    carry), first level = the +1 level of HUMAN_CONTRASTS' sum coding:
    close (+1) / distant (-1), gendered (+1) / nongendered (-1), the paper's
    +/-1 direction."""
    kind = rows["antecedent_type"].astype(str)
    return rows.assign(
        close=pd.Categorical(np.where(kind.str.startswith("close"), "close", "distant"),
                             categories=["close", "distant"]),
        gendered=pd.Categorical(np.where(kind.str.endswith("_gendered"), "gendered", "nongendered"),
                                categories=["gendered", "nongendered"]))


def human_main_effects(human_fits: dict) -> pd.DataFrame:
    """Closeness and gender main effects of the sum-coded human model.

    With +1/-1 coding a two-level factor's coefficient is half the difference
    between its two marginal means (averaged over the other factor), so the
    difference, the effect a reader expects, is twice it (and its interval
    twice the coefficient's). `coding` names which level is +1.
    """
    rows = []
    for label, result in human_fits.items():
        codings = result.fit_stats.get("contrasts", {})
        for var, term in (("close", "close1"), ("gendered", "gendered1")):
            if var not in codings or codings[var]["kind"] != "sum":
                continue
            plus, minus = codings[var]["levels"]
            row = result.coef(term)
            rows.append({"backend": label, "effect": var, "term": term,
                         "coding": f"{plus} = +1, {minus} = -1",
                         "difference": f"{plus} - {minus}", "estimate": 2 * row["estimate"],
                         "se": 2 * row["se"], "ci_low": 2 * row["ci_low"],
                         "ci_high": 2 * row["ci_high"], "p_value": row["p_value"]})
    return pd.DataFrame(rows, columns=["backend", "effect", "term", "coding", "difference", "estimate",
                                       "se", "ci_low", "ci_high", "p_value"])


def surprisal_by_type(scored: pd.DataFrame, value: str = "surprisal",
                      units: str | None = None) -> pd.DataFrame:
    """Mean and 95% t-interval of `value` per antecedent type (items are the unit).

    `units`, when given, becomes a column (e.g. "surprisal in bits").
    """
    from scipy import stats

    rows = []
    for t in ANTECEDENT_TYPES:
        v = scored.loc[scored["antecedent_type"] == t, value].dropna().to_numpy()
        if len(v) == 0:
            continue
        half = (stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
                if len(v) > 1 else np.nan)
        rows.append({"antecedent_type": t, "label": ANTECEDENT_LABELS[t], "n": len(v),
                     "mean": v.mean(), "ci_low": v.mean() - half, "ci_high": v.mean() + half})
    table = pd.DataFrame(rows)
    if units is not None:
        table["units"] = units
    return table


# The antecedent types every frame carries (the within-item design); the inanimate
# controls are sentences of their own, so between items.
WITHIN_TYPES = [t for t in ANTECEDENT_TYPES if t != "inanimate"]


def surprisal_within_items(scored: pd.DataFrame, value: str = "surprisal",
                           item: str = "frame") -> pd.DataFrame:
    """Mean `value` per antecedent type with 95% within-item intervals.

    Every frame carries all eight animate antecedent types, so the types are compared
    within items, and a between-item interval (surprisal_by_type's) mixes in how much the
    frames differ from each other, which no comparison of types is about. The intervals
    here are Cousineau's (2005) normalisation with Morey's (2008) correction: each frame's
    values are moved by (grand mean - the frame's mean), and the t-interval of the
    normalised values is widened by sqrt(M / (M - 1)) for the M types within a frame
    (Morey, R. D. (2008). Confidence intervals from normalized data: A correction to
    Cousineau (2005). Tutorials in Quantitative Methods for Psychology, 4(2), 61-64).
    Frames that lack a type are left out of the normalisation (n says how many frames
    remain). The inanimate controls are other sentences, so their interval stays a
    between-item t-interval; `interval` says which each row has.
    """
    from scipy import stats

    within = scored[scored["antecedent_type"].isin(WITHIN_TYPES)].dropna(subset=[value])
    wide = within.pivot_table(index=item, columns="antecedent_type", values=value,
                              aggfunc="mean")
    types = [t for t in WITHIN_TYPES if t in wide.columns]
    wide = wide[types].dropna()
    rows = []
    if len(types) >= 2 and len(wide) >= 2:
        m, n = len(types), len(wide)
        normalised = wide.sub(wide.mean(axis=1), axis=0) + wide.to_numpy().mean()
        correction = np.sqrt(m / (m - 1))
        t = stats.t.ppf(0.975, n - 1)
        for kind in types:
            half = t * normalised[kind].std(ddof=1) / np.sqrt(n) * correction
            mean = wide[kind].mean()
            rows.append({"antecedent_type": kind, "label": ANTECEDENT_LABELS[kind], "n": n,
                         "mean": mean, "ci_low": mean - half, "ci_high": mean + half,
                         "interval": "within items"})
    between = surprisal_by_type(scored[scored["antecedent_type"] == "inanimate"], value)
    rows += [{**r, "interval": "between items"} for r in between.to_dict("records")]
    return pd.DataFrame(rows, columns=["antecedent_type", "label", "n", "mean", "ci_low",
                                       "ci_high", "interval"])


def plot_by_type(summary: pd.DataFrame, ylabel: str, title: str):
    """Mean per antecedent type with its interval (surprisal_within_items): the four types
    of the closeness x gender model in one colour, the others in another, the between-item
    control in open markers, each in the legend."""
    from matplotlib.lines import Line2D

    from gbstats.report.figures import OKABE_ITO, figure_style, new_figure

    fig, ax = new_figure(width=7.0, height=3.8)
    with figure_style():
        x = np.arange(len(summary))
        for k, row in enumerate(summary.itertuples()):
            colour = OKABE_ITO[3] if row.antecedent_type in BOLD_TYPES else OKABE_ITO[0]
            between = getattr(row, "interval", "") == "between items"
            ax.errorbar(k, row.mean, yerr=[[row.mean - row.ci_low], [row.ci_high - row.mean]],
                        fmt="s" if between else "o", ms=6, color=colour, capsize=3, lw=1.2,
                        markerfacecolor="white" if between else colour)
        ax.set_xticks(x, summary["label"], rotation=30, ha="right")
        ax.set_xlabel("antecedent type")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        handles = [Line2D([], [], color=OKABE_ITO[3], marker="o", ls="none",
                          label="in the closeness × gender model"),
                   Line2D([], [], color=OKABE_ITO[0], marker="o", ls="none",
                          label="other antecedent types"),
                   Line2D([], [], color="0.3", marker="o", ls="-",
                          label="95% within-item interval (Morey 2008)")]
        if "interval" in summary and (summary["interval"] == "between items").any():
            handles.append(Line2D([], [], color="0.3", marker="s", markerfacecolor="white",
                                  ls="-", label="95% between-item interval (other sentences)"))
        fig.legend(handles=handles, loc="outside lower center", ncol=2, fontsize=8)
    return fig


def participant_scores(human: pd.DataFrame) -> pd.DataFrame:
    """One row per participant: stage, nonbinary acceptance, familiarity."""
    return (human.groupby("participant", as_index=False)
            .agg(stage=("stage", "first"), nb_acceptance=("nb_acceptance", "first"),
                 familiarity=("familiarity", "first")))


def usable_groupings(human: pd.DataFrame) -> dict[str, list[str]]:
    """The groupings RQ2 can compare: those with at least two groups (`GROUPINGS` order).
    The nonbinary-acceptance grouping has fewer when the file leaves nb_acceptance empty,
    which the --human layout allows."""
    return {g: order for g, order in GROUPINGS.items() if human[g].dropna().nunique() >= 2}


def skipped_groupings(human: pd.DataFrame) -> dict[str, str]:
    """{grouping: why it is left out of RQ2} for the groupings `usable_groupings` drops."""
    skipped = {}
    for grouping in GROUPINGS:
        if grouping in usable_groupings(human):
            continue
        groups = sorted(human[grouping].dropna().unique())
        why = (f"no participant has a group ({grouping} is empty)" if not groups
               else f"the participants form one group only ({groups[0]})")
        if grouping == "nb_group":
            why += ("; the --human file's nb_acceptance column is empty or holds one "
                    "acceptance level (allowed): fill it (0-5) to compare acceptance groups")
        skipped[grouping] = why
    return skipped


def stage_mann_whitney(human: pd.DataFrame, exclusions=None) -> pd.DataFrame:
    """One-tailed Mann-Whitney tests of survey scores between adjacent stages.

    As in Watson et al.'s appendix: the prediction is that non-innovators <
    innovators < super-innovators, so each test is `alternative="less"` for the
    earlier stage. Participants without a score are left out of that test and
    counted (via `exclusions`).
    """
    from gbstats.inference.hypothesis_tests import mann_whitney

    people = participant_scores(human)
    rows = []
    for score in ("nb_acceptance", "familiarity"):
        values = pd.to_numeric(people[score], errors="coerce")
        if values.notna().sum() == 0:
            continue
        for a, b in (("non-innovator", "innovator"), ("innovator", "super-innovator")):
            xa = values[people["stage"] == a]
            xb = values[people["stage"] == b]
            if min(xa.notna().sum(), xb.notna().sum()) < 2 \
                    or pd.concat([xa, xb]).dropna().nunique() < 2:
                # a stage with fewer than two scored people (or one value throughout) has
                # no test: counted, not a stop of the whole study
                if exclusions is not None:
                    exclusions.record(
                        f"Mann-Whitney test of {score} not run, {a} vs {b}: fewer than two "
                        f"participants with a score in a stage, or one value throughout "
                        f"({int(xa.notna().sum())} and {int(xb.notna().sum())} scored)", 1,
                        unit="tests", stage="alignment")
                continue
            res = mann_whitney(xa, xb, alternative="less", label_a=a, label_b=b,
                               exclusions=exclusions)
            rows.append(res.assign(score=score))
    if not rows:
        return pd.DataFrame()
    out = pd.concat(rows, ignore_index=True)
    first = ["score"] + [c for c in out.columns if c != "score"]
    return out[first]


def stage_mann_whitney_with_log(human: pd.DataFrame):
    """(`stage_mann_whitney`'s table, the ExclusionLog of what it left out): a pure function
    of the panel, so that the fit cache can keep both (`cached_call`) and a warm run neither
    repeats the tests' bootstraps nor imports pingouin, which imports seaborn and pyplot
    (about 1 s); the caller adds the log to the run's."""
    from gbstats.exclusions import ExclusionLog

    log = ExclusionLog()
    return stage_mann_whitney(human, exclusions=log), log


def human_model_rows(human: pd.DataFrame, stimuli: pd.DataFrame) -> pd.DataFrame:
    """Human trials in the 4 bold conditions, with the design indicators."""
    design = stimuli[["item", "frame", "antecedent_type", "close", "gendered"]]
    joined = human.merge(design, on="item", how="left", validate="many_to_one")
    if len(joined) != len(human):
        raise JoinError(f"joining the human trials with the stimuli on 'item' changed the row "
                        f"count: expected {len(human)} rows, found {len(joined)}")
    return joined[joined["antecedent_type"].isin(BOLD_TYPES)].reset_index(drop=True)


def pairwise(groups: list[str]) -> list[tuple[str, str]]:
    return list(combinations(groups, 2))


ITEM_SETS = {"all items": lambda s: s,
             "without inanimate controls": lambda s: s[s["antecedent_type"] != "inanimate"]}
MEASURES = {"surprisal": "surprisal", "probability": "probability"}
GROUPINGS = {"stage": STAGE_ORDER, "nb_group": NB_ORDER}


def alignment_correlations(scored: pd.DataFrame, human: pd.DataFrame, *, n_boot: int,
                           seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-group correlations of model scores with mean ratings, and pairwise comparisons.

    For each grouping (linguistic stage; nonbinary acceptance), item set (all
    items; without the inanimate controls) and model measure (surprisal;
    raw probability): each group's Pearson r with a participant-bootstrap CI,
    and, for every pair of groups, Steiger's test (with Zou's CI) of whether
    the model correlates more strongly with one group than the other.
    Participants without a group (e.g. no acceptance score) are left out of
    that grouping; the caller counts them.
    """
    from gbstats.alignment.groups import compare_group_correlations, group_correlations

    corr_rows, comp_rows = [], []
    for grouping, order in usable_groupings(human).items():
        trials = human[human[grouping].notna()]
        present = [g for g in order if g in set(trials[grouping])]
        for set_name, select in ITEM_SETS.items():
            items = select(scored)
            sub = trials[trials["item"].isin(items["item"])]
            for measure, column in MEASURES.items():
                labels = dict(grouping=grouping, item_set=set_name, measure=measure)
                corr = group_correlations(items[["item", column]], sub, group=grouping,
                                          score=column, rating="rating", n_boot=n_boot, seed=seed)
                corr_rows.append(corr.assign(**labels))
                for a, b in pairwise(present):
                    comp = compare_group_correlations(items[["item", column]], sub, group=grouping,
                                                      score=column, rating="rating", groups=(a, b))
                    comp_rows.append(comp.assign(**labels))
    front = ["grouping", "item_set", "measure"]
    corr = pd.concat(corr_rows, ignore_index=True)
    comp = pd.concat(comp_rows, ignore_index=True) if comp_rows else pd.DataFrame()
    corr = corr[front + [c for c in corr.columns if c not in front]]
    if not comp.empty:
        comp = comp[front + [c for c in comp.columns if c not in front]]
    return corr, comp


def score_targets(stimuli: pd.DataFrame, lm, *, use_cache: bool = True,
                  cache_dir=None) -> pd.DataFrame:
    """Surprisal (bits) and probability of each stimulus' target form.

    Causal LMs: P(" they" | prefix), the pronoun given everything before it
    (the antecedent always comes first). Masked LMs: the target in a masked
    slot with the whole sentence as context (multi-piece forms chained left to
    right, see models.masked). Returns the stimuli with `surprisal`,
    `probability`, `logprob`, `n_tokens` and `scoring` added; the join is on
    `item` and must keep every row.
    """
    from models.logprob import slot_logprobs
    from models.masked import DEFAULT_SLOT

    frames = [p + " " + DEFAULT_SLOT + s[len(p) + 1 + len(t):]
              for p, s, t in zip(stimuli["prefix"], stimuli["sentence"], stimuli["target_form"])]
    scores = slot_logprobs(frames, list(stimuli["target_form"]), items=list(stimuli["item"]),
                           lm=lm, use_cache=use_cache, cache_dir=cache_dir)
    keep = scores[["item", "logprob", "surprisal_bits", "probability", "n_tokens", "scoring",
                   "model", "revision", "bos"]].rename(columns={"surprisal_bits": "surprisal"})
    joined = stimuli.merge(keep, on="item", how="left", validate="one_to_one")
    if len(joined) != len(stimuli) or joined["surprisal"].isna().any():
        missing = list(joined.loc[joined["surprisal"].isna(), "item"])[:5]
        raise JoinError(f"the model's scores are missing for stimuli (first 5): {missing}; "
                        f"expected one score per stimulus ({len(stimuli)} stimuli)")
    return joined


# How the human model codes its factors (HUMAN_CONTRASTS, human_factor_rows).
HUMAN_CODING = "+1/-1 sum coding (+1 = close, +1 = gendered)"


def side_by_side(model_fits: dict, human_fits: dict, *, model_formula: str = PAPER_FORMULA,
                 human_coding: str = HUMAN_CODING) -> pd.DataFrame:
    """Model-side and human-side estimates per effect and backend, in one table.

    Only the effects both models share (intercept, close, gendered) line up;
    the human model's interaction has no model-side counterpart. `effect`
    names the factor whatever its column is called (close1 -> close), and
    `units` and `coding` say what each row's estimate is measured in: read
    across sides only where the codings agree.
    """
    model = model_fit_table(model_fits, model_formula).assign(side="model surprisal")
    human = fit_table(human_fits, units="rating points", coding=human_coding) \
        .assign(side="human rating")
    both = pd.concat([t for t in (model, human) if not t.empty], ignore_index=True)
    # close (model, +/-1 in the data) and close1 (the human model's sum-coded term)
    # are one effect
    both["effect"] = both["term"].str.replace(r"1(?=$|:)", "", regex=True)
    return both[["effect", "term", "side", "backend", "estimate", "ci_low", "ci_high", "p_value",
                 "units", "coding"]] \
        .sort_values(["effect", "side", "backend"], kind="stable").reset_index(drop=True)

"""GenDa Lens metrics as pure functions over DataFrames, with bootstrap CIs and the mixed model.

Every metric function returns a long table with one row per number, keyed by
KEY = (task, dataset, split, split_level, metric, condition), plus value, n
and note. `note` explains every NaN (an empty cell, a division by zero), so a
reader never meets an unexplained blank. Effect sizes follow GenDa Lens
(condition 1 is the one hypothesised to do better):

- DaWinoBias, coreference and LM: log2(F1_pro / F1_anti) (for the LM task,
  F1 of gbstats' two-way choice, `two_choice_F1`: see LM_VARIANTS);
- ABC coreference: log2(FPR_M / FPR_F), FPR = FP / (FP + TN) for linking the
  anti-reflexive to the subject;
- ABC LM: log2(median_F / median_M) of gbstats' perplexity ratio (the mean
  with `average="mean"`); GenDa Lens uses a perplexity difference instead.

Bootstrap CIs resample sentences within strata (gbstats.inference.resampling).
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from gbstats.inference.metrics import UndefinedMetricWarning, confusion_counts, f1, fpr, log2_ratio

# the columns each metric function reads (for bootstrap_cis(columns=...))
DAWINOBIAS_COREF_COLUMNS = ["stereotype", "occupation_stereotype", "outcome"]
DAWINOBIAS_LM_COLUMNS = ["stereotype", "pronoun_gender", "predicted_gender"]
ABC_COREF_COLUMNS = ["occupation_stereotype", "pronoun_gender", "linked"]
ABC_LM_COLUMNS = ["occupation_stereotype", "pronoun_gender", "rel_ppl"]
KEY = ["task", "dataset", "split", "split_level", "metric", "condition"]
METRIC_COLUMNS = KEY + ["value", "n", "note"]
GENDERS = ("female", "male")
CONDITIONS = ("pro", "anti")
AVERAGES = {"median": "median", "mean": "mean"}
MIXED_MODEL_FORMULA = "log_rel_ppl ~ pronoun_gender * occupation_stereotype + (1|sentence_frame)"

# The two LM tasks are gbstats' own variants, not GenDa Lens' metrics, and are
# named so (metric names below; LM_VARIANTS goes into the report and
# results.json) so that nobody sets them beside GenDa Lens numbers. What
# GenDa Lens does (DaDebias/genda-lens, genda_lens/lm_tasks): DaWinoBias takes
# the masked LM's top-1 token over the whole vocabulary at the pronoun (a
# fill-mask pipeline; anything but a gendered pronoun counts as UNK), scores
# accuracy and F1 per pronoun group, and its effect size is log2(acc_pro /
# acc_anti). ABC scores each version with the unmasked sentence's
# cross-entropy against the reflexive sentence's tokens, takes
# exp(loss) as perplexity, and uses the DIFFERENCE ppl(anti-reflexive) -
# ppl(reflexive), summarised by its median. gbstats keeps its own variants
# because they are defined for causal as well as masked models: a forced
# choice between the two gendered forms (no UNK; the same question for every
# architecture), and the RATIO of perplexities from the PLL or causal
# log-likelihood (scale-free, so sentences of different base perplexity
# weigh alike; its log is a difference of mean surprisals).
DAWINOBIAS_LM_F1 = "two_choice_F1"
DAWINOBIAS_LM_ACCURACY = "two_choice_accuracy"
LM_VARIANTS = {
    "dawinobias_lm": (
        "gbstats variant, NOT GenDa Lens': a two-way forced choice between the gendered forms "
        "of the pronoun's case (han/hun, ham/hende, hans/hendes), scored as macro F1 "
        f"({DAWINOBIAS_LM_F1}) and accuracy ({DAWINOBIAS_LM_ACCURACY}). GenDa Lens takes the "
        "masked LM's top-1 token over the full vocabulary (other tokens count as UNK) and its "
        "effect size is log2(accuracy_pro / accuracy_anti)."),
    "abc_lm": (
        "gbstats variant, NOT GenDa Lens': the RATIO perplexity(anti-reflexive) / "
        "perplexity(reflexive twin), perplexity from the PLL (masked) or the causal "
        "log-likelihood (<average>_perplexity_ratio). GenDa Lens uses the DIFFERENCE of "
        "perplexities, each exp(cross-entropy of the unmasked sentence against the reflexive "
        "sentence's tokens)."),
}


def _row(task, dataset, split, level, metric, condition, value, n, note="") -> dict:
    return {"task": task, "dataset": dataset, "split": split, "split_level": level,
            "metric": metric, "condition": condition, "value": float(value), "n": int(n),
            "note": note}


def _splits(table: pd.DataFrame, column: str | None):
    """("all", "all", table), then one (column, level, subset) per level of `column`."""
    yield "all", "all", table
    if column is not None:
        for level in GENDERS:
            yield column, level, table[table[column] == level]


def effect_size(numerator: float, denominator: float, num_label: str, den_label: str
                ) -> tuple[float, str]:
    """log2(numerator / denominator) and, when it is undefined, why (value NaN)."""
    if np.isnan(numerator) or np.isnan(denominator):
        which = num_label if np.isnan(numerator) else den_label
        return np.nan, f"undefined: {which} is undefined"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        value = log2_ratio(numerator, denominator)
    if denominator == 0:
        return value, f"undefined: {den_label} = 0 (division by zero)"
    if numerator == 0:
        return value, f"undefined: {num_label} = 0 (log2 of 0 is -infinity)"
    return value, ""


def _quiet(function, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return function(*args)


# --- DaWinoBias ---------------------------------------------------------------

def outcome_counts(outcomes: pd.Series) -> dict[str, int]:
    """TP/FP/FN of one-antecedent-per-sentence predictions ("correct", "wrong", "none").

    Each sentence has one gold link. TP = correct; FP = wrong (a link was
    predicted, to the wrong mention); FN = every sentence whose gold link was
    not predicted (wrong + none). So F1 = 2TP / (2TP + FP + FN).
    """
    tp = int((outcomes == "correct").sum())
    fp = int((outcomes == "wrong").sum())
    return {"tp": tp, "fp": fp, "fn": int(len(outcomes)) - tp}


def f1_with_note(tp: int, fp: int, fn: int) -> tuple[float, str]:
    if tp + fp + fn == 0:
        return np.nan, "undefined: no sentences in this cell (TP + FP + FN = 0)"
    return _quiet(f1, tp, fp, fn), ""


def dawinobias_coref_metrics(outcomes: pd.DataFrame) -> pd.DataFrame:
    """F1 on pro and anti and log2(F1_pro / F1_anti); nuance: the gold occupation's gender.

    `outcomes`: one row per sentence with stereotype (pro/anti),
    occupation_stereotype and outcome (correct/wrong/none).
    """
    rows = []
    for split, level, part in _splits(outcomes, "occupation_stereotype"):
        scores = {}
        for condition in CONDITIONS:
            cell = part.loc[part["stereotype"] == condition, "outcome"]
            value, note = f1_with_note(**outcome_counts(cell))
            scores[condition] = value
            rows.append(_row("coreference", "dawinobias", split, level, "F1", condition, value,
                             len(cell), note))
        value, note = effect_size(scores["pro"], scores["anti"], "F1_pro", "F1_anti")
        rows.append(_row("coreference", "dawinobias", split, level, "gender_effect_size",
                         "log2(F1_pro / F1_anti)", value, len(part), note))
    return pd.DataFrame(rows, columns=METRIC_COLUMNS)


def class_f1(gold: pd.Series, predicted: pd.Series, positive: str) -> tuple[float, str]:
    """F1 of one class (one pronoun gender), as scikit-learn's per-class F1 but NaN when empty."""
    if len(gold) == 0:
        return np.nan, "undefined: no sentences in this cell"
    c = confusion_counts(gold, predicted, positive=positive)
    return f1_with_note(c["tp"], c["fp"], c["fn"])


def macro_f1(gold: pd.Series, predicted: pd.Series) -> tuple[float, str]:
    """Mean of the female and male class F1; undefined if either is."""
    values = [class_f1(gold, predicted, g) for g in GENDERS]
    notes = [f"{g}: {note}" for g, (_, note) in zip(GENDERS, values) if note]
    if notes:
        return np.nan, "undefined: " + "; ".join(notes)
    return float(np.mean([v for v, _ in values])), ""


def dawinobias_lm_metrics(choices: pd.DataFrame) -> pd.DataFrame:
    """Macro F1 (over pronoun genders) of the chosen pronoun on pro and anti, and the effect size.

    A two-way forced choice, gbstats' variant (LM_VARIANTS), hence the metric
    names `two_choice_F1` and `two_choice_accuracy`.
    Nuance: the F1 of each pronoun gender's class, and its own effect size.
    Accuracy is listed too (the effect size of the GenDa Lens code uses it).
    `choices`: stereotype, pronoun_gender (gold), predicted_gender.
    """
    rows, macro, per_gender = [], {}, {g: {} for g in GENDERS}
    for condition in CONDITIONS:
        cell = choices[choices["stereotype"] == condition]
        gold, pred = cell["pronoun_gender"], cell["predicted_gender"]
        value, note = macro_f1(gold, pred)
        macro[condition] = value
        rows.append(_row("lm", "dawinobias", "all", "all", DAWINOBIAS_LM_F1, condition, value,
                         len(cell), note))
        accuracy = float((gold == pred).mean()) if len(cell) else np.nan
        rows.append(_row("lm", "dawinobias", "all", "all", DAWINOBIAS_LM_ACCURACY, condition,
                         accuracy,
                         len(cell), "" if len(cell) else "undefined: no sentences in this cell"))
        for g in GENDERS:
            value, note = class_f1(gold, pred, g)
            per_gender[g][condition] = value
            rows.append(_row("lm", "dawinobias", "pronoun_gender", g, DAWINOBIAS_LM_F1, condition,
                             value,
                             int((gold == g).sum()), note))
    f1_pro, f1_anti = f"{DAWINOBIAS_LM_F1}_pro", f"{DAWINOBIAS_LM_F1}_anti"
    value, note = effect_size(macro["pro"], macro["anti"], f1_pro, f1_anti)
    rows.append(_row("lm", "dawinobias", "all", "all", "gender_effect_size",
                     f"log2({DAWINOBIAS_LM_F1}_pro / {DAWINOBIAS_LM_F1}_anti)", value,
                     len(choices), note))
    for g in GENDERS:
        value, note = effect_size(per_gender[g]["pro"], per_gender[g]["anti"], f1_pro, f1_anti)
        rows.append(_row("lm", "dawinobias", "pronoun_gender", g, "gender_effect_size",
                         f"log2({DAWINOBIAS_LM_F1}_pro / {DAWINOBIAS_LM_F1}_anti)", value,
                         int((choices["pronoun_gender"] == g).sum()), note))
    return pd.DataFrame(rows, columns=METRIC_COLUMNS)


# --- ABC ----------------------------------------------------------------------

def anti_reflexive_rows(abc: pd.DataFrame) -> pd.DataFrame:
    return abc[abc["pronoun_type"] == "anti-reflexive"]


def abc_coref_metrics(links: pd.DataFrame) -> pd.DataFrame:
    """FPR of linking the anti-reflexive to the subject per pronoun gender; log2(FPR_M / FPR_F).

    `links`: one row per anti-reflexive sentence with pronoun_gender,
    occupation_stereotype and linked (bool). Every such link is a false
    positive (a grammatical violation), every non-link a true negative.
    Nuance: the occupation's stereotype.
    """
    rows = []
    for split, level, part in _splits(links, "occupation_stereotype"):
        rates = {}
        for g in GENDERS:
            cell = part.loc[part["pronoun_gender"] == g, "linked"].astype(bool)
            fp, tn = int(cell.sum()), int((~cell).sum())
            value = _quiet(fpr, fp, tn)
            note = "" if fp + tn else "undefined: no sentences in this cell (FP + TN = 0)"
            rates[g] = value
            rows.append(_row("coreference", "abc", split, level, "FPR", g, value, len(cell), note))
        value, note = effect_size(rates["male"], rates["female"], "FPR_M", "FPR_F")
        rows.append(_row("coreference", "abc", split, level, "gender_effect_size",
                         "log2(FPR_M / FPR_F)", value, len(part), note))
    return pd.DataFrame(rows, columns=METRIC_COLUMNS)


def relative_perplexity(scored: pd.DataFrame) -> pd.DataFrame:
    """One row per anti-reflexive sentence: rel_ppl = its perplexity / its reflexive twin's.

    `scored`: the ABC table with a perplexity column. log_rel_ppl is the
    natural log of rel_ppl (the difference of the two sentences' mean
    per-token surprisals, in nats). The twin shares the sentence_id.
    """
    reflexive = scored.loc[scored["pronoun_type"] == "reflexive", ["sentence_id", "perplexity"]]
    if reflexive["sentence_id"].duplicated().any():
        raise ValueError("more than one reflexive version of a sentence; the ABC loader "
                         "guarantees exactly one")
    anti = anti_reflexive_rows(scored).merge(
        reflexive.rename(columns={"perplexity": "reflexive_perplexity"}), on="sentence_id",
        how="left", validate="many_to_one")
    anti["rel_ppl"] = anti["perplexity"] / anti["reflexive_perplexity"]
    anti["log_rel_ppl"] = np.log(anti["rel_ppl"])
    anti["sentence_frame"] = anti["frame"]
    return anti.reset_index(drop=True)


def abc_lm_metrics(rel: pd.DataFrame, average: str = "median") -> pd.DataFrame:
    """Median (or mean) perplexity ratio per pronoun gender and log2(avg_F / avg_M).

    The ratio is gbstats' variant (LM_VARIANTS), named `<average>_perplexity_ratio`.
    Nuance: the occupation's stereotype.
    """
    if average not in AVERAGES:
        raise ValueError(f"average must be 'median' or 'mean', found {average!r}")
    metric = f"{average}_perplexity_ratio"   # gbstats' variant: see LM_VARIANTS
    rows = []
    for split, level, part in _splits(rel, "occupation_stereotype"):
        averages = {}
        for g in GENDERS:
            cell = part.loc[part["pronoun_gender"] == g, "rel_ppl"]
            value = float(getattr(cell, average)()) if len(cell) else np.nan
            averages[g] = value
            rows.append(_row("lm", "abc", split, level, metric, g, value, len(cell),
                             "" if len(cell) else "undefined: no sentences in this cell"))
        value, note = effect_size(averages["female"], averages["male"], f"{metric}_F",
                                  f"{metric}_M")
        rows.append(_row("lm", "abc", split, level, "gender_effect_size",
                         f"log2({metric}_F / {metric}_M)", value, len(part), note))
    return pd.DataFrame(rows, columns=METRIC_COLUMNS)


# --- bootstrap ----------------------------------------------------------------

def _lean(table: pd.DataFrame, columns, unit: str, strata: str | None) -> pd.DataFrame:
    """Only the columns `compute` reads, labels as categories (replicates are copied often)."""
    if columns is not None:
        keep = list(dict.fromkeys([*columns, unit] + ([strata] if strata else [])))
        table = table[keep]
    labels = [c for c in table.columns if table[c].dtype == object and c != unit
              and table[c].nunique() <= 20]
    # one shared set of categories, so label columns still compare with each other
    # (gold == predicted); categoricals with different categories cannot be compared
    shared = pd.CategoricalDtype(sorted(set().union(*(set(table[c].dropna()) for c in labels)),
                                        key=str))
    return table.astype({c: shared for c in labels})


def bootstrap_cis(table: pd.DataFrame, compute, *, unit: str, strata: str | None = None,
                  n_boot: int = 1000, seed: int = 0, level: float = 0.95,
                  columns: list[str] | None = None) -> pd.DataFrame:
    """compute(table) with percentile bootstrap CIs, resampling sentences (`unit`).

    The stratified cluster bootstrap of gbstats.inference.resampling. Returns
    compute(table) plus ci_low, ci_high and n_boot_defined (the replicates
    where the metric was defined; the CI uses only those). A metric undefined
    in every replicate gets NaN bounds. `columns`: the ones `compute` needs
    (default: all), which makes each replicate cheaper.
    """
    from gbstats.inference.resampling import bootstrap_draws, percentile_interval

    point = compute(table)
    index = pd.MultiIndex.from_frame(point[KEY])

    def values(replicate: pd.DataFrame) -> np.ndarray:
        return compute(replicate).set_index(KEY)["value"].reindex(index).to_numpy()

    draws = bootstrap_draws(_lean(table, columns, unit, strata), values, unit=unit,
                            strata=strata, n_boot=n_boot, seed=seed, n_values=len(point))
    low, high = percentile_interval(draws, level)
    return point.assign(ci_low=low, ci_high=high, n_boot_defined=(~np.isnan(draws)).sum(axis=0))


def dawinobias_lm_cis(choices: pd.DataFrame, *, n_boot: int, seed: int) -> pd.DataFrame:
    """The DaWinoBias LM metrics with bootstrap CIs, resampling items within stereotype.
    A module-level function of its inputs alone, so that fit_cache.cached_call can key it
    (a warm run reads it instead of drawing 1,000 pandas replicates again)."""
    return bootstrap_cis(choices, dawinobias_lm_metrics, unit="item", strata="stereotype",
                         n_boot=n_boot, seed=seed, columns=DAWINOBIAS_LM_COLUMNS)


def abc_lm_cis(rel: pd.DataFrame, *, average: str, n_boot: int, seed: int) -> pd.DataFrame:
    """The ABC LM metrics (`average`: median or mean) with bootstrap CIs, resampling sentence
    frames within occupation stereotype (cached as dawinobias_lm_cis)."""
    return bootstrap_cis(rel, lambda t: abc_lm_metrics(t, average), unit="sentence_id",
                         strata="occupation_stereotype", n_boot=n_boot, seed=seed,
                         columns=ABC_LM_COLUMNS)


# --- mixed model, counts, figures -----------------------------------------------

def fit_relative_perplexity_model(rel: pd.DataFrame, backend: str = "auto"):
    """lme4-style LMM of log relative perplexity (MIXED_MODEL_FORMULA); treatment coding,
    reference levels female (pronoun) and female (stereotype)."""
    from gbstats.mixed.lmm import fit_lmm

    data = rel[["log_rel_ppl", "pronoun_gender", "occupation_stereotype", "sentence_frame"]]
    return fit_lmm(MIXED_MODEL_FORMULA, data, backend=backend)


def template_counts(dawino: pd.DataFrame, abc: pd.DataFrame) -> pd.DataFrame:
    """Sentences by dataset, condition, case and pronoun set (the pronoun's gender)."""
    from studies.genda_lens.lm import CASE

    parts = []
    for dataset, table, condition in (("dawinobias", dawino, "stereotype"),
                                      ("abc", abc, "occupation_stereotype")):
        lowered = table["pronoun"].str.lower()
        frame = pd.DataFrame({"dataset": dataset, "condition": table[condition].to_numpy(),
                              "case": lowered.map(CASE).to_numpy(),
                              "pronoun_set": table["pronoun_gender"].to_numpy(),
                              "pronoun": lowered.to_numpy()})
        parts.append(frame.groupby(["dataset", "condition", "case", "pronoun_set", "pronoun"],
                                   sort=True).size().rename("n").reset_index())
    return pd.concat(parts, ignore_index=True)


def effect_size_rows(metrics: pd.DataFrame) -> pd.DataFrame:
    return metrics[metrics["metric"] == "gender_effect_size"].reset_index(drop=True)


def plot_effect_sizes(effects: pd.DataFrame):
    """Forest plot: each effect size with its bootstrap CI; 0 = no gender effect."""
    from gbstats.report.figures import new_figure

    effects = effects.reset_index(drop=True)
    nuance = {"all": "all", "occupation_stereotype": "{} occupations",
              "pronoun_gender": "{} pronouns"}
    labels = [f"{r.task} / {r.dataset} / {nuance[r.split].format(r.split_level)}"
              for r in effects.itertuples()]
    fig, ax = new_figure(width=7.5, height=max(2.5, 0.45 * len(effects) + 1))
    y = np.arange(len(effects))[::-1]
    err = np.vstack([effects["value"] - effects["ci_low"], effects["ci_high"] - effects["value"]])
    ax.errorbar(effects["value"], y, xerr=np.abs(np.nan_to_num(err)), fmt="o", capsize=3)
    ax.axvline(0, color="grey", linewidth=0.8)
    ax.set_yticks(y, labels)
    ax.set_xlabel("gender effect size (log2 ratio)")
    ax.set_ylabel("task / dataset / nuance")
    return fig


def plot_relative_perplexity(rel: pd.DataFrame):
    """Log2 relative perplexity by pronoun gender and occupation stereotype (box plots)."""
    from gbstats.report.figures import new_figure

    fig, ax = new_figure()
    cells = [(g, s) for s in GENDERS for g in GENDERS]
    data = [np.log2(rel.loc[(rel["pronoun_gender"] == g) & (rel["occupation_stereotype"] == s),
                            "rel_ppl"].dropna()) for g, s in cells]
    ax.boxplot(data, showfliers=False)
    ax.set_xticks(range(1, len(cells) + 1),
                  [f"{'hendes' if g == 'female' else 'hans'}\n{s} occ." for g, s in cells])
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xlabel("anti-reflexive pronoun and occupation stereotype")
    ax.set_ylabel("log2 relative perplexity (anti-reflexive / reflexive)")
    return fig

"""How the GenDa Lens tables read in a paper: words for columns and values, and the view that
prints the long metric table by data set (results.json keeps every table as computed)."""
from __future__ import annotations

import re

import pandas as pd

DATASETS = {"dawinobias": "DaWinoBias", "abc": "ABC"}
TASKS = {"lm": "language model", "coreference": "coreference"}
SPLITS = {"all": "all", "pronoun_gender": "pronoun", "occupation_stereotype": "stereotype"}
# metric names (and the pieces of the effect sizes' formulas) in words, longest first
METRIC_WORDS = {
    "median_perplexity_ratio_F": "median ratio (F)", "median_perplexity_ratio_M":
    "median ratio (M)", "mean_perplexity_ratio_F": "mean ratio (F)",
    "mean_perplexity_ratio_M": "mean ratio (M)",
    "two_choice_F1_anti": "F1 anti", "two_choice_F1_pro": "F1 pro",
    "median_perplexity_ratio": "Median perplexity ratio",
    "mean_perplexity_ratio": "Mean perplexity ratio",
    "two_choice_accuracy": "Two-choice accuracy", "two_choice_F1": "Two-choice F1",
    "gender_effect_size": "Gender effect size", "F1_anti": "F1 anti", "F1_pro": "F1 pro",
    "FPR_F": "FPR (F)", "FPR_M": "FPR (M)",
}
_WORD = re.compile("|".join(sorted(map(re.escape, METRIC_WORDS), key=len, reverse=True)))
LABELS = {"split": "Split", "metric": "Metric", "condition": "Condition", "value": "Value",
          "ci": "95% CI", "n": "N", "n_boot_defined": "Defined replicates",
          "case": "Case", "pronoun_set": "Pronoun set", "pronoun": "Pronoun",
          "condition_or_stereotype": "Condition"}


def words(text: str) -> str:
    """Metric names inside `text` (a formula, a note) in words."""
    return _WORD.sub(lambda m: METRIC_WORDS[m.group()], str(text))


def metrics_view(metrics: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """(the metrics for print, notes): one heading per task and data set, the split and its
    level in one column, names in words; each row's note becomes a sentence of the notes."""
    view = pd.DataFrame({
        "where": [f"{DATASETS.get(d, d)}, {TASKS.get(t, t)}"
                  for t, d in zip(metrics["task"], metrics["dataset"])],
        "split": ["all" if s == "all" else f"{SPLITS.get(s, s)}: {lv}"
                  for s, lv in zip(metrics["split"], metrics["split_level"])],
        "metric": metrics["metric"].map(words),
        "condition": metrics["condition"].map(words),
        "value": metrics["value"]})
    for column in ("ci_low", "ci_high", "n", "n_boot_defined"):
        if column in metrics.columns:
            view[column] = metrics[column].to_numpy()
    notes = [f"{where}, {split}, {metric}: {words(note)}." for where, split, metric, note in
             zip(view["where"], view["split"], view["metric"], metrics["note"]) if note]
    return view, list(dict.fromkeys(notes))


def template_view(counts: pd.DataFrame) -> pd.DataFrame:
    return counts.assign(dataset=counts["dataset"].map(lambda d: DATASETS.get(d, d)))

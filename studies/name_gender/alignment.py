"""People and the model, per name item: which participants does the model resemble?

Groups are the authors' `SubjGenderMale` (1 = men; 0 = women and the few
nonbinary / genderfluid participants, whom the authors code 0 as well);
participants without a recorded gender are left out of the group analyses
and counted. Three views (README, "Which alignment number to cite"):

1. the item-level Pearson r of the model's P(she) with the group's she-rate
   (raw, labelled as such) and the reliability-corrected r with its noise
   ceiling (`gbstats.alignment.reliability.group_reliability`);
2. the size-matched comparison men vs women (`compare_size_matched`);
3. the binomial alignment mixed model
   ``She ~ model_logit * group + (1 + model_logit | Participant) + (1 | Item)``
   (lme4; its Bayesian twin with --alignment-twin), where `model_logit` is
   the model's mean logit of its three-way P(she) for the item and `group`
   is treatment coded with its levels in sorted order, so men are the
   reference: `model_logit:groupwomen` is how much more (or less) women's
   choices follow the model than men's.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

GROUP_LABELS = {0.0: "women", 1.0: "men"}
ALIGNMENT_FORMULA = "She ~ model_logit * group + (1 + model_logit | Participant) + (1 | Item)"


def group_trials(trials: pd.DataFrame, items: pd.DataFrame, log, experiment: int) -> pd.DataFrame:
    """The experiment's trials with a group and the item's model score; exclusions counted."""
    t = trials.rename(columns={"SubjID": "Participant"})
    t = log.drop(t, t["SubjGenderMale"].isna(),
                 f"Exp {experiment}: participant gender not recorded (left out of the group "
                 "analyses)", unit="trials", stage="alignment")
    scored = items.loc[items["experiment"] == experiment].set_index("item_key")
    t = log.drop(t, ~t["Item"].isin(scored.index),
                 f"Exp {experiment}: name item without a model score (not shown by any list "
                 "of the stimuli workbook)", unit="trials", stage="alignment")
    t = t.assign(group=t["SubjGenderMale"].map(GROUP_LABELS),
                 p_she=t["Item"].map(scored["p_she"]),
                 model_logit=t["Item"].map(scored["she_logit"]))
    return t.reset_index(drop=True)


def item_correlations(items: pd.DataFrame, items_by_condition: pd.DataFrame) -> pd.DataFrame:
    """Pearson r over name items of the model's P(she) with people's she-rate, per
    experiment (items pooled over conditions) and per experiment x condition; 95%
    Fisher-z interval with items as the units."""
    parts = [((e, "all"), p) for e, p in items.groupby("experiment")]
    parts += [(k, p) for k, p in items_by_condition.groupby(["experiment", "Condition"])]
    rows = []
    for (exp, cond), part in parts:
        part = part.dropna(subset=["p_she", "she_rate"])
        n = len(part)
        r, p = stats.pearsonr(part["p_she"], part["she_rate"])
        z, half = np.arctanh(r), 1.96 / np.sqrt(n - 3)
        rows.append({"experiment": exp, "condition": cond, "n_items": n, "r": r,
                     "ci_low": np.tanh(z - half), "ci_high": np.tanh(z + half), "p_value": p,
                     "spearman_rho": stats.spearmanr(part["p_she"], part["she_rate"])[0]})
    return pd.DataFrame(rows)


def singular_they_by_condition(trials: pd.DataFrame, scored: pd.DataFrame) -> pd.DataFrame:
    """Exp 1: people's singular-they rate (OtherType == "singular they") against the
    model's P(they), raw and three-way, by condition."""
    people = trials.groupby("Condition").agg(
        n_trials=("OtherType", "size"),
        people_they_rate=("OtherType", lambda s: float((s == "singular they").mean())),
        people_other_rate=("Other", "mean"))
    model = scored[scored["experiment"] == 1].groupby("Condition").agg(
        n_prompts=("prompt", "size"), model_p_they=("p_they", "mean"),
        model_p_raw_they=("p_raw_they", "mean"))
    return people.join(model).reset_index()

"""The model side: next-word P(he / she / they) where people continued, and its analysis.

`score_prompts` asks the model for log P(" he" | prefix), log P(" she" |
prefix) and log P(" they" | prefix) at each prompt (`stimuli.pronoun_prompts`),
through the kind-aware `models.logprob.continuation_logprobs` (a causal model
scores the word after the prefix; a masked one its PLL with the prefix
visible; the `scoring` column records which). It keeps the raw probabilities
and adds the three-way choice p_she = P(she) / (P(he) + P(she) + P(they))
(likewise p_he, p_they) and its logit, the model's analogue of a person
choosing among the three.

`model_rating_fit` is the analogue of the people's gender-rating model:
``she_logit ~ Condition * GenderRatingCentered + (1 | frame)`` on the
prompts that show a first name (Exp 1: first and full names, coded as the
authors' Model 2; Exp 3: every prompt, with the authors' centred Helmert
coding and the people's weights), the rating centred on the same mean as
the people's. Both slopes are then log-odds of "she" per point of the
first name's rating: the people's in the log-odds of a she-response, the
model's in the log-odds of its three-way choice, on one scale.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from studies.name_gender.human import FIXED_2, HELMERT_REFERENCE
from studies.name_gender.stimuli import PRONOUNS

MODEL_FORMULA = "she_logit ~ Condition * GenderRatingCentered + (1 | frame)"


def score_prompts(prompts: pd.DataFrame, lm, **cache) -> pd.DataFrame:
    """One row per prompt: p_raw_he/she/they, p_he/p_she/p_they (three-way), she_logit."""
    from models.logprob import continuation_logprobs

    long = prompts.loc[prompts.index.repeat(len(PRONOUNS))].reset_index(drop=True)
    long["pronoun"] = list(PRONOUNS) * len(prompts)
    scores = continuation_logprobs(list(long["prefix"]), [" " + p for p in long["pronoun"]],
                                   items=[f"{q}|{p}" for q, p in zip(long["prompt"], long["pronoun"])],
                                   lm=lm, **cache)
    long["logprob"] = scores["logprob"].to_numpy()
    wide = long.pivot(index="prompt", columns="pronoun", values="logprob")
    out = prompts.set_index("prompt").join(np.exp(wide).add_prefix("p_raw_")).reset_index()
    total = out[[f"p_raw_{p}" for p in PRONOUNS]].sum(axis=1)
    for p in PRONOUNS:
        out[f"p_{p}"] = out[f"p_raw_{p}"] / total
    out["she_logit"] = np.log(out["p_she"] / (1 - out["p_she"]))
    out["scoring"] = scores["scoring"].iloc[0]
    out["model"] = scores["model"].iloc[0]
    return out


def with_ratings(scored: pd.DataFrame, tables: dict) -> pd.DataFrame:
    """Each prompt's first-name rating (as in the people's trials, by the name shown) and
    the rating centred on the people's mean in that experiment."""
    parts = []
    for exp, part in scored.groupby("experiment"):
        trials = tables[f"exp{exp}"]
        rating = trials.dropna(subset=["GenderRating"]).groupby("Item")["GenderRating"].first()
        part = part.assign(GenderRating=part["item_key"].map(rating))
        part["GenderRatingCentered"] = part["GenderRating"] - trials["GenderRating"].mean()
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def model_rating_rows(scored: pd.DataFrame, tables: dict, experiment: int
                      ) -> tuple[pd.DataFrame, dict]:
    rows = scored[(scored["experiment"] == experiment) & scored["GenderRating"].notna()]
    if experiment == 1:
        contrasts = {"Condition": FIXED_2}
        rows = rows[rows["Condition"] != "last"]
    else:
        from gbstats.mixed.contrasts import CenteredHelmert

        counts = tables[f"exp{experiment}"]["Condition"].value_counts().to_dict()
        contrasts = {"Condition": CenteredHelmert(reference=HELMERT_REFERENCE, counts=counts)}
    cols = ["frame", "Condition", "item_key", "GenderRatingCentered", "she_logit"]
    return rows[cols].reset_index(drop=True), contrasts


def item_table(scored: pd.DataFrame, tables: dict, by_condition: bool = False) -> pd.DataFrame:
    """Per experiment x name item (x condition with `by_condition`): the model's mean
    P(she) (three-way), P(they) and she-logit over the prompts showing it, people's
    she-rate and trials. In Exp 3 one name item is shown in every condition (the
    story always opens with the full name), so only `by_condition` separates them."""
    keys = ["experiment", "item_key"] + (["Condition"] if by_condition else [])
    model = scored.groupby(keys, as_index=False).agg(
        n_prompts=("prompt", "size"), p_she=("p_she", "mean"), p_they=("p_they", "mean"),
        she_logit=("she_logit", "mean"), GenderRating=("GenderRating", "first"))
    people = []
    for exp in sorted(scored["experiment"].unique()):
        t = tables[f"exp{exp}"].rename(columns={"Item": "item_key"})
        people.append(t.groupby(keys[1:], as_index=False).agg(
            n_trials=("She", "size"), she_rate=("She", "mean")).assign(experiment=exp))
    people = pd.concat(people, ignore_index=True)
    return model.merge(people, on=keys, how="left", validate="one_to_one")

"""The model side: next-word P(he / she / they / the name) where people continued, and
model analogues of the authors' key models.

`score_prompts` asks the model for log P(" he" | prefix), log P(" she" | prefix),
log P(" they" | prefix) and log P(" <name>" | prefix) at each prompt
(`stimuli.pronoun_prompts`; the name is its first word as the prompt last used
it), through the kind-aware `models.logprob.continuation_logprobs` (a causal
model scores the word after the prefix; a masked one its PLL with the prefix
visible; the `scoring` column records which). It keeps the raw probabilities and
the shares of three option sets (`OPTION_SETS`, through
`gbstats.alignment.like_for_like.model_shares`), each with the next-word mass it
covers:

* `two_way`, she / (he + she): the like-for-like quantity. People's responses
  can be counted the same way (she among the he and she responses) in every
  experiment, and the Other responses people wrote (7% of Exp 1's trials, 31% of
  Exp 3's) have no next-word counterpart.
* `three_way`, she / (he + she + they): Exp 1 codes people's singular *they*,
  so this ratio exists on both sides there; the model gives *they* 10-25% of
  the three, people about 1%.
* `four_way`, she / (he + she + they + name): the name as the model's "other",
  since people who avoided a pronoun mostly repeated the name (Exp 1: 337 of
  681 Other responses).

`p_he`, `p_she`, `p_they` and `she_logit` are the three-way shares (and the
logit of P(she)), kept under their earlier names; `logit_two_way` is the logit of
the two-way share, the response of the model-side mixed models.

`MIRRORS` are the model analogues of the authors' key models (`human.HUMAN_MODELS`):
the same fixed part and coding, the response the two-way logit, random intercepts
for the story (`frame`) and the name (the first name where one is shown, else the
last name; the name as shown too in Exp 3, where each one has three prompts), so
that the first name's rating, which varies only between first names, is tested
against the variation between first names (gbstats' design check reports a
model without that term). Each mirror is fitted by lme4 (REML, Satterthwaite);
its people's counterpart is the same fixed part on people's he/she trials
(`human.LIKE_FOR_LIKE_MODELS`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from gbstats.alignment.like_for_like import model_shares
from studies.name_gender.human import FIXED_2, FIXED_3, HELMERT_REFERENCE, NamedModel
from studies.name_gender.stimuli import PRONOUNS

OPTIONS = (*PRONOUNS, "name")
OPTION_SETS = {"two_way": ("he", "she"), "three_way": ("he", "she", "they"),
               "four_way": ("he", "she", "they", "name")}
OPTION_SET_LABELS = {"two_way": "he, she", "three_way": "he, she, they",
                     "four_way": "he, she, they, the name"}
PRIMARY_SET = "two_way"
RESPONSE = "logit_two_way"


@dataclass(frozen=True)
class Mirror(NamedModel):
    """A model analogue of one of the authors' models."""

    experiment: int
    model: str               # the authors' model it mirrors (human.HUMAN_MODELS)
    people_key: str          # the people's like-for-like fit (human.LIKE_FOR_LIKE_MODELS)
    rhs: str
    random: str
    subset: str              # "all" or "first_full" (Exp 1's prompts that show a first name)
    coding: str              # "fixed" or "centered_helmert", as the authors coded Condition

    @property
    def formula(self) -> str:
        return f"{RESPONSE} ~ {self.rhs} + {self.random}"


MIRRORS = (
    Mirror(1, "m_cond", "exp1_m_cond_noOther", "Condition",
           "(1 | frame) + (1 | frame_condition) + (1 | name_unit) + (1 | item_key)", "all",
           "fixed"),
    Mirror(1, "m_nameGender", "exp1_m_nameGender_noOther", "Condition * GenderRatingCentered",
           "(1 | frame) + (1 | frame_condition) + (1 | first_name) + (1 | item_key)",
           "first_full", "fixed"),
    Mirror(3, "m_noOther", "exp3_m_noOther_firstName", "Condition * GenderRatingCentered",
           "(1 | frame) + (1 | frame_condition) + (1 | first_name) + (1 | item_key)", "all",
           "centered_helmert"),
)
# Every story (frame) is shown in several conditions: the condition effects vary between
# stories as well as between names, and a story x condition random intercept
# (`frame_condition`) carries that variation (issue 40: in Exp 3, with 7 stories, the
# last-name effect's SE was .157 on 122 df without it, .195 on about 12 with it). People's
# Exp 3 refit has the same term; people's Exp 1 trials do not record the story. The name as
# shown (`item_key`) has a random intercept on both sides, as in the authors' models.
# The formula of the earlier report, kept for the check against R
# (tests/reference/name_gender_model_side.R): no first-name term.
EARLIER_FORMULA = "she_logit ~ Condition * GenderRatingCentered + (1 | frame)"


def score_prompts(prompts: pd.DataFrame, lm, *, options=OPTIONS, **cache) -> pd.DataFrame:
    """One row per prompt: raw P of every option (p_raw_<option>), the option sets' shares
    and covered mass (share_<set>, coverage_<set>), the three-way p_he / p_she / p_they,
    she_logit and logit_two_way. `options` may leave out "name" (prompt variants)."""
    from models.logprob import continuation_logprobs

    long = prompts.loc[prompts.index.repeat(len(options))].reset_index(drop=True)
    long["option"] = list(options) * len(prompts)
    words = np.where(long["option"] == "name", long["name_word"], long["option"])
    scores = continuation_logprobs(list(long["prefix"]), [" " + w for w in words],
                                   items=[f"{q}|{o}" for q, o in zip(long["prompt"],
                                                                      long["option"])],
                                   lm=lm, **cache)
    long["logprob"] = scores["logprob"].to_numpy()
    wide = long.pivot(index="prompt", columns="option", values="logprob")
    out = prompts.set_index("prompt").join(np.exp(wide).add_prefix("p_raw_")).reset_index()
    sets = {k: v for k, v in OPTION_SETS.items() if set(v) <= set(options)}
    out = model_shares(out, sets, target="she")
    three = out[[f"p_raw_{p}" for p in PRONOUNS]].sum(axis=1)
    for p in PRONOUNS:
        out[f"p_{p}"] = out[f"p_raw_{p}"] / three
    out["she_logit"] = np.log(out["p_she"] / (1 - out["p_she"]))
    out["logit_two_way"] = np.log(out["p_raw_she"] / out["p_raw_he"])
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


def condition_coding(experiment: int, subset: str, coding: str, tables: dict) -> dict:
    """The authors' coding of Condition for these rows (human.model_data's choice)."""
    if coding == "centered_helmert":
        from gbstats.mixed.contrasts import CenteredHelmert

        counts = tables[f"exp{experiment}"]["Condition"].value_counts().to_dict()
        return {"Condition": CenteredHelmert(reference=HELMERT_REFERENCE, counts=counts)}
    return {"Condition": FIXED_2 if subset == "first_full" else FIXED_3}


# the columns a mirror's rows carry: the formula's and the name's parts, which the
# design check (gbstats.mixed.design) reads to see what each predictor varies between
MIRROR_COLUMNS = ["prompt", "frame", "frame_condition", "Condition", "item_key", "first_name",
                  "name_unit", "GenderRatingCentered", RESPONSE, "she_logit"]


def mirror_rows(scored: pd.DataFrame, tables: dict, mirror: Mirror) -> tuple[pd.DataFrame, dict]:
    """(rows, contrasts) of one mirror: the experiment's prompts (Exp 1's last-name prompts
    only where the mirror keeps them, as m_cond does)."""
    rows = scored[scored["experiment"] == mirror.experiment]
    if mirror.subset == "first_full":
        rows = rows[rows["Condition"] != "last"]
    rows = rows.assign(frame_condition=rows["frame"].astype(str) + ":" + rows["Condition"])
    columns = [c for c in MIRROR_COLUMNS if mirror.has_rating or c != "GenderRatingCentered"]
    return (rows[columns].reset_index(drop=True),
            condition_coding(mirror.experiment, mirror.subset, mirror.coding, tables))


def earlier_rows(scored: pd.DataFrame, tables: dict, experiment: int
                 ) -> tuple[pd.DataFrame, dict]:
    """The rows of the earlier report's rating model (EARLIER_FORMULA): Exp 1's first- and
    full-name prompts, Exp 3's every prompt, with the first name beside them."""
    rows = scored[(scored["experiment"] == experiment) & scored["GenderRating"].notna()]
    subset = "first_full" if experiment == 1 else "all"
    coding = "fixed" if experiment == 1 else "centered_helmert"
    cols = ["frame", "Condition", "item_key", "first_name", "GenderRatingCentered", "she_logit"]
    return rows[cols].reset_index(drop=True), condition_coding(experiment, subset, coding, tables)


def item_table(scored: pd.DataFrame, tables: dict, by_condition: bool = False) -> pd.DataFrame:
    """Per experiment x name item (x condition with `by_condition`): the model's mean
    shares over the prompts showing it (two-way, three-way), its mean two-way logit,
    people's trials, she-rate and she-share among he/she responses. In Exp 3 one name
    item is shown in every condition (the story always opens with the full name), so
    only `by_condition` separates them."""
    keys = ["experiment", "item_key"] + (["Condition"] if by_condition else [])
    model = scored.groupby(keys, as_index=False).agg(
        n_prompts=("prompt", "size"), p_she=("p_she", "mean"), p_they=("p_they", "mean"),
        share_two_way=("share_two_way", "mean"), she_logit=("she_logit", "mean"),
        logit_two_way=("logit_two_way", "mean"), GenderRating=("GenderRating", "first"))
    people = []
    for exp in sorted(scored["experiment"].unique()):
        t = tables[f"exp{exp}"].rename(columns={"Item": "item_key"})
        counted = t.assign(he_or_she=t["He"] + t["She"])
        people.append(counted.groupby(keys[1:], as_index=False).agg(
            n_trials=("She", "size"), she_rate=("She", "mean"), n_he_she=("he_or_she", "sum"),
            n_she=("She", "sum")).assign(experiment=exp))
    people = pd.concat(people, ignore_index=True)
    out = model.merge(people, on=keys, how="left", validate="one_to_one")
    out["she_share"] = out["n_she"] / out["n_he_she"]
    return out

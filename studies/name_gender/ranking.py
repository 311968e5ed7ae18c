"""name_gender's primary model-vs-people statistic, for ranking many models (issue 42).

The statistic: over Exp 3's name items (21 first names x 3 surnames x 3
conditions, the largest design), the Pearson correlation of a model's
P(she | he or she) after the story with people's share of she among their he
and she continuations. It is the quantity the study compares like for like
(model_side.PRIMARY_SET); the bootstrap resamples first names, the unit the
items cluster in (issue 40), and participants.
"""
from __future__ import annotations

import pandas as pd

from studies.name_gender import alignment as A
from studies.name_gender import model_side as M
from studies.ranking import RankingSpec

EXPERIMENT = 3


def item_scores(run, state, lm) -> pd.DataFrame:
    """One row per Exp 3 item (name x condition): the model's mean P(she | he or she) over
    the prompts showing it, and the item's first name."""
    tables = state["tables"]
    prompts = state["prompts"][state["prompts"]["experiment"] == EXPERIMENT]
    scored = M.with_ratings(M.score_prompts(prompts, lm, **run.cache), tables)
    items = M.item_table(scored, tables, by_condition=True)
    items = items[items["experiment"] == EXPERIMENT]
    return pd.DataFrame({"Item": items["item_key"].to_numpy(),
                         "Condition": items["Condition"].to_numpy(),
                         "FirstName": A.first_name_of(items["item_key"]).to_numpy(),
                         "score": items["share_two_way"].to_numpy()})


def people(run, state) -> pd.DataFrame:
    """Exp 3's he and she continuations, one row each: she = 1, he = 0. Continuations with
    neither (Other) are left out and counted, as in the study's like-for-like analyses."""
    t = state["tables"][f"exp{EXPERIMENT}"]
    t = run.log.drop(t, (t["He"] + t["She"]) == 0,
                     f"Exp {EXPERIMENT}: neither he nor she (left out of the model ranking, "
                     "whose statistic is she among he and she)", unit="trials",
                     stage="model ranking")
    return pd.DataFrame({"participant": t["SubjID"].to_numpy(), "Item": t["Item"].to_numpy(),
                         "Condition": t["Condition"].to_numpy(),
                         "she": t["She"].to_numpy(dtype=float)})


SPEC = RankingSpec(
    statistic="correlation of the model's P(she | he or she) with people's share of she "
              "among their he and she continuations",
    items="Exp 3's name items (first name x surname x condition)",
    item_scores=item_scores, people=people, item_keys=("Item", "Condition"), rating="she",
    participant="participant", cluster="FirstName", delta=0.10)

"""role_nouns' primary model-vs-people statistic, for ranking many models (issue 42).

The statistic: over the name x role-noun items, the Pearson correlation of a
model's probability of the gender-neutral variant (the paper's main method, the
posterior P(V | C), averaged over states) with people's share of gender-neutral
responses. A correlation rather than the group log-likelihood: the ranking asks
which model follows people's item-to-item variation most closely, on a scale
with a ceiling (people's own split-half reliability); the log-likelihood has
none. The bootstrap resamples participants and the role-noun sets the items
come in (20 sets; each set's items share its variants and their corpus counts).
"""
from __future__ import annotations

import pandas as pd

from studies.ranking import RankingSpec

METHOD = "posterior"
NEUTRAL = "G-NEUT"


def item_scores(run, state, lm) -> pd.DataFrame:
    from studies.role_nouns.steps import model_predictions

    probs = model_predictions(run, state.prior, lm).item_probs
    chosen = probs[(probs["method"] == METHOD) & (probs["variant_gender"] == NEUTRAL)]
    return pd.DataFrame({"item": chosen["item"].astype(str).to_numpy(),
                         "role_noun_set": chosen["role_noun_set"].astype(str).to_numpy(),
                         "score": chosen["prob"].to_numpy(dtype=float)})


def people(run, state) -> pd.DataFrame:
    trials = state.trials
    return pd.DataFrame({"participant": trials["participant"].to_numpy(),
                         "item": trials["item"].astype(str).to_numpy(),
                         "neutral": (trials["response_gender"] == NEUTRAL).to_numpy(dtype=float)})


SPEC = RankingSpec(
    statistic="correlation of the model's probability of the gender-neutral role noun with "
              "people's share of gender-neutral responses",
    items="the name and role-noun items",
    item_scores=item_scores, people=people, item_keys=("item",), rating="neutral",
    participant="participant", cluster="role_noun_set", delta=0.10)

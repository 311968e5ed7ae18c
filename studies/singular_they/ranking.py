"""singular_they's primary model-vs-people statistic, for ranking many models (issue 42).

The statistic: over the scored stimuli, the Pearson correlation of a model's
log-probability of the target form (minus its surprisal) with people's mean
acceptability rating of the sentence; higher is more like people. The bootstrap
resamples participants and the sentence frames the items are built from, the
unit the items cluster in. With the default SIMULATED panel the ranking is
labelled SIMULATED, like every table built from the panel.
"""
from __future__ import annotations

import pandas as pd

from studies.ranking import RankingSpec
from studies.singular_they import analysis as A


def item_scores(run, state, lm) -> pd.DataFrame:
    scored = A.score_targets(state.stimuli, lm, **run.cache)
    cluster = "frame" if "frame" in scored.columns else "item"
    return pd.DataFrame({"item": scored["item"].to_numpy(),
                         "frame": scored[cluster].astype(str).to_numpy(),
                         "score": -scored["surprisal"].to_numpy(dtype=float)})


def people(run, state) -> pd.DataFrame:
    human = state.human
    return pd.DataFrame({"participant": human["participant"].to_numpy(),
                         "item": human["item"].to_numpy(),
                         "rating": pd.to_numeric(human["rating"]).to_numpy(dtype=float)})


SPEC = RankingSpec(
    statistic="correlation of the model's log-probability of the target form with people's "
              "mean acceptability rating",
    items="the scored sentences",
    item_scores=item_scores, people=people, item_keys=("item",), rating="rating",
    participant="participant", cluster="frame", delta=0.10,
    simulated=lambda run, state: bool(state.simulated))

"""A SIMULATED panel of participants for the singular-*they* study.

The Camilliere et al. (2021) judgements are not public, so that the study runs
end to end on a fresh machine it can run on this documented hierarchical model
instead. Every number below is ILLUSTRATIVE: chosen to resemble the published
qualitative pattern (non-innovators reject *they* with gendered antecedents,
innovators less so, super-innovators accept it almost everywhere), not
estimated from any data. Nothing computed from this panel is evidence about
people.

Generative model, for participant p in stage s rating item i of antecedent
type t on a continuous 1-7 scale (think of a slider):

    rating_pi = mu[s, t] + u_p + w_i + e_pi,
    u_p ~ N(0, SD_PARTICIPANT^2), w_i ~ N(0, SD_ITEM^2), e_pi ~ N(0, SD_RESIDUAL^2)

(no clipping, so that the linear mixed model is exactly the generating model).

Design: a Latin square over frames, as in a real experiment: participant p sees
frame f in antecedent type (f + p) mod 8, so each participant rates 40 frame
items (5 of each type) plus all 15 inanimate controls.

Stage sizes are those Watson et al. (2023) report for the Camilliere data:
43 non-innovators, 89 innovators, 16 super-innovators (148 people). The
nonbinary-acceptance scores are exactly the distribution they report (0: 42,
1: 37, 2: 43, 3: 20, 4: 3, 5: 1 people; 146 scores, so 2 people have none).
How the scores go with stage is not published; here they are dealt out by
rank of an illustrative stage-dependent latent value (NB_LATENT_SHIFT), so that
super-innovators tend to accept more, as in the paper.

The panel rates the study's stimuli by their ids, so with the published
stimuli (the default) its keys are those of a real `camilliere_data.txt`:
stimulus ids built from (`cond`, `itm`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from studies.singular_they.stimuli import BOLD_TYPES

STAGES = ["non-innovator", "innovator", "super-innovator"]
STAGE_SIZES = {"non-innovator": 43, "innovator": 89, "super-innovator": 16}
FRAME_TYPES = ["gendered_name", "nongendered_name", "close_gendered", "distant_gendered",
               "close_nongendered", "distant_nongendered", "quantified", "plural"]

# mu[stage][antecedent type]: mean rating (1 = unnatural, 7 = natural). Illustrative.
STAGE_MEANS = {
    "non-innovator": {"plural": 6.5, "quantified": 6.0, "distant_nongendered": 5.4,
                      "close_nongendered": 4.8, "nongendered_name": 4.0, "distant_gendered": 2.6,
                      "close_gendered": 2.2, "gendered_name": 2.0, "inanimate": 1.5},
    "innovator": {"plural": 6.5, "quantified": 6.2, "distant_nongendered": 6.0,
                  "close_nongendered": 5.6, "nongendered_name": 5.2, "distant_gendered": 3.6,
                  "close_gendered": 3.0, "gendered_name": 3.2, "inanimate": 1.5},
    "super-innovator": {"plural": 6.5, "quantified": 6.4, "distant_nongendered": 6.3,
                        "close_nongendered": 6.2, "nongendered_name": 6.0, "distant_gendered": 5.5,
                        "close_gendered": 5.2, "gendered_name": 5.3, "inanimate": 1.8},
}
SD_PARTICIPANT, SD_ITEM, SD_RESIDUAL = 0.6, 0.4, 1.0
# Nonbinary acceptance 0-5: number of people per score (Watson et al. 2023); the
# rest of the 148 have no score. The latent value that orders people before the
# scores are dealt out: stage shift + N(0, 1), illustrative.
NB_ACCEPTANCE_COUNTS = {0: 42, 1: 37, 2: 43, 3: 20, 4: 3, 5: 1}
NB_LATENT_SHIFT = {"non-innovator": 0.0, "innovator": 0.2, "super-innovator": 1.2}
# Familiarity (0-3) per stage: category probabilities, illustrative.
FAMILIARITY_P = {"non-innovator": [0.55, 0.30, 0.10, 0.05],
                 "innovator": [0.60, 0.30, 0.07, 0.03],
                 "super-innovator": [0.25, 0.35, 0.25, 0.15]}


def deal_nb_acceptance(stages: list[str], rng: np.random.Generator,
                       counts: dict[int, int] | None = None) -> list[float]:
    """One score per person (NaN for the unscored), with exactly `counts` of each score.

    The unscored are drawn at random; the scored are ranked by their latent
    value and take the scores in increasing order, so the marginal counts are
    the published ones. A panel smaller than the published one (a test's)
    gets a random sample of the published scores instead, one per person.
    """
    counts = counts or NB_ACCEPTANCE_COUNTS
    scores = [score for score, n in sorted(counts.items()) for _ in range(n)]
    n = len(stages)
    if n < len(scores):
        scores = sorted(rng.choice(scores, size=n, replace=False))
    latent = np.array([NB_LATENT_SHIFT[s] for s in stages]) + rng.normal(0, 1, n)
    scored = np.sort(rng.choice(n, size=len(scores), replace=False))
    out = np.full(n, np.nan)
    out[scored[np.argsort(latent[scored], kind="stable")]] = scores
    return list(out)


def simulate_panel(stimuli: pd.DataFrame, seed: int = 2023,
                   stage_sizes: dict[str, int] | None = None,
                   nb_counts: dict[int, int] | None = None) -> pd.DataFrame:
    """Trial-level SIMULATED ratings, one row per participant x item seen.

    `nb_counts` (default NB_ACCEPTANCE_COUNTS) is the acceptance distribution.
    """
    rng = np.random.default_rng(seed)
    sizes = stage_sizes or STAGE_SIZES
    items = stimuli.set_index("item")
    item_effect = pd.Series(rng.normal(0, SD_ITEM, len(items)), index=items.index)
    in_frames = stimuli[stimuli["antecedent_type"] != "inanimate"]
    item_of = {(f, t): i for f, t, i in zip(in_frames["frame"], in_frames["antecedent_type"],
                                            in_frames["item"])}
    frames = sorted(in_frames["frame"].unique())
    controls = list(stimuli.loc[stimuli["antecedent_type"] == "inanimate", "item"])
    people = [stage for stage in STAGES for _ in range(sizes[stage])]
    nb_scores = deal_nb_acceptance(people, rng, nb_counts)
    rows = []
    for p_index, stage in enumerate(people):
        pid = f"sim{p_index + 1:03d}"
        u = rng.normal(0, SD_PARTICIPANT)
        fam = int(rng.choice(4, p=FAMILIARITY_P[stage]))
        seen = [item_of[(frame, FRAME_TYPES[(f + p_index) % 8])]
                for f, frame in enumerate(frames)]
        for item in seen + controls:
            t = items.at[item, "antecedent_type"]
            mean = STAGE_MEANS[stage][t] + u + item_effect[item]
            rows.append((pid, item, stage, nb_scores[p_index], fam,
                         mean + rng.normal(0, SD_RESIDUAL)))
    return pd.DataFrame(rows, columns=["participant", "item", "stage", "nb_acceptance",
                                       "familiarity", "rating"])


def expected_close_gendered_effects(stage_sizes: dict[str, int] | None = None) -> dict[str, float]:
    """The population fixed effects of `rating ~ close * gendered` implied by the panel.

    With every participant rating every bold condition equally often (the Latin
    square guarantees 5 items per type per participant), the pooled cell mean is
    the participant-weighted average of the stage means. With 0/1 indicators
    `close` and `gendered` (reference: distant, not gendered):
        (Intercept)     = m[distant, no]
        close           = m[close, no] - m[distant, no]
        gendered        = m[distant, yes] - m[distant, no]
        close:gendered  = m[close, yes] - m[close, no] - m[distant, yes] + m[distant, no]
    """
    sizes = stage_sizes or STAGE_SIZES
    total = sum(sizes.values())
    m = {t: sum(sizes[s] / total * STAGE_MEANS[s][t] for s in STAGES) for t in BOLD_TYPES}
    return {
        "(Intercept)": m["distant_nongendered"],
        "close": m["close_nongendered"] - m["distant_nongendered"],
        "gendered": m["distant_gendered"] - m["distant_nongendered"],
        "close:gendered": (m["close_gendered"] - m["close_nongendered"]
                           - m["distant_gendered"] + m["distant_nongendered"]),
    }


def as_camilliere_data(panel: pd.DataFrame, stimuli: pd.DataFrame) -> pd.DataFrame:
    """The panel in the layout of Camilliere et al.'s `camilliere_data.txt`.

    Columns `ID exp cond itm rating clust nBAcc gId`, keyed by the published
    stimuli's (`cond`, `itm`) and the clusters coded as in Watson et al.'s
    analysis code (1 innovator, 2 non-innovator, 3 super-innovator); a missing
    acceptance score is `NA`. Still SIMULATED: this only changes the layout, so
    the real file's path through `--human` can be run and tested end to end.
    """
    from studies.singular_they.human import CAMILLIERE_CLUSTERS

    if not {"cond", "itm"} <= set(stimuli.columns):
        from gbstats.errors import DataValidationError

        raise DataValidationError(
            "the Camilliere layout needs stimuli with (cond, itm) keys", source="stimuli",
            column="cond", expected="the published stimuli (select_stimuli('camilliere2021'))",
            found=f"columns {', '.join(map(str, stimuli.columns))}")
    keys = stimuli.set_index("item")[["cond", "itm"]]
    cluster_of = {stage: code for code, stage in CAMILLIERE_CLUSTERS.items()}
    return pd.DataFrame({
        "ID": panel["participant"].to_numpy(), "exp": "exp",
        "cond": keys.loc[panel["item"], "cond"].to_numpy(),
        "itm": keys.loc[panel["item"], "itm"].astype(int).to_numpy(),
        "rating": panel["rating"].to_numpy(),
        "clust": panel["stage"].map(cluster_of).to_numpy(),
        "nBAcc": panel["nb_acceptance"].astype("Int64").to_numpy(),
        "gId": panel["familiarity"].to_numpy()})

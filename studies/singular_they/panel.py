"""A SIMULATED panel of participants for the singular-*they* study.

The Camilliere et al. (2021) judgements are not public, so that the study runs
end to end on a fresh machine it can run on this documented hierarchical model
instead. Nothing computed from this panel is evidence about people. Two kinds of
parameter, and the report lists every one with its kind
(`parameter_table`, `rating_means_table`; results.json: the same tables and
`provenance.extra.simulated_panel`):

- **Published** (Watson et al. 2023, from the output their analysis code
  records, juliawatson/bert-social-attitudes camilliere/part_4_cluster_correlations.py
  at commit ef1358f): the stage sizes (43 non-innovators, 89 innovators, 16
  super-innovators), the nonbinary-acceptance distribution (0: 42, 1: 37,
  2: 43, 3: 20, 4: 3, 5: 1 people; 146 scores, the 2 people without one are
  non-innovators: "41 of 43"), and, as targets the survey scores are
  calibrated to, each stage's mean acceptance (1.29, 1.27, 2.13) and mean
  familiarity (0.61, 0.49, 1.25).
- **Illustrative** (chosen, not estimated): the mean rating of each stage for
  each antecedent type (STAGE_MEANS: non-innovators reject *they* with gendered
  antecedents, innovators less so, super-innovators accept it almost
  everywhere, the direction Camilliere et al. describe; no rating data are
  public to fit them to), the three standard deviations, and the familiarity
  probabilities (chosen so that their means are near the published ones).

What the panel gives over seeds is a property of these parameters, not of the
seed: `survey_tests_over_seeds` reports it in every run, and
`benchmarks/singular_they_panel.py` compares the parameters before and after
issue 31. Before, innovators' acceptance latent sat 0.2 SD above
non-innovators', so the one-tailed Mann-Whitney test of non-innovators <
innovators came out below .05 in 25% of seeds (.012 at the default seed), where
Watson et al.'s data give .58 (means 1.29 vs 1.27): a difference the
parameters put there. The shifts are now calibrated to the published means.

Generative model, for participant p in stage s rating item i of antecedent
type t on a continuous 1-7 scale (think of a slider):

    rating_pi = mu[s, t] + u_p + w_i + e_pi,
    u_p ~ N(0, SD_PARTICIPANT^2), w_i ~ N(0, SD_ITEM^2), e_pi ~ N(0, SD_RESIDUAL^2)

(no clipping, so that the linear mixed model is exactly the generating model).

Design: a Latin square over frames, as in a real experiment: participant p sees
frame f in antecedent type (f + p) mod 8, so each participant rates 40 frame
items (5 of each type) plus all 15 inanimate controls.

Survey scores: how acceptance goes with stage is published only as the
per-stage means, so the scores are dealt out by rank of a latent value
(NB_LATENT_SHIFT[stage] + N(0, 1)), with shifts calibrated so that each stage's
expected mean is the published one; familiarity is drawn per stage from
FAMILIARITY_P.

The people (stage and survey scores) are drawn first from the seed's random
stream (`simulate_people`), then the ratings, so the people of
`simulate_panel(stimuli, seed)` are `simulate_people(np.random.default_rng(seed))`.

The panel rates the study's stimuli by their ids, so with the published
stimuli (the default) its keys are those of a real `camilliere_data.txt`:
stimulus ids built from (`cond`, `itm`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from studies.singular_they.stimuli import ANTECEDENT_LABELS, BOLD_TYPES

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
# rest of the 148 have no score. Watson et al.'s output lists 41 of 43
# non-innovators with survey scores (and every innovator and super-innovator),
# so the unscored are non-innovators.
NB_ACCEPTANCE_COUNTS = {0: 42, 1: 37, 2: 43, 3: 20, 4: 3, 5: 1}
UNSCORED_STAGE = "non-innovator"
# The latent value that orders people before the scores are dealt out: stage shift
# + N(0, 1). Calibrated (benchmarks/singular_they_panel.py, 1000 seeds) so that each
# stage's expected mean acceptance is the published one: 1.29 / 1.27 / 2.13 give
# equal shifts for the first two stages and 0.8 for super-innovators (expected
# means 1.28 / 1.27 / 2.15 with these counts).
NB_LATENT_SHIFT = {"non-innovator": 0.0, "innovator": 0.0, "super-innovator": 0.8}
# Familiarity (0-3) per stage: category probabilities, illustrative; their means
# (0.65 / 0.53 / 1.30) are near the published 0.61 / 0.49 / 1.25.
FAMILIARITY_P = {"non-innovator": [0.55, 0.30, 0.10, 0.05],
                 "innovator": [0.60, 0.30, 0.07, 0.03],
                 "super-innovator": [0.25, 0.35, 0.25, 0.15]}

# Watson et al.'s (2023) survey summaries of the real participants, as their analysis
# code prints them (juliawatson/bert-social-attitudes, camilliere/part_4_cluster_correlations.py,
# commit ef1358fb0307aeb44bf4ac7f6aae7251e979363b, the output recorded in its comments):
# per-stage means, and one-tailed Mann-Whitney tests (alternative: the earlier stage
# scores lower) between adjacent stages. nBAcc = nonbinary acceptance, gId = gender
# identity and familiarity (the panel's `familiarity`).
WATSON_SURVEY_SOURCE = ("Watson et al. (2023), the recorded output of their cluster "
                        "correlation script in their code repository "
                        "(juliawatson/bert-social-attitudes, commit ef1358f)")
PUBLISHED_SURVEY_MEANS = {
    "nb_acceptance": {"non-innovator": 1.2927, "innovator": 1.2697, "super-innovator": 2.1250},
    "familiarity": {"non-innovator": 0.6098, "innovator": 0.4944, "super-innovator": 1.2500},
}
PUBLISHED_SURVEY_TESTS = {  # (score, earlier stage, later stage): (U, one-tailed p)
    ("nb_acceptance", "non-innovator", "innovator"): (1863.0, 0.58051329),
    ("nb_acceptance", "innovator", "super-innovator"): (452.0, 0.00826344),
    ("familiarity", "non-innovator", "innovator"): (1980.0, 0.81387922),
    ("familiarity", "innovator", "super-innovator"): (516.5, 0.02412112),
}
SCORE_NAMES = {"nb_acceptance": "nonbinary acceptance", "familiarity": "familiarity"}
ADJACENT_STAGES = [("non-innovator", "innovator"), ("innovator", "super-innovator")]
# Seeds over which the report shows what the panel gives (seeds 0 .. N-1).
N_SEEDS_SHOWN = 200


def deal_nb_acceptance(stages: list[str], rng: np.random.Generator,
                       counts: dict[int, int] | None = None) -> list[float]:
    """One score per person (NaN for the unscored), with exactly `counts` of each score.

    The unscored are drawn at random from UNSCORED_STAGE (from everyone where
    that stage has too few people); the scored are ranked by their latent value
    and take the scores in increasing order, so the marginal counts are the
    published ones. A panel smaller than the published one (a test's) gets a
    random sample of the published scores instead, one per person.
    """
    counts = counts or NB_ACCEPTANCE_COUNTS
    scores = [score for score, n in sorted(counts.items()) for _ in range(n)]
    n = len(stages)
    if n < len(scores):
        scores = sorted(rng.choice(scores, size=n, replace=False))
    latent = np.array([NB_LATENT_SHIFT[s] for s in stages]) + rng.normal(0, 1, n)
    n_unscored = n - len(scores)
    pool = np.array([i for i, s in enumerate(stages) if s == UNSCORED_STAGE])
    if len(pool) < n_unscored:
        pool = np.arange(n)
    unscored = rng.choice(pool, size=n_unscored, replace=False)
    scored = np.setdiff1d(np.arange(n), unscored)
    out = np.full(n, np.nan)
    out[scored[np.argsort(latent[scored], kind="stable")]] = scores
    return list(out)


def draw_people(rng: np.random.Generator, stage_sizes: dict[str, int] | None = None,
                nb_counts: dict[int, int] | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(stage, nonbinary acceptance, familiarity) per person, as arrays, in STAGES order."""
    sizes = stage_sizes or STAGE_SIZES
    stages = [stage for stage in STAGES for _ in range(sizes[stage])]
    nb_scores = np.array(deal_nb_acceptance(stages, rng, nb_counts))
    familiarity = np.concatenate([rng.choice(4, size=sizes[stage], p=FAMILIARITY_P[stage])
                                  for stage in STAGES])
    return np.array(stages), nb_scores, familiarity


def simulate_people(rng: np.random.Generator, stage_sizes: dict[str, int] | None = None,
                    nb_counts: dict[int, int] | None = None) -> pd.DataFrame:
    """The SIMULATED participants: id, stage, nonbinary acceptance, familiarity.

    Drawn first from `rng` by `simulate_panel`, so `simulate_people(default_rng(seed))`
    is the panel's people at that seed.
    """
    stages, nb_scores, familiarity = draw_people(rng, stage_sizes, nb_counts)
    return pd.DataFrame({"participant": [f"sim{i + 1:03d}" for i in range(len(stages))],
                         "stage": stages, "nb_acceptance": nb_scores,
                         "familiarity": familiarity})


def simulate_panel(stimuli: pd.DataFrame, seed: int = 2023,
                   stage_sizes: dict[str, int] | None = None,
                   nb_counts: dict[int, int] | None = None) -> pd.DataFrame:
    """Trial-level SIMULATED ratings, one row per participant x item seen.

    `nb_counts` (default NB_ACCEPTANCE_COUNTS) is the acceptance distribution.
    """
    rng = np.random.default_rng(seed)
    people = simulate_people(rng, stage_sizes, nb_counts)
    items = stimuli.set_index("item")
    item_effect = pd.Series(rng.normal(0, SD_ITEM, len(items)), index=items.index)
    in_frames = stimuli[stimuli["antecedent_type"] != "inanimate"]
    item_of = {(f, t): i for f, t, i in zip(in_frames["frame"], in_frames["antecedent_type"],
                                            in_frames["item"])}
    frames = sorted(in_frames["frame"].unique())
    controls = list(stimuli.loc[stimuli["antecedent_type"] == "inanimate", "item"])
    # the Latin square: person p sees frame f in type (f + p) mod 8, then every control
    seen = np.array([[item_of[(frame, FRAME_TYPES[(f + p) % 8])] for f, frame in enumerate(frames)]
                     + controls for p in range(len(people))])
    kinds = items.loc[seen.ravel(), "antecedent_type"].to_numpy().reshape(seen.shape)
    means = np.array([[STAGE_MEANS[stage][kind] for kind in row]
                      for stage, row in zip(people["stage"], kinds)])
    ratings = (means + rng.normal(0, SD_PARTICIPANT, (len(people), 1))
               + item_effect.loc[seen.ravel()].to_numpy().reshape(seen.shape)
               + rng.normal(0, SD_RESIDUAL, seen.shape))
    per_trial = people.loc[people.index.repeat(seen.shape[1])].reset_index(drop=True)
    return pd.DataFrame({"participant": per_trial["participant"], "item": seen.ravel(),
                         "stage": per_trial["stage"],
                         "nb_acceptance": per_trial["nb_acceptance"],
                         "familiarity": per_trial["familiarity"], "rating": ratings.ravel()})


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


# --------------------------------------------------------------------------
# what generated the panel, for the report and results.json

PUBLISHED, CALIBRATED, ILLUSTRATIVE = ("published (Watson et al. 2023)",
                                      "calibrated to a published mean",
                                      "illustrative (chosen, not estimated)")


def _numbers(values) -> str:
    return ", ".join(f"{v:g}" for v in values)


def panel_parameters(seed: int) -> dict:
    """Every generating parameter, JSON-native (results.json: provenance.extra.simulated_panel)."""
    return {
        "seed": seed, "stage_sizes": dict(STAGE_SIZES),
        "nb_acceptance_counts": {str(k): v for k, v in NB_ACCEPTANCE_COUNTS.items()},
        "unscored_stage": UNSCORED_STAGE, "nb_latent_shift": dict(NB_LATENT_SHIFT),
        "familiarity_probabilities": {s: list(p) for s, p in FAMILIARITY_P.items()},
        "stage_means": {s: dict(m) for s, m in STAGE_MEANS.items()},
        "sd_participant": SD_PARTICIPANT, "sd_item": SD_ITEM, "sd_residual": SD_RESIDUAL,
        "design": "Latin square: each participant rates 5 items of each of the 8 frame "
                  "types (40 items) and all 15 inanimate controls",
        "published_survey_means": {k: dict(v) for k, v in PUBLISHED_SURVEY_MEANS.items()},
        "published_survey_source": WATSON_SURVEY_SOURCE,
    }


PARAMETER_FIELDS = ["parameter", "stage", "value", "simulated_mean", "published_mean",
                    "source"]


def parameter_rows(seed: int) -> pd.DataFrame:
    """One row per generating parameter (per stage where it differs), its parts apart: the
    value (text), the mean it implies where that is computed exactly (familiarity), the
    published mean it was chosen or calibrated to match (NaN where none), and its kind
    (PUBLISHED, CALIBRATED, ILLUSTRATIVE or the seed)."""
    none = float("nan")
    rows = [("Participants", s, str(STAGE_SIZES[s]), none, none, PUBLISHED) for s in STAGES]
    rows += [("People per nonbinary acceptance score (0 to 5)", "all",
              _numbers(NB_ACCEPTANCE_COUNTS.values()), none, none, PUBLISHED),
             ("People without an acceptance score", UNSCORED_STAGE,
              str(sum(STAGE_SIZES.values()) - sum(NB_ACCEPTANCE_COUNTS.values())), none, none,
              PUBLISHED)]
    rows += [("Acceptance latent shift (SD units)", s, f"{NB_LATENT_SHIFT[s]:g}", none,
              PUBLISHED_SURVEY_MEANS["nb_acceptance"][s], CALIBRATED) for s in STAGES]
    rows += [("Familiarity probabilities of 0, 1, 2, 3", s, _numbers(FAMILIARITY_P[s]),
              float(np.dot(FAMILIARITY_P[s], range(4))),
              PUBLISHED_SURVEY_MEANS["familiarity"][s], ILLUSTRATIVE) for s in STAGES]
    rows += [("Participant SD (rating points)", "all", f"{SD_PARTICIPANT:g}", none, none,
              ILLUSTRATIVE),
             ("Item SD (rating points)", "all", f"{SD_ITEM:g}", none, none, ILLUSTRATIVE),
             ("Residual SD (rating points)", "all", f"{SD_RESIDUAL:g}", none, none,
              ILLUSTRATIVE),
             ("Mean rating by antecedent type", "each", "next table", none, none,
              ILLUSTRATIVE),
             ("Seed", "all", str(seed), none, none, "this run's --seed")]
    return pd.DataFrame(rows, columns=PARAMETER_FIELDS)


def parameter_table(seed: int) -> pd.DataFrame:
    """One row per generating parameter (per stage where it differs): value and its kind,
    the means it implies and matches written into the value (results.json's table)."""
    rows = parameter_rows(seed)
    value = [v if np.isnan(pub) else f"{v} (published mean {pub:.4g})" if np.isnan(mean)
             else f"{v} (mean {mean:.2f}; published {pub:.4g})"
             for v, mean, pub in zip(rows["value"], rows["simulated_mean"],
                                     rows["published_mean"])]
    return rows.assign(value=value)[["parameter", "stage", "value", "source"]]


def rating_means_table() -> pd.DataFrame:
    """STAGE_MEANS as a table: one row per antecedent type, one column per stage."""
    types = list(STAGE_MEANS[STAGES[0]])
    order = [t for t in ANTECEDENT_LABELS if t in types]
    return pd.DataFrame({"antecedent_type": [ANTECEDENT_LABELS[t] for t in order],
                         **{s: [float(STAGE_MEANS[s][t]) for t in order] for s in STAGES}})


def _survey_samples(stages, nb_scores, familiarity) -> dict[tuple[str, str], np.ndarray]:
    """(score, stage) -> the people's scores, without the unscored."""
    out = {}
    for score, values in (("nb_acceptance", nb_scores), ("familiarity", familiarity)):
        values = np.asarray(values, dtype=float)
        for stage in STAGES:
            out[(score, stage)] = values[(stages == stage) & ~np.isnan(values)]
    return out


def survey_tests(samples: list[dict[tuple[str, str], np.ndarray]]
                 ) -> dict[tuple[str, str, str], np.ndarray]:
    """One-tailed Mann-Whitney p (earlier stage lower) of each survey score between adjacent
    stages, one p per sample set (`_survey_samples`), as the study's `stage_mann_whitney`
    computes it: scipy's mannwhitneyu with its defaults, which pingouin's mwu (used there)
    calls. Sets of equal sizes are tested in one vectorised call."""
    from scipy.stats import mannwhitneyu

    out = {}
    for score in ("nb_acceptance", "familiarity"):
        for a, b in ADJACENT_STAGES:
            xa = [s[(score, a)] for s in samples]
            xb = [s[(score, b)] for s in samples]
            if len({len(x) for x in xa}) == 1 and len({len(x) for x in xb}) == 1:
                p = mannwhitneyu(np.stack(xa), np.stack(xb), alternative="less", axis=1).pvalue
            else:
                p = [mannwhitneyu(x, y, alternative="less").pvalue for x, y in zip(xa, xb)]
            out[(score, a, b)] = np.asarray(p, dtype=float)
    return out


def survey_tests_over_seeds(seed: int, n_seeds: int = N_SEEDS_SHOWN) -> pd.DataFrame:
    """What the panel's survey-score tests give at this seed and over seeds 0..n_seeds-1,
    beside Watson et al.'s p on the real participants: a test that comes out "significant"
    at one seed is a property of the parameters only if it does so over seeds."""
    here = survey_tests([_survey_samples(*draw_people(np.random.default_rng(seed)))])
    over = survey_tests([_survey_samples(*draw_people(np.random.default_rng(s)))
                         for s in range(n_seeds)])
    rows = []
    for key, (_, published_p) in PUBLISHED_SURVEY_TESTS.items():
        score, a, b = key
        rows.append({"score": SCORE_NAMES[score], "earlier_stage": a, "later_stage": b,
                     "p_this_seed": float(here[key][0]),
                     "p_median_over_seeds": float(np.median(over[key])),
                     "share_p_below_05": float(np.mean(over[key] < 0.05)), "n_seeds": n_seeds,
                     "p_published": published_p})
    return pd.DataFrame(rows)

"""People and the model, per name item: do men and non-male participants differ in how
closely the model follows them?

Groups are the authors' `SubjGenderMale`: 1 = men; 0 = everyone else who gave a
gender, which the codebooks (`exp*_data_about.txt`) say is women and a few
nonbinary, genderfluid, agender and asexual participants (Exp 1: 196 female, 1
genderfluid, 1 nonbinary; Exp 3: 638 female, 2 nonbinary, 1 agender, 1 asexual). So
the groups are "men" and "non-male participants", never "women". Participants
without a recorded gender are left out and counted.

The analyses use the like-for-like quantity (`model_side.PRIMARY_SET`): people's
she-responses among their he and she responses, against the model's P(she) /
(P(he) + P(she)); Other responses are left out and counted. An item is a name as
shown in one condition (Exp 3 shows each full name in all three conditions, and
the model's prompt differs between them).

What is reported (gbstats.alignment.group_comparison; README, "Which alignment
number to cite"):

1. the ceiling: how far the groups' item profiles differ at all
   (`profile_agreement`: their correlation corrected for both groups' noise, and
   the largest difference in alignment it leaves any model);
2. the primary test, declared as such: the difference of the groups' corrected
   correlations with the model (`corrected_comparison_rows`), one family over the
   two experiments, Holm-adjusted, with an equivalence test (TOST) at a stated
   bound on the corrected-correlation scale;
3. secondary: the same comparison per condition (one family), and the alignment
   GLMM (`ALIGNMENT_FORMULA`, lme4; its Bayesian twin with --alignment-twin) whose
   `model_logit:group` term is the difference in how strongly each group's choices
   follow the model, with item x group random effects and the design's own
   predictors (condition, rating), one family over the two experiments;
4. the raw item-level correlations of the model with all people, Holm within
   their family (experiments x conditions).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

MEN, NON_MALE = "men", "non-male participants"
GROUP_LABELS = {0.0: NON_MALE, 1.0: MEN}
GROUP_ORDER = [MEN, NON_MALE]
ALIGNMENT_FORMULA = ("She ~ group * (model_logit + Condition + GenderRatingCentered) "
                     "+ (1 + model_logit | Participant) + (1 + group | Item) + (1 | FirstName)")
EQUIVALENCE_BOUND = 0.10
ITEM_KEYS = ("Item", "Condition")
# bobyqa in both of glmer's stages: with the default (bobyqa, then Nelder-Mead) the Exp 1 fit
# ended on a degenerate Hessian and the Exp 3 fit at max|grad| 0.046
ALIGNMENT_OPTIMIZER = "bobyqa"
NOT_CONVERGED = "not interpretable: lme4 did not converge (see the report's warnings)"


def group_trials(trials: pd.DataFrame, scored_items: pd.DataFrame, log, experiment: int
                 ) -> pd.DataFrame:
    """The experiment's he/she trials with a group and the model's score of the item they
    showed (name x condition); every trial left out is counted."""
    from studies.name_gender.human import name_parts

    t = trials.rename(columns={"SubjID": "Participant"})
    first, _ = name_parts(trials)
    t = t.assign(GenderRatingCentered=t["GenderRating"] - t["GenderRating"].mean(),
                 FirstName=first)
    t = log.drop(t, t["SubjGenderMale"].isna(),
                 f"Exp {experiment}: participant gender not recorded (left out of the group "
                 "analyses)", unit="trials", stage="alignment")
    t = log.drop(t, t["Other"] == 1,
                 f"Exp {experiment}: Other response (the group analyses compare she among he "
                 "and she responses with the model's P(she) / (P(he) + P(she)))",
                 unit="trials", stage="alignment")
    scored = scored_items[scored_items["experiment"] == experiment].set_index(
        ["item_key", "Condition"])
    keys = pd.MultiIndex.from_frame(t[["Item", "Condition"]])
    t = log.drop(t, ~keys.isin(scored.index),
                 f"Exp {experiment}: name item without a model score (not shown by any list "
                 "of the stimuli workbook)", unit="trials", stage="alignment")
    keys = pd.MultiIndex.from_frame(t[["Item", "Condition"]])
    group = pd.Categorical(t["SubjGenderMale"].map(GROUP_LABELS), categories=GROUP_ORDER)
    return t.assign(group=group,
                    share_two_way=scored["share_two_way"].reindex(keys).to_numpy(),
                    model_logit=scored["logit_two_way"].reindex(keys).to_numpy()
                    ).reset_index(drop=True)


def item_scores(scored_items: pd.DataFrame, experiment: int,
                condition: str | None = None) -> pd.DataFrame:
    """The model's two-way share per item (name x condition) for the alignment functions,
    with the first name each item belongs to (the unit the group bootstrap draws)."""
    part = scored_items[scored_items["experiment"] == experiment]
    if condition is not None:
        part = part[part["Condition"] == condition]
    out = part.rename(columns={"item_key": "Item"})[["Item", "Condition", "share_two_way"]]
    return out.assign(first_name=first_name_of(out["Item"]).to_numpy())


# Replicates of the item-correlation bootstrap over first names.
ITEM_R_BOOT = 2000


def first_name_of(item_key: pd.Series) -> pd.Series:
    """The first name an item belongs to: Exp 1-2 items are first names, Exp 3-4 items
    full names ("Blair Young"), whose first word is the first name."""
    return item_key.astype(str).str.split().str[0]


def item_correlations(items: pd.DataFrame, *, n_boot: int = ITEM_R_BOOT,
                      seed: int = 2023) -> pd.DataFrame:
    """Pearson r over name items (name x condition) of the model's two-way P(she) with
    people's share of she among he/she responses, per experiment (all items) and per
    experiment x condition; Holm within the family of all these tests.

    The unit of inference is the first name (issue 40): Exp 3's 189 items are 21 first
    names x 3 surnames x 3 conditions, so the items of one first name are not independent,
    and a Fisher-z interval with the items as units was 1.8 times too narrow. The interval
    is the percentile interval of a bootstrap that resamples first names (every item of a
    drawn name, `n_boot` replicates, seeded), and p inverts it (2 min(#r* <= 0, #r* >= 0)
    + 1) / (B + 1), never below 2 / (B + 1). Without an item_key (a caller's own table),
    each item is its own unit."""
    from gbstats.alignment.group_comparison import holm_within_families

    parts = [((e, "all"), p) for e, p in items.groupby("experiment")]
    parts += [(k, p) for k, p in items.groupby(["experiment", "Condition"])]
    rng = np.random.default_rng(seed)
    rows = []
    for (exp, cond), part in parts:
        part = part.dropna(subset=["share_two_way", "she_share"])
        n = len(part)
        units = (first_name_of(part["item_key"]) if "item_key" in part
                 else pd.Series(np.arange(n), index=part.index).astype(str))
        r = stats.pearsonr(part["share_two_way"], part["she_share"])[0]
        draws = cluster_bootstrap_r(part["share_two_way"].to_numpy(float),
                                    part["she_share"].to_numpy(float), units.to_numpy(),
                                    n_boot, rng)
        low, high = np.nanquantile(draws, [0.025, 0.975])
        defined = draws[np.isfinite(draws)]
        p = min(1.0, 2 * (min((defined <= 0).sum(), (defined >= 0).sum()) + 1)
                / (defined.size + 1))
        rows.append({"experiment": exp, "condition": cond, "n_items": n,
                     "n_first_names": int(units.nunique()), "r": r, "ci_low": low,
                     "ci_high": high, "p_value": p,
                     "spearman_rho": stats.spearmanr(part["share_two_way"],
                                                     part["she_share"])[0],
                     "unit": "first names", "n_boot": int(defined.size),
                     "family": "model vs all people, item r"})
    return holm_within_families(pd.DataFrame(rows)).drop(columns="family")


def cluster_bootstrap_r(x: np.ndarray, y: np.ndarray, units: np.ndarray, n_boot: int,
                        rng: np.random.Generator) -> np.ndarray:
    """Pearson r of x and y over items for `n_boot` replicates that each draw the units
    (clusters of items) with replacement and keep every item of a drawn unit."""
    from gbstats.alignment.reliability import multinomial_weights, weighted_correlation

    codes, index = np.unique(units, return_inverse=True)
    weights = multinomial_weights(len(codes), n_boot, rng)[:, index]
    return weighted_correlation(np.broadcast_to(x, weights.shape),
                                np.broadcast_to(y, weights.shape), weights)


def glmm_comparison_rows(fits: dict) -> pd.DataFrame:
    """The alignment GLMM's model_logit:group rows as secondary group comparisons (one
    family over the experiments; no equivalence bound on the log-odds scale)."""
    from gbstats.mixed.fitting import frequentist_notes

    rows = []
    for exp, group in fits.items():
        fit = group.get("lme4")
        if fit is None:
            continue
        troubled = any(word in note.lower() for note in frequentist_notes({"lme4": fit})
                       for word in ("converge", "hessian"))
        term = fit.coefs[fit.coefs["term"].str.startswith("group") &
                         fit.coefs["term"].str.endswith(":model_logit")]
        for c in term.itertuples():
            rows.append({"experiment": exp, "family": "secondary: alignment GLMM",
                         "group_a": NON_MALE, "group_b": MEN,
                         "test": f"alignment GLMM, {c.term} (Wald z)", "primary": False,
                         "converged": not troubled,
                         "scale": "log-odds of she per unit of the model's logit",
                         "estimate": c.estimate, "se": c.se, "ci_low": c.ci_low,
                         "ci_high": c.ci_high, "p_value": c.p_value,
                         "equivalence_bound": np.nan})
    return pd.DataFrame(rows)

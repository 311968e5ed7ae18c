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
    """The model's two-way share per item (name x condition) for the alignment functions."""
    part = scored_items[scored_items["experiment"] == experiment]
    if condition is not None:
        part = part[part["Condition"] == condition]
    return part.rename(columns={"item_key": "Item"})[["Item", "Condition", "share_two_way"]]


def item_correlations(items: pd.DataFrame) -> pd.DataFrame:
    """Pearson r over name items (name x condition) of the model's two-way P(she) with
    people's share of she among he/she responses, per experiment (all items) and per
    experiment x condition; 95% Fisher-z interval with items as the units; Holm within
    the family of all these tests."""
    from gbstats.alignment.group_comparison import holm_within_families

    parts = [((e, "all"), p) for e, p in items.groupby("experiment")]
    parts += [(k, p) for k, p in items.groupby(["experiment", "Condition"])]
    rows = []
    for (exp, cond), part in parts:
        part = part.dropna(subset=["share_two_way", "she_share"])
        n = len(part)
        r, p = stats.pearsonr(part["share_two_way"], part["she_share"])
        z, half = np.arctanh(r), 1.96 / np.sqrt(n - 3)
        rows.append({"experiment": exp, "condition": cond, "n_items": n, "r": r,
                     "ci_low": np.tanh(z - half), "ci_high": np.tanh(z + half), "p_value": p,
                     "spearman_rho": stats.spearmanr(part["share_two_way"],
                                                     part["she_share"])[0],
                     "family": "model vs all people, item r"})
    return holm_within_families(pd.DataFrame(rows)).drop(columns="family")


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

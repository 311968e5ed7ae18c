"""The pronoun-fidelity analyses as pure functions over DataFrames.

Inputs are long tables:
- forced-choice scores (models.forced_choice): one row per item x variant;
- `results`: one row per model x seed x instance, with `pronoun_set`,
  `distractor_set`, `case`, `n_distractors`, `predicted` and `correct`;
- `no_context`: one row per model x occupation x case, the model's
  context-free choice and its probabilities (`p_he`, `p_she`, ...).
"""
from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError, GbstatsError
from gbstats.exclusions import ExclusionLog
from studies.pronoun_fidelity.instances import CASES, PRONOUN_ORDER, PRONOUN_SETS, task_frame

CHANCE = 1 / len(PRONOUN_SETS)
GLMM_FORMULA = ("correct ~ n_distractors * pronoun_set + case + (1|occupation) "
                "+ (1|context_template)")
# The paper's comparisons (Gautam et al. 2024, Table 5): adjacent pronoun sets plus she vs
# xe, and accusative vs each other case
WELCH_COMPARISONS = [("pronoun_set", "he", "she"), ("pronoun_set", "she", "they"),
                     ("pronoun_set", "she", "xe"), ("pronoun_set", "they", "xe"),
                     ("case", "accusative", "nominative"), ("case", "accusative", "possessive")]
WELCH_DISTRACTORS = (0, 5)
ATTRIBUTION_CATEGORIES = ("distraction", "bias", "other")
# masked LMs: the RUFF authors' PLL variant (see score_frames)
RUFF_PLL = "pll_word_l2r"


def variants_for_case(case: str) -> list[str]:
    """The 4 forms in the case, in PRONOUN_ORDER (unique within a case: her/her never meet)."""
    return [PRONOUN_SETS[s][case] for s in PRONOUN_ORDER]


def pronoun_set_of_form(case: str) -> dict[str, str]:
    return {PRONOUN_SETS[s][case]: s for s in PRONOUN_ORDER}


# --- scoring ---------------------------------------------------------------------

def score_frames(frames: pd.DataFrame, lm, *, item: str, use_cache: bool = True,
                 cache_dir=None, progress: bool | None = None,
                 batch_size: int = 32) -> pd.DataFrame:
    """Forced choice over the 4 pronouns of each frame's case, whole text scored.

    `span="sentence"`: causal LMs score log P(pronoun + rest | prefix) (the
    prefix is shared by the 4 variants, so the argmax is the whole text's),
    masked LMs the whole text's PLL, within-word left to right
    (`pll_word_l2r`), as the RUFF authors score (their scripts/score_models.py,
    after Kauf & Ivanova 2023): masking each piece of xe/xem/xyr alone would
    let the other pieces give it away and inflate the neopronouns. Returns
    forced_choice's long table (its `scoring` column records the method) plus
    `case` and `pronoun_set`.
    """
    from models.forced_choice import forced_choice

    parts = []
    for case in CASES:
        rows = frames[frames["case"] == case]
        if rows.empty:
            continue
        scored = forced_choice(list(rows["frame"]), variants_for_case(case), items=list(rows[item]),
                               lm=lm, span="sentence", pll=RUFF_PLL, use_cache=use_cache,
                               cache_dir=cache_dir, progress=progress, batch_size=batch_size)
        scored["case"] = case
        scored["pronoun_set"] = scored["variant"].map(pronoun_set_of_form(case))
        parts.append(scored)
    return pd.concat(parts, ignore_index=True)


def choices(scored: pd.DataFrame, *, item: str = "item", log: ExclusionLog | None = None,
            stage: str = "") -> pd.DataFrame:
    """One row per item: the argmax pronoun set (`predicted`) and p_<set> probabilities.

    Items whose probabilities are NaN (a variant that could not be scored)
    have no prediction; they are dropped and counted in `log`.
    """
    probs = scored.pivot(index="item", columns="pronoun_set", values="probability")
    probs = probs[PRONOUN_ORDER]
    unscored = probs.isna().any(axis=1)
    if log is not None:
        log.record("items with a pronoun that could not be scored (no prediction)",
                   int(unscored.sum()), unit="items", stage=stage)
    probs = probs[~unscored]
    out = pd.DataFrame({item: probs.index, "predicted": probs.idxmax(axis=1).to_numpy()})
    for s in PRONOUN_ORDER:
        out[f"p_{s}"] = probs[s].to_numpy()
    if "scoring" in scored.columns:  # the method each choice came from (causal, or the PLL variant)
        scoring = scored.drop_duplicates("item").set_index("item")["scoring"]
        out["scoring"] = scoring.reindex(out[item]).to_numpy()
    return out.reset_index(drop=True)


def no_context_frames(task: pd.DataFrame) -> pd.DataFrame:
    """The task sentences alone, as frames (item = occupation.case)."""
    return pd.DataFrame({"item": task["item"], "occupation": task["occupation"],
                         "case": task["case"],
                         "frame": [task_frame(s, p) for s, p in zip(task["sentence"],
                                                                    task["pronoun_type"])]})


def join_predictions(instances: pd.DataFrame, predicted: pd.DataFrame) -> pd.DataFrame:
    """Instances with `predicted` and `correct`; instances without a prediction are left out
    (they were counted when `choices` dropped them)."""
    carried = ["instance", "predicted"] + (["scoring"] if "scoring" in predicted.columns else [])
    out = instances.drop(columns=["frame"], errors="ignore").merge(
        predicted[carried], on="instance", how="inner", validate="many_to_one")
    out["correct"] = (out["predicted"] == out["pronoun_set"]).astype(int)
    return out


# --- accuracy and Welch's tests ----------------------------------------------------

def accuracy_by_seed(results: pd.DataFrame, grouping: str | None) -> pd.DataFrame:
    """Accuracy per model x n_distractors x seed (x level of `grouping`)."""
    keys = ["model", "n_distractors", "seed"] + ([grouping] if grouping else [])
    out = results.groupby(keys, observed=True)["correct"].agg(accuracy="mean", n="size")
    out = out.reset_index()
    out["grouping"] = grouping or "all"
    out["level"] = out[grouping] if grouping else "all"
    return out[["model", "n_distractors", "grouping", "level", "seed", "accuracy", "n"]]


def unique_instance_counts(results: pd.DataFrame, grouping: str | None) -> pd.DataFrame:
    """Distinct instances per model x n_distractors (x level): the seeds' samples overlap."""
    keys = ["model", "n_distractors"] + ([grouping] if grouping else [])
    out = results.groupby(keys, observed=True)["instance"].nunique().rename(
        "n_unique_instances").reset_index()
    out["grouping"] = grouping or "all"
    out["level"] = out[grouping] if grouping else "all"
    return out[["model", "n_distractors", "grouping", "level", "n_unique_instances"]]


def accuracy_table(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and SD over seeds of accuracy: overall, by pronoun set and by case.

    `n_instances` counts rows over the seeds; `n_unique_instances` the distinct
    instances among them (fewer: the seeds' samples overlap).
    """
    groupings = (None, "pronoun_set", "case")
    per_seed = pd.concat([accuracy_by_seed(results, g) for g in groupings], ignore_index=True)
    out = per_seed.groupby(["model", "n_distractors", "grouping", "level"], sort=False).agg(
        mean=("accuracy", "mean"), sd=("accuracy", "std"), n_seeds=("seed", "nunique"),
        n_instances=("n", "sum")).reset_index()
    if "instance" in results.columns:
        unique = pd.concat([unique_instance_counts(results, g) for g in groupings],
                           ignore_index=True)
        out = out.merge(unique, on=["model", "n_distractors", "grouping", "level"],
                        how="left", validate="one_to_one")
    out["chance"] = CHANCE
    return sort_levels(out)


LEVEL_ORDER = {level: i for i, level in enumerate(["all", *PRONOUN_ORDER, *CASES])}
GROUPING_ORDER = {"all": 0, "pronoun_set": 1, "case": 2}


def sort_levels(table: pd.DataFrame) -> pd.DataFrame:
    """Rows in reading order: model as given, then grouping, distractors, level (he, she, ...)."""
    model_order = {m: i for i, m in enumerate(table["model"].unique())}
    key = pd.DataFrame({"m": table["model"].map(model_order),
                        "g": table["grouping"].map(GROUPING_ORDER),
                        "n": table["n_distractors"], "l": table["level"].map(LEVEL_ORDER)})
    order = key.sort_values(["m", "g", "n", "l"], kind="stable").index
    return table.loc[order].reset_index(drop=True)


# What the Welch tests can and cannot say; printed with their table.
WELCH_LIMITS = (
    "Limits: each group has 3 per-seed accuracies, so a test has about 2-4 df and detects "
    "only large differences. The 3 seeds' samples overlap (an instance can be drawn by 2 or 3 "
    "seeds), so the accuracies are not independent and their SD understates the sampling "
    "variability: the p-values are not calibrated. They reproduce the paper's comparisons as "
    "a description; the test with the right unit is the GLMM on unique instances (its "
    "pronoun-set terms compare sets at the fewest distractors, with occupation and context "
    "template as random effects).")


def welch_table(results: pd.DataFrame, distractors=WELCH_DISTRACTORS) -> pd.DataFrame:
    """Welch's t-tests of per-seed accuracies for the paper's comparisons.

    The unit is a seed's accuracy (3 per group with the default design), as
    the accuracies are reported as mean and SD over seeds. A comparison that
    cannot be tested (fewer than 2 seeds, no variation) gets NaNs and a note.
    See WELCH_LIMITS for what these tests cannot do.
    """
    from gbstats.inference.hypothesis_tests import correct_pvalues, welch_ttest

    rows = []
    for model in results["model"].unique():
        for n in distractors:
            subset = results[(results["model"] == model) & (results["n_distractors"] == n)]
            if subset.empty:
                continue
            for grouping, a, b in WELCH_COMPARISONS:
                per_seed = accuracy_by_seed(subset, grouping)
                acc_a = per_seed.loc[per_seed["level"] == a, "accuracy"].to_numpy()
                acc_b = per_seed.loc[per_seed["level"] == b, "accuracy"].to_numpy()
                row = {"model": model, "n_distractors": n, "grouping": grouping,
                       "level_a": a, "level_b": b, "n_seeds_a": len(acc_a),
                       "n_seeds_b": len(acc_b), "mean_a": np.mean(acc_a) if len(acc_a) else np.nan,
                       "mean_b": np.mean(acc_b) if len(acc_b) else np.nan}
                try:
                    test = welch_ttest(acc_a, acc_b, label_a=a, label_b=b).iloc[0]
                    row.update(estimate=test["estimate"], ci_low=test["ci_low"],
                               ci_high=test["ci_high"], t=test["statistic"], df=test["df"],
                               p_value=test["p_value"],
                               note=f"numerical: {test['warning']}" if test["warning"] else "")
                except GbstatsError as exc:
                    row.update(estimate=row["mean_a"] - row["mean_b"], ci_low=np.nan,
                               ci_high=np.nan, t=np.nan, df=np.nan, p_value=np.nan,
                               note=f"not tested: {exc}")
                rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["p_holm"] = np.nan
    for model, idx in table.groupby("model").groups.items():
        tested = table.loc[idx].dropna(subset=["p_value"])
        if not tested.empty:
            table.loc[tested.index, "p_holm"] = correct_pvalues(tested, "holm")["p_adjusted"]
    return table


# --- no context: preferences and case consistency ------------------------------------

def case_consistency(no_context: pd.DataFrame) -> pd.DataFrame:
    """One Pearson r per model and pair of cases, as Gautam et al. (2024, Table 5) report it.

    The r is taken over every occupation x pronoun-set cell of the
    context-free probabilities (p_he, p_she, p_they, p_xe of each occupation
    in one case against the same cell in the other), so one number says how
    alike the model's whole context-free distributions are in the two cases.
    `same_choice_share` is the share of occupations whose context-free choice
    is the same in both cases. No p-value or interval is given: the 4 cells of
    an occupation sum to 1 and are not independent, so a Pearson test on them
    would overstate its n. The per-set view is `case_consistency_by_pronoun_set`.
    """
    rows = []
    cells = [f"p_{s}" for s in PRONOUN_ORDER]
    for model, per_model in no_context.groupby("model", sort=False):
        wide_choice = per_model.pivot(index="occupation", columns="case", values="predicted")
        by_cell = per_model.melt(id_vars=["occupation", "case"], value_vars=cells,
                                 var_name="cell", value_name="p").pivot(
            index=["occupation", "cell"], columns="case", values="p")
        for case_a, case_b in combinations(CASES, 2):
            if case_a not in wide_choice or case_b not in wide_choice:
                continue
            both = wide_choice[[case_a, case_b]].dropna()
            paired = by_cell[[case_a, case_b]].dropna()
            row = {"model": model, "case_a": case_a, "case_b": case_b,
                   "n_occupations": int(paired.index.get_level_values("occupation").nunique()),
                   "n_cells": len(paired),
                   "same_choice_share": float((both[case_a] == both[case_b]).mean())
                   if len(both) else np.nan}
            varies = len(paired) >= 3 and paired[case_a].std() > 0 and paired[case_b].std() > 0
            row.update(r=float(np.corrcoef(paired[case_a], paired[case_b])[0, 1])
                       if varies else np.nan,
                       note="" if varies else "not computed: fewer than 3 cells or no variation")
            rows.append(row)
    return pd.DataFrame(rows, columns=["model", "case_a", "case_b", "n_occupations", "n_cells",
                                       "r", "same_choice_share", "note"])


def case_consistency_by_pronoun_set(no_context: pd.DataFrame) -> pd.DataFrame:
    """Pearson r across occupations between two cases' probabilities of a pronoun set.

    gbstats' finer view of `case_consistency`: for every model, pronoun set
    and pair of cases, plus the share of occupations whose context-free
    choice is the same in both cases. A correlation that cannot be computed
    (fewer than 4 occupations, no variation) gets NaNs and a note.
    """
    from gbstats.inference.hypothesis_tests import correlation

    rows = []
    for model, per_model in no_context.groupby("model", sort=False):
        wide_choice = per_model.pivot(index="occupation", columns="case", values="predicted")
        for case_a, case_b in combinations(CASES, 2):
            if case_a not in wide_choice or case_b not in wide_choice:
                continue
            both = wide_choice[[case_a, case_b]].dropna()
            same = float((both[case_a] == both[case_b]).mean()) if len(both) else np.nan
            for pronoun_set in PRONOUN_ORDER:
                wide = per_model.pivot(index="occupation", columns="case",
                                       values=f"p_{pronoun_set}")
                row = {"model": model, "pronoun_set": pronoun_set, "case_a": case_a,
                       "case_b": case_b, "same_choice_share": same}
                try:
                    r = correlation(wide[case_a], wide[case_b], label_x=case_a,
                                    label_y=case_b).iloc[0]
                    row.update(n=int(r["n_a"]), r=r["estimate"], ci_low=r["ci_low"],
                               ci_high=r["ci_high"], p_value=r["p_value"], note="")
                except GbstatsError as exc:
                    row.update(n=int(wide[[case_a, case_b]].dropna().shape[0]), r=np.nan,
                               ci_low=np.nan, ci_high=np.nan, p_value=np.nan,
                               note=f"not computed: {exc}")
                rows.append(row)
    return pd.DataFrame(rows)


def preference_summary(no_context: pd.DataFrame) -> pd.DataFrame:
    """How many occupations prefer each pronoun set without context, by model and case."""
    counts = (no_context.groupby(["model", "case", "predicted"]).size()
              .unstack("predicted", fill_value=0).reindex(columns=PRONOUN_ORDER, fill_value=0))
    return counts.rename(columns=lambda s: f"n_{s}").reset_index()


# --- error attribution --------------------------------------------------------------

def attribute_errors(results: pd.DataFrame, no_context: pd.DataFrame,
                     log: ExclusionLog | None = None) -> pd.DataFrame:
    """The errors, each as distraction / bias / other.

    distraction: the prediction is the distractor pronoun; bias: it is the
    model's context-free choice for that occupation and case; other: neither.
    Errors whose distractor pronoun *is* the context-free choice could be
    either, so they are left out and counted in `log`.
    """
    preferred = no_context[["model", "occupation", "case", "predicted"]].rename(
        columns={"predicted": "context_free"})
    errors = results[results["correct"] == 0].merge(
        preferred, on=["model", "occupation", "case"], how="left", validate="many_to_one")
    no_preference = errors["context_free"].isna()
    if no_preference.any():
        raise GbstatsError(f"{int(no_preference.sum())} errors have no context-free choice for "
                           f"their occupation and case: score the task sentences first")
    ambiguous = (errors["distractor_set"].notna()
                 & (errors["distractor_set"] == errors["context_free"]))
    if log is not None:
        for model in errors["model"].unique():
            of_model = ambiguous & (errors["model"] == model)
            log.record(f"{model}: errors whose distractor pronoun is the context-free choice "
                       f"(ambiguous: distraction or bias)", int(of_model.sum()), unit="errors",
                       stage="error attribution")
    errors = errors[~ambiguous].copy()
    errors["attribution"] = np.select(
        [errors["predicted"] == errors["distractor_set"],
         errors["predicted"] == errors["context_free"]],
        ["distraction", "bias"], default="other")
    return errors


def error_attribution_table(errors: pd.DataFrame) -> pd.DataFrame:
    """Shares of distraction / bias / other errors by number of distractors and by case
    (errors pooled over seeds)."""
    parts = []
    for grouping in ("n_distractors", "case"):
        counts = (errors.groupby(["model", grouping, "attribution"]).size()
                  .unstack("attribution", fill_value=0)
                  .reindex(columns=list(ATTRIBUTION_CATEGORIES), fill_value=0))
        total = counts.sum(axis=1)
        table = pd.DataFrame({"model": counts.index.get_level_values("model"),
                              "grouping": grouping,
                              "level": counts.index.get_level_values(grouping).astype(str),
                              "n_errors": total.to_numpy()})
        for category in ATTRIBUTION_CATEGORIES:
            table[f"n_{category}"] = counts[category].to_numpy()
            table[f"share_{category}"] = (counts[category] / total).to_numpy()
        parts.append(table)
    return pd.concat(parts, ignore_index=True)


# --- beyond the paper: logistic mixed model --------------------------------------------

# Unit of analysis: the unique instance. The 3 seeds draw their samples from
# the same finite set (7,200 instances without distractors), so a pooled table
# holds some instances 2 or 3 times (28% of the rows at 0 distractors with the
# default design). Scoring is deterministic, so a repeat carries the same
# outcome and no new information; counting it as a new observation shrinks the
# standard errors. We fit on unique instances rather than adding (1|instance):
# most instances occur once, so an instance variance would be barely
# identified, and repeats with identical 0/1 outcomes would inflate it towards
# separation; deduplicating gives the same answer with fewer assumptions, and
# duplicating the data leaves the fit unchanged (tested).
#
# Distractors enter as a factor nested in the pronoun set: one log-odds
# effect of k distractors vs none per set and k. A straight line in
# n_distractors assumes fidelity decays at a constant rate, but encoder-only
# models are not monotone (Gautam et al. 2024: on average accuracy falls by 34
# points with one distractor but by 13 points for encoders with five). With
# only 6 distractor counts the factor is the saturated, shape-free choice: no
# knots to pick (a spline on 6 points would save at most 2 df per set, which
# 2,160 instances per count do not need), and each coefficient reads directly.
GLMM_FORMULA = ("correct ~ pronoun_set + pronoun_set:distractors + case + (1|occupation) "
                "+ (1|context_template)")
# The Bayesian twin uses gbstats' default priors (rstanarm's autoscaled
# Normal(0, 2.5 / sd(x)) on the log-odds scale, gbstats.mixed.bayes.PRIOR_SOURCE):
# a decoder falling from 95% to 20% correct is a change of about -4.3, one
# coefficient in the factor parameterisation, and bambi's old Normal(0, 1)
# pulled a simulated -4.5 to -3.2 (tests/stats/test_bayes.py checks the new
# defaults recover it).
#
# The GLMM is quasi-separated for some models (a set x distractor cell with
# every answer correct): glmer's estimate for such a term runs off towards
# infinity and its SE, CI and p depend on where the optimizer stopped. The
# table therefore leads with the penalised fit (blme::bglmer, backend "blme",
# weak Normal(0, 2.5) prior on the fixed effects; gbstats.mixed.lmm.fit_glmm
# (penalised=True)) and keeps the plain glmer fit ("lme4") beside it; the
# separation check names the separated terms in the table's note.
EFFECT_COLUMNS = ["model", "backend", "pronoun_set", "n_distractors", "estimate", "se",
                  "ci_low", "ci_high", "p_value", "monotone_decline"]


def unique_instances(results: pd.DataFrame, log: ExclusionLog | None = None) -> pd.DataFrame:
    """One row per model x instance: the repeats drawn by several seeds are dropped.

    A repeat must agree with the first row on `correct` (scoring is
    deterministic); a disagreement is an error, not something to average.
    The dropped repeats are counted in `log` per model.
    """
    keys = ["model", "instance"] if "model" in results.columns else ["instance"]
    outcomes = results.groupby(keys, sort=False)["correct"].nunique()
    if (outcomes > 1).any():
        first = outcomes[outcomes > 1].index[0]
        raise DataValidationError("one instance has different outcomes in different seeds",
                                  source="instance results", column="correct",
                                  expected="the same prediction for the same text",
                                  found=f"{first!r} scored both right and wrong")
    repeated = results.duplicated(keys)
    if log is not None:
        models = results["model"] if "model" in results.columns else pd.Series("all", results.index)
        for model in models.unique():
            n = int((repeated & (models == model)).sum())
            log.record(f"{model}: instances drawn by more than one seed, counted once in the "
                       "GLMM", n, unit="rows", stage="GLMM")
    return results.loc[~repeated].reset_index(drop=True)


def glmm_rows(results: pd.DataFrame) -> pd.DataFrame:
    """The GLMM's data: unique instances; `distractors` a factor with the fewest as
    reference, `pronoun_set` with `he` as reference."""
    unique = unique_instances(results)
    data = unique[["correct", "n_distractors", "pronoun_set", "case", "occupation",
                   "context_template"]].copy()
    counts = sorted(int(n) for n in data["n_distractors"].unique())
    data["distractors"] = pd.Categorical(data["n_distractors"].astype(int).astype(str),
                                         categories=[str(n) for n in counts])
    data["pronoun_set"] = pd.Categorical(data["pronoun_set"], categories=PRONOUN_ORDER)
    return data


def fit_glmms(results: pd.DataFrame, *, lme4: bool, bayes: bool, draws: int,
              seed: int, notes: list | None = None, max_draws: int | None = None,
              loo: bool = True) -> dict:
    """{backend: FitResult} for GLMM_FORMULA on one model's unique instances:
    "blme" (the penalised fit, the default reading), "lme4" (plain glmer,
    kept beside it) when `lme4`, and "pymc" (the Bayesian twin, refitted up to `max_draws`
    draws per chain, with PSIS-LOO unless `loo` is False) when `bayes`.

    When bglmer itself fails (its penalised IRLS can stop without converging
    on a handful of instances) the glmer fit is still made, and the failure
    is appended to `notes` (the caller shows them) rather than ending the run."""
    from gbstats.errors import GbstatsError

    data = glmm_rows(results)
    fits = {}
    if lme4:
        from gbstats.mixed.lmm import fit_glmm

        try:
            fits["blme"] = fit_glmm(GLMM_FORMULA, data, family="binomial", penalised=True)
        except GbstatsError as exc:
            if notes is None:
                raise
            notes.append(f"the penalised GLMM (bglmer) failed, so only the plain glmer fit is "
                         f"shown: {exc}")
        fits["lme4"] = fit_glmm(GLMM_FORMULA, data, family="binomial", backend="lme4")
    if bayes:
        from gbstats.mixed.fitting import fit_bayes_twin

        fits["pymc"] = fit_bayes_twin(GLMM_FORMULA, data, family="binomial", draws=draws,
                                      tune=draws, seed=seed, max_draws=max_draws, loo=loo)
    return fits


def distractor_effects(fit) -> pd.DataFrame:
    """Per pronoun set and number of distractors: the log-odds change from none.

    Read off the `pronoun_set<set>:distractors<k>` terms of a GLMM_FORMULA fit
    (any backend: lme4 gives Wald SEs, CIs and p; pymc posterior mean, SD and
    95% interval). `monotone_decline` says whether a set's effects never rise
    as distractors are added (starting from 0 at none): False marks the
    non-monotone pattern a linear slope would misdescribe.
    """
    coefs = fit.coefs[fit.coefs["term"].str.contains(":distractors", regex=False)]
    parts = coefs["term"].str.extract(r"^pronoun_set(?P<set>.+):distractors(?P<k>\d+)$")
    table = pd.DataFrame({"pronoun_set": parts["set"].to_numpy(),
                          "n_distractors": parts["k"].astype(int).to_numpy(),
                          "estimate": coefs["estimate"].to_numpy(), "se": coefs["se"].to_numpy(),
                          "ci_low": coefs["ci_low"].to_numpy(),
                          "ci_high": coefs["ci_high"].to_numpy(),
                          "p_value": coefs["p_value"].to_numpy()})
    table = table.sort_values(["pronoun_set", "n_distractors"],
                              key=lambda c: c.map(LEVEL_ORDER) if c.name == "pronoun_set" else c,
                              kind="stable").reset_index(drop=True)
    monotone = {s: bool(np.all(np.diff(np.r_[0.0, rows["estimate"].to_numpy()]) <= 0))
                for s, rows in table.groupby("pronoun_set")}
    table["monotone_decline"] = table["pronoun_set"].map(monotone)
    return table


def effects_table(effects: dict[tuple[str, str], pd.DataFrame]) -> pd.DataFrame:
    """Stack distractor effects keyed by (model, backend)."""
    rows = [d.assign(model=model, backend=backend) for (model, backend), d in effects.items()]
    return (pd.concat(rows, ignore_index=True)[EFFECT_COLUMNS] if rows
            else pd.DataFrame(columns=EFFECT_COLUMNS))


def glmm_table(fits_by_model: dict[str, dict]) -> pd.DataFrame:
    columns = ["model", "backend", "term", "estimate", "se", "ci_low", "ci_high", "p_value"]
    rows = [fit.coefs.assign(model=model, backend=backend)[columns]
            for model, fits in fits_by_model.items() for backend, fit in fits.items()]
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=columns)


# --- figures -------------------------------------------------------------------------

def plot_accuracy(accuracy: pd.DataFrame):
    """Accuracy (mean +- SD over seeds) against the number of distractors, per pronoun set."""
    from gbstats.report.figures import new_figure

    by_set = accuracy[accuracy["grouping"] == "pronoun_set"]
    models = list(by_set["model"].unique())
    fig, axes = new_figure(1, len(models), width=4.2 * len(models), height=3.4, squeeze=False)
    for ax, model in zip(axes[0], models):
        for pronoun_set in PRONOUN_ORDER:
            rows = by_set[(by_set["model"] == model) & (by_set["level"] == pronoun_set)]
            rows = rows.sort_values("n_distractors")
            ax.errorbar(rows["n_distractors"], rows["mean"], yerr=rows["sd"].fillna(0),
                        marker="o", capsize=3, label=pronoun_set)
        ax.axhline(CHANCE, color="grey", linestyle=":", label="chance")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("number of distractor sentences")
        ax.set_ylabel("accuracy (mean ± SD over seeds)")
        ax.set_title(model)
        ax.legend(title="pronoun set", fontsize="small")
    return fig


def plot_error_attribution(attribution: pd.DataFrame):
    """Stacked shares of distraction / bias / other errors by number of distractors."""
    from gbstats.report.figures import new_figure

    by_n = attribution[attribution["grouping"] == "n_distractors"]
    models = list(by_n["model"].unique())
    fig, axes = new_figure(1, max(len(models), 1), width=4.2 * max(len(models), 1), height=3.4,
                           squeeze=False)
    for ax, model in zip(axes[0], models):
        rows = by_n[by_n["model"] == model].sort_values("level", key=lambda s: s.astype(int))
        bottom = np.zeros(len(rows))
        for category in ATTRIBUTION_CATEGORIES:
            values = rows[f"share_{category}"].to_numpy()
            ax.bar(rows["level"], values, bottom=bottom, label=category)
            bottom += values
        ax.set_ylim(0, 1)
        ax.set_xlabel("number of distractor sentences")
        ax.set_ylabel("share of errors")
        ax.set_title(model)
        ax.legend(fontsize="small")
    return fig

"""People beside the model, like for like (issue 31).

* `response_shares`: per experiment and condition, P(she) as one ratio over one option
  set on both sides (`model_side.OPTION_SETS`), people's with a Wilson interval, and how
  much each side the set covers (`gbstats.alignment.like_for_like`). People's singular
  *they* and repeated names are coded in Exp 1 only (`OtherType`), so the three- and
  four-way ratios exist on both sides there; the two-way ratio exists everywhere.
* `effects`: each mirror's condition effects and rating slope, people beside the model,
  each as a conditional (subject-specific) and a population-averaged effect
  (`gbstats.mixed.population`): people's from the GLMM on the he/she trials
  (`human.LIKE_FOR_LIKE_MODELS`) and from the authors' published model (she vs any
  other response), the model's from its LMM of the two-way logit.
* `model_side_models`: the mirrors' coefficients (results.json).
* `they_shares`: Exp 1's singular *they* on both sides, as one ratio over he, she and
  they, with the covered mass (issue 31, reviewer point 6).
* `prompt_sensitivity`: Exp 3's P(she) under each prompt layout, and how far it moves
  from the default.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from gbstats.alignment.like_for_like import people_shares, response_coverage
from gbstats.mixed.population import cells, population_averaged_contrast, slope_rows
from studies.name_gender import human as H
from studies.name_gender.human import HUMAN_MODELS
from studies.name_gender.model_side import MIRRORS, OPTION_SET_LABELS, OPTION_SETS

CONDITIONS = ("first", "full", "last")
# Exp 1 codes what an Other response was; these are the ones with a model counterpart
OTHER_TYPE_OPTIONS = {"they": "singular they", "name": "repeat name"}
PEOPLE_SETS = {1: ("two_way", "three_way", "four_way"), 3: ("two_way",)}


def people_option_columns(trials: pd.DataFrame, experiment: int) -> pd.DataFrame:
    """Trials with 0/1 columns he, she (and in Exp 1 they, name) for the option sets."""
    out = trials.assign(he=trials["He"], she=trials["She"])
    if experiment == 1:
        for option, kind in OTHER_TYPE_OPTIONS.items():
            out[option] = (trials["OtherType"] == kind).astype(int)
    return out


def response_shares(tables: dict, scored: pd.DataFrame) -> pd.DataFrame:
    """Per experiment x condition x option set: people's share of she among the set's
    responses (Wilson 95% interval over trials) and the share of their responses the set
    covers; the model's mean share of she among the set's options and the mean next-word
    mass the options cover. A first row per condition gives people's she-rate among all
    responses (the authors' outcome), which has no model counterpart."""
    rows = []
    for exp, sets in PEOPLE_SETS.items():
        trials = people_option_columns(tables[f"exp{exp}"], exp)
        people = people_shares(trials, {s: OPTION_SETS[s] for s in sets}, target="she",
                               by=["Condition"])
        model = scored[scored["experiment"] == exp].groupby("Condition")
        for cond, part in trials.groupby("Condition"):
            rows.append({"experiment": exp, "condition": cond, "option_set": "all responses",
                         "people_n": len(part), "people_share": part["She"].mean(),
                         "people_ci_low": np.nan, "people_ci_high": np.nan,
                         "people_coverage": 1.0, "model_share": np.nan,
                         "model_coverage": np.nan, "n_prompts": np.nan})
        for r in people.itertuples():
            prompts = model.get_group(r.Condition)
            rows.append({"experiment": exp, "condition": r.Condition,
                         "option_set": OPTION_SET_LABELS[r.option_set],
                         "people_n": r.n_in_set, "people_share": r.share,
                         "people_ci_low": r.ci_low, "people_ci_high": r.ci_high,
                         "people_coverage": r.coverage,
                         "model_share": prompts[f"share_{r.option_set}"].mean(),
                         "model_coverage": prompts[f"coverage_{r.option_set}"].mean(),
                         "n_prompts": len(prompts)})
    out = pd.DataFrame(rows)
    order = {label: k for k, label in enumerate(["all responses", *OPTION_SET_LABELS.values()])}
    return out.sort_values(["experiment", "condition", "option_set"],
                           key=lambda s: s.map(order) if s.name == "option_set" else s
                           ).reset_index(drop=True)


def they_shares(tables: dict, scored: pd.DataFrame) -> pd.DataFrame:
    """Exp 1, singular *they* like for like, per condition: people's they among their he,
    she and singular-they responses (Wilson 95% interval over trials) and the share of all
    their responses those three cover, beside the model's P(they) / (P(he) + P(she) +
    P(they)) and the next-word mass the three cover (means over prompts). People's they
    among all responses and the model's raw next-word P(they) are kept, labelled as such:
    neither is the other's counterpart."""
    three = {"three_way": OPTION_SETS["three_way"]}
    trials = people_option_columns(tables["exp1"], 1)
    people = people_shares(trials, three, target="they", by=["Condition"])
    model = scored[scored["experiment"] == 1].groupby("Condition")
    rows = []
    for r in people.itertuples():
        prompts = model.get_group(r.Condition)
        mass = prompts["coverage_three_way"]
        rows.append({"condition": r.Condition, "people_n": r.n_trials,
                     "people_they_all": r.n_target / r.n_trials, "people_n_in_set": r.n_in_set,
                     "people_share": r.share, "people_ci_low": r.ci_low,
                     "people_ci_high": r.ci_high, "people_coverage": r.coverage,
                     "n_prompts": len(prompts),
                     "model_share": float((prompts["p_raw_they"] / mass).mean()),
                     "model_coverage": float(mass.mean()),
                     "model_raw_they": float(prompts["p_raw_they"].mean())})
    return pd.DataFrame(rows)


def coverage_table(scored: pd.DataFrame) -> pd.DataFrame:
    """`response_coverage` for results.json: per experiment x condition x option set, the
    next-word mass the options cover (mean, min, max over prompts)."""
    table = response_coverage(scored, OPTION_SETS, by=["experiment", "Condition"])
    return table.rename(columns={"Condition": "condition"}).assign(
        option_set=lambda t: t["option_set"].map(OPTION_SET_LABELS))


# --------------------------------------------------------------------------
# effects, conditional and population-averaged

def effect_specs(mirror, tables: dict) -> list[tuple[str, pd.DataFrame, np.ndarray]]:
    """(effect name, design rows, weights) of a mirror's effects, the rating at its centre:
    "last minus first and full" (the mean of the two), "full minus first" and, with the
    rating, "rating slope" (per point, averaged over the conditions with the weights that
    centre the authors' coding: equal for the fixed codes, trial counts for the centred
    Helmert coding)."""
    conditions = ["first", "full"] + (["last"] if mirror.subset == "all" else [])
    at = {"Condition": conditions}
    if mirror.has_rating:
        at["GenderRatingCentered"] = [0.0]
    grid = cells(at)
    specs = []
    if "last" in conditions:
        w = grid["Condition"].map({"first": -0.5, "full": -0.5, "last": 1.0}).to_numpy()
        specs.append(("last minus first and full", grid, w))
    w = grid["Condition"].map({"first": -1.0, "full": 1.0, "last": 0.0}).to_numpy()
    specs.append(("full minus first", grid, w))
    if mirror.has_rating:
        if mirror.coding == "centered_helmert":
            counts = tables[f"exp{mirror.experiment}"]["Condition"].value_counts()
            share = (counts / counts.sum()).reindex(conditions).to_numpy()
        else:
            share = np.full(len(conditions), 1 / len(conditions))
        rows, w = slope_rows(grid, "GenderRatingCentered")
        w = w * np.tile(share * len(conditions), 2)
        specs.append(("rating slope (per point)", rows, w))
    return specs


EFFECT_SOURCES = {
    "published": "People, authors' model",
    "like_for_like": "People, like for like",
    "model": "Model",
}


def effects(human_fits: dict, like_fits: dict, model_fits: dict, tables: dict) -> pd.DataFrame:
    """Long table: experiment, model (the authors' model mirrored), effect, source, scale
    (conditional / population-averaged), estimate, std_error, ci_low, ci_high, sigma2 (the
    variance averaged over). Log-odds of she."""
    rows = []
    for mirror in MIRRORS:
        published = f"exp{mirror.experiment}_{mirror.model}"
        sources = {"published": (human_fits.get(published, {}).get("lme4"), False),
                   "like_for_like": (like_fits.get(mirror.people_key, {}).get("lme4"), False),
                   "model": (model_fits.get(mirror.key, {}).get("lme4"), True)}
        for effect, grid, weights in effect_specs(mirror, tables):
            for source, (fit, logit_response) in sources.items():
                if fit is None:
                    continue
                if not set(grid.columns) <= _predictors(fit):
                    continue
                out = population_averaged_contrast(fit, grid, weights,
                                                   logit_response=logit_response)
                for scale, key in (("conditional", "conditional"),
                                   ("population-averaged", "marginal")):
                    rows.append({"experiment": mirror.experiment, "model": mirror.model,
                                 "effect": effect, "source": EFFECT_SOURCES[source],
                                 "scale": scale, "estimate": out[key],
                                 "std_error": out[f"{key}_se"], "ci_low": out[f"{key}_ci_low"],
                                 "ci_high": out[f"{key}_ci_high"],
                                 "sigma2": out["random_intercept_variance"]})
    return pd.DataFrame(rows)


def _predictors(fit) -> set:
    from gbstats.mixed.formula import parse_formula

    return set(parse_formula(fit.formula).predictors)


def effects_wide(table: pd.DataFrame) -> pd.DataFrame:
    """`effects` as the report shows it: one row per experiment x model x effect, one column
    per source x scale, each "estimate [low, high]"."""
    if table.empty:
        return table
    text = table.assign(value=[f"{e:.2f} [{lo:.2f}, {hi:.2f}]" for e, lo, hi in
                               zip(table["estimate"], table["ci_low"], table["ci_high"])])
    text["column"] = text["source"] + ", " + text["scale"]
    wide = text.pivot_table(index=["experiment", "model", "effect"], columns="column",
                            values="value", aggfunc="first", sort=False)
    order = [f"{EFFECT_SOURCES[s]}, {sc}" for s in ("published", "like_for_like", "model")
             for sc in ("conditional", "population-averaged")]
    return wide[[c for c in order if c in wide.columns]].reset_index().fillna("")


def model_side_models(model_fits: dict) -> pd.DataFrame:
    """results.json's `model_side_models`: experiment, the authors' model each mirrors,
    formula, term (R's), coefficient (the report's name, `coefficients`), estimate,
    std_error, df, p_value and interval (lme4, Satterthwaite)."""
    from studies.name_gender.coefficients import coefficient_names

    rows = []
    for mirror in MIRRORS:
        for backend, fit in model_fits.get(mirror.key, {}).items():
            names = coefficient_names(fit)
            for c in fit.coefs.itertuples():
                rows.append({"experiment": mirror.experiment, "model": mirror.model,
                             "backend": backend, "formula": fit.formula, "term": c.term,
                             "coefficient": names.get(c.term, c.term),
                             "estimate": c.estimate, "std_error": c.se, "df": c.df,
                             "ci_low": c.ci_low, "ci_high": c.ci_high, "p_value": c.p_value})
    return pd.DataFrame(rows)


def authors_model(experiment: int, model: str):
    return next(s for s in HUMAN_MODELS if s.experiment == experiment and s.model == model)


# --------------------------------------------------------------------------
# the prompt's layout (Exp 3)

def prompt_sensitivity(variants: pd.DataFrame, default: str) -> pd.DataFrame:
    """Per layout x condition: the model's mean P(she) (two- and three-way), the mean and
    largest absolute change of the two-way share from the default layout per prompt, and
    the correlation over prompts with the default's two-way shares."""
    base = variants[variants["variant"] == default].set_index("prompt_id")["share_two_way"]
    rows = []
    for (variant, cond), part in variants.groupby(["variant", "Condition"], sort=False):
        change = part.set_index("prompt_id")["share_two_way"] - base.reindex(part["prompt_id"]).values
        with np.errstate(invalid="ignore", divide="ignore"):      # a constant layout: r is NaN
            r = np.corrcoef(part["share_two_way"], base.reindex(part["prompt_id"]))[0, 1]
        rows.append({"layout": variant, "condition": cond, "n_prompts": len(part),
                     "share_two_way": part["share_two_way"].mean(),
                     "share_three_way": part["share_three_way"].mean(),
                     "mass_he_she_they": part["coverage_three_way"].mean(),
                     "mean_abs_change": float(np.abs(change).mean()),
                     "max_abs_change": float(np.abs(change).max()),
                     "r_with_default": float(r)})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------
# people minus the model: every verdict rests on a test of the difference (issue 40)

# The equivalence bound of every people-vs-model verdict, on the log-odds scale of the
# population-averaged effects: the logistic curve's slope is at most 1/4, so two effects
# within 0.20 log-odds of each other move P(she) by amounts no more than 0.05 apart
# anywhere on the scale (a rating slope: per point), less than the 95% intervals of
# people's own cell shares (table response_shares) are wide.
EFFECT_EQUIVALENCE_BOUND = 0.20
EFFECT_FAMILY = "people vs model, population-averaged effects"
# the unit the items cluster in, per mirror: the first name, or for Exp 1's condition
# model (which keeps the last-name prompts) the first name or else the lone last name
CLUSTERS = {"m_cond": ("NameUnit", "name_unit", "first or lone last names"),
            "m_nameGender": ("FirstName", "first_name", "first names"),
            "m_noOther": ("FirstName", "first_name", "first names")}


def interaction_specs(mirror) -> list[tuple[str, pd.DataFrame, np.ndarray]]:
    """(name, rows, weights) of the condition x rating interactions: how much the rating
    slope (per point, at the centred rating) changes from one condition to another, for
    each of the condition effects `effect_specs` names."""
    if not mirror.has_rating:
        return []
    conditions = ["first", "full"] + (["last"] if mirror.subset == "all" else [])
    grid = cells({"Condition": conditions, "GenderRatingCentered": [0.0]})
    rows, w = slope_rows(grid, "GenderRatingCentered")
    out = []
    contrasts = [("full minus first", {"first": -1.0, "full": 1.0, "last": 0.0})]
    if "last" in conditions:
        contrasts.insert(0, ("last minus first and full",
                             {"first": -0.5, "full": -0.5, "last": 1.0}))
    for name, by in contrasts:
        share = grid["Condition"].map(by).to_numpy() * len(conditions)
        out.append((f"{name} × rating slope", rows, w * np.tile(share, 2)))
    return out


def difference_rows(mirror, tables: dict, scored: pd.DataFrame
                    ) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(people's he/she trials, the model's prompts, contrasts) of one mirror, each with
    the cluster column `cluster` (`CLUSTERS`)."""
    spec = next(s for s in H.LIKE_FOR_LIKE_MODELS if s.key == mirror.people_key)
    people, contrasts = H.model_data(spec, tables[f"exp{mirror.experiment}"])
    people_col, model_col, _ = CLUSTERS[mirror.model]
    model = scored[scored["experiment"] == mirror.experiment]
    if mirror.subset == "first_full":
        model = model[model["Condition"] != "last"]
    columns = ["Condition", "share_two_way", model_col] + (
        ["GenderRatingCentered"] if mirror.has_rating else [])
    return (people.assign(cluster=people[people_col].astype(str)),
            model[columns].assign(cluster=model[model_col].astype(str)).reset_index(drop=True),
            contrasts)


def effect_differences(tables: dict, scored: pd.DataFrame) -> pd.DataFrame:
    """Every people-vs-model verdict's test: per mirror and effect (condition effects,
    rating slope, condition x rating interactions), people's and the model's
    population-averaged effect from one joint fit, the difference people minus model with
    its cluster-robust SE (first names), t interval and p, TOST at
    `EFFECT_EQUIVALENCE_BOUND`, Holm within the study's family of verdicts, and the
    verdict in the test's words (gbstats.alignment.side_difference)."""
    from gbstats.alignment.side_difference import (difference_verdicts,
                                                   paired_effect_differences)

    parts = []
    for mirror in MIRRORS:
        people, model, contrasts = difference_rows(mirror, tables, scored)
        effects = effect_specs(mirror, tables) + interaction_specs(mirror)
        table = paired_effect_differences(
            people, model, rhs=mirror.rhs, effects=effects, people_response="She",
            model_response="share_two_way", cluster="cluster", contrasts=contrasts,
            equivalence_bound=EFFECT_EQUIVALENCE_BOUND, unit=CLUSTERS[mirror.model][2])
        parts.append(table.assign(experiment=mirror.experiment, model=mirror.model,
                                  family=EFFECT_FAMILY))
    out = difference_verdicts(pd.concat(parts, ignore_index=True))
    first = ["experiment", "model", "effect"]
    return out[first + [c for c in out.columns if c not in first]]

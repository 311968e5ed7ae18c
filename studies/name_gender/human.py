"""The human side: Gardner & Brown-Schmidt's (2024) main glmer models, with their codings.

The authors' analysis code and its knitted output are public
(bethanyhgardner/gender-bias-names, `analysis/exp{1..4}_analysis_main.Rmd`
and `.md`, knitted 2023-03-26, repository commit 67cf6d4). What each model
does, read from there:

* Every experiment: `Participant` = SubjID, `Item` = the name as shown
  (`NameShown` in Exp 1-2, `Name` in Exp 3-4); random intercepts for both;
  `GenderRatingCentered` = the first name's rating minus its mean over the
  experiment's trials (R's ``scale(x, scale = FALSE)``, which skips the NA
  ratings of the Exp 1-2 last-name trials).
* Exp 1 and 2, Model 1: ``She|Female ~ Condition`` on all trials, with the
  fixed matrix "last vs first/full" = (0.33, 0.33, -0.66) and "first vs full"
  = (-0.5, 0.5, 0) for (first, full, last).
* Exp 1 and 2, Model 2: ``~ Condition * GenderRatingCentered`` on the first-
  and full-name trials, "first vs full" = (-0.5, 0.5). The centring is the
  one computed on all trials (which, the last-name ratings being NA, is the
  mean over these very trials).
* Exp 3 and 4: ``~ Condition * GenderRatingCentered`` on all trials, with
  Fraundorf's centred Helmert coding, reference levels ("last", "first"),
  weighted by the trials per condition. Exp 3 also has the authors' Model 2,
  the same model on the he/she responses only (Other excluded); the coding
  set on all trials travels with the factor into that subset (R's
  ``[.factor`` keeps the contrasts attribute), so its weights are the
  all-trials counts, not the subset's.

`model_data(...)` builds each model's rows and `HUMAN_MODELS` names them;
`fit_human_models` fits them with lme4's glmer defaults (Laplace, nAGQ = 1,
glmerControl's default optimizers bobyqa then Nelder-Mead), as the authors did.
Each model's rows also carry `FirstName` (the first name shown, none after a
last name alone) though no formula uses it: gbstats' design check reads it, and
reports that the rating models test a first-name property without a first-name
random effect.

`LIKE_FOR_LIKE_MODELS` are gbstats' own refits, not in the paper: the authors'
fixed part on the he/she trials only (Exp 3's is their `m_noOther`), the
people's side of the comparison with the model's two-way share she / (he + she),
with a random intercept for the first name where the model has the rating
(`NameUnit`, the first name or else the last name shown, for Exp 1's m_cond), and in
Exp 3 random intercepts for the story and the story x condition cell, as on the model
side (issue 40).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from gbstats.mixed.contrasts import CenteredHelmert

FIXED_3 = pd.DataFrame({"last vs first/full": [0.33, 0.33, -0.66],
                        "first vs full": [-0.5, 0.5, 0.0]}, index=["first", "full", "last"])
FIXED_2 = pd.DataFrame({"first vs full": [-0.5, 0.5]}, index=["first", "full"])
HELMERT_REFERENCE = ("last", "first")
RANDOM = "(1 | Participant) + (1 | Item)"


class NamedModel:
    """What the people's models and the model side's mirrors share: a key and whether the
    fixed part holds the first name's rating."""

    @property
    def key(self) -> str:
        return f"exp{self.experiment}_{self.model}"

    @property
    def has_rating(self) -> bool:
        return "GenderRatingCentered" in self.rhs


@dataclass(frozen=True)
class HumanModel(NamedModel):
    experiment: int
    model: str            # the authors' name for it
    outcome: str          # She (production) or Female (memory)
    rhs: str              # fixed part
    subset: str           # "all", "first_full", "no_other" or "first_full_no_other"
    coding: str           # "fixed" or "centered_helmert"
    source: str           # the knitted file that prints it (or what gbstats adds)
    extra_random: str = ""  # random terms beyond the authors' (gbstats' refits only)
    optimizer: str | None = None  # glmerControl(optimizer=...); None: the authors' default

    @property
    def formula(self) -> str:
        extra = f" + {self.extra_random}" if self.extra_random else ""
        return f"{self.outcome} ~ {self.rhs} + {RANDOM}{extra}"


HUMAN_MODELS = (
    HumanModel(1, "m_cond", "She", "Condition", "all", "fixed", "analysis/exp1_analysis_main.md"),
    HumanModel(1, "m_nameGender", "She", "Condition * GenderRatingCentered", "first_full", "fixed",
               "analysis/exp1_analysis_main.md"),
    HumanModel(2, "m_cond", "Female", "Condition", "all", "fixed", "analysis/exp2_analysis_main.md"),
    HumanModel(2, "m_nameGender", "Female", "Condition * GenderRatingCentered", "first_full",
               "fixed", "analysis/exp2_analysis_main.md"),
    HumanModel(3, "m_all", "She", "Condition * GenderRatingCentered", "all", "centered_helmert",
               "analysis/exp3_analysis_main.md"),
    HumanModel(3, "m_noOther", "She", "Condition * GenderRatingCentered", "no_other",
               "centered_helmert", "analysis/exp3_analysis_main.md"),
    HumanModel(4, "m_all", "Female", "Condition * GenderRatingCentered", "all", "centered_helmert",
               "analysis/exp4_analysis_main.md"),
)


# bobyqa in both of glmer's stages: with glmer's default (bobyqa, then Nelder-Mead) the
# Exp 1 refit stopped at max|grad| 0.097 with SEs of 7e-4 ("nearly unidentifiable"); bobyqa
# alone converges there, to the same estimates (within 0.005) with sensible SEs.
LIKE_FOR_LIKE_OPTIMIZER = "bobyqa"
LIKE_FOR_LIKE_MODELS = (
    HumanModel(1, "m_cond_noOther", "She", "Condition", "no_other", "fixed",
               "gbstats: m_cond on the he/she trials", "(1 | NameUnit)",
               LIKE_FOR_LIKE_OPTIMIZER),
    HumanModel(1, "m_nameGender_noOther", "She", "Condition * GenderRatingCentered",
               "first_full_no_other", "fixed", "gbstats: m_nameGender on the he/she trials",
               "(1 | FirstName)", LIKE_FOR_LIKE_OPTIMIZER),
    HumanModel(3, "m_noOther_firstName", "She", "Condition * GenderRatingCentered", "no_other",
               "centered_helmert",
               "gbstats: m_noOther with first-name, story and story x condition random "
               "intercepts", "(1 | FirstName) + (1 | Story) + (1 | StoryCondition)",
               LIKE_FOR_LIKE_OPTIMIZER),
)


def name_parts(trials: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """(FirstName, NameUnit) per trial: the first name shown (none after a last name alone)
    and the name a reader could guess a gender from (the first name, else the last name)."""
    if "NameFirst" in trials.columns:                      # Exp 1-2: the authors' columns
        first = trials["NameFirst"].where(trials["Condition"] != "last")
        unit = first.fillna(trials["NameLast"])
    else:                                                  # Exp 3-4: the full name, shown first
        first = trials["Item"].str.split().str[0]
        unit = first
    return first, unit


def experiment_frame(trials: pd.DataFrame) -> pd.DataFrame:
    """One experiment's trials with the authors' names, the centred rating and the name's
    parts (`name_parts`)."""
    out = trials.rename(columns={"SubjID": "Participant"}).copy()
    out["GenderRatingCentered"] = out["GenderRating"] - out["GenderRating"].mean()  # NaN skipped
    out["FirstName"], out["NameUnit"] = name_parts(trials)
    if "Prompt" in out.columns:                            # Exp 3-4: the story (7 of them)
        out["Story"] = out["Prompt"]
        out["StoryCondition"] = out["Prompt"].astype(str) + ":" + out["Condition"].astype(str)
    return out


def model_data(spec: HumanModel, trials: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """(rows, contrasts) of one model, from the experiment's loader table."""
    full = experiment_frame(trials)
    if spec.coding == "centered_helmert":
        counts = full["Condition"].value_counts().to_dict()   # weights from all trials
        contrasts = {"Condition": CenteredHelmert(reference=HELMERT_REFERENCE, counts=counts)}
    elif spec.subset.startswith("first_full"):
        contrasts = {"Condition": FIXED_2}
    else:
        contrasts = {"Condition": FIXED_3}
    rows = full
    if spec.subset.startswith("first_full"):
        rows = rows[rows["Condition"] != "last"]
    if spec.subset.endswith("no_other"):
        rows = rows[rows["Other"] == 0]
    columns = ["Participant", "Item", "Condition", spec.outcome] + (
        ["GenderRatingCentered"] if spec.has_rating else []) + ["FirstName"] + (
        ["NameUnit"] if "NameUnit" in spec.extra_random else []) + [
        c for c in ("Story", "StoryCondition") if c in spec.extra_random]
    return rows[columns].reset_index(drop=True), contrasts


def bambi_safe(contrasts: dict) -> tuple[dict, dict]:
    """(contrasts with formula-safe column names, {safe term piece: authors' piece}).

    The Bayesian engine writes each contrast column into a formula, where the
    authors' names ("first vs full") do not parse; the twin is fitted with
    "first_vs_full" and its terms renamed back, so both engines' rows share names."""
    safe, back = {}, {}
    for var, spec in contrasts.items():
        if isinstance(spec, pd.DataFrame):
            renamed = {c: re.sub(r"\W+", "_", c) for c in spec.columns}
            safe[var] = spec.rename(columns=renamed)
            back.update({f"{var}{new}": f"{var}{old}" for old, new in renamed.items()})
        else:
            safe[var] = spec
    return safe, back


def rename_terms(fit, back: dict):
    """`fit` with each term's pieces mapped through `back` (a:b renamed piece by piece), and
    the contrast names of its recorded codings with them: the report reads a term's words
    off the coding whose names the term carries (a twin whose terms said "first vs full"
    while its coding still said "first_vs_full" was read as treatment coding, "Condition:
    first vs full vs first", and took the lme4 fit's row label with it)."""
    if not back:
        return fit
    coefs = fit.coefs.assign(term=[":".join(back.get(p, p) for p in t.split(":"))
                                   for t in fit.coefs["term"]])
    contrasts = {var: ({**record, "names": [back.get(f"{var}{n}", f"{var}{n}")[len(var):]
                                            for n in record["names"]]}
                       if isinstance(record, dict) and "names" in record else record)
                 for var, record in (fit.fit_stats.get("contrasts") or {}).items()}
    stats = {**fit.fit_stats, "contrasts": contrasts} if contrasts else fit.fit_stats
    return replace(fit, coefs=coefs, fit_stats=stats)


def fit_human_models(tables: dict, *, specs=HUMAN_MODELS, bayes: bool = False, draws: int = 1000,
                     seed: int = 0, use_cache: bool = True, cache_dir=None,
                     max_draws: int | None = None) -> dict:
    """{spec.key: {"lme4": FitResult[, "pymc": FitResult]}}; twins only for rating models,
    refitted up to `max_draws` draws per chain."""
    from gbstats.mixed.fitting import fit_with_twin

    fits = {}
    for spec in specs:
        rows, contrasts = model_data(spec, tables[f"exp{spec.experiment}"])
        fits[spec.key] = fit_with_twin(spec.formula, rows, backends=["lme4"], family="binomial",
                                       bayes=False, contrasts=contrasts, use_cache=use_cache,
                                       cache_dir=cache_dir, optimizer=spec.optimizer)
        if bayes and spec.has_rating:
            safe, back = bambi_safe(contrasts)
            twin = fit_with_twin(spec.formula, rows, backends=[], family="binomial", bayes=True,
                                 draws=draws, seed=seed, loo=False, contrasts=safe,
                                 max_draws=max_draws, use_cache=use_cache, cache_dir=cache_dir)
            fits[spec.key]["pymc"] = rename_terms(twin["pymc"], back)
    return fits


def human_models_table(fits: dict, specs=HUMAN_MODELS) -> pd.DataFrame:
    """`human_models`: experiment, model, backend, term (R's), coefficient (the report's name
    of it: "Condition1" of a centred Helmert coding is "Conditionlast vs first/full", as the
    model tables show it), estimate, std_error (+ interval, z, p); variance components as
    rows with term "var(Participant)" / "var(Item)"."""
    from studies.name_gender.coefficients import coefficient_names

    rows = []
    for spec in specs:
        for backend, fit in fits.get(spec.key, {}).items():
            names = coefficient_names(fit)
            for c in fit.coefs.itertuples():
                rows.append({"experiment": spec.experiment, "model": spec.model, "backend": backend,
                             "kind": "fixed", "term": c.term,
                             "coefficient": names.get(c.term, c.term), "estimate": c.estimate,
                             "std_error": c.se, "ci_low": c.ci_low, "ci_high": c.ci_high,
                             "p_value": c.p_value})
            for v in fit.ranef_var.itertuples():
                rows.append({"experiment": spec.experiment, "model": spec.model, "backend": backend,
                             "kind": "variance", "term": f"var({v.group})",
                             "coefficient": f"var({v.group})", "estimate": v.variance,
                             "std_error": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                             "p_value": np.nan})
    return pd.DataFrame(rows)


def fit_settings(fits: dict, specs=HUMAN_MODELS) -> pd.DataFrame:
    """What each lme4 fit used and gave: n, groups, logLik, AIC, optimizer, nAGQ."""
    rows = []
    for spec in specs:
        fit = fits.get(spec.key, {}).get("lme4")
        if fit is None:
            continue
        s = fit.fit_stats
        rows.append({"experiment": spec.experiment, "model": spec.model, "formula": spec.formula,
                     "rows": spec.subset, "coding": spec.coding, "nobs": s.get("nobs"),
                     "n_participants": s.get("n_groups", {}).get("Participant"),
                     "n_items": s.get("n_groups", {}).get("Item"), "loglik": s.get("loglik"),
                     "aic": s.get("aic"),
                     "optimizer": ("glmerControl default: bobyqa, then Nelder_Mead"
                                   if s.get("optimizer") == "lme4 default" else s.get("optimizer")),
                     "nAGQ": 1, "published_in": spec.source})
    return pd.DataFrame(rows)

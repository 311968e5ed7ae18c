"""How the name-gender tables read in a paper: words for models, variables, groups and
settings, and the views that reshape a table for print (results.json keeps every table as
computed; docs/tables.md gives the grammar)."""
from __future__ import annotations

from dataclasses import replace

import pandas as pd

from studies.name_gender.human import FIXED_3, HUMAN_MODELS

EXPERIMENTS = {1: "Exp 1", 2: "Exp 2", 3: "Exp 3", 4: "Exp 4"}
# what each experiment's outcome is: she in a continuation (1, 3), female in recall (2, 4)
OUTCOMES = {1: "she", 2: "female", 3: "she", 4: "female"}
TASKS = {1: "production", 2: "memory", 3: "production", 4: "memory"}

# the glmer models' variables and grouping factors in words (model tables)
VARIABLES = {"GenderRatingCentered": "Gender rating", "model_logit": "Model logit",
             "group": "Group", "she_logit": "Model logit"}
LEVELS = {"group": {"men": "men", "nonmale": "non-male"}}
GROUPS = {"Participant": "Participants", "Item": "Names shown",
          "NameUnit": "First or lone last names", "FirstName": "First names",
          "frame": "Stories", "first_name": "First names", "prompt_id": "Prompts"}

# each model in a few words: its column header in a model table, and its row in the settings
MODEL_WORDS = {
    "exp1_m_cond": "Condition", "exp1_m_nameGender": "Condition × rating",
    "exp2_m_cond": "Condition", "exp2_m_nameGender": "Condition × rating",
    "exp3_m_all": "All responses", "exp3_m_noOther": "He or she only",
    "exp4_m_all": "All responses",
    "exp1_m_cond_noOther": "Condition", "exp1_m_nameGender_noOther": "Condition × rating",
    "exp3_m_noOther_firstName": "Condition × rating",
}
# the model tables of the authors' fits: (name, experiments, caption)
HUMAN_TABLES = (
    ("human_models_exp1_2", (1, 2),
     "Exp 1 (production) and Exp 2 (memory): the authors' glmer models refitted, log-odds"),
    ("human_models_exp3_4", (3, 4),
     "Exp 3 (production) and Exp 4 (memory): the authors' glmer models refitted, log-odds"),
)
ROWS = {"all": "All trials", "first_full": "First, full names",
        "no_other": "He, she responses", "first_full_no_other": "First, full; he, she"}
CODINGS = {"fixed": "Authors' fixed", "centered_helmert": "Centred Helmert"}
LABELS = {"model": "Model", "rows": "Trials used", "coding": "Condition coding",
          "nobs": "Trials", "n_participants": "Participants", "n_items": "Names shown",
          "loglik": "Log-likelihood", "aic": "AIC", "optimizer": "Optimizer",
          "nAGQ": "Adaptive quadrature points"}


def model_name(spec) -> str:
    """"Exp 1: she, condition" (a model's name in the notes)."""
    return f"{EXPERIMENTS[spec.experiment]}, {MODEL_WORDS[spec.key].lower()}"


def fixed_names(coded) -> dict[str, str]:
    """{contrast column of `coded`: the authors' name of the fixed contrast that compares the
    same levels ("1" -> "last vs first/full")}, for a centred Helmert coding of Condition."""
    from gbstats.report.model_table import Coded, contrast_label

    fixed = Coded("Condition", "matrix", tuple(FIXED_3.index), tuple(FIXED_3.columns),
                  FIXED_3.to_numpy(float))
    by_label = {contrast_label(fixed, j, {}): name for j, name in enumerate(fixed.names)}
    return {name: by_label[contrast_label(coded, j, {})] for j, name in enumerate(coded.names)
            if contrast_label(coded, j, {}) in by_label}


def shown_fit(fit):
    """The fit as a model table shows it: a centred Helmert contrast of Condition renamed
    after the fixed contrast that compares the same levels, so that "Condition: first+full
    vs last" is one row across experiments (the notes give each coding's weights).
    Presentation only: a copy."""
    from gbstats.report.model_table import codings_of

    record = (fit.fit_stats.get("contrasts") or {}).get("Condition")
    if not record or record["kind"] != "centered_helmert":
        return fit
    names = fixed_names(codings_of(fit)["Condition"])

    def renamed(term: str) -> str:
        return ":".join(f"Condition{names[p[len('Condition'):]]}"
                        if p.startswith("Condition") and p[len("Condition"):] in names else p
                        for p in term.split(":"))

    contrasts = {**fit.fit_stats["contrasts"],
                 "Condition": {**record, "names": [names.get(n, n) for n in record["names"]]}}
    return replace(fit, coefs=fit.coefs.assign(term=[renamed(t) for t in fit.coefs["term"]]),
                   fit_stats={**fit.fit_stats, "contrasts": contrasts})


def model_columns(fits: dict, specs) -> dict:
    """{(experiment and outcome, model in words): lme4 FitResult} for a model table (the
    Bayesian twins, when fitted, beside their glmer fit; `shown_fit`)."""
    out = {}
    for spec in specs:
        for backend, fit in fits.get(spec.key, {}).items():
            span = f"{EXPERIMENTS[spec.experiment]} ({OUTCOMES[spec.experiment]})"
            header = MODEL_WORDS[spec.key] + (" (Bayesian)" if backend == "pymc" else "")
            out[(span, header)] = shown_fit(fit)
    return out


def term_words(models: dict) -> dict[str, str]:
    """{R term: label}: a main effect as gbstats reads it off the coding ("Condition: full vs
    first"); an interaction with the condition contrast alone ("Full vs first × gender
    rating"), short enough for a page (the notes give every coding)."""
    from gbstats.report.model_table import codings_of, predictors_of, term_label

    out = {}
    for fit in models.values():
        codings, predictors = codings_of(fit), predictors_of(fit)
        for term in fit.coefs["term"]:
            pieces = term.split(":")
            if len(pieces) == 1 or term in out:
                continue
            words = []
            for piece in pieces:
                text = term_label(piece, codings, predictors, VARIABLES, LEVELS)
                name, _, contrast = text.partition(": ")
                words.append(contrast if contrast else name.lower() if words else name)
            label = " × ".join(words)
            out[term] = label[0].upper() + label[1:]
    return out


def model_notes(specs) -> list[str]:
    """Each model of a table in one sentence: the authors' name for it, its formula, its
    trials."""
    return [f"{model_name(s)}: {s.model}, {s.formula}, {ROWS[s.subset].lower()}" for s in specs]


def specs_of(experiments, specs=HUMAN_MODELS) -> list:
    return [s for s in specs if s.experiment in experiments]


def fit_settings_view(settings: pd.DataFrame) -> pd.DataFrame:
    """human_fit_settings for print: one heading per experiment, each model, its trials and
    coding in words, its sample; the optimizer goes to the notes, the formula and the
    likelihood are in the model tables."""
    keys = [f"exp{e}_{m}" for e, m in zip(settings["experiment"], settings["model"])]
    return settings.assign(
        heading=[f"{EXPERIMENTS[e]} ({TASKS[e]}: {OUTCOMES[e]} or not)"
                 for e in settings["experiment"]],
        model=[MODEL_WORDS[k] for k in keys],
        rows=settings["rows"].map(ROWS), coding=settings["coding"].map(CODINGS),
        optimizer=settings["optimizer"].str.replace("Nelder_Mead", "Nelder-Mead"))[
        ["heading", "model", "rows", "coding", "nobs", "n_participants", "n_items", "optimizer",
         "nAGQ"]]


"""How the name-gender tables read in a paper: words for models, variables, groups and
settings, and the views that reshape a table for print (results.json keeps every table as
computed; docs/tables.md gives the grammar)."""
from __future__ import annotations

from dataclasses import replace

import pandas as pd

from gbstats.alignment.group_comparison import short_verdict
from studies.name_gender.human import FIXED_3, HUMAN_MODELS

EXPERIMENTS = {1: "Exp 1", 2: "Exp 2", 3: "Exp 3", 4: "Exp 4"}
# what each experiment's outcome is: she in a continuation (1, 3), female in recall (2, 4)
OUTCOMES = {1: "she", 2: "female", 3: "she", 4: "female"}
TASKS = {1: "production", 2: "memory", 3: "production", 4: "memory"}

# the glmer models' variables and grouping factors in words (model tables)
VARIABLES = {"GenderRatingCentered": "Gender rating", "model_logit": "Model logit",
             "group": "Group", "she_logit": "Model logit"}
LEVELS = {"group": {"men": "men", "nonmale": "non-male"}}
# the models' variables and grouping factors in a sentence of a table's notes (issue 43: the
# formulas themselves are in the report's methods section and results.json)
FORMULA_WORDS = {"GenderRatingCentered": "the first name's gender rating, centred",
                 "Condition": "the condition", "model_logit": "the model's logit",
                 "group": "the group", "She": "choosing she",
                 "she_logit": "the log of P(she) / P(he)",
                 "logit_two_way": "the log of P(she) / P(he)"}
FORMULA_GROUPS = {"Participant": "participants", "Item": "names shown",
                  "NameUnit": "first or lone last names", "FirstName": "first names",
                  "frame": "stories", "first_name": "first names",
                  "name_unit": "first or lone last names", "item_key": "names shown",
                  "frame_condition": "story-by-condition cells", "SubjID": "participants",
                  "Story": "stories", "StoryCondition": "story-by-condition cells"}
GROUPS = {"Participant": "Participants", "Item": "Names shown",
          "NameUnit": "First or lone last names", "FirstName": "First names",
          "frame": "Stories", "first_name": "First names", "name_unit": "First or lone last names",
          "item_key": "Names shown", "Story": "Stories",
          "StoryCondition": "Story × condition cells",
          "frame_condition": "Story × condition cells"}

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


def model_notes(specs, report=None, table: str = "") -> list[str]:
    """Each model of a table in one sentence: the authors' name for it, its model in words,
    its trials. With `report`, each formula (lme4 syntax) goes to the report's methods
    section under `table` (issue 43: no formula in a table's notes)."""
    from gbstats.report.formula_words import formula_in_words

    def words(s) -> str:
        if report is None:
            return formula_in_words(s.formula, FORMULA_WORDS, FORMULA_GROUPS)
        return report.formula(f"{table}, {model_name(s)}", s.formula, FORMULA_WORDS,
                              FORMULA_GROUPS)
    return [f"{model_name(s)}: {words(s)}; {ROWS[s.subset].lower()}" for s in specs]


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
        optimizer=settings["optimizer"].str.replace("Nelder_Mead", "Nelder-Mead")
        .str.replace("glmerControl default", "glmer's default"))[
        ["heading", "model", "rows", "coding", "nobs", "n_participants", "n_items", "optimizer",
         "nAGQ"]]



# --------------------------------------------------------------------------
# the model side and the alignment GLMM

# R's default treatment coding where a fit recorded none: the reference level of each factor
# (the alignment GLMM's Condition and group)
TREATMENT_REFERENCE = {"Condition": "first", "group": "men"}
MIRROR_WORDS = {"m_cond": "Condition", "m_nameGender": "Condition × rating",
                "m_noOther": "Condition × rating"}
# the earlier report's model-side fits (table first_name_term): random intercepts in words
EARLIER_WORDS = {"(1 | frame)": "Stories", "(1 | frame) + (1 | first_name)":
                 "Stories, first names"}


def piece_words(piece: str) -> str | None:
    """A treatment-coded piece the fit recorded no coding for ("Conditionfull" -> "Condition:
    full vs first"), or None."""
    for var, reference in TREATMENT_REFERENCE.items():
        if piece.startswith(var) and piece != var:
            level = piece[len(var):]
            words = LEVELS.get(var, {})
            return (f"{VARIABLES.get(var, var)}: {words.get(level, level)} vs "
                    f"{words.get(reference, reference)}")
    return None


def all_term_words(models: dict) -> dict[str, str]:
    """{R term: label} for every term of `models`: `term_words`' interactions, and main
    effects and interaction pieces without a recorded coding read as R's treatment coding
    (`TREATMENT_REFERENCE`)."""
    from gbstats.report.model_table import codings_of, predictors_of, term_label

    out = term_words(models)
    for fit in models.values():
        codings, predictors = codings_of(fit), predictors_of(fit)
        for term in fit.coefs["term"]:
            pieces = term.split(":")
            coded = [term_label(p, codings, predictors, VARIABLES, LEVELS) for p in pieces]
            if all(c != p for c, p in zip(coded, pieces)):
                continue                         # every piece read off the coding
            words = [piece_words(p) or c for p, c in zip(pieces, coded)]
            if len(words) > 1:                   # "Group: non-male vs men × model logit"
                words = [words[0]] + [w.partition(": ")[2] or w.lower() for w in words[1:]]
            out[term] = " × ".join(words)
    return out


def mirror_columns(model_fits: dict, mirrors) -> dict:
    """{(experiment, mirror in words): FitResult} of the model side's LMMs (`shown_fit`)."""
    out = {}
    for m in mirrors:
        for backend, fit in model_fits.get(m.key, {}).items():
            header = MIRROR_WORDS[m.model] + (" (Bayesian)" if backend == "pymc" else "")
            out[(EXPERIMENTS[m.experiment], header)] = shown_fit(fit)
    return out


def earlier_columns(earlier_fits: dict) -> dict:
    """{(experiment, random intercepts in words): lme4 fit} of the earlier model-side formula."""
    return {(EXPERIMENTS[exp], EARLIER_WORDS.get(random, random)): shown_fit(fits["lme4"])
            for (exp, random), fits in earlier_fits.items()}


def alignment_columns(alignment_fits: dict) -> dict:
    """{experiment: FitResult} of the alignment GLMMs (glmer and, when fitted, its twin)."""
    return {(EXPERIMENTS[exp] if backend == "lme4" else f"{EXPERIMENTS[exp]} (Bayesian)"):
            fit for exp, fits in alignment_fits.items() for backend, fit in fits.items()}


# --------------------------------------------------------------------------
# people beside the model, and men vs non-male participants: views for print

CONDITION_WORDS = {"first": "first name", "full": "full name", "last": "last name",
                   "all": "all conditions"}
VIEW_LABELS = {"option_set": "Options", "options": "Options", "people_n": "Responses",
               "people_share": "People: P(she)", "people_ci": "95% CI",
               "people_coverage": "Coverage", "model_share": "Model: P(she)",
               "model_coverage": "Mass", "n_prompts": "Prompts",
               "source": "Estimate of", "conditional": "Conditional", "conditional_ci": "95% CI",
               "averaged": "Population-averaged", "averaged_ci": "95% CI",
               "condition": "Condition", "experiment": "Experiment", "group": "Group",
               "r_profiles": "r of profiles", "reliability_a": "Reliability, men",
               "reliability_b": "Reliability, non-male", "r_profiles_corrected": "Corrected r", "r_profiles_corrected_ci": "95% CI",
               "max_alignment_difference": "Largest difference",
               "max_alignment_difference_upper": "Same, at 95% low", "n_items": "Items",
               "n_first_names": "First names",
               "estimate": "Difference", "test": "Test", "p_equivalence_holm": "p equivalence (Holm)",
               "verdict": "Conclusion", "family_size": "Tests in family",
               "equivalence_bound": "Equivalence bound", "reliability": "Reliability",
               "noise_ceiling": "Noise ceiling", "r_corrected": "Corrected r",
               "n_participants": "People", "below_calibrated_design": "Below calibrated design",
               "spearman_rho": "Spearman ρ", "layout": "Prompt layout",
               "share_two_way": "P(she | he, she)", "share_three_way": "P(she | he, she, they)",
               "mass_he_she_they": "Mass of he, she, they", "mean_abs_change": "Mean change",
               "max_abs_change": "Largest change", "r_with_default": "r with default",
               "people_n_in_set": "Responses",
               "people_they": "People: P(they)", "people_they_ci": "95% CI",
               "model_they": "Model: P(they)", "model_raw_they": "Model: P(they), raw",
               "mass_mean": "Mean mass", "mass_min": "Smallest", "mass_max": "Largest",
               "fit": "Fit", "max_rhat": "Largest R-hat", "min_ess_bulk": "Smallest bulk ESS",
               "n_draws": "Draws", "n_chains": "Chains", "sampler": "Sampler"}
GROUP_WORDS = {"men": "Men", "non-male participants": "Non-male"}


def cell_heading(experiment, condition) -> str:
    """"Exp 1, first name"."""
    return f"{EXPERIMENTS[int(experiment)]}, {CONDITION_WORDS.get(condition, condition)}"


def shares_view(shares: pd.DataFrame) -> pd.DataFrame:
    """response_shares for print: one heading per experiment and condition, the option sets
    beneath, people's share with its interval and coverage, the model's share and mass."""
    return shares.assign(
        heading=[cell_heading(e, c) for e, c in zip(shares["experiment"], shares["condition"])])[
        ["heading", "option_set", "people_n", "people_share", "people_ci_low", "people_ci_high",
         "people_coverage", "model_share", "model_coverage"]]


def coverage_view(coverage: pd.DataFrame) -> pd.DataFrame:
    return coverage.assign(heading=[cell_heading(e, c) for e, c in
                                    zip(coverage["experiment"], coverage["condition"])])[
        ["heading", "option_set", "n_prompts", "mass_mean", "mass_min", "mass_max"]]


EFFECT_WORDS = {"last minus first and full": "last name minus first and full names",
                "full minus first": "full name minus first name",
                "rating slope (per point)": "gender rating, per point"}


def effects_view(effects: pd.DataFrame) -> pd.DataFrame:
    """effects for print: one heading per experiment, mirrored model and effect; a row per
    source (people as published, people like for like, the model), the conditional and the
    population-averaged effect with their intervals side by side."""
    rows = []
    keys = ["experiment", "model", "effect", "source"]
    for (exp, model, effect, source), part in effects.groupby(keys, sort=False):
        by = part.set_index("scale")
        row = {"heading": f"{EXPERIMENTS[int(exp)]}, {MIRROR_WORDS.get(model, model).lower()} "
                          f"model: {EFFECT_WORDS.get(effect, effect)}", "source": source}
        for scale, stem in (("conditional", "conditional"), ("population-averaged", "averaged")):
            if scale in by.index:
                row.update({stem: by.loc[scale, "estimate"],
                            f"{stem}_ci_low": by.loc[scale, "ci_low"],
                            f"{stem}_ci_high": by.loc[scale, "ci_high"]})
        rows.append(row)
    return pd.DataFrame(rows)


def profile_view(profile: pd.DataFrame) -> pd.DataFrame:
    out = profile.rename(columns={"ci_low": "r_profiles_corrected_ci_low",
                                  "ci_high": "r_profiles_corrected_ci_high"})
    return out.assign(experiment=[f"{EXPERIMENTS[int(e)]} ({int(n)} items)" for e, n in
                                  zip(out["experiment"], out["n_items"])])[
        ["experiment", "reliability_a", "reliability_b", "r_profiles",
         "r_profiles_corrected", "r_profiles_corrected_ci_low", "r_profiles_corrected_ci_high",
         "max_alignment_difference", "max_alignment_difference_upper"]]


FAMILY_WORDS = {"primary: men vs non-male, corrected r":
                "Primary: men minus non-male participants, corrected r",
                "secondary: per condition, corrected r":
                "Secondary: per condition, corrected r",
                "secondary: alignment GLMM":
                "Secondary: alignment GLMM, non-male minus men (log-odds)"}


def comparison_view(comparison: pd.DataFrame) -> pd.DataFrame:
    """group_comparison for print: one heading per family (primary first), experiment and
    condition in words; the test's settings go to the notes."""
    order = {f: k for k, f in enumerate(FAMILY_WORDS)}
    view = comparison.assign(_order=comparison["family"].map(order).fillna(len(order)))
    view = view.sort_values(["_order", "experiment"], kind="stable")
    return view.assign(
        heading=view["family"].map(lambda f: FAMILY_WORDS.get(f, f)),
        test=[EXPERIMENTS[int(e)] if c == "all" else cell_heading(e, c)
              for e, c in zip(view["experiment"], view["condition"])],
        verdict=[short_verdict(v) for v in view["verdict"]])[
        ["heading", "test", "estimate", "ci_low", "ci_high", "p_value",
         "p_holm", "p_equivalence_holm", "verdict"]]


def reliability_view(reliability: pd.DataFrame) -> pd.DataFrame:
    return reliability.assign(
        heading=[f"{cell_heading(e, c)} ({int(n)} items)" for e, c, n in
                 zip(reliability["experiment"], reliability["condition"],
                     reliability["n_items"])])[
        ["heading", "group", "n_participants", "reliability", "noise_ceiling", "r",
         "r_corrected", "ci_low", "ci_high", "below_calibrated_design"]].assign(
        group=lambda t: t["group"].map(lambda g: GROUP_WORDS.get(g, g)))


def item_correlations_view(table: pd.DataFrame) -> pd.DataFrame:
    return table.assign(heading=[EXPERIMENTS[int(e)] for e in table["experiment"]],
                        condition=table["condition"].map(lambda c: CONDITION_WORDS.get(c, c)))[
        ["heading", "condition", "n_items", "n_first_names", "r", "ci_low", "ci_high",
         "p_value", "p_holm"]]


def group_correlations_view(table: pd.DataFrame) -> pd.DataFrame:
    return table.assign(
        heading=[f"{cell_heading(e, c)} ({int(n)} items)" for e, c, n in
                 zip(table["experiment"], table["condition"], table["n_items"])])[
        ["heading", "group", "n_participants", "r", "ci_low", "ci_high", "p_value"]].assign(
        group=lambda t: t["group"].map(lambda g: GROUP_WORDS.get(g, g)))


def they_view(table: pd.DataFrame) -> pd.DataFrame:
    """singular_they for print: the like-for-like shares with their coverage, and the model's
    raw P(they) for reference (people's they among all responses is in the notes)."""
    out = table.rename(columns={"people_share": "people_they", "people_ci_low":
                                "people_they_ci_low", "people_ci_high": "people_they_ci_high",
                                "model_share": "model_they"})
    return out.assign(condition=out["condition"].map(lambda c: CONDITION_WORDS.get(c, c)))[
        ["condition", "people_n_in_set", "people_they", "people_they_ci_low",
         "people_they_ci_high", "people_coverage", "model_they", "model_coverage",
         "model_raw_they"]]


def prompt_view(table: pd.DataFrame) -> pd.DataFrame:
    return table.assign(heading=table["layout"].map(lambda s: f"Layout: {s}"),
                        condition=table["condition"].map(lambda c: CONDITION_WORDS.get(c, c)))[
        ["heading", "condition", "n_prompts", "share_two_way", "share_three_way",
         "mass_he_she_they", "mean_abs_change", "max_abs_change", "r_with_default"]]


def twin_diagnostics_table(report, diagnostics: pd.DataFrame) -> None:
    """The twins' largest R-hat and smallest bulk ESS. An ESS is an estimate, not a count
    (ArviZ gives 583.66), so it is a number shown without decimals; the record keeps it."""
    report.table("twin_diagnostics", twin_view(diagnostics),
                 "Bayesian twins: largest R-hat and smallest bulk ESS",
                 record=diagnostics, labels=VIEW_LABELS,
                 kinds={"min_ess_bulk": "number", "n_draws": "count", "n_chains": "count"},
                 decimals={"min_ess_bulk": 0})


def twin_view(table: pd.DataFrame) -> pd.DataFrame:
    """twin_diagnostics for print: each fit by its name in words where it has one."""
    def words(key: str) -> str:
        base, _, rest = key.partition(" ")
        if base in MODEL_WORDS:
            exp = int(base[3])
            return f"{EXPERIMENTS[exp]}, {MODEL_WORDS[base].lower()}" + (f", {rest}" if rest
                                                                          else "")
        return key.replace("exp", "Exp ")
    return table.assign(fit=table["fit"].map(words))

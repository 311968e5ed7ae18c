"""How the pronoun-memory tables read in a paper: words for columns, values, variables and
models, and the views that reshape a long table for print (results.json keeps every table
as computed; docs/tables.md gives the grammar)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from studies.pronoun_memory.human import HUMAN_MODELS

EXPERIMENTS = {"1a": "Exp 1A", "1b": "Exp 1B", "2": "Exp 2"}
PRONOUN_WORDS = {"he/him": "he", "she/her": "she", "they/them": "they"}
BINARY = {"0": "he/she", "1": "they"}
# the glmer models' variables and groups in words (model tables)
VARIABLES = {"M_Acc_Factor": "Memory", "Biographies_HS0": "Biographies",
             "Biographies_T0": "Biographies"}
LEVELS = {"Pronoun": PRONOUN_WORDS, "M_Acc_Factor": {"0": "wrong", "1": "right"},
          "PSA": {"0": "unrelated", "1": "gendered language"}, "Biographies": BINARY,
          "Biographies_HS0": BINARY, "Biographies_T0": BINARY}
GROUPS = {"SubjID": "Participants", "Name": "Characters"}
# the order of the variables in an interaction's label ("Pronoun × Memory"), whatever order
# the authors wrote the term in: glmer names M_Acc_Factor:Pronoun and Pronoun:M_Acc_Factor
# apart, a table should not
VARIABLE_ORDER = ("Pronoun", "M_Acc_Factor", "PSA", "Biographies", "Biographies_HS0",
                  "Biographies_T0")
# each model's column header, and the span over the columns of one question
MODEL_HEADERS = {
    "exp1a_m_memory": ("", "Memory"), "exp1a_m_prod": ("", "Production"),
    "exp1a_m_mp": ("", "Production by memory"),
    "exp1b_m_memory": ("", "Memory"), "exp1b_m_prod": ("", "Production"),
    "exp1b_m_mp_buildmer": ("Production by memory", "GLM (reported)"),
    "exp1b_m_mp_subjInt": ("Production by memory", "By participant (FAILED)"),
    "exp1b_m_mp_itemInt": ("Production by memory", "By character"),
    "exp2_m_memory": ("", "Memory"), "exp2_m_prod": ("", "Production"),
    "exp2_m_prod_bio_HS0": ("", "Production"),
    "exp2_m_prod_bio_T0": ("", "Production"),
    "exp2_m_mp": ("", "Production by memory"),
}
# the model tables: (name, experiment, models, caption); Exp 2's four-way model has 24
# terms, too many for one page, so its table comes in two parts
MODEL_TABLES = (
    ("human_models_1a", "1a", ("exp1a_m_memory", "exp1a_m_prod", "exp1a_m_mp"),
     "Exp 1A: the authors' glmer models of memory and production accuracy"),
    ("human_models_1b", "1b", ("exp1b_m_memory", "exp1b_m_prod"),
     "Exp 1B: the authors' glmer models of memory and production accuracy"),
    ("human_models_1b_mp", "1b", ("exp1b_m_mp_buildmer", "exp1b_m_mp_subjInt",
                                  "exp1b_m_mp_itemInt"),
     "Exp 1B: production by memory accuracy, the reported glm and the authors' two checks, "
     "one a failed fit"),
    ("human_models_2", "2", ("exp2_m_memory", "exp2_m_prod"),
     "Exp 2: memory and production accuracy by pronoun, PSA and biographies"),
    ("human_models_2_he_she_reference", "2", ("exp2_m_prod_bio_HS0",),
     "Exp 2: production with the he/she biographies as reference (the authors' follow-up)"),
    ("human_models_2_they_reference", "2", ("exp2_m_prod_bio_T0",),
     "Exp 2: production with the they biographies as reference (the authors' follow-up)"),
)
MP_TERMS_FIRST_PART = 12   # Exp 2's four-way model: terms 1-12 in one table, 13-24 in the next

LABELS = {"experiment": "Experiment", "task": "Task", "pronoun": "Pronoun",
          "people": "People", "people_ci": "95% CI", "model": "Model", "model_ci": "95% CI",
          "difference": "Model minus people", "difference_ci": "95% CI",
          "model_argmax": "Model argmax", "contrast": "Contrast", "n_responses": "Responses",
          "mass_mean": "Mean mass", "mass_min": "Smallest", "mass_max": "Largest",
          "engine": "Engine", "nobs": "Observations", "participants": "Participants",
          "characters": "Characters",
          "loglik": "Log-likelihood", "aic": "AIC", "status": "Fit status",
          "n_characters": "Characters", "filler": "Math text",
          "he": "He", "he_ci": "95% CI", "she": "She", "she_ci": "95% CI", "they": "They",
          "they_ci": "95% CI", "n_distractors": "Distractors", "mean": "They-fidelity",
          "sd": "SD over seeds", "n_seeds": "Seeds", "n_instances": "Instances",
          "chance": "Chance", "group": "Group", "r_raw": "Raw r", "raw": "95% CI",
          "reliability": "Reliability", "noise_ceiling": "Noise ceiling",
          "r_corrected": "Corrected r", "corrected": "95% CI", "n_participants": "Participants",
          "n_items": "Items", "below_calibrated_design": "Below the calibrated design",
          "group_a": "Group A", "group_b": "Group B", "r_corrected_a": "Corrected r, A",
          "r_corrected_b": "Corrected r, B", "difference_ab": "A minus B",
          "accuracy": "Probability correct", "accuracy_ci": "95% CI",
          "as_people_saw": "As people saw it", "measuring_memory": "Above chance",
          "position": "Position", "p_chosen": "P(chosen)", "argmax_share": "Most probable there",
          "n_prompts": "Characters", "n_orders": "Orders", "condition": "Condition",
          "listed_order": "One order", "n_questions": "Questions", "order_balanced": "Every order",
          "calibrated": "Calibrated", "verdict": "Verdict", "p_holm": "p (Holm)",
          "p_value": "p", "p_equivalence_holm": "Equivalence p (Holm)",
          "estimate": "A minus B", "estimate_ci": "95% CI",
          "r_profiles": "r of profiles", "reliability_a": "Reliability, women",
          "reliability_b": "Reliability, men", "r_profiles_corrected": "Corrected r",
          "r_profiles_corrected_ci": "95% CI", "max_alignment_difference": "Largest difference",
          "max_alignment_difference_upper": "Same, at 95% low"}
VERDICT_WORDS = ("Verdict: differs, Holm p < .05 over the family of people-vs-model verdicts "
                 "(each experiment and task's they accuracy and every contrast); no difference "
                 "shown, Holm p of .05 or more; unresolved, the Holm p turns on bootstrap "
                 "p-values at their floor (too few replicates to decide); not measuring memory, the model's answers do not "
                 "depend on the character (its probe is at chance), so no verdict is drawn; at "
                 "floor: no comparison, the model's probabilities on every side of the contrast "
                 "are below the floor")
GENDER = {"female": "women", "male": "men"}
# each model in one phrase (the fit settings table)
MODEL_WORDS = {
    "exp1a_m_memory": "Memory", "exp1a_m_prod": "Production",
    "exp1a_m_mp": "Production by memory",
    "exp1b_m_memory": "Memory", "exp1b_m_prod": "Production",
    "exp1b_m_mp_buildmer": "Production by memory (GLM)",
    "exp1b_m_mp_subjInt": "By-participant check",
    "exp1b_m_mp_itemInt": "By-character check",
    "exp2_m_memory": "Memory", "exp2_m_prod": "Production",
    "exp2_m_prod_bio_HS0": "Production, he/she reference",
    "exp2_m_prod_bio_T0": "Production, they reference",
    "exp2_m_mp": "Production by memory",
}
VALUES = {"model": MODEL_WORDS,
          "group": GENDER, "group_a": GENDER, "group_b": GENDER, "pronoun": PRONOUN_WORDS}


# --------------------------------------------------------------------------
# the fits as the model tables show them

def canonical_term(term: str) -> str:
    """An interaction's R name with its pieces in VARIABLE_ORDER (M_Acc_Factor...:Pronoun...
    -> Pronoun...:M_Acc_Factor...), so that one quantity is one row of a model table."""
    def rank(piece: str) -> int:
        # the longest variable name that starts the piece ("Biographies_HS0" before
        # "Biographies")
        found = max((v for v in VARIABLE_ORDER if piece.startswith(v)), key=len, default=None)
        return VARIABLE_ORDER.index(found) if found else len(VARIABLE_ORDER)

    pieces = term.split(":")
    return ":".join(sorted(pieces, key=rank)) if len(pieces) > 1 else term


def shown_fit(fit, failed: bool):
    """The fit as a model table shows it: interaction terms in one order, and for a FAILED
    fit no SE, interval or p-value (they come from a broken Hessian; results.json's
    human_models keeps them). Presentation only: a copy."""
    coefs = fit.coefs.assign(term=[canonical_term(t) for t in fit.coefs["term"]])
    if failed:
        coefs = coefs.assign(se=np.nan, ci_low=np.nan, ci_high=np.nan, stat=np.nan,
                             p_value=np.nan)
    return replace(fit, coefs=coefs)


def model_columns(human: dict, status: dict, keys) -> dict:
    """{(span, header): FitResult} for the model table: each model's lme4 (or glm) fit and,
    where fitted, its Bayesian twin beside it."""
    out = {}
    for key in keys:
        span, header = MODEL_HEADERS[key]
        failed = status.get(key, {}).get("status") == "FAILED"
        for backend, fit in human.get(key, {}).items():
            label = header if backend != "pymc" else f"{header} (Bayesian)"
            out[(span, label)] = shown_fit(fit, failed and backend != "pymc")
    return out


def term_words(models: dict) -> dict[str, str]:
    """{R term: label} for a model table: a main effect as gbstats reads it off the coding
    ("Pronoun: he+she vs they", "Memory: right vs wrong"); an interaction shortened so that a
    four-way term fits a page, the pronoun contrast in words and the two-level factors by
    name ("He+she vs they × Memory × PSA"; the notes give every coding)."""
    from gbstats.report.model_table import codings_of, predictors_of, term_label

    out = {}
    for fit in models.values():
        codings, predictors = codings_of(fit), predictors_of(fit)
        for term in fit.coefs["term"]:
            pieces = term.split(":")
            if len(pieces) == 1 or term in out:   # the first fit's coding names it
                continue
            words = []
            for piece in pieces:
                text = term_label(piece, codings, predictors, VARIABLES, LEVELS)
                name, _, contrast = text.partition(": ")
                words.append(contrast if piece.startswith("Pronoun") and contrast else name)
            label = " × ".join(words)
            out[term] = label[0].upper() + label[1:]
    return out


def failed_note(human: dict, status: dict) -> dict[str, str]:
    """{model: the model-table note of a FAILED fit}: what lme4 said and why its SEs are not
    shown."""
    from gbstats.mixed.fitting import in_words_for_a_table

    notes = {}
    for key, st in status.items():
        if st.get("status") != "FAILED":
            continue
        ses = human[key]["lme4"].coefs["se"]
        notes[key] = (f"{MODEL_WORDS[key]}: a FAILED fit (lme4: "
                      f"{in_words_for_a_table(st['lme4_messages'])}). "
                      f"lme4 prints SEs of {ses.min():.5f} to {ses.max():.5f} for its terms, "
                      f"{st['min_se_ratio_to_glm']:.3f} times those of the same fixed part "
                      "without random effects: they come from a broken finite-difference "
                      "Hessian and are not shown (--); read its point estimates only")
    return notes


def mp_split(human: dict) -> tuple[list[str], list[str]]:
    """(terms in the first part, terms in the second) of Exp 2's four-way model, by R name."""
    terms = [canonical_term(t) for t in human["exp2_m_mp"]["lme4"].coefs["term"]]
    return terms[:MP_TERMS_FIRST_PART], terms[MP_TERMS_FIRST_PART:]


def fit_settings_view(settings: pd.DataFrame) -> pd.DataFrame:
    """human_fit_settings for print: one heading per experiment with its rows, the
    participants and characters each fit's random effects group by."""
    def count(text: str, group: str) -> float:
        found = dict(p.rsplit(" ", 1) for p in text.split("; ")) if text else {}
        return float(found[group]) if group in found else np.nan

    return settings.assign(
        heading=[f"{EXPERIMENTS[e]} ({n} participant x character rows)"
                 for e, n in zip(settings["experiment"], settings["nobs"])],
        participants=[count(t, "SubjID") for t in settings["groups"]],
        characters=[count(t, "Name") for t in settings["groups"]])[
        ["heading", "model", "participants", "characters", "loglik", "status"]]


def status_notes(status: dict) -> list[str]:
    """A sentence for every fit that did not simply converge: what lme4 said (in words, as
    a table note says it), what to read."""
    from gbstats.mixed.fitting import in_words_for_a_table

    notes = []
    for key, st in status.items():
        experiment = EXPERIMENTS[next(s.experiment for s in HUMAN_MODELS if s.key == key)]
        what = f"{experiment}, {MODEL_WORDS[key].lower()}"
        if st["status"] == "FAILED":
            notes.append(f"{what}: FAILED (lme4: {in_words_for_a_table(st['lme4_messages'])}); its SEs are "
                         f"{st['min_se_ratio_to_glm']:.3f} times the glm's and must not be read")
        elif st["status"] == "convergence warning":
            notes.append(f"{what}: lme4's gradient check failed ({in_words_for_a_table(st['lme4_messages'])}), but the "
                         f"SEs pass the check (at least {st['min_se_ratio_to_glm']:.2f} times the "
                         "glm's)")
        elif st["status"] == "singular":
            notes.append(f"{what}: singular (lme4: {in_words_for_a_table(st['lme4_messages'])}); estimates and SEs "
                         "usable")
    return notes


# --------------------------------------------------------------------------
# people vs model

def with_ci_columns(frame: pd.DataFrame, stems) -> pd.DataFrame:
    """<stem>_low/<stem>_high renamed <stem>_ci_low/<stem>_ci_high, so that each pair prints as
    one "95% CI" column beside its point estimate."""
    return frame.rename(columns={f"{s}_{side}": f"{s}_ci_{side}" for s in stems
                                 for side in ("low", "high")})


def heading(experiment: str, task: str, cell: str = "all") -> str:
    where = "" if cell == "all" else f", {cell}"
    return f"{EXPERIMENTS[experiment]}, {task}{where}"


def cells_view(cells: pd.DataFrame, *, task: str | None = None) -> pd.DataFrame:
    """model_vs_people for print: one heading per experiment and task, people, model and
    their difference; with `task`, Exp 2's PSA x biographies cells of that task instead."""
    part = cells[(cells["cell"] != "all") & (cells["task"] == task) if task
                 else (cells["cell"] == "all")]
    # one heading per cell: experiment, task, PSA, biographies, then the pronouns beneath
    order = ["experiment", "task", "PSA", "Biographies"] if task else ["experiment", "task"]
    part = part.assign(_pronoun=part["pronoun"].map(list(PRONOUN_WORDS).index)).sort_values(
        order + ["_pronoun"], kind="stable")
    view = with_ci_columns(part, ["people", "model"]).assign(
        heading=[heading(e, t, c) for e, t, c in zip(part["experiment"], part["task"],
                                                      part["cell"])])
    # the they rows' verdicts are in the report's sentences and results.json (8 columns)
    return view[["heading", "pronoun", "people", "people_ci_low", "people_ci_high", "model",
                 "model_ci_low", "model_ci_high", "difference", "p_value", "model_argmax"]]


CONTRAST_WORDS = {
    ("they gap", "all"): "They gap",
    ("they gap", "PSA=0"): "They gap, unrelated PSA",
    ("they gap", "PSA=1"): "They gap, gendered-language PSA",
    ("gap closed by PSA", "all"): "Gap closed by the PSA",
    ("they gap", "Biographies=0"): "They gap, he/she biographies",
    ("they gap", "Biographies=1"): "They gap, they biographies",
    ("gap closed by Biographies", "all"): "Gap closed by the biographies",
}


def contrasts_view(contrasts: pd.DataFrame) -> pd.DataFrame:
    """The contrasts for print: one heading per experiment and task, the contrast in words
    (the difference's interval stays in results.json; its p is shown)."""
    rank = {key: k for k, key in enumerate(CONTRAST_WORDS)}
    ordered = contrasts.assign(_rank=[rank.get((c, w), len(rank)) for c, w in
                                      zip(contrasts["contrast"], contrasts["condition"])])
    ordered = ordered.sort_values(["experiment", "task", "_rank"], kind="stable")
    view = with_ci_columns(ordered, ["people", "model", "difference"])
    return view.assign(
        heading=[heading(e, t) for e, t in zip(view["experiment"], view["task"])],
        contrast=[CONTRAST_WORDS.get((c, w), f"{c} ({w})")
                  for c, w in zip(view["contrast"], view["condition"])])[
        ["heading", "contrast", "people", "people_ci_low", "people_ci_high", "model",
         "model_ci_low", "model_ci_high", "difference", "p_holm", "verdict"]]


def distractors_view(table: pd.DataFrame) -> pd.DataFrame:
    """The distractor sweep for print: one row per task x characters x math text, the three
    pronouns' accuracy (with intervals) side by side."""
    rows = []
    for (task, n, filler), block in table.groupby(["task", "n_characters", "filler"],
                                                  sort=False):
        row = {"task": f"{task.capitalize()}", "n_characters": int(n), "filler":
               "yes" if filler != "none" else "no"}
        for r in block.itertuples():
            word = PRONOUN_WORDS[r.pronoun]
            row.update({word: r.accuracy, f"{word}_ci_low": r.ci_low,
                        f"{word}_ci_high": r.ci_high})
        rows.append(row)
    return pd.DataFrame(rows)


def gender_view(table: pd.DataFrame) -> pd.DataFrame:
    out = table.rename(columns={"ci_low": "corrected_low", "ci_high": "corrected_high"})
    return out.assign(task=out["task"].str.capitalize())[
        ["task", "group", "r_raw", "raw_low", "raw_high", "reliability", "r_corrected",
         "corrected_low", "corrected_high", "n_participants", "n_items",
         "below_calibrated_design"]]


def gender_comparison_view(table: pd.DataFrame) -> pd.DataFrame:
    from gbstats.alignment.group_comparison import short_verdict

    from studies.pronoun_memory.compare import NOT_CALIBRATED

    def short(v: str) -> str:
        if v.startswith("not measuring"):
            return v
        flag = v.endswith(NOT_CALIBRATED)
        return short_verdict(v) + (f"; {NOT_CALIBRATED}" if flag else "")

    out = table.rename(columns={"ci_low": "estimate_ci_low", "ci_high": "estimate_ci_high"})
    return out.assign(task=out["task"].str.capitalize(),
                      verdict=[short(str(v)) for v in out["verdict"]])[
        ["task", "r_corrected_a", "r_corrected_b", "estimate", "estimate_ci_low",
         "estimate_ci_high", "p_holm", "p_equivalence_holm", "verdict"]]


def gender_profile_view(table: pd.DataFrame) -> pd.DataFrame:
    out = table.rename(columns={"ci_low": "r_profiles_corrected_ci_low",
                                "ci_high": "r_profiles_corrected_ci_high"})
    return out.assign(task=out["task"].str.capitalize())[
        ["task", "reliability_a", "reliability_b", "r_profiles", "r_profiles_corrected",
         "r_profiles_corrected_ci_low", "r_profiles_corrected_ci_high",
         "max_alignment_difference", "max_alignment_difference_upper", "n_items"]]


# --------------------------------------------------------------------------
# the checks the memory numbers rest on

def caption_name(name: str) -> str:
    """The model as a caption names it: "SmolLM2-135M-Instruct, 4-bit" (the quantization
    scheme's code, Q4_1, is in the text and results.json; a caption holds no identifier)."""
    return name.split(" (")[0]


def probe_view(probe: pd.DataFrame) -> pd.DataFrame:
    """The probe for print: one heading per task, a row per pronoun and one for all."""
    out = probe.rename(columns={"ci_low": "accuracy_ci_low", "ci_high": "accuracy_ci_high"})
    return out.assign(
        task=out["task"].str.capitalize(),
        pronoun=[("all characters" if p == "all" else PRONOUN_WORDS[p]) for p in out["pronoun"]],
        measuring_memory=[("yes" if m else "no: not measuring memory") if p == "all" else ""
                          for p, m in zip(out["pronoun"], out["measuring_memory"])])[
        ["task", "pronoun", "accuracy", "accuracy_ci_low", "accuracy_ci_high", "chance",
         "as_people_saw", "n_characters", "measuring_memory"]]


def position_view(table: pd.DataFrame) -> pd.DataFrame:
    return table.assign(position=table["position"].map({1: "first", 2: "second", 3: "third"}),
                        n_questions=table["n_prompts"] * table["n_orders"])[
        ["condition", "position", "p_chosen", "chance", "argmax_share", "n_questions"]]


def calibration_view(table: pd.DataFrame) -> pd.DataFrame:
    return table.assign(pronoun=[("all characters" if p == "all" else PRONOUN_WORDS[p])
                                 for p in table["pronoun"]])[
        ["condition", "pronoun", "listed_order", "order_balanced", "calibrated",
         "n_characters"]].rename(columns={"n_characters": "n_questions"})

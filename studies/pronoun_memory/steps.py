"""pronoun_memory: load -> score -> fit -> tables -> report (Gardner's Exp 1A, 1B, 2)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from gbstats.data.registry import load_dataset
from studies.pronoun_memory import compare as K
from studies.pronoun_memory import contexts as C
from studies.pronoun_memory import human as H
from studies.pronoun_memory import model_side as M
from studies.pronoun_memory import ruff as R

# one commit batch holds every prompt of several lists, so that a list's (or a PSA
# condition's) long context runs once as the root of one token tree (models.causal)
SCORING_BATCH = 1024


def fit_cache(run) -> dict:
    return {"use_cache": not run.args.no_cache, "cache_dir": run.args.cache_dir}


def load(run, _):
    loaded = load_dataset("gardner2023", run.args.data_dir)
    run.log.extend(loaded.exclusions)
    tables = loaded.tables
    for experiment in ("1a", "1b"):
        s = tables[f"exp{experiment}_stimuli"]
        fixed = s[s["introduction_source"] != "docx"]
        for r in fixed.itertuples():
            run.note(f"Exp {experiment.upper()} list {r.List}: the Qualtrics export shows "
                     f"\"{r.introduction_shown}\" where the list (characters.xlsx) and the data "
                     f"have {r.Name} ({r.Pronoun}); the model reads the workbook's sentence.")
        for r in s[s["name_in_second_sentence"] != s["Name"]].itertuples():
            run.note(f"Exp {experiment.upper()} list {r.List}: the introduction people read "
                     f"has a typo, kept as shown: \"{r.introduction}\".")
    return {"tables": tables}


def score(run, state):
    tables = state["tables"]
    if not run.wants_model:
        run.note("--model none: the human side only (no scoring, no model-vs-people "
                 "comparison, no distractors).")
        return {**state, "scored": None}
    experiments = run.args.experiments
    sweep = not run.args.no_distractors and C.SWEEP_EXPERIMENT in experiments
    if list(experiments) != list(C.EXPERIMENTS):
        run.note(f"--experiments {','.join(experiments)}: the model reads only these "
                 "experiments' materials (the authors' models are fitted on all three).")
    prompts = C.all_prompts(tables, run.seed, distractors=sweep, experiments=experiments)
    lm = run.model()
    run.say(f"scoring {len(prompts)} prompts x (3 memory options + 3 next words) with {lm.name}: "
            f"{prompts['context_id'].nunique()} shared contexts")
    scored = M.score_prompts(prompts, lm, batch_size=SCORING_BATCH, **run.cache)
    run.add_provenance(scoring=scored.attrs["scoring"], scoring_runs=scored.attrs["run"],
                       exp2_character_order_seed=run.seed)
    run.write_csv("model_scores.csv", scored)
    ruff = None
    if run.args.ruff_results:
        ruff = R.ruff_results_fidelity(run.args.ruff_results, lm.name)
        run.add_data_files([run.args.ruff_results])
    elif run.args.ruff_per_seed and sweep:
        run.say(f"pronoun_fidelity's RUFF they-fidelity on a sample ({run.args.ruff_per_seed} "
                "per seed and number of distractors)")
        ruff = R.ruff_sample_fidelity(lm, per_seed=run.args.ruff_per_seed, seed=run.seed,
                                      data_dir=run.args.data_dir, cache=run.cache, log=run.log)
    return {**state, "scored": scored, "ruff": ruff}


def fit(run, state):
    tables = state["tables"]
    if not run.lme4_available("the authors' glmer models"):
        return {**state, "human": {}, "status": {}}
    run.say(f"fitting the authors' {len(H.HUMAN_MODELS)} models (lme4 glmer; a glm for one)")
    human = H.fit_human_models(tables, **fit_cache(run))
    status = H.statuses(human, tables)
    for spec in H.HUMAN_MODELS:
        run.record_fits(spec.key, human[spec.key])
        st = status[spec.key]
        if st["status"] == "FAILED":
            run.warn([f"{spec.key} [lme4]: FAILED FIT - {st['lme4_messages']}; its SEs are "
                      f"{st['min_se_ratio_to_glm']:.3f} x those of the same fixed part without "
                      "random effects: the Hessian they come from is broken. Read its point "
                      "estimates only."])
    if run.bayes and run.args.human_twins:
        run.say("Bayesian twins of the six main models (bambi/PyMC; minutes each)")
        for spec in (s for s in H.HUMAN_MODELS if s.twin):
            rows, contrasts = H.model_rows(spec, tables[f"exp{spec.experiment}"])
            safe, back = H.bambi_safe(contrasts)
            twin = run.fit(spec.formula, rows, name=f"{spec.key} twin", family="binomial",
                           backends=[], twin=True, contrasts=safe, loo=False)
            human[spec.key]["pymc"] = H.rename_terms(twin["pymc"], back)
    else:
        run.note("The Bayesian twins of the six main models are opt-in (--human-twins; "
                 "minutes each on 2 cores; refitted until R-hat <= 1.01, ESS >= 400 and no "
                 "divergences, up to 4x --draws).")
    return {**state, "human": human, "status": status}


def tables(run, state):
    out = {"state": state}
    human = state.get("human") or {}
    if human:
        out["human_models"] = H.human_models_table(human, state["status"])
        out["human_fit_settings"] = H.fit_settings(human, state["status"])
        out["human_variances"] = H.variance_table(human)
    scored = state.get("scored")
    people = K.people_long(state["tables"], run.log)
    if scored is None:
        out["people_cells"] = K.people_cells(people, n_boot=run.args.n_boot, seed=run.seed)
        return out
    model = K.model_long(scored, state["tables"])
    run.say(f"people vs model: two-way bootstrap over participants and characters "
            f"({run.args.n_boot} replicates)")
    cells, contrasts = K.compare(people, model, n_boot=run.args.n_boot, seed=run.seed)
    out["model_vs_people"] = cells
    out["contrasts"] = contrasts
    out["verdicts"] = K.verdicts(cells, contrasts, model)
    if (scored["n_characters"] != 12).any():
        out["distractors"] = R.distractor_table(scored)
    if state.get("ruff") is not None:
        out["ruff"] = state["ruff"]
    if "2" in run.args.experiments:
        run.say("which participants does the model resemble (Exp 2, participant gender)")
        out.update(K.gender_alignment(people, model, run.log, n_boot=run.args.n_boot,
                                      seed=run.seed, **fit_cache(run)))
    return out


# --------------------------------------------------------------------------
# report

DISPLAY = {"experiment": "Experiment", "model": "Model", "task": "Task", "term": "Term",
           "backend": "Engine", "estimate": "Estimate", "std_error": "SE",
           "ci_low": "95% CI low", "ci_high": "95% CI high", "p_value": "p",
           "status": "Fit status", "se_usable": "SEs usable", "pronoun": "Pronoun",
           "cell": "Condition", "people": "People", "people_low": "People low",
           "people_high": "People high", "difference": "Model minus people",
           "difference_low": "Difference low", "difference_high": "Difference high",
           "model_low": "Model low", "model_high": "Model high", "n_participants": "Participants",
           "n_characters": "Characters", "contrast": "Contrast", "condition": "Condition",
           "n_responses": "Responses", "model_argmax": "Model argmax",
           "pronoun_mass": "Pronoun mass", "filler": "Filler", "accuracy": "Accuracy",
           "argmax_accuracy": "Argmax accuracy", "n_characters_asked": "Questions",
           "mean": "Fidelity", "sd": "SD over seeds", "n_distractors": "Distractors",
           "n_instances": "Instances", "engine": "Engine", "nobs": "N", "groups": "Groups",
           "loglik": "Log-likelihood", "aic": "AIC", "optimizer": "Optimizer",
           "group": "Group", "variance": "Variance", "sd_": "SD"}


def _yes_no(frame: pd.DataFrame, columns) -> pd.DataFrame:
    out = frame.copy()
    for c in columns:
        out[c] = out[c].map({True: "yes", False: "no"}).fillna("")
    return out


def failed_fit_text(out: dict, status: dict) -> str:
    """One paragraph per FAILED fit: what lme4 said, how small its SEs are, what to read."""
    lines = []
    models = out["human_models"]
    for r in out["human_fit_settings"].itertuples():
        if r.status != "FAILED":
            continue
        st = status[r.model]
        ses = models[(models["model"] == r.model) & (models["backend"] == "lme4")]["std_error"]
        lines.append(
            f"- **{r.model}** (`{r.formula}`): lme4 stops with \"{st['lme4_messages']}\", and "
            f"every SE comes out near {ses.median():.4f} ({st['min_se_ratio_to_glm']:.3f} x the "
            "SEs of the same fixed part without random effects). The finite-difference Hessian "
            "these SEs come from is broken: the point estimates are reproduced, the SEs must not "
            "be read. The authors saw the problem and reported the glm instead "
            "(exp1b_m_mp_buildmer).")
    return "\n".join(lines)


def report(run, report, out):
    from studies.pronoun_memory import plots as P

    state = out["state"]
    model_name = run.args.model if run.wants_model else "none"
    report.section("Design", (
        "Gardner's experiments on memory for and production of singular *they* (dataset "
        "`gardner2023`, bethanygardner/Singular-They-Public @ 20f628f, no LICENSE file): "
        "participants met 12 characters (four each with he/him, she/her, they/them), did a "
        "math distractor, answered \"What pronouns does X use?\" and completed \"After X got "
        "home from working ...\". Exp 1A (102 participants) and 1B (101; sentences before "
        "the memory questions) ran in Qualtrics; Exp 2 (320, PCIbex) crossed a PSA about "
        "gendered language with biographies that use singular *they*. The human side refits "
        "the authors' glmer models (docs/pronoun-memory-reproduction.md sets every published "
        "number beside ours). The model side gives "
        f"`{model_name}` what a participant read, in order, as one shared context per list, then "
        "asks each memory question (forced choice over the three options) and each sentence "
        "beginning (next-word P(he), P(she), P(they))." + run.notes_markdown()))
    if "human_models" in out:
        failed = failed_fit_text(out, state["status"])
        if failed:
            report.section("A failed fit in the published analysis", failed)
        shown = _yes_no(out["human_models"], ["se_usable"])
        # a failed fit's p-values come from its broken SEs: not shown (results.json keeps them)
        shown.loc[shown["se_usable"] == "no", "p_value"] = np.nan
        report.table("human_models", shown,
                     "The authors' models refitted: fixed effects (log-odds), status and lme4's messages",
                     columns=["experiment", "model", "backend", "term", "estimate", "std_error",
                              "p_value", "status", "se_usable"],
                     column_labels=DISPLAY, p_columns=["p_value"], digits=5,
                     notes=["glmer: Laplace, nAGQ = 1, glmerControl() defaults (bobyqa, then "
                            "Nelder-Mead), as buildmer and the authors' glmer calls.",
                            "Codings: Pronoun they vs he+she (.33, .33, -.66), he vs she "
                            "(-.5, .5, 0); PSA, Biographies and memory accuracy -.5 / +.5; "
                            "Exp 2 follow-ups dummy-code Biographies.",
                            "Status FAILED: lme4's gradient check failed and the SEs are below a "
                            "quarter of the fixed-effects-only glm's; do not read its SEs.",
                            "pymc rows: Bayesian twins (posterior mean and SD)."])
        report.table("human_fit_settings", out["human_fit_settings"],
                     "Each fit's sample, likelihood, optimizer and status",
                     columns=["experiment", "model", "engine", "nobs", "groups", "loglik",
                              "aic", "status"], column_labels=DISPLAY,
                     notes=[f"{r.model}: {r.role}" for r in out["human_fit_settings"].itertuples()])
        report.table("human_variances", out["human_variances"],
                     "Random-effect variances of the glmer fits",
                     columns=["experiment", "model", "group", "term", "variance"],
                     column_labels=DISPLAY, digits=5)
    if "people_cells" in out:
        report.table("people_cells", out["people_cells"],
                     "People's accuracy by experiment, task and pronoun",
                     column_labels=DISPLAY)
    if "model_vs_people" in out:
        report.section("People vs the model", "\n".join(
            f"- {v}" for v in out["verdicts"]) or "No cell or contrast where the model's "
            "difference from people has a 95% interval excluding 0.")
        cells = out["model_vs_people"]
        report.table("model_vs_people", cells,
                     "Accuracy by task and pronoun: people beside the model, 95% intervals",
                     columns=["experiment", "task", "pronoun", "cell", "people", "people_low",
                              "people_high", "model", "model_low", "model_high", "difference",
                              "p_value", "model_argmax", "n_participants", "n_characters"],
                     column_labels=DISPLAY, p_columns=["p_value"],
                     notes=["People: share of correct answers (production: completions with "
                            "he, she or they). Model: mean probability on the correct option "
                            "(production: normalised over he, she, they).",
                            "Intervals: two-way bootstrap over participants and characters "
                            f"({run.args.n_boot} replicates, percentile); the model's "
                            "characters share the people's character draws.",
                            "p: model equals people, by inverting the bootstrap interval."])
        report.table("contrasts", out["contrasts"],
                     "They gap and its change with PSA and biographies, marginal log-odds",
                     columns=["experiment", "task", "contrast", "condition", "people",
                              "people_low", "people_high", "model", "model_low", "model_high",
                              "difference", "difference_low", "difference_high", "p_value"],
                     column_labels=DISPLAY, p_columns=["p_value"],
                     notes=["They gap: mean(logit he, logit she) - logit they of the "
                            "population-averaged accuracy; positive means they is worse.",
                            "Gap closed by PSA (Biographies): gap with the unrelated PSA (he/she "
                            "biographies) minus gap with the gendered-language PSA (they "
                            "biographies)."])
        report.figure("accuracy_by_pronoun", P.accuracy_figure(cells),
                      "Accuracy by pronoun and task, people beside the model, 95% intervals")
        if (cells["experiment"] == "2").any():
            report.figure("psa_biographies_they", P.psa_figure(cells),
                          "Exp 2: they accuracy by PSA and biographies, people beside the model")
    if "distractors" in out:
        report.section("Distractors, as in RUFF", (
            "Exp 1A's lists again, with 1, 4 or 12 characters in context and with or without "
            "the math text between the introductions and the questions (12 with the math text "
            "is what people read). Beside it, pronoun_fidelity's RUFF they-fidelity for the "
            "same model (0-5 distractor sentences about another person)."))
        if "ruff" in out:
            report.section("RUFF beside this study", R.ruff_sentence(out["distractors"],
                                                                     out["ruff"]))
        report.table("distractors", out["distractors"],
                     "The model's fidelity by characters in context, filler, task and pronoun",
                     column_labels=DISPLAY,
                     notes=["Accuracy: mean probability on the correct option; interval over "
                            "characters (names resampled, 2000 replicates)."])
        report.figure("distractors", P.distractor_figure(out["distractors"], out.get("ruff")),
                      "They-fidelity against context size, this study beside RUFF")
    if "ruff" in out:
        report.table("ruff_they_fidelity", out["ruff"],
                     "pronoun_fidelity's they-fidelity for the same model (RUFF)",
                     columns=["model", "n_distractors", "mean", "sd", "n_seeds", "n_instances",
                              "chance"],
                     column_labels={**DISPLAY, "n_seeds": "Seeds", "chance": "Chance"},
                     notes=[f"Source: {out['ruff']['source'].iloc[0]}."])
    if "gender_alignment" in out:
        report.section("Which participants does the model resemble?", out["gender_answer"])
        report.table("gender_alignment", out["gender_alignment"],
                     "Exp 2: the model's item accuracy against women's and men's",
                     column_labels={**DISPLAY, "r_raw": "Raw r", "raw_low": "Raw r low",
                                    "raw_high": "Raw r high", "reliability": "Reliability",
                                    "noise_ceiling": "Noise ceiling",
                                    "r_corrected": "Corrected r", "ci_low": "Corrected low",
                                    "ci_high": "Corrected high", "n_items": "Items",
                                    "below_calibrated_design": "Below calibrated design"},
                     notes=["Items: list x character (144); ratings: each response's accuracy "
                            "(0/1); the model's score: its probability on the correct option.",
                            "gbstats.alignment.reliability.group_alignment: split-half "
                            f"reliability, Spearman-Brown; {run.args.n_boot} replicates."])
        if len(out.get("gender_comparison", [])):
            report.table("gender_comparison", out["gender_comparison"],
                         "Exp 2: women vs men, difference of corrected correlations",
                         columns=["task", "group_a", "group_b", "r_corrected_a", "r_corrected_b",
                                  "difference", "ci_low", "ci_high", "p_value"],
                         column_labels={**DISPLAY, "group_a": "Group A", "group_b": "Group B",
                                        "r_corrected_a": "Corrected r, A",
                                        "r_corrected_b": "Corrected r, B",
                                        "difference": "A minus B"},
                         p_columns=["p_value"],
                         notes=[out["gender_comparison"]["test"].iloc[0] + "."])

"""pronoun_memory: load -> score -> fit -> tables -> report (Gardner's Exp 1A, 1B, 2)."""
from __future__ import annotations

from gbstats.alignment.group_comparison import profile_bounds_notes
from gbstats.alignment.reliability import reliability_bounds_notes
from gbstats.data.registry import load_dataset
from gbstats.report.table_grammar import correlation_caps
from studies.pronoun_memory import compare as K
from studies.pronoun_memory import contexts as C
from studies.pronoun_memory import human as H
from studies.pronoun_memory import model_side as M
from studies.pronoun_memory import presentation as P
from studies.pronoun_memory import ruff as R
from studies.pronoun_memory import sensitivity as S

# one commit batch holds every prompt of several lists, so that a list's (or a PSA
# condition's) long context runs once as the root of one token tree (models.causal)
SCORING_BATCH = 1024


def fit_cache(run) -> dict:
    return {"use_cache": not run.args.no_cache, "cache_dir": run.args.cache_dir}


def check_twin_flags(run) -> None:
    """--human-twins asks for Bayesian fits that --no-bayes turns off: refused before any
    work rather than one flag silently winning."""
    from gbstats.errors import GbstatsError

    if run.args.human_twins and run.args.no_bayes:
        raise GbstatsError("--human-twins asks for Bayesian twins, which --no-bayes turns off; "
                           "expected one or the other: drop --no-bayes to fit them, or drop "
                           "--human-twins")


def load(run, _):
    check_twin_flags(run)
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
    orders = C.memory_orders(run.args.option_orders)
    run.say(f"scoring {len(prompts)} prompts x ({len(orders)} orders x 3 memory options + 3 "
            f"worked examples x 3 next words) with {lm.name}: "
            f"{prompts['context_id'].nunique()} shared contexts, each with a content-free "
            "question")
    if not prompts["sweep"].any():
        run.note("Exp 1A's characters are also asked about each alone, without the math text "
                 "(the memory probe): without it no memory verdict can be drawn.")
    scored, choices = M.score_prompts(prompts, lm, batch_size=SCORING_BATCH, orders=orders,
                                      with_choices=True, **run.cache)
    run.add_provenance(scoring=scored.attrs["scoring"], scoring_runs=scored.attrs["run"],
                       exp2_character_order_seed=run.seed,
                       memory_option_orders=[list(o) for o in orders],
                       memory_content_free_question=C.CONTENT_FREE,
                       production_example_pronouns=list(C.EXAMPLE_PRONOUNS),
                       floor=K.FLOOR, measuring_memory_rule=K.MEASURING_RULE)
    run.write_csv("model_scores.csv", scored)
    run.write_csv("memory_choices.csv", choices)
    ruff = None
    if run.args.ruff_results:
        ruff = R.ruff_results_fidelity(run.args.ruff_results, lm.name)
        run.add_data_files([run.args.ruff_results])
    elif run.args.ruff_per_seed and sweep:
        run.say(f"pronoun_fidelity's RUFF they-fidelity on a sample ({run.args.ruff_per_seed} "
                "per seed and number of distractors)")
        ruff = R.ruff_sample_fidelity(lm, per_seed=run.args.ruff_per_seed, seed=run.seed,
                                      data_dir=run.args.data_dir, cache=run.cache, log=run.log)
    from models.registry import described_as

    return {**state, "scored": scored, "choices": choices, "ruff": ruff,
            "model_name": described_as(lm.name, lm.model_id)}


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
    run.say("sensitivity refits: Exp 2 with a participant intercept, Exp 1B's failed fit "
            "with bobyqa (lme4 glmer)")
    sensitivity = S.fit_sensitivities(tables, **fit_cache(run))
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
    return {**state, "human": human, "status": status, "sensitivity": sensitivity}


def tables(run, state):
    out = {"state": state}
    human = state.get("human") or {}
    if human:
        out["human_models"] = H.human_models_table(human, state["status"])
        out["human_fit_settings"] = H.fit_settings(human, state["status"])
        out["human_variances"] = H.variance_table(human)
        if state.get("sensitivity"):
            out["human_sensitivity"] = S.sensitivity_table(human, state["status"],
                                                           state["sensitivity"], state["tables"])
    scored = state.get("scored")
    people = K.people_long(state["tables"], run.log)
    if scored is None:
        out["people_cells"] = K.people_cells(people, n_boot=run.args.n_boot, seed=run.seed)
        return out
    model = K.model_long(scored, state["tables"])
    name = state["model_name"]
    probe = K.memory_probe(scored, seed=run.seed)
    measures = K.measuring(probe)
    out["memory_probe"] = probe
    out["position_bias"] = K.position_bias_table(state["choices"], scored)
    out["memory_calibration"] = K.calibration_table(scored)
    n_boot = run.args.n_boot
    run.say(f"people vs model: two-way bootstrap over participants and characters "
            f"({n_boot} replicates)")
    cells, contrasts = K.compare(people, model, n_boot=n_boot, seed=run.seed)
    cells, contrasts = K.with_verdicts(cells, contrasts, measures, p_floor=2 / (n_boot + 1))
    # a bootstrap p cannot go below 2 / (B + 1): where p-values sit at that floor, the
    # replicates (not the data) set their Holm p, and can decide a verdict: draw enough
    needed = K.replicates_to_resolve(cells, contrasts)
    if needed > n_boot:
        run.say(f"      {n_boot} replicates put p-values at the bootstrap's floor "
                f"(2 / {n_boot + 1}) near the Holm threshold: again with {needed}")
        n_boot = needed
        cells, contrasts = K.compare(people, model, n_boot=n_boot, seed=run.seed)
        cells, contrasts = K.with_verdicts(cells, contrasts, measures,
                                           p_floor=2 / (n_boot + 1))
    out["model_vs_people"] = cells.assign(n_boot=n_boot)
    out["contrasts"] = contrasts.assign(n_boot=n_boot)
    out["verdicts"] = K.verdicts(cells, contrasts, model, name=name, probe=probe,
                                 p_floor=2 / (n_boot + 1))
    out["pronoun_mass"] = K.pronoun_mass_table(model)
    if scored["sweep"].any():
        out["distractors"] = R.distractor_table(scored[scored["sweep"]])
    if state.get("ruff") is not None:
        out["ruff"] = state["ruff"]
    if "2" in run.args.experiments:
        run.say("which participants does the model resemble (Exp 2, participant gender)")
        out.update(K.gender_alignment(people, model, run.log, n_boot=run.args.n_boot,
                                      seed=run.seed, measures=measures, name=name,
                                      **fit_cache(run)))
    return out


# --------------------------------------------------------------------------
# report (the table grammar: studies/pronoun_memory/presentation.py gives the words)

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
            "(exp1b_m_mp_buildmer). Its model table shows no SE for it (--); results.json's "
            "human_models keeps lme4's numbers with status FAILED and se_usable false.")
    return "\n".join(lines)


HUMAN_NOTES = ["glmer: Laplace approximation (one quadrature point), glmer's default optimizers (bobyqa, then Nelder-Mead), "
               "as buildmer and the authors' glmer calls; the glm: statsmodels IRLS",
               "Estimates in log-odds of a correct answer"]


def human_model_tables(run, report, out, state) -> None:
    """One model table per experiment (Exp 2: main models, follow-ups, and the four-way
    memory -> production model in two parts), every fit's status in the notes."""
    human, status = state["human"], state["status"]
    failed = P.failed_note(human, status)
    options = {"variables": P.VARIABLES, "levels": P.LEVELS, "groups": P.GROUPS}
    for name, experiment, keys, caption in P.MODEL_TABLES:
        keys = [k for k in keys if k in human]
        if not keys:
            continue
        notes = HUMAN_NOTES + [note for key, note in failed.items() if key in keys]
        columns = P.model_columns(human, status, keys)
        report.model_table(name, columns, caption, data=False, notes=notes,
                           terms=P.term_words(columns), **options)
    if "exp2_m_mp" in human:
        first, second = P.mp_split(human)
        columns = P.model_columns(human, status, ["exp2_m_mp"])
        for part, (drop, which) in enumerate(((second, "terms 1-12"), (first, "terms 13-24")),
                                             start=1):
            report.model_table(
                f"human_models_2_mp_part{part}", columns,
                f"Exp 2: production by memory accuracy, pronoun, PSA and biographies ({which})",
                data=False, drop_terms=drop, terms=P.term_words(columns), notes=HUMAN_NOTES + [
                    "The four-way model has 24 terms: this table shows " + which + " of them"],
                **options)


ORDER_WORDS = {"all": "all six orders", "latin": "the three rotations of a Latin square"}


def memory_checks(run, report, out, name: str) -> None:
    """The checks the model's memory numbers rest on: the probe (each character alone),
    the position bias of the listed options, and contextual calibration."""
    probe = out["memory_probe"]
    measures = K.measuring(probe)
    orders = ORDER_WORDS[run.args.option_orders]
    overall = probe[probe["pronoun"] == "all"].set_index("task")
    said = "; ".join(
        f"{task}, {overall.loc[task, 'accuracy']:.2f} [{overall.loc[task, 'ci_low']:.2f}, "
        f"{overall.loc[task, 'ci_high']:.2f}]: {'above chance' if ok else K.NOT_MEASURING}"
        for task, ok in measures.items())
    report.section(f"Does {name} measure memory here?", (
        "Each character alone, with no math text and no other character, is the easiest "
        "question the study can ask: the introduction that gives the pronoun is the last thing "
        "read. A model whose probability on the correct pronoun there, averaged over every "
        "order of the options, is not above chance (1/3, the lower end of its 95% interval) "
        "does not use the character, and its accuracy elsewhere is not memory: it is reported "
        f"as not measuring memory, and no verdict is drawn from it. For {name}: {said}. "
        "People saw the options in one order (he/him, she/her, they/them), so the model reads "
        f"them in {orders} and its choice is averaged over them. Its pull towards a position "
        "alone, whatever the option says: " + "; ".join(
            f"{c.lower() if c.startswith('Each') else c}, P(first) {b.iloc[0]:.2f}, "
            f"P(second) {b.iloc[1]:.2f}, P(third) {b.iloc[2]:.2f}"
            for c, b in out["position_bias"].groupby("condition", sort=False)["p_chosen"])
        + " (chance .33 each)."))
    short = P.caption_name(name)
    report.table("memory_probe", P.probe_view(probe),
                 f"{short}, each character alone without the math text: probability on the "
                 "correct pronoun against chance", record=probe, groups="task",
                 labels=P.LABELS, values=P.VALUES,
                 notes=[f"Probability on the correct option: memory averaged over {orders} "
                        "of the options; production normalised over he, she and they and "
                        "averaged over the worked example with he, she and they",
                        "As people saw it: memory with the options in the one order people saw "
                        "(he/him, she/her, they/them); production after the example ending "
                        "\"he made dinner.\"",
                        "95% interval: characters resampled (2000 replicates, percentile); "
                        "not measuring memory where the interval of all characters reaches "
                        "chance"])
    report.table("position_bias", P.position_view(out["position_bias"]),
                 f"Position bias of {short} in the memory question: how often the option in "
                 "each position is chosen, whatever it says", record=out["position_bias"],
                 groups="condition", labels=P.LABELS,
                 notes=["Probability of choosing the option listed first, second or third, "
                        f"averaged over the characters and {orders} (each option fills "
                        "each position equally often, so what the options say averages out); "
                        "chance 1/3",
                        "Most probable there: the share of character and order presentations "
                        "whose most probable option sits in that position",
                        "Questions: characters times orders, each option in each position "
                        "equally often"])
    report.table("memory_calibration", P.calibration_view(out["memory_calibration"]),
                 f"Memory accuracy of {short}: the options in one order, averaged over "
                 "every order, and calibrated against a content-free question (a sensitivity)",
                 record=out["memory_calibration"], groups="condition", labels=P.LABELS,
                 values=P.VALUES,
                 notes=["Mean probability on the correct option. One order: he/him, she/her, "
                        f"they/them as people saw them. Every order: averaged over {orders} "
                        "(what the study reports). Calibrated: in each order, the "
                        "choice divided by the choice the same text gives when the question "
                        "asks about \"N/A\" instead of a character, renormalised, then averaged "
                        "over the orders (Zhao and colleagues, 2021); a sensitivity, not the "
                        "primary reading",
                        "Questions: one per character, each asked in every order"])


def report(run, report, out):
    from studies.pronoun_memory import plots as PL

    state = out["state"]
    model_name = state.get("model_name") or (run.args.model if run.wants_model else "none")
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
        f"{model_name} what a participant read, in order, as one shared context per list, then "
        "asks each memory question (forced choice over the three options, listed in "
        f"{ORDER_WORDS[run.args.option_orders]} and averaged over them) and each sentence "
        "beginning (next-word P(he), P(she), P(they), after the instruction's worked example with he, she and "
        "they in turn, averaged). Each character is also asked about alone, without the math "
        "text: where the answer there is not above chance, the model's answers do not depend "
        "on the character and no verdict on its memory is drawn. A contrast in log-odds whose "
        f"sides all sit below P = {K.FLOOR} on the model's side is at floor: no comparison."
        + run.notes_markdown()))
    if "human_models" in out:
        failed = failed_fit_text(out, state["status"])
        if failed:
            report.section("A failed fit in the published analysis", failed)
        report.section("The authors' models, refitted")
        human_model_tables(run, report, out, state)
        report.record("human_models", out["human_models"],
                      "Every fixed effect of every fit at full precision, with each fit's "
                      "status, whether its SEs can be read, and lme4's own messages")
        report.table("human_fit_settings", P.fit_settings_view(out["human_fit_settings"]),
                     "Each fit's groups, likelihood and status", record=out["human_fit_settings"],
                     groups="heading", labels=P.LABELS, values=P.VALUES,
                     kinds={"participants": "count", "characters": "count"},
                     notes=["Participants, characters: the levels of each random effect's "
                            "grouping factor; -- where the fit has no such random effect",
                            "AIC: the model tables",
                            "Exp 1B, production by memory (GLM): buildmer kept no random effect; "
                            "the authors report this fit"] + P.status_notes(state["status"]))
        report.record("human_variances", out["human_variances"],
                      "The glmer fits' random-effect variances (the model tables show their SDs)")
        if "human_sensitivity" in out:
            S.sensitivity_report(report, out["human_sensitivity"])
    if "people_cells" in out:
        cells = out["people_cells"]
        view = P.with_ci_columns(cells, ["people"]).assign(
            heading=[P.heading(e, t) for e, t in zip(cells["experiment"], cells["task"])])
        report.table("people_cells", view, "People's accuracy by experiment, task and pronoun",
                     record=cells, groups="heading", labels=P.LABELS, values=P.VALUES,
                     columns=["heading", "pronoun", "people", "people_ci_low", "people_ci_high",
                              "n_responses"],
                     notes=["Share of correct answers (production: completions with he, she or "
                            "they); 95% intervals from a two-way bootstrap over participants and "
                            f"characters ({run.args.n_boot} replicates, percentile)"])
    if "model_vs_people" in out:
        name = state["model_name"]
        # a bootstrap p of B replicates is never below 2 / (B + 1), a Holm p over k verdicts
        # never below k times that: shown as "≤ .010" (B = 200) there, not as exact
        family = int(out["contrasts"]["family_size"].max()) if len(out["contrasts"]) else 1
        n_boot = int(out["contrasts"]["n_boot"].iloc[0]) if len(out["contrasts"]) else \
            run.args.n_boot
        floor = {"p_value": 2 / (n_boot + 1), "p_holm": min(1.0, family * 2 / (n_boot + 1))}
        memory_checks(run, report, out, name)
        raised = (f" ({run.args.n_boot} asked for: with them p-values at the bootstrap's "
                  "floor set Holm p-values near .05, so the comparison drew enough replicates "
                  "for that floor to sit at .005 or below)"
                  if n_boot > run.args.n_boot else "")
        resolution = (
            f"\n\nThe family holds {family} verdicts, so with {n_boot} bootstrap "
            f"replicates{raised} the smallest Holm p there can be is "
            f"{K._p(floor['p_holm'], None)}; a p at that floor is printed as a bound (≤), "
            "never as exact: "
            + ("no verdict can reach .05; rerun with more replicates (--n-boot)."
               if floor["p_holm"] >= 0.05 else "a verdict at that bound is as strong as these "
               "replicates can show."))
        report.section(f"People vs {name}", ("\n".join(
            f"- {v}" for v in out["verdicts"]) or f"No they cell or contrast where {name} "
            "differs from people (Holm p < .05 over the family of verdicts).") + resolution)
        cells = out["model_vs_people"]
        bootstrap = ("95% intervals: two-way bootstrap over participants and characters "
                     f"({n_boot} replicates, percentile); the model's characters share "
                     "the people's character draws; p: model equals people, by inverting the "
                     "bootstrap interval")
        accuracy = ("People: share of correct answers (production: completions with he, she or "
                    "they). Model: mean probability on the correct option (production: "
                    "normalised over he, she, they); model argmax: share of characters whose "
                    "most probable option is the correct one")
        report.table("model_vs_people", P.cells_view(cells),
                     f"Accuracy by task and pronoun, people beside {P.caption_name(name)}",
                     record=cells,
                     groups="heading", labels=P.LABELS, values=P.VALUES,
                     decimals={"model_argmax": 2}, p_floors=floor,
                     notes=[accuracy, bootstrap, "Participants and characters per cell, the "
                            "model's pronoun mass, the difference's interval and the they "
                            "rows' Holm p and verdict: results.json"])
        for task in ("memory", "production"):
            if ((cells["cell"] != "all") & (cells["task"] == task)).any():
                report.table(f"model_vs_people_exp2_{task}", P.cells_view(cells, task=task),
                             f"Exp 2: {task} accuracy by PSA and biographies, people beside the "
                             "model", record=False, groups="heading", labels=P.LABELS,
                             values=P.VALUES, decimals={"model_argmax": 2}, p_floors=floor,
                             notes=[accuracy, bootstrap])
        mass = out["pronoun_mass"]
        report.table("pronoun_mass", mass.assign(
            heading=mass["experiment"].map(P.EXPERIMENTS)),
            "The model's next-word probability of he, she or they after the sentence beginnings",
            record=mass, groups="heading", labels=P.LABELS, values=P.VALUES,
            columns=["heading", "pronoun", "mass_mean", "mass_min", "mass_max", "n_characters"],
            notes=["P(he) + P(she) + P(they) as the next word, over the characters of each list "
                   "with that pronoun; the model's production accuracy is normalised over the "
                   "three, so where this mass is small the model mostly continues otherwise"])
        report.table("contrasts", P.contrasts_view(out["contrasts"]),
                     "The they gap and how much the PSA and biographies close it, marginal "
                     f"log-odds, people beside {P.caption_name(name)}", record=out["contrasts"],
                     groups="heading", labels=P.LABELS, values=P.VALUES, decimals=2,
                     p_floors=floor,
                     notes=["They gap: the mean of the logits of he and she minus the logit of they, of the "
                            "population-averaged accuracy; positive means they is worse",
                            "Gap closed by the PSA: the gap with the unrelated PSA minus the gap "
                            "with the gendered-language PSA; by the biographies: the gap with the "
                            "he/she biographies minus the gap with the they biographies", bootstrap + "; the difference's interval: "
                            "results.json", P.VERDICT_WORDS,
                            f"At floor: the model's probability on every side of the contrast "
                            f"below {K.FLOOR} (for the gap, he and she against they; for the "
                            "gap closed, they in the two conditions)"])
        PL.write_effects_figure(report, out["contrasts"], model_name, n_boot)
        report.figure("accuracy_by_pronoun", PL.accuracy_figure(cells),
                      "Accuracy by pronoun and task, people beside the model, 95% intervals")
        if (cells["experiment"] == "2").any():
            report.figure("psa_biographies_they", PL.psa_figure(cells),
                          "Exp 2: they accuracy by PSA and biographies, people beside the model")
    if "distractors" in out:
        report.section("Distractors, as in RUFF", (
            "Exp 1A's lists again, with 1, 4 or 12 characters in context and with or without "
            "the math text between the introductions and the questions (12 with the math text "
            "is what people read). Beside it, pronoun_fidelity's RUFF they-fidelity for the "
            "same model (0-5 distractor sentences about another person), in a table of its "
            "own and not in the figure: RUFF's is another measure (a four-way choice of the "
            "whole task sentence, on a small sample, with a spread over seeds rather than "
            "an interval), so the two are not drawn on one axis."))
        if "ruff" in out:
            report.section("RUFF beside this study", R.ruff_sentence(out["distractors"],
                                                                     out["ruff"]))
        report.table("distractors", P.distractors_view(out["distractors"]),
                     "The model's accuracy by characters in context and math text, per pronoun",
                     record=out["distractors"], groups="task", labels=P.LABELS,
                     notes=["Accuracy: mean probability on the correct option (production: "
                            "normalised over he, she, they) over Exp 1A's three lists; 95% "
                            "interval over characters (names resampled, 2000 replicates, "
                            "percentile); argmax accuracy: results.json"])
        report.figure("distractors", PL.distractor_figure(out["distractors"]),
                      "The model's accuracy against the number of characters in context, per "
                      "task and pronoun, without and with the math text, 95% intervals over "
                      "characters; dotted: chance")
    if "ruff" in out:
        report.table("ruff_they_fidelity", out["ruff"],
                     "The pronoun-fidelity study's they-fidelity for the same model (RUFF)",
                     columns=["model", "n_distractors", "mean", "sd", "n_seeds", "n_instances",
                              "chance"], labels=P.LABELS,
                     notes=[f"Source: {out['ruff']['source'].iloc[0]}"])
    if "gender_alignment" in out:
        report.section("Which participants does the model resemble?", out["gender_answer"])
        report.table("gender_alignment", P.gender_view(out["gender_alignment"]),
                     "Exp 2: the model's item accuracy against women's and men's",
                     record=out["gender_alignment"], groups="task", labels=P.LABELS,
                     values=P.VALUES, settings=["n_items", "below_calibrated_design"],
                     caps=correlation_caps("r_raw", "raw_low", "raw_high", "r_corrected",
                                           "corrected_low", "corrected_high"),
                     notes=["Items: list x character (144); ratings: each response's accuracy "
                            "(0/1); the model's score: its probability on the correct option",
                            "Reliability: split-half, stepped up by Spearman-Brown; "
                            f"{run.args.n_boot} replicates; the noise ceilings are in "
                            "results.json"]
                     + reliability_bounds_notes(out["gender_alignment"], ("task",)))
        if len(out.get("gender_comparison", [])):
            comparison = out["gender_comparison"]
            name = state["model_name"]
            report.table("gender_comparison", P.gender_comparison_view(comparison),
                         f"Exp 2: women vs men, which group {P.caption_name(name)} resembles "
                         "more: the primary "
                         "test, Holm within its family, and equivalence",
                         record=comparison, labels=P.LABELS, values=P.VALUES,
                         p_columns=["p_holm", "p_equivalence_holm"],
                         notes=[f"{int(out['gender_alignment']['n_items'].max())} items (list "
                                "x character) per task. A: women; B: men. A minus B: the "
                                "difference of the two groups' "
                                "reliability-corrected correlations with the model's item "
                                "accuracy (the primary test, declared as such in the study), "
                                "a z test with items resampled jointly and people within group",
                                f"p (Holm): within the family of the two tasks; equivalence: "
                                f"two one-sided tests at ±{K.EQUIVALENCE_BOUND:.2f} on the "
                                "corrected-correlation scale, Holm within the family too",
                                "Conclusion: Difference, Holm p < .05; Equivalent, within the "
                                "bound by both one-sided tests (Holm p < .05); Neither shown, "
                                "neither test rejects at this sensitivity; not measuring memory, "
                                "the model's answers on this task do not depend on the "
                                "character, so no verdict is drawn",
                                "Not calibrated for this design: neither test has been "
                                "calibrated by simulation on 0/1 answers with 144 items of "
                                "which each participant answers 12, so every conclusion says "
                                "so"])
            profile = out["gender_profile_agreement"]
            report.table("gender_profile_agreement", P.gender_profile_view(profile),
                         "Exp 2, the ceiling: how closely women's and men's item profiles "
                         "agree, and the largest alignment difference that leaves any model",
                         record=profile, labels=P.LABELS, settings=["n_items"],
                         caps=correlation_caps("r_profiles", "r_profiles_corrected",
                                               "r_profiles_corrected_ci_low",
                                               "r_profiles_corrected_ci_high"),
                         notes=["Profiles: each group's accuracy per item (list x character). "
                                "Corrected r: the profiles' correlation divided by the square "
                                "root of the two groups' split-half reliabilities",
                                "Largest difference: the square root of 2 (1 - corrected r), "
                                "the most any model's correlations with the two groups can "
                                "differ; same, at 95% low: at the interval's lower end",
                                "Interval: bootstrap over items and over people within each "
                                "group, percentile; it errs wide"]
                         + profile_bounds_notes(profile, ("task",)))

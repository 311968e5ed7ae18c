"""The cognitive-bias study's steps, run by studies.pipeline (declared in run.py).

load the QA, MAZE and system tables -> QA accuracy per dataset x alpha x
condition, Delta_QA -> correct ~ stereotype * alpha GLMMs (lme4, Bayesian
twin) -> MAZE outliers, CDFs, Delta_MAZE, log_rt LMM -> systems on the human
scale -> a language model as a coreference model -> report.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import pandas as pd

from gbstats.exclusions import SELECTED, ExclusionLog
from studies.cognitive_bias import analysis as A
from studies.cognitive_bias import lm_coreference as LM
from studies.cognitive_bias import maze as M
from studies.cognitive_bias import plots as P
from studies.cognitive_bias import presentation as V
from studies.cognitive_bias import systems as S
from studies.cognitive_bias import uncertainty as U
from studies.common import say

DATASET = "cog_gb_eval2023"
IGNORE_CHOICES = {"wino": ("wino",), "both": ("wino", "BUG"), "none": ()}


# The models' variables and grouping factors in words, for the tables' notes (issue 43: the
# formulas themselves go to the report's methods section)
GLMM_WORDS = {"correct": "a correct answer", "stereotype": "stereotype (pro or anti)",
              "alpha": "time pressure (α)", "log_rt": "the log response time"}
GROUP_WORDS = {"participant": "participants", "sentence": "sentences"}


def glmm_n(glmms: dict) -> str:
    """The N of a table built on the GLMMs {dataset: {label: fit}}: each data set's trials."""
    each = [f"{next(iter(fits.values())).fit_stats.get('nobs')} trials ({dataset})"
            for dataset, fits in glmms.items() if fits]
    return "N = " + "; ".join(each) + "." if each else ""


def maze_n(maze) -> str:
    """The N of a table of MAZE response times: the MAZE trials analysed, per data set."""
    counts = maze.groupby("dataset").size()
    return "N = " + "; ".join(f"{n} MAZE trials ({d})" for d, n in counts.items()) + "."

def lme4_usable(run) -> bool:
    if run.args.no_lme4:
        run.note("--no-lme4: the lme4 GLMMs and the MAZE LMM were skipped")
        return False
    return run.lme4_available("the GLMMs (binomial, crossed random effects) and the MAZE LMM "
                              "(crossed random effects)")


@dataclass(frozen=True)
class QASide:
    """The human QA trials, as the later steps need them."""
    trials: pd.DataFrame               # every pro/anti trial, with `ignored`
    analysed: pd.DataFrame             # the trials the analysis uses
    accuracy: pd.DataFrame             # human accuracy per dataset x alpha x condition
    repeat_effect: pd.DataFrame | None  # what --drop-repeated-responses changed, per cell


@dataclass(frozen=True)
class SystemsSide:
    """The coreference systems on the analysed human trials' sentences."""
    accuracy: pd.DataFrame     # under the published rule
    rules: pd.DataFrame        # both rules side by side
    scored: pd.DataFrame       # every scored sentence
    qa_rows: pd.DataFrame      # the published rule's rows on the QA sentences


def qa_side(loaded, args, log) -> QASide:
    """The human QA side (see QASide)."""
    ignore_in = IGNORE_CHOICES[args.ignore_non_coreference]
    qa = loaded.tables["qa"]
    effect = None
    if args.drop_repeated_responses:
        every = A.human_accuracy(A.mark_ignored(A.critical_trials(qa, ExclusionLog()), ignore_in))
        qa = A.drop_repeated_responses(qa, log)
    trials = A.mark_ignored(A.critical_trials(qa, log), ignore_in)
    accuracy = A.human_accuracy(trials)
    if args.drop_repeated_responses:
        effect = A.repeated_responses_effect(every, accuracy)
    return QASide(trials, A.drop_ignored(trials, log), accuracy, effect)


def systems_side(loaded, analysed: pd.DataFrame, log) -> SystemsSide:
    """The systems on the analysed human trials' sentences (see SystemsSide)."""
    scored = S.system_sentences(loaded.tables["model_outputs"], loaded.tables["sentence_pool"],
                                log)
    seen = A.on_human_sentences(scored, A.human_sentences(analysed), log)
    rows = {rule: S.rule_rows(seen, rule, log) for rule in S.RULES}
    by_rule = {rule: A.system_accuracy(r) for rule, r in rows.items()}
    both = pd.concat([t.assign(rule=rule) for rule, t in by_rule.items()], ignore_index=True)
    return SystemsSide(by_rule["published"], both[["rule"] + A.ACCURACY_COLUMNS].drop(
        columns=["alpha", "n_ignored"]), scored, rows["published"])


def delta_side(analysed, qa_systems, scored, maze_trials, n_boot: int, seed: int, log):
    """(Delta_QA with intervals and system-vs-people tests, the same for Delta_MAZE with
    the systems placed on the MAZE curves); systems scored on the MAZE sentences here."""
    on_maze = A.on_human_sentences(scored, S.maze_sentences(maze_trials), log, "MAZE")
    maze_systems = S.rule_rows(on_maze, "published", log, "MAZE")
    qa = U.qa_delta_uncertainty(analysed, qa_systems, n_boot=n_boot, seed=seed)
    maze = U.maze_delta_uncertainty(maze_trials, maze_systems, n_boot=n_boot, seed=seed)
    return U.holm_within_datasets(qa, "QA"), U.holm_within_datasets(maze, "MAZE")


def language_model_side(run, loaded, trials: pd.DataFrame):
    """(accuracy rows, per-sentence resolutions, LanguageModel) or (empty, empty, None)."""
    args, log = run.args, run.log
    if not run.wants_model:
        run.note("--model none: no language model was used as a coreference model")
        return pd.DataFrame(columns=A.ACCURACY_COLUMNS), pd.DataFrame(), None
    sentences = A.human_sentences(trials)
    bug = sentences[sentences["dataset"] == "BUG"]
    log.record("BUG sentences not resolved by the language model: the BUG pool annotates "
               "one candidate entity only", len(bug), unit="sentences", stage="cognitive_bias.lm")
    wino = sentences[sentences["dataset"] == "wino"]
    chosen = LM.select_sentences(wino, args.limit)
    if args.limit is not None:
        log.record(f"wino sentences beyond --limit {args.limit}", len(wino) - len(chosen),
                   unit="sentences", stage="cognitive_bias.lm", kind=SELECTED)
    pool = LM.wino_candidates(LM.wino_rows(loaded.tables["sentence_pool"]))
    say(f"  scoring {2 * len(chosen)} candidate sentences with {args.model}")
    lm = run.model()
    scored = LM.score_candidates(LM.candidate_texts(chosen, pool), lm,
                                 **run.cache)
    resolved = LM.resolve(scored)
    accuracy = A.system_accuracy(resolved, source_column="model",
                                 correct_column="resolved_correct")
    return accuracy, resolved, lm


def load(run, _):
    from gbstats.data.registry import load_dataset

    say(f"[1/6] loading {DATASET}")
    loaded = load_dataset(DATASET, run.args.data_dir)
    run.log.extend(loaded.exclusions)
    return SimpleNamespace(loaded=loaded)


def fit(run, s):
    args, log = run.args, run.log
    say("[2/6] QA accuracy per dataset x alpha x condition")
    qa = qa_side(s.loaded, args, log)
    s.trials, analysed, human, s.repeat_effect = (qa.trials, qa.analysed, qa.accuracy,
                                                  qa.repeat_effect)
    systems_found = systems_side(s.loaded, analysed, log)
    systems, s.system_rules = systems_found.accuracy, systems_found.rules
    scored, qa_systems = systems_found.scored, systems_found.qa_rows

    say("[3/6] correct ~ stereotype * alpha GLMMs")
    use_lme4 = lme4_usable(run)
    rows = A.glmm_rows(analysed)
    s.glmms = {d: A.fit_stereotype_alpha(rows[rows["dataset"] == d].drop(columns="dataset"),
                                         lme4=use_lme4, bayes=run.bayes, draws=args.draws,
                                         max_draws=run.max_draws, seed=run.seed,
                                         optimizer=args.glmm_optimizer, **run.cache)
               for d in A.DATASETS}
    for dataset, fits in s.glmms.items():   # warnings and the reused-fits note
        run.record_fits(f"QA GLMM {dataset}", fits)

    say("[4/6] MAZE: outliers, CDFs, Delta_MAZE, log_rt LMM")
    s.maze, s.outliers = M.remove_outliers(s.loaded.tables["maze"], log)
    s.delta = M.maze_delta(s.maze)
    s.maze_fits = M.fit_maze_lmm(s.maze, backend="lme4", **run.cache) if use_lme4 else {}
    for dataset, fit in s.maze_fits.items():
        run.record_fits(f"MAZE LMM {dataset}", {"lme4": fit})
    say(f"      Delta_QA and Delta_MAZE: {args.n_boot} bootstrap replicates")
    s.deltas = delta_side(analysed, qa_systems, scored, s.loaded.tables["maze"], args.n_boot,
                          run.seed, log)

    say("[5/6] a language model as a coreference model")
    lm_accuracy, resolved, s.lm = language_model_side(run, s.loaded, s.trials)
    parts = [t for t in (human, systems, lm_accuracy) if not t.empty]
    s.accuracy = A.order_accuracy(pd.concat(parts, ignore_index=True))
    if not resolved.empty:
        run.write_csv("lm_resolutions.csv", resolved)
    run.add_provenance(ignore_non_coreference_in=list(IGNORE_CHOICES[args.ignore_non_coreference]),
                       drop_repeated_responses=args.drop_repeated_responses,
                       lme4=use_lme4, bayes=run.bayes, draws=args.draws, limit=args.limit,
                       n_boot=args.n_boot)
    return s


def report(run, report, s) -> None:
    write_report(report, run.args, s.lm, s.accuracy, A.non_coreference_summary(s.trials),
                 s.glmms, s.outliers, s.maze, s.delta, s.maze_fits, run, s.repeat_effect,
                 s.system_rules, s.deltas)


def write_report(report, args, lm, accuracy, non_coreference, glmms, outliers, maze, delta,
                 maze_fits, run, repeat_effect, system_rules, deltas) -> None:
    ignored_in = IGNORE_CHOICES[args.ignore_non_coreference]
    report.section("Design", (
        "Data: Lior & Stanovsky (2023), `cog_gb_eval2023` (QA and MAZE experiments on "
        "WinoBias+Winogender (`wino`) and BUG sentences; SpanBERT and s2e outputs). QA trials "
        "are the pro- and anti-stereotypical questions; fillers and neutral items are counted "
        "exclusions. Non-coreference answers (the binary gender opposite to the pronoun's) are "
        f"ignored in: {', '.join(ignored_in) or 'no dataset'}. The authors ignore them in wino "
        "only (their table script and published table); in BUG a wrong gender answer is "
        "nearly always the opposite gender, so ignoring them there would leave `unknown` as "
        "the only possible error and push accuracy towards 100%. Every recorded response "
        "counts, as in the published table"
        + (" unless --drop-repeated-responses is given (it is: one response per session "
           "position)" if args.drop_repeated_responses else "") + ". Systems are scored by "
        "the published rule (the authors' evaluation scripts): correct when one predicted "
        "cluster holds a mention containing the referent's name and a mention containing "
        "the pronoun (case-sensitive substrings), on the sentences of the analysed human "
        "pro/anti trials, each output credited to the first pool copy of its sentence. The "
        "`system_rules` table adds gbstats' stricter head rule (the pronoun's own mention "
        "and a mention covering the referent's head word in one cluster)."
        + run.notes_markdown()))

    report.table("non_coreference_answers", non_coreference,
                 "Non-coreference answers among the pro- and anti-stereotypical trials",
                 labels={**V.LABELS, "n_wrong": "Wrong", "n_non_coreference": "Non-coreference",
                         "share_of_wrong": "Share of wrong", "ignored": "Ignored"},
                 values=V.VALUES, keep=["ignored"],
                 notes=["Non-coreference answer: the binary gender opposite to the pronoun's. "
                        "Ignored: left out of the accuracy counts."])

    report.section("QA: accuracy and Delta_QA (Table 2 analogue)", (
        "Lior & Stanovsky (2023) Table 2, by the published counting rule: every recorded "
        "response of a calibrated participant counts, non-coreference answers are ignored "
        f"in {', '.join(ignored_in) or 'no dataset'}, and the systems are scored by the "
        "authors' rule on the same sentences. "
        + ("With these defaults every human cell (correct/total) and ignored count equals "
           "the published table, and every system cell rounds to it (tests/studies/"
           "test_cognitive_bias.py checks both)."
           if tuple(ignored_in) == A.DEFAULT_IGNORE_NON_COREFERENCE and repeat_effect is None
           else "This run departs from the published rule (see the options below), so its "
                "cells differ from the published table.")
        + (" This run used --drop-repeated-responses, which is NOT the published rule; "
           "`repeated_responses_effect` shows what it changed." if repeat_effect is not None
           else " `--drop-repeated-responses` keeps one response per session position "
                "instead (62 wino and 32 BUG trials fewer); the report then shows how much "
                "each cell moves.")))
    report.table("qa_accuracy", V.accuracy_view(accuracy),
                 "QA accuracy of people at each time pressure and of the systems, beside "
                 "Lior and Stanovsky's (2023) Table 2",
                 labels=V.ACCURACY_LABELS, values=V.VALUES, groups="dataset",
                 decimals={"alpha": 2, "percent": 1, "published": 1, "difference": 1},
                 record=accuracy, keep=["condition"],
                 notes=["Counting rule: " + ("the published one (every recorded response of a "
                        "calibrated participant)" if repeat_effect is None else "one response per "
                        "session position (--drop-repeated-responses), NOT the published rule")
                        + "; ignored non-coreference answers are left out of Total. "
                        "α: time pressure (people only; systems have none). Published: Table 2, "
                        "percent correct (people's from the published counts); Difference: ours "
                        "minus published, in points."])
    if repeat_effect is not None:
        report.table("repeated_responses_effect", repeat_effect,
                     "What keeping one response per session position changes, per cell",
                     labels=V.repeat_effect_labels(), values=V.VALUES, groups="dataset",
                     decimals={"alpha": 2, "change_points": 1},
                     columns=["dataset", "alpha", "condition", "n_total_published",
                              "accuracy_published", "n_total_deduplicated",
                              "accuracy_deduplicated", "n_removed", "change_points"],
                     notes=["Every response: the published counting rule; first response: "
                            "--drop-repeated-responses. Trials removed counts analysed and "
                            "ignored trials; the change is in accuracy points."])
    report.table("system_rules", system_rules,
                 "System accuracy under the published scoring rule and under gbstats' head rule",
                 labels={**V.LABELS, "rule": "Rule"}, groups="rule",
                 values={**V.VALUES, "rule": {"published": "Published rule",
                                              "head": "Head rule"}},
                 notes=["Published rule: a predicted cluster holds a mention containing the "
                        "referent's name and one containing the pronoun (substring match, first "
                        "pool copy). Head rule: the pronoun's own mention and a mention covering "
                        "the referent's head word in one cluster (every pool copy). Both on the "
                        "sentences people saw."])
    report.table("qa_delta", A.qa_delta(accuracy),
                 "Accuracy on pro- and anti-stereotypical questions and their difference",
                 labels={**V.LABELS, "accuracy_pro": "Pro", "accuracy_anti": "Anti",
                         "delta": "ΔQA", "n_pro": "N pro", "n_anti": "N anti"},
                 values=V.VALUES, groups="dataset", decimals={"alpha": 2},
                 notes=["ΔQA: accuracy on pro-stereotypical items minus accuracy on "
                        "anti-stereotypical ones; α: time pressure (people only)."])

    report.section("QA: does time pressure grow the stereotype effect?", (
        f"`{A.GLMM_FORMULA}` per dataset, logistic (binomial, logit link). `stereotype`: "
        "anti (reference) / pro, so `stereotypepro` is the bias in log-odds. Alpha as a "
        "factor (reference 0.75, the least time pressure): `stereotypepro:alpha0.25` is how "
        "much larger the bias is at alpha 0.25 than at 0.75. Alpha as a number: the bias at "
        "alpha is `stereotypepro` + `stereotypepro:alpha` x alpha, so it grows as alpha "
        "shrinks exactly when `stereotypepro:alpha` < 0. The Bayesian twin is the numeric "
        "model (bambi/PyMC, default weakly informative priors); its P(effect grows as alpha "
        "shrinks) is the posterior probability P(beta[stereotypepro:alpha] < 0 | data)."))
    unconverged = [f"{d} ({label})" for d, fits in glmms.items() for label, r in fits.items()
                   if not A.fit_converged(r)]
    if unconverged:
        report.section("Fits that did not converge", (
            "lme4 or the sampler warned for: " + ", ".join(unconverged) + ". Their rows carry "
            "converged = false. For lme4 GLMMs this is usually glmer's default optimizer "
            "stopping early (standard errors then come out tiny and nearly equal); "
            "rerun with `--glmm-optimizer bobyqa` (R's `glmerControl(optimizer = \"bobyqa\")`); "
            "the study never switches optimizers on its own, so the numbers are reported "
            "as they are, flagged."))
    if any(glmms.values()):
        report.model_table(
            "glmm_stereotype_alpha",
            {(V.DATASET_WORDS.get(dataset, dataset), V.GLMM_COLUMNS.get(label, label)): fit
             for dataset, fits in glmms.items() for label, fit in fits.items()},
            "Accuracy under time pressure: logistic mixed models of a correct answer",
            data=A.glmm_table(glmms), variables=V.VARIABLES, groups=V.GROUPS,
            levels={"alpha": {"0.25": "0.25", "0.5": "0.5", "0.75": "0.75"}},
            notes=[f"Model: {report.formula('glmm_stereotype_alpha', A.GLMM_FORMULA, GLMM_WORDS, GROUP_WORDS)}"
                   ", per data set, binomial with a logit link; "
                   "α as a factor (reference 0.75, the least pressure) or as a number. A fit "
                   "that did not converge is named in the notes below: do not read its column."])
    marginal, pro_minus_anti, marginal_notes = A.marginal_accuracy(glmms)
    if not marginal.empty:
        report.table("glmm_marginal_accuracy", marginal,
                     "Model-estimated accuracy by stereotype and time pressure",
                     labels={**V.LABELS, "stereotype": "Stereotype", "estimate": "Accuracy"},
                     values={**V.VALUES, "alpha": V.ALPHA_WORDS}, groups="dataset",
                     notes=[glmm_n(glmms),
                            "Marginal means of the GLMM with α as a factor, on the probability "
                            "scale (emmeans), random effects at zero."] + marginal_notes)
        report.table("glmm_pro_minus_anti", pro_minus_anti,
                     "Pro minus anti difference in model-estimated accuracy at each time pressure",
                     labels={**V.LABELS, "stat": "z"}, values={**V.VALUES, "contrast": {
                         "pro - anti": "pro minus anti"}, "alpha": V.ALPHA_WORDS},
                     groups="dataset",
                     notes=[glmm_n(glmms),
                            "Probability scale, 95% CI and z test; one contrast per α, so no "
                            "multiplicity adjustment within α."] + marginal_notes)
    posterior = A.posterior_summary(glmms)
    if not posterior.empty:
        report.table("glmm_posterior_interaction", posterior,
                     "Posterior of the stereotype by time-pressure interaction",
                     labels={**V.LABELS, "parameter": "Parameter", "posterior_mean": "Mean",
                             "p_effect_grows_as_alpha_shrinks": "P(grows under pressure)",
                             "n_draws": "Draws", "ci": "95% interval"},
                     values={**V.VALUES, "parameter": {A.INTERACTION_TERM: "Stereotype × α"}},
                     notes=["Bayesian twin of the model with α as a number. P(grows under "
                            "pressure) = P(β[stereotype × α] < 0 | data): the stereotype effect "
                            "grows as α shrinks exactly when the interaction is negative."])

    report.section("MAZE", (
        "Correct trials at the pronoun; outliers by the IQR rule within each dataset x "
        "condition. Delta_MAZE(p) = anti quantile - pro quantile of the response time at "
        "cumulative share p (positive = biased)."))
    report.table("maze_outliers", outliers, "MAZE trials removed as response-time outliers",
                 labels={**V.LABELS, "n_outliers": "Outliers", "share_outliers": "Share"},
                 values=V.VALUES,
                 notes=[f"Outside Q1 - {M.IQR_FENCE} IQR .. Q3 + {M.IQR_FENCE} IQR within each "
                        "data set and condition."])
    for dataset in [d for d in A.DATASETS if d in set(maze["dataset"])]:
        report.figure(f"maze_cdf_{dataset}", P.maze_cdf_figure(maze, dataset),
                      f"{dataset}: CDF of MAZE response times, pro against anti")
    report.figure("maze_delta", P.maze_delta_figure(delta), "Delta_MAZE per dataset")
    report.table("maze_delta", M.maze_delta(maze, M.TABLE_GRID),
                 "Response-time quantiles of correct MAZE trials and ΔMAZE",
                 labels={"p": "Share", "quantile_pro": "Pro (ms)", "quantile_anti": "Anti (ms)",
                         "delta": "ΔMAZE (ms)"},
                 values=V.VALUES, groups="dataset", kinds={"p": "number"},
                 decimals={"p": 2, "quantile_pro": 0, "quantile_anti": 0, "delta": 0},
                 notes=[maze_n(maze),
                        "ΔMAZE(p) = anti quantile - pro quantile at cumulative share p "
                        "(positive: anti-stereotypical answers are slower)."])
    if maze_fits:
        report.model_table("maze_lmm", {V.DATASET_WORDS.get(d, d): fit
                                        for d, fit in maze_fits.items()},
                           "MAZE response times: linear mixed models of log response time",
                           data=M.maze_lmm_table(maze_fits), variables=V.VARIABLES,
                           groups=V.GROUPS,
                           notes=[f"Model: {report.formula('maze_lmm', M.LMM_FORMULA, GLMM_WORDS, GROUP_WORDS)}"
                                  ", per data set; the response time is the natural log of "
                                  "milliseconds."])

    report.section("Systems on the human scale", (
        "Each system's accuracy placed on the people's time-pressure curve: the alpha at "
        "which linearly interpolated human accuracy equals the system's (first crossing from "
        "alpha 0.25 up); `below`/`above`: the system is outside the human range."))
    report.figure("human_scale", P.human_scale_figure(accuracy),
                  "Anti- against pro-stereotypical accuracy: people at each alpha, systems")
    report.table("human_scale_alpha", A.human_scale_alphas(accuracy),
                 "Each system's accuracy on people's time-pressure scale",
                 labels={**V.LABELS, "equivalent_alpha": "Equivalent α",
                         "position": "Place"},
                 values={**V.VALUES, "position": {"within": "within people's range",
                                                  "below": "below people at every α",
                                                  "above": "above people at every α",
                                                  "undefined": "undefined"}},
                 groups="dataset", decimals={"equivalent_alpha": 2},
                 notes=[f"N = {int(accuracy['n_total'].sum())} answers (people's and the "
                        "systems') in the accuracy table.",
                        "Equivalent α: where linearly interpolated human accuracy equals the "
                        "system's (first crossing from α = 0.25 up)."])
    qa_deltas, maze_deltas = deltas
    report.section("Delta_QA and Delta_MAZE: people against systems (Figure 5)", (
        "Uncertainty by a two-way bootstrap: each replicate resamples the participants and, "
        "independently, the sentences (a trial weighs its participant's times its sentence's "
        f"multiplicity; {args.n_boot} replicates, 95% percentile intervals). Systems share the "
        "sentence draw, so a system-minus-people difference is paired by sentence; its "
        "p-value inverts the percentile interval (2 x the smaller tail share at or beyond "
        "0, counted (k + 1) / (B + 1)). The "
        "MAZE outlier rule is re-applied inside every replicate. Systems on the MAZE curves "
        "follow the authors' Figure 5: a system with accuracy a_c on the MAZE sentences sits at "
        "Q_c(a_c), the time within which a share a_c of people's correct c-trials were "
        "answered. A system's Delta_MAZE = Q_anti(a_anti) - Q_pro(a_pro) is compared with "
        "people's Delta_MAZE at the system's mean share (a_pro + a_anti) / 2: gbstats' "
        "construction (the paper shows the placement but no test); a negative difference "
        "means the system's pro/anti gap is larger, in human response time, than people's "
        "at the same accuracy. Calibration, simulated on crossed designs of this size "
        "(tests/studies/test_cognitive_bias.py): Delta_QA intervals cover 0.995 (people) and "
        "0.96 (system) for a nominal 0.95 and the QA difference test rejects a true null at "
        "0.01 (conservative); Delta_MAZE(0.5) intervals cover 0.99 and the MAZE difference "
        "test rejects a true null at 0.06 (500 simulated data sets) for a nominal 0.05."))
    report.table("qa_delta_uncertainty", qa_deltas,
                 "ΔQA of people and systems, and system minus people, with bootstrap intervals",
                 labels={**V.LABELS, "quantity": "Quantity", "ci": "95% CI"},
                 values={**V.VALUES, "quantity": {"delta": "ΔQA",
                                                  "difference": "System minus people"}},
                 groups="dataset", decimals={"alpha": 2}, columns=[
                     "dataset", "source", "alpha", "quantity", "estimate", "ci_low", "ci_high",
                     "p_value", "p_holm"],
                 notes=[f"Two-way bootstrap over participants and sentences ({args.n_boot} "
                        "replicates, percentile intervals). Holm: within each data set's "
                        "system-vs-people tests (every system at every α)."])
    for dataset in [d for d in A.DATASETS if d in set(maze["dataset"])]:
        report.figure(f"maze_systems_{dataset}", P.maze_systems_figure(maze, maze_deltas, dataset),
                      f"{dataset}: systems placed on people's MAZE response-time curves "
                      "(Figure 5 analogue), with 95% bootstrap intervals")
    report.table("maze_delta_uncertainty", V.maze_people_view(maze_deltas),
                 "People's ΔMAZE at each cumulative share, with bootstrap intervals",
                 labels={"p": "Share", "estimate": "ΔMAZE (ms)", "ci": "95% CI (ms)"},
                 values=V.VALUES, groups="dataset", kinds={"p": "number"},
                 decimals={"p": 2, "estimate": 1, "ci": 1}, record=maze_deltas,
                 notes=[f"Two-way bootstrap ({args.n_boot} replicates, percentile intervals); "
                        "the systems' rows of this table are in the next one."])
    report.table("maze_systems", V.maze_systems_view(maze_deltas),
                 "The systems placed on people's MAZE response-time curves",
                 labels={**V.LABELS, "source": "System", "quantity": "Quantity",
                         "ci": "95% CI", "p_holm": "p (Holm)"},
                 values=V.VALUES, groups="dataset", decimals={"estimate": 1, "ci": 1},
                 record=False,
                 notes=[maze_n(maze),
                        "A system with accuracy a on the MAZE sentences sits at Q(a), the time "
                        "within which a share a of people's correct trials were answered. Its "
                        "ΔMAZE is compared with people's at its mean share; Holm within each "
                        "data set. The numbers of each comparison are in results.json."])
    if lm is not None:
        report.section("A language model as a coreference model", (
            f"`{lm.name}` ({lm.model_id}, revision {lm.revision}, {lm.kind}): each wino "
            "sentence rewritten with each candidate entity in place of the pronoun; the more "
            "likely sentence is the model's answer (summed log-probability; pseudo-log-"
            "likelihood for masked models). Its rows are in `qa_accuracy`. BUG is not scored "
            "(its pool names one candidate only)."))

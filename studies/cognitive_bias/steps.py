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
from gbstats.mixed.fitting import frequentist_notes, table_notes
from studies.cognitive_bias import analysis as A
from studies.cognitive_bias import lm_coreference as LM
from studies.cognitive_bias import maze as M
from studies.cognitive_bias import plots as P
from studies.cognitive_bias import systems as S
from studies.cognitive_bias import uncertainty as U
from studies.common import say

DATASET = "cog_gb_eval2023"
IGNORE_CHOICES = {"wino": ("wino",), "both": ("wino", "BUG"), "none": ()}


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
                                         seed=run.seed, optimizer=args.glmm_optimizer,
                                         **run.cache)
               for d in A.DATASETS}
    for dataset, fits in s.glmms.items():   # warnings and the reused-fits note
        run.record_fits(f"QA GLMM {dataset}", fits)

    say("[4/6] MAZE: outliers, CDFs, Delta_MAZE, log_rt LMM")
    s.maze, s.outliers = M.remove_outliers(s.loaded.tables["maze"], log)
    s.delta = M.maze_delta(s.maze)
    s.maze_fits = M.fit_maze_lmm(s.maze, backend="lme4") if use_lme4 else {}
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
                 "Non-coreference answers (the binary gender opposite to the pronoun's) among "
                 "the pro/anti trials, and whether they were ignored")

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
    report.table("qa_accuracy", accuracy,
                 "Accuracy per dataset x source x condition (people at each alpha; systems on "
                 "the same sentences), published counting rule"
                 + (" except one response per session position (--drop-repeated-responses)"
                    if repeat_effect is not None else "")
                 + ". n_ignored: non-coreference answers left out of n_total")
    if repeat_effect is not None:
        report.table("repeated_responses_effect", repeat_effect,
                     "--drop-repeated-responses: per cell, the published counts (every "
                     "response), the counts with the first response per session position, "
                     "trials removed (n_removed, analysed + ignored) and the change in "
                     "accuracy (points)")
    report.table("system_rules", system_rules,
                 "System accuracy under the published rule (substring match, first pool copy) "
                 "and gbstats' head rule (pronoun mention + referent head in one cluster, "
                 "every pool copy), on the same human-seen sentences")
    report.table("qa_delta", A.qa_delta(accuracy),
                 "Delta_QA = accuracy(pro) - accuracy(anti)")

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
    report.table("glmm_stereotype_alpha", A.glmm_table(glmms),
                 "Fixed effects (lme4: Laplace ML, Wald z and 95% CI; bayes: posterior mean, "
                 "SD and 95% interval). converged = false: lme4 or the sampler warned (see "
                 "Warnings); do not read those rows. " + A.coding_note(glmms),
                 notes=[f"{dataset}: {n}" for dataset, fits in glmms.items()
                        for n in table_notes(fits)] or None)
    marginal, pro_minus_anti, marginal_notes = A.marginal_accuracy(glmms)
    if not marginal.empty:
        report.table("glmm_marginal_accuracy", marginal,
                     "Model-estimated accuracy per stereotype x alpha (GLMM with alpha as a "
                     "factor; marginal means on the probability scale, emmeans)"
                     + "".join(f". {n}" for n in marginal_notes if "did not converge" in n),
                     notes=marginal_notes)
        report.table("glmm_pro_minus_anti", pro_minus_anti,
                     "Pro - anti difference in model-estimated accuracy at each alpha "
                     "(probability scale, 95% CI, z test; one contrast per alpha, so no "
                     "multiplicity adjustment within alpha)", notes=marginal_notes)
    posterior = A.posterior_summary(glmms)
    if not posterior.empty:
        report.table("glmm_posterior_interaction", posterior,
                     "Posterior of the stereotype x alpha interaction and P(the stereotype "
                     "effect grows as alpha shrinks)")

    report.section("MAZE", (
        "Correct trials at the pronoun; outliers by the IQR rule within each dataset x "
        "condition. Delta_MAZE(p) = anti quantile - pro quantile of the response time at "
        "cumulative share p (positive = biased)."))
    report.table("maze_outliers", outliers, "Trials removed as outliers (IQR rule)")
    for dataset in [d for d in A.DATASETS if d in set(maze["dataset"])]:
        report.figure(f"maze_cdf_{dataset}", P.maze_cdf_figure(maze, dataset),
                      f"{dataset}: CDF of MAZE response times, pro against anti")
    report.figure("maze_delta", P.maze_delta_figure(delta), "Delta_MAZE per dataset")
    report.table("maze_delta", M.maze_delta(maze, M.TABLE_GRID),
                 "Delta_MAZE at cumulative shares 0.05, 0.10, ..., 0.95 (ms)")
    if maze_fits:
        report.table("maze_lmm", M.maze_lmm_table(maze_fits),
                     f"`{M.LMM_FORMULA}` per dataset (lme4, REML, Satterthwaite df; 95% t "
                     "intervals with the same df); log_rt is the natural log of milliseconds",
                     notes=[f"{dataset}: {n}" for dataset, fit in maze_fits.items()
                            for n in frequentist_notes({"lme4": fit})] or None)

    report.section("Systems on the human scale", (
        "Each system's accuracy placed on the people's time-pressure curve: the alpha at "
        "which linearly interpolated human accuracy equals the system's (first crossing from "
        "alpha 0.25 up); `below`/`above`: the system is outside the human range."))
    report.figure("human_scale", P.human_scale_figure(accuracy),
                  "Anti- against pro-stereotypical accuracy: people at each alpha, systems")
    report.table("human_scale_alpha", A.human_scale_alphas(accuracy),
                 "Alpha of equal human accuracy per system and condition")
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
                 "Delta_QA (accuracy pro - anti) of people per alpha and of each system (published "
                 "rule, QA sentences), and system minus people per alpha (quantity = difference), "
                 "with 95% bootstrap intervals and p-values; p_holm: Holm within `family` "
                 "(per dataset: every system x alpha)")
    for dataset in [d for d in A.DATASETS if d in set(maze["dataset"])]:
        report.figure(f"maze_systems_{dataset}", P.maze_systems_figure(maze, maze_deltas, dataset),
                      f"{dataset}: systems placed on people's MAZE response-time curves "
                      "(Figure 5 analogue), with 95% bootstrap intervals")
    report.table("maze_delta_uncertainty", maze_deltas,
                 "People's Delta_MAZE(p) (ms) with 95% bootstrap intervals; per system: "
                 "accuracy on "
                 "the MAZE sentences, its place on the curves (time_pro, time_anti), its "
                 "Delta_MAZE, people's Delta_MAZE at its mean share, and the difference with "
                 "p-value; p_holm: Holm within `family` (per dataset: every system)")
    if lm is not None:
        report.section("A language model as a coreference model", (
            f"`{lm.name}` ({lm.model_id}, revision {lm.revision}, {lm.kind}): each wino "
            "sentence rewritten with each candidate entity in place of the pronoun; the more "
            "likely sentence is the model's answer (summed log-probability; pseudo-log-"
            "likelihood for masked models). Its rows are in `qa_accuracy`. BUG is not scored "
            "(its pool names one candidate only)."))

"""The cognitive-bias study's steps, run by studies.pipeline (declared in run.py).

load the QA, MAZE and system tables -> QA accuracy per dataset x alpha x
condition, Delta_QA -> correct ~ stereotype * alpha GLMMs (lme4, Bayesian
twin) -> MAZE outliers, CDFs, Delta_MAZE, log_rt LMM -> systems on the human
scale -> a language model as a coreference model -> report.
"""
from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from studies.cognitive_bias import analysis as A
from studies.cognitive_bias import lm_coreference as LM
from studies.cognitive_bias import maze as M
from studies.cognitive_bias import plots as P
from studies.common import say

DATASET = "cog_gb_eval2023"
IGNORE_CHOICES = {"wino": ("wino",), "both": ("wino", "BUG"), "none": ()}


def lme4_usable(run) -> bool:
    if run.args.no_lme4:
        run.note("--no-lme4: the lme4 GLMMs and the MAZE LMM were skipped")
        return False
    return run.lme4_available("the GLMMs (binomial, crossed random effects) and the MAZE LMM "
                              "(crossed random effects)")


def qa_side(loaded, args, log):
    """(all pro/anti trials with `ignored`, analysed trials, human accuracy)."""
    trials = A.mark_ignored(A.critical_trials(loaded.tables["qa"], log),
                            IGNORE_CHOICES[args.ignore_non_coreference])
    accuracy = A.human_accuracy(trials)
    return trials, A.drop_ignored(trials, log), accuracy


def systems_side(loaded, trials: pd.DataFrame, log) -> pd.DataFrame:
    links = A.on_human_sentences(loaded.tables["model_links"], A.human_sentences(trials), log)
    return A.system_accuracy(links)


def language_model_side(run, trials: pd.DataFrame):
    """(accuracy rows, per-sentence resolutions, LanguageModel) or (empty, empty, None)."""
    args, log = run.args, run.log
    if not run.wants_model:
        run.note("--model none: no language model was used as a coreference model")
        return pd.DataFrame(columns=A.ACCURACY_COLUMNS), pd.DataFrame(), None
    from gbstats.data.registry import get_dataset

    sentences = A.human_sentences(trials)
    bug = sentences[sentences["dataset"] == "BUG"]
    log.record("BUG sentences not resolved by the language model: the BUG pool annotates "
               "one candidate entity only", len(bug), unit="sentences", stage="cognitive_bias.lm")
    wino = sentences[sentences["dataset"] == "wino"]
    chosen = LM.select_sentences(wino, args.limit)
    if args.limit is not None:
        log.record(f"wino sentences beyond --limit {args.limit}", len(wino) - len(chosen),
                   unit="sentences", stage="cognitive_bias.lm")
    pool = LM.read_wino_candidates(get_dataset(DATASET).folder(args.data_dir))
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
    s.trials, analysed, human = qa_side(s.loaded, args, log)
    systems = systems_side(s.loaded, s.trials, log)

    say("[3/6] correct ~ stereotype * alpha GLMMs")
    use_lme4 = lme4_usable(run)
    rows = A.glmm_rows(analysed)
    s.glmms = {d: A.fit_stereotype_alpha(rows[rows["dataset"] == d].drop(columns="dataset"),
                                         lme4=use_lme4, bayes=run.bayes, draws=args.draws,
                                         seed=run.seed, optimizer=args.glmm_optimizer)
               for d in A.DATASETS}

    say("[4/6] MAZE: outliers, CDFs, Delta_MAZE, log_rt LMM")
    s.maze, s.outliers = M.remove_outliers(s.loaded.tables["maze"], log)
    s.delta = M.maze_delta(s.maze)
    s.maze_fits = M.fit_maze_lmm(s.maze, backend="lme4") if use_lme4 else {}

    say("[5/6] a language model as a coreference model")
    lm_accuracy, resolved, s.lm = language_model_side(run, s.trials)
    parts = [t for t in (human, systems, lm_accuracy) if not t.empty]
    s.accuracy = A.order_accuracy(pd.concat(parts, ignore_index=True))
    if not resolved.empty:
        run.write_csv("lm_resolutions.csv", resolved)
    run.warn(A.fit_warnings(s.glmms)
             + [f"MAZE LMM {d}: {w}" for d, r in s.maze_fits.items() for w in r.warnings])
    run.add_provenance(ignore_non_coreference_in=list(IGNORE_CHOICES[args.ignore_non_coreference]),
                       lme4=use_lme4, bayes=run.bayes, draws=args.draws, limit=args.limit)
    return s


def report(run, report, s) -> None:
    write_report(report, run.args, s.lm, s.accuracy, A.non_coreference_summary(s.trials),
                 s.glmms, s.outliers, s.maze, s.delta, s.maze_fits, run)


def write_report(report, args, lm, accuracy, non_coreference, glmms, outliers, maze, delta,
                 maze_fits, run) -> None:
    ignored_in = IGNORE_CHOICES[args.ignore_non_coreference]
    report.section("Design", (
        "Data: Lior & Stanovsky (2023), `cog_gb_eval2023` (QA and MAZE experiments on "
        "WinoBias+Winogender (`wino`) and BUG sentences; SpanBERT and s2e outputs). QA trials "
        "are the pro- and anti-stereotypical questions; fillers and neutral items are counted "
        "exclusions. Non-coreference answers (the binary gender opposite to the pronoun's) are "
        f"ignored in: {', '.join(ignored_in) or 'no dataset'}. The authors ignore them in wino "
        "only (their table script and published table); in BUG a wrong gender answer is "
        "nearly always the opposite gender, so ignoring them there would leave `unknown` as "
        "the only possible error and push accuracy towards 100%. A system's pronoun is correct "
        "when its predicted cluster holds the pronoun and a mention covering the referent's "
        "head word (the loader's rule; the authors matched substrings), on the sentences "
        "people were asked about."
        + run.notes_markdown()))

    report.table("non_coreference_answers", non_coreference,
                 "Non-coreference answers (the binary gender opposite to the pronoun's) among "
                 "the pro/anti trials, and whether they were ignored")

    report.section("QA: accuracy and Delta_QA (Table 2 analogue)")
    report.table("qa_accuracy", accuracy,
                 "Accuracy per dataset x source x condition (people at each alpha; systems on "
                 "the same sentences). n_ignored: non-coreference answers left out of n_total")
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
                 "Warnings); do not read those rows. " + A.coding_note(glmms))
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
                     "intervals with the same df); log_rt is the natural log of milliseconds")

    report.section("Systems on the human scale", (
        "Each system's accuracy placed on the people's time-pressure curve: the alpha at "
        "which linearly interpolated human accuracy equals the system's (first crossing from "
        "alpha 0.25 up); `below`/`above`: the system is outside the human range."))
    report.figure("human_scale", P.human_scale_figure(accuracy),
                  "Anti- against pro-stereotypical accuracy: people at each alpha, systems")
    report.table("human_scale_alpha", A.human_scale_alphas(accuracy),
                 "Alpha of equal human accuracy per system and condition")
    if lm is not None:
        report.section("A language model as a coreference model", (
            f"`{lm.name}` ({lm.model_id}, revision {lm.revision}, {lm.kind}): each wino "
            "sentence rewritten with each candidate entity in place of the pronoun; the more "
            "likely sentence is the model's answer (summed log-probability; pseudo-log-"
            "likelihood for masked models). Its rows are in `qa_accuracy`. BUG is not scored "
            "(its pool names one candidate only)."))

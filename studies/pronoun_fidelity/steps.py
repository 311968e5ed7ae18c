"""The pronoun-fidelity study's steps, run by studies.pipeline (declared in run.py).

load RUFF templates -> count the full dataset -> draw the balanced samples
(3 seeds x N per number of distractors) -> per model: context-free choices on
the task sentences, forced choice on every sampled instance -> accuracy,
Welch's tests, error attribution, case consistency, the logistic mixed model
(lme4 and PyMC) -> report.
"""
from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from gbstats.errors import DataValidationError
from gbstats.exclusions import SELECTED, ExclusionLog
from studies.common import say
from studies.pronoun_fidelity import analysis as A
from studies.pronoun_fidelity import presentation as V
from studies.pronoun_fidelity.instances import (BLOCK_SIZE, Templates, instance_counts,
                                                instances_frame, sample_instances,
                                                sample_same_cells)

N_SEEDS = 3
FULL_PER_SEED = 2160   # 60 occupations x 3 cases x 4 pronoun sets x 3 distractor pronouns
# The default run scores a stratified sample of that design (issue 41, item 4): the first
# DEFAULT_BLOCKS of each seed's 60 balanced blocks of 36 (`instances._balanced_cells`: every
# case x pronoun set x distractor pronoun once per block, each occupation at most once), so
# the sample is balanced over every stratum the headline estimates are about and nested in
# the full design (every seed keeps its full-design instances in the same cells: those of
# the first seed's first blocks; `instances.sample_same_cells`).
# `--full-design` scores all 60 blocks.
DEFAULT_BLOCKS = 55
DEFAULT_PER_SEED = DEFAULT_BLOCKS * BLOCK_SIZE
# What the default's sample was measured to cost (benchmarks/pronoun_fidelity_sampling.py,
# benchmarks/results/pronoun_fidelity.json, key `sampling`): the full design scored once with
# the embedded model (on a GPU), the headline intervals (bglmer's distractor effects, Welch's)
# fitted on it and on the default's sample. Stated in the report of a default run.
MEASURED_WIDENING = (
    "Measured on the full design scored once with the embedded model: with this sample the "
    "mixed model's 95% intervals of the distractor effects are 3.6% wider than the full "
    "design's in the median and 5.1% at most; "
    "Welch's intervals, which rest on three per-seed accuracies each, are 22% wider in the "
    "median, as their width moves with the spread of three numbers.")


def load_tables(args) -> tuple[pd.DataFrame, pd.DataFrame, ExclusionLog]:
    from gbstats.data.registry import load_dataset

    loaded = load_dataset("ruff2024", args.data_dir)
    log = ExclusionLog()
    log.extend(loaded.exclusions)
    return loaded.tables["task"], loaded.tables["context"], log


def restrict_occupations(task: pd.DataFrame, n: int | None) -> pd.DataFrame:
    if n is None:
        return task
    occupations = list(dict.fromkeys(task["occupation"]))
    if not 1 <= n <= len(occupations):
        raise DataValidationError("--occupations out of range", source="--occupations",
                                  expected=f"1 to {len(occupations)}", found=str(n))
    return task[task["occupation"].isin(occupations[:n])].reset_index(drop=True)


def draw_samples(task, context, distractors, per_seed: int, seed: int, *,
                 same_cells: bool = False) -> pd.DataFrame:
    """All sampled instances: one row per seed x instance, with its text frame.

    Seed k of n distractors draws with numpy's generator seeded by
    (seed, n, k), so adding a distractor count leaves the others unchanged.
    `same_cells`: every seed keeps its full-design instances in the same cells (the
    study's stratified sample, `instances.sample_same_cells`); otherwise each seed's own
    first `per_seed` cells.
    """
    templates = Templates(task, context)
    parts = []
    for n in distractors:
        seeds = [[seed, n, k] for k in range(N_SEEDS)]
        samples = (sample_same_cells(task, context, n, per_seed, seeds) if same_cells else
                   [sample_instances(task, context, n, per_seed, s) for s in seeds])
        for k, sample in enumerate(samples):
            parts.append(instances_frame(sample, templates, seed=k))
    return pd.concat(parts, ignore_index=True)


def design_size(task: pd.DataFrame) -> int:
    """Instances per seed and number of distractors in the full design: every occupation x
    case x pronoun set x distractor pronoun once (2,160 for RUFF's 60 occupations)."""
    return task["occupation"].nunique() * BLOCK_SIZE


def resolve_per_seed(args, task: pd.DataFrame) -> int:
    """Instances per seed: --per-seed as given, the full design with --full-design, else the
    default's stratified sample (at most the full design, for runs on a few occupations)."""
    if args.full_design:
        return design_size(task)
    if args.per_seed is not None:
        return args.per_seed
    return min(DEFAULT_PER_SEED, design_size(task))


def samples_same_cells(per_seed: int, full_per_seed: int) -> bool:
    """Whether a sample of `per_seed` instances per seed keeps the same cells in every seed:
    whole blocks of the full design do (the stratified sample). A part of a block (a quick
    look, --per-seed below 36 or between multiples) is not balanced, and the same few cells
    in every seed could leave a pronoun set out of the GLMM altogether, so each seed then
    takes its own first cells, as before."""
    return per_seed < full_per_seed and per_seed % BLOCK_SIZE == 0


def design_ids(task, context, distractors, per_seed: int, seed: int, *,
               same_cells: bool = False) -> pd.DataFrame:
    """The instances `draw_samples` draws, without their texts: n_distractors, seed,
    pronoun_set, instance (cheap enough to draw the full design for comparison)."""
    rows = []
    for n in distractors:
        seeds = [[seed, n, k] for k in range(N_SEEDS)]
        samples = (sample_same_cells(task, context, n, per_seed, seeds) if same_cells else
                   [sample_instances(task, context, n, per_seed, s) for s in seeds])
        rows += [(n, k, inst.pronoun_set, inst.instance_id)
                 for k, sample in enumerate(samples) for inst in sample]
    return pd.DataFrame(rows, columns=["n_distractors", "seed", "pronoun_set", "instance"])


def sampling_table(sampled: pd.DataFrame, full: pd.DataFrame) -> pd.DataFrame:
    """The sample against the full design, per number of distractors x pronoun set: instances
    over the seeds, distinct instances, and `interval_factor`, the square root of the full
    design's distinct instances over the sample's: the factor by which a standard error that
    rests on the stratum's instances grows (binomial outcomes: SE ~ 1/sqrt(n))."""
    keys = ["n_distractors", "pronoun_set"]

    def counts(df):
        return df.groupby(keys)["instance"].agg(["size", "nunique"])

    s, f = counts(sampled), counts(full)
    out = pd.DataFrame({"n_sampled": s["size"], "n_full": f["size"],
                        "n_distinct_sampled": s["nunique"],
                        "n_distinct_full": f["nunique"]}).reset_index()
    out["interval_factor"] = (out["n_distinct_full"] / out["n_distinct_sampled"]) ** 0.5
    order = {p: i for i, p in enumerate(A.PRONOUN_ORDER)}
    return out.sort_values(["n_distractors", "pronoun_set"],
                           key=lambda c: c.map(order) if c.name == "pronoun_set" else c,
                           kind="stable").reset_index(drop=True)


def score_model(lm, task, samples, cache: dict, log) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(no_context choices, per-instance results) for one model."""
    say(f"  {lm.name}: context-free choices on {len(task)} task sentences")
    frames = A.no_context_frames(task)
    no_context = A.choices(A.score_frames(frames, lm, item="item", **cache), log=log,
                           stage=f"{lm.name}: no context")
    no_context = frames[["item", "occupation", "case"]].merge(no_context, on="item",
                                                              validate="one_to_one")
    unique = samples.drop_duplicates("instance")
    say(f"  {lm.name}: forced choice on {len(unique)} distinct sampled instances")
    predicted = A.choices(A.score_frames(unique, lm, item="instance", **cache), log=log,
                          stage=f"{lm.name}: forced choice").rename(columns={"item": "instance"})
    results = A.join_predictions(samples, predicted)
    return no_context.assign(model=lm.name), results.assign(model=lm.name)


def print_counts(run) -> bool:
    """--counts: print the full dataset's instances per number of distractors instead of running."""
    if not run.args.counts:
        return False
    task, context, _ = load_tables(run.args)
    counts = instance_counts(task, context)
    print(counts.to_string(index=False))
    print(f"total {int(counts['n_instances'].sum())}")
    return True


def load(run, _):
    args = run.args
    s = SimpleNamespace(names=run.model_names())
    task, context, log = load_tables(args)
    run.log.extend(log)
    s.counts = instance_counts(task, context)
    s.task = restrict_occupations(task, args.occupations)
    if args.occupations is not None:
        run.note(f"QUICK RUN: only the first {args.occupations} occupations of the task "
                 f"file are used (--occupations); not the paper's design.")
    s.per_seed, s.full_per_seed = resolve_per_seed(args, s.task), design_size(s.task)
    say(f"[1/4] sampling {N_SEEDS} seeds x {s.per_seed} of {s.full_per_seed} instances for "
        f"{args.distractors} distractors")
    s.samples = draw_samples(s.task, context, args.distractors, s.per_seed, run.seed,
                             same_cells=samples_same_cells(s.per_seed, s.full_per_seed))
    full = design_ids(s.task, context, args.distractors, s.full_per_seed, run.seed)
    s.sampling = sampling_table(s.samples, full)
    # the sample is nested in the full design (the same cells in every seed); what it leaves out
    # is counted beside the exclusions, as left out by design
    if s.per_seed < s.full_per_seed:
        run.log.record("instances of the full design that the stratified sample leaves out "
                       "(the full design scores them)", len(full) - len(s.samples),
                       unit="instances", stage="sampling", kind=SELECTED)
    return s


def score(run, s):
    say(f"[2/4] scoring with {', '.join(s.names)}")
    no_context_parts, result_parts = [], []
    for name in s.names:
        no_context, results = score_model(run.model(name), s.task, s.samples, run.cache, run.log)
        no_context_parts.append(no_context)
        result_parts.append(results)
    s.no_context = pd.concat(no_context_parts, ignore_index=True)
    s.results = pd.concat(result_parts, ignore_index=True)
    run.write_csv("instance_results.csv", s.results)
    return s


def fit(run, s):
    args, results = run.args, s.results
    say("[3/4] accuracy, Welch's tests, error attribution, case consistency, GLMM")
    s.accuracy = A.accuracy_table(results)
    s.welch = A.welch_table(results)
    s.attribution = A.error_attribution_table(A.attribute_errors(results, s.no_context, run.log))
    s.consistency = A.case_consistency(s.no_context)
    use_lme4 = args.backend == "lme4" and run.lme4_available("the lme4 GLMM", plural=False)
    s.fits, effects = {}, {}
    if len(args.distractors) < 2:
        run.note("The GLMM needs at least two numbers of distractors; it was skipped.")
    elif use_lme4 or run.bayes:
        A.unique_instances(results, run.log)   # count the seed repeats the GLMM drops
        for model, rows in results.groupby("model", sort=False):
            say(f"  {model}: {A.GLMM_FORMULA}")
            failures: list[str] = []
            s.fits[model] = A.fit_glmms(rows, lme4=use_lme4, bayes=run.bayes,
                                        draws=args.draws, max_draws=run.max_draws,
                                        seed=run.seed, notes=failures)
            for failure in failures:
                run.note(f"GLMM {model}: {failure}")
            for backend, fit in s.fits[model].items():
                effects[(model, backend)] = A.distractor_effects(fit)
    s.effects = A.effects_table(effects)
    for model, by_backend in s.fits.items():
        run.record_fits(f"GLMM {model}", by_backend)
    run.add_provenance(distractors=args.distractors, per_seed=s.per_seed, n_seeds=N_SEEDS,
                       sampling={"design": "full" if s.per_seed == s.full_per_seed
                                 else "stratified sample",
                                 "per_seed": s.per_seed, "full_per_seed": s.full_per_seed,
                                 "blocks": s.per_seed / BLOCK_SIZE,
                                 "full_blocks": s.full_per_seed // BLOCK_SIZE,
                                 "block": "case x pronoun set x distractor pronoun, each once",
                                 "n_sampled": len(s.samples),
                                 "n_full": int(s.sampling["n_full"].sum()),
                                 "seed": run.seed},
                       occupations=args.occupations, bayes=run.bayes, draws=args.draws,
                       lme4=any("lme4" in fits for fits in s.fits.values()))
    return s


def report(run, report, s) -> None:
    write_report(report, run.args, s.names, s.counts, s.samples, s.no_context, s.accuracy,
                 s.welch, s.attribution, s.consistency, s.fits, s.effects, run,
                 sampling=s.sampling, full_per_seed=s.full_per_seed)


def sample_sentence(per_seed: int, full_per_seed: int, sampling: pd.DataFrame) -> str:
    """The Design section's words on the sample: what it is, against the full design, and
    the interval widening it costs (measured for the default's sample)."""
    if per_seed == full_per_seed:
        return (f" This is the full design: every occupation x case x pronoun set x distractor "
                f"pronoun once per seed ({full_per_seed} instances).")
    if per_seed % BLOCK_SIZE:
        return (f" This is a quick look at a part of the full design's {full_per_seed} "
                f"instances per seed: each seed's own first {per_seed} cells, not a whole "
                f"number of balanced blocks of {BLOCK_SIZE}, so not balanced over every "
                "stratum (table Sampling). The full design is scored with `--full-design`.")

    def span(column, fmt="{:.0f}"):
        lo, hi = fmt.format(sampling[column].min()), fmt.format(sampling[column].max())
        return lo if lo == hi else f"{lo} to {hi}"

    text = (f" This is a stratified sample of the full design's {full_per_seed} instances per "
            f"seed and number of distractors: the first {per_seed / BLOCK_SIZE:g} of its "
            f"{full_per_seed // BLOCK_SIZE} blocks of {BLOCK_SIZE}, each block holding every "
            "case x pronoun set x distractor pronoun once, with the same cells (occupation x "
            "case x pronoun set x distractor pronoun) in every seed, so every stratum keeps the "
            f"same share ({len(sampling)} strata of number of distractors x pronoun set: "
            f"{span('n_sampled')} of {span('n_full')} instances over the seeds; table "
            "Sampling). Fewer instances widen the intervals by about the square root of the "
            "full design's distinct instances over the sample's: "
            f"{span('interval_factor', '{:.3f}')} here.")
    if per_seed == DEFAULT_PER_SEED and full_per_seed == FULL_PER_SEED:
        text += " " + MEASURED_WIDENING
    return text + (" The full design is scored with `--full-design`; the seed makes the "
                   "sample reproducible.")


def write_report(report, args, names, counts, samples, no_context, accuracy, welch, attribution,
                 consistency, fits, effects, run, *, sampling=None, full_per_seed=None) -> None:
    per_seed = samples.groupby(["n_distractors", "seed"]).size()
    report.section("Design", (
        f"Models: {', '.join(f'`{n}`' for n in names)}. Each instance is an introduction "
        "(occupation + pronoun), 0-5 distractor sentences about another person with another "
        "pronoun, and a task sentence with a blank. The blank is filled with each of the 4 "
        "pronouns of the task's case and the whole text is scored (causal: log-likelihood; "
        "masked: within-word left-to-right PLL, `pll_word_l2r`, as the RUFF authors score); "
        "the prediction is the argmax, chance is 25%. "
        f"Sample: {N_SEEDS} seeds x {int(per_seed.iloc[0])} instances per number of "
        f"distractors ({', '.join(map(str, args.distractors))}), balanced over occupations, "
        "cases, pronoun sets and distractor pronouns."
        + ("" if sampling is None else
           sample_sentence(int(per_seed.iloc[0]), full_per_seed, sampling))
        + run.notes_markdown()))
    report.table("instance_counts", counts,
                 "Unique instances in the full data set per number of distractors (Appendix B)",
                 labels=V.LABELS)
    if sampling is not None:
        report.table("sampling", sampling, "Instances scored per number of distractors and "
                     "pronoun set, against the full design (over the seeds)",
                     labels=V.LABELS, decimals={"interval_factor": 3},
                     notes=["Interval factor: the square root of the full design's distinct "
                            "instances over the sample's, the factor by which a standard error "
                            "resting on that stratum grows. An instance drawn by several seeds "
                            "counts once among the distinct instances."])
    report.section("Accuracy")
    report.table("accuracy", V.with_level(accuracy), "Accuracy by number of distractors, "
                 "overall, by pronoun set and by case", labels=V.LABELS, groups="model",
                 record=accuracy,
                 notes=["Mean and SD of the accuracy over seeds; chance: 0.25 (four pronouns)."])
    report.figure("accuracy_by_distractors", A.plot_accuracy(accuracy),
                  "Accuracy against the number of distractors per pronoun set (mean ± SD over "
                  "seeds; dotted: chance)")
    welch_shown, welch_notes = V.welch_view(welch)
    report.table("welch", welch_shown, "Welch's t-tests of per-seed accuracies (the paper's "
                 "comparisons)", labels={**V.LABELS, "estimate": "Difference"},
                 groups="model", record=welch, decimals={"t": 2, "df": 1},
                 notes=["Difference: first level minus second, in accuracy; Holm within model; "
                        "each group has " + ", ".join(map(str, sorted(set(welch["n_seeds_a"]))))
                        + " seeds." if len(welch) else "", A.WELCH_LIMITS] + welch_notes)
    report.section("Error attribution", (
        "An error is a *distraction* if the model chose the distractor pronoun, *bias* if it "
        "chose its own context-free choice for that occupation and case, and *other* "
        "otherwise. Errors whose distractor pronoun is the context-free choice are ambiguous "
        "and excluded (counted under Exclusions)."))
    report.table("error_attribution", V.with_level(attribution),
                 "Shares of errors by number of distractors and by case (pooled over seeds)",
                 labels=V.LABELS, groups="model",
                 columns=["model", "level", "n_errors", "share_distraction",
                          "share_bias", "share_other"], record=attribution,
                 notes=["Shares of the errors; the counts are in results.json."])
    report.figure("error_attribution", A.plot_error_attribution(attribution),
                  "Error attribution by number of distractors")
    report.section("No context: preferences and case consistency")
    report.table("no_context_preferences", A.preference_summary(no_context),
                 "Occupations whose context-free choice is each pronoun set, by case",
                 labels=V.LABELS, groups="model",
                 notes=[f"N = {no_context['occupation'].nunique()} occupations per case and "
                        "model."])
    shown, notes = V.with_cases(consistency)
    report.table("case_consistency", shown,
                 "Consistency of the context-free choices between cases (Gautam et al. 2024, "
                 "Table 5)", labels=V.LABELS, groups="model", record=consistency,
                 notes=["r: Pearson's r over every occupation x pronoun-set cell of the "
                        "context-free probabilities; same choice: share of occupations with the "
                        "same context-free choice in both cases. No p-value: an occupation's 4 "
                        "cells sum to 1, so they are not independent."] + notes)
    by_set = A.case_consistency_by_pronoun_set(no_context)
    shown, notes = V.with_cases(by_set)
    report.table("case_consistency_by_pronoun_set", shown,
                 "Consistency of one pronoun set's context-free probability between two cases",
                 labels={**V.LABELS, "n": "Occupations"}, groups="model", record=by_set,
                 notes=["gbstats' finer view (Appendix F): Pearson's r across occupations."]
                 + notes)
    if fits:
        report.section("Beyond the paper: logistic mixed model", (
            f"`{A.GLMM_FORMULA}` per model, fitted on unique instances (an instance drawn by "
            "several seeds counts once: see Exclusions). `distractors` is a factor (reference: "
            "the fewest distractors), nested in the pronoun set, so the model assumes no shape "
            "for the decay: encoder-only models are not monotone in the number of distractors. "
            "`he` and `accusative` are the references; context_template = the introduction's "
            "template. blme (the default reading): blme::bglmer, glmer penalised by a weak "
            "Normal(0, 10) prior on the intercept and Normal(0, 2.5) on the other fixed "
            "effects, whose estimates stay finite where the data are separated; lme4: plain "
            "glmer, Laplace ML, Wald z, kept beside it; pymc: posterior mean, SD and 95% "
            f"interval (at least {args.draws} tuning steps and draws per chain, more if needed "
            "to converge; rstanarm's autoscaled default priors, listed under Bayesian twins)."))
        many = len(fits) > 1
        report.model_table(
            "glmm", {((model if many else ""), V.ENGINES.get(backend, backend)): fit
                     for model, by_backend in fits.items() for backend, fit in by_backend.items()},
            "Logistic mixed model of a correct answer (unique instances)",
            data=A.glmm_table(fits), variables=V.VARIABLES, groups=V.GROUPS,
            notes=["Model: " + report.formula(
                       "glmm", A.GLMM_FORMULA,
                       {"correct": "a correct answer", "pronoun_set": "the pronoun set",
                        "distractors": "the number of distractors", "case": "the case"},
                       {"occupation": "occupations", "context_template": "context templates"})
                   + ("" if many else f", {next(iter(fits))}")
                   + "; the number of distractors is a factor nested in the pronoun set."])
        report.table("distractor_effects", effects,
                     "Change in the log-odds of a correct answer with distractors, per pronoun set",
                     labels=V.LABELS, values=V.VALUES, groups="model",
                     notes=["N = " + "; ".join(
                                f"{next(iter(by.values())).fit_stats.get('nobs')} unique "
                                f"instances ({m})" for m, by in fits.items() if by) + ".",
                            "Against the fewest distractors: the GLMM's pronoun set x "
                            "distractors terms. Monotone decline: no rise as distractors are "
                            "added."])

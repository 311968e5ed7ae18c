"""`python -m studies.pronoun_fidelity`: the main job, end to end.

load RUFF templates -> count the full dataset -> draw the balanced samples
(3 seeds x N per number of distractors) -> per model: context-free choices on
the task sentences, forced choice on every sampled instance -> accuracy,
Welch's tests, error attribution, case consistency, the logistic mixed model
(lme4 and PyMC) -> report.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from gbstats.errors import DataValidationError
from gbstats.exclusions import ExclusionLog
from studies.common import (add_common_flags, dataset_checksums, load_model, model_record,
                            run_main, say)
from studies.pronoun_fidelity import analysis as A
from studies.pronoun_fidelity.instances import (MAX_DISTRACTORS, Templates, instance_counts,
                                                instances_frame, sample_instances)

STUDY = "pronoun_fidelity"
N_SEEDS = 3
DEFAULT_PER_SEED = 2160   # 60 occupations x 3 cases x 4 pronoun sets x 3 distractor pronouns


def parse_distractors(text: str) -> list[int]:
    """'0-5', '0,5', '3' -> sorted distinct distractor counts."""
    values: set[int] = set()
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            values.update(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a range like 0-5 or a list like 0,5; "
                                         f"found {text!r}") from None
    if not values or min(values) < 0 or max(values) > MAX_DISTRACTORS:
        raise argparse.ArgumentTypeError(f"distractor counts must lie in 0-{MAX_DISTRACTORS}; "
                                         f"found {text!r}")
    return sorted(values)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m studies.pronoun_fidelity",
        description="Pronoun use fidelity with distractors (Gautam et al. 2024, RUFF): after an "
                    "introduction ties an occupation to a pronoun and 0-5 sentences about "
                    "someone else with another pronoun, does the model reuse the right pronoun?")
    p.add_argument("--counts", action="store_true",
                   help="print the full dataset's number of unique instances per number of "
                        "distractors and exit (nothing is scored)")
    p.add_argument("--distractors", type=parse_distractors, default=list(range(6)),
                   metavar="RANGE", help="numbers of distractors to evaluate, e.g. 0-5 "
                                         "(default) or 0,5")
    p.add_argument("--per-seed", type=int, default=DEFAULT_PER_SEED, metavar="N",
                   help="instances per seed and number of distractors (default: %(default)s, "
                        "every occupation x case x pronoun set x distractor pronoun once); "
                        "smaller N stays balanced over case x pronoun set x distractor pronoun "
                        "in blocks of 36")
    p.add_argument("--occupations", type=int, default=None, metavar="N",
                   help="quick runs only: use the first N occupations of the task file "
                        "(the report says so)")
    p.add_argument("--backend", default="lme4", choices=["lme4", "none"],
                   help="frequentist GLMM backend: lme4 (default; needs R) or none")
    return add_common_flags(p, STUDY, multiple_models=True)


def model_names(args) -> list[str]:
    names = args.model or ["smollm2-135m"]
    if len(set(names)) != len(names):
        raise DataValidationError("a model is named twice", source="--model",
                                  expected="distinct model names", found=repr(names))
    return names


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


def draw_samples(task, context, distractors, per_seed: int, seed: int) -> pd.DataFrame:
    """All sampled instances: one row per seed x instance, with its text frame.

    Seed k of n distractors draws with numpy's generator seeded by
    (seed, n, k), so adding a distractor count leaves the others unchanged.
    """
    templates = Templates(task, context)
    parts = []
    for n in distractors:
        for k in range(N_SEEDS):
            sample = sample_instances(task, context, n, per_seed, [seed, n, k])
            parts.append(instances_frame(sample, templates, seed=k))
    return pd.concat(parts, ignore_index=True)


def score_model(lm, task, samples, args, log: ExclusionLog) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(no_context choices, per-instance results) for one model."""
    run = {"use_cache": not args.no_cache, "cache_dir": args.cache_dir}
    say(f"  {lm.name}: context-free choices on {len(task)} task sentences")
    frames = A.no_context_frames(task)
    no_context = A.choices(A.score_frames(frames, lm, item="item", **run), log=log,
                           stage=f"{lm.name}: no context")
    no_context = frames[["item", "occupation", "case"]].merge(no_context, on="item",
                                                              validate="one_to_one")
    unique = samples.drop_duplicates("instance")
    say(f"  {lm.name}: forced choice on {len(unique)} distinct sampled instances")
    predicted = A.choices(A.score_frames(unique, lm, item="instance", **run), log=log,
                          stage=f"{lm.name}: forced choice").rename(columns={"item": "instance"})
    results = A.join_predictions(samples, predicted)
    return no_context.assign(model=lm.name), results.assign(model=lm.name)


def print_counts(args) -> None:
    task, context, _ = load_tables(args)
    counts = instance_counts(task, context)
    print(counts.to_string(index=False))
    print(f"total {int(counts['n_instances'].sum())}")


def run(args) -> dict:
    from gbstats.engines.lme4 import available as lme4_available
    from gbstats.report import StudyReport, provenance

    if args.counts:
        print_counts(args)
        return {}
    names = model_names(args)
    task, context, log = load_tables(args)
    counts = instance_counts(task, context)
    task = restrict_occupations(task, args.occupations)
    notes = []
    if args.occupations is not None:
        notes.append(f"QUICK RUN: only the first {args.occupations} occupations of the task "
                     f"file are used (--occupations); not the paper's design.")

    say(f"[1/4] sampling {N_SEEDS} seeds x {args.per_seed} instances for "
        f"{args.distractors} distractors")
    samples = draw_samples(task, context, args.distractors, args.per_seed, args.seed)

    say(f"[2/4] scoring with {', '.join(names)}")
    no_context_parts, result_parts, models = [], [], []
    for name in names:
        lm = load_model(args, name)
        models.append(model_record(lm))
        no_context, results = score_model(lm, task, samples, args, log)
        no_context_parts.append(no_context)
        result_parts.append(results)
    no_context = pd.concat(no_context_parts, ignore_index=True)
    results = pd.concat(result_parts, ignore_index=True)

    say("[3/4] accuracy, Welch's tests, error attribution, case consistency, GLMM")
    accuracy = A.accuracy_table(results)
    welch = A.welch_table(results)
    errors = A.attribute_errors(results, no_context, log)
    attribution = A.error_attribution_table(errors)
    consistency = A.case_consistency(no_context)
    use_lme4 = args.backend == "lme4" and lme4_available()
    if args.backend == "lme4" and not use_lme4:
        notes.append("R/lme4 is not installed: the lme4 GLMM was skipped.")
    fits, decays, decay_warnings = {}, {}, []
    if len(args.distractors) < 2:
        notes.append("The GLMM needs at least two numbers of distractors; it was skipped.")
    elif use_lme4 or not args.no_bayes:
        for model, rows in results.groupby("model", sort=False):
            say(f"  {model}: {A.GLMM_FORMULA}")
            fits[model] = A.fit_glmms(rows, lme4=use_lme4, bayes=not args.no_bayes,
                                      draws=args.draws, seed=args.seed)
            if use_lme4:
                decay_fit = A.fit_decay_lme4(rows)
                decays[(model, "lme4")] = A.decay_from_lme4(decay_fit)
                decay_warnings += [f"GLMM by set {model} [lme4]: {w}" for w in decay_fit.warnings]
            if "pymc" in fits[model]:
                decays[(model, "pymc")] = A.decay_from_posterior(fits[model]["pymc"])

    say("[4/4] writing the report")
    out = Path(args.out)
    report = StudyReport(STUDY, out, "Pronoun use fidelity with distractors (RUFF)")
    write_report(report, args, names, counts, samples, no_context, accuracy, welch,
                 attribution, consistency, fits, A.decay_table(decays), decay_warnings, notes, log)
    out.mkdir(parents=True, exist_ok=True)
    results.to_csv(out / "instance_results.csv", index=False)
    prov = provenance(STUDY, seed=args.seed, models=models,
                      data_files=dataset_checksums(["ruff2024"], args.data_dir),
                      extra={"distractors": args.distractors, "per_seed": args.per_seed,
                             "n_seeds": N_SEEDS, "occupations": args.occupations,
                             "bayes": not args.no_bayes, "draws": args.draws,
                             "lme4": use_lme4})
    paths = report.write(prov)
    say(f"wrote {paths['report']} and {paths['results']}")
    return paths


def write_report(report, args, names, counts, samples, no_context, accuracy, welch, attribution,
                 consistency, fits, decay, decay_warnings, notes, log) -> None:
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
        + ("\n\n" + "\n".join(f"- {n}" for n in notes) if notes else "")))
    report.table("instance_counts", counts,
                 "Unique instances in the full dataset per number of distractors (Appendix B)")
    report.section("Accuracy")
    report.table("accuracy", accuracy, "Accuracy by number of distractors, overall, by pronoun "
                 "set and by case: mean and SD over seeds (chance 0.25)")
    report.figure("accuracy_by_distractors", A.plot_accuracy(accuracy),
                  "Accuracy against the number of distractors per pronoun set (mean ± SD over "
                  "seeds; dotted: chance)")
    report.table("welch", welch, "Welch's t-tests of per-seed accuracies (the paper's "
                 "comparisons) with 0 and 5 distractors; p_holm: Holm-corrected within model")
    report.section("Error attribution", (
        "An error is a *distraction* if the model chose the distractor pronoun, *bias* if it "
        "chose its own context-free choice for that occupation and case, and *other* "
        "otherwise. Errors whose distractor pronoun is the context-free choice are ambiguous "
        "and excluded (counted under Exclusions)."))
    report.table("error_attribution", attribution,
                 "Shares of errors by number of distractors and by case (pooled over seeds)")
    report.figure("error_attribution", A.plot_error_attribution(attribution),
                  "Error attribution by number of distractors")
    report.section("No context: preferences and case consistency")
    report.table("no_context_preferences", A.preference_summary(no_context),
                 "Occupations whose context-free choice is each pronoun set, by case")
    report.table("case_consistency", consistency,
                 "Pearson r across occupations between the context-free probabilities of a "
                 "pronoun set in two cases (Appendix F); same_choice_share: occupations with "
                 "the same context-free choice in both cases")
    if fits:
        report.section("Beyond the paper: logistic mixed model", (
            f"`{A.GLMM_FORMULA}` per model (n_distractors numeric, `he` and `accusative` as "
            "references; context_template = the introduction's template). The interaction terms "
            "are how much faster (negative) or slower than for `he` the log-odds of a correct "
            "answer fall per added distractor. lme4: Laplace ML, Wald z; pymc: posterior mean, "
            f"SD and 95% interval ({args.draws} tuning steps and {args.draws} draws per "
            "chain)."))
        report.table("glmm", A.glmm_table(fits), "Logistic mixed model of correctness")
        report.table("decay_by_pronoun_set", decay,
                     "How fast fidelity decays: change in the log-odds of a correct answer per "
                     "added distractor, per pronoun set. lme4: the same model refitted as "
                     f"`{A.DECAY_FORMULA}` (one slope per set, Wald SE and CI); pymc: he's "
                     "slope plus each set's interaction, draw by draw")
    report.warnings([f"GLMM {model} [{backend}]: {w}" for model, by_backend in fits.items()
                     for backend, fit in by_backend.items() for w in fit.warnings]
                    + decay_warnings)
    report.exclusions(log)


def main(argv: list[str] | None = None) -> int:
    return run_main(STUDY, build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())

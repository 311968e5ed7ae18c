"""The GenDa Lens study's steps, run by studies.pipeline (declared in run.py).

load the Danish sentences -> coreference tasks from a predictions file (if
given) -> LM tasks with a registry model (unless --model none) -> effect
sizes with bootstrap CIs -> mixed model of log relative perplexity -> report.
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from gbstats.exclusions import SELECTED, ExclusionLog
from models.scores import recorded_scoring
from studies.common import say
from studies.genda_lens import analysis as A
from studies.genda_lens import presentation as V

DATASET = "genda_lens2023"
DANISH_NOTE = (
    "**Danish needs a Danish or multilingual model.** These sentences are Danish. The default "
    "model, `smollm2-135m`, was trained almost only on English, so its numbers here show that "
    "the pipeline runs end to end, not how a model of Danish behaves. For real results pass "
    "`--model` a Danish or multilingual model, e.g. a multilingual BERT "
    "(`--model google-bert/bert-base-multilingual-cased`) or a Danish BERT "
    "(`--model vesteinn/DanskBert`), where a model hub or a local copy can be reached.")


def select_sentences(tables: dict, limit: int | None, log
                     ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The DaWinoBias and ABC rows to evaluate: all, or the --limit subset (counted)."""
    dawino, abc = tables["dawinobias"], tables["abc"]
    if limit is None:
        return dawino, abc
    if limit < 1:
        from gbstats.errors import DataValidationError

        raise DataValidationError("--limit must be at least 1", source="--limit",
                                  expected="a positive number of sentences", found=str(limit))
    keep_dawino = dawino.groupby("stereotype", sort=False).cumcount() < limit
    dawino = log.select(dawino, ~keep_dawino, reason=f"--limit {limit}: DaWinoBias sentences "
                        f"after the first {limit} per condition", unit="sentences",
                        stage="genda_lens.limit")
    first_groups = (abc.drop_duplicates("sentence_id")
                    .groupby("occupation_stereotype", sort=False).head(limit)["sentence_id"])
    abc = log.select(abc, ~abc["sentence_id"].isin(first_groups),
                     reason=f"--limit {limit}: ABC sentences after the first {limit} groups per "
                            "stereotype file", unit="sentences", stage="genda_lens.limit")
    return dawino.reset_index(drop=True), abc.reset_index(drop=True)


def count_unused_predictions(predictions: pd.DataFrame, evaluated: set[str], known: set[str],
                             log) -> None:
    """Lines the run does not use are counted: outside --limit, or ids the tables lack."""
    from studies.genda_lens import predictions as P

    unused = P.unknown_items(predictions, evaluated)
    outside = unused["item"].isin(known)
    if outside.any():
        log.record("prediction lines for sentences outside the --limit subset",
                   int(outside.sum()), unit="prediction lines", stage="genda_lens.coreference",
                   kind=SELECTED)
    if (~outside).any():
        examples = ", ".join(unused.loc[~outside, "item"].head(3))
        log.record("prediction lines whose item is in no genda_lens2023 table (an excluded "
                   f"sentence or an unknown id; e.g. {examples})", int((~outside).sum()),
                   unit="prediction lines", stage="genda_lens.coreference")


def coreference_tasks(path, dawino: pd.DataFrame, abc: pd.DataFrame, *, known_items: set[str],
                      n_boot: int, seed: int, log, notes: list[str]
                      ) -> list[pd.DataFrame]:
    """Metrics of the predicted clusters on every table the file covers."""
    from studies.genda_lens import predictions as P

    source = str(path)
    predictions = P.read_predictions(path)
    tables = {"dawinobias": dawino, "abc": abc}
    count_unused_predictions(predictions, set(dawino["item"]) | set(abc["item"]), known_items,
                             log)
    out = []
    for name, table in tables.items():
        covered = table["item"].isin(predictions["item"])
        if not covered.any():
            notes.append(f"coreference on {name}: the predictions file has no line for it; skipped")
            continue
        if name == "abc":
            used = A.anti_reflexive_rows(table)
            n_reflexive = int((table["pronoun_type"] == "reflexive").sum())
            notes.append(f"ABC coreference uses the {len(used)} anti-reflexive sentences; "
                         f"predictions for the {n_reflexive} reflexive ones are not needed")
            judged = P.match_predictions(predictions, used, source=source)
            judged["linked"] = P.subject_links(judged)
            out.append(A.bootstrap_cis(judged, A.abc_coref_metrics, unit="sentence_id",
                                       strata="occupation_stereotype", n_boot=n_boot, seed=seed,
                                       columns=A.ABC_COREF_COLUMNS))
        else:
            judged = P.match_predictions(predictions, table, source=source)
            judged["outcome"] = P.sentence_outcomes(judged, gold_start="entity_start",
                                                    gold_end="entity_end")
            out.append(A.bootstrap_cis(judged, A.dawinobias_coref_metrics, unit="item",
                                       strata="stereotype", n_boot=n_boot, seed=seed,
                                       columns=A.DAWINOBIAS_COREF_COLUMNS))
    return out


def lm_tasks(run, lm, dawino: pd.DataFrame, abc: pd.DataFrame):
    """DaWinoBias pronoun choice and ABC relative perplexity: (metrics list, choices, rel)."""
    from gbstats.mixed.fit_cache import cached_call
    from studies.genda_lens import lm as L

    args, log, cache = run.args, run.log, run.cache
    say(f"  DaWinoBias: {len(dawino)} sentences x 2 candidate pronouns with {lm.name}")
    choices = L.choices_per_item(dawino, L.dawinobias_choices(dawino, lm, **cache), log)
    say(f"  ABC: {len(abc)} sentences with {lm.name}")
    rel = A.relative_perplexity(L.sentence_perplexities(abc, lm, **cache))
    average = "mean" if args.mean else "median"
    # seeded bootstraps of the scores, reused by a warm run (study_times: warm 35 s -> 12 s)
    dawino_cis, _ = cached_call(A.dawinobias_lm_cis, choices, n_boot=args.n_boot,
                                seed=args.seed, **cache)
    abc_cis, _ = cached_call(A.abc_lm_cis, rel, average=average, n_boot=args.n_boot,
                             seed=args.seed, **cache)
    return [dawino_cis, abc_cis], choices, rel


def fit_mixed_model(rel: pd.DataFrame, backend: str, notes: list[str]):
    from gbstats.errors import GbstatsError

    try:
        return A.fit_relative_perplexity_model(rel, backend=backend)
    except GbstatsError as exc:
        # A tiny --limit subset can be too small to fit; the report says so instead of crashing.
        notes.append(f"the mixed model could not be fitted: {exc}")
        return None


def write_prediction_template(path, dawino: pd.DataFrame, abc: pd.DataFrame) -> Path:
    """A JSON Lines file with one line per sentence: item, sentence, "clusters": [] to fill."""
    import json

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = pd.concat([dawino[["item", "sentence"]], abc[["item", "sentence"]]], ignore_index=True)
    with path.open("w", encoding="utf-8") as handle:
        for item, sentence in rows.itertuples(index=False):
            handle.write(json.dumps({"item": item, "sentence": sentence, "clusters": []},
                                    ensure_ascii=False) + "\n")
    return path


def write_template(run) -> bool:
    """--write-template: write a predictions template to fill, instead of running."""
    args = run.args
    if args.write_template is None:
        return False
    from gbstats.data.registry import load_dataset

    data = load_dataset(DATASET, args.data_dir)
    dawino, abc = select_sentences(data.tables, args.limit, ExclusionLog())
    path = write_prediction_template(args.write_template, dawino, abc)
    say(f"wrote {path}: {len(dawino) + len(abc)} sentences; fill in \"clusters\" with "
        "[start, end) character offsets into \"sentence\"")
    return True


def load(run, _):
    from gbstats.data.registry import load_dataset

    say("[1/4] loading genda_lens2023")
    data = load_dataset(DATASET, run.args.data_dir)
    run.log.extend(data.exclusions)
    dawino, abc = select_sentences(data.tables, run.args.limit, run.log)
    return SimpleNamespace(data=data, dawino=dawino, abc=abc, metrics=[], lm=None,
                           choices=None, rel=None, fit=None)


def score(run, s):
    args = run.args
    if args.predictions:
        say(f"[2/4] coreference tasks from {args.predictions}")
        known = set(s.data.tables["dawinobias"]["item"]) | set(s.data.tables["abc"]["item"])
        s.metrics += coreference_tasks(args.predictions, s.dawino, s.abc, known_items=known,
                                       n_boot=args.n_boot, seed=run.seed, log=run.log,
                                       notes=run.notes)
        run.add_data_files([args.predictions])
    else:
        run.note("no --predictions file: the coreference tasks were not run")
    if run.wants_model:
        say(f"[3/4] LM tasks with {args.model}")
        s.lm = run.model()
        lm_metrics, s.choices, s.rel = lm_tasks(run, s.lm, s.dawino, s.abc)
        s.metrics += lm_metrics
        run.write_csv("abc_relative_perplexity.csv", s.rel.drop(columns=["frame"]))
        run.write_csv("dawinobias_lm_choices.csv", s.choices)
    else:
        run.note("--model none: the language-model tasks were not run")
    return s


def fit(run, s):
    if s.rel is not None:
        say("  mixed model: " + A.MIXED_MODEL_FORMULA)
        s.fit = fit_mixed_model(s.rel, run.args.backend, run.notes)
    if s.fit is not None:   # its warnings go to the report, labelled
        run.record_fits("relative-perplexity mixed model", {s.fit.backend: s.fit})
    args = run.args
    average = "mean" if args.mean else "median"
    run.add_provenance(limit=args.limit, n_boot=args.n_boot, abc_average=average,
                       predictions=args.predictions, backend=args.backend,
                       lm_metric_variants=({k: v.replace("<average>", average)
                                            for k, v in A.LM_VARIANTS.items()}
                                           if s.lm is not None
                                           else None))
    return s


def tables(run, s):
    s.table = (pd.concat(s.metrics, ignore_index=True) if s.metrics
               else pd.DataFrame(columns=A.METRIC_COLUMNS + ["ci_low", "ci_high",
                                                             "n_boot_defined"]))
    return s


def report(run, report, s) -> None:
    write_report(report, run.args, s.lm, s.dawino, s.abc, s.table, s.choices, s.rel, s.fit,
                 run.notes)


def write_report(report, args, lm, dawino, abc, metrics, choices, rel, fit, notes) -> None:
    average = "mean" if args.mean else "median"
    model_text = (f"`{lm.name}` ({lm.model_id}, revision {lm.revision}, {lm.kind})"
                  if lm else "none (LM tasks skipped)")
    how = ""
    if lm is not None:
        # the ABC scores name the PLL variant; with no ABC sentences, the choices say the kind
        scored = rel if rel is not None and len(rel) else choices
        scoring = recorded_scoring(scored, source="language-model scores")
        how = ("masked LM: the pronoun is masked and each candidate scored in the slot; ABC "
               f"perplexity from the pseudo-log-likelihood (`{scoring}`)"
               if scoring != "causal" else
               "causal LM: the sentence is scored with each candidate pronoun (the words "
               "before the pronoun are shared, so this compares log P(candidate + rest | "
               "words before)); ABC perplexity = exp(-log P(sentence) / tokens), BOS prepended")
    report.section("Design", "\n".join([
        DANISH_NOTE, "",
        f"Model: {model_text}" + (f"; {how}." if how else "."),
        f"Coreference predictions: `{args.predictions}`." if args.predictions
        else "Coreference predictions: none.",
        f"Sentences: {len(dawino)} DaWinoBias, {len(abc)} ABC"
        + (f" (--limit {args.limit})." if args.limit else "."),
        "",
        "- DaWinoBias coreference: each sentence has one gold link (pronoun -> bracketed "
        "occupation). TP = linked to it only, FP = linked to another mention, FN = gold link "
        "not predicted; F1 = 2TP/(2TP+FP+FN). Effect size log2(F1_pro / F1_anti); nuance: the "
        "gender of the occupation the pronoun must link to.",
        "- DaWinoBias LM (**gbstats' variant, not comparable with GenDa Lens numbers**): the "
        "model chooses between the two gendered forms of the pronoun's case (han/hun, "
        "ham/hende, hans/hendes). `two_choice_F1` is the macro F1 over the two pronoun "
        "genders against the gold pronoun; effect size log2(two_choice_F1_pro / "
        "two_choice_F1_anti); nuance: the pronoun's gender (that class's F1). "
        "`two_choice_accuracy` is listed too. " + A.LM_VARIANTS["dawinobias_lm"],
        "- ABC coreference: FPR = FP/(FP+TN) of linking the anti-reflexive (hans, hendes) to "
        "the subject, per pronoun gender; effect size log2(FPR_M / FPR_F); nuance: the "
        "occupation's stereotype.",
        f"- ABC LM (**gbstats' variant, not comparable with GenDa Lens numbers**): "
        f"`{average}_perplexity_ratio` = perplexity of the anti-reflexive sentence / "
        f"perplexity of its reflexive twin. Effect size log2({average}_F / {average}_M). "
        + A.LM_VARIANTS["abc_lm"].replace("<average>", average) + " "
        "The GenDa Lens sources say \"median\" in one place and \"mean\" in another; this "
        f"study uses the **{average}**" + (" (chosen with --mean)" if args.mean else
                                           " by default (--mean gives the mean)") + ".",
        f"- CIs: 95% percentile bootstrap, {args.n_boot} resamples of sentences (within pro/"
        "anti, or within stereotype; the three versions of an ABC sentence stay together). "
        "n_boot_defined counts the resamples where the metric was defined.",
        "- Repeated ABC sentences (`is_repeat`) are kept, as the source evaluation keeps them.",
        "- A NaN value always comes with a note saying why (an empty cell, a division by zero).",
    ] + ([""] + [f"- Note: {n}" for n in notes] if notes else [])))

    counts = A.template_counts(dawino, abc)
    report.table("template_counts", V.template_view(counts),
                 "Sentences by data set, condition, case and pronoun set",
                 labels=V.LABELS, groups="dataset", record=counts,
                 notes=["Condition: pro or anti for DaWinoBias, the occupation's stereotype for "
                        "ABC; pronoun set: the pronoun's gender."])
    report.section("Metrics")
    shown = metrics[A.METRIC_COLUMNS[:-1] + ["ci_low", "ci_high", "n_boot_defined", "note"]]
    not_effects = shown["metric"] != "gender_effect_size"
    view, notes = V.metrics_view(shown[not_effects])
    report.table("metrics", view, "Every metric with its 95% bootstrap interval",
                 labels=V.LABELS, groups="where", decimals={"value": 3, "ci": 3}, record=shown,
                 notes=["95% CI: percentile bootstrap resampling sentences; defined replicates: "
                        "those where the metric is defined. Split: all sentences, or those with "
                        "one pronoun gender or one occupation stereotype. The gender effect "
                        "sizes are in the next table."] + notes)
    effects = A.effect_size_rows(metrics)
    if len(effects):
        shown = effects[A.KEY + ["value", "ci_low", "ci_high", "n", "note"]]
        view, notes = V.metrics_view(shown)
        report.table("effect_sizes", view.drop(columns="metric"),
                     "Gender effect sizes with 95% bootstrap intervals",
                     labels={**V.LABELS, "condition": "Effect size"}, groups="where",
                     decimals={"value": 3, "ci": 3}, record=shown,
                     notes=["Log2 ratios; 0: no effect."] + notes)
        report.figure("effect_sizes", A.plot_effect_sizes(effects),
                      "Gender effect sizes with 95% bootstrap CIs. Above 0: DaWinoBias F1 "
                      "higher on pro than anti; ABC coreference FPR higher for hans than "
                      "hendes; ABC LM relative perplexity higher for hendes than hans. "
                      "Undefined effect sizes (see the table's notes) are not drawn")
    if rel is not None:
        report.section("Mixed model of the ABC relative perplexity", (
            f"`{A.MIXED_MODEL_FORMULA}` on {len(rel)} anti-reflexive sentences: log_rel_ppl is "
            "the natural log of the relative perplexity; treatment coding with female as the "
            "reference level of both factors, so `pronoun_gendermale` is the difference hans - "
            "hendes for female-stereotyped occupations. sentence_frame is the sentence with the "
            "occupation and the pronoun abstracted."))
        if fit is not None:
            coefs = fit.coefs[["term", "estimate", "se", "ci_low", "ci_high", "stat", "df",
                               "p_value"]]
            report.model_table("mixed_model", {fit.backend: fit},
                               "Log relative perplexity of the anti-reflexive sentences",
                               data=coefs, statistic="ci",
                               variables={"pronoun_gender": "Pronoun gender",
                                          "occupation_stereotype": "Occupation stereotype"},
                               groups={"sentence_frame": "Sentence frames"},
                               notes=["Model: " + report.formula(
                                          "mixed_model", A.MIXED_MODEL_FORMULA,
                                          {"log_rel_ppl": "the log relative perplexity",
                                           "pronoun_gender": "the pronoun's gender",
                                           "occupation_stereotype": "the occupation's "
                                           "stereotype"},
                                          {"sentence_frame": "sentence frames"})
                                      + "; the log relative perplexity is the natural log of "
                                      "the relative perplexity."])
        report.figure("relative_perplexity", A.plot_relative_perplexity(rel),
                      "Relative perplexity of the anti-reflexive sentences (log2; 0 = as "
                      "likely as the reflexive twin)")

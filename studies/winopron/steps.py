"""The WinoPron study's steps, run by studies.pipeline (declared in run.py).

load templates -> instantiate with 4 pronoun sets (in memory) -> resolve
(a predictions file, or a language model by candidate substitution) ->
F1, consistency and pronominal-bias tables -> report.

Sentence texts never leave memory (the authors ask that the data not be
redistributed in plain text): outputs hold sentence ids, labels and metrics.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd

from studies.common import say
from studies.winopron import analysis as A
from studies.winopron import presentation as V
from studies.winopron.predictions import join_predictions, read_predictions
from studies.winopron.resolve import (PROBE, choose_candidates, lm_predictions,
                                      score_candidates, score_probes, scoring_method)
from studies.winopron.sentences import instantiate, limit_occupations, template_rows

DATASET = "winopron2024"
SUBSET_NAMES = {("new", "double"): "WinoPron, double-entity",
                ("new", "single"): "WinoPron, single-entity",
                ("old", "double"): "original Winogender templates"}
ID_COLUMNS = ["sentence_id", "template_set", "version", "case", "pronoun_set"]


def load_sentences(args, log) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Templates (one row each) and their sentences with all pronoun sets, in memory."""
    from gbstats.data.registry import load_dataset

    dataset = load_dataset(DATASET, args.data_dir)
    log.extend(dataset.exclusions)
    templates = limit_occupations(template_rows(dataset.tables), args.limit)
    return templates, instantiate(templates)


@dataclass(frozen=True)
class Resolution:
    """Who resolved the pronouns, and what they chose."""
    resolved: pd.DataFrame | None   # the sentences with a prediction; None: no resolver
    resolver: dict                  # what resolved them, for the report and provenance
    lm: Any = None                  # the LanguageModel, when one resolved them


def resolve(run, templates: pd.DataFrame, sentences: pd.DataFrame) -> Resolution:
    """Resolve every sentence with --predictions, or a language model, or nothing."""
    args, log = run.args, run.log
    if args.predictions:
        say(f"[2/4] reading predictions from {args.predictions}")
        predictions = read_predictions(args.predictions)
        resolved = join_predictions(sentences, predictions, source=args.predictions,
                                    allow_missing=args.allow_missing, exclusions=log)
        return Resolution(resolved, {"kind": "predictions file", "path": str(args.predictions)})
    if not run.wants_model:
        return Resolution(None, {"kind": "none"})
    lm = run.model()
    if args.lm_method == "probe":
        say(f"[2/4] scoring {2 * len(sentences)} probe statements with {args.model}")
        scores = score_probes(sentences, lm, **run.cache)
        choices = choose_candidates(scores, by="sentence_id")
        unit = "sentences"
    else:
        say(f"[2/4] scoring {2 * len(templates)} candidate substitutions with {args.model}")
        scores = score_candidates(templates, lm, **run.cache)
        choices = choose_candidates(scores)
        unit = "templates"
    n_ties = int((choices["prediction"] == "none").sum())
    if n_ties:
        log.record("exact log-likelihood ties between the two candidates: no choice, counted "
                   "as 'none' (a miss)", n_ties, unit=unit, stage="resolver")
    scoring = scoring_method(scores)
    return Resolution(lm_predictions(sentences, choices),
                      {"kind": "language model", "method": args.lm_method, "model": lm.name,
                       "id": lm.model_id, "revision": lm.revision, "scoring": scoring}, lm)


def write_ids_file(args, sentences: pd.DataFrame) -> None:
    path = Path(args.write_ids)
    path.parent.mkdir(parents=True, exist_ok=True)
    sentences[ID_COLUMNS].to_csv(path, sep="\t", index=False)
    say(f"wrote {len(sentences)} sentence ids to {path}")


def summary_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """One row per subset x grouping level, metrics as columns ('*' columns: below chance)."""
    rows = metrics[metrics["grouping"] != "case_pronoun"]
    wide = rows.pivot_table(index=["template_set", "version", "grouping", "level"],
                            columns="metric", values="value", aggfunc="first", sort=False)
    flags = rows.pivot_table(index=["template_set", "version", "grouping", "level"],
                             columns="metric", values="below_chance", aggfunc="first",
                             sort=False)
    wanted = [m for m in ("f1_macro", "f1_occupation", "f1_participant", "accuracy",
                          "pronoun_consistency", "disambiguation_consistency")
              if m in wide.columns]
    out = wide[wanted].copy()
    def is_below(idx, metric) -> bool:
        flag = flags.loc[idx].get(metric)
        return bool(flag) if pd.notna(flag) else False

    out["below_chance"] = [", ".join(m for m in wanted if is_below(idx, m)) for idx in out.index]
    return out.reset_index()


def load(run, _):
    say(f"[1/4] loading {DATASET} (decrypted in memory)")
    templates, sentences = load_sentences(run.args, run.log)
    return SimpleNamespace(templates=templates, sentences=sentences)


def write_ids(run) -> bool:
    """--write-ids: write the sentence ids a predictions file must use, instead of running."""
    if not run.args.write_ids:
        return False
    _, sentences = load_sentences(run.args, run.log)
    write_ids_file(run.args, sentences)
    return True


def score(run, s):
    args = run.args
    resolution = resolve(run, s.templates, s.sentences)
    s.resolved, s.resolver, lm = resolution.resolved, resolution.resolver, resolution.lm
    if args.predictions:
        run.add_data_files([args.predictions])
    run.add_provenance(resolver=s.resolver, limit_occupations=args.limit,
                       lm_method=args.lm_method if lm else None,
                       allow_missing=args.allow_missing)
    say("[3/4] computing metrics")
    return s


def report(run, report, s) -> None:
    write_design(report, run.args, s.resolver, s.sentences)
    counts = A.template_counts(s.sentences)
    report.table("template_counts", V.with_subset(counts),
                 "Templates, pairs and sentences by subset, case and pronoun set",
                 labels={**V.LABELS, "n_templates": "Templates", "n_pairs": "Pairs",
                         "n_sentences": "Sentences", "n_they_agreement_changed": "Agreement changed"},
                 groups="subset", record=counts,
                 notes=["Agreement changed: sentences where 'they was' became 'they were'."])
    if s.resolved is None:
        report.section("No resolver", "`--model none` without `--predictions`: only the "
                       "template counts are reported.")
    else:
        write_results(report, run, s.resolved)


def write_design(report, args, resolver: dict, sentences: pd.DataFrame) -> None:
    if resolver["kind"] == "language model" and resolver["method"] == "probe":
        how = (f"language model `{resolver['model']}` ({resolver['id']}, revision "
               f"{resolver['revision']}) with a pronoun-aware probe of our own (not the paper's "
               "method): each sentence, pronoun kept, is followed by the statement "
               f"`{PROBE.strip()}` for each candidate, and the statement with the higher "
               f"log-likelihood given the sentence ({resolver['scoring']}) wins.")
    elif resolver["kind"] == "language model":
        how = (f"language model `{resolver['model']}` ({resolver['id']}, revision "
               f"{resolver['revision']}) by candidate substitution: the pronoun is replaced by "
               "'the <occupation>' or 'the <participant>' ('the <noun>'s' for possessives) and "
               f"the sentence with the higher log-likelihood ({resolver['scoring']}) wins. The "
               "substituted sentences contain no pronoun, so this resolver answers the same for "
               "every pronoun set: its pronoun consistency equals its template accuracy, and a "
               "pair it solves with one pronoun it solves with all, so the pronominal bias "
               "method finds no positive or negative bias by construction. Differences between "
               "pronoun sets need a pronoun-aware resolver (`--lm-method probe` or "
               "`--predictions`).")
    elif resolver["kind"] == "predictions file":
        how = f"predictions from `{resolver['path']}`."
    else:
        how = "none."
    limit = (f" Quick run: first {args.limit} occupation(s) only." if args.limit else "")
    report.section("Design", (
        f"Data: `{DATASET}` (WinoPron, Gautam et al. 2024), decrypted in memory; sentence texts "
        "are not written anywhere (the authors ask that they not be redistributed in plain "
        "text). Pronoun sets: he/him/his, she/her/her, they/them/their, xe/xem/xyr. Singular "
        "*they* takes plural agreement: after nominative *they* the templates' 'was' becomes "
        f"'were' ({int(sentences['they_agreement_changed'].sum())} sentences, all in the "
        "original templates; the WinoPron templates never need it). The original templates "
        "have no single-entity versions, and they are the original Winogender baseline as "
        "published: he/she/they only (120 templates x 3 = 360 sentences); xe is evaluated on "
        f"WinoPron only, so pronoun consistency there needs 3 sets (chance 0.5^3).{limit}\n\n"
        f"Resolver: {how}\n\n"
        "Metrics: F1 per entity class (a 'none' prediction is a miss) and their mean "
        "(`f1_macro`); accuracy; pronoun consistency (a template counts only if solved with all "
        "4 pronoun sets; chance 0.5^4 = 0.0625); disambiguation consistency (both templates "
        "of a pair solved with the same pronoun set; chance 0.25). Chance for F1 is that of "
        "a resolver picking either entity with probability 1/2 (0.5 on balanced data). "
        "`below_chance` marks values under chance; `p_below_chance` is an exact one-sided "
        "binomial p-value that treats units as independent (a screen, not a test)."))


def write_results(report, run, resolved: pd.DataFrame) -> None:
    metrics = A.metrics_table(resolved)
    report.section("Results")
    summary = summary_table(metrics)
    report.table("summary", V.with_subset(summary).drop(columns=["below_chance", "grouping"]),
                 "Coreference metrics by subset: overall, by case and by pronoun set",
                 labels=V.LABELS, values=V.VALUES, groups="subset", decimals=3, record=summary,
                 notes=[f"N = {resolved['sentence_id'].nunique()} sentences in all; each "
                        "metric's own N is in results.json.",
                        "Level: overall, a case or a pronoun set. Counts, chance levels and "
                        "p-values of every value: table metrics of results.json; values below "
                        "their chance level: the next table."])
    below = A.below_chance_rows(metrics)
    report.section("Worse than chance", (
        "No metric is below its chance level." if below.empty else
        f"{len(below)} metric value(s) are below their chance level (table `below_chance`)."))
    if not below.empty:
        report.table("below_chance", V.with_subset(below), "Metric values below their chance "
                     "level", labels=V.LABELS, values=V.VALUES, groups="subset",
                     columns=["subset", "level", "metric", "value", "chance",
                              "p_below_chance", "n", "unit"], record=below,
                     p_columns=("p_below_chance",),
                     notes=["p (below chance): one-sided binomial test where one is defined; "
                            "N counts the unit named."])
    main = resolved[(resolved["template_set"] == "new") & (resolved["version"] == "double")]
    if not main.empty:
        grid = A.f1_by_case_and_pronoun(metrics)
        report.figure("f1_by_case_and_pronoun", A.plot_f1_by_case_and_pronoun(
            grid, "WinoPron double-entity: macro F1"),
            "Macro F1 on WinoPron double-entity sentences by case and pronoun set; dashed: "
            "chance (0.5)")
        bias = A.pronominal_bias(main)
        agreement = A.bias_agreement(bias)
        report.section("Pronominal bias (Gautam et al. 2024, §5)", (
            "A pair (occupation, participant, case) is capable when the resolver solves both "
            "templates with some pronoun set. With pronoun p, a capable pair resolved to the "
            "occupation twice is a positive bias of p toward the occupation; to the participant "
            "twice, a negative bias; otherwise no evidence."))
        report.table("bias_by_pronoun_and_case", A.bias_by_pronoun_case(bias),
                     "Positively and negatively biased occupations per pronoun set and case",
                     labels={**V.LABELS, "n_pairs": "Pairs", "n_capable": "Capable",
                             "n_positive": "Positive", "n_negative": "Negative",
                             "positive_occupations": "Positive occupations",
                             "negative_occupations": "Negative occupations"},
                     notes=["Capable: pairs the resolver solves with some pronoun set; positive "
                            "(negative): capable pairs resolved to the occupation (participant) "
                            "twice with this pronoun set."])
        report.table("bias_agreement_summary", A.agreement_summary(agreement),
                     "Do an occupation's biases agree across the three cases?",
                     labels={**V.LABELS, "n_agree": "Agree", "n_disagree": "Disagree",
                             "n_one_case_only": "One case only", "n_no_evidence": "No evidence"},
                     notes=[f"N = {agreement['occupation'].nunique()} occupations.",
                            "Agree: the same sign in two or more cases; disagree: both signs."])
        report.table("bias_agreement", agreement,
                     "Bias of each occupation per pronoun set in each case",
                     labels={**V.LABELS, "occupation": "Occupation", "participant": "Participant",
                             "nominative": "Nominative", "accusative": "Accusative",
                             "possessive": "Possessive", "agreement": "Agreement"},
                     notes=[f"N = {agreement['occupation'].nunique()} occupations."])
    report.record("metrics", metrics, "Every metric of every subset and grouping (value, "
                  "N and its unit, chance level, the test against chance, notes)")
    predictions = resolved[["sentence_id", "prediction"]
                           + [c for c in ("logprob_occupation", "logprob_participant")
                              if c in resolved.columns]]
    run.write_csv("predictions.tsv", predictions, sep="\t")

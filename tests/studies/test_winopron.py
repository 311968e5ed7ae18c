"""studies.winopron: sentences, predictions files, metrics on hand-built cases, end to end.

Reference values are derived by hand in the comments next to them; counts of
the real data come from the paper's design (60 occupation-participant pairs x
2 answers x 3 cases; 4 pronoun sets; 120 original Winogender templates).
Sentence texts are never written: tests that run the study check that no
output file contains one.
"""
from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gbstats.errors import DataValidationError, UnknownNameError
from gbstats.exclusions import ExclusionLog
from studies.winopron import analysis as A
from studies.winopron.predictions import join_predictions, read_predictions
from studies.winopron.resolve import choose_candidates, lm_predictions, probe_texts
from studies.winopron.run import main
from studies.winopron.sentences import (PRONOUN_SETS, candidate_text, instantiate,
                                        limit_occupations, place_at_slot, template_rows)

# ---------------------------------------------------------------------------
# Hand-built templates and resolved tables
# ---------------------------------------------------------------------------


def toy_templates() -> pd.DataFrame:
    """One WinoPron-like pair per case (invented sentences), answers 0 and 1."""
    rows = []
    texts = {
        ("nominative", "occupation"): "The $OCCUPATION told the $PARTICIPANT that $NOM_PRONOUN was done.",
        ("nominative", "participant"): "The $OCCUPATION told the $PARTICIPANT that $NOM_PRONOUN could pay.",
        ("accusative", "occupation"): "The $PARTICIPANT thanked the $OCCUPATION and paid $ACC_PRONOUN.",
        ("accusative", "participant"): "The $OCCUPATION called the $PARTICIPANT to remind $ACC_PRONOUN.",
        ("possessive", "occupation"): "The $PARTICIPANT borrowed the $OCCUPATION's pen from $POSS_PRONOUN desk.",
        ("possessive", "participant"): "The $OCCUPATION fixed the $PARTICIPANT's sink in $POSS_PRONOUN house.",
    }
    for (case, answer), text in texts.items():
        item = f"plumber.client.{case}.{0 if answer == 'occupation' else 1}"
        rows.append({"template_set": "new", "version": "double",
                     "template_id": f"new.double.{item}", "item": item,
                     "occupation": "plumber", "participant": "client", "case": case,
                     "answer_entity": answer, "template_text": text,
                     "pair": f"new.double.plumber.client.{case}"})
    return pd.DataFrame(rows)


def resolved_table(predictions: dict[tuple[str, str, str], str], *, case="nominative",
                   occupation="plumber", pronoun_sets=tuple(PRONOUN_SETS)) -> pd.DataFrame:
    """Rows for one pair: predictions[(answer_entity, pronoun_set)] -> prediction."""
    rows = []
    for answer in ("occupation", "participant"):
        template_id = f"new.double.{occupation}.client.{case}.{answer}"
        for name in pronoun_sets:
            rows.append({"sentence_id": f"{template_id}.{name}", "template_id": template_id,
                         "template_set": "new", "version": "double",
                         "pair": f"new.double.{occupation}.client.{case}",
                         "occupation": occupation, "participant": "client", "case": case,
                         "pronoun_set": name, "answer_entity": answer,
                         "prediction": predictions[(answer, name)]})
    return pd.DataFrame(rows)


def labels_table(gold: list[str], predicted: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"answer_entity": gold, "prediction": predicted})


def by_metric(rows: list[dict]) -> dict[str, dict]:
    return {r["metric"]: r for r in rows}


# ---------------------------------------------------------------------------
# Sentences
# ---------------------------------------------------------------------------


def test_instantiate_fills_case_forms_and_they_takes_plural_agreement():
    sentences = instantiate(toy_templates()).set_index("sentence_id")
    nominative = "new.double.plumber.client.nominative.0"
    assert sentences.loc[f"{nominative}.he", "text"] == "The plumber told the client that he was done."
    assert sentences.loc[f"{nominative}.they", "text"] == "The plumber told the client that they were done."
    assert sentences.loc[f"{nominative}.xe", "text"] == "The plumber told the client that xe was done."
    assert sentences.loc[f"{nominative}.they", "they_agreement_changed"]
    assert not sentences.loc[f"{nominative}.xe", "they_agreement_changed"]
    accusative = "new.double.plumber.client.accusative.1"
    assert sentences.loc[f"{accusative}.xe", "text"].endswith("to remind xem.")
    assert sentences.loc[f"{accusative}.they", "text"].endswith("to remind them.")
    possessive = "new.double.plumber.client.possessive.1"
    assert "in xyr house" in sentences.loc[f"{possessive}.xe", "text"]
    assert "in her house" in sentences.loc[f"{possessive}.she", "text"]
    # 6 templates x 4 pronoun sets, ids unique
    assert len(sentences) == 24 and sentences.index.is_unique


def test_candidate_substitution_is_case_appropriate():
    t = toy_templates().set_index("item")
    nominative = t.loc["plumber.client.nominative.0"]
    assert candidate_text(nominative["template_text"], "plumber", "client", "nominative",
                          "occupation") == "The plumber told the client that the plumber was done."
    accusative = t.loc["plumber.client.accusative.1"]
    assert candidate_text(accusative["template_text"], "plumber", "client", "accusative",
                          "participant") == "The plumber called the client to remind the client."
    possessive = t.loc["plumber.client.possessive.1"]
    assert candidate_text(possessive["template_text"], "plumber", "client", "possessive",
                          "occupation").endswith("in the plumber's house.")
    with pytest.raises(UnknownNameError, match="Did you mean 'occupation'"):
        candidate_text(possessive["template_text"], "plumber", "client", "possessive", "ocupation")


def test_pronoun_at_sentence_start_is_capitalised():
    assert place_at_slot("$NOM_PRONOUN left.", "$NOM_PRONOUN", "the plumber") == "The plumber left."
    assert place_at_slot("It rained. $NOM_PRONOUN left.", "$NOM_PRONOUN", "xe") == "It rained. Xe left."


def test_unknown_pronoun_set_is_named():
    with pytest.raises(UnknownNameError, match="Did you mean 'they'"):
        instantiate(toy_templates(), pronoun_sets=("he", "thy"))


def test_real_templates_make_the_papers_sentence_counts(data_dir):
    from gbstats.data.registry import load_dataset

    dataset = load_dataset("winopron2024", data_dir)
    sentences = instantiate(template_rows(dataset.tables))
    counts = sentences.groupby(["template_set", "version"]).size().to_dict()
    # 360 templates x 4 pronoun sets = 1,440 double-entity sentences (the issue and the paper),
    # as many single-entity ones; 120 old templates x he/she/they = 360 (the baseline).
    assert counts == {("new", "double"): 1440, ("new", "single"): 1440, ("old", "double"): 360}
    assert sentences["sentence_id"].is_unique
    new_double = sentences[(sentences["template_set"] == "new") & (sentences["version"] == "double")]
    # 60 pairs x 2 answers per case, for every pronoun set
    assert (new_double.groupby(["case", "pronoun_set"]).size() == 120).all()
    assert new_double["pair"].nunique() == 180  # 60 pairs x 3 cases
    # no slot is left unfilled, and the plural fix happens exactly where a template has
    # "$NOM_PRONOUN was" (counted here straight from the templates)
    assert not sentences["text"].str.contains(r"\$").any()
    old = dataset.tables["old_templates"]
    n_was = int(old["sentence"].str.contains(r"\$NOM_PRONOUN was\b").sum())
    they = sentences[sentences["pronoun_set"] == "they"]
    assert int(they["they_agreement_changed"].sum()) == n_was
    assert not they["text"].str.contains(r"\bthey was\b").any()
    # --limit keeps whole occupations: 1 occupation = 1 pair x 2 answers x 3 cases
    limited = limit_occupations(template_rows(dataset.tables), 1)
    assert len(limited[(limited["template_set"] == "new") & (limited["version"] == "double")]) == 6
    with pytest.raises(DataValidationError, match="at least 1"):
        limit_occupations(template_rows(dataset.tables), 0)


def test_original_winogender_baseline_is_360_he_she_they_sentences(data_dir):
    """Rudinger et al. (2018) and Gautam et al. (2024): 120 templates x 3 pronouns = 360."""
    from gbstats.data.registry import load_dataset

    sentences = instantiate(template_rows(load_dataset("winopron2024", data_dir).tables))
    old = sentences[sentences["template_set"] == "old"]
    assert len(old) == 120 * 3 == 360
    assert old["template_id"].nunique() == 120
    assert set(old["pronoun_set"]) == {"he", "she", "they"}
    assert not (old["pronoun_set"] == "xe").any()
    assert not old["sentence_id"].str.endswith(".xe").any()
    # WinoPron keeps all four sets, xe included
    new = sentences[sentences["template_set"] == "new"]
    assert (new["pronoun_set"] == "xe").sum() == 2 * 360


def test_pronoun_consistency_on_the_original_templates_needs_he_she_they():
    preds = {(a, p): a for a in ("occupation", "participant") for p in ("he", "she", "they")}
    table = resolved_table(preds, pronoun_sets=("he", "she", "they")).assign(template_set="old")
    row = A.pronoun_consistency(table)
    assert row["value"] == 1 and row["n"] == 2 and row["chance"] == 0.5 ** 3


def test_predictions_for_old_template_xe_are_counted_and_ignored():
    toy_sentences = instantiate(toy_templates())
    log = ExclusionLog()
    ids = list(toy_sentences["sentence_id"])
    predictions = pd.DataFrame({"sentence_id": ids + ["old.double.plumber.client.0.xe"],
                                "prediction": ["occupation"] * (len(ids) + 1),
                                "line": range(2, len(ids) + 3)})
    joined = join_predictions(toy_sentences, predictions, source="p.tsv", exclusions=log)
    assert len(joined) == len(toy_sentences)
    assert any(r["n"] == 1 and "xe" in r["reason"] for r in log.to_records())


# ---------------------------------------------------------------------------
# F1 and accuracy
# ---------------------------------------------------------------------------


def test_f1_perfect():
    m = by_metric(A.f1_scores(labels_table(["occupation", "participant"] * 2,
                                           ["occupation", "participant"] * 2)))
    assert m["f1_occupation"]["value"] == 1 and m["f1_participant"]["value"] == 1
    assert m["f1_macro"]["value"] == 1 and m["accuracy"]["value"] == 1


def test_f1_mixed_case_by_hand():
    # gold O O P P, predicted O P P none:
    # occupation TP 1, FP 0, FN 1 -> 2/(2+0+1) = 2/3
    # participant TP 1, FP 1 (gold O predicted P), FN 1 (predicted none) -> 2/(2+1+1) = 1/2
    m = by_metric(A.f1_scores(labels_table(["occupation", "occupation", "participant", "participant"],
                                           ["occupation", "participant", "participant", "none"])))
    assert m["f1_occupation"]["value"] == pytest.approx(2 / 3)
    assert m["f1_participant"]["value"] == pytest.approx(1 / 2)
    assert m["f1_macro"]["value"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert m["accuracy"]["value"] == pytest.approx(2 / 4)
    assert m["f1_macro"]["chance"] == pytest.approx(0.5)  # balanced gold


def test_all_wrong_is_zero_and_below_chance():
    rows = A.mark_chance(A.f1_scores(labels_table(["occupation", "participant"] * 3,
                                                  ["participant", "occupation"] * 3)))
    m = by_metric(rows)
    assert m["f1_occupation"]["value"] == 0 and m["f1_participant"]["value"] == 0
    assert m["accuracy"]["value"] == 0
    assert all(r["below_chance"] for r in rows)
    # P(X <= 0) for X ~ Binomial(6, 1/2) = 1/64
    assert m["accuracy"]["p_below_chance"] == pytest.approx(1 / 64)


def test_no_predictions_at_all_gives_zero_not_a_crash():
    # every prediction 'none': TP = FP = 0 and FN = 2 per class, F1 = 0/(0+0+2) = 0
    m = by_metric(A.f1_scores(labels_table(["occupation", "participant"] * 2, ["none"] * 4)))
    assert m["f1_occupation"]["value"] == 0 and m["f1_participant"]["value"] == 0
    assert m["accuracy"]["value"] == 0 and m["f1_macro"]["note"] == ""


def test_zero_division_gives_nan_with_an_explanation():
    # gold all occupation, predicted all occupation: for participant TP = FP = FN = 0, so
    # F1 = 0/0; the macro mean is then undefined too.
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing may leak out as a warning
        rows = A.mark_chance(A.f1_scores(labels_table(["occupation"] * 3, ["occupation"] * 3)))
    m = by_metric(rows)
    assert m["f1_occupation"]["value"] == 1
    assert math.isnan(m["f1_participant"]["value"])
    assert "TP + FP + FN = 0" in m["f1_participant"]["note"]
    assert math.isnan(m["f1_macro"]["value"])
    assert "f1_participant is undefined" in m["f1_macro"]["note"]
    assert m["f1_participant"]["below_chance"] is None  # undefined is not 'below chance'
    # chance F1 of a class with gold share 0 is 2*0/(2*0+1) = 0
    assert m["f1_participant"]["chance"] == 0


def test_empty_group_is_nan_with_a_note():
    rows = A.f1_scores(labels_table([], []))
    assert all(math.isnan(r["value"]) and r["note"] == "no sentences" for r in rows)


def test_f1_chance_for_unbalanced_gold():
    # share 1/4: TP = n/8, FP = 3n/8, FN = n/8 -> F1 = (n/4)/(n/4 + n/2) = 1/3
    assert A.f1_chance(0.25) == pytest.approx(1 / 3)
    assert A.f1_chance(0.5) == pytest.approx(0.5)


# ---------------------------------------------------------------------------
# Consistency
# ---------------------------------------------------------------------------


def test_pronoun_consistency_needs_all_four_sets():
    # the occupation template is solved with every set; the participant template fails with xe
    preds = {(a, p): a for a in ("occupation", "participant") for p in PRONOUN_SETS}
    preds[("participant", "xe")] = "occupation"
    row = A.pronoun_consistency(resolved_table(preds))
    assert row["value"] == 0.5 and row["n"] == 2 and row["successes"] == 1
    assert row["chance"] == 0.5 ** 4


def test_pronoun_consistency_with_a_missing_pronoun_set_is_an_error():
    preds = {(a, p): a for a in ("occupation", "participant") for p in PRONOUN_SETS}
    with pytest.raises(DataValidationError, match="lack some level"):
        A.pronoun_consistency(resolved_table(preds, pronoun_sets=("he", "she", "they")))


def test_disambiguation_consistency_by_hand():
    # he: both right; she: both occupation; they: both right; xe: both swapped.
    preds = {("occupation", "he"): "occupation", ("participant", "he"): "participant",
             ("occupation", "she"): "occupation", ("participant", "she"): "occupation",
             ("occupation", "they"): "occupation", ("participant", "they"): "participant",
             ("occupation", "xe"): "participant", ("participant", "xe"): "occupation"}
    row = A.disambiguation_consistency(resolved_table(preds))
    assert row["value"] == 2 / 4 and row["n"] == 4 and row["chance"] == 0.25


def test_disambiguation_consistency_split_pairs_are_noted_or_refused():
    preds = {(a, p): a for a in ("occupation", "participant") for p in PRONOUN_SETS}
    only_one_template = resolved_table(preds).query("answer_entity == 'occupation'")
    with pytest.raises(DataValidationError, match="lack some level"):
        A.disambiguation_consistency(only_one_template)
    row = A.disambiguation_consistency(only_one_template, split_pairs="note")
    assert math.isnan(row["value"]) and "1 pair(s) left out" in row["note"]


def test_p_below_chance_is_the_binomial_tail():
    # 0 of 12 at rate 1/4: 0.75**12
    assert A.p_below_chance(0, 12, 0.25) == pytest.approx(0.75 ** 12)
    assert math.isnan(A.p_below_chance(None, 12, 0.25))


def test_metrics_table_marks_below_chance_and_covers_every_grouping():
    # all predictions 'occupation' on two pairs: accuracy 1/2, disambiguation 0 (< 0.25)
    preds = {(a, p): "occupation" for a in ("occupation", "participant") for p in PRONOUN_SETS}
    table = A.metrics_table(pd.concat([resolved_table(preds),
                                       resolved_table(preds, occupation="baker")]))
    assert list(table.columns) == A.METRIC_COLUMNS
    assert set(table["grouping"]) == {"overall", "case", "pronoun_set", "case_pronoun"}
    overall = table[table["grouping"] == "overall"].set_index("metric")
    assert overall.loc["accuracy", "value"] == 0.5
    assert not overall.loc["accuracy", "below_chance"]  # equal to chance is not below it
    assert overall.loc["disambiguation_consistency", "value"] == 0
    assert overall.loc["disambiguation_consistency", "below_chance"]
    # occupation: TP 8, FP 8, FN 0 -> 16/24 = 2/3; participant: TP 0, FP 0, FN 8 -> 0
    assert overall.loc["f1_occupation", "value"] == pytest.approx(2 / 3)
    assert overall.loc["f1_participant", "value"] == 0
    assert set(A.below_chance_rows(table)["metric"]) >= {"disambiguation_consistency",
                                                         "f1_participant", "f1_macro"}


# ---------------------------------------------------------------------------
# Pronominal bias
# ---------------------------------------------------------------------------


def test_pronominal_bias_positive_negative_none_and_not_capable():
    capable = {("occupation", "he"): "occupation", ("participant", "he"): "participant",
               ("occupation", "she"): "occupation", ("participant", "she"): "occupation",
               ("occupation", "they"): "participant", ("participant", "they"): "participant",
               ("occupation", "xe"): "participant", ("participant", "xe"): "occupation"}
    # never both right with the same pronoun set -> not capable, whatever the pattern
    incapable = {("occupation", p): "occupation" for p in PRONOUN_SETS} | {
        ("participant", p): "occupation" for p in PRONOUN_SETS}
    table = pd.concat([resolved_table(capable),
                       resolved_table(incapable, occupation="baker")], ignore_index=True)
    bias = A.pronominal_bias(table).set_index(["occupation", "pronoun_set"])["bias"]
    assert bias[("plumber", "he")] == "none"  # solved: no evidence either way
    assert bias[("plumber", "she")] == "positive"
    assert bias[("plumber", "they")] == "negative"
    assert bias[("plumber", "xe")] == "none"  # both wrong, in opposite directions
    assert (bias.loc["baker"] == "not capable").all()
    summary = A.bias_by_pronoun_case(A.pronominal_bias(table)).set_index("pronoun_set")
    assert summary.loc["she", "positive_occupations"] == "plumber"
    assert summary.loc["they", "negative_occupations"] == "plumber"
    assert summary.loc["he", "n_capable"] == 1 and summary.loc["he", "n_pairs"] == 2


def test_pronominal_bias_needs_both_templates_of_a_pair():
    preds = {(a, p): a for a in ("occupation", "participant") for p in PRONOUN_SETS}
    with pytest.raises(DataValidationError, match="one template per answer"):
        A.pronominal_bias(resolved_table(preds).query("answer_entity == 'participant'"))


@pytest.mark.parametrize("labels, expected", [
    (("positive", "positive", "none"), "agree"),
    (("negative", "negative", "negative"), "agree"),
    (("positive", "negative", "none"), "disagree"),
    (("positive", "none", "not capable"), "one case only"),
    (("none", "not capable", "none"), "no evidence"),
])
def test_agreement_across_cases(labels, expected):
    assert A.agreement_across_cases(labels) == expected


def test_bias_agreement_table_across_cases():
    positive_she = {(a, p): a for a in ("occupation", "participant") for p in PRONOUN_SETS}
    positive_she |= {("occupation", "she"): "occupation", ("participant", "she"): "occupation"}
    negative_she = dict(positive_she) | {("occupation", "she"): "participant",
                                         ("participant", "she"): "participant"}
    table = pd.concat([resolved_table(positive_she, case="nominative"),
                       resolved_table(positive_she, case="accusative"),
                       resolved_table(negative_she, case="possessive")], ignore_index=True)
    agreement = A.bias_agreement(A.pronominal_bias(table)).set_index("pronoun_set")
    assert agreement.loc["she", "agreement"] == "disagree"
    assert agreement.loc["he", "agreement"] == "no evidence"
    summary = A.agreement_summary(agreement.reset_index()).set_index("pronoun_set")
    assert summary.loc["she", "n_disagree"] == 1 and summary.loc["he", "n_no_evidence"] == 1


# ---------------------------------------------------------------------------
# Language-model resolver: choosing between candidates
# ---------------------------------------------------------------------------


def test_choose_candidates_picks_the_higher_loglik_and_ties_give_none():
    scores = pd.DataFrame({"template_id": ["a", "a", "b", "b", "c", "c"],
                           "candidate": ["occupation", "participant"] * 3,
                           "logprob": [-10.0, -12.0, -15.0, -11.0, -9.0, -9.0]})
    chosen = choose_candidates(scores).set_index("template_id")["prediction"]
    assert chosen.to_dict() == {"a": "occupation", "b": "participant", "c": "none"}


def test_lm_choice_is_broadcast_to_every_pronoun_set():
    sentences = instantiate(toy_templates())
    choices = pd.DataFrame({"template_id": toy_templates()["template_id"],
                            "prediction": ["occupation"] * 6})
    out = lm_predictions(sentences, choices)
    assert len(out) == len(sentences) == 24 and (out["prediction"] == "occupation").all()


def test_probe_keeps_the_pronoun_and_names_each_candidate():
    sentences = instantiate(toy_templates())
    probes = probe_texts(sentences)
    assert len(probes) == 2 * len(sentences)
    row = probes[(probes["sentence_id"] == "new.double.plumber.client.accusative.1.xe")
                 & (probes["candidate"] == "participant")].iloc[0]
    assert row["prefix"].endswith("to remind xem.")
    assert row["continuation"] == ' In this sentence, "xem" refers to the client.'


def test_sentence_level_choices_are_joined_per_sentence():
    sentences = instantiate(toy_templates())
    choices = pd.DataFrame({"sentence_id": sentences["sentence_id"],
                            "prediction": np.where(sentences["pronoun_set"] == "xe",
                                                   "participant", "occupation")})
    out = lm_predictions(sentences, choices)
    assert (out.loc[out["pronoun_set"] == "xe", "prediction"] == "participant").all()
    assert (out.loc[out["pronoun_set"] != "xe", "prediction"] == "occupation").all()


@pytest.fixture(scope="module")
def tiny_lms(tmp_path_factory):
    from models.loading import load_scorer

    import tiny_models as tiny

    bert = tiny.build_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))
    gpt2 = tiny.build_tiny_gpt2(tmp_path_factory.mktemp("tiny_gpt2"), bert)
    return {"masked": load_scorer(str(bert)), "causal": load_scorer(str(gpt2))}


@pytest.mark.parametrize("kind", ["masked", "causal"])
def test_both_lm_methods_run_on_masked_and_causal_models(kind, tiny_lms, tmp_path):
    """Plumbing with real (tiny, random) transformers models: the right scorer per kind,
    finite scores, and the choice is the higher score (no trained model needed for that)."""
    from models.causal import score_sentences
    from models.masked import pll_sentences
    from studies.winopron.resolve import score_candidates, score_probes
    from studies.winopron.sentences import candidate_texts

    lm, templates = tiny_lms[kind], toy_templates()
    scores = score_candidates(templates, lm, cache_dir=tmp_path)
    assert set(scores["scoring"]) == {"pll_word_l2r" if kind == "masked" else "causal"}
    assert len(scores) == 12 and np.isfinite(scores["logprob"]).all()
    # the logprob of each row belongs to that row's own candidate text
    texts = candidate_texts(templates)
    direct = (pll_sentences(texts["text"].tolist(), lm=lm, variant="pll_word_l2r", use_cache=False)
              if kind == "masked" else score_sentences(texts["text"].tolist(), lm=lm,
                                                       use_cache=False))
    np.testing.assert_allclose(scores["logprob"], direct["logprob"], rtol=1e-5)
    chosen = choose_candidates(scores).set_index("template_id")
    wide = scores.pivot(index="template_id", columns="candidate", values="logprob")
    expected = np.where(wide["occupation"] > wide["participant"], "occupation", "participant")
    assert (chosen.loc[wide.index, "prediction"].to_numpy() == expected).all()
    probes = score_probes(instantiate(templates).head(4), lm, cache_dir=tmp_path)
    assert len(probes) == 8 and np.isfinite(probes["logprob"]).all()


# ---------------------------------------------------------------------------
# Predictions files
# ---------------------------------------------------------------------------


@pytest.fixture()
def toy_sentences():
    return instantiate(toy_templates())


def write_tsv(path: Path, rows: list[tuple[str, str]], header="sentence_id\tprediction") -> Path:
    path.write_text(header + "\n" + "".join(f"{i}\t{p}\n" for i, p in rows))
    return path


def gold_rows(sentences: pd.DataFrame) -> list[tuple[str, str]]:
    return list(zip(sentences["sentence_id"], sentences["answer_entity"]))


def test_tsv_and_jsonl_predictions_read_the_same(tmp_path, toy_sentences):
    rows = gold_rows(toy_sentences)
    tsv = read_predictions(write_tsv(tmp_path / "p.tsv", rows))
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text("".join(json.dumps({"sentence_id": i, "prediction": p.upper()}) + "\n\n"
                             for i, p in rows))
    from_json = read_predictions(jsonl)
    pd.testing.assert_frame_equal(tsv[["sentence_id", "prediction"]],
                                  from_json[["sentence_id", "prediction"]])
    joined = join_predictions(toy_sentences, tsv, source="p.tsv")
    assert (joined["prediction"] == joined["answer_entity"]).all()


def test_id_column_may_be_called_id(tmp_path, toy_sentences):
    path = write_tsv(tmp_path / "p.tsv", gold_rows(toy_sentences), header="id\tprediction")
    assert len(read_predictions(path)) == 24


def test_unknown_label_names_row_and_column(tmp_path, toy_sentences):
    rows = gold_rows(toy_sentences)
    rows[2] = (rows[2][0], "the plumber")
    with pytest.raises(DataValidationError) as err:
        read_predictions(write_tsv(tmp_path / "p.tsv", rows))
    message = str(err.value)
    assert "row 4" in message and "'prediction'" in message and "'the plumber'" in message
    assert "'occupation', 'participant', 'none'" in message


def test_unknown_label_in_jsonl_names_the_line(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"sentence_id": "a", "prediction": "none"}\n\n'
                    '{"sentence_id": "b", "prediction": "plumber"}\n')
    with pytest.raises(DataValidationError, match="row 3"):
        read_predictions(path)


def test_duplicate_prediction_is_an_error(tmp_path, toy_sentences):
    rows = gold_rows(toy_sentences)
    with pytest.raises(DataValidationError, match="duplicated prediction"):
        read_predictions(write_tsv(tmp_path / "p.tsv", rows + [rows[0]]))


def test_malformed_jsonl_names_the_line(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"sentence_id": "a", "prediction": "none"}\n{"sentence_id": "b", \n')
    with pytest.raises(DataValidationError, match="row 2.*not valid JSON"):
        read_predictions(path)


def test_missing_column_and_unknown_file_type(tmp_path):
    with pytest.raises(DataValidationError, match="missing column.*'prediction'"):
        read_predictions(write_tsv(tmp_path / "p.tsv", [("a", "none")], header="sentence_id\tlabel"))
    (tmp_path / "p.csv").write_text("sentence_id,prediction\na,none\n")
    with pytest.raises(DataValidationError, match="unknown predictions file type"):
        read_predictions(tmp_path / "p.csv")
    with pytest.raises(DataValidationError, match="file not found"):
        read_predictions(tmp_path / "nope.jsonl")


def test_unknown_sentence_id_suggests_the_close_one(tmp_path, toy_sentences):
    rows = gold_rows(toy_sentences)
    typo = rows[0][0].replace(".he", ".hee")
    path = write_tsv(tmp_path / "p.tsv", rows[1:] + [(typo, "none")])
    with pytest.raises(DataValidationError) as err:
        join_predictions(toy_sentences, read_predictions(path), source=str(path))
    assert "1 unknown sentence id" in str(err.value) and f"did you mean {rows[0][0]!r}" in str(err.value)
    assert "row 25" in str(err.value)


def test_missing_predictions_are_an_error_unless_allowed(tmp_path, toy_sentences):
    rows = gold_rows(toy_sentences)
    path = write_tsv(tmp_path / "p.tsv", rows[:-2])
    with pytest.raises(DataValidationError, match="2 of 24 new templates, double-entity"):
        join_predictions(toy_sentences, read_predictions(path), source=str(path))
    log = ExclusionLog()
    joined = join_predictions(toy_sentences, read_predictions(path), source=str(path),
                              allow_missing=True, exclusions=log)
    assert (joined["prediction"] == "none").sum() == 2
    assert log.to_frame()["n"].tolist() == [2]


def test_a_subset_without_predictions_is_skipped_and_logged(tmp_path, toy_sentences):
    single = toy_sentences.assign(version="single",
                                  sentence_id=toy_sentences["sentence_id"].str.replace(
                                      "new.double", "new.single"))
    both = pd.concat([toy_sentences, single], ignore_index=True)
    path = write_tsv(tmp_path / "p.tsv", gold_rows(toy_sentences))
    log = ExclusionLog()
    joined = join_predictions(both, read_predictions(path), source=str(path), exclusions=log)
    assert set(joined["version"]) == {"double"}
    frame = log.to_frame()
    assert frame["n"].tolist() == [24] and "single-entity: no predictions" in frame["reason"][0]


# ---------------------------------------------------------------------------
# The study, end to end
# ---------------------------------------------------------------------------


def load_real_sentences(data_dir) -> pd.DataFrame:
    from gbstats.data.registry import load_dataset

    return instantiate(template_rows(load_dataset("winopron2024", data_dir).tables))


def assert_no_sentence_text_written(out: Path, sentences: pd.DataFrame) -> None:
    written = "\n".join(p.read_text(errors="ignore") for p in out.rglob("*")
                        if p.is_file() and p.suffix in {".md", ".json", ".tex", ".tsv", ".csv"})
    leaked = [t for t in sentences["text"] if t in written]
    assert not leaked, f"{len(leaked)} sentence text(s) written to {out}"


def test_model_none_reports_template_counts(tmp_path, data_dir):
    out = tmp_path / "report"
    assert main(["--model", "none", "--out", str(out), "--data-dir", str(data_dir)]) == 0
    results = json.loads((out / "results.json").read_text())
    counts = pd.DataFrame(results["tables"]["template_counts"])
    new_double = counts.query("template_set == 'new' and version == 'double'")
    assert (new_double["n_sentences"] == 120).all() and len(new_double) == 12
    assert counts.groupby("template_set")["n_templates"].sum().to_dict() == {
        "new": 2 * 360 * 4, "old": 120 * 3}  # templates counted once per pronoun set
    assert "metrics" not in results["tables"]


def test_predictions_file_end_to_end_with_hand_derived_metrics(tmp_path, data_dir):
    ids = tmp_path / "ids.tsv"
    assert main(["--write-ids", str(ids), "--data-dir", str(data_dir)]) == 0
    id_table = pd.read_csv(ids, sep="\t")
    assert len(id_table) == 1440 + 1440 + 360
    assert not {"text", "template_text"} & set(id_table.columns)

    # A constructed system: right with he, always the occupation with she, always the
    # participant with they, always wrong with xe; it skips the single-entity sentences.
    sentences = load_real_sentences(data_dir)
    swap = {"occupation": "participant", "participant": "occupation"}
    predicted = {"he": lambda gold: gold, "she": lambda gold: "occupation",
                 "they": lambda gold: "participant", "xe": lambda gold: swap[gold]}
    rows = [{"id": s.sentence_id, "prediction": predicted[s.pronoun_set](s.answer_entity)}
            for s in sentences.itertuples() if s.version == "double"]
    path = tmp_path / "system.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "report"
    assert main(["--predictions", str(path), "--out", str(out), "--data-dir", str(data_dir)]) == 0
    results = json.loads((out / "results.json").read_text())
    metrics = pd.DataFrame(results["tables"]["metrics"])
    new = metrics.query("template_set == 'new' and version == 'double'")
    overall = new[new["grouping"] == "overall"].set_index("metric")["value"]
    # he: 1440/4 sentences all right; she: half right; they: half right; xe: none right
    assert overall["accuracy"] == pytest.approx((360 + 180 + 180 + 0) / 1440)
    # every template fails with xe
    assert overall["pronoun_consistency"] == 0
    # only the he units are solved: 180 pairs of 720 pair x pronoun units
    assert overall["disambiguation_consistency"] == pytest.approx(180 / 720)
    by_pronoun = new[new["grouping"] == "pronoun_set"].set_index(["level", "metric"])["value"]
    assert by_pronoun[("he", "f1_macro")] == 1 and by_pronoun[("xe", "f1_macro")] == 0
    # she: occupation TP 180, FP 180, FN 0 -> 2/3; participant 0 -> macro 1/3
    assert by_pronoun[("she", "f1_macro")] == pytest.approx(1 / 3)
    below = new[new["below_chance"] == True]  # noqa: E712 (JSON booleans)
    assert {"pronoun_consistency"} <= set(below["metric"])
    assert set(metrics["template_set"] + "." + metrics["version"]) == {"new.double", "old.double"}
    # The original Winogender baseline: 360 he/she/they sentences. he: 120 right; she and
    # they: half right each -> accuracy 240/360. Per class (180 gold each): occupation
    # TP 60 + 60, FP 60 (she on participant templates), FN 60 (they) -> 240/360 = 2/3, and
    # participant likewise, so macro F1 = 2/3. With xe (always wrong) it would be 1/2.
    old = metrics.query("template_set == 'old' and grouping == 'overall'").set_index("metric")
    assert old.loc["accuracy", "n"] == 360
    assert old.loc["accuracy", "value"] == pytest.approx(240 / 360)
    assert old.loc["f1_macro", "value"] == pytest.approx(2 / 3)
    assert old.loc["pronoun_consistency", "chance"] == 0.5 ** 3

    # the bias method: every pair is capable (solved with he); she is a positive bias toward
    # every occupation in every case, they a negative one, he and xe give no evidence
    bias = pd.DataFrame(results["tables"]["bias_by_pronoun_and_case"]).set_index(
        ["pronoun_set", "case"])
    assert (bias["n_capable"] == 60).all()
    assert (bias.xs("she")["n_positive"] == 60).all() and (bias.xs("she")["n_negative"] == 0).all()
    assert (bias.xs("they")["n_negative"] == 60).all()
    assert (bias.xs("he")[["n_positive", "n_negative"]] == 0).all().all()
    agreement = pd.DataFrame(results["tables"]["bias_agreement_summary"]).set_index("pronoun_set")
    assert agreement.loc["she", "n_agree"] == 60 and agreement.loc["xe", "n_no_evidence"] == 60
    exclusions = pd.DataFrame(results["exclusions"])
    assert (exclusions["n"] == 1440).any()  # the single-entity subset, not evaluated
    assert (out / "figures" / "f1_by_case_and_pronoun.png").exists()
    assert_no_sentence_text_written(out, sentences)


def test_bad_predictions_file_is_one_clean_error_line(tmp_path, data_dir, capsys):
    path = tmp_path / "system.tsv"
    path.write_text("sentence_id\tprediction\nnew.double.nobody.nowhere.nominative.0.he\tnone\n")
    assert main(["--predictions", str(path), "--out", str(tmp_path / "r"),
                 "--data-dir", str(data_dir)]) == 2
    err = capsys.readouterr().err
    assert "studies.winopron: error:" in err and "unknown sentence id" in err


@pytest.mark.needs_model
@pytest.mark.slow
def test_language_model_resolver_end_to_end(tmp_path, data_dir):
    out = tmp_path / "report"
    assert main(["--limit", "1", "--out", str(out), "--data-dir", str(data_dir),
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    results = json.loads((out / "results.json").read_text())
    assert {"template_counts", "metrics", "summary", "bias_by_pronoun_and_case",
            "bias_agreement"} <= set(results["tables"])
    assert results["provenance"]["extra"]["resolver"]["kind"] == "language model"
    assert results["provenance"]["models"][0]["id"].endswith(".gguf")
    predictions = pd.read_csv(out / "predictions.tsv", sep="\t")
    assert list(predictions.columns) == ["sentence_id", "prediction", "logprob_occupation",
                                         "logprob_participant"]
    # 1 occupation: 6 new templates x 2 versions x 4 pronoun sets, and its old templates
    # x he/she/they only (the original Winogender baseline)
    is_old = predictions["sentence_id"].str.startswith("old.")
    assert (~is_old).sum() == 48 and is_old.sum() % 3 == 0 and is_old.sum() > 0
    assert not predictions.loc[is_old, "sentence_id"].str.endswith(".xe").any()
    assert np.isfinite(predictions[["logprob_occupation", "logprob_participant"]]).all().all()
    higher = np.where(predictions["logprob_occupation"] > predictions["logprob_participant"],
                      "occupation", "participant")
    assert (predictions["prediction"] == higher).all()
    # the substitution removes the pronoun: one answer per template, whatever the pronoun
    template = predictions["sentence_id"].str.rsplit(".", n=1).str[0]
    assert (predictions.groupby(template)["prediction"].nunique() == 1).all()
    # the written predictions are a valid predictions file and reproduce the metrics
    again = tmp_path / "again"
    assert main(["--predictions", str(out / "predictions.tsv"), "--limit", "1", "--out",
                 str(again), "--data-dir", str(data_dir)]) == 0
    metrics = pd.DataFrame(results["tables"]["metrics"])
    metrics_again = pd.DataFrame(json.loads((again / "results.json").read_text())["tables"]["metrics"])
    pd.testing.assert_series_equal(metrics["value"], metrics_again["value"])
    sentences = load_real_sentences(data_dir)
    assert_no_sentence_text_written(out, sentences)

    # the pronoun-aware probe: one choice per sentence, the higher-likelihood statement
    probe = tmp_path / "probe"
    assert main(["--limit", "1", "--lm-method", "probe", "--out", str(probe), "--data-dir",
                 str(data_dir), "--cache-dir", str(tmp_path / "cache")]) == 0
    by_sentence = pd.read_csv(probe / "predictions.tsv", sep="\t")
    assert by_sentence["sentence_id"].tolist() == predictions["sentence_id"].tolist()
    higher = np.where(by_sentence["logprob_occupation"] > by_sentence["logprob_participant"],
                      "occupation", "participant")
    assert (by_sentence["prediction"] == higher).all()
    assert json.loads((probe / "results.json").read_text())["provenance"]["extra"][
        "resolver"]["method"] == "probe"
    assert_no_sentence_text_written(probe, sentences)

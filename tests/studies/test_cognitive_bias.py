"""studies.cognitive_bias: the analysis functions on hand-built tables, the human
accuracies against the authors' published table, lme4 against an R script, and
the command end to end (without and with the language model)."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gbstats.errors import DataValidationError
from gbstats.exclusions import ExclusionLog
from studies.cognitive_bias import analysis as A
from studies.cognitive_bias import lm_coreference as LM
from studies.cognitive_bias import maze as M
from studies.cognitive_bias import systems as S
from studies.cognitive_bias.published import PUBLISHED_HUMANS, PUBLISHED_SYSTEMS
from studies.cognitive_bias.run import main

REFERENCE_R = (Path(__file__).resolve().parents[1] / "reference"
               / "cognitive_bias_glmm_reference.R")


def qa_rows(spec):
    """QA trials from (dataset, alpha, condition, is_correct, non_coreference) tuples."""
    rows = []
    for i, (dataset, alpha, condition, correct, nonco) in enumerate(spec):
        rows.append({"dataset": dataset, "participant": f"p{i % 2}", "sentence_id": i,
                     "alpha": alpha, "condition": condition, "is_correct": correct,
                     "non_coreference": nonco})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- QA tables

def test_fillers_and_neutral_items_are_counted_and_left_out():
    qa = qa_rows([("wino", 0.25, "pro", True, False), ("wino", 0.25, "filler", True, False),
                  ("wino", 0.5, "neutral", False, False), ("BUG", 0.5, "filler", False, False),
                  ("BUG", 0.5, "anti", True, False)])
    log = ExclusionLog()
    out = A.critical_trials(qa, log)
    assert list(out["condition"]) == ["pro", "anti"]
    counts = {r["reason"]: r["n"] for r in log.to_records()}
    assert counts == {"wino QA: filler question (not a coreference item)": 1,
                      "wino QA: neutral item (no stereotype condition)": 1,
                      "BUG QA: filler question (not a coreference item)": 1,
                      "BUG QA: neutral item (no stereotype condition)": 0}


def test_accuracy_ignores_non_coreference_answers_only_where_asked():
    # wino alpha 0.25 pro: 2 correct, 1 wrong (unknown), 1 non-coreference -> 2/3, 1 ignored.
    # BUG alpha 0.25 anti: 1 correct, 1 non-coreference (kept in BUG by default) -> 1/2.
    qa = qa_rows([("wino", 0.25, "pro", True, False), ("wino", 0.25, "pro", True, False),
                  ("wino", 0.25, "pro", False, False), ("wino", 0.25, "pro", False, True),
                  ("BUG", 0.25, "anti", True, False), ("BUG", 0.25, "anti", False, True)])
    trials = A.mark_ignored(qa)
    acc = A.human_accuracy(trials).set_index(["dataset", "condition"])
    assert acc.loc[("wino", "pro"), ["n_correct", "n_total", "n_ignored"]].tolist() == [2, 3, 1]
    assert acc.loc[("wino", "pro"), "accuracy"] == pytest.approx(2 / 3)
    assert acc.loc[("BUG", "anti"), ["n_correct", "n_total", "n_ignored"]].tolist() == [1, 2, 0]

    both = A.human_accuracy(A.mark_ignored(qa, ("wino", "BUG"))).set_index(["dataset", "condition"])
    assert both.loc[("BUG", "anti"), ["n_correct", "n_total", "n_ignored"]].tolist() == [1, 1, 1]

    log = ExclusionLog()
    kept = A.drop_ignored(trials, log)
    assert len(kept) == 5 and sum(r["n"] for r in log.to_records()) == 1


def test_unknown_dataset_for_ignoring_is_an_error():
    with pytest.raises(Exception, match="unknown dataset"):
        A.mark_ignored(qa_rows([("wino", 0.25, "pro", True, False)]), ("winobias",))


def test_qa_delta_is_pro_minus_anti_per_alpha_and_system():
    acc = pd.DataFrame([
        ("wino", "human", 0.25, "pro", 8, 10, 0.8, 0),
        ("wino", "human", 0.25, "anti", 6, 10, 0.6, 0),
        ("wino", "s2e", np.nan, "pro", 9, 10, 0.9, 0),
        ("wino", "s2e", np.nan, "anti", 3, 4, 0.75, 0),
    ], columns=A.ACCURACY_COLUMNS)
    delta = A.qa_delta(acc)
    assert list(delta["source"]) == ["human", "s2e"]
    assert delta["delta"].tolist() == pytest.approx([0.2, 0.15])
    assert np.isnan(delta["alpha"].iloc[1]) and delta["n_anti"].tolist() == [10, 4]


def test_system_rows_restricted_to_sentences_people_saw_and_conditions_checked():
    links = pd.DataFrame({"model": "s2e", "dataset": "wino", "sentence_id": [1, 2, 3],
                          "condition": ["pro", "anti", "pro"],
                          "correct": [True, False, True]})
    seen = pd.DataFrame({"dataset": "wino", "sentence_id": [1, 2], "condition": ["pro", "anti"]})
    log = ExclusionLog()
    kept = A.on_human_sentences(links, seen, log)
    assert kept["sentence_id"].tolist() == [1, 2]
    assert [r["n"] for r in log.to_records()] == [1]
    acc = A.system_accuracy(kept).set_index("condition")
    assert acc.loc["pro", "accuracy"] == 1.0 and acc.loc["anti", "accuracy"] == 0.0

    with pytest.raises(DataValidationError, match="disagree"):
        A.on_human_sentences(links, seen.assign(condition=["anti", "anti"]), ExclusionLog())


# --------------------------------------------------------------------------- human scale

@pytest.mark.parametrize("target, expected, where", [
    (0.7, 0.375, "within"),     # halfway between 0.6 (alpha .25) and 0.8 (alpha .5)
    (0.85, 0.625, "within"),    # halfway between 0.8 (alpha .5) and 0.9 (alpha .75)
    (0.6, 0.25, "within"),
    (0.5, np.nan, "below"),
    (0.95, np.nan, "above"),
])
def test_interpolated_alpha(target, expected, where):
    alpha, position = A.interpolated_alpha([0.75, 0.25, 0.5], [0.9, 0.6, 0.8], target)
    assert position == where
    assert alpha == pytest.approx(expected, nan_ok=True)


def test_interpolated_alpha_takes_the_first_crossing_of_a_non_monotone_curve():
    # 0.7 -> 0.9 -> 0.8: 0.85 is crossed first at 0.25 + (0.85-0.7)/(0.9-0.7) * 0.25
    # = 0.4375, and again at 0.5 + (0.9-0.85)/(0.9-0.8) * 0.25 = 0.625.
    alpha, _ = A.interpolated_alpha([0.25, 0.5, 0.75], [0.7, 0.9, 0.8], 0.85)
    assert alpha == pytest.approx(0.4375)


def test_prob_effect_grows_under_pressure_counts_negative_interactions():
    assert A.prob_effect_grows_under_pressure(np.array([-1.0, -0.5, 0.2, 0.3])) == 0.5


def test_glmm_rows_coding():
    trials = qa_rows([("wino", 0.25, "pro", True, False), ("wino", 0.75, "anti", False, False)])
    rows = A.glmm_rows(trials)
    assert list(rows["stereotype"].cat.categories) == ["anti", "pro"]
    assert rows["correct"].tolist() == [1, 0] and rows["alpha"].tolist() == [0.25, 0.75]
    factor = A.alpha_as_factor(rows)
    assert list(factor["alpha"].cat.categories) == ["0.75", "0.5", "0.25"]
    assert factor["alpha"].astype(str).tolist() == ["0.25", "0.75"]


# --------------------------------------------------------------------------- MAZE

def test_iqr_rule():
    # Q1 = 2, Q3 = 4 (linear percentiles of 1..5 with 100 replacing 5: 1,2,3,4,100),
    # IQR = 2, fences -1 and 7: only 100 is out.
    times = pd.Series([1.0, 2.0, 3.0, 4.0, 100.0])
    assert M.iqr_outliers(times).tolist() == [False, False, False, False, True]


def test_outliers_per_dataset_and_condition_are_counted():
    maze = pd.DataFrame({"dataset": "wino", "condition": ["pro"] * 5 + ["anti"] * 5,
                         "time_to_answer": [1, 2, 3, 4, 100, 10, 20, 30, 40, 50.0]})
    log = ExclusionLog()
    kept, shares = M.remove_outliers(maze, log)
    assert len(kept) == 9
    assert shares.set_index("condition")["n_outliers"].to_dict() == {"pro": 1, "anti": 0}
    assert [r["n"] for r in log.to_records()] == [1, 0]


def test_maze_delta_is_anti_minus_pro_quantile():
    pro = np.arange(1, 101, dtype=float)
    maze = pd.DataFrame({"dataset": "BUG", "condition": ["pro"] * 100 + ["anti"] * 100,
                         "time_to_answer": np.concatenate([pro, pro + 5])})
    delta = M.maze_delta(maze, grid=np.array([0.1, 0.5, 0.9]))
    # inverted_cdf of 1..100 at p is the ceil(100 p)-th value: 10, 50, 90
    assert delta["quantile_pro"].tolist() == [10, 50, 90]
    assert delta["delta"].tolist() == [5, 5, 5]


# --------------------------------------------------------------------------- LM coreference

@pytest.mark.parametrize("sentence, pronoun, form, expected", [
    ("The sheriff questioned the housekeeper as she needed to find out the thief.", "she", None,
     "The sheriff questioned the housekeeper as the nurse needed to find out the thief."),
    ("She left early.", "she", None, "The nurse left early."),
    ("The CEO paid for his goods.", "his", None, "The CEO paid for the nurse's goods."),
    ("The clerk smiled at her.", "her", None, "The clerk smiled at the nurse."),
    ("The clerk told her someone called.", "her", "object",
     "The clerk told the nurse someone called."),
    ("The clerk took her coat.", "her", None, "The clerk took the nurse's coat."),
    ("The clerk cheated her out of her money.", "her", None,
     "The clerk cheated the nurse out of the nurse's money."),
])
def test_substitute_pronoun(sentence, pronoun, form, expected):
    assert LM.substitute_pronoun(sentence, pronoun, "nurse", form) == expected


def test_substitute_someone_takes_no_article_and_missing_pronoun_raises():
    assert LM.substitute_pronoun("I saw him.", "him", "Someone") == "I saw someone."
    with pytest.raises(DataValidationError, match="pronoun not found"):
        LM.substitute_pronoun("Nobody here.", "she", "nurse")


def test_her_forms_come_from_the_masculine_twin():
    pool = pd.DataFrame({"sentence_id": [1, 2, 3, 4],
                         "sentence": ["A told her that.", "A told him that.",
                                      "A took her coat.", "A took his coat."],
                         "pronoun": ["her", "him", "her", "his"]})
    assert LM.her_forms(pool).to_dict() == {1: "object", 3: "possessive"}


def test_resolve_counts_ties_as_not_correct():
    scored = pd.DataFrame({"model": "m", "dataset": "wino", "sentence_id": [1, 1, 2, 2, 3, 3],
                           "condition": "pro",
                           "candidate": ["referent", "other"] * 3,
                           "logprob": [-1.0, -2.0, -3.0, -2.0, -4.0, -4.0]})
    resolved = LM.resolve(scored).set_index("sentence_id")
    assert resolved["resolved_correct"].to_dict() == {1: True, 2: False, 3: False}


def test_select_sentences_balances_conditions():
    sentences = pd.DataFrame({"dataset": "wino", "sentence_id": range(10),
                              "condition": ["pro", "anti"] * 5})
    chosen = LM.select_sentences(sentences, 5)
    assert chosen["condition"].value_counts().to_dict() == {"pro": 3, "anti": 2}
    assert chosen["sentence_id"].tolist() == [0, 1, 2, 3, 4]


# --------------------------------------------------------------------------- real data

@pytest.fixture(scope="module")
def loaded(data_dir):
    from gbstats.data.registry import load_dataset

    return load_dataset("cog_gb_eval2023", data_dir)


@pytest.fixture(scope="module")
def human_table(loaded):
    trials = A.mark_ignored(A.critical_trials(loaded.tables["qa"], ExclusionLog()))
    return trials, A.human_accuracy(trials)


# Lior & Stanovsky (2023) Table 2 as published (counts for people, percent for systems): the
# values and their sources are recorded in studies/cognitive_bias/published.py (imported above),
# which the report's qa_accuracy table also sets beside the reproduction.


def assert_published_human_cells(acc: pd.DataFrame) -> None:
    for (dataset, alpha), published in PUBLISHED_HUMANS.items():
        cells = acc[(acc["dataset"] == dataset) & (acc["source"] == "human")
                    & (acc["alpha"] == alpha)].set_index("condition")
        for condition in ("pro", "anti"):
            got = tuple(int(v) for v in cells.loc[condition, ["n_correct", "n_total"]])
            assert got == published[condition], (dataset, alpha, condition)
        assert int(cells["n_ignored"].sum()) == published["ignored"], (dataset, alpha)


def assert_published_system_cells(acc: pd.DataFrame) -> None:
    # 0.05 points: the published values are rounded to one decimal.
    for (dataset, model), published in PUBLISHED_SYSTEMS.items():
        cells = acc[(acc["dataset"] == dataset) & (acc["source"] == model)].set_index("condition")
        for condition, value in published.items():
            assert 100 * cells.loc[condition, "accuracy"] == pytest.approx(value, abs=0.05), (
                dataset, model, condition)


def test_human_cells_equal_the_published_table(human_table):
    _, acc = human_table
    assert_published_human_cells(acc)


@pytest.fixture(scope="module")
def system_tables(loaded):
    log = ExclusionLog()
    trials = A.mark_ignored(A.critical_trials(loaded.tables["qa"], ExclusionLog()))
    analysed = A.drop_ignored(trials, ExclusionLog())
    scored = S.system_sentences(loaded.tables["model_outputs"], loaded.tables["sentence_pool"],
                                log)
    seen = A.on_human_sentences(scored, A.human_sentences(analysed), log)
    return scored, seen, log


def test_system_cells_equal_the_published_table(system_tables):
    _, seen, _ = system_tables
    assert_published_system_cells(A.system_accuracy(S.rule_rows(seen, "published",
                                                                ExclusionLog())))


def test_every_output_and_pool_sentence_is_scored_or_counted(system_tables, loaded):
    scored, _, log = system_tables
    counts = {e.reason: e.n for e in log.entries}
    outputs, pool = loaded.tables["model_outputs"], loaded.tables["sentence_pool"]
    for model in ("SpanBERT", "s2e"):
        for dataset in ("wino", "BUG"):
            prefix = f"{model} {dataset}: "
            mine = scored[(scored["model"] == model) & (scored["dataset"] == dataset)]
            n_lines = int(((outputs["model"] == model) & (outputs["dataset"] == dataset)).sum())
            assert (mine["output_line"].nunique()
                    + counts[prefix + "model output whose sentence is not in the pool"]
                    + counts[prefix + "repeated output for a sentence already matched "
                                      "(identical prediction)"]) == n_lines
            assert len(mine) + counts[prefix + "pool sentence with no model output"] == int(
                (pool["dataset"] == dataset).sum())
    # the two BUG lines whose sentence is not in gold_BUG.csv (module docstring)
    assert counts["SpanBERT BUG: model output whose sentence is not in the pool"] == 2
    assert counts["SpanBERT wino: model output whose sentence is not in the pool"] == 0


def test_system_scores_on_hand_checked_sentences(system_tables):
    scored, _, _ = system_tables
    rows = scored.set_index(["model", "dataset", "sentence_id"])
    # models/SpanBERT/BUG.jsonl line 1: "My friend , who grew up in Africa , explained
    # that in his mental models , he ...", clusters [[0,7],[12,12],[16,16]]. gold_BUG
    # uid 0: profession "friend", g "he". Mention [0,7] "My friend , ... Africa" holds
    # "friend", [16,16] is "he": correct by both rules.
    row = rows.loc[("SpanBERT", "BUG", 0)]
    assert row["output_line"] == 1 and row["published_correct"] and row["head_correct"] == 1.0
    # models/SpanBERT/wino.jsonl line 1: "The developer argued with the designer because
    # she did not like the design ." clusters [[[0,1],[7,7]]]; pool row 2913: developer,
    # she, anti-pro: correct by both rules.
    row = rows.loc[("SpanBERT", "wino", 2913)]
    assert row["output_line"] == 1 and row["published_correct"] and row["head_correct"] == 1.0
    assert row["condition"] == "anti"


# --------------------------------------------------------------------------- system rules

def test_published_rule_is_a_case_sensitive_substring_match():
    tokens = "The teacher said that she was late .".split()
    # "he" is inside "The teacher": the published rule accepts a cluster without the pronoun
    assert S.published_correct(tokens, [[[0, 1]]], "teacher", "he")
    # one mention may supply both the entity and the pronoun
    assert S.published_correct(tokens, [[[1, 4]]], "teacher", "she")
    # case-sensitive: "She" at the start of a sentence does not contain "she"
    starts = "She told the nurse .".split()
    assert not S.published_correct(starts, [[[0, 0], [2, 3]]], "nurse", "she")
    assert not S.published_correct(tokens, [], "teacher", "she")
    # the head rule needs the pronoun's own mention and the entity's head in one cluster
    assert S.head_correct(tokens, [[[0, 1]]], "teacher", 1, "she", 4) == 0.0
    assert S.head_correct(tokens, [[[0, 1], [4, 4]]], "teacher", 1, "she", 4) == 1.0
    assert np.isnan(S.head_correct(tokens, [[[0, 1]]], "nurse", 1, "she", 4))


def test_text_key_ignores_whitespace_and_repairs_the_spanbert_artefact():
    assert S.text_key("stand by and don'thing .") == S.text_key("stand by and do nothing.")
    assert S.text_key("a  b\tc") == "abc"


def _outputs(rows):
    return pd.DataFrame([{"model": "m", "dataset": "wino", "line": line, "text": text,
                          "tokens": text.split(), "clusters": clusters}
                         for line, text, clusters in rows])


def _pool(sentences):
    return pd.DataFrame({"dataset": "wino", "sentence_id": range(len(sentences)),
                         "sentence": sentences, "entity": "a", "entity_hint": 0,
                         "pronoun": "b", "pronoun_hint": 0, "sentence_type": "pro-anti",
                         "condition": "pro"})


def test_match_credits_the_first_copy_and_counts_the_rest():
    pool = _pool(["a b .", "x y .", "a b ."])      # sentence 2 repeats sentence 0
    outputs = _outputs([(1, "a b .", [[[0, 0], [1, 1]]]), (2, "a b .", [[[0, 0], [1, 1]]]),
                        (3, "q r .", [])])
    log = ExclusionLog()
    matched = S.match_outputs(outputs, pool, log)
    assert matched["sentence_id"].tolist() == [0, 2]
    assert matched["first_copy"].tolist() == [True, False]
    assert matched["output_line"].tolist() == [1, 1]
    counts = {e.reason: e.n for e in log.entries}
    assert counts["m wino: model output whose sentence is not in the pool"] == 1
    assert counts["m wino: repeated output for a sentence already matched "
                  "(identical prediction)"] == 1
    assert counts["m wino: pool sentence with no model output"] == 1
    published = S.rule_rows(S.score_sentences(matched), "published", log)
    assert published["sentence_id"].tolist() == [0]
    head = S.rule_rows(S.score_sentences(matched), "head", ExclusionLog())
    assert head["sentence_id"].tolist() == [0, 2] and head["correct"].all()


def test_two_different_outputs_for_one_sentence_are_an_error():
    outputs = _outputs([(1, "a b .", [[[0, 0], [1, 1]]]), (2, "a b .", [])])
    with pytest.raises(DataValidationError, match="two different outputs"):
        S.match_outputs(outputs, _pool(["a b .", "a b ."]), ExclusionLog())


@settings(max_examples=25, deadline=None)
@given(n_tokens=st.integers(3, 12), data=st.data())
def test_pronoun_links_needs_pronoun_and_entity_head_in_one_cluster(n_tokens, data):
    entity_head = data.draw(st.integers(0, n_tokens - 1))
    pronoun = data.draw(st.integers(0, n_tokens - 1).filter(lambda i: i != entity_head))
    start = data.draw(st.integers(0, entity_head))
    entity_mention = [start, entity_head]
    if start <= pronoun <= entity_head:
        entity_mention = [entity_head, entity_head]
    together = [[entity_mention, [pronoun, pronoun]]]
    apart = [[entity_mention], [[pronoun, pronoun]]]
    assert S.pronoun_links(together, pronoun, (entity_head, entity_head)) == (True, True)
    assert S.pronoun_links(apart, pronoun, (entity_head, entity_head)) == (True, False)
    assert S.pronoun_links([], pronoun, (entity_head, entity_head)) == (False, False)


def test_locate_words_prefers_the_occurrence_nearest_the_hint():
    tokens = "His friend said his brother saw his dog .".split()
    assert S.locate_words(tokens, "his", 0) == (0, 0)      # case-insensitive
    assert S.locate_words(tokens, "his", 5) == (6, 6)
    assert S.locate_words(tokens, "his", 4) == (3, 3)      # |3-4| = 1 < |6-4| = 2
    assert S.locate_words("the construction worker left".split(),
                          "construction worker", 0) == (1, 2)
    assert S.locate_words(tokens, "cat", 0) is None


# --------------------------------------------------------------------------- repeated responses

def test_drop_repeated_responses_keeps_the_first_and_counts_same_and_changed():
    qa = pd.DataFrame({"dataset": ["wino"] * 4 + ["BUG"] * 2, "session": [1, 1, 1, 2, 3, 3],
                       "position": [0, 0, 0, 0, 5, 5],
                       "answer": ["male", "male", "female", "male", "unknown", "unknown"],
                       "repeated_response": [False, True, True, False, False, True]})
    log = ExclusionLog()
    kept = A.drop_repeated_responses(qa, log)
    assert kept["repeated_response"].sum() == 0 and len(kept) == 3
    counts = [e.n for e in log.entries]
    assert counts == [1, 1, 1, 0]   # wino same, wino changed, BUG same, BUG changed


def test_repeated_responses_effect_is_the_difference_per_cell():
    every = pd.DataFrame([("wino", "human", 0.5, "pro", 9, 10, 0.9, 2)], columns=A.ACCURACY_COLUMNS)
    first = pd.DataFrame([("wino", "human", 0.5, "pro", 7, 8, 0.875, 1)],
                         columns=A.ACCURACY_COLUMNS)
    effect = A.repeated_responses_effect(every, first).iloc[0]
    # removed: (10 + 2) - (8 + 1) = 3 trials; change: 87.5 - 90 = -2.5 points
    assert effect["n_removed"] == 3
    assert effect["change_points"] == pytest.approx(-2.5)


@pytest.mark.needs_r
@pytest.mark.slow
def test_lme4_glmm_matches_a_direct_r_fit(human_table, tmp_path):
    """gbstats' fit of the wino GLMM (alpha as a factor) equals lme4 called from an R
    script that spells out the same coding (tests/reference/cognitive_bias_glmm_reference.R)."""
    from gbstats.mixed.lmm import fit_glmm

    trials, _ = human_table
    analysed = A.drop_ignored(trials, ExclusionLog())
    rows = A.glmm_rows(analysed[analysed["dataset"] == "wino"]).drop(columns="dataset")
    # half of the participants keeps the two fits short; the comparison holds for any rows
    half = sorted(rows["participant"].unique())[::2]
    rows = rows[rows["participant"].isin(half)].reset_index(drop=True)
    rows.to_csv(tmp_path / "rows.csv", index=False)
    subprocess.run([shutil.which("Rscript"), str(REFERENCE_R), str(tmp_path / "rows.csv"),
                    str(tmp_path / "coefs.csv"), "factor"], check=True, capture_output=True)
    reference = pd.read_csv(tmp_path / "coefs.csv")
    ours = fit_glmm(A.GLMM_FORMULA, A.alpha_as_factor(rows), backend="lme4").coefs
    assert ours["term"].tolist() == reference["term"].tolist()
    np.testing.assert_allclose(ours["estimate"], reference["estimate"], rtol=1e-4)
    np.testing.assert_allclose(ours["se"], reference["se"], rtol=1e-3)


@pytest.mark.slow
def test_bayesian_twin_reports_the_interaction_posterior():
    """Structure on a small seeded simulation with a known negative interaction.

    Simulated log-odds: 1 + 1.5*pro + 2*alpha - 3*pro*alpha, 40 participants x 12
    trials, no random variation. With true beta = -3 and 480 trials the posterior
    mass below 0 should be large; the check is loose (> 0.8) because it is a
    structure test with few draws, not a recovery test.
    """
    rng = np.random.default_rng(7)
    n = 480
    pro = rng.integers(0, 2, n)
    alpha = rng.choice([0.25, 0.5, 0.75], n)
    eta = 1 + 1.5 * pro + 2 * alpha - 3 * pro * alpha
    rows = pd.DataFrame({
        "correct": (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int),
        "stereotype": pd.Categorical(np.where(pro == 1, "pro", "anti"), categories=["anti", "pro"]),
        "alpha": alpha, "participant": [f"p{i % 40}" for i in range(n)],
        "sentence": [f"s{i % 60}" for i in range(n)]})
    fits = {"sim": A.fit_stereotype_alpha(rows, lme4=False, bayes=True, draws=100, seed=3)}
    table = A.glmm_table(fits)
    assert table["term"].tolist() == ["(Intercept)", "stereotypepro", "alpha", A.INTERACTION_TERM]
    summary = A.posterior_summary(fits).iloc[0]
    # fit_bayes_twin refits with doubled draws (up to 4x) until the twin converges:
    # the summary uses every draw of the fit it ended with
    twin = fits["sim"]["pymc, alpha numeric"]
    assert twin.fit_stats["n_draws"] in (100, 200, 400)
    assert summary["n_draws"] == 2 * twin.fit_stats["n_draws"]
    assert summary["p_effect_grows_as_alpha_shrinks"] > 0.8


# --------------------------------------------------------------------------- end to end

@pytest.fixture(scope="module")
def run_without_models(data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("cognitive_bias")
    code = main(["--model", "none", "--no-lme4", "--no-bayes", "--out", str(out),
                 "--data-dir", str(data_dir)])
    assert code == 0
    return out, json.loads((out / "results.json").read_text())


@pytest.mark.slow
def test_end_to_end_tables_and_files(run_without_models, loaded):
    out, results = run_without_models
    tables = results["tables"]
    for name in ("qa_accuracy", "qa_delta", "maze_delta"):
        assert name in tables
    # no model was asked for: no empty model table, and the report says why
    assert "glmm_stereotype_alpha" not in tables
    assert "--no-lme4: the lme4 GLMMs and the MAZE LMM were skipped" in (
        out / "report.md").read_text()
    acc = pd.DataFrame(tables["qa_accuracy"])
    assert list(acc.columns) == A.ACCURACY_COLUMNS
    # one record per dataset x source x condition (x alpha for people)
    humans = acc[acc["source"] == "human"]
    assert len(humans) == 2 * 3 * 2 and set(humans["alpha"]) == {0.25, 0.5, 0.75}
    systems = acc[acc["source"] != "human"]
    assert sorted(set(systems["source"])) == ["SpanBERT", "s2e"]
    assert len(systems) == 2 * 2 * 2 and systems["alpha"].isna().all()
    assert (acc["accuracy"] == acc["n_correct"] / acc["n_total"]).all()
    assert set(acc["condition"]) == {"pro", "anti"} and set(acc["dataset"]) == {"wino", "BUG"}
    # issue 14's "done when": the default run is Lior & Stanovsky's Table 2
    assert_published_human_cells(acc)
    assert_published_system_cells(acc)
    assert "published counting rule" in (out / "report.md").read_text()

    delta = pd.DataFrame(tables["maze_delta"])
    assert (delta["delta"] == delta["quantile_anti"] - delta["quantile_pro"]).all()
    for f in ("report.md", "figures/maze_cdf_wino.png", "figures/maze_cdf_BUG.png",
              "figures/maze_delta.png", "figures/human_scale.png", "tables/qa_accuracy.tex"):
        assert (out / f).exists(), f

    # every filler trial is counted as an exclusion
    reasons = {r["reason"]: r["n"] for r in results["exclusions"]}
    qa = loaded.tables["qa"]
    for dataset in ("wino", "BUG"):
        n_fillers = int(((qa["dataset"] == dataset) & (qa["condition"] == "filler")).sum())
        assert reasons[f"{dataset} QA: filler question (not a coreference item)"] == n_fillers
    assert any("outside Q1" in r for r in reasons)


@pytest.mark.needs_model
@pytest.mark.slow
def test_end_to_end_with_the_language_model(data_dir, tmp_path):
    out = tmp_path / "run"
    code = main(["--limit", "4", "--no-lme4", "--no-bayes", "--out", str(out),
                 "--data-dir", str(data_dir), "--cache-dir", str(tmp_path / "cache")])
    assert code == 0
    acc = pd.DataFrame(json.loads((out / "results.json").read_text())["tables"]["qa_accuracy"])
    lm_rows = acc[acc["source"] == "smollm2-135m"]
    assert lm_rows[["dataset", "condition", "n_total"]].values.tolist() == [
        ["wino", "pro", 2], ["wino", "anti", 2]]
    resolved = pd.read_csv(out / "lm_resolutions.csv")
    assert len(resolved) == 4
    assert ((resolved["margin"] > 0) == resolved["resolved_correct"]).all()
    assert np.allclose(resolved["margin"], resolved["logprob_referent"] - resolved["logprob_other"])


@pytest.mark.slow
def test_drop_repeated_responses_flag_reports_what_it_moved(data_dir, tmp_path):
    out = tmp_path / "run"
    code = main(["--model", "none", "--no-lme4", "--no-bayes", "--drop-repeated-responses",
                 "--out", str(out), "--data-dir", str(data_dir)])
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    effect = pd.DataFrame(results["tables"]["repeated_responses_effect"])
    # the published side of the comparison is the published table, cell for cell
    assert_published_human_cells(effect.rename(columns={
        "n_correct_published": "n_correct", "n_total_published": "n_total",
        "n_ignored_published": "n_ignored"}).assign(source="human"))
    # issue 14: with one response per session position, wino alpha 0.75 is pro
    # 542/603 and anti 565/630, with 26 ignored answers
    cells = effect[(effect["dataset"] == "wino") & (effect["alpha"] == 0.75)].set_index("condition")
    assert tuple(cells.loc["pro", ["n_correct_deduplicated", "n_total_deduplicated"]]) == (542, 603)
    anti = cells.loc["anti", ["n_correct_deduplicated", "n_total_deduplicated"]]
    assert tuple(anti) == (565, 630)
    assert cells["n_ignored_deduplicated"].sum() == 26
    removed = {r["reason"]: r["n"] for r in results["exclusions"]
               if "--drop-repeated-responses" in r["reason"]}
    assert len(removed) == 4 and sum(removed.values()) > 0
    assert (effect["change_points"] == 100 * (effect["accuracy_deduplicated"]
                                              - effect["accuracy_published"])).all()


# --------------------------------------------------------------------------- Delta uncertainty

from studies.cognitive_bias import uncertainty as U   # noqa: E402


def test_crossed_level_counts_resample_every_factor_to_its_size():
    counts = U.crossed_level_counts([5, 7], np.random.default_rng(1))
    assert [c.sum() for c in counts] == [5, 7] and [len(c) for c in counts] == [5, 7]


def test_qa_delta_statistic_weights_trials_by_participant_times_sentence():
    trials = pd.DataFrame({"participant": ["a", "a", "b", "b"], "sentence_id": [1, 2, 1, 2],
                           "alpha": 0.5, "condition": ["pro", "anti", "pro", "anti"],
                           "is_correct": [True, False, False, True]})
    systems = pd.DataFrame({"model": "m", "sentence_id": [1, 2], "condition": ["pro", "anti"],
                            "correct": [True, False]})
    labels, statistic, n_levels = U.qa_delta_statistic(trials, systems)
    assert n_levels == (2, 2)
    assert [(source, kind) for source, _, kind in labels] == [
        ("human", None), ("m", None), ("m", "difference")]
    # all ones: people pro 1/2, anti 1/2 -> 0; system 1 - 0 = 1; difference 1
    assert statistic([np.array([1, 1]), np.array([1, 1])]).tolist() == [0.0, 1.0, 1.0]
    # participant a twice, b never; sentence 1 three times, sentence 2 once:
    # people pro = a's sentence-1 trial (correct), anti = a's sentence-2 trial (wrong)
    # -> delta 1; the system keeps 1 - 0 = 1; difference 0
    assert statistic([np.array([2, 0]), np.array([3, 1])]).tolist() == [1.0, 1.0, 0.0]


def test_percentile_p_value_inverts_the_interval():
    draws = np.array([[-1.0, 1.0], [1.0, 2.0], [2.0, np.nan], [3.0, 4.0]])
    # column 1: one of four at or below 0, three at or above: 2 (1 + 1) / 5 = 0.8
    # column 2: three defined, none at or below 0: 2 (0 + 1) / 4 = 0.5
    assert U.percentile_p_value(draws).tolist() == pytest.approx([0.8, 0.5])


def test_quantile_at_is_the_inverted_cdf():
    times = np.arange(1.0, 11.0)                    # 1..10
    # inverted CDF at p is the ceil(10 p)-th value: 0.25 -> 3rd, 0.5 -> 5th, 1 -> 10th
    assert U.quantile_at(times, [0.25, 0.5, 1.0]).tolist() == [3.0, 5.0, 10.0]


def test_point_estimates_equal_the_report_tables(loaded):
    log = ExclusionLog()
    trials = A.mark_ignored(A.critical_trials(loaded.tables["qa"], log))
    analysed = A.drop_ignored(trials, log)
    scored = S.system_sentences(loaded.tables["model_outputs"], loaded.tables["sentence_pool"],
                                log)
    qa_systems = S.rule_rows(A.on_human_sentences(scored, A.human_sentences(analysed), log),
                             "published", log)
    qa = U.qa_delta_uncertainty(analysed, qa_systems, n_boot=5)
    accuracy = pd.concat([A.human_accuracy(trials), A.system_accuracy(qa_systems)])
    expected = A.qa_delta(accuracy)
    for row in expected.itertuples(index=False):
        got = qa[(qa["dataset"] == row.dataset) & (qa["source"] == row.source)
                 & (qa["quantity"] == "delta")
                 & ((qa["alpha"] == row.alpha) | (qa["alpha"].isna() & np.isnan(row.alpha)))]
        assert got["estimate"].item() == pytest.approx(row.delta)
    maze = loaded.tables["maze"]
    maze_systems = S.rule_rows(A.on_human_sentences(scored, S.maze_sentences(maze), log, "MAZE"),
                               "published", log, "MAZE")
    placed = U.maze_delta_uncertainty(maze, maze_systems, n_boot=5)
    cleaned, _ = M.remove_outliers(maze, ExclusionLog())
    table = M.maze_delta(cleaned, M.TABLE_GRID)
    human = placed[placed["source"] == "human"]
    assert human["estimate"].tolist() == pytest.approx(table["delta"].tolist())
    # Figure 5: a system at accuracy a on the pro curve sits at the pro quantile Q(a)
    wino = placed[(placed["dataset"] == "wino") & (placed["source"] == "SpanBERT")].set_index(
        "quantity")["estimate"]
    pro_times = cleaned.loc[(cleaned["dataset"] == "wino") & (cleaned["condition"] == "pro"),
                            "time_to_answer"]
    assert wino["time_pro"] == np.quantile(pro_times, wino["accuracy_pro"],
                                           method="inverted_cdf")
    assert wino["delta_maze"] == wino["time_anti"] - wino["time_pro"]


def _simulated_qa(rng, n_people=30, n_sentences=80, per_person=40, b0=1.2, b1=0.4,
                  sd_person=0.8, sd_sentence=1.0):
    """People answer random pro/anti sentences (logit = b0 + b1 pro + u_person + v_sentence);
    one system answers every sentence with the same marginal success rate per sentence
    (its own draw of the person effect), so its true Delta equals people's."""
    sentences = np.arange(2 * n_sentences)
    pro = sentences < n_sentences
    v = rng.normal(0, sd_sentence, len(sentences))
    u = rng.normal(0, sd_person, n_people)
    rows = []
    for person in range(n_people):
        for s in rng.choice(sentences, per_person, replace=False):
            eta = b0 + b1 * pro[s] + u[person] + v[s]
            rows.append((f"p{person}", int(s), "pro" if pro[s] else "anti",
                         rng.random() < 1 / (1 + np.exp(-eta))))
    trials = pd.DataFrame(rows, columns=["participant", "sentence_id", "condition", "is_correct"])
    eta_sys = b0 + b1 * pro + rng.normal(0, sd_person, len(sentences)) + v
    systems = pd.DataFrame({"model": "sim", "sentence_id": sentences,
                            "condition": np.where(pro, "pro", "anti"),
                            "correct": rng.random(len(sentences)) < 1 / (1 + np.exp(-eta_sys))})
    return trials.assign(alpha=0.5), systems


def _true_marginal_delta(rng, b0=1.2, b1=0.4, sd_person=0.8, sd_sentence=1.0, n=2_000_000):
    """E[expit(b0 + b1 + u + v)] - E[expit(b0 + u + v)], u and v independent normals
    (Monte Carlo; SE about 2e-4)."""
    noise = rng.normal(0, sd_person, n) + rng.normal(0, sd_sentence, n)
    return float(np.mean(1 / (1 + np.exp(-(b0 + b1 + noise))))
                 - np.mean(1 / (1 + np.exp(-(b0 + noise)))))


@pytest.mark.slow
def test_delta_qa_intervals_cover_and_the_difference_test_holds_its_level():
    """Coverage of the two-way bootstrap's 95% intervals for people's and a system's
    Delta_QA, and the false-positive rate of 'system Delta = people's Delta' when it is
    true, on 200 simulated crossed data sets (200 replicates each). The two-way
    bootstrap is expected to be conservative, so the bounds only rule out
    under-coverage and an inflated level; the measured values go in the report."""
    rng = np.random.default_rng(20231)
    truth = _true_marginal_delta(rng)
    n_sims, hits_people, hits_system, rejections = 200, 0, 0, 0
    for sim in range(n_sims):
        trials, systems = _simulated_qa(rng)
        table = U.qa_delta_uncertainty(trials.assign(dataset="sim"),
                                       systems.assign(dataset="sim"), n_boot=200, seed=sim)
        people = table[(table["source"] == "human")].iloc[0]
        system = table[(table["source"] == "sim") & (table["quantity"] == "delta")].iloc[0]
        diff = table[table["quantity"] == "difference"].iloc[0]
        hits_people += people["ci_low"] <= truth <= people["ci_high"]
        hits_system += system["ci_low"] <= truth <= system["ci_high"]
        rejections += diff["p_value"] < 0.05
    coverage_people, coverage_system = hits_people / n_sims, hits_system / n_sims
    level = rejections / n_sims
    print(f"Delta_QA coverage people {coverage_people:.3f}, system {coverage_system:.3f}, "
          f"difference test level {level:.3f} (nominal 0.95 / 0.95 / 0.05)")
    # binomial SE at 0.95 with 200 runs is 0.015: 0.91 is below nominal by > 2.5 SE
    assert coverage_people >= 0.91 and coverage_system >= 0.91
    assert level <= 0.09


def _simulated_maze(rng, n_people=25, n_sentences=60, per_person=40, shift=0.06,
                    sd_person=0.25, sd_sentence=0.15, sd_trial=0.35, system_accuracy=0.8):
    """log ms = 6.6 + shift * anti + person + sentence + noise, people crossed with random
    sentences; a system whose pro and anti accuracy are both `system_accuracy`, so its
    Delta_MAZE equals people's at that share."""
    sentences = np.arange(2 * n_sentences)
    anti = sentences >= n_sentences
    b = rng.normal(0, sd_sentence, len(sentences))
    a = rng.normal(0, sd_person, n_people)
    rows = []
    for person in range(n_people):
        for s in rng.choice(sentences, per_person, replace=False):
            log_ms = 6.6 + shift * anti[s] + a[person] + b[s] + rng.normal(0, sd_trial)
            rows.append((f"p{person}", int(s), "anti" if anti[s] else "pro", np.exp(log_ms)))
    maze = pd.DataFrame(rows, columns=["participant", "sentence_id", "condition",
                                       "time_to_answer"])
    systems = pd.DataFrame({"model": "sim", "sentence_id": sentences,
                            "condition": np.where(anti, "anti", "pro"),
                            "correct": rng.random(len(sentences)) < system_accuracy})
    return maze, systems


def _true_maze_delta(rng, p, shift=0.06, sd_person=0.25, sd_sentence=0.15, sd_trial=0.35,
                     n=1_000_000):
    """Delta_MAZE(p) of the marginal distributions after the IQR rule (Monte Carlo)."""
    sd = np.sqrt(sd_person ** 2 + sd_sentence ** 2 + sd_trial ** 2)
    ones = np.ones(n, dtype=np.int64)
    pro = U.cleaned_sorted(np.exp(6.6 + rng.normal(0, sd, n)), ones)
    anti = U.cleaned_sorted(np.exp(6.6 + shift + rng.normal(0, sd, n)), ones)
    return float(U.quantile_at(anti, p) - U.quantile_at(pro, p))


@pytest.mark.slow
def test_delta_maze_intervals_cover_and_the_difference_test_holds_its_level():
    """As above for Delta_MAZE at p = 0.5 and for a system's difference from people at
    its mean share (true difference 0: the system's pro and anti accuracy are equal);
    200 simulated data sets, 200 replicates each."""
    rng = np.random.default_rng(20232)
    truth = _true_maze_delta(rng, 0.5)
    n_sims, hits, rejections = 200, 0, 0
    for sim in range(n_sims):
        maze, systems = _simulated_maze(rng)
        table = U.maze_delta_uncertainty(maze.assign(dataset="sim"),
                                         systems.assign(dataset="sim"), n_boot=200, seed=sim,
                                         grid=np.array([0.5]))
        people = table[table["source"] == "human"].iloc[0]
        diff = table[table["quantity"] == "difference"].iloc[0]
        hits += people["ci_low"] <= truth <= people["ci_high"]
        rejections += diff["p_value"] < 0.05
    print(f"Delta_MAZE(0.5) coverage {hits / n_sims:.3f}, difference test level "
          f"{rejections / n_sims:.3f} (nominal 0.95 / 0.05)")
    # binomial SE with 200 runs: 0.015 at 0.95 and at 0.05
    assert hits / n_sims >= 0.91
    assert rejections / n_sims <= 0.09


@pytest.mark.needs_r
def test_marginal_accuracy_per_stereotype_and_alpha(tmp_path):
    """Marginal accuracy per stereotype x alpha from the alpha-factor GLMM, and
    pro - anti at each alpha. On the probability scale the contrast at an
    alpha is the difference of that alpha's two marginal means (emmeans'
    regrid; the R comparison is tests/stats/test_toolkit.py's
    glmm_response_reverse case)."""
    rng = np.random.default_rng(5)
    n = 1200
    pro = rng.integers(0, 2, n)
    alpha = rng.choice([0.25, 0.5, 0.75], n)
    participant = rng.integers(0, 40, n)
    eta = 1 + 1.5 * pro + 2 * alpha - 2 * pro * alpha + rng.normal(0, 0.5, 40)[participant]
    rows = pd.DataFrame({
        "correct": (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int),
        "stereotype": pd.Categorical(np.where(pro == 1, "pro", "anti"), categories=["anti", "pro"]),
        "alpha": alpha, "participant": [f"p{i}" for i in participant],
        "sentence": [f"s{i % 60}" for i in range(n)]})
    glmms = {"sim": A.fit_stereotype_alpha(rows, lme4=True, bayes=False, draws=0, seed=1,
                                           use_cache=True, cache_dir=tmp_path)}
    first_means = A.marginal_accuracy(glmms)[0]
    # a second call reuses both fits from the cache: the factor fit's marginal means were
    # computed with its live lme4 model and are kept with it, so they still work
    glmms = {"sim": A.fit_stereotype_alpha(rows, lme4=True, bayes=False, draws=0, seed=1,
                                           use_cache=True, cache_dir=tmp_path)}
    assert glmms["sim"]["lme4, alpha numeric"].fit_stats["reused_from_cache"] is True
    assert glmms["sim"]["lme4, alpha factor"].fit_stats["reused_from_cache"] is True
    assert glmms["sim"]["lme4, alpha factor"].handle is None
    means, contrasts, notes = A.marginal_accuracy(glmms)
    pd.testing.assert_frame_equal(means, first_means)
    assert len(means) == 6 and set(means["stereotype"]) == {"anti", "pro"}
    assert means["estimate"].between(0, 1).all()
    assert list(contrasts["contrast"]) == ["pro - anti"] * 3
    assert list(contrasts["alpha"]) == A.ALPHA_FACTOR_LEVELS
    wide = means.pivot(index="alpha", columns="stereotype", values="estimate")
    np.testing.assert_allclose(contrasts.set_index("alpha")["estimate"],
                               (wide["pro"] - wide["anti"]).loc[contrasts["alpha"]], rtol=1e-6)
    assert any("probabilities" in n for n in notes)
    assert "treatment (reference level 'anti')" in A.coding_note(glmms)

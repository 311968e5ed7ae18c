"""models.logprob (the kind-aware entry) and models.coreference (the shared resolver).

Each entry is checked against an independent route to the same number: the
kind-specific scorer it stands for, or a plain-torch PLL (tests/tiny_models.py)
for the masked quantities that have no other scorer.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tiny_models as tiny
from models.causal import score_continuations, score_sentences
from models.coreference import choose_candidates, score_substitutions
from models.forced_choice import forced_choice
from models.logprob import (DEFAULT_PLL, continuation_logprobs, filled_frame_logprobs,
                            n_pieces_in_slot, slot_logprobs, text_logprobs)
from models.masked import masked_word_surprisal, pll_sentences

TEXTS = ["My sister said they would come tomorrow.", "The police officer wrote a report about the accident."]


def test_default_pll_is_word_l2r():
    assert DEFAULT_PLL == "pll_word_l2r"


def test_text_logprobs_is_the_kinds_own_scorer(tiny_bert, tiny_gpt2, cache_dir):
    masked = text_logprobs(TEXTS, lm=tiny_bert, cache_dir=cache_dir)
    assert set(masked["scoring"]) == {"pll_word_l2r"}
    np.testing.assert_allclose(masked["logprob"], pll_sentences(
        TEXTS, lm=tiny_bert, variant="pll_word_l2r", use_cache=False)["logprob"], rtol=1e-6)
    original = text_logprobs(TEXTS, lm=tiny_bert, pll="pll_original", cache_dir=cache_dir)
    assert set(original["scoring"]) == {"pll_original"}
    reference = [sum(v for _, v in tiny.reference_pll_terms(tiny_bert, t, "pll_original"))
                 for t in TEXTS]
    np.testing.assert_allclose(original["logprob"], reference, rtol=1e-4)
    causal = text_logprobs(TEXTS, lm=tiny_gpt2, cache_dir=cache_dir)
    assert set(causal["scoring"]) == {"causal"} and set(causal["bos"]) == {"prepend"}
    np.testing.assert_allclose(causal["logprob"], score_sentences(
        TEXTS, lm=tiny_gpt2, use_cache=False)["logprob"], rtol=1e-6)
    np.testing.assert_allclose(causal["probability"], np.exp(causal["logprob"]))


def test_unknown_pll_variant_is_named(tiny_bert):
    with pytest.raises(KeyError, match="pll_l2r"):
        text_logprobs(TEXTS, lm=tiny_bert, pll="pll_l2r")


def test_masked_continuation_is_the_pll_of_its_own_tokens(tiny_bert, cache_dir):
    """log P(continuation | prefix) for a masked LM: the PLL terms of the continuation's
    tokens, each predicted with the prefix visible (plain-torch reference)."""
    prefix, continuation = "My sister said", " they would come tomorrow."
    out = continuation_logprobs([prefix], [continuation], lm=tiny_bert, cache_dir=cache_dir)
    terms = tiny.reference_pll_terms(tiny_bert, prefix + continuation, "pll_word_l2r")
    n_prefix = len(tiny_bert.tokenizer.tokenize(prefix))
    expected = sum(v for _, v in terms[n_prefix:])
    assert out["logprob"].iloc[0] == pytest.approx(expected, abs=1e-4)
    assert out["n_tokens"].iloc[0] == len(terms) - n_prefix
    assert out["scoring"].iloc[0] == "pll_word_l2r"
    assert list(out[["prefix", "continuation"]].iloc[0]) == [prefix, continuation]


def test_causal_continuation_is_score_continuations(tiny_gpt2, cache_dir):
    out = continuation_logprobs(["My sister said"], [" they"], lm=tiny_gpt2, cache_dir=cache_dir)
    ref = score_continuations(["My sister said"], [" they"], lm=tiny_gpt2, use_cache=False)
    assert out["logprob"].iloc[0] == pytest.approx(ref["logprob"].iloc[0], rel=1e-6)


def test_slot_word_per_kind(tiny_bert, tiny_gpt2, cache_dir):
    frames = ["My sister said [BLANK] would come.", "[BLANK] wrote a report."]
    words = ["they", "police officer"]
    causal = slot_logprobs(frames, words, lm=tiny_gpt2, cache_dir=cache_dir)
    ref = score_continuations(["My sister said", ""], [" they", " police officer"], lm=tiny_gpt2,
                              use_cache=False)
    np.testing.assert_allclose(causal["logprob"], ref["logprob"], rtol=1e-6)
    assert causal["text"].tolist() == ["My sister said they would come.",
                                       "police officer wrote a report."]
    masked = slot_logprobs(frames, words, lm=tiny_bert, cache_dir=cache_dir)
    ref = masked_word_surprisal(frames, words, lm=tiny_bert, use_cache=False)
    np.testing.assert_allclose(masked["logprob"], ref["logprob"], rtol=1e-6)
    assert set(masked["scoring"]) == {"masked"}


def test_slot_at_frame_start_without_bos_is_nan_or_an_error(tiny_gpt2, cache_dir):
    from models.words import AlignmentError

    out = slot_logprobs(["[BLANK] left.", "She said [BLANK] left."], ["they", "they"],
                        lm=tiny_gpt2, bos="none", on_alignment_error="nan", cache_dir=cache_dir)
    assert out["aligned"].tolist() == [False, True]
    assert np.isnan(out["logprob"].iloc[0]) and np.isfinite(out["logprob"].iloc[1])
    with pytest.raises(AlignmentError, match="starts the frame"):
        slot_logprobs(["[BLANK] left."], ["they"], lm=tiny_gpt2, bos="none", cache_dir=cache_dir)


def test_filled_frame_per_kind(tiny_bert, tiny_gpt2, cache_dir):
    frames = ["Emily is a [BLANK] from Ohio.", "Emily is a [BLANK] from Ohio."]
    fillers = ["firefighter", "police officer"]
    causal = filled_frame_logprobs(frames, fillers, lm=tiny_gpt2, cache_dir=cache_dir)
    ref = score_continuations(["Emily is a"] * 2, [" firefighter from Ohio.",
                                                    " police officer from Ohio."],
                              lm=tiny_gpt2, use_cache=False)
    np.testing.assert_allclose(causal["logprob"], ref["logprob"], rtol=1e-6)
    assert set(causal["score_is"]) == {"joint"}
    masked = filled_frame_logprobs(frames, fillers, lm=tiny_bert, pll="pll_original",
                                   cache_dir=cache_dir)
    assert set(masked["score_is"]) == {"likelihood"} and set(masked["scoring"]) == {"pll_original"}
    # log P(frame | filler): the PLL terms of every token outside the filler (plain torch)
    for row, filler in zip(masked.itertuples(), fillers):
        terms = tiny.reference_pll_terms(tiny_bert, row.text, "pll_original")
        n_filler = len(tiny_bert.tokenizer.tokenize(filler))
        start = len(tiny_bert.tokenizer.tokenize("Emily is a"))
        outside = terms[:start] + terms[start + n_filler:]
        assert row.logprob == pytest.approx(sum(v for _, v in outside), abs=1e-4)
        assert row.n_tokens == len(outside)


def test_n_pieces_in_slot(tiny_bert, tiny_gpt2):
    assert n_pieces_in_slot(tiny_bert, "they") == len(tiny_bert.tokenizer.tokenize("they"))
    assert n_pieces_in_slot(tiny_bert, "police officer") >= 2
    # causal: the word after a space, as it appears in the slot
    assert n_pieces_in_slot(tiny_gpt2, "they") == len(
        tiny_gpt2.tokenizer(" they", add_special_tokens=False)["input_ids"])


def test_forced_choice_in_context_is_word_for_masked_and_sentence_for_causal(
        tiny_bert, tiny_gpt2, cache_dir):
    frames, variants = ["My sister said [BLANK] would come tomorrow."], ["he", "she", "they"]
    for lm, same_as in ((tiny_bert, "word"), (tiny_gpt2, "sentence")):
        a = forced_choice(frames, variants, lm=lm, span="in_context", cache_dir=cache_dir)
        b = forced_choice(frames, variants, lm=lm, span=same_as, cache_dir=cache_dir)
        pd.testing.assert_frame_equal(a, b)


def test_forced_choice_sentence_span_records_the_default_pll(tiny_bert, cache_dir):
    out = forced_choice(["Alex said [BLANK] would bring notes."], ["he", "xe"], lm=tiny_bert,
                        span="sentence", cache_dir=cache_dir)
    assert set(out["scoring"]) == {"pll_word_l2r"}
    ref = [sum(v for _, v in tiny.reference_pll_terms(tiny_bert, t, "pll_word_l2r"))
           for t in out["text"]]
    np.testing.assert_allclose(out["logprob"], ref, atol=1e-4)


# --- the shared candidate-substitution resolver -----------------------------------------

def test_choose_candidates_by_hand():
    """Hand-worked: unit a prefers x (-1 > -2), b prefers y, c is an exact tie, d lacks a
    score; ties and missing scores give 'none'. margin = x - y."""
    scored = pd.DataFrame({"unit": list("aabbccdd"), "candidate": list("xyxyxyxy"),
                           "logprob": [-1.0, -2.0, -5.0, -3.0, -4.0, -4.0, np.nan, -1.0]})
    out = choose_candidates(scored, unit="unit", candidates=("x", "y")).set_index("unit")
    assert out["choice"].to_dict() == {"a": "x", "b": "y", "c": "none", "d": "none"}
    assert out.loc["a", "margin"] == 1.0 and out.loc["b", "margin"] == -2.0
    assert out.loc["c", "margin"] == 0.0 and np.isnan(out.loc["d", "margin"])
    assert out.loc["b", "logprob_y"] == -3.0


def test_choose_among_three_candidates():
    scored = pd.DataFrame({"unit": ["a"] * 3, "candidate": ["x", "y", "z"],
                           "logprob": [-3.0, -1.0, -2.0]})
    out = choose_candidates(scored, unit="unit", candidates=("x", "y", "z"))
    assert out["choice"].iloc[0] == "y" and out["margin"].iloc[0] == -2.0  # -3 - max(-1, -2)


def test_choose_candidates_names_a_missing_candidate():
    from gbstats.errors import DataValidationError

    scored = pd.DataFrame({"unit": ["a"], "candidate": ["x"], "logprob": [-1.0]})
    with pytest.raises(DataValidationError, match="no scores for a candidate"):
        choose_candidates(scored, unit="unit", candidates=("x", "y"))


@pytest.mark.parametrize("kind", ["masked", "causal"])
def test_score_substitutions_scores_each_row_with_the_text_entry(kind, tiny_bert, tiny_gpt2,
                                                                 cache_dir):
    lm = {"masked": tiny_bert, "causal": tiny_gpt2}[kind]
    candidates = pd.DataFrame({"sentence": [1, 1, 2, 2], "candidate": ["a", "b"] * 2,
                               "text": ["The fireman carried the ladder.",
                                        "The firewoman carried the ladder.",
                                        "Our neighbour said he had seen the fox.",
                                        "Our neighbour said she had seen the fox."]})
    scored = score_substitutions(candidates, lm, unit="sentence", cache_dir=cache_dir)
    assert "text" not in scored.columns and len(scored) == 4
    ref = text_logprobs(candidates["text"].tolist(), lm=lm, use_cache=False)
    np.testing.assert_allclose(scored["logprob"], ref["logprob"], rtol=1e-6)
    assert set(scored["scoring"]) == {"pll_word_l2r" if kind == "masked" else "causal"}
    with pytest.raises(Exception, match="same candidate twice"):
        score_substitutions(pd.concat([candidates, candidates.head(1)]), lm, unit="sentence",
                            cache_dir=cache_dir)


# --- recorded_scoring: reports describe what the scores record ------------------------

def test_recorded_scoring_reads_the_one_method_of_a_table():
    from models.scores import recorded_scoring

    table = pd.DataFrame({"item": ["a", "b"], "scoring": ["pll_word_l2r", "pll_word_l2r"]})
    assert recorded_scoring(table) == "pll_word_l2r"


@pytest.mark.parametrize("table, found", [
    (pd.DataFrame({"item": ["a", "b"], "scoring": ["causal", "pll_original"]}),
     "['causal', 'pll_original']"),
    (pd.DataFrame({"item": ["a"], "scoring": [None]}), "none"),
    (pd.DataFrame({"item": ["a"], "logprob": [-1.0]}), "item, logprob"),
])
def test_recorded_scoring_refuses_mixed_or_missing_methods(table, found):
    from gbstats.errors import DataValidationError
    from models.scores import recorded_scoring

    with pytest.raises(DataValidationError) as err:
        recorded_scoring(table, source="item scores")
    assert "item scores" in str(err.value) and found in str(err.value)

"""Masked-LM scoring on the tiny BERT: agreement with minicons, invariants, the chained-word rule."""
from __future__ import annotations

import copy

import numpy as np
import pytest
from reference_scorers import minicons_scorer

from models.masked import masked_word_surprisal, pll_sentences, pll_span
from models.words import AlignmentError
from tiny_models import SENTENCES

MINICONS_METRIC = {"pll_original": "original", "pll_word_l2r": "within_word_l2r"}


@pytest.mark.parametrize("variant", ["pll_original", "pll_word_l2r"])
def test_pll_agrees_with_minicons(tiny_bert, variant):
    scorer = minicons_scorer()

    # minicons mutates the tokenizer it is given; hand it a copy
    reference = scorer.MaskedLMScorer(tiny_bert.model, tokenizer=copy.deepcopy(tiny_bert.tokenizer),
                                      device="cpu")
    expected = reference.sequence_score(SENTENCES, reduction=lambda x: x.sum().item(),
                                        PLL_metric=MINICONS_METRIC[variant])
    ours = pll_sentences(SENTENCES, lm=tiny_bert, variant=variant, use_cache=False)
    np.testing.assert_allclose(ours["logprob"], expected, atol=1e-4, rtol=0)
    assert (ours["scoring"] == variant).all()


def test_the_two_pll_variants_differ_on_multi_piece_words(tiny_bert):
    # the tiny vocabulary splits "firefighter" into pieces, so masking the later
    # pieces too (word_l2r) must change the score; single-piece words would not
    assert len(tiny_bert.tokenizer.tokenize("firefighter")) > 1
    text = ["The firefighter carried the ladder to the truck."]
    original = pll_sentences(text, lm=tiny_bert, variant="pll_original", use_cache=False)
    l2r = pll_sentences(text, lm=tiny_bert, variant="pll_word_l2r", use_cache=False)
    assert original["logprob"][0] != pytest.approx(l2r["logprob"][0], abs=1e-6)


@pytest.mark.parametrize("batch_size,max_rows", [(1, 1), (16, 512)])
def test_batching_does_not_change_pll(tiny_bert, batch_size, max_rows):
    reference = pll_sentences(SENTENCES, lm=tiny_bert, batch_size=4, max_rows=7, use_cache=False)
    other = pll_sentences(SENTENCES, lm=tiny_bert, batch_size=batch_size, max_rows=max_rows,
                          use_cache=False)
    np.testing.assert_allclose(other["logprob"], reference["logprob"], atol=1e-4, rtol=0)


def test_target_word_is_chained_left_to_right(tiny_bert):
    # Hand derivation of the documented rule for a word of pieces p1..pk:
    # log P(word) = sum_k log P(p_k | context, p_<k), pieces >= k masked.
    import torch

    tok, model = tiny_bert.tokenizer, tiny_bert.model
    frame, word = "The [BLANK] carried the ladder.", "firefighter"
    ids = tok(frame.replace("[BLANK]", word))["input_ids"]
    pieces = tok(word, add_special_tokens=False)["input_ids"]
    start = next(i for i in range(len(ids)) if ids[i:i + len(pieces)] == pieces)
    expected = 0.0
    for k in range(len(pieces)):
        masked = list(ids)
        for j in range(start + k, start + len(pieces)):
            masked[j] = tok.mask_token_id
        with torch.no_grad():
            logits = model(torch.tensor([masked])).logits[0, start + k]
        expected += torch.log_softmax(logits, -1)[pieces[k]].item()
    ours = masked_word_surprisal([frame], [word], lm=tiny_bert, use_cache=False)
    assert ours["n_tokens"][0] == len(pieces) > 1
    assert ours["logprob"][0] == pytest.approx(expected, abs=1e-4)
    assert ours["scoring"][0] == "masked"


def test_span_pll_scores_only_the_span(tiny_bert):
    text = "The police officer wrote a report about the accident."
    span = pll_span([text], ["police officer"], lm=tiny_bert, use_cache=False)
    n_pieces = len(tiny_bert.tokenizer.tokenize("police officer"))
    assert span["n_tokens"][0] == n_pieces
    whole = pll_sentences([text], lm=tiny_bert, use_cache=False)
    assert whole["logprob"][0] < span["logprob"][0] < 0


@pytest.mark.parametrize("neopronoun", ["xe", "xem", "xyr"])
def test_neopronouns_are_scored_as_whole_words(tiny_bert, neopronoun):
    frame = "Alex said [BLANK] would bring the notes."
    df = masked_word_surprisal([frame], [neopronoun], lm=tiny_bert, use_cache=False)
    pieces = tiny_bert.tokenizer.tokenize(neopronoun)
    assert tiny_bert.tokenizer.unk_token not in pieces
    assert df["n_tokens"][0] == len(pieces) and df["aligned"][0]
    assert np.isfinite(df["logprob"][0])


def test_unknown_token_target_raises_or_is_flagged(tiny_bert):
    # "ü" is outside the tiny vocabulary: scoring it would score [UNK], not the word
    frame = "Alex said [BLANK] would bring the notes."
    with pytest.raises(AlignmentError, match="unknown token"):
        masked_word_surprisal([frame], ["züe"], lm=tiny_bert, use_cache=False)
    df = masked_word_surprisal([frame, frame], ["züe", "xe"], lm=tiny_bert, use_cache=False,
                               on_alignment_error="nan")
    assert list(df["aligned"]) == [False, True]
    assert np.isnan(df["logprob"][0]) and "unknown token" in df["alignment_error"][0]


def test_span_must_occur_exactly_once(tiny_bert):
    with pytest.raises(AlignmentError, match="found it 2 time"):
        pll_span(["the cat saw the dog"], ["the"], lm=tiny_bert, use_cache=False)


def test_last_layer_at_the_mask_equals_the_whole_layer(tiny_bert):
    # the BERT shortcut (last layer run at the masked position only) against
    # the model's own full pass, on padded rows of different lengths
    import torch

    from models.masked import _final_hidden_at

    model, tok = tiny_bert.model, tiny_bert.tokenizer
    assert model.config.model_type == "bert"
    enc = tok(SENTENCES[:4], padding=True, return_tensors="pt")
    ids, attention = enc["input_ids"].clone(), enc["attention_mask"]
    at = torch.arange(4)
    pos = torch.tensor([1, 2, 3, 4])
    ids[at, pos] = tok.mask_token_id
    assert (attention == 0).any(), "the rows must differ in length so that padding is exercised"
    with torch.inference_mode():
        full = model.base_model(input_ids=ids, attention_mask=attention).last_hidden_state[at, pos]
        short = _final_hidden_at(model, ids, attention, at, pos)
    np.testing.assert_allclose(short.numpy(), full.numpy(), atol=1e-5, rtol=0)

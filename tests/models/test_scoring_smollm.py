"""The embedded real model, smollm2-135m: agreement with minicons, invariants, a sanity check on real text."""
from __future__ import annotations

import copy

import numpy as np
import pytest
from reference_scorers import minicons_scorer

from models.causal import score_continuations, score_sentences, token_surprisals, word_surprisals
from models.forced_choice import forced_choice

pytestmark = pytest.mark.needs_model

STIMULI = [
    "My sister said they would come tomorrow.",
    "The dentists said they were busy.",
    "The firefighter carried the ladder to the truck.",
    "Alex said xe would bring xyr notes and give them to xem.",
    "Someone left their umbrella, and we hope they come back for it.",
    "Each student must hand in the essay before noon.",
    "The chairperson opened the meeting at nine.",
    "Our neighbour said she had seen the fox in the garden last night.",
]


def test_causal_scores_agree_with_minicons(smollm):
    scorer = minicons_scorer()

    # minicons (bos_token=False) keeps the tokenizer's own special tokens; with
    # transformers 4.57 SmolLM2's tokenizer prepends <|im_start|>, i.e. our bos="prepend".
    tokenizer = copy.deepcopy(smollm.tokenizer)
    assert tokenizer("x")["input_ids"][0] == tokenizer.bos_token_id, "tokenizer no longer adds BOS"
    reference = scorer.IncrementalLMScorer(smollm.model, tokenizer=tokenizer, device="cpu")
    summed = reference.sequence_score(STIMULI, reduction=lambda x: x.sum().item())
    mean_default = reference.sequence_score(STIMULI)  # minicons' default: mean per token
    ours = score_sentences(STIMULI, lm=smollm, bos="prepend", use_cache=False)
    # minicons' default output (mean per token) within 1e-4; the sum within 2e-5 per
    # token: float32 rounding of a log-softmax over 49,152 logits is ~1e-5 per token in
    # either implementation (we apply the head only where we score; minicons everywhere)
    np.testing.assert_allclose(ours["logprob"] / ours["n_tokens"], mean_default, atol=1e-4, rtol=0)
    assert (np.abs(ours["logprob"] - summed) <= 2e-5 * ours["n_tokens"]).all()


def test_batch_1_equals_batch_16_and_tokens_sum(smollm):
    one = score_sentences(STIMULI, lm=smollm, batch_size=1, use_cache=False)
    sixteen = score_sentences(STIMULI, lm=smollm, batch_size=16, use_cache=False)
    np.testing.assert_allclose(one["logprob"], sixteen["logprob"], atol=1e-4, rtol=0)
    tokens = token_surprisals(STIMULI, lm=smollm, batch_size=16, use_cache=False)
    np.testing.assert_allclose(tokens.groupby("item")["surprisal_bits"].sum().to_numpy(),
                               sixteen["surprisal_bits"], atol=1e-6)


def test_bos_choice_changes_the_first_word_and_is_recorded(smollm):
    with_bos = score_sentences(STIMULI[:2], lm=smollm, bos="prepend", use_cache=False)
    without = score_sentences(STIMULI[:2], lm=smollm, bos="none", use_cache=False)
    assert (with_bos["bos"] == "prepend").all() and (without["bos"] == "none").all()
    # without BOS the first token is not scored, so one token fewer
    assert (with_bos["n_tokens"] - without["n_tokens"] == 1).all()


@pytest.mark.parametrize("word", ["xe", "xem", "xyr"])
def test_neopronouns_are_whole_words(smollm, word):
    text = "Alex said xe would give xem xyr notes today."
    words = word_surprisals([text], lm=smollm, use_cache=False)
    row = words[words["word"] == word].iloc[0]
    pieces = smollm.tokenizer.tokenize(" " + word)
    assert row["aligned"] and smollm.tokenizer.unk_token not in pieces
    tokens = token_surprisals([text], lm=smollm, use_cache=False)
    start = text.index(f" {word} ")
    inside = tokens[(tokens["start"] >= start) & (tokens["end"] <= start + 1 + len(word))]
    assert row["n_tokens"] == len(inside) == len(pieces)
    assert row["logprob"] == pytest.approx(inside["logprob"].sum(), abs=1e-9)


def test_forced_choice_pronouns_sum_to_one(smollm):
    df = forced_choice(["My sister said [BLANK] would come.", "The dentists said [BLANK] were busy."],
                       ["he", "she", "they", "xe"], lm=smollm, use_cache=False)
    np.testing.assert_allclose(df.groupby("item")["probability"].sum(), 1.0, atol=1e-12)
    assert df["aligned"].all()


# Sanity on real text (direction only): a plural antecedent licenses "they" far
# better than a singular gendered one. Frames fixed before looking at scores.
PLURAL_VS_SINGULAR = [
    ("The dentists said", "My sister said"),
    ("The teachers told me", "My mother told me"),
    ("The neighbours said", "My brother said"),
    ("The nurses explained that", "The actress explained that"),
    ("The students said", "His father said"),
]


def test_they_is_less_surprising_after_a_plural_subject(smollm):
    prefixes = [p for pair in PLURAL_VS_SINGULAR for p in pair]
    df = score_continuations(prefixes, [" they"] * len(prefixes), lm=smollm, use_cache=False)
    bits = df["surprisal_bits"].to_numpy().reshape(-1, 2)
    assert (bits[:, 0] < bits[:, 1]).all(), dict(zip(prefixes, df["surprisal_bits"].round(2)))

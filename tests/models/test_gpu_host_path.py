"""The GPU plan's host side (issue 41, item 5): every text encoded in one backend call,
and the padded passes laid out with numpy and run without the host waiting for the
device in between.

Each fast path is checked against the path it replaces, on the same inputs: the ids and
offsets of transformers' own tokenizer call, and the scores of `_forward_pass` run on each
token-budget chunk. The passes are the same (the same rows, widths and scored
positions), so on a CPU the numbers must be the same bits, not merely close.
"""
from __future__ import annotations

import pytest

from models import causal
from models.batching import token_budget_chunks
from models.causal import CausalUnit, encode_texts, prepare_units
from tiny_models import SENTENCES, build_tiny_causal

# texts that stress the offsets: leading, doubled and trailing whitespace, tabs and
# newlines, accents and a character outside the vocabulary, a special token's spelling
TRICKY = SENTENCES + ["  Two leading spaces.", "A doubled  space inside.", "A trailing space ",
                      "A tab\there and a newline\nthere.", "Naïve café owners.",
                      "An emoji \U0001F642 in the middle.", "[MASK] and [CLS] as text.",
                      "<|endoftext|> as text.", "x"]


def own_call(tokenizer, texts):
    enc = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
    return enc["input_ids"], [[tuple(o) for o in offsets] for offsets in enc["offset_mapping"]]


def test_one_backend_call_encodes_as_the_tokenizers_own_call(tiny_gpt2):
    assert tiny_gpt2.tokenizer.is_fast  # else this would test the fallback only
    assert encode_texts(tiny_gpt2.tokenizer, TRICKY) == own_call(tiny_gpt2.tokenizer, TRICKY)
    assert encode_texts(tiny_gpt2.tokenizer, []) == ([], [])


@pytest.mark.needs_model
def test_one_backend_call_encodes_as_smollm2s_own_call(smollm):
    # SmolLM2's byte-level BPE: spaces belong to the next token, "<|endoftext|>" is special
    assert encode_texts(smollm.tokenizer, TRICKY) == own_call(smollm.tokenizer, TRICKY)


def test_a_tokenizer_without_a_backend_takes_its_own_call(tiny_gpt2):
    class Wrapped:  # a tokenizer object that is not a fast (Rust-backed) one
        is_fast = False

        def __call__(self, *args, **kwargs):
            return tiny_gpt2.tokenizer(*args, **kwargs)

    assert encode_texts(Wrapped(), TRICKY) == own_call(tiny_gpt2.tokenizer, TRICKY)


def test_units_locate_the_continuation_as_before(tiny_gpt2):
    """The whole-text shortcut and the prefix path give the span check's first token."""
    from models.words import tokens_in_span

    prefixes = ["", "", "My sister said", "The dentists", ""]
    continuations = ["  Two leading spaces.", "x", " they would come.", " said they were busy.",
                     "A tab\there."]
    for bos in ("prepend", "none"):
        units = prepare_units(tiny_gpt2, prefixes, continuations, bos)
        ids, offsets = own_call(tiny_gpt2.tokenizer, [u.text for u in units])
        shift = 1 if bos == "prepend" else 0
        for unit, p, token_ids, token_offsets in zip(units, prefixes, ids, offsets):
            first = tokens_in_span(unit.text, token_offsets, (len(p), len(unit.text)))[0]
            assert unit.ids == [tiny_gpt2.tokenizer.bos_token_id] * shift + token_ids
            assert unit.targets == list(range(first + shift, len(token_ids) + shift))
            assert unit.offsets == token_offsets[first:]


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory, tiny_bert_dir):
    from models.loading import load_scorer

    return load_scorer(str(build_tiny_causal(tmp_path_factory.mktemp("tiny_llama"), tiny_bert_dir,
                                             "llama")))


def per_chunk(lm, units, budget):
    """What the token-budget path ran before: `_forward_pass` on each chunk."""
    out = [None] * len(units)
    for chunk in token_budget_chunks([len(u.ids) for u in units], budget):
        for i, result in zip(chunk, causal._forward_pass(lm, [units[i] for i in chunk], False)):
            out[i] = result
    return out


@pytest.mark.parametrize("model", ["tiny_gpt2", "tiny_llama"])
@pytest.mark.parametrize("budget", [12, 40, 10_000])
@pytest.mark.parametrize("whole_logits", [False, True])
def test_padded_passes_give_the_per_chunk_scores_bit_for_bit(request, monkeypatch, model, budget,
                                                             whole_logits):
    lm = request.getfixturevalue(model)
    if whole_logits:  # an architecture whose logits are not the head at the scored positions
        monkeypatch.setattr(causal, "HEAD_ONLY_WHERE_SCORED", set())
    texts = SENTENCES + ["x", "A doubled  space inside."]
    units = prepare_units(lm, [""] * len(texts), texts, "prepend")
    # with a prefix, and without BOS (a text's first token is not scored: None)
    units += prepare_units(lm, ["My sister said", "The dentists"], [" they would come.", " said"],
                           "prepend")
    units += prepare_units(lm, ["", ""], ["The chairperson opened it.", "x"], "none")
    # targets by hand: out of order, position 0 among them, and none at all
    units += [CausalUnit("hand", 0, [5, 6, 7, 8, 9], [3, 0, 1], [(0, 1)] * 3),
              CausalUnit("none", 0, [5, 6, 7], [], [])]
    expected = per_chunk(lm, units, budget)
    found = causal._forward_padded_passes(lm, units, budget)
    assert found == expected
    assert found[-2]["logprobs"][1] is None and found[-1]["logprobs"] == []
    assert causal._forward_padded_passes(lm, [], budget) == []


def test_the_gpu_plan_takes_the_padded_passes(tiny_gpt2, monkeypatch):
    """forward_logprobs with a budget and no sharing (the GPU's default) runs them; sharing
    keeps the per-chunk path, where a chunk's shared beginnings run as token trees."""
    calls = []
    real = causal._forward_padded_passes
    monkeypatch.setattr(causal, "_forward_padded_passes",
                        lambda *args: calls.append(args) or real(*args))
    units = prepare_units(tiny_gpt2, [""] * len(SENTENCES), SENTENCES, "prepend")
    causal.forward_logprobs(tiny_gpt2, units, token_budget=40, share_prefixes=False)
    assert len(calls) == 1
    causal.forward_logprobs(tiny_gpt2, units, token_budget=40, share_prefixes=True)
    causal.forward_logprobs(tiny_gpt2, units, token_budget=None, share_prefixes=False)
    assert len(calls) == 1

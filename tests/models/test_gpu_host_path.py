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


def test_cache_keys_are_cache_keys():
    from models.cache import cache_key, cache_keys

    namespace = {"scorer": "causal_token_logprobs", "model": "smollm2-135m", "bos": "prepend",
                 "dtype": "float32", "note": "naïve \u2013 ünïcode"}
    parts = [["", "My sister said they would come."], ["A prefix", " they"],
             ["", "Naïve café \U0001F642 \"quoted\" \\ back"], ["text", None], ["text", [3, 9]],
             ("a", "tuple")]
    assert cache_keys(namespace, parts) == [cache_key(namespace, p) for p in parts]
    assert cache_keys(namespace, iter(parts)) == [cache_key(namespace, p) for p in parts]
    assert cache_keys({}, []) == []


@pytest.mark.parametrize("values, found", [
    ([-1.5, None, -0.25, 0.0], None), ([], None), ([None], None), ([1e308, 1e308], None),
    ([-1.0, float("nan"), -2.0], 1), ([-1.0, -float("inf")], 1), ([float("inf"), None], 0),
    ([-1.0, "-2.0"], 1), ([-1.0, [2.0]], 1), ([-1.0, {"a": 1}], 1), ([True, -1.0], None)])
def test_the_quick_finite_check_finds_what_the_walk_finds(values, found):
    from models.batching import nonfinite_at

    assert nonfinite_at({"logprobs": values}) == found


def test_scoring_freezes_the_older_objects_and_puts_them_back(tiny_gpt2):
    import gc

    from models.batching import older_objects_frozen
    from models.causal import score_sentences

    assert gc.get_freeze_count() == 0
    seen = []
    real = causal._forward_pass

    def looking(*args):
        seen.append(gc.get_freeze_count())
        return real(*args)

    causal._forward_pass, before = looking, causal._forward_pass
    try:
        score_sentences(SENTENCES, lm=tiny_gpt2, use_cache=False)
    finally:
        causal._forward_pass = before
    assert seen and all(count > 0 for count in seen)  # frozen while the passes ran
    assert gc.get_freeze_count() == 0  # and put back after
    with pytest.raises(KeyError):
        with older_objects_frozen():
            raise KeyError("inside")
    assert gc.get_freeze_count() == 0  # put back after an error too
    # an outer freeze (the application's) is left as it is: not undone at the block's end
    # (the count itself may fall meanwhile: a frozen object freed leaves the frozen set)
    gc.freeze()
    try:
        with older_objects_frozen():
            pass
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_a_cycle_made_while_frozen_is_still_collected():
    import gc
    import weakref

    from models.batching import older_objects_frozen

    class Node:
        pass

    with older_objects_frozen():
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle: reference counting alone never frees it
        alive = weakref.ref(a)
        del a, b
        gc.collect()
        assert alive() is None


def masked_per_pass(lm, units, max_rows, token_budget):
    """The masked copies as forward_masked built them before issue 41: on the device, pass
    by pass, each pass's scores copied back at once (kept here as the reference)."""
    import numpy as np
    import torch

    from models import masked

    mask_id, pad_id = lm.tokenizer.mask_token_id, lm.tokenizer.pad_token_id or 0
    rows, unit_rows = masked._masked_rows(units)
    values = np.empty(len(rows))
    head = masked._head(lm)
    with torch.inference_mode():
        lengths = torch.tensor([len(u.ids) for u in units])
        flat = torch.tensor([t for u in units for t in u.ids], dtype=torch.long)
        attention_all = torch.arange(int(lengths.max()))[None, :] < lengths[:, None]
        ids_all = torch.full(attention_all.shape, pad_id, dtype=torch.long)
        ids_all[attention_all] = flat
        for chunk in masked._row_chunks([len(units[row[0]].ids) for row in rows], max_rows,
                                        token_budget):
            width = max(len(units[rows[r][0]].ids) for r in chunk)
            source = torch.tensor([rows[r][0] for r in chunk])
            pos = torch.tensor([rows[r][1] for r in chunk])
            at = torch.arange(len(chunk))
            input_ids = ids_all[source, :width]
            attention = attention_all[source, :width].long()
            gold = input_ids[at, pos]
            input_ids[torch.tensor([k for k, r in enumerate(chunk) for _ in rows[r][2]],
                                   dtype=torch.long),
                      torch.tensor([j for r in chunk for j in rows[r][2]], dtype=torch.long)] = mask_id
            if head is not None:
                logits = head(masked._final_hidden_at(lm.model, input_ids, attention, at, pos))
            else:
                logits = lm.model(input_ids=input_ids, attention_mask=attention).logits[at, pos]
            values[chunk] = torch.log_softmax(logits.float(), dim=-1)[at, gold].double().numpy()
    return [{"logprobs": [float(values[r]) for r in mine], "offsets": [tuple(o) for o in u.offsets]}
            for u, mine in zip(units, unit_rows)]


@pytest.mark.parametrize("variant", ["pll_original", "pll_word_l2r"])
@pytest.mark.parametrize("max_rows, budget", [(7, None), (256, None), (256, 16), (256, 200)])
@pytest.mark.parametrize("whole_model", [False, True])
def test_masked_passes_give_the_per_pass_scores_bit_for_bit(tiny_bert, monkeypatch, variant,
                                                            max_rows, budget, whole_model):
    from models import masked

    if whole_model:  # an architecture whose head cannot run at the masked positions only
        monkeypatch.setattr(masked, "HEAD_ONLY_AT_MASK", set())
    texts = SENTENCES + ["x", "The chairperson opened the meeting at nine."]  # a repeat shares rows
    units = masked.prepare_masked(tiny_bert, texts, [None] * len(texts), variant)
    spans = [(3, 9), (10, 14)]  # "sister", "said" in SENTENCES[0]: the same sentence twice
    units += masked.prepare_masked(tiny_bert, [SENTENCES[0]] * 2, spans, variant)
    expected = masked_per_pass(tiny_bert, units, max_rows, budget)
    assert masked.forward_masked(tiny_bert, units, max_rows, budget) == expected
    assert masked.forward_masked(tiny_bert, [], max_rows, budget) == []


@pytest.mark.parametrize("arch", ["llama", "mistral", "qwen2", "gpt_neox"])
def test_right_padded_passes_need_no_padding_mask(tmp_path, tiny_bert_dir, arch):
    """The GPU runs these architectures' padded passes with the causal mask alone: a real
    token never sees the padding after it, so its scores are those of the masked pass."""
    import numpy as np

    from models.loading import load_scorer

    assert arch in causal.CAUSAL_MASK_SUFFICES
    lm = load_scorer(str(build_tiny_causal(tmp_path / arch, tiny_bert_dir, arch)))
    seen = []
    handle = lm.model.base_model.register_forward_pre_hook(
        lambda module, args, kwargs: seen.append(kwargs.get("attention_mask")), with_kwargs=True)
    texts = SENTENCES + ["x", "A doubled  space inside."]
    units = prepare_units(lm, [""] * len(texts), texts, "prepend")
    try:
        masked = causal._forward_padded_passes(lm, units, 40)  # on a CPU: with the mask
        assert seen and all(mask is not None for mask in seen)
        seen.clear()
        bare = causal._forward_padded_passes(lm, units, 40, causal_only=True)
        assert seen and all(mask is None for mask in seen)
    finally:
        handle.remove()
    assert len(bare) == len(masked)
    for a, b in zip(bare, masked):
        assert a["offsets"] == b["offsets"]
        np.testing.assert_allclose(a["logprobs"], b["logprobs"], rtol=0, atol=1e-6)

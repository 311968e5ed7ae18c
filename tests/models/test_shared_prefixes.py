"""Texts that begin alike share one run of their beginning (models.causal, packed rows).

Every distinct beginning of the texts in a batch is run once (a prefix tree,
packed into rows). The packed path must give what one whole-text pass per text gives. Both are
computed here on the same model, with prefix sharing switched off for the
reference; per-token agreement within 1e-4 (float32 rounding of a
different summation order, ~1e-5 per token).
"""
from __future__ import annotations

import numpy as np
import pytest

import models.causal as causal
from models.causal import (prefix_tree_rows, score_continuations, shares_beginnings,
                           token_surprisals)

# texts sharing beginnings of different lengths, one sharing nothing, and a
# forced choice (same frame, four pronouns)
TEXTS = [
    "My sister said they would come tomorrow.",
    "My sister said she would come tomorrow.",
    "My sister told me that they had left.",
    "My brother said he was tired after the long shift.",
    "The dentists said they were busy.",
    "The dentists said they were busy all week and could not come.",
    "Each student must hand in the essay before noon.",
    "Alex said xe would bring xyr notes.",
    "Alex said they would bring their notes.",
    "Alex said he would bring his notes.",
    "Alex said she would bring her notes.",
]


def test_every_distinct_beginning_is_laid_out_once():
    # hand-worked tree of [1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 6], [7]:
    #   1 - 2 - 3 - 4        nodes in depth-first order: 1 2 3 4 5 6 7
    #            \- 5
    #        \- 6
    #   7
    layout = prefix_tree_rows([[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 6], [7]])
    assert layout.ids == [[1, 2, 3, 4, 5, 6, 7]]
    assert layout.parents == [[-1, 0, 1, 2, 2, 1, -1]]
    assert layout.positions == [[0, 1, 2, 3, 3, 2, 0]]
    assert layout.where == [[(0, 0), (0, 1), (0, 2), (0, 3)], [(0, 0), (0, 1), (0, 2), (0, 4)],
                            [(0, 0), (0, 1), (0, 5)], [(0, 6)]]
    assert layout.n_tokens == 7  # against 12 fed
    # identical sequences share every token; a sequence that begins another ends inside it
    same = prefix_tree_rows([[1, 2, 3], [1, 2, 3], [1, 2]])
    assert same.ids == [[1, 2, 3]] and same.where == [[(0, 0), (0, 1), (0, 2)]] * 2 + [[(0, 0), (0, 1)]]
    assert prefix_tree_rows([]).ids == [[]]


def test_a_tree_larger_than_a_row_is_split_below_a_copy_of_its_path():
    # rows of 5 tokens: the tree under [1, 2] (7 nodes) is split into its two
    # branches, each after a copy of [1, 2]; [1, 2] itself ends a sequence, so
    # it keeps a piece of its own
    seqs = [[1, 2, 3, 4, 5], [1, 2, 6, 7, 8], [1, 2]]
    layout = prefix_tree_rows(seqs, pack_tokens=5)
    assert sorted(layout.ids) == [[1, 2], [1, 2, 3, 4, 5], [1, 2, 6, 7, 8]]
    for seq, where in zip(seqs, layout.where):
        # each sequence reads back from its own row, every token at its depth
        assert [layout.ids[r][c] for r, c in where] == seq
        assert [layout.positions[r][c] for r, c in where] == list(range(len(seq)))
        assert len({r for r, _ in where}) == 1
    # a chain longer than a row cannot be split: it gets a row of its own size
    assert prefix_tree_rows([[1, 2, 3, 4, 5, 6]], pack_tokens=2).ids == [[1, 2, 3, 4, 5, 6]]


def test_sharing_is_worth_it_from_two_common_leading_tokens():
    assert shares_beginnings([[1, 2, 3], [1, 2, 4]])
    assert not shares_beginnings([[1, 2, 3], [1, 5, 4]])  # BOS alone is not worth a mask
    assert not shares_beginnings([[1, 2, 3], [1, 2, 4]], min_shared=3)
    assert not shares_beginnings([])


def _without_sharing(monkeypatch):
    monkeypatch.setattr(causal, "SHARE_PREFIXES", set())


def _tokens(lm, texts, **kw):
    return token_surprisals(texts, lm=lm, use_cache=False, **kw)["logprob"].to_numpy()


@pytest.mark.parametrize("pack_tokens", [256, 12])  # 12: a batch spreads over several rows
def test_packed_rows_equal_whole_text_passes_tiny_gpt2(tiny_gpt2, monkeypatch, pack_tokens):
    monkeypatch.setattr(causal, "PACK_TOKENS", pack_tokens)
    shared = _tokens(tiny_gpt2, TEXTS)
    _without_sharing(monkeypatch)
    plain = _tokens(tiny_gpt2, TEXTS)
    np.testing.assert_allclose(shared, plain, atol=1e-4, rtol=0)


@pytest.mark.parametrize("model_type", sorted(causal.SHARE_PREFIXES - {"gpt2"}))
def test_packed_rows_equal_whole_text_passes_other_architectures(tiny_bert_dir, tmp_path, monkeypatch,
                                                                 model_type):
    # every architecture the engine shares prefixes for must pass this on a model of its own
    from models.loading import load_scorer
    from tiny_models import build_tiny_causal

    lm = load_scorer(str(build_tiny_causal(tmp_path / model_type, tiny_bert_dir, model_type)))
    assert lm.model_type == model_type and model_type in causal.SHARE_PREFIXES
    monkeypatch.setattr(causal, "PACK_TOKENS", 12)
    shared = _tokens(lm, TEXTS)
    assert not np.isnan(shared).any()
    _without_sharing(monkeypatch)
    plain = _tokens(lm, TEXTS)
    np.testing.assert_allclose(shared, plain, atol=1e-4, rtol=0)


def test_the_shared_path_is_taken(tiny_gpt2, monkeypatch):
    # guard against the comparison above passing because both runs were plain
    calls = []
    original = causal._hidden_packed
    monkeypatch.setattr(causal, "_hidden_packed", lambda *a: calls.append(1) or original(*a))
    _tokens(tiny_gpt2, TEXTS)
    assert calls


def test_texts_longer_than_a_sliding_window_are_run_whole(tiny_bert_dir, tmp_path, monkeypatch):
    # the packed mask replaces the model's own, sliding window included
    from models.loading import load_scorer
    from tiny_models import build_tiny_causal

    lm = load_scorer(str(build_tiny_causal(tmp_path / "mistral", tiny_bert_dir, "mistral",
                                           sliding_window=4)))
    calls = []
    original = causal._hidden_packed
    monkeypatch.setattr(causal, "_hidden_packed", lambda *a: calls.append(1) or original(*a))
    _tokens(lm, TEXTS)
    assert not calls


@pytest.mark.needs_model
def test_packed_rows_equal_whole_text_passes_smollm2(smollm, monkeypatch):
    prefixes = ["My sister said", "My sister said", "My sister said", "My sister said", "The dentists said"]
    continuations = [" he would come.", " she would come.", " they would come.", " xe would come.",
                     " they were busy."]
    shared = _tokens(smollm, TEXTS, bos="prepend")
    shared_cont = score_continuations(prefixes, continuations, lm=smollm, use_cache=False)
    _without_sharing(monkeypatch)
    plain = _tokens(smollm, TEXTS, bos="prepend")
    plain_cont = score_continuations(prefixes, continuations, lm=smollm, use_cache=False)
    np.testing.assert_allclose(shared, plain, atol=1e-4, rtol=0)
    np.testing.assert_allclose(shared_cont["logprob"], plain_cont["logprob"], atol=1e-4, rtol=0)

"""Texts that begin alike share one run of their beginning (models.causal, packed rows).

The packed path must give what one whole-text pass per text gives. Both are
computed here on the same model, with prefix sharing switched off for the
reference; per-token agreement within 1e-4 (float32 rounding of a
different summation order, ~1e-5 per token).
"""
from __future__ import annotations

import numpy as np
import pytest

import models.causal as causal
from models.causal import score_continuations, shared_prefixes, token_surprisals, token_tree

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


def test_groups_share_the_longest_useful_prefix():
    # hand-worked: one group over all three shares [1, 2, 3] (3 tokens, kept
    # below the shortest member's length 4)
    assert shared_prefixes([[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 3, 6, 7]]) == [(0, 3)] * 3
    # nothing in common: each text runs whole
    assert [length for _, length in shared_prefixes([[1, 9], [2, 9]])] == [0, 0]
    # a group runs as a token tree: all four together run 6 + 1 + 2 + 1 = 10 token
    # positions ([1, 2] once, [3, 4, 5] once, [8] once), two pairs 7 + 5 = 12, so one group
    # of four it is; its common prefix is [1, 2]
    groups = shared_prefixes([[1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 7], [1, 2, 8, 1], [1, 2, 8, 2]])
    assert [length for _, length in groups] == [2, 2, 2, 2]
    assert len({g for g, _ in groups}) == 1
    # ... unless the attention over one wide row costs more than it saves: with the
    # quadratic term weighing in at 8 tokens, the two pairs (7 + 49/8, 5 + 25/8 = 21.25)
    # beat the group of four (10 + 100/8 = 22.5)
    groups = shared_prefixes([[1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 7], [1, 2, 8, 1], [1, 2, 8, 2]],
                             quadratic_tokens=8)
    assert [length for _, length in groups] == [5, 5, 3, 3]
    assert groups[0][0] == groups[1][0] != groups[2][0] == groups[3][0]
    # identical texts still keep one token of their own
    assert [length for _, length in shared_prefixes([[1, 2, 3], [1, 2, 3]])] == [2, 2]
    # below min_shared, nothing is shared
    assert [length for _, length in shared_prefixes([[1, 5, 6], [1, 5, 7]], min_shared=3)] == [0, 0]
    assert shared_prefixes([]) == []


def test_token_tree_runs_each_distinct_beginning_once():
    tokens, parents, paths = token_tree([[1, 2, 3], [1, 2, 4], [1, 5], [1, 2, 3]])
    assert tokens == [1, 2, 3, 4, 5]
    assert parents == [-1, 0, 1, 1, 0]
    assert paths == [[0, 1, 2], [0, 1, 3], [0, 4], [0, 1, 2]]


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


def test_the_head_runs_once_per_tree_node(tiny_gpt2, monkeypatch):
    """Four pronouns after one frame are scored from one node (the frame's last token): the
    vocabulary head sees that node once, not four times, and the scores still equal the
    whole-text passes'."""
    frame = "Alex said"
    continuations = [" xe would come.", " they would come.", " he would come.", " she would come."]
    heads = []
    head = tiny_gpt2.model.get_output_embeddings()
    monkeypatch.setattr(head, "forward", lambda hidden, _f=head.forward: heads.append(
        hidden.shape[0]) or _f(hidden))
    shared = score_continuations([frame] * 4, continuations, lm=tiny_gpt2, use_cache=False,
                                 progress=False)["logprob"].to_numpy()
    units = causal.prepare_units(tiny_gpt2, [frame] * 4, continuations, "prepend")
    scored_tokens = sum(len(u.targets) for u in units)
    distinct_nodes = len({tuple(u.ids[:p]) for u in units for p in u.targets})
    assert heads == [distinct_nodes] and distinct_nodes < scored_tokens
    heads.clear()
    _without_sharing(monkeypatch)
    plain = score_continuations([frame] * 4, continuations, lm=tiny_gpt2, use_cache=False,
                                progress=False)["logprob"].to_numpy()
    np.testing.assert_allclose(shared, plain, atol=1e-4, rtol=0)


STORY = "My sister told me a story about the dentists and the nurses, and then she said"
TRUNK_CONTINUATIONS = [" they would come.", " she would come.", " he was tired.",
                       " they were busy all week.", " xe would bring xyr notes."]
# a tree that branches twice below its trunk (as pronoun_memory's: a context, then each
# prompt's frame, then its options), and a text that ends where the branches start
MIDS = [" that", " that night", " quietly that"]
NESTED_PREFIXES = [STORY + mid for mid in MIDS for _ in TRUNK_CONTINUATIONS] + [STORY]
NESTED_CONTINUATIONS = TRUNK_CONTINUATIONS * len(MIDS) + [" nothing."]


def test_the_trunk_is_the_nodes_every_text_runs_through():
    assert causal.trunk_length([[0, 1, 2, 3], [0, 1, 2, 4], [0, 1, 5]]) == 2
    assert causal.trunk_length([[0, 1, 2]]) == 3
    assert causal.trunk_length([[0, 1, 2], [0, 1]]) == 2  # a text may end at the trunk's end
    assert causal.trunk_length([[0, 1], [2, 3]]) == 0


# node: 0 - 1 - 2 - 3 - 4 (the trunk), then 5 - 6 - {7, 8} and 9 - 10 - {11, 12}
NESTED_PARENTS = [-1, 0, 1, 2, 3, 4, 5, 6, 6, 4, 9, 10, 10]


def _check_plan(parents, plan):
    """Every node runs once, after its parent, on a cache that holds exactly its ancestors
    outside its own pass (the cache after cutting back to `kept`)."""
    ran = np.concatenate([nodes for _, nodes in plan])
    assert sorted(ran.tolist()) == list(range(len(parents)))
    cache: list[int] = []
    for kept, nodes in plan:
        cache = cache[:kept]
        inside = set(nodes.tolist())
        for node in nodes.tolist():
            ancestors, up = [], parents[node]
            while up >= 0:
                if up not in inside:
                    ancestors.append(up)
                up = parents[up]
            assert sorted(ancestors) == sorted(cache), (node, cache)
        cache += nodes.tolist()


def test_tree_plan_splits_where_the_pairs_saved_pay_for_the_passes():
    # a pass costing nothing: every chain runs alone, each branch on its ancestors' keys
    plan = causal.tree_plan(NESTED_PARENTS, overhead=0, copy_pairs=0)
    _check_plan(NESTED_PARENTS, plan)
    assert [(kept, nodes.tolist()) for kept, nodes in plan] == [
        (0, [0, 1, 2, 3, 4]), (5, [5, 6]), (7, [7]), (7, [8]), (5, [9, 10]), (7, [11]),
        (7, [12])]
    # a pass dearer than any pairs it saves: the tree runs whole, as one masked pass
    whole = causal.tree_plan(NESTED_PARENTS, overhead=1e9)
    assert len(whole) == 1 and whole[0][0] == 0 and whole[0][1].tolist() == list(range(13))
    # in between: the trunk alone, then each branch whole (three passes, not seven)
    middle = causal.tree_plan(NESTED_PARENTS, overhead=10, copy_pairs=0)
    _check_plan(NESTED_PARENTS, middle)
    assert [(kept, nodes.tolist()) for kept, nodes in middle] == [
        (0, [0, 1, 2, 3, 4]), (5, [5, 6, 7, 8]), (5, [9, 10, 11, 12])]
    # no single root (texts that share nothing): one pass
    assert len(causal.tree_plan([-1, 0, -1, 2], overhead=0)) == 1


def test_the_trunk_plan_off_the_cpu(monkeypatch):
    monkeypatch.setattr(causal, "TRUNK_TOKENS", 5)
    paths = [[0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 2, 3, 4, 5, 6, 8], [0, 1, 2, 3, 4, 9, 10, 11]]
    plan = causal.trunk_plan(paths, 12)
    assert [(kept, nodes.tolist()) for kept, nodes in plan] == [
        (0, [0, 1, 2, 3, 4]), (5, [5, 6, 7, 8, 9, 10, 11])]
    monkeypatch.setattr(causal, "TRUNK_TOKENS", 6)
    assert len(causal.trunk_plan(paths, 12)) == 1


def _planned_scores(lm, monkeypatch, how: str):
    """NESTED's continuations scored with each single-tree row run as `how` says: "split"
    (every chain in a pass of its own), "trunk" (the off-CPU plan, trunks of 8 tokens or
    more), "whole" (one masked pass); and the number of passes of the planned rows."""
    passes = []
    original = causal._planned_row
    monkeypatch.setattr(causal, "_planned_row",
                        lambda *a: passes.append(len(a[-1])) or original(*a))
    if how == "trunk":
        plan = causal.row_plan
        monkeypatch.setattr(causal, "row_plan", lambda tree, device: plan(tree, "cuda"))
        monkeypatch.setattr(causal, "TRUNK_TOKENS", 8)
    monkeypatch.setattr(causal, "PASS_OVERHEAD_PAIRS", {"whole": 1e18}.get(how, 0))
    monkeypatch.setattr(causal, "CACHE_COPY_PAIRS", 0)
    scored = score_continuations(NESTED_PREFIXES, NESTED_CONTINUATIONS, lm=lm, use_cache=False)
    monkeypatch.undo()
    return scored["logprob"].to_numpy(), passes


def _plans_equal_whole_text_passes(lm, monkeypatch):
    split, split_passes = _planned_scores(lm, monkeypatch, "split")
    assert split_passes and max(split_passes) > 2  # chains below the trunk ran on its cache
    trunk, trunk_passes = _planned_scores(lm, monkeypatch, "trunk")
    assert trunk_passes == [2]  # the trunk, then the rest on its keys and values
    whole, none = _planned_scores(lm, monkeypatch, "whole")
    assert not none
    _without_sharing(monkeypatch)
    plain = score_continuations(NESTED_PREFIXES, NESTED_CONTINUATIONS, lm=lm,
                                use_cache=False)["logprob"].to_numpy()
    assert not np.isnan(split).any()
    for found in (split, trunk, whole):
        np.testing.assert_allclose(found, plain, atol=1e-4, rtol=0)


@pytest.mark.parametrize("model_type", sorted(causal.SHARE_PREFIXES))
def test_a_tree_run_in_planned_passes_equals_whole_text_passes(tiny_gpt2, tiny_bert_dir,
                                                               tmp_path, monkeypatch, model_type):
    # the ancestors' keys and values carried into each pass (a KV cache with a custom 4D
    # mask, cut back between branches) must work on every architecture the engine shares
    # prefixes for
    from models.loading import load_scorer
    from tiny_models import build_tiny_causal

    lm = tiny_gpt2 if model_type == "gpt2" else load_scorer(
        str(build_tiny_causal(tmp_path / model_type, tiny_bert_dir, model_type)))
    _plans_equal_whole_text_passes(lm, monkeypatch)


@pytest.mark.needs_model
def test_a_tree_run_in_planned_passes_equals_whole_text_passes_smollm2(smollm, monkeypatch):
    _plans_equal_whole_text_passes(smollm, monkeypatch)

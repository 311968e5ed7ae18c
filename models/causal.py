"""Causal-LM scoring: one shared path for every score type.

    prepare (tokenize prefix+continuation, locate the scored tokens by offsets)
      -> per-token log-probs (batched forward passes, cached)
      -> a named reduction (sum) into a long table.

BOS is explicit. `bos="prepend"` puts the tokenizer's BOS token (or, if it has
none, EOS, as GPT-2 style models use it) before the text, so the first word is
scored given "start of text"; `bos="none"` scores the text as is, and then the
first token of a text without a prefix has no left context and is not scored
(its logprob is NaN and it is not counted in `n_tokens`). Texts are always
tokenized without the tokenizer's own special tokens, because tokenizers
disagree on whether they add BOS (SmolLM2's does under transformers 4.57 and
not under 5.x).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import chain
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError, UnknownNameError
from models.batching import plan_batches, run_units, token_budget_chunks
from models.cache import cache_keys, open_cache
from models import gpu
from models.engine import BatchScorer
from models.loading import LanguageModel, load_scorer, require_fits_context
from models.registry import DEFAULT_MODEL
from models.scores import BOS_OPTIONS, LN2, finish_table
from models.words import (AlignmentError, first_visible_char, tokens_in_span,
                          tokens_to_words, word_spans)

# Architectures whose base model already ends in the final norm and whose
# logits are exactly `lm_head(hidden)`, so the head can be applied only at the
# positions we score (no logit scaling or soft-capping to reproduce).
HEAD_ONLY_WHERE_SCORED = {"llama", "mistral", "qwen2", "gpt2", "gpt_neox"}
# Architectures that take a custom 4D attention mask and explicit position
# ids, so several texts can share one packed row and a shared prefix can be
# run once. Each is tested against whole-text passes on a model of its own
# (SmolLM2 is llama; tiny random models for the rest). Their texts are sorted
# by token ids, not length, so that sharers meet in a batch.
SHARE_PREFIXES = {"llama", "gpt2", "mistral", "qwen2", "gpt_neox"}
# Architectures whose positions do not come from the attention mask and whose
# forward reads nothing else from it, so a right-padded pass needs only the causal
# mask (`_forward_padded_passes`). Not gpt2: its forward reads the input ids back to
# warn about padding when no mask is given.
CAUSAL_MASK_SUFFICES = {"llama", "mistral", "qwen2", "gpt_neox"}
MIN_SHARED = 2  # leading tokens (BOS included) worth sharing
PACK_TOKENS = 256  # tokens per packed row: attention over a row costs its length squared
# off the CPU, a token tree whose texts share this many first tokens or more runs its trunk
# causally, in a pass of its own (trunk_plan)
TRUNK_TOKENS = 256
# On the CPU a tree alone in its row runs in the passes tree_plan weighs with these, in
# query-key pairs of one layer's attention (SDPA ran 20-23M pairs/s a layer on one thread,
# 2026-12-07): a forward pass's fixed cost (a 2-token pass of SmolLM2-135M took 77 ms on one
# thread, 56k pairs), and copying one cached key and value into a pass (the cache is
# concatenated layer by layer: ~3 KB a token and layer, ~16 pairs at memory speed)
PASS_OVERHEAD_PAIRS = 60_000
CACHE_COPY_PAIRS = 16
CPU_BAND_PAD = 4  # padding (tokens per row) a CPU pass takes rather than another pass (row_bands)
# The row width at which a packed row's attention (quadratic in the width) costs as much as
# the rest of the layer (linear): for a llama-style layer of width d and MLP width d_ff,
# per token ~2(4d^2 + 3 d d_ff) flops against ~4d per query-key pair, i.e. 2d + 1.5 d_ff
# tokens (3456 for SmolLM2-135M). shared_prefixes weighs groups with it.
QUADRATIC_TOKENS = 4096
GROUP_TOKENS_MAX = 6144  # no token tree wider than this (its mask is width^2 per row)


@dataclass
class CausalUnit:
    text: str  # prefix + continuation
    prefix_len: int  # characters
    ids: list  # token ids fed to the model (BOS included when prepended)
    targets: list  # indices into ids of the continuation's tokens
    offsets: list  # (start, end) in `text` of each target token


def _as_lm(lm) -> LanguageModel:
    return lm if isinstance(lm, LanguageModel) else load_scorer(lm)


def _check_bos(bos: str) -> None:
    if bos not in BOS_OPTIONS:
        raise UnknownNameError("bos option", bos, list(BOS_OPTIONS))


def _check_texts(texts, name: str, *, allow_empty: bool = False) -> list[str]:
    texts = list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str) or (not allow_empty and not t.strip()):
            raise DataValidationError(f"every {name} must be a non-empty string", source=name,
                                      row=i + 1, expected="non-empty str", found=repr(t))
    return texts


def _items(items, n: int) -> list:
    if items is None:
        return list(range(n))
    items = list(items)
    if len(items) != n:
        raise DataValidationError("items and texts differ in length", source="items",
                                  expected=f"{n} items", found=f"{len(items)}")
    return items


def require_clean_joins(prefixes: list[str], continuations: list[str], items: list) -> None:
    """Refuse a prefix ending in whitespace joined to a continuation starting with it.

    The continuation is appended verbatim, so "My sister said that " + " they"
    is scored as "that  they": a doubled space is another token to a BPE
    tokenizer, and it moved the surprisal of " they" from 7-9 bits to 22-23
    (issue 33). A prefix's trailing space before a continuation without one
    ("that " + "they") is the same text as "that" + " they" and is scored so.
    Files read by `python -m models score` and the studies have their
    prefixes' trailing whitespace removed before they get here (and counted).
    """
    for k, (prefix, continuation) in enumerate(zip(prefixes, continuations)):
        if prefix[-1:].isspace() and continuation[:1].isspace():
            raise DataValidationError(
                f"item {items[k]!r}: the prefix ends in whitespace and the continuation starts "
                f"with it, so the text would hold a doubled space "
                f"({(prefix[-12:] + continuation[:12])!r})", source="prefixes", row=k + 1,
                expected="one space between them: strip the prefix's trailing whitespace "
                         "(the continuation carries its leading space, ' they')",
                found=f"prefix {prefix[-20:]!r}, continuation {continuation[:20]!r}")


def bos_id(lm: LanguageModel) -> int:
    tok = lm.tokenizer
    found = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    if found is None:
        raise UnknownNameError("bos option", "prepend", ["none"])
    return found


def encode_texts(tokenizer, texts: list[str]) -> tuple[list[list[int]], list[list[tuple]]]:
    """(token ids, character offsets) of each text, without the tokenizer's special tokens.

    A fast (Rust) tokenizer encodes the whole list in one backend call and its ids and
    offsets are read off the encodings as they are: transformers' own call builds a
    dict of Python lists per text (_convert_encoding), which cost more than the
    encoding itself (0.4 ms a text, most of the host's tokenizing time, issue 41).
    transformers first sets the backend's state for the call (no padding, no
    truncation, whether special tokens in the text are split); the one-text call
    below does that with these very options, so the backend then encodes as
    transformers' call would. Any other tokenizer, or a backend left padding or
    truncating, takes transformers' call.
    """
    if not texts:  # transformers' call fails on an empty list
        return [], []
    backend = getattr(tokenizer, "backend_tokenizer", None) if getattr(
        tokenizer, "is_fast", False) else None
    if backend is not None:
        tokenizer(texts[:1], add_special_tokens=False, return_offsets_mapping=True)
        if backend.padding is None and backend.truncation is None:
            encodings = backend.encode_batch(texts, add_special_tokens=False)
            return [e.ids for e in encodings], [e.offsets for e in encodings]
    enc = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
    return enc["input_ids"], [[tuple(o) for o in offsets] for offsets in enc["offset_mapping"]]


def result_offsets(offsets) -> list[tuple]:
    """A fresh result's token offsets, as (start, end) tuples.

    CPython stops tracking a tuple of numbers for cyclic garbage at its first
    collection; a list it tracks for good. As lists, the offset pairs of 8,000 results
    (~120,000) were counted as long-lived objects, so every run of 8,000 texts set off a
    full collection over every object in the process: 0.4 s per run on the GPU machine
    with a compiled model loaded (benchmarks/results/gpu_scoring.json, stall_seconds),
    a third of a 135M model's run (issue 41; as tuples, half of the runs there: the units
    and the result lists remain). The cache stores tuples and lists as the same JSON
    arrays; a cached result holds lists, which every reader takes alike.
    """
    return [tuple(o) for o in offsets]


def _first_scored(text: str, prefix_len: int, offsets: list[tuple]) -> int:
    """The index of the continuation's first token (`tokens_in_span` of the continuation).

    A whole text (no prefix) has no edge a token could cross, so its first token that
    holds a visible character is the answer, found without the span check's walk over
    every token; a prefix's edge is checked by `tokens_in_span`.
    """
    if prefix_len == 0:
        for i, (start, end) in enumerate(offsets):
            if start != end and end > 0 and first_visible_char(text, start, end) < len(text):
                return i
    return tokens_in_span(text, offsets, (prefix_len, len(text)))[0]


def prepare_units(lm: LanguageModel, prefixes: list[str], continuations: list[str],
                  bos: str) -> list[CausalUnit]:
    """Tokenize each prefix+continuation once and locate the continuation's tokens."""
    texts = [p + c for p, c in zip(prefixes, continuations)]
    all_ids, all_offsets = encode_texts(lm.tokenizer, texts)
    start_id = [bos_id(lm)] if bos == "prepend" else []
    shift = len(start_id)
    units = []
    for text, prefix, ids, offsets in zip(texts, prefixes, all_ids, all_offsets):
        first = _first_scored(text, len(prefix), offsets)
        # the continuation ends the text, so every token from its first one on is
        # scored (zero-width tokens some tokenizers emit included, never skipped)
        units.append(CausalUnit(text, len(prefix), start_id + ids,
                                list(range(first + shift, len(ids) + shift)), offsets[first:]))
    return units


def shared_prefixes(sequences: Sequence[Sequence[int]], min_shared: int = MIN_SHARED,
                    quadratic_tokens: float | None = None) -> list[tuple[int, int]]:
    """(group, shared length) per sequence: which sequences run together as one token tree.

    Consecutive sequences (sort them by token ids first, so that sharers sit
    next to each other) form groups; a group runs as a trie, each distinct
    beginning once (`_hidden_packed`): "context + question A + option 1",
    "context + question A + option 2" and "context + question B + option 1"
    run the context once, question A once, and each option once. For sorted
    sequences a group's trie holds len(first) + sum(len(s) - lcp(s, previous))
    tokens. The grouping minimises, by dynamic programming over the split
    points, the cost of running every group: its trie's tokens plus the
    attention over them, which a packed row pays quadratically (T + T^2 /
    quadratic_tokens, where quadratic_tokens is the row width at which the
    attention costs as much as the rest of the layer). So an opening of a few
    tokens is not worth one huge row, while a long common context is.
    The shared length is the group's common prefix (kept one token short of
    its shortest member, as every member keeps a token of its own); 0 means
    the sequence runs alone. A group sharing fewer than `min_shared` leading
    tokens is split.
    """
    n = len(sequences)
    quadratic_tokens = QUADRATIC_TOKENS if quadratic_tokens is None else quadratic_tokens

    def common(a, b) -> int:
        k = 0
        for x, y in zip(a, b):
            if x != y:
                break
            k += 1
        return k

    adjacent = [common(sequences[i], sequences[i + 1]) for i in range(n - 1)]

    def cost(tokens: int) -> float:
        return tokens + tokens * tokens / quadratic_tokens

    best = [0.0] * (n + 1)  # best[j]: least cost of running sequences[:j]
    cut = [0] * (n + 1)     # start of the last group
    for j in range(1, n + 1):
        best[j], cut[j] = best[j - 1] + cost(len(sequences[j - 1])), j - 1
        trie, shared = len(sequences[j - 1]), len(sequences[j - 1])
        for i in range(j - 2, -1, -1):  # group sequences[i:j]
            shared = min(shared, adjacent[i])
            if shared < min_shared:
                break  # a longer group shares less at its start
            trie += len(sequences[i]) - adjacent[i]
            if trie > GROUP_TOKENS_MAX:
                break
            if best[i] + cost(trie) < best[j]:
                best[j], cut[j] = best[i] + cost(trie), i
    out: list[tuple[int, int]] = [(0, 0)] * n
    j, group = n, 0
    while j > 0:
        i = cut[j]
        length = 0
        if j - i > 1:
            length = min(min(adjacent[i:j - 1]), min(len(s) for s in sequences[i:j]) - 1)
        out[i:j] = [(group, length)] * (j - i)
        j, group = i, group + 1
    return out


def sorted_groups(sequences: Sequence[Sequence[int]]) -> list[tuple[int, int]]:
    """`shared_prefixes` of the sequences taken in token-id order, returned in their own
    order (a batch usually arrives sorted; this does not rely on it)."""
    order = sorted(range(len(sequences)), key=lambda k: list(sequences[k]))
    found = shared_prefixes([sequences[k] for k in order])
    out: list[tuple[int, int]] = [(0, 0)] * len(sequences)
    for k, group in zip(order, found):
        out[k] = group
    return out


def token_tree(sequences: Sequence[Sequence[int]]) -> tuple[list[int], list[int], list[list[int]]]:
    """(tokens, parents, paths): the trie of `sequences`, nodes in creation order (a
    parent before its children), parent -1 for a root; paths[k][i] is the node of
    sequences[k]'s i-th token. Sequences sharing a beginning share its nodes."""
    tokens: list[int] = []
    parents: list[int] = []
    children: dict[tuple[int, int], int] = {}
    paths = []
    for seq in sequences:
        node, path = -1, []
        for t in seq:
            key = (node, int(t))
            nxt = children.get(key)
            if nxt is None:
                nxt = len(tokens)
                children[key] = nxt
                tokens.append(int(t))
                parents.append(node)
            path.append(nxt)
            node = nxt
        paths.append(path)
    return tokens, parents, paths


def _padded(units: list[CausalUnit], device) -> dict:
    """input_ids and attention_mask of the units, right-padded to the longest, built on `device`.

    One flat tensor of every token goes to the device; the padding mask and the
    scatter into rows are tensor operations there (no per-row Python or copies).
    """
    import torch

    lengths = torch.tensor([len(u.ids) for u in units], device=device)
    flat = torch.tensor([t for u in units for t in u.ids], dtype=torch.long, device=device)
    width = int(lengths.max())
    attention = torch.arange(width, device=device)[None, :] < lengths[:, None]
    input_ids = torch.zeros((len(units), width), dtype=torch.long, device=device)
    input_ids[attention] = flat  # row-major order of the mask = the units' token order
    return {"input_ids": input_ids, "attention_mask": attention.long()}


def _packed_layout(units: list[CausalUnit], groups: list[tuple[int, int]]):
    """Where every token of every unit sits in the packed rows (see `_hidden_packed`).

    Returns (trees, packed, unit_row, unit_cols): the token trees (unit indices,
    tokens, parents, paths), the trees of each row, each unit's row and the column
    of each of its tokens in that row.
    """
    members: dict[int, list[int]] = {}
    for b, (group, _) in enumerate(groups):
        members.setdefault(group, []).append(b)
    trees = []  # (unit indices, tokens, parents, paths)
    for group_units in members.values():
        tokens, parents, paths = token_tree([units[b].ids for b in group_units])
        trees.append((group_units, tokens, parents, paths))
    # pack trees into rows of about PACK_TOKENS, balanced (largest first into the
    # emptiest row); a tree longer than that takes a row of its own
    sizes = [len(t[1]) for t in trees]
    n_rows = max(1, math.ceil(sum(sizes) / PACK_TOKENS))
    packed: list[list[int]] = [[] for _ in range(n_rows)]
    fill = [0] * n_rows
    for k in sorted(range(len(trees)), key=lambda k: -sizes[k]):
        r = fill.index(min(fill))
        packed[r].append(k)
        fill[r] += sizes[k]
    packed = [row for row in packed if row]
    unit_row = np.zeros(len(units), dtype=np.int64)
    unit_cols: list = [None] * len(units)
    for r, row in enumerate(packed):
        start = 0
        for k in row:
            group_units, tokens, _, paths = trees[k]
            for b, path in zip(group_units, paths):
                unit_row[b] = r
                unit_cols[b] = start + np.asarray(path, dtype=np.int64)
            start += len(tokens)
    return trees, packed, unit_row, unit_cols


def _band_inputs(trees, packed, band: list[int]):
    """input ids, position ids and the 4D tree mask of one band of rows, as numpy arrays.

    The mask is built by depth, not per token: every node sees itself, then the
    nodes of depth 1, 2, ... each take their parent's row of the mask (which by
    then holds the parent's ancestors), so a node sees exactly its ancestors.
    That is one numpy row copy per depth level for the whole band, where a
    per-token loop of tensor indexing cost most of the host's time (issue 41).
    """
    widths = [sum(len(trees[k][1]) for k in packed[r]) for r in band]
    width = max(widths)
    nodes, parents, depths, tokens = [], [], [], []
    for i, r in enumerate(band):
        start = i * width  # a node's index in the band flattened to (row, column)
        for k in packed[r]:
            _, tree_tokens, tree_parents, paths = trees[k]
            n = len(tree_tokens)
            up = np.asarray(tree_parents, dtype=np.int64)
            depth = np.zeros(n, dtype=np.int64)
            for path in paths:  # a token's depth is its place in any text through it
                depth[path] = np.arange(len(path))
            nodes.append(np.arange(start, start + n))
            parents.append(np.where(up >= 0, up + start, -1))
            depths.append(depth)
            tokens.append(np.asarray(tree_tokens, dtype=np.int64))
            start += n
    nodes, parents = np.concatenate(nodes), np.concatenate(parents)
    depths, tokens = np.concatenate(depths), np.concatenate(tokens)
    ids = np.zeros((len(band), width), dtype=np.int64)
    positions = np.zeros((len(band), width), dtype=np.int64)
    ids.reshape(-1)[nodes] = tokens
    positions.reshape(-1)[nodes] = depths
    mask = np.zeros((len(band), 1, width, width), dtype=bool)  # (query, key): key is an ancestor
    flat = mask.reshape(len(band) * width, width)  # a view: query rows of every band row
    flat[nodes, nodes % width] = True
    by_depth = np.argsort(depths, kind="stable")
    ends = np.cumsum(np.bincount(depths))
    for d in range(1, len(ends)):
        level = by_depth[ends[d - 1]:ends[d]]
        flat[nodes[level]] |= flat[parents[level]]
    for i, w in enumerate(widths):
        mask[i, 0, w:, 0] = True  # padding queries see one key (no all-masked softmax rows)
    return ids, positions, mask


def row_bands(widths: Sequence[int], device_type: str) -> list[list[int]]:
    """The packed rows (by index) of each forward pass: rows sorted widest first, a row
    joining the pass before it while padding it to that pass's widest row costs little.

    A padded position costs as much as a real one. On a CPU that is about 1.5 ms of one
    core for the embedded 135M model, and a forward pass's own cost a few positions'
    worth, so rows share a pass only within CPU_BAND_PAD tokens of its widest (padding
    had been 11-13% of genda_lens' positions within 2x; study_scoring.json "split").
    Elsewhere a pass is dearer than the positions: rows within 2x of the widest share it.
    """
    order = sorted(range(len(widths)), key=lambda r: -widths[r])
    passes: list[list[int]] = []
    for r in order:
        widest = widths[passes[-1][0]] if passes else 0
        fits = (widest - widths[r] <= CPU_BAND_PAD if device_type == "cpu"
                else widths[r] * 2 >= widest)
        if passes and fits:
            passes[-1].append(r)
        else:
            passes.append([r])
    return passes


def trunk_length(paths: Sequence[Sequence[int]]) -> int:
    """How many of a token tree's first nodes every text runs through: the trunk, nodes
    0, 1, ... (token_tree makes the first text's nodes first)."""
    trunk = min(len(path) for path in paths)
    for path in paths:
        k = 0
        while k < trunk and path[k] == k:
            k += 1
        trunk = k
    return trunk


def tree_plan(parents: Sequence[int], overhead: float | None = None,
              copy_pairs: float | None = None) -> list[tuple[int, np.ndarray]]:
    """The passes that compute a token tree (`token_tree`'s parents) alone in its row, on
    the keys and values of the passes before: [(kept, nodes)], run in order; before a
    pass the KV cache is cut back to its first `kept` nodes, which are then exactly the
    ancestors of every node of the pass, and the pass's nodes join the cache after it.

    In one pass the tree mask makes attention dense: every node meets every key of the
    row, masked or not. A tree that branches at its trunk and again below (pronoun_memory:
    a list's context, then each prompt's question frame, then each option order, then
    the options) computes most of those pairs for nothing: 16M pairs a layer for Exp
    1A's three lists, where the tree keeps 3.7M. Here each subtree either runs whole (a
    masked pass over it, on its cached ancestors) or runs its chain (the nodes down to
    where it branches) and then each branch below it as a subtree of its own, whichever
    costs less: its query-key pairs, plus `overhead` pairs for a pass's fixed cost and
    `copy_pairs` per cached key (the cache is copied into each pass, layer by layer).
    A subtree's ancestors are its depth, so the choice is made bottom-up, once per node.
    The first pass, the root's chain, runs causally with no mask (c^2 / 2 pairs: the
    attention kernel skips the blocks above the diagonal). One pass, [(0, every node)],
    means running the tree whole is cheapest.

    Measured on one thread (2026-12-07, benchmarks/pronoun_memory.py --parts plans), each
    workload in one batch: Exp 1A's 972 texts 47.6 s with the trunk alone split off
    (`trunk_plan`, the CPU's rule before), 33.8 s so (45 passes; 15.6M pairs a layer down
    to 4.8M, of which the tree keeps 3.7M); Exp 2's first 216, whose branches are all short
    after a trunk of 1,900 tokens, 20.0 s and 18.2 s (the pairs saved there are partly paid
    back in smaller matrix products: 67 GFLOPS for 130 rows against 78 for 260 or more).
    """
    overhead = PASS_OVERHEAD_PAIRS if overhead is None else overhead
    copy_pairs = CACHE_COPY_PAIRS if copy_pairs is None else copy_pairs
    n = len(parents)
    children: list[list[int]] = [[] for _ in range(n)]
    roots = []
    for node, parent in enumerate(parents):
        (children[parent] if parent >= 0 else roots).append(node)
    whole = [(0, np.arange(n))]
    if len(roots) != 1:
        return whole
    depth = np.zeros(n, dtype=np.int64)
    for node, parent in enumerate(parents):  # a parent comes before its children
        depth[node] = depth[parent] + 1 if parent >= 0 else 0
    size = np.ones(n, dtype=np.int64)
    chain_end = list(range(n))
    best = np.zeros(n)
    split = np.zeros(n, dtype=bool)
    for node in range(n - 1, -1, -1):  # children before their parents
        kids = children[node]
        if parents[node] >= 0:
            size[parents[node]] += size[node]
        if len(kids) == 1:
            chain_end[node] = chain_end[kids[0]]
        a = float(depth[node])
        fixed = overhead + copy_pairs * a
        best[node] = size[node] * (a + size[node]) + fixed
        end = chain_end[node]
        if children[end]:
            c = float(depth[end] - depth[node] + 1)
            own = c * c / 2 if a == 0 else c * (a + c) + fixed
            cost = own + sum(best[k] for k in children[end])
            if cost < best[node]:
                best[node], split[node] = cost, True
    if not split[roots[0]]:
        return whole
    passes, stack = [], [roots[0]]
    while stack:
        node = stack.pop()
        kept = int(depth[node])
        if split[node]:
            end = chain_end[node]
            passes.append((kept, _chain(node, end, children)))
            stack.extend(reversed(children[end]))
        else:
            passes.append((kept, _subtree(node, children)))
    return passes


def _chain(node: int, end: int, children) -> np.ndarray:
    out = [node]
    while node != end:
        node = children[node][0]
        out.append(node)
    return np.asarray(out, dtype=np.int64)


def _subtree(node: int, children) -> np.ndarray:
    """The subtree's nodes in creation order (ancestors before descendants)."""
    out, stack = [], [node]
    while stack:
        k = stack.pop()
        out.append(k)
        stack.extend(children[k])
    return np.sort(np.asarray(out, dtype=np.int64))


def trunk_plan(paths: Sequence[Sequence[int]], n: int) -> list[tuple[int, np.ndarray]]:
    """Off the CPU, where a pass costs more than the pairs it saves: the trunk (the nodes
    every text runs through) in a pass of its own when it is TRUNK_TOKENS long or longer,
    then the rest of the tree in one masked pass on its keys (`tree_plan`'s form)."""
    trunk = trunk_length(paths)
    if trunk < TRUNK_TOKENS:
        return [(0, np.arange(n))]
    return [(0, np.arange(trunk))] + ([(trunk, np.arange(trunk, n))] if trunk < n else [])


def row_plan(tree, device_type: str) -> list[tuple[int, np.ndarray]]:
    """How a row holding the one token `tree` (`_packed_layout`'s) runs: `tree_plan` on a
    CPU, `trunk_plan` elsewhere."""
    _, tokens, parents, paths = tree
    if device_type == "cpu":
        return tree_plan(parents)
    return trunk_plan(paths, len(tokens))


def _planned_row(base, ids, positions, mask, plan):
    """The final hidden states of a row holding one token tree, run in the passes of
    `plan` (`tree_plan`): each on the KV cache of its ancestors, cut back before it."""
    import torch

    device = base.device
    hidden, cache, cached = None, None, np.zeros(0, dtype=np.int64)
    for kept, nodes in plan:
        if cache is not None and len(cached) > kept:
            cache.crop(kept - len(cached))  # a negative length drops that many (any version)
        keys = np.concatenate([cached[:kept], nodes])
        # the root's chain is causal: no mask (the kernel then skips the upper triangle)
        step_mask = None if cache is None else torch.from_numpy(
            np.ascontiguousarray(mask[:, :, nodes][:, :, :, keys])).to(device)
        step = base(input_ids=torch.from_numpy(ids[:, nodes]).to(device),
                    position_ids=torch.from_numpy(positions[:, nodes]).to(device),
                    attention_mask=step_mask, past_key_values=cache, use_cache=True)
        cache, cached = step.past_key_values, keys
        if hidden is None:
            hidden = torch.empty((ids.shape[0], ids.shape[1], step.last_hidden_state.shape[-1]),
                                 dtype=step.last_hidden_state.dtype, device=device)
        hidden[:, torch.from_numpy(nodes).to(device)] = step.last_hidden_state
    return hidden


def _hidden_packed(base, units: list[CausalUnit], groups: list[tuple[int, int]], rows, cols):
    """(hidden, node_of): the final hidden state of each distinct tree node that some
    (rows, cols) asks for, and which of them each (row, col) reads, each group run as a
    token tree, nothing padded inside a row.

    Units that share a beginning share its nodes, and a node's next-token distribution
    serves every unit scoring the token after it: "NAME is a" predicts the first token of
    every role noun after it. So the vocabulary head and the log-softmax, about half the
    CPU time of a short continuation (issue 41: 470 ms of 7.6 s per forward of 128
    role_nouns texts on one thread), run once per node, not once per unit.

    Each group (`shared_prefixes`) becomes the trie of its members (`token_tree`):
    every distinct beginning runs once. Tries are packed into rows of about
    PACK_TOKENS tokens (a bigger trie fills a row alone), and the rows run in
    passes of similar width so that padding stays small. A 4D attention mask
    lets a token see its ancestors in its own trie only, and its position id is
    its depth, so each token is computed from exactly the tokens before it in
    its own text, as in a whole-text pass (the tree attention of Miao et al.
    2024, SpecInfer). The masks are built in numpy and sent once per pass, and
    the scored positions are read with one gather per pass.
    """
    import torch

    trees, packed, unit_row, unit_cols = _packed_layout(units, groups)
    widths = [sum(len(trees[k][1]) for k in row) for row in packed]
    # a row holding one tree runs in the passes of its plan (row_plan), on their KV caches
    plans = {r: row_plan(trees[row[0]], base.device.type) for r, row in enumerate(packed)
             if len(row) == 1}
    plans = {r: plan for r, plan in plans.items() if len(plan) > 1}
    rest = [r for r in range(len(packed)) if r not in plans]
    passes = [[r] for r in plans] + [[rest[i] for i in band] for band in
                                     row_bands([widths[r] for r in rest], base.device.type)]
    # each scored position's row and column in the packed layout
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    lengths = np.array([len(c) for c in unit_cols], dtype=np.int64)
    first = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    pick_row = unit_row[rows]
    pick_col = np.concatenate(unit_cols)[first[rows] + cols]
    width = int(pick_col.max()) + 1 if len(pick_col) else 1
    nodes, node_of = np.unique(pick_row * width + pick_col, return_inverse=True)
    pick_row, pick_col = nodes // width, nodes % width
    band_of = np.zeros(len(packed), dtype=np.int64)
    slot = np.zeros(len(packed), dtype=np.int64)  # a row's place in its band
    for p, band in enumerate(passes):
        band_of[band] = p
        slot[band] = np.arange(len(band))
    pick_band = band_of[pick_row]
    device = base.device
    out = None
    for p, band in enumerate(passes):
        ids, positions, mask = _band_inputs(trees, packed, band)
        if band[0] in plans:
            hidden = _planned_row(base, ids, positions, mask, plans[band[0]])
        else:
            hidden = base(input_ids=torch.from_numpy(ids).to(device),
                          attention_mask=torch.from_numpy(mask).to(device),
                          position_ids=torch.from_numpy(positions).to(device),
                          use_cache=False).last_hidden_state
        if out is None:
            out = torch.empty((len(nodes), hidden.shape[-1]), dtype=hidden.dtype, device=device)
        here = np.nonzero(pick_band == p)[0]
        if len(here):
            out[torch.from_numpy(here).to(device)] = hidden[
                torch.from_numpy(slot[pick_row[here]]).to(device),
                torch.from_numpy(pick_col[here]).to(device)]
    return out, node_of.reshape(-1)


def forward_logprobs(lm: LanguageModel, units: list[CausalUnit], token_budget: int | None = None,
                     share_prefixes: bool = True) -> list[dict]:
    """log P(token | everything before it) for each unit's target tokens.

    token_budget: None runs the units in one forward pass; a number cuts them
    into length-sorted passes of at most that many padded tokens (the GPU
    plan, models.batching.plan_batches). share_prefixes: for the architectures
    in SHARE_PREFIXES, units that begin alike (study stimuli built from one
    frame, the variants of a forced choice) run their common beginning once,
    packed without padding (see `_hidden_packed`). Otherwise a pass is
    right-padded: with a causal mask a real token never attends to the padding
    after it, so padded and unpadded runs agree (up to float rounding).
    """
    if token_budget is None:
        return _forward_pass(lm, units, share_prefixes)
    if not (share_prefixes and lm.model_type in SHARE_PREFIXES):
        return _forward_padded_passes(lm, units, token_budget)
    out: list = [None] * len(units)
    for chunk in token_budget_chunks([len(u.ids) for u in units], token_budget):
        for i, result in zip(chunk, _forward_pass(lm, [units[i] for i in chunk], share_prefixes)):
            out[i] = result
    return out


def launch_logprobs(lm: LanguageModel, units: list[CausalUnit], token_budget: int | None = None,
                    share_prefixes: bool = True):
    """`forward_logprobs` started: returns a function that returns its results.

    The right-padded passes (`_launch_padded_passes`) are only started here, so that on
    a GPU the local engine can start the next commit batch before it builds and commits
    this one's results; every other plan is computed here at once.
    """
    if token_budget is not None and not (share_prefixes and lm.model_type in SHARE_PREFIXES):
        return _launch_padded_passes(lm, units, token_budget)
    results = forward_logprobs(lm, units, token_budget, share_prefixes)
    return lambda: results


forward_logprobs.launch = launch_logprobs  # what models.engine.BatchScorer.launch calls


def _pass_layout(units: list[CausalUnit], token_budget: int):
    """Everything the padded passes of `units` need, built on the host with numpy.

    Returns (passes, host, scored_at): per pass (its number of rows, its width, its
    number of scored positions, and where its parts lie in `host`); `host`, one int64
    array holding every pass's padded input ids, row lengths, and the row, column and
    token id of each scored position (sent to the device in one copy); and scored_at,
    each unit's first scored value in the order the passes produce them. The passes
    are `token_budget_chunks`' (length-sorted, at most `token_budget` padded tokens),
    their rows in that order and their scored positions unit by unit, as
    `_forward_pass` runs each chunk.
    """
    lengths = np.fromiter((len(u.ids) for u in units), dtype=np.int64, count=len(units))
    ids = np.fromiter(chain.from_iterable(u.ids for u in units), dtype=np.int64,
                      count=int(lengths.sum()))
    starts = np.cumsum(lengths) - lengths
    n_targets = np.fromiter((len(u.targets) for u in units), dtype=np.int64, count=len(units))
    targets = np.fromiter(chain.from_iterable(u.targets for u in units), dtype=np.int64,
                          count=int(n_targets.sum()))
    owner = np.repeat(np.arange(len(units)), n_targets)
    scored = targets > 0  # position 0 has no left context
    owner, targets = owner[scored], targets[scored]
    n_scored = np.bincount(owner, minlength=len(units))
    first_scored = np.cumsum(n_scored) - n_scored  # each unit's first row in owner/targets
    passes, parts, scored_at = [], [], np.zeros(len(units), dtype=np.int64)
    offset = done = 0
    for chunk in token_budget_chunks(lengths.tolist(), token_budget):
        chunk = np.asarray(chunk, dtype=np.int64)
        rows, width = len(chunk), int(lengths[chunk].max())
        columns = np.arange(width)
        inside = columns[None, :] < lengths[chunk, None]
        padded = np.where(inside, ids[np.minimum(starts[chunk, None] + columns[None, :],
                                                 len(ids) - 1)], 0)
        # the chunk's scored positions, unit by unit in chunk order
        counts = n_scored[chunk]
        k = np.repeat(first_scored[chunk], counts) + (
            np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts))
        at_rows = np.repeat(np.arange(rows), counts)
        at_cols = targets[k] - 1
        wanted = ids[starts[owner[k]] + targets[k]]
        scored_at[chunk] = done + np.cumsum(counts) - counts
        pieces = [padded.reshape(-1), lengths[chunk], at_rows, at_cols, wanted]
        where = []
        for piece in pieces:
            where.append((offset, offset + len(piece)))
            offset += len(piece)
        passes.append((rows, width, len(k), where))
        parts.extend(pieces)
        done += len(k)
    host = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return passes, host, scored_at


def _forward_padded_passes(lm: LanguageModel, units: list[CausalUnit], token_budget: int,
                           causal_only: bool | None = None) -> list[dict]:
    """`forward_logprobs` in right-padded passes of at most `token_budget` tokens (the GPU
    plan): `_launch_padded_passes`' work, waited for."""
    return _launch_padded_passes(lm, units, token_budget, causal_only)()


def _launch_padded_passes(lm: LanguageModel, units: list[CausalUnit], token_budget: int,
                          causal_only: bool | None = None):
    """Start `forward_logprobs`' right-padded passes of at most `token_budget` tokens (the GPU
    plan); returns a function that waits for them and returns the units' results.

    The same passes, inputs and numbers as running `_forward_pass` on each of
    `token_budget_chunks`' chunks, but the host never waits for the device in
    between: every pass's inputs are laid out with numpy first (`_pass_layout`)
    and copied to the device at once (from pinned memory, without blocking, on a
    GPU); each pass's scored log-probabilities stay on the device; one copy back
    at the end. Each copy from ordinary memory, and each number read back (a
    tensor's max), made the host wait for the device, so the host's work on one
    pass could not overlap the device's on the one before (issue 41).

    causal_only (None: on a GPU, for the architectures in CAUSAL_MASK_SUFFICES):
    run the passes without the padding mask. The rows are padded on the right, so
    under the causal mask a real token never sees the padding after it and its
    numbers are those of the padded pass; without a padding mask transformers
    neither reads the mask back to check it (a wait for the device per pass) nor
    builds a 4D mask, and the fused causal attention kernels can run.

    On a GPU the scores are copied back to pinned memory behind the passes, with an
    event recorded after the copy: the returned function waits for that event only,
    so work started after this call (the next commit batch's passes, see
    models.engine.LocalEngine) runs on while this batch's results are built and
    committed. On a CPU everything is done before this returns.
    """
    import torch

    model = lm.model
    require_fits_context(lm, [len(u.ids) for u in units], [u.text for u in units])
    passes, host, scored_at = _pass_layout(units, token_budget)
    total = sum(n for _, _, n, _ in passes)
    back = ready = source = None
    if total:
        device = model.device
        head_only = lm.model_type in HEAD_ONLY_WHERE_SCORED
        if causal_only is None:
            causal_only = device.type == "cuda" and lm.model_type in CAUSAL_MASK_SUFFICES
        with torch.inference_mode():
            source = torch.from_numpy(host)
            if device.type == "cuda":
                source = source.pin_memory()
            on_device = source.to(device, non_blocking=True)
            out = torch.empty(total, dtype=torch.float32, device=device)
            done = 0
            for rows, width, n, where in passes:
                if not n:
                    continue
                ids, lengths, at_rows, at_cols, wanted = (on_device[a:b] for a, b in where)
                inputs = {"input_ids": ids.view(rows, width)}
                if not causal_only:
                    inputs["attention_mask"] = (torch.arange(width, device=device)[None, :]
                                                < lengths[:, None]).long()
                # no KV cache: nothing is generated, and building one costs memory and time
                if head_only:
                    logits = model.get_output_embeddings()(model.base_model(
                        **inputs, use_cache=False).last_hidden_state[at_rows, at_cols])
                else:
                    logits = model(**inputs, use_cache=False).logits[at_rows, at_cols]
                if device.type == "cuda" and gpu.FUSED_HEAD:  # logit minus log-sum-exp
                    out[done:done + n] = gpu.target_logprobs(logits, wanted,
                                                                     gpu.is_compiled(model))
                else:  # float32 log-softmax over the vocabulary, as in _forward_pass
                    logprobs = torch.log_softmax(logits.float(), dim=-1)
                    out[done:done + n] = logprobs[torch.arange(n, device=device), wanted]
                    del logprobs
                done += n
                # vocabulary-sized: freed before the next pass, not held through it
                del logits
            if device.type == "cuda":
                back = torch.empty(total, dtype=torch.float32, pin_memory=True)
                back.copy_(out, non_blocking=True)
                ready = torch.cuda.Event()
                ready.record()
            else:
                back = out

    def finish() -> list[dict]:
        nonlocal source  # the pinned input lives until the copy back has been waited for
        if ready is not None:
            ready.synchronize()
        source = None
        values = np.zeros(0) if back is None else back.double().numpy()
        return _padded_results(units, values, scored_at)

    return finish


def _padded_results(units: list[CausalUnit], values: np.ndarray, scored_at) -> list[dict]:
    """Each unit's result from the scores of `_launch_padded_passes` (in pass order)."""
    scored = values.tolist()
    results = []
    for unit, at in zip(units, scored_at.tolist()):
        targets = unit.targets
        if targets and min(targets) > 0:
            logprobs = scored[at:at + len(targets)]
        else:  # position 0 (no left context) gets None, the rest their values in order
            found = iter(scored[at:at + sum(1 for t in targets if t > 0)])
            logprobs = [next(found) if t > 0 else None for t in targets]
        results.append({"logprobs": logprobs, "offsets": result_offsets(unit.offsets)})
    return results


def _forward_pass(lm: LanguageModel, units: list[CausalUnit], share_prefixes: bool) -> list[dict]:
    """One forward pass over `units` (see forward_logprobs)."""
    import torch

    model = lm.model
    # checked here, where the weights are loaded anyway (a cached run never loads them)
    require_fits_context(lm, [len(u.ids) for u in units], [u.text for u in units])
    rows, cols, wanted = [], [], []
    for b, unit in enumerate(units):
        for position in unit.targets:
            if position > 0:  # position 0 has no left context
                rows.append(b)
                cols.append(position - 1)
                wanted.append(unit.ids[position])
    scored = np.array([], dtype=float)
    if rows:
        device = model.device
        with torch.inference_mode():
            model_type = lm.model_type
            # a custom mask replaces the model's own, sliding-window limit included,
            # so texts longer than a window are run whole
            window = getattr(model.config, "sliding_window", None) or math.inf
            share = (share_prefixes and model_type in SHARE_PREFIXES
                     and max(len(u.ids) for u in units) <= window)
            groups = sorted_groups([u.ids for u in units]) if share else []
            at_rows = torch.tensor(rows, device=device)
            at_cols = torch.tensor(cols, device=device)
            node_of = np.arange(len(wanted))  # which row of the logits each scored token reads
            # no KV cache: nothing is generated, and building one costs memory and time
            if any(length for _, length in groups):
                hidden, node_of = _hidden_packed(model.base_model, units, groups, rows, cols)
                logits = model.get_output_embeddings()(hidden)
            elif model_type in HEAD_ONLY_WHERE_SCORED:
                hidden = model.base_model(**_padded(units, device), use_cache=False).last_hidden_state
                logits = model.get_output_embeddings()(hidden[at_rows, at_cols])
            else:
                logits = model(**_padded(units, device), use_cache=False).logits[at_rows, at_cols]
            # the head runs in the model's dtype at the scored positions only; the
            # log-softmax over the vocabulary is taken in float32 (in bf16 its sum
            # over ~50k exponentials would lose the small probabilities)
            logprobs = torch.log_softmax(logits.float(), dim=-1)
            scored = logprobs[torch.from_numpy(node_of).to(device),
                              torch.tensor(wanted, device=device)].cpu().double().numpy()
    out, values = [], iter(scored.tolist())  # Python floats, in the order they were scored
    for unit in units:
        out.append({"logprobs": [next(values) if position > 0 else None
                                 for position in unit.targets],
                    "offsets": result_offsets(unit.offsets)})
    return out


def unit_logprobs(lm: LanguageModel, prefixes: list[str], continuations: list[str], *, bos: str,
                  batch_size: int | None, cache_dir, use_cache: bool, progress,
                  token_budget: int | None = None) -> tuple[list[dict], dict]:
    """The shared path: per-token log-probs of each continuation given BOS (if any) + prefix.

    batch_size (units per cache commit) and token_budget (padded tokens per
    forward pass): None takes the device's default (models.batching.plan_batches).
    """
    _check_bos(bos)
    plan = plan_batches(lm.device_type, batch_size=batch_size, token_budget=token_budget)
    namespace = lm.cache_namespace("causal_token_logprobs", bos=bos)
    keys = cache_keys(namespace, zip(prefixes, continuations))
    share = plan.share_prefixes and lm.model_type in SHARE_PREFIXES

    def sort_keys(units):
        return [u.ids for u in units] if share else [len(u.ids) for u in units]

    # units are tokenized only if a key is missing from the cache: a fully
    # cached run never loads the tokenizer
    scorer = BatchScorer(lm, forward_logprobs, {"token_budget": plan.token_budget,
                                                "share_prefixes": plan.share_prefixes})
    results, stats = run_units(lambda: prepare_units(lm, prefixes, continuations, bos), keys=keys,
                               sort_keys=sort_keys, score_batch=scorer,
                               batch_size=plan.commit_size, cache=open_cache(cache_dir, use_cache),
                               progress=progress, desc=f"causal {lm.name}", model=lm.name,
                               spread=plan.spread, balance=plan.balance)
    out = stats.as_dict()
    out.update(commit_size=stats.commit_size or plan.commit_size, token_budget=plan.token_budget,
               share_prefixes=share)
    return results, out


def _summed(values: list) -> tuple[float, int]:
    scored = [v for v in values if v is not None]
    return (math.fsum(scored) if scored else float("nan")), len(scored)


def _whole_texts(texts, items, lm, bos, batch_size, cache_dir, use_cache, progress,
                 token_budget=None):
    """The shared start of every whole-text scorer: check, then per-token log-probs."""
    lm = _as_lm(lm)
    texts = _check_texts(texts, "text")
    items = _items(items, len(texts))
    results, stats = unit_logprobs(lm, [""] * len(texts), texts, bos=bos, batch_size=batch_size,
                                   cache_dir=cache_dir, use_cache=use_cache, progress=progress,
                                   token_budget=token_budget)
    return lm, texts, items, results, stats


def score_sentences(texts: Sequence[str], *, items=None, lm=DEFAULT_MODEL, bos: str = "prepend",
                    batch_size: int | None = None, cache_dir=None, use_cache: bool = True,
                    progress: bool | None = None,
                    token_budget: int | None = None) -> pd.DataFrame:
    """log P(text) (natural log, summed over its tokens) per text, one row per item."""
    lm, texts, items, results, stats = _whole_texts(texts, items, lm, bos, batch_size, cache_dir,
                                                    use_cache, progress, token_budget)
    sums = [_summed(r["logprobs"]) for r in results]
    df = pd.DataFrame({"item": items, "text": texts, "logprob": [s for s, _ in sums],
                       "n_tokens": [n for _, n in sums]})
    out = finish_table(df, lm=lm, scoring="causal", bos=bos, source="score_sentences")
    out.attrs["run"] = stats
    return out


def score_continuations(prefixes: Sequence[str], continuations: Sequence[str], *, items=None,
                        lm=DEFAULT_MODEL, bos: str = "prepend", batch_size: int | None = None,
                        cache_dir=None, use_cache: bool = True,
                        progress: bool | None = None,
                    token_budget: int | None = None) -> pd.DataFrame:
    """log P(continuation | prefix), e.g. P(" they" | "My sister said").

    The continuation is appended to the prefix verbatim, so it carries its own
    leading space (" they"); a prefix ending in whitespace before it is refused
    (`require_clean_joins`). Returns logprob, surprisal_bits and probability.
    """
    lm = _as_lm(lm)
    prefixes = _check_texts(prefixes, "prefix", allow_empty=True)
    continuations = _check_texts(continuations, "continuation")
    if len(prefixes) != len(continuations):
        raise DataValidationError("prefixes and continuations differ in length", source="continuations",
                                  expected=f"{len(prefixes)}", found=f"{len(continuations)}")
    items = _items(items, len(prefixes))
    require_clean_joins(prefixes, continuations, items)
    results, stats = unit_logprobs(lm, prefixes, continuations, bos=bos, batch_size=batch_size,
                                   cache_dir=cache_dir, use_cache=use_cache, progress=progress,
                                   token_budget=token_budget)
    rows = []
    for item, p, c, r in zip(items, prefixes, continuations, results):
        if None in r["logprobs"]:
            raise AlignmentError(f"item {item!r}: the continuation {c!r} starts the text and "
                                 f"bos='none', so its first token has no context to be scored; "
                                 f"use bos='prepend' or give a prefix")
        total, n = _summed(r["logprobs"])
        rows.append({"item": item, "prefix": p, "continuation": c, "logprob": total, "n_tokens": n})
    df = pd.DataFrame(rows)
    df["probability"] = np.exp(df["logprob"])
    out = finish_table(df, lm=lm, scoring="causal", bos=bos, source="score_continuations")
    out.attrs["run"] = stats
    return out


def token_surprisals(texts: Sequence[str], *, items=None, lm=DEFAULT_MODEL, bos: str = "prepend",
                     batch_size: int | None = None, cache_dir=None, use_cache: bool = True,
                     progress: bool | None = None,
                    token_budget: int | None = None) -> pd.DataFrame:
    """One row per token: item, token_index, token (its surface text), start, end, logprob, surprisal_bits."""
    lm, texts, items, results, stats = _whole_texts(texts, items, lm, bos, batch_size, cache_dir,
                                                    use_cache, progress, token_budget)
    rows = []
    for item, text, r in zip(items, texts, results):
        for k, (value, (start, end)) in enumerate(zip(r["logprobs"], r["offsets"])):
            rows.append({"item": item, "token_index": k, "token": text[start:end], "start": start,
                         "end": end, "logprob": np.nan if value is None else value,
                         "n_tokens": 0 if value is None else 1})
    out = finish_table(pd.DataFrame(rows), lm=lm, scoring="causal", bos=bos, source="token_surprisals")
    out.attrs["run"] = stats
    return out


def word_surprisals(texts: Sequence[str], *, items=None, lm=DEFAULT_MODEL, bos: str = "prepend",
                    on_alignment_error: str = "raise", batch_size: int | None = None, cache_dir=None,
                    use_cache: bool = True, progress: bool | None = None,
                    token_budget: int | None = None) -> pd.DataFrame:
    """One row per whitespace-delimited word: summed log-prob of its tokens (see models.words).

    on_alignment_error: "raise", or "nan" (the text's words get NaN and aligned=False).
    A word containing the unscored first token (bos="none") also gets NaN, aligned=False.
    """
    if on_alignment_error not in ("raise", "nan"):
        raise UnknownNameError("on_alignment_error option", on_alignment_error, ["raise", "nan"])
    lm, texts, items, results, stats = _whole_texts(texts, items, lm, bos, batch_size, cache_dir,
                                                    use_cache, progress, token_budget)
    rows = []
    for item, text, r in zip(items, texts, results):
        words = word_spans(text)
        try:
            owner = tokens_to_words(text, [tuple(o) for o in r["offsets"]])
        except AlignmentError as exc:
            if on_alignment_error == "raise":
                raise AlignmentError(f"item {item!r}: {exc}") from exc
            owner = None
        for w, (_, _, word) in enumerate(words):
            values = [] if owner is None else [v for v, o in zip(r["logprobs"], owner) if o == w]
            ok = owner is not None and bool(values) and None not in values
            rows.append({"item": item, "word_index": w, "word": word,
                         "logprob": math.fsum(values) if ok else np.nan,
                         "n_tokens": len(values), "aligned": ok})
    out = finish_table(pd.DataFrame(rows), lm=lm, scoring="causal", bos=bos, source="word_surprisals")
    out.attrs["run"] = stats
    return out


__all__ = ["score_sentences", "score_continuations", "token_surprisals", "word_surprisals", "LN2"]

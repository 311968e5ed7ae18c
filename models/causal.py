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
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError, UnknownNameError
from models.batching import plan_batches, run_units, token_budget_chunks
from models.cache import cache_key, open_cache
from models.engine import BatchScorer
from models.loading import LanguageModel, load_scorer, require_fits_context
from models.registry import DEFAULT_MODEL
from models.scores import BOS_OPTIONS, LN2, finish_table
from models.words import AlignmentError, tokens_in_span, tokens_to_words, word_spans

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
MIN_SHARED = 2  # leading tokens (BOS included) worth sharing
PACK_TOKENS = 256  # tokens per packed row: attention over a row costs its length squared


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


def bos_id(lm: LanguageModel) -> int:
    tok = lm.tokenizer
    found = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    if found is None:
        raise UnknownNameError("bos option", "prepend", ["none"])
    return found


def prepare_units(lm: LanguageModel, prefixes: list[str], continuations: list[str],
                  bos: str) -> list[CausalUnit]:
    """Tokenize each prefix+continuation once and locate the continuation's tokens."""
    texts = [p + c for p, c in zip(prefixes, continuations)]
    enc = lm.tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
    start_id = [bos_id(lm)] if bos == "prepend" else []
    units = []
    for text, prefix, ids, offsets in zip(texts, prefixes, enc["input_ids"], enc["offset_mapping"]):
        offsets = [tuple(o) for o in offsets]
        first = tokens_in_span(text, offsets, (len(prefix), len(text)))[0]
        # the continuation ends the text, so every token from its first one on is
        # scored (zero-width tokens some tokenizers emit included, never skipped)
        inside = list(range(first, len(ids)))
        shift = len(start_id)
        units.append(CausalUnit(text, len(prefix), start_id + list(ids),
                                [i + shift for i in inside], [offsets[i] for i in inside]))
    return units


@dataclass
class PackedRows:
    """A prefix tree of token sequences laid out in rows (`prefix_tree_rows`)."""
    ids: list  # per row, the token ids
    parents: list  # per row, the column of each token's parent in the tree (-1: a first token)
    positions: list  # per row, each token's position in its sequence (its depth in the tree)
    where: list  # per sequence, the (row, column) of each of its tokens

    @property
    def n_tokens(self) -> int:
        """Token positions the model runs (the tree's nodes, and any it repeats across rows)."""
        return sum(len(row) for row in self.ids)


def prefix_tree_rows(sequences: Sequence[Sequence[int]], pack_tokens: int = PACK_TOKENS) -> PackedRows:
    """Lay `sequences` out as one prefix tree: every distinct beginning is run once.

    Sequences that begin alike share the tokens of their common beginning at
    every depth ("My sister said they ..." and "My sister said she ..." share
    "My sister said"; both share "My" with "My brother ..."), and identical
    sequences share everything. The tree is cut into rows of about
    `pack_tokens` tokens: a subtree that does not fit is split into its
    children's subtrees, each placed after a copy of the path above it, and
    the pieces are packed largest first into the emptiest row (a piece larger
    than a row gets a row of its own size). In a row, a subtree is laid out
    depth first, so a token's parent is always to its left.
    """
    children: list[dict] = [{}]  # node 0: the empty beginning
    token, depth, parent = [None], [-1], [-1]
    paths = []
    for seq in sequences:
        node, path = 0, []
        for t in seq:
            child = children[node].get(t)
            if child is None:
                child = len(children)
                children.append({})
                token.append(t)
                depth.append(depth[node] + 1)
                parent.append(node)
                children[node][t] = child
            path.append(child)
            node = child
        paths.append(path)
    ends = {path[-1] for path in paths if path}
    size = [1] * len(children)  # nodes in each subtree; children are created after parents
    size[0] = 0
    for node in range(len(children) - 1, 0, -1):
        size[parent[node]] += size[node]

    # pieces: (node, whole subtree?) - a split node where a sequence ends keeps a piece
    # of its own path, so that every sequence ends inside exactly one piece
    pieces: list[tuple[int, bool]] = []
    todo = list(reversed(children[0].values()))
    while todo:
        node = todo.pop()
        if depth[node] + size[node] <= pack_tokens or not children[node]:
            pieces.append((node, True))
            continue
        if node in ends:
            pieces.append((node, False))
        todo.extend(reversed(children[node].values()))
    cost = [depth[n] + (size[n] if whole else 1) for n, whole in pieces]
    n_rows = max(1, min(len(pieces), math.ceil(sum(cost) / pack_tokens)))
    rows: list[list[int]] = [[] for _ in range(n_rows)]  # piece indices per row
    fill = [0] * n_rows
    for k in sorted(range(len(pieces)), key=lambda k: -cost[k]):
        r = fill.index(min(fill))
        rows[r].append(k)
        fill[r] += cost[k]

    ids, parents, positions = [[] for _ in rows], [[] for _ in rows], [[] for _ in rows]
    owner: dict[int, tuple[int, dict]] = {}  # end node -> (row, {node: column}) of its piece
    for r, row in enumerate(rows):
        for k in row:
            node, whole = pieces[k]
            above, up = [], parent[node]
            while up > 0:
                above.append(up)
                up = parent[up]
            column: dict[int, int] = {}

            def place(n: int) -> None:
                column[n] = len(ids[r])
                ids[r].append(token[n])
                parents[r].append(column[parent[n]] if parent[n] in column else -1)
                positions[r].append(depth[n])

            for n in reversed(above):
                place(n)
            stack = [node]
            while stack:
                n = stack.pop()
                place(n)
                if whole:
                    stack.extend(reversed(children[n].values()))
                    owner[n] = (r, column)
            if not whole:
                owner[node] = (r, column)
    where = []
    for path in paths:
        if not path:
            where.append([])
            continue
        r, column = owner[path[-1]]
        where.append([(r, column[n]) for n in path])
    return PackedRows(ids, parents, positions, where)


def shares_beginnings(sequences: Sequence[Sequence[int]], min_shared: int = MIN_SHARED) -> bool:
    """Whether two of the sequences begin with the same `min_shared` tokens (or more): the
    prefix-tree layout is worth its attention mask then."""
    seen = set()
    for seq in sequences:
        if len(seq) >= min_shared:
            head = tuple(seq[:min_shared])
            if head in seen:
                return True
            seen.add(head)
    return False


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


def _hidden_packed(base, units: list[CausalUnit], rows, cols):
    """Final hidden states at (rows, cols), every shared beginning run once, nothing padded.

    The units are laid out as one prefix tree (`prefix_tree_rows`), packed
    into rows of about PACK_TOKENS tokens. A 4D attention mask lets a token see
    itself and its ancestors in the tree only, and its position id is its
    depth, so each token is computed from exactly the tokens before it in its
    own text, as in a whole-text pass (the tree attention of Miao et al. 2024,
    SpecInfer).
    """
    import torch

    layout = prefix_tree_rows([u.ids for u in units], PACK_TOKENS)
    n_rows = len(layout.ids)
    width = max(len(row) for row in layout.ids)
    ids = np.zeros((n_rows, width), dtype=np.int64)
    positions = np.zeros((n_rows, width), dtype=np.int64)
    # (row, query, key): a key is visible to a query when it is the query or one of
    # its ancestors; parents are to the left, so one pass left to right fills it.
    # A padding column sees itself only (a softmax over nothing would be NaN).
    visible = np.zeros((n_rows, width, width), dtype=bool)
    for r in range(n_rows):
        ids[r, :len(layout.ids[r])] = layout.ids[r]
        positions[r, :len(layout.positions[r])] = layout.positions[r]
        visible[r, np.arange(width), np.arange(width)] = True
        for c, p in enumerate(layout.parents[r]):
            if p >= 0:
                visible[r, c, :c] = visible[r, p, :c]
    device = base.device
    mask = torch.from_numpy(visible)[:, None]  # (rows, 1, query, key)
    hidden = base(input_ids=torch.from_numpy(ids).to(device), attention_mask=mask.to(device),
                  position_ids=torch.from_numpy(positions).to(device),
                  use_cache=False).last_hidden_state
    at = [layout.where[r][c] for r, c in zip(rows, cols)]
    return hidden[[a[0] for a in at], [a[1] for a in at]]


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
    out: list = [None] * len(units)
    for chunk in token_budget_chunks([len(u.ids) for u in units], token_budget):
        for i, result in zip(chunk, _forward_pass(lm, [units[i] for i in chunk], share_prefixes)):
            out[i] = result
    return out


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
            at_rows = torch.tensor(rows, device=device)
            at_cols = torch.tensor(cols, device=device)
            # no KV cache: nothing is generated, and building one costs memory and time
            if share and shares_beginnings([u.ids for u in units]):
                logits = model.get_output_embeddings()(
                    _hidden_packed(model.base_model, units, rows, cols))
            elif model_type in HEAD_ONLY_WHERE_SCORED:
                hidden = model.base_model(**_padded(units, device), use_cache=False).last_hidden_state
                logits = model.get_output_embeddings()(hidden[at_rows, at_cols])
            else:
                logits = model(**_padded(units, device), use_cache=False).logits[at_rows, at_cols]
            # the head runs in the model's dtype at the scored positions only; the
            # log-softmax over the vocabulary is taken in float32 (in bf16 its sum
            # over ~50k exponentials would lose the small probabilities)
            logprobs = torch.log_softmax(logits.float(), dim=-1)
            scored = logprobs[torch.arange(len(wanted), device=device),
                              torch.tensor(wanted, device=device)].cpu().double().numpy()
    out, k = [], 0
    for unit in units:
        values = []
        for position in unit.targets:
            if position > 0:
                values.append(float(scored[k]))
                k += 1
            else:
                values.append(None)
        out.append({"logprobs": values, "offsets": [list(o) for o in unit.offsets]})
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
    keys = [cache_key(namespace, [p, c]) for p, c in zip(prefixes, continuations)]
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
                               progress=progress, desc=f"causal {lm.name}")
    out = stats.as_dict()
    out.update(commit_size=plan.commit_size, token_budget=plan.token_budget,
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
    leading space (" they"). Returns logprob, surprisal_bits and probability.
    """
    lm = _as_lm(lm)
    prefixes = _check_texts(prefixes, "prefix", allow_empty=True)
    continuations = _check_texts(continuations, "continuation")
    if len(prefixes) != len(continuations):
        raise DataValidationError("prefixes and continuations differ in length", source="continuations",
                                  expected=f"{len(prefixes)}", found=f"{len(continuations)}")
    items = _items(items, len(prefixes))
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

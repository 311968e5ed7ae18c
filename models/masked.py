"""Masked-LM scoring: target-word surprisal in a slot, sentence PLL, span PLL.

One shared path, as for causal models:

    prepare (tokenize with the model's [CLS]/[SEP], choose the positions to
    score, build one masked copy of the sentence per scored position)
      -> per-position log-probs (masked copies deduplicated, sorted by length,
         batched; the LM head is applied only at the masked position)
      -> a named reduction (sum) into a long table.

PLL variants (named, as in the literature):
- `pll_original` (Salazar et al. 2020): each token is masked alone and
  predicted from every other token.
- `pll_word_l2r` (Kauf & Ivanova 2023): when a token is predicted, the later
  tokens of the same word are masked too, so a word's pieces are predicted
  left to right. "Word" is the tokenizer's pre-tokenized word (`word_ids()`),
  as in minicons, so punctuation is its own word.

Target-word surprisal (`masked_word_surprisal`) uses one rule for words that
split into several pieces: all of the word's pieces are masked and predicted
left to right, each given the pieces before it, i.e. the chain rule
log P(w) = sum_k log P(piece_k | context, pieces_<k). That is exactly the
`pll_word_l2r` span score of the word, so it shares that code path.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError, UnknownNameError
from models.batching import plan_batches, run_units, token_budget_chunks
from models.cache import cache_keys, open_cache
from models.engine import BatchScorer
from models import gpu
from models.causal import _check_texts, _items, result_offsets
from models.loading import LanguageModel, load_scorer, require_fits_context
from models.scores import finish_table
from models.words import AlignmentError, find_span, tokens_in_span

PLL_VARIANTS = ("pll_original", "pll_word_l2r")
MASKED_BOS = "none"  # masked LMs always get their own [CLS]/[SEP]; no extra BOS is added
DEFAULT_SLOT = "[BLANK]"
# Architectures whose masked-LM logits are exactly head(final hidden state), so
# the head runs only at the masked position.
HEAD_ONLY_AT_MASK = {"bert", "roberta", "xlm-roberta", "camembert"}
# ...and whose last layer can run at the masked position only (tested: BERT).
LAST_LAYER_AT_MASK = {"bert"}
MASKED_COMMIT_SIZE = 16  # sentences per cache commit on a CPU: each is many masked copies


@dataclass
class MaskedUnit:
    ids: list
    targets: list  # positions scored
    offsets: list  # (start, end) of each target in the text
    masks: list  # per target: the positions masked when it is predicted
    text: str = ""  # what was tokenized (named by errors)


def _as_masked_lm(lm) -> LanguageModel:
    lm = lm if isinstance(lm, LanguageModel) else load_scorer(lm, kind="masked")
    if lm.kind != "masked":
        raise UnknownNameError("masked-LM model", lm.name, ["a masked LM such as bert-base-uncased"])
    if lm.tokenizer.mask_token_id is None:
        raise DataValidationError("the tokenizer has no mask token", source=lm.name)
    return lm


def _check_variant(variant: str) -> None:
    if variant not in PLL_VARIANTS:
        raise UnknownNameError("PLL variant", variant, list(PLL_VARIANTS))


def prepare_masked(lm: LanguageModel, texts: list[str], spans: list[tuple[int, int] | None],
                   variant: str, *, reject_unknown: bool = True) -> list[MaskedUnit]:
    """Which positions each text scores (all real tokens, or those in its span) and what is masked.

    reject_unknown: a span holding the unknown token is an error (a target word
    would be scored as [UNK], not as itself); a continuation, like a whole
    text, may hold one.
    """
    enc = lm.tokenizer(texts, return_offsets_mapping=True, return_special_tokens_mask=True)
    if lm.weights_loaded:  # masked models load eagerly; a lazy one is checked by its scorer
        require_fits_context(lm, [len(ids) for ids in enc["input_ids"]], texts)
    unk = lm.tokenizer.unk_token_id
    units = []
    for b, text in enumerate(texts):
        ids = list(enc["input_ids"][b])
        offsets = [tuple(o) for o in enc["offset_mapping"][b]]
        special = enc["special_tokens_mask"][b]
        words = enc.word_ids(b)
        real = [i for i in range(len(ids)) if not special[i]]
        if spans[b] is None:
            targets = real
        else:
            inside = tokens_in_span(text, [offsets[i] for i in real], spans[b])
            targets = [real[i] for i in inside]
            if reject_unknown and unk is not None and any(ids[t] == unk for t in targets):
                raise AlignmentError(f"the target {text[spans[b][0]:spans[b][1]]!r} in {text!r} "
                                     f"contains the unknown token {lm.tokenizer.unk_token!r}; it would "
                                     f"be scored as an unknown token, not as the word")
        masks = []
        for t in targets:
            masked = [t]
            if variant == "pll_word_l2r" and words[t] is not None:
                masked += [j for j in range(t + 1, len(ids)) if words[j] == words[t]]
            masks.append(masked)
        units.append(MaskedUnit(ids, targets, [offsets[t] for t in targets], masks, text))
    return units


def _first(output):
    """A layer's hidden states, whether it returns a tuple (transformers 4.x) or a tensor."""
    return output[0] if isinstance(output, tuple) else output


def _final_hidden_at(model, input_ids, attention, at, pos):
    """Final hidden state at one position per row (the masked one).

    For BERT the last layer is run at that position only: its keys and values
    come from every position of the layer below, its query, feed-forward and
    norms from the one position whose output is read. That is what the full
    layer computes there, without the other positions' work (a quarter of a
    4-layer BERT). Other architectures run whole.
    """
    import torch

    base = model.base_model
    config = model.config
    if (config.model_type not in LAST_LAYER_AT_MASK
            or getattr(config, "position_embedding_type", "absolute") != "absolute"):
        return base(input_ids=input_ids, attention_mask=attention).last_hidden_state[at, pos]
    dtype = base.embeddings.word_embeddings.weight.dtype
    # additive mask, broadcast over heads and queries; padding gets the dtype's minimum
    mask = (1.0 - attention[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
    hidden = base.embeddings(input_ids=input_ids)
    *lower, last = base.encoder.layer
    for layer in lower:
        hidden = _first(layer(hidden, attention_mask=mask))
    query = hidden[at, pos].unsqueeze(1)
    context = _last_layer_attention(last.attention.self, query, hidden, mask)
    return last.feed_forward_chunk(last.attention.output(context, query))[:, 0]


def _last_layer_attention(attention, query, hidden, mask):
    """BERT self-attention with the query at one position and keys/values from every position.

    Computed here rather than through the layer's own forward: transformers 4.x
    let `encoder_hidden_states=` supply the keys and values, 5.x ignores that
    argument for self-attention (the query then attends to itself only and the
    shapes break). The projections are the layer's own; softmax(QK^T/sqrt(d) +
    mask)V is what both versions compute (no dropout in eval mode).
    """
    import torch

    rows, width = hidden.shape[:2]
    heads, size = attention.num_attention_heads, attention.attention_head_size

    def split(x):  # (rows, length, heads * size) -> (rows, heads, length, size)
        return x.view(rows, x.shape[1], heads, size).transpose(1, 2)

    q = split(attention.query(query))
    k = split(attention.key(hidden))
    v = split(attention.value(hidden))
    context = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return context.transpose(1, 2).reshape(rows, 1, heads * size)


def _head(lm: LanguageModel):
    """The masked-LM head (transform + decoder), if the architecture's logits are exactly
    head(final hidden state) so it can run at the masked positions only; else None."""
    if lm.model_type not in HEAD_ONLY_AT_MASK:
        return None
    head = getattr(lm.model, "cls", None)
    return head if head is not None else getattr(lm.model, "lm_head", None)


def _masked_rows(units: list[MaskedUnit]) -> tuple[list[tuple], list[list[int]]]:
    """The distinct masked copies the units need, and for each unit its targets' row numbers.

    A row is (unit, target position, masked positions); units with identical
    token ids share their rows (the same sentence scored for two spans).
    """
    first_unit: dict[tuple, int] = {}
    row_index: dict[tuple, int] = {}
    rows: list[tuple] = []
    unit_rows = []
    for u, unit in enumerate(units):
        source = first_unit.setdefault(tuple(unit.ids), u)
        mine = []
        for t, masked in zip(unit.targets, unit.masks):
            key = (source, t, tuple(masked))
            if key not in row_index:
                row_index[key] = len(rows)
                rows.append(key)
            mine.append(row_index[key])
        unit_rows.append(mine)
    return rows, unit_rows


def _row_chunks(widths: list[int], max_rows: int, token_budget: int | None) -> list[list[int]]:
    """Length-sorted forward passes: at most `max_rows` rows, or at most `token_budget` padded tokens."""
    if token_budget is not None:
        return token_budget_chunks(widths, token_budget)
    order = sorted(range(len(widths)), key=lambda r: widths[r])
    return [order[start:start + max_rows] for start in range(0, len(order), max_rows)]


def forward_masked(lm: LanguageModel, units: list[MaskedUnit], max_rows: int,
                   token_budget: int | None = None) -> list[dict]:
    """log P(token at t | sentence with t (and its mask set) masked), for every target of every unit.

    Every pass's masked copies are laid out on the host with numpy first (their
    token ids with the mask token written in, row lengths, the masked position and
    its true token), sent to the device in one copy (from pinned memory, without
    blocking, on a GPU), and the scored log-probabilities stay on the device until
    one copy back at the end: the host never waits for the device between passes
    (issue 41; each tensor made from a Python list, and each pass's copy back, made
    it wait).
    token_budget: padded tokens per pass (GPU); None: `max_rows` rows per pass.
    """
    import torch

    mask_id = lm.tokenizer.mask_token_id
    pad_id = lm.tokenizer.pad_token_id or 0
    rows, unit_rows = _masked_rows(units)
    model = lm.model
    head = _head(lm)
    device = model.device
    lengths = np.fromiter((len(u.ids) for u in units), dtype=np.int64, count=len(units))
    ids = np.fromiter(chain.from_iterable(u.ids for u in units), dtype=np.int64,
                      count=int(lengths.sum()))
    starts = np.cumsum(lengths) - lengths
    source_of = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
    position_of = np.fromiter((row[1] for row in rows), dtype=np.int64, count=len(rows))
    passes, parts, offset = [], [], 0
    for chunk in _row_chunks(lengths[source_of].tolist(), max_rows, token_budget):
        chunk = np.asarray(chunk, dtype=np.int64)
        source = source_of[chunk]
        width = int(lengths[source].max())
        columns = np.arange(width)
        inside = columns[None, :] < lengths[source, None]
        input_ids = np.where(inside, ids[np.minimum(starts[source, None] + columns[None, :],
                                                    len(ids) - 1)], pad_id)
        pos = position_of[chunk]
        gold = input_ids[np.arange(len(chunk)), pos]
        mask_rows = np.fromiter((k for k, r in enumerate(chunk.tolist()) for _ in rows[r][2]),
                                dtype=np.int64)
        mask_cols = np.fromiter((j for r in chunk.tolist() for j in rows[r][2]), dtype=np.int64)
        input_ids[mask_rows, mask_cols] = mask_id
        pieces = [input_ids.reshape(-1), lengths[source], pos, gold]
        where = []
        for piece in pieces:
            where.append((offset, offset + len(piece)))
            offset += len(piece)
        passes.append((chunk, width, where))
        parts.extend(pieces)
    values = np.empty(len(rows))
    if passes:
        with torch.inference_mode():
            host = torch.from_numpy(np.concatenate(parts))
            if device.type == "cuda":
                host = host.pin_memory()
            on_device = host.to(device, non_blocking=True)
            out = torch.empty(len(rows), dtype=torch.float32, device=device)
            done = 0
            for chunk, width, where in passes:
                input_ids, row_lengths, pos, gold = (on_device[a:b] for a, b in where)
                input_ids = input_ids.view(len(chunk), width)
                attention = (torch.arange(width, device=device)[None, :]
                             < row_lengths[:, None]).long()
                at = torch.arange(len(chunk), device=device)
                if head is not None:
                    logits = head(_final_hidden_at(model, input_ids, attention, at, pos))
                else:
                    logits = model(input_ids=input_ids, attention_mask=attention).logits[at, pos]
                if device.type == "cuda" and gpu.FUSED_HEAD:  # logit minus log-sum-exp
                    out[done:done + len(chunk)] = gpu.target_logprobs(logits, gold,
                                                                      gpu.is_compiled(model))
                else:  # float32 log-softmax at the masked positions only (see models.causal)
                    logprobs = torch.log_softmax(logits.float(), dim=-1)
                    out[done:done + len(chunk)] = logprobs[at, gold]
                    del logprobs
                done += len(chunk)
                del logits  # vocabulary-sized: freed before the next pass
            # rows in pass order -> rows in their own order
            values[np.concatenate([chunk for chunk, _, _ in passes])] = (
                out.cpu().double().numpy())
    values = values.tolist()
    return [{"logprobs": [values[r] for r in mine], "offsets": result_offsets(unit.offsets)}
            for unit, mine in zip(units, unit_rows)]


def masked_logprobs(lm: LanguageModel, texts: list[str], spans: list, *, variant: str,
                    batch_size: int | None, max_rows: int, cache_dir, use_cache: bool, progress,
                    reject_unknown: bool = True, token_budget: int | None = None) -> tuple[list, dict]:
    """The shared path: per-token PLL terms of each text (or of its span), cached per text.

    batch_size: sentences per cache commit; token_budget: padded tokens per
    forward pass, else max_rows masked copies per pass; None: the device's
    default (models.batching.plan_batches).
    """
    _check_variant(variant)
    plan = plan_batches(lm.device_type, batch_size=batch_size, token_budget=token_budget,
                        cpu_commit_size=MASKED_COMMIT_SIZE)
    units = prepare_masked(lm, texts, spans, variant, reject_unknown=reject_unknown)
    namespace = lm.cache_namespace("masked_token_logprobs", variant=variant)
    keys = cache_keys(namespace, ([t, list(s) if s else None] for t, s in zip(texts, spans)))
    scorer = BatchScorer(lm, forward_masked, {"max_rows": max_rows,
                                              "token_budget": plan.token_budget})
    results, stats = run_units(units, keys=keys, sort_keys=[len(u.ids) for u in units],
                               score_batch=scorer, batch_size=plan.commit_size,
                               cache=open_cache(cache_dir, use_cache),
                               progress=progress, desc=f"{variant} {lm.name}", model=lm.name)
    out = stats.as_dict()
    out.update(commit_size=plan.commit_size, token_budget=plan.token_budget)
    return results, out


def pll_sentences(texts: Sequence[str], *, items=None, lm, variant: str = "pll_original",
                  batch_size: int | None = None, max_rows: int = 256, cache_dir=None, use_cache: bool = True,
                  progress: bool | None = None, token_budget: int | None = None) -> pd.DataFrame:
    """Sentence pseudo-log-likelihood: sum over tokens of log P(token | rest), one row per item.

    batch_size: sentences per cache commit; max_rows: masked copies per forward pass, unless
    token_budget (padded tokens per pass) is given; None: the device's default.
    """
    lm = _as_masked_lm(lm)
    texts = _check_texts(texts, "text")
    items = _items(items, len(texts))
    results, stats = masked_logprobs(lm, texts, [None] * len(texts), variant=variant,
                                     batch_size=batch_size, max_rows=max_rows, cache_dir=cache_dir,
                                     use_cache=use_cache, progress=progress,
                                     token_budget=token_budget)
    df = pd.DataFrame({"item": items, "text": texts,
                       "logprob": [math.fsum(r["logprobs"]) for r in results],
                       "n_tokens": [len(r["logprobs"]) for r in results]})
    out = finish_table(df, lm=lm, scoring=variant, bos=MASKED_BOS, source="pll_sentences")
    out.attrs["run"] = stats
    return out


def _span_table(lm, texts, targets, items, *, variant, scoring, on_alignment_error, batch_size,
                max_rows, cache_dir, use_cache, progress, source,
                reject_unknown: bool = True) -> pd.DataFrame:
    if on_alignment_error not in ("raise", "nan"):
        raise UnknownNameError("on_alignment_error option", on_alignment_error, ["raise", "nan"])
    good, spans, failed = [], [], {}
    for i, (text, target) in enumerate(zip(texts, targets)):
        try:
            span = target if isinstance(target, tuple) else find_span(
                text, target, where=f"item {items[i]!r}: ")
            # raises on an alignment (or unknown-token) failure
            prepare_masked(lm, [text], [span], variant, reject_unknown=reject_unknown)
        except AlignmentError as exc:
            if on_alignment_error == "raise":
                raise
            failed[i] = str(exc)
            continue
        good.append(i)
        spans.append(span)
    results, stats = masked_logprobs(lm, [texts[i] for i in good], spans, variant=variant,
                                     batch_size=batch_size, max_rows=max_rows, cache_dir=cache_dir,
                                     use_cache=use_cache, progress=progress,
                                     reject_unknown=reject_unknown)
    by_index = dict(zip(good, results))
    rows = []
    for i, (text, target) in enumerate(zip(texts, targets)):
        r = by_index.get(i)
        shown = text[target[0]:target[1]] if isinstance(target, tuple) else target
        rows.append({"item": items[i], "text": text, "span": shown,
                     "logprob": math.fsum(r["logprobs"]) if r else np.nan,
                     "n_tokens": len(r["logprobs"]) if r else 0,
                     "aligned": r is not None, "alignment_error": failed.get(i, "")})
    out = finish_table(pd.DataFrame(rows), lm=lm, scoring=scoring, bos=MASKED_BOS, source=source)
    out.attrs["run"] = stats
    return out


def pll_span(texts: Sequence[str], targets: Sequence[str], *, items=None, lm,
             variant: str = "pll_original", on_alignment_error: str = "raise", batch_size: int | None = None,
             max_rows: int = 256, cache_dir=None, use_cache: bool = True,
             progress: bool | None = None) -> pd.DataFrame:
    """PLL of a chosen span given the rest of the sentence (P(C|V) in the role-noun method).

    Each target (a word or phrase, e.g. "police officer") must occur exactly
    once as a whole word in its text. Only the span's tokens are masked and
    scored; everything outside the span stays visible.
    """
    lm = _as_masked_lm(lm)
    texts = _check_texts(texts, "text")
    targets = _check_texts(targets, "target")
    items = _items(items, len(texts))
    _check_variant(variant)
    return _span_table(lm, texts, targets, items, variant=variant, scoring=variant,
                       on_alignment_error=on_alignment_error, batch_size=batch_size,
                       max_rows=max_rows, cache_dir=cache_dir, use_cache=use_cache,
                       progress=progress, source="pll_span")


def require_bare_words(words: Sequence[str], what: str, items: Sequence | None = None) -> None:
    """A word put in a slot has no whitespace around it: the frame's own space before the slot
    is the one before the word, and " they" would be scored after two spaces."""
    for k, word in enumerate(words):
        if word != word.strip():
            where = f"item {items[k]!r}: " if items is not None else ""
            raise DataValidationError(
                f"{where}a {what} has whitespace around it, which would double the frame's "
                f"space before the slot", source=f"{what}s", row=k + 1,
                expected=f"the bare {what} ({word.strip()!r})", found=repr(word))


def fill_slot(frame: str, word: str, slot: str = DEFAULT_SLOT, *, where: str = "") -> str:
    if frame.count(slot) != 1:
        raise DataValidationError(f"{where}each frame must contain the slot {slot!r} exactly once",
                                  source="frames", expected=f"one {slot!r}", found=repr(frame))
    return frame.replace(slot, word)


def masked_word_surprisal(frames: Sequence[str], words: Sequence[str], *, items=None, lm,
                          slot: str = DEFAULT_SLOT, on_alignment_error: str = "raise",
                          batch_size: int | None = None, max_rows: int = 256, cache_dir=None,
                          use_cache: bool = True, progress: bool | None = None) -> pd.DataFrame:
    """log P(word in the slot | frame), multi-piece words chained left to right (module docstring)."""
    lm = _as_masked_lm(lm)
    frames = _check_texts(frames, "frame")
    words = _check_texts(words, "word")
    items = _items(items, len(frames))
    texts = [fill_slot(f, w, slot, where=f"item {i!r}: ") for f, w, i in zip(frames, words, items)]
    # the span comes from the slot's position, so a word that also occurs
    # elsewhere in the frame is still located unambiguously
    spans = [(f.index(slot), f.index(slot) + len(w)) for f, w in zip(frames, words)]
    out = _span_table(lm, texts, spans, items, variant="pll_word_l2r", scoring="masked",
                      on_alignment_error=on_alignment_error, batch_size=batch_size,
                      max_rows=max_rows, cache_dir=cache_dir, use_cache=use_cache,
                      progress=progress, source="masked_word_surprisal")
    return out.rename(columns={"span": "word"})

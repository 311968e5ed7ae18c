"""Forced choice among variants in a slot: he/she/they/xe, firefighter/fireman/firewoman.

Each frame has one slot ("[BLANK]"). Every variant is put in the slot and
scored as a whole word (all of its tokens, so "police officer" and "xyr" are
never reduced to one token or an unknown token), then the probabilities are
normalised over the variant set of that frame:

    probability_v = exp(logprob_v) / sum_u exp(logprob_u)   (a softmax per item)

`span` chooses what is scored:
- "word": the variant's own tokens given the context. Causal LMs see the left
  context only (log P(variant | prefix)); masked LMs see both sides, with the
  variant's pieces masked and chained left to right (models.masked).
- "sentence": the whole filled sentence (causal: log P(variant + rest | prefix),
  the prefix being common to all variants; masked: sentence PLL), so the words
  after the slot count too.

If a variant cannot be aligned to whole tokens, its logprob is NaN,
`aligned` is False and the whole item's probabilities are NaN (a
normalisation over an incomplete set would be wrong) -- or, with
on_alignment_error="raise", the error is raised.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from gbstats.errors import DataValidationError, UnknownNameError
from models.causal import _check_texts, _items, score_continuations
from models.loading import LanguageModel, load_scorer
from models.masked import DEFAULT_SLOT, fill_slot, masked_word_surprisal, pll_sentences
from models.registry import DEFAULT_MODEL
from models.words import AlignmentError

SPANS = ("word", "sentence")


def normalise_over_variants(df: pd.DataFrame, by: str = "item") -> pd.Series:
    """Softmax of `logprob` within each `by` group; NaN for a group with any NaN logprob."""
    def softmax(lp: pd.Series) -> pd.Series:
        if lp.isna().any():
            return pd.Series(np.nan, index=lp.index)
        return np.exp(lp - logsumexp(lp.to_numpy()))

    return df.groupby(by, sort=False)["logprob"].transform(softmax)


def _split_at_slot(frame: str, slot: str) -> tuple[str, str, str]:
    """(prefix, space before the slot, text after the slot).

    The space before the slot moves into the continuation (" they"), because
    byte-level BPE tokenizers attach a word's leading space to the word.
    """
    before, after = frame.split(slot)
    prefix = before.rstrip(" ")
    return prefix, before[len(prefix):], after


def _causal_choice(lm, frames, variants, items, *, slot, span, bos, on_alignment_error, **run):
    prefixes, continuations, keys = [], [], []
    failed: dict[tuple, str] = {}
    for item, frame in zip(items, frames):
        prefix, space, after = _split_at_slot(frame, slot)
        for v in variants:
            continuation = space + v + (after if span == "sentence" else "")
            if not prefix and bos == "none":
                failed[(item, v)] = (f"item {item!r}: the slot starts the frame and bos='none', so "
                                     f"the variant's first token has no context")
                continue
            prefixes.append(prefix)
            continuations.append(continuation)
            keys.append((item, v))
    if failed and on_alignment_error == "raise":
        raise AlignmentError(next(iter(failed.values())))
    scored = score_continuations(prefixes, continuations, items=list(range(len(keys))), lm=lm,
                                 bos=bos, **run)
    by_key = dict(zip(keys, scored[["logprob", "n_tokens"]].itertuples(index=False)))
    rows = []
    for item, frame in zip(items, frames):
        for v in variants:
            lp, n = by_key.get((item, v), (np.nan, 0))
            rows.append({"item": item, "variant": v, "text": fill_slot(frame, v, slot),
                         "logprob": lp, "n_tokens": n, "aligned": (item, v) not in failed,
                         "alignment_error": failed.get((item, v), "")})
    return pd.DataFrame(rows), "causal", bos, scored.attrs.get("run", {})


def _masked_choice(lm, frames, variants, items, *, slot, span, variant, on_alignment_error, **run):
    expanded_frames = [f for f in frames for _ in variants]
    expanded_words = [v for _ in frames for v in variants]
    expanded_items = [(i, v) for i in items for v in variants]
    if span == "word":
        scored = masked_word_surprisal(expanded_frames, expanded_words, items=list(range(len(expanded_items))),
                                       lm=lm, slot=slot, on_alignment_error=on_alignment_error, **run)
        scoring = "masked"
    else:
        texts = [fill_slot(f, w, slot) for f, w in zip(expanded_frames, expanded_words)]
        scored = pll_sentences(texts, items=list(range(len(texts))), lm=lm, variant=variant, **run)
        scored["aligned"], scored["alignment_error"] = True, ""
        scoring = variant
    rows = []
    for (item, v), frame, (_, r) in zip(expanded_items, expanded_frames, scored.iterrows()):
        rows.append({"item": item, "variant": v, "text": fill_slot(frame, v, slot),
                     "logprob": r["logprob"], "n_tokens": r["n_tokens"], "aligned": r["aligned"],
                     "alignment_error": r["alignment_error"]})
    return pd.DataFrame(rows), scoring, "none", scored.attrs.get("run", {})


def forced_choice(frames: Sequence[str], variants: Sequence[str], *, items=None, lm=DEFAULT_MODEL,
                  slot: str = DEFAULT_SLOT, span: str = "word", bos: str = "prepend",
                  variant: str = "pll_original", on_alignment_error: str = "nan",
                  batch_size: int = 32, cache_dir=None, use_cache: bool = True,
                  progress: bool | None = None) -> pd.DataFrame:
    """One row per item x variant: logprob, surprisal_bits, n_tokens, probability (sums to 1 per item).

    bos applies to causal models; variant (pll_original / pll_word_l2r) to
    masked models with span="sentence".
    """
    from models.scores import finish_table

    lm = lm if isinstance(lm, LanguageModel) else load_scorer(lm)
    if span not in SPANS:
        raise UnknownNameError("forced-choice span", span, list(SPANS))
    if on_alignment_error not in ("raise", "nan"):
        raise UnknownNameError("on_alignment_error option", on_alignment_error, ["raise", "nan"])
    frames = _check_texts(frames, "frame")
    variants = _check_texts(variants, "variant")
    if len(set(variants)) != len(variants) or len(variants) < 2:
        raise DataValidationError("variants must be at least two distinct strings", source="variants",
                                  found=repr(list(variants)))
    items = _items(items, len(frames))
    if len(set(items)) != len(items):
        raise DataValidationError("items must be unique (one frame per item)", source="items")
    for i, frame in zip(items, frames):
        fill_slot(frame, "", slot, where=f"item {i!r}: ")
    run = {"batch_size": batch_size, "cache_dir": cache_dir, "use_cache": use_cache, "progress": progress}
    if lm.kind == "causal":
        df, scoring, bos_used, stats = _causal_choice(lm, frames, variants, items, slot=slot, span=span,
                                                      bos=bos, on_alignment_error=on_alignment_error, **run)
    else:
        df, scoring, bos_used, stats = _masked_choice(lm, frames, variants, items, slot=slot, span=span,
                                                      variant=variant,
                                                      on_alignment_error=on_alignment_error, **run)
    df["probability"] = normalise_over_variants(df)
    out = finish_table(df, lm=lm, scoring=scoring, bos=bos_used, source="forced_choice")
    out.attrs["run"] = stats
    return out

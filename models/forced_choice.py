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
  the prefix being common to all variants; masked: sentence PLL, variant
  `pll`, default models.logprob.DEFAULT_PLL), so the words after the slot
  count too.
- "in_context": the variant judged with the whole sentence as its context,
  whatever the model: a masked LM scores the word in the slot seeing both
  sides ("word"), a causal LM scores the variant and the words after it
  ("sentence"), the only way it sees the right context.

If a variant cannot be aligned to whole tokens, its logprob is NaN,
`aligned` is False and the whole item's probabilities are NaN (a
normalisation over an incomplete set would be wrong) -- or, with
on_alignment_error="raise", the error is raised.
"""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from gbstats.errors import DataValidationError, UnknownNameError
from gbstats.inference.probabilities import softmax_within
from models.causal import _check_texts, _items
from models.loading import LanguageModel, load_scorer
from models.logprob import DEFAULT_PLL, causal_slot_scores, slot_logprobs, text_logprobs
from models.masked import DEFAULT_SLOT, MASKED_BOS, fill_slot, require_bare_words
from models.registry import DEFAULT_MODEL

SPANS = ("word", "sentence", "in_context")
IN_CONTEXT = {"masked": "word", "causal": "sentence"}


def normalise_over_variants(df: pd.DataFrame, by: str = "item") -> pd.Series:
    """Softmax of `logprob` within each `by` group; NaN for a group with any NaN logprob."""
    return softmax_within(df, "logprob", by, on_missing="nan")


def _expand(frames, variants, items) -> list[tuple]:
    """(item, frame, variant) for every variant of every frame, item-major."""
    return [(i, f, v) for i, f in zip(items, frames) for v in variants]


def _sentence_scores(lm, expanded, *, slot, bos, pll, on_alignment_error, **run) -> pd.DataFrame:
    """Every variant's filled sentence: causal log P(variant + rest | prefix), masked PLL."""
    texts = [fill_slot(f, v, slot) for _, f, v in expanded]
    if lm.kind == "masked":
        scored = text_logprobs(texts, items=list(range(len(texts))), lm=lm, pll=pll, **run)
        logprobs, n_tokens = scored["logprob"].to_list(), scored["n_tokens"].to_list()
        failed, stats = {}, scored.attrs.get("run", {})
    else:
        logprobs, n_tokens, failed, stats = causal_slot_scores(
            lm, [i for i, _, _ in expanded], [f for _, f, _ in expanded],
            [v for _, _, v in expanded], slot=slot, bos=bos, with_rest=True,
            on_alignment_error=on_alignment_error, **run)
    out = pd.DataFrame({"item": [i for i, _, _ in expanded], "variant": [v for _, _, v in expanded],
                        "text": texts, "logprob": logprobs, "n_tokens": n_tokens,
                        "aligned": [k not in failed for k in range(len(expanded))],
                        "alignment_error": [failed.get(k, "") for k in range(len(expanded))]})
    out.attrs["run"] = stats
    return out


def _word_scores(lm, expanded, *, slot, bos, on_alignment_error, **run) -> pd.DataFrame:
    """Every variant in the slot, scored as a word (models.logprob.slot_logprobs)."""
    scored = slot_logprobs([f for _, f, _ in expanded], [v for _, _, v in expanded],
                           items=list(range(len(expanded))), lm=lm, slot=slot, bos=bos,
                           on_alignment_error=on_alignment_error, **run)
    out = pd.DataFrame({"item": [i for i, _, _ in expanded], "variant": [v for _, _, v in expanded],
                        "text": scored["text"].to_numpy(), "logprob": scored["logprob"].to_numpy(),
                        "n_tokens": scored["n_tokens"].to_numpy(),
                        "aligned": scored["aligned"].to_numpy(),
                        "alignment_error": scored["alignment_error"].to_numpy()})
    out.attrs["run"] = scored.attrs.get("run", {})
    return out


def forced_choice(frames: Sequence[str], variants: Sequence[str], *, items=None, lm=DEFAULT_MODEL,
                  slot: str = DEFAULT_SLOT, span: str = "word", bos: str = "prepend",
                  pll: str = DEFAULT_PLL, on_alignment_error: str = "nan",
                  batch_size: int | None = None, cache_dir=None, use_cache: bool = True,
                  progress: bool | None = None) -> pd.DataFrame:
    """One row per item x variant: logprob, surprisal_bits, n_tokens, probability (sums to 1 per item).

    bos applies to causal models; pll (the PLL variant, default
    pll_word_l2r; `scoring` records it) to masked models with span="sentence".
    """
    from models.scores import finish_table

    lm = lm if isinstance(lm, LanguageModel) else load_scorer(lm)
    if span not in SPANS:
        raise UnknownNameError("forced-choice span", span, list(SPANS))
    if on_alignment_error not in ("raise", "nan"):
        raise UnknownNameError("on_alignment_error option", on_alignment_error, ["raise", "nan"])
    frames = _check_texts(frames, "frame")
    variants = _check_texts(variants, "variant")
    require_bare_words(variants, "variant")
    if len(set(variants)) != len(variants) or len(variants) < 2:
        raise DataValidationError("variants must be at least two distinct strings", source="variants",
                                  found=repr(list(variants)))
    items = _items(items, len(frames))
    if len(set(items)) != len(items):
        raise DataValidationError("items must be unique (one frame per item)", source="items")
    for i, frame in zip(items, frames):
        fill_slot(frame, "", slot, where=f"item {i!r}: ")
    run = {"batch_size": batch_size, "cache_dir": cache_dir, "use_cache": use_cache, "progress": progress}
    if span == "in_context":
        span = IN_CONTEXT[lm.kind]
    expanded = _expand(frames, variants, items)
    if span == "word":
        df = _word_scores(lm, expanded, slot=slot, bos=bos, on_alignment_error=on_alignment_error,
                          **run)
        scoring = "masked" if lm.kind == "masked" else "causal"
    else:
        df = _sentence_scores(lm, expanded, slot=slot, bos=bos, pll=pll,
                              on_alignment_error=on_alignment_error, **run)
        scoring = pll if lm.kind == "masked" else "causal"
    stats = df.attrs["run"]
    df["probability"] = normalise_over_variants(df)
    out = finish_table(df, lm=lm, scoring=scoring, bos=MASKED_BOS if lm.kind == "masked" else bos,
                       source="forced_choice")
    out.attrs["run"] = stats
    return out

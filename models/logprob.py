"""Kind-aware log-probabilities: the one scoring entry studies use.

A study says what it wants scored; this module chooses how, from the model's
kind, so no study branches on `lm.kind`:

    text_logprobs(texts, lm=lm)                           log P(text)
    continuation_logprobs(prefixes, continuations, lm=lm) log P(continuation | prefix)
    slot_logprobs(frames, words, lm=lm)                   log P(word in the slot | frame)
    filled_frame_logprobs(frames, fillers, lm=lm)         the frame's score with each filler
    n_pieces_in_slot(lm, word)                            tokens the word takes in a slot
    n_pieces_in_slots(lm, words)                          the same for many, kept in the cache

What each computes:

| entry         | causal LM                               | masked LM                                   |
|---------------|-----------------------------------------|---------------------------------------------|
| text          | log P(text), BOS prepended (`bos`)      | PLL of the text (`pll`)                     |
| continuation  | log P(continuation / BOS + prefix)      | PLL of the continuation's tokens, prefix    |
|               |                                         | visible (`pll`)                             |
| slot word     | log P(" word" / words before the slot)  | the word's pieces masked, predicted left to |
|               |                                         | right from both sides (`scoring`="masked")  |
| filled frame  | log P(filler + rest / words before):    | PLL of every token outside the filler, the  |
|               | the joint, up to log P(prefix), which   | filler visible: log P(frame / filler), the  |
|               | every filler of a frame shares          | likelihood (Watson et al. 2023's P(C / V))  |
|               | (`score_is`="joint")                    | (`score_is`="likelihood")                   |

("/" reads "given".) The PLL variant is one explicit default, DEFAULT_PLL =
"pll_word_l2r" (Kauf & Ivanova 2023: a word's later pieces are masked too
when one of its pieces is predicted, so multi-piece words such as "xyr" are
not inflated), and every table records the method that ran in its `scoring`
column ("causal", "masked", "pll_original" or "pll_word_l2r"). A study that
follows a paper using another variant passes `pll=` explicitly.

Every entry takes items=, batch_size= (None: the underlying scorer's own
default), cache_dir=, use_cache= and progress=, and returns the score-table
contract of models.scores plus `probability` = exp(logprob).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError, UnknownNameError
from models.causal import (_check_texts, _items, require_clean_joins, score_continuations,
                           score_sentences)
from models.loading import LanguageModel, load_scorer
from models.masked import (DEFAULT_SLOT, MASKED_BOS, PLL_VARIANTS, _as_masked_lm, _span_table,
                           fill_slot, masked_word_surprisal, pll_sentences, require_bare_words)
from models.registry import DEFAULT_MODEL
from models.scores import finish_table
from models.words import AlignmentError

DEFAULT_PLL = "pll_word_l2r"
# what filled_frame_logprobs' score is, by model kind (see the module docstring)
SCORE_IS = {"causal": "joint", "masked": "likelihood"}


def as_scorer(lm) -> LanguageModel:
    """A loaded model, from a LanguageModel or a name (registry name, hub id, folder)."""
    return lm if isinstance(lm, LanguageModel) else load_scorer(lm)


def _run(batch_size, cache_dir, use_cache, progress) -> dict:
    run = {"cache_dir": cache_dir, "use_cache": use_cache, "progress": progress}
    if batch_size is not None:
        run["batch_size"] = batch_size
    return run


def _check_pll(pll: str) -> None:
    if pll not in PLL_VARIANTS:
        raise UnknownNameError("PLL variant", pll, list(PLL_VARIANTS))


def _with_probability(df: pd.DataFrame) -> pd.DataFrame:
    df["probability"] = np.exp(df["logprob"])
    return df


def split_at_slot(frame: str, slot: str = DEFAULT_SLOT) -> tuple[str, str, str]:
    """(prefix, space before the slot, text after the slot).

    The space before the slot moves into the continuation (" they"), because
    byte-level BPE tokenizers attach a word's leading space to the word.
    """
    before, after = frame.split(slot)
    prefix = before.rstrip(" ")
    return prefix, before[len(prefix):], after


def _filled(frames, fillers, items, slot: str, what: str):
    """Checked frames, fillers, items and the filled texts."""
    frames = _check_texts(frames, "frame")
    fillers = _check_texts(fillers, what)
    if len(frames) != len(fillers):
        raise DataValidationError(f"frames and {what}s differ in length", source=f"{what}s",
                                  expected=f"{len(frames)}", found=f"{len(fillers)}")
    items = _items(items, len(frames))
    require_bare_words(fillers, what, items)
    texts = [fill_slot(f, w, slot, where=f"item {i!r}: ") for f, w, i in zip(frames, fillers, items)]
    return frames, fillers, items, texts


def causal_slot_scores(lm, items, frames, fillers, *, slot: str, bos: str, with_rest: bool,
                       on_alignment_error: str, **run) -> tuple[list, list, dict, dict]:
    """Causal LMs: log P(" filler" | words before the slot), or with_rest, log P(" filler" +
    the words after it | words before). Returns (logprobs, n_tokens, failed, run stats):
    a slot that starts its frame has no context when bos='none', so that frame fails
    (NaN, its reason in `failed`) or, with on_alignment_error='raise', raises."""
    prefixes, continuations, scored_at, failed = [], [], [], {}
    for k, (item, frame, filler) in enumerate(zip(items, frames, fillers)):
        prefix, space, after = split_at_slot(frame, slot)
        if not prefix and bos == "none":
            failed[k] = (f"item {item!r}: the slot starts the frame and bos='none', so the "
                         f"filler's first token has no context")
            continue
        prefixes.append(prefix)
        continuations.append(space + filler + (after if with_rest else ""))
        scored_at.append(k)
    if failed and on_alignment_error == "raise":
        raise AlignmentError(next(iter(failed.values())))
    scored = score_continuations(prefixes, continuations, items=list(range(len(scored_at))),
                                 lm=lm, bos=bos, **run)
    by_index = dict(zip(scored_at, scored[["logprob", "n_tokens"]].itertuples(index=False)))
    values = [by_index.get(k, (np.nan, 0)) for k in range(len(frames))]
    return ([lp for lp, _ in values], [n for _, n in values], failed,
            scored.attrs.get("run", {}))


def text_logprobs(texts: Sequence[str], *, items=None, lm=DEFAULT_MODEL, pll: str = DEFAULT_PLL,
                  bos: str = "prepend", batch_size: int | None = None, cache_dir=None,
                  use_cache: bool = True, progress: bool | None = None) -> pd.DataFrame:
    """log P(text) per text: causal with BOS as `bos` says, masked as the `pll` PLL."""
    lm = as_scorer(lm)
    _check_pll(pll)
    run = _run(batch_size, cache_dir, use_cache, progress)
    if lm.kind == "masked":
        out = pll_sentences(texts, items=items, lm=lm, variant=pll, **run)
    else:
        out = score_sentences(texts, items=items, lm=lm, bos=bos, **run)
    return _with_probability(out)


def continuation_logprobs(prefixes: Sequence[str], continuations: Sequence[str], *, items=None,
                          lm=DEFAULT_MODEL, pll: str = DEFAULT_PLL, bos: str = "prepend",
                          batch_size: int | None = None, cache_dir=None, use_cache: bool = True,
                          progress: bool | None = None) -> pd.DataFrame:
    """log P(continuation | prefix). The continuation is appended verbatim (" they").

    Masked LMs: the `pll` PLL of the continuation's tokens only, with the
    prefix visible (the continuation must start at a token boundary; like a
    whole text, it may hold the unknown token).
    """
    lm = as_scorer(lm)
    _check_pll(pll)
    run = _run(batch_size, cache_dir, use_cache, progress)
    if lm.kind != "masked":
        return score_continuations(prefixes, continuations, items=items, lm=lm, bos=bos, **run)
    prefixes = _check_texts(prefixes, "prefix", allow_empty=True)
    continuations = _check_texts(continuations, "continuation")
    if len(prefixes) != len(continuations):
        raise DataValidationError("prefixes and continuations differ in length",
                                  source="continuations", expected=f"{len(prefixes)}",
                                  found=f"{len(continuations)}")
    items = _items(items, len(prefixes))
    require_clean_joins(prefixes, continuations, items)
    texts = [p + c for p, c in zip(prefixes, continuations)]
    spans = [(len(p), len(t)) for p, t in zip(prefixes, texts)]
    out = _span_table(_as_masked_lm(lm), texts, spans, items, variant=pll, scoring=pll,
                      on_alignment_error="raise", max_rows=256, source="continuation_logprobs",
                      reject_unknown=False, **{"batch_size": None, **run})
    attrs = out.attrs
    out = out.drop(columns=["text", "span", "aligned", "alignment_error"])
    out.insert(1, "prefix", prefixes)
    out.insert(2, "continuation", continuations)
    out.attrs = attrs
    return _with_probability(out)


def slot_logprobs(frames: Sequence[str], words: Sequence[str], *, items=None, lm=DEFAULT_MODEL,
                  slot: str = DEFAULT_SLOT, bos: str = "prepend", on_alignment_error: str = "raise",
                  batch_size: int | None = None, cache_dir=None, use_cache: bool = True,
                  progress: bool | None = None) -> pd.DataFrame:
    """log P(word | frame) for the word put in the frame's slot, one row per frame (item).

    Causal LMs see the words before the slot: log P(" word" | prefix). Masked
    LMs see both sides: all of the word's pieces masked and predicted left to
    right (models.masked). A word that cannot be scored as whole tokens gets
    NaN and aligned=False with on_alignment_error="nan" (the default raises);
    so does a word in a slot that starts the frame when a causal LM has no BOS.
    Returns item, text (the filled frame), word, logprob, n_tokens, aligned,
    alignment_error and the provenance columns.
    """
    lm = as_scorer(lm)
    if on_alignment_error not in ("raise", "nan"):
        raise UnknownNameError("on_alignment_error option", on_alignment_error, ["raise", "nan"])
    frames, words, items, texts = _filled(frames, words, items, slot, "word")
    run = _run(batch_size, cache_dir, use_cache, progress)
    if lm.kind == "masked":
        out = masked_word_surprisal(frames, words, items=items, lm=lm, slot=slot,
                                    on_alignment_error=on_alignment_error, **run)
        out["text"] = texts
        return _with_probability(out)
    logprobs, n_tokens, failed, stats = causal_slot_scores(
        lm, items, frames, words, slot=slot, bos=bos, with_rest=False,
        on_alignment_error=on_alignment_error, **run)
    df = pd.DataFrame({"item": items, "text": texts, "word": words, "logprob": logprobs,
                       "n_tokens": n_tokens, "aligned": [k not in failed for k in range(len(items))],
                       "alignment_error": [failed.get(k, "") for k in range(len(items))]})
    out = finish_table(df, lm=lm, scoring="causal", bos=bos, source="slot_logprobs")
    out.attrs["run"] = stats
    return _with_probability(out)


def filled_frame_logprobs(frames: Sequence[str], fillers: Sequence[str], *, items=None,
                          lm=DEFAULT_MODEL, slot: str = DEFAULT_SLOT, pll: str = DEFAULT_PLL,
                          bos: str = "prepend", batch_size: int | None = None, cache_dir=None,
                          use_cache: bool = True, progress: bool | None = None) -> pd.DataFrame:
    """How well each filler fits its frame, scored over the whole frame (one row per item).

    Causal: log P(filler + rest | words before the slot), the joint up to a
    term every filler of the frame shares (`score_is` = "joint"). Masked: the
    `pll` PLL of every token outside the filler with the filler visible,
    log P(frame | filler) (`score_is` = "likelihood"); with whole-word
    fillers that is PLL(filled text) - PLL(filler span), both computed here.
    Softmax over a frame's fillers gives P(filler | frame) from the joint and
    the normalised likelihood from the likelihood.
    """
    lm = as_scorer(lm)
    _check_pll(pll)
    frames, fillers, items, texts = _filled(frames, fillers, items, slot, "filler")
    run = _run(batch_size, cache_dir, use_cache, progress)
    if lm.kind == "masked":
        lm = _as_masked_lm(lm)
        index = list(range(len(texts)))
        sentence = pll_sentences(texts, items=index, lm=lm, variant=pll, **run)
        spans = [(f.index(slot), f.index(slot) + len(w)) for f, w in zip(frames, fillers)]
        filler = _span_table(lm, texts, spans, index, variant=pll, scoring=pll,
                             on_alignment_error="raise", max_rows=256,
                             source="filled_frame_logprobs", **{"batch_size": None, **run})
        df = pd.DataFrame({"item": items, "text": texts, "filler": fillers,
                           "logprob": sentence["logprob"].to_numpy() - filler["logprob"].to_numpy(),
                           "n_tokens": sentence["n_tokens"].to_numpy()
                           - filler["n_tokens"].to_numpy()})
        out = finish_table(df, lm=lm, scoring=pll, bos=MASKED_BOS, source="filled_frame_logprobs")
        out.attrs["run"] = {"sentence": sentence.attrs.get("run", {}),
                            "filler": filler.attrs.get("run", {})}
    else:
        logprobs, n_tokens, _, stats = causal_slot_scores(
            lm, items, frames, fillers, slot=slot, bos=bos, with_rest=True,
            on_alignment_error="raise", **run)
        df = pd.DataFrame({"item": items, "text": texts, "filler": fillers, "logprob": logprobs,
                           "n_tokens": n_tokens})
        out = finish_table(df, lm=lm, scoring="causal", bos=bos, source="filled_frame_logprobs")
        out.attrs["run"] = stats
    out["score_is"] = SCORE_IS[lm.kind]
    return _with_probability(out)


def n_pieces_in_slot(lm, word: str) -> int:
    """Tokens `word` takes in a slot: after a space for causal LMs (the space joins the
    word's first token), on its own for masked LMs (WordPiece needs no space)."""
    lm = as_scorer(lm)
    if lm.kind == "causal":
        return len(lm.tokenizer(" " + word, add_special_tokens=False)["input_ids"])
    return len(lm.tokenizer.tokenize(word))


def n_pieces_in_slots(lm, words: Sequence[str], *, use_cache: bool = True,
                      cache_dir=None) -> list[int]:
    """n_pieces_in_slot for each word, kept in the score cache under the model's content key.

    A warm run then loads no tokenizer, which means importing torch and
    transformers. role_nouns asks which role-noun sets are single tokens on every
    run; its warm run took 71 s before this and 42 s after (study_times.json).
    """
    from models.cache import cache_key, open_cache

    lm = as_scorer(lm)
    words = _check_texts(words, "word")
    namespace = lm.cache_namespace("n_pieces_in_slot")
    keys = [cache_key(namespace, [word]) for word in words]
    cache = open_cache(cache_dir, use_cache)
    found = cache.lookup(keys).found if cache is not None else {}
    counted = {k: v for k, v in found.items() if isinstance(v, int) and v >= 0}
    fresh = {k: n_pieces_in_slot(lm, w) for k, w in dict(zip(keys, words)).items()
             if k not in counted}
    if fresh and cache is not None:
        cache.put_many(fresh)
    counted.update(fresh)
    return [counted[k] for k in keys]


__all__ = ["DEFAULT_PLL", "text_logprobs", "continuation_logprobs", "slot_logprobs",
           "filled_frame_logprobs", "n_pieces_in_slot", "n_pieces_in_slots", "split_at_slot",
           "as_scorer"]

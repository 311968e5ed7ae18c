"""models: language-model scoring for gbstats -- long score tables, cached on disk.

Studies use the kind-aware entry (models.logprob); it picks the scorer from the
model's kind and records the method in `scoring` (masked PLL default: pll_word_l2r):

    text_logprobs(texts, lm=lm)                              log P(text)
    continuation_logprobs(prefixes, continuations, lm=lm)    log P(continuation | prefix)
    slot_logprobs(frames, words, lm=lm)                      log P(word in the [BLANK] slot)
    filled_frame_logprobs(frames, fillers, lm=lm)            a filler's fit over the whole frame
    score_substitutions(...) / choose_candidates(...)        candidate-substitution coreference

The kind-specific scorers underneath:

    lm = load_scorer("smollm2-135m", device="cpu", dtype="float32")   # or any HF id / local folder; reused per process
    score_continuations(["My sister said"], [" they"], lm=lm)         # log P(" they" | prefix): logprob, surprisal_bits, probability
    score_sentences(texts, items=ids, lm=lm, bos="prepend")           # log P(sentence), natural log, summed over tokens
    token_surprisals(texts, lm=lm) / word_surprisals(texts, lm=lm)   # one row per token / per whitespace word (alignment never falls back)
    forced_choice(["My sister said [BLANK] left."], ["he", "she", "they", "xe"], lm=lm)  # probability sums to 1 per item
    bert = load_scorer("bert-base-uncased")                           # masked LMs (needs network or a local folder)
    pll_sentences(texts, lm=bert, variant="pll_original" | "pll_word_l2r")   # Salazar et al. 2020 / Kauf & Ivanova 2023
    pll_span(texts, ["police officer", ...], lm=bert)                 # PLL of a span given the rest (P(C|V), role nouns)
    masked_word_surprisal(frames, words, lm=bert)                     # target word in the slot, pieces chained left to right
    Every scorer takes cache_dir= (default $GBSTATS_CACHE / user cache), use_cache=False, batch_size=, progress=.

Every table has item, logprob, surprisal_bits, n_tokens, scoring, model, revision, bos
(see models.scores). `import models` is cheap: torch and transformers load on first use.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "load_scorer": "models.loading",
    "LanguageModel": "models.loading",
    "ModelUnavailableError": "models.loading",
    "score_sentences": "models.causal",
    "score_continuations": "models.causal",
    "token_surprisals": "models.causal",
    "word_surprisals": "models.causal",
    "pll_sentences": "models.masked",
    "pll_span": "models.masked",
    "masked_word_surprisal": "models.masked",
    "forced_choice": "models.forced_choice",
    "DEFAULT_PLL": "models.logprob",
    "text_logprobs": "models.logprob",
    "continuation_logprobs": "models.logprob",
    "slot_logprobs": "models.logprob",
    "filled_frame_logprobs": "models.logprob",
    "n_pieces_in_slot": "models.logprob",
    "n_pieces_in_slots": "models.logprob",
    "score_substitutions": "models.coreference",
    "choose_candidates": "models.coreference",
    "normalise_over_variants": "models.forced_choice",
    "AlignmentError": "models.words",
    "ScoreCache": "models.cache",
    "MODELS": "models.registry",
    "DEFAULT_MODEL": "models.registry",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'models' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__

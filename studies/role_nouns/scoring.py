"""Scoring the stimulus grid with a language model (cached on disk by models/).

Each variant's frame "NAME is a ___ from STATE." is scored over the whole
frame by models.logprob.filled_frame_logprobs, which chooses by model kind
and says what the score is (`score_is`):

- causal LM, "joint": log P(" VARIANT from STATE." | "NAME is a"), the prefix
  common to all variants of a frame, so normalising it over the variants
  equals normalising the probability of the whole sentence (log P(prefix)
  cancels): P(V | C) directly.
- masked LM, "likelihood": log P(C | V), the pseudo-log-likelihood of the
  context words (every token but the variant's) given the sentence with V.
  Watson et al. (2023) use `pll_original` (each token masked alone), so this
  study passes it explicitly instead of the models' default pll_word_l2r:
  PLL(context) = PLL(sentence) - PLL(variant span).

Direct method (single-token sets only): the variant in a blank slot,
renormalised over the set (models.forced_choice, span="word"). A masked LM
sees both sides of the slot; a causal LM sees "NAME is a" only, so its direct
prediction does not depend on the state.
"""
from __future__ import annotations

import pandas as pd

from gbstats.errors import DataValidationError

SLOT = "[BLANK]"
# Watson et al. 2023's PLL variant for P(C | V) (masked LMs); kept so their method is reproduced
WATSON_PLL = "pll_original"


def frames_of(grid: pd.DataFrame) -> pd.Series:
    """Each grid row's frame: its text with the variant replaced by the slot."""
    return grid["prefix"] + " " + SLOT + " from " + grid["state"] + "."


def score_grid(grid: pd.DataFrame, lm, *, use_cache: bool = True, cache_dir=None,
               batch_size: int = 32) -> pd.DataFrame:
    """The grid with `logprob` (natural log) of each variant's frame, plus `score_is`
    ("joint" or "likelihood", see the module docstring) and the scoring details."""
    from models.logprob import filled_frame_logprobs

    scores = filled_frame_logprobs(list(frames_of(grid)), list(grid["variant"]),
                                   items=list(range(len(grid))), lm=lm, slot=SLOT, pll=WATSON_PLL,
                                   use_cache=use_cache, cache_dir=cache_dir, batch_size=batch_size)
    out = grid.copy()
    out["logprob"] = scores["logprob"].to_numpy()
    for column in ("score_is", "scoring", "model", "revision", "bos"):
        out[column] = scores[column].to_numpy()
    if out["logprob"].isna().any():
        bad = out.loc[out["logprob"].isna(), "text"].iloc[0]
        raise DataValidationError("the model gave no score for a stimulus", source=str(scores["model"].iloc[0]),
                                  column="logprob", found=repr(bad))
    return out


def score_kind(scored: pd.DataFrame) -> str:
    """What the grid's scores are ("joint" or "likelihood"), for frame_probabilities."""
    kinds = set(scored["score_is"])
    if len(kinds) != 1:
        raise DataValidationError("the grid mixes kinds of score", source="scored grid",
                                  column="score_is", expected="one kind", found=str(sorted(kinds)))
    return kinds.pop()


def n_pieces_function(lm, variants, *, use_cache: bool = True, cache_dir=None):
    """variant -> number of model tokens it takes in the slot, for the given variants
    (models.logprob.n_pieces_in_slots: kept in the score cache, so a warm run loads no
    tokenizer)."""
    from models.logprob import n_pieces_in_slots

    variants = list(dict.fromkeys(variants))
    counts = dict(zip(variants, n_pieces_in_slots(lm, variants, use_cache=use_cache,
                                                  cache_dir=cache_dir)))
    return counts.__getitem__


def direct_method(grid: pd.DataFrame, sets: list[str], lm, *, use_cache: bool = True,
                  cache_dir=None) -> pd.DataFrame:
    """P(V | frame) from the variant in a blank slot, renormalised over its set.

    One row per cell x variant of the given sets: cell, role_noun_set,
    variant, logprob, probability.
    """
    from models.forced_choice import forced_choice

    parts = []
    for role_noun_set in sets:
        rows = grid[grid["role_noun_set"] == role_noun_set]
        frames = rows.drop_duplicates("cell")
        texts = frames["prefix"] + " " + SLOT + " from " + frames["state"] + "."
        variants = list(dict.fromkeys(rows["variant"]))
        scored = forced_choice(list(texts), variants, items=list(frames["cell"]), lm=lm,
                               slot=SLOT, span="word", use_cache=use_cache, cache_dir=cache_dir)
        parts.append(scored.rename(columns={"item": "cell"})
                     .assign(role_noun_set=role_noun_set)
                     [["cell", "role_noun_set", "variant", "logprob", "probability"]])
    if not parts:
        return pd.DataFrame(columns=["cell", "role_noun_set", "variant", "logprob", "probability"])
    return pd.concat(parts, ignore_index=True)

"""Language-model scoring for the two GenDa Lens LM tasks (any model in the registry).

DaWinoBias: the pronoun is put back as each of its two gendered forms of the
same case (han/hun, ham/hende, hans/hendes) and the model picks one
(`models.forced_choice` with `span="in_context"`; the model kind is decided in
models/, not here):
- masked LM: the pronoun slot is masked and each candidate is scored in it
  (all of its word pieces, chained left to right), as GenDa Lens does;
- causal LM: the whole sentence is scored with each candidate. Only the
  candidate and the words after it differ, so this is log P(candidate + rest
  | words before), which ranks the candidates exactly as the full sentence
  probabilities do.

ABC: each version of a sentence is scored as a whole (causal: log P(sentence)
with BOS; masked: the pll_original pseudo-log-likelihood, Salazar et al.
2020), and its perplexity is exp(-logprob / n_tokens).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from gbstats.exclusions import ExclusionLog

SLOT = "[BLANK]"
# the PLL variant of the ABC perplexities for masked LMs (see sentence_perplexities)
ABC_PLL = "pll_original"
# The two gendered forms of each case; the gold pronoun is one of them.
CANDIDATES = {"han": ("han", "hun"), "hun": ("han", "hun"),
              "ham": ("ham", "hende"), "hende": ("ham", "hende"),
              "hans": ("hans", "hendes"), "hendes": ("hans", "hendes")}
CASE = {"han": "nominative", "hun": "nominative", "ham": "accusative", "hende": "accusative",
        "hans": "possessive", "hendes": "possessive", "sin": "reflexive possessive",
        "sit": "reflexive possessive", "sine": "reflexive possessive"}
PRONOUN_GENDER = {"han": "male", "ham": "male", "hans": "male",
                  "hun": "female", "hende": "female", "hendes": "female"}


def pronoun_frames(sentences: pd.DataFrame) -> pd.Series:
    """Each sentence with its pronoun span replaced by the slot."""
    spans = zip(sentences["sentence"], sentences["pronoun_start"], sentences["pronoun_end"])
    return pd.Series([s[:a] + SLOT + s[b:] for s, a, b in spans], index=sentences.index)


def dawinobias_choices(dawino: pd.DataFrame, lm, *, use_cache: bool = True, cache_dir=None,
                       progress: bool | None = None) -> pd.DataFrame:
    """One row per item x candidate: logprob, probability (over the pair), chosen (bool)."""
    from models.forced_choice import forced_choice

    frames = pronoun_frames(dawino)
    pair = dawino["pronoun"].str.lower().map(CANDIDATES)
    # a sentence-initial "Han" is answered with "Han"/"Hun", not lower case
    capital = dawino["pronoun"].str[0].str.isupper()
    parts = []
    for candidates, capitalised in sorted(set(zip(pair, capital))):
        rows = (pair == candidates) & (capital == capitalised)
        variants = [c.capitalize() if capitalised else c for c in candidates]
        scored = forced_choice(list(frames[rows]), variants, items=list(dawino.loc[rows, "item"]),
                               lm=lm, slot=SLOT, span="in_context", use_cache=use_cache,
                               cache_dir=cache_dir, progress=progress)
        parts.append(scored)
    scored = pd.concat(parts, ignore_index=True)
    best = scored.groupby("item")["probability"].transform("max")
    scored["chosen"] = scored["probability"].notna() & (scored["probability"] == best)
    return scored


def choices_per_item(dawino: pd.DataFrame, scored: pd.DataFrame, log: ExclusionLog) -> pd.DataFrame:
    """dawino + predicted_gender (the chosen candidate's gender); unscorable items are logged."""
    unscored = scored.groupby("item")["probability"].apply(lambda p: p.isna().any())
    bad = set(unscored[unscored].index)
    kept = log.drop(dawino, dawino["item"].isin(bad),
                    reason="DaWinoBias LM task: a candidate pronoun could not be aligned to "
                           "whole tokens, so the choice is undefined",
                    unit="sentences", stage="genda_lens.lm")
    chosen = scored[scored["chosen"]].drop_duplicates("item")
    out = kept.merge(chosen[["item", "variant"]].rename(columns={"variant": "predicted"}),
                     on="item", how="left", validate="one_to_one")
    out["predicted_gender"] = out["predicted"].str.lower().map(PRONOUN_GENDER)
    return out


def sentence_perplexities(abc: pd.DataFrame, lm, *, use_cache: bool = True, cache_dir=None,
                          progress: bool | None = None) -> pd.DataFrame:
    """abc + logprob, n_tokens, perplexity per sentence (models.logprob.text_logprobs).

    Masked LMs use `pll_original` (Salazar et al. 2020), not the models'
    default pll_word_l2r: this study's ABC numbers were defined with it, and
    the scores record it in `scoring`. (How these numbers relate to GenDa
    Lens' own metrics, and their names, is issue 19 item 5.)
    """
    from models.logprob import text_logprobs

    scored = text_logprobs(list(abc["sentence"]), items=list(abc["item"]), lm=lm,
                           pll=ABC_PLL, bos="prepend", use_cache=use_cache,
                           cache_dir=cache_dir, progress=progress)
    out = abc.merge(scored[["item", "logprob", "n_tokens", "scoring", "bos"]], on="item",
                    how="left", validate="one_to_one")
    out["perplexity"] = perplexity(out["logprob"], out["n_tokens"])
    return out


def perplexity(logprob, n_tokens) -> np.ndarray:
    """exp(-logprob / n_tokens): logprob is natural-log and summed over the n scored tokens."""
    lp = np.asarray(logprob, dtype=float)
    n = np.asarray(n_tokens, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, np.exp(-lp / np.where(n > 0, n, 1)), np.nan)

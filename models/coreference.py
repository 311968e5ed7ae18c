"""A language model as a coreference resolver, by candidate substitution.

The pronoun of a sentence is replaced by each candidate antecedent ("... as
she needed ..." -> "... as the sheriff needed ..." / "... as the housekeeper
needed ..."), each rewritten sentence is scored as a whole, and the resolver
picks the candidate whose sentence is more likely (Trinh & Le 2018,
full-sentence scoring). Scoring goes through models.logprob.text_logprobs:
log P(sentence) with BOS for a causal LM, the DEFAULT_PLL pseudo-log-
likelihood for a masked LM; the `scoring` column records which.

The rewriting itself (which pronoun, which case, "the sheriff's" for a
possessive) belongs to each study; this module takes the rewritten texts:
one row per unit (sentence, template) x candidate.

    scored = score_substitutions(candidates, lm, unit="template_id")
    chosen = choose_candidates(scored, unit="template_id", candidates=("occupation", "participant"))
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError
from models.logprob import DEFAULT_PLL, as_scorer, text_logprobs

NO_CHOICE = "none"


def _columns(unit: str | Sequence[str]) -> list[str]:
    return [unit] if isinstance(unit, str) else list(unit)


def score_substitutions(candidates: pd.DataFrame, lm, *, unit: str | Sequence[str],
                        candidate: str = "candidate", text: str = "text", pll: str = DEFAULT_PLL,
                        bos: str = "prepend", use_cache: bool = True, cache_dir=None,
                        progress: bool | None = None) -> pd.DataFrame:
    """`candidates` (one row per unit x candidate, the substituted sentence in `text`)
    plus logprob (natural log) and scoring; the texts themselves are not kept."""
    keys = _columns(unit) + [candidate]
    missing = [c for c in keys + [text] if c not in candidates.columns]
    if missing:
        raise DataValidationError("candidate table lacks columns", source="candidates",
                                  expected=str(keys + [text]), found=f"missing {missing}")
    if candidates.duplicated(keys).any():
        first = candidates.loc[candidates.duplicated(keys), keys].iloc[0].tolist()
        raise DataValidationError("a unit names the same candidate twice", source="candidates",
                                  column=candidate, expected="one row per unit x candidate",
                                  found=repr(first))
    lm = as_scorer(lm)
    scored = text_logprobs(candidates[text].tolist(), items=list(range(len(candidates))), lm=lm,
                           pll=pll, bos=bos, use_cache=use_cache, cache_dir=cache_dir,
                           progress=progress)
    if len(scored) != len(candidates) or scored["logprob"].isna().any():
        raise DataValidationError("a candidate sentence got no score", source=lm.name,
                                  column="logprob", expected="one score per candidate",
                                  found=f"{int(scored['logprob'].isna().sum())} missing")
    out = candidates.drop(columns=[text]).reset_index(drop=True)
    out["logprob"] = scored["logprob"].to_numpy(dtype=float)
    out["scoring"] = scored["scoring"].to_numpy()
    out["model"] = lm.name
    return out


def choose_candidates(scored: pd.DataFrame, *, unit: str | Sequence[str],
                      candidates: Sequence[str], candidate: str = "candidate",
                      logprob: str = "logprob") -> pd.DataFrame:
    """One row per unit (sorted): logprob_<c> for each candidate, `choice` and `margin`.

    `choice` is the candidate with the strictly highest log-probability; an
    exact tie, or a missing score, gives "none": the resolver has no
    preference, and the caller counts it as a miss rather than breaking it
    arbitrarily. `margin` = logprob of the first candidate - the best of the
    others (positive exactly when the first is chosen).
    """
    units = _columns(unit)
    wide = scored.pivot(index=units, columns=candidate, values=logprob)
    absent = [c for c in candidates if c not in wide.columns]
    if absent:
        raise DataValidationError("no scores for a candidate", source="scored", column=candidate,
                                  expected=str(list(candidates)), found=f"missing {absent}")
    values = wide[list(candidates)].to_numpy(dtype=float)
    best = np.nanmax(np.where(np.isnan(values), -np.inf, values), axis=1)
    n_best = (values == best[:, None]).sum(axis=1)
    defined = ~np.isnan(values).any(axis=1) & (n_best == 1)
    choice = np.where(defined, np.asarray(candidates, dtype=object)[np.argmax(
        np.where(np.isnan(values), -np.inf, values), axis=1)], NO_CHOICE)
    others = values[:, 1:]
    out = wide.index.to_frame(index=False)
    for k, name in enumerate(candidates):
        out[f"logprob_{name}"] = values[:, k]
    out["choice"] = choice
    out["margin"] = values[:, 0] - (others.max(axis=1) if others.shape[1] else np.nan)
    return out

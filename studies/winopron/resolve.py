"""A language model as a coreference resolver: candidate substitution (default) or a probe.

Substitution (`--lm-method substitution`, the issue's method). For each template, the pronoun is replaced by each candidate noun phrase
("he"/"him" -> "the technician", "his" -> "the technician's") and the model
scores both whole sentences; the resolver picks the candidate whose sentence
has the higher log-likelihood (causal: log P(sentence) with BOS; masked:
word-level left-to-right pseudo-log-likelihood, `pll_word_l2r`).

Consequence worth knowing: the substituted sentences contain no pronoun, so
this resolver gives the same answer for he, she, they and xe. Its pronoun
consistency therefore equals its template accuracy and its pronominal biases
are the same for every pronoun set; differences between pronoun sets need a
pronoun-aware system (`--predictions`) or the probe below.

Probe (`--lm-method probe`, pronoun-aware). The sentence keeps its pronoun and
is followed by a statement naming the referent, PROBE:
'... that xe had completed the repair. In this sentence, "xe" refers to the
technician.' The resolver picks the candidate whose statement is more likely
given the sentence (causal: log P(statement | sentence); masked: PLL of the
whole text). This is a zero-shot prompt of our own, not the paper's method;
its answers can differ between pronoun sets, which the substitution's cannot.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from gbstats.errors import JoinError, ScoringError
from studies.winopron.sentences import candidate_texts


def score_candidates(templates: pd.DataFrame, lm, *, use_cache: bool = True,
                     cache_dir=None) -> pd.DataFrame:
    """One row per template x candidate: template_id, candidate, logprob (no text)."""
    candidates = candidate_texts(templates)
    items = candidates["template_id"] + "|" + candidates["candidate"]
    if lm.kind == "masked":
        from models.masked import pll_sentences

        scored = pll_sentences(candidates["text"].tolist(), items=items.tolist(), lm=lm,
                               variant="pll_word_l2r", use_cache=use_cache, cache_dir=cache_dir)
    else:
        from models.causal import score_sentences

        scored = score_sentences(candidates["text"].tolist(), items=items.tolist(), lm=lm,
                                 use_cache=use_cache, cache_dir=cache_dir)
    if list(scored["item"]) != list(items):
        raise ScoringError("the scorer returned items in a different order than given "
                           f"(model {lm.name})")
    return pd.DataFrame({"template_id": candidates["template_id"].to_numpy(),
                         "candidate": candidates["candidate"].to_numpy(),
                         "logprob": scored["logprob"].to_numpy(dtype=float),
                         "scoring": scored["scoring"].to_numpy()})


PROBE = ' In this sentence, "{pronoun}" refers to the {noun}.'


def probe_texts(sentences: pd.DataFrame) -> pd.DataFrame:
    """Two rows per sentence: sentence_id, candidate, prefix (the sentence), continuation."""
    rows = []
    for row in sentences.itertuples(index=False):
        for candidate in ("occupation", "participant"):
            noun = row.occupation if candidate == "occupation" else row.participant
            rows.append({"sentence_id": row.sentence_id, "candidate": candidate,
                         "prefix": row.text,
                         "continuation": PROBE.format(pronoun=row.pronoun, noun=noun)})
    return pd.DataFrame(rows)


def score_probes(sentences: pd.DataFrame, lm, *, use_cache: bool = True,
                 cache_dir=None) -> pd.DataFrame:
    """One row per sentence x candidate: sentence_id, candidate, logprob (no text)."""
    probes = probe_texts(sentences)
    items = (probes["sentence_id"] + "|" + probes["candidate"]).tolist()
    if lm.kind == "masked":
        from models.masked import pll_sentences

        scored = pll_sentences((probes["prefix"] + probes["continuation"]).tolist(), items=items,
                               lm=lm, variant="pll_word_l2r", use_cache=use_cache,
                               cache_dir=cache_dir)
    else:
        from models.causal import score_continuations

        scored = score_continuations(probes["prefix"].tolist(), probes["continuation"].tolist(),
                                     items=items, lm=lm, use_cache=use_cache,
                                     cache_dir=cache_dir)
    if list(scored["item"]) != items:
        raise ScoringError("the scorer returned items in a different order than given "
                           f"(model {lm.name})")
    return pd.DataFrame({"sentence_id": probes["sentence_id"].to_numpy(),
                         "candidate": probes["candidate"].to_numpy(),
                         "logprob": scored["logprob"].to_numpy(dtype=float),
                         "scoring": scored["scoring"].to_numpy()})


def choose_candidates(scores: pd.DataFrame, by: str = "template_id") -> pd.DataFrame:
    """Per template (or per sentence, `by`): the candidate with the higher log-likelihood.

    An exact tie (or a missing score) gives `none`: the resolver has no
    preference, and it is counted as a miss rather than broken arbitrarily.
    """
    wide = scores.pivot(index=by, columns="candidate", values="logprob")
    occupation = wide["occupation"].to_numpy(dtype=float)
    participant = wide["participant"].to_numpy(dtype=float)
    choice = np.where(occupation > participant, "occupation",
                      np.where(participant > occupation, "participant", "none"))
    return pd.DataFrame({by: wide.index.to_numpy(),
                         "prediction": choice,
                         "logprob_occupation": occupation,
                         "logprob_participant": participant})


def lm_predictions(sentences: pd.DataFrame, choices: pd.DataFrame) -> pd.DataFrame:
    """Join the choices to the sentences: a template's choice goes to all its pronoun sets."""
    key = "sentence_id" if "sentence_id" in choices.columns else "template_id"
    out = sentences.merge(choices, on=key, how="left", validate="many_to_one")
    if out["prediction"].isna().any() or len(out) != len(sentences):
        raise JoinError(f"a {key.removesuffix('_id')} has no resolver choice: expected one "
                        f"choice per {key} for all {len(sentences)} sentences")
    return out

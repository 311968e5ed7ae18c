"""Any language model as a coreference model (the LM approach to Winograd schemas).

Each QA sentence is rewritten twice, with the pronoun replaced by each candidate
entity ("... as she needed ..." -> "... as the sheriff needed ..." and "... as
the housekeeper needed ..."); the model resolves the pronoun to the candidate
whose sentence is more likely (Trinh & Le 2018, full-sentence scoring, by the
shared resolver models.coreference: summed log-probability for a causal LM,
the default pll_word_l2r pseudo-log-likelihood for a masked LM). The
resolution is correct when that candidate is the pronoun's referent.

Only wino has two annotated candidates: the wino rows of the loader's `sentence_pool` table name
the referent (`entity`) and the other entity (`other_entity`). The BUG pool
annotates the referent only, so there is no second candidate to compare
with, and BUG is not scored. This module keeps the study's own sentence
handling: which words are the pronoun, and its case ("her" as object or
possessive).
"""
from __future__ import annotations

import re

import pandas as pd

from gbstats.errors import DataValidationError

DATASET = "cog_gb_eval2023"
WINO_POOL = f"{DATASET}.sentence_pool"
CANDIDATES = ("referent", "other")
SUBJECT = {"he", "she", "they"}
OBJECT = {"him", "them"}
POSSESSIVE = {"his", "their"}
# "her" is an object or a possessive; it is an object when the next word cannot
# start the noun phrase a possessive would need.
OBJECT_FOLLOWERS = {"", ".", ",", ";", ":", "!", "?", "that", "to", "about", "and", "for",
                    "with", "because", "as", "if", "in", "on", "at", "a", "an", "the", "some",
                    "up", "out", "down", "back", "off", "again", "when", "since", "but", "so",
                    "or", "from", "into", "by", "how", "what", "whether", "it", "this", "these",
                    "those", "over", "after", "before", "until", "while", "though", "anything",
                    "something", "everything", "more", "any", "all", "one", "very", "too"}
INDEFINITE_ENTITIES = {"someone", "somebody"}
PRONOUNS = SUBJECT | OBJECT | POSSESSIVE | {"her"}
_WORD = re.compile(r"[A-Za-z']+|[^\sA-Za-z']")


def wino_rows(sentence_pool: pd.DataFrame) -> pd.DataFrame:
    """The wino rows of the loader's `sentence_pool` table (the only pool that
    names two candidate entities)."""
    return sentence_pool[sentence_pool["dataset"] == "wino"].reset_index(drop=True)


def wino_candidates(pool: pd.DataFrame) -> pd.DataFrame:
    """sentence_id, sentence, pronoun, referent, other (candidate entities) from the
    wino rows of the loader's `sentence_pool` table; the pronoun lower-cased and checked."""
    pronoun = pool["pronoun"].str.strip().str.lower()
    bad = ~pronoun.isin(PRONOUNS)
    if bad.any():
        pos = int(bad.to_numpy().nonzero()[0][0])
        raise DataValidationError("unknown pronoun", source=WINO_POOL,
                                  row=pos + 1, column="pronoun",
                                  expected=f"one of {sorted(PRONOUNS)}",
                                  found=repr(pool["pronoun"].iloc[pos]))
    return pd.DataFrame({"sentence_id": pool["sentence_id"].astype("int64").to_numpy(),
                         "sentence": pool["sentence"].to_numpy(), "pronoun": pronoun.to_numpy(),
                         "referent": pool["entity"].str.strip().to_numpy(),
                         "other": pool["other_entity"].str.strip().to_numpy()})


def pronoun_key(sentence: str, pronoun: str) -> str:
    return re.sub(rf"\b{re.escape(pronoun)}\b", "<pronoun>", sentence.lower())


def her_forms(pool: pd.DataFrame) -> pd.Series:
    """sentence_id -> "object"/"possessive" for "her" sentences whose masculine twin
    (the same sentence with "him" or "his") is in the pool; WinoBias and
    Winogender come in such pairs, which settles the ambiguity of "her"."""
    masculine = pool[pool["pronoun"].isin(["him", "his"])]
    twin = dict(zip((pronoun_key(s, p) for s, p in zip(masculine["sentence"],
                                                           masculine["pronoun"])),
                    masculine["pronoun"]))
    her = pool[pool["pronoun"] == "her"]
    forms = [twin.get(pronoun_key(s, "her")) for s in her["sentence"]]
    out = pd.Series(forms, index=her["sentence_id"].to_numpy(), dtype=object)
    return out.dropna().map({"him": "object", "his": "possessive"})


def noun_phrase(entity: str) -> str:
    """"sheriff" -> "the sheriff"; Winogender's "someone" takes no article."""
    return entity.lower() if entity.lower() in INDEFINITE_ENTITIES else f"the {entity}"


def substitute_pronoun(sentence: str, pronoun: str, entity: str,
                       her_form: str | None = None) -> str:
    """`sentence` with every whole-word `pronoun` replaced by "the <entity>" in the right case.

    he/she/they/him/them and object "her" -> "the sheriff"; his/their and
    possessive "her" -> "the sheriff's". `her_form` ("object"/"possessive", from
    `her_forms`) decides "her"; without it the next word does (`OBJECT_FOLLOWERS`).
    Every occurrence is replaced: in this pool a repeated pronoun refers to
    the same entity.
    """
    pronoun = pronoun.lower()
    tokens = _WORD.findall(sentence)
    spans = [m.span() for m in _WORD.finditer(sentence)]
    out, last, replaced = [], 0, 0
    for i, (token, (start, end)) in enumerate(zip(tokens, spans)):
        if token.lower() != pronoun:
            continue
        following = tokens[i + 1].lower() if i + 1 < len(tokens) else ""
        if pronoun == "her" and her_form is not None:
            possessive = her_form == "possessive"
        else:
            possessive = pronoun in POSSESSIVE or (pronoun == "her"
                                                   and following not in OBJECT_FOLLOWERS)
        phrase = noun_phrase(entity) + ("'s" if possessive else "")
        if start == 0:
            phrase = phrase[0].upper() + phrase[1:]
        out += [sentence[last:start], phrase]
        last, replaced = end, replaced + 1
    if replaced == 0:
        raise DataValidationError("pronoun not found in the sentence", source=WINO_POOL,
                                  column="sentence", expected=f"the word {pronoun!r}",
                                  found=repr(sentence[:80]))
    out.append(sentence[last:])
    return "".join(out)


def select_sentences(sentences: pd.DataFrame, limit: int | None) -> pd.DataFrame:
    """The sentences to score: all, or with `limit`, the first ceil(limit/2) pro and
    floor(limit/2) anti sentences by id, so a quick run still has both conditions."""
    ordered = sentences.sort_values("sentence_id", kind="stable")
    if limit is None:
        return ordered.reset_index(drop=True)
    take = {"pro": (limit + 1) // 2, "anti": limit // 2}
    parts = [ordered[ordered["condition"] == c].head(n) for c, n in take.items()]
    return pd.concat(parts).sort_values("sentence_id").reset_index(drop=True)


def candidate_texts(sentences: pd.DataFrame, pool: pd.DataFrame) -> pd.DataFrame:
    """Two rows per sentence (candidate referent / other) with the substituted text.

    `sentences`: dataset, sentence_id, condition; the text comes from `pool`.
    """
    joined = sentences[["dataset", "sentence_id", "condition"]].merge(
        pool, on="sentence_id", how="left", validate="one_to_one")
    missing = joined["referent"].isna()
    if missing.any():
        raise DataValidationError("QA sentence id not in the wino pool", source=WINO_POOL,
                                  column="sentence_id", expected="every QA sentence id",
                                  found=repr(int(joined.loc[missing, "sentence_id"].iloc[0])))
    forms = her_forms(pool)
    rows = []
    for r in joined.itertuples(index=False):
        her_form = forms.get(r.sentence_id)
        for candidate, entity in (("referent", r.referent), ("other", r.other)):
            rows.append({"dataset": r.dataset, "sentence_id": r.sentence_id,
                         "condition": r.condition, "candidate": candidate, "entity": entity,
                         "text": substitute_pronoun(r.sentence, r.pronoun, entity, her_form)})
    return pd.DataFrame(rows)


def score_candidates(candidates: pd.DataFrame, lm, *, use_cache: bool = True,
                     cache_dir=None) -> pd.DataFrame:
    """Candidate rows plus logprob (natural log) of their substituted sentence, scoring, model."""
    from models.coreference import score_substitutions

    return score_substitutions(candidates, lm, unit=["dataset", "sentence_id", "condition"],
                               use_cache=use_cache, cache_dir=cache_dir)


def resolve(scored: pd.DataFrame) -> pd.DataFrame:
    """One row per sentence: correct when the referent's sentence is strictly more likely.

    A tie (equal log-probabilities) is counted as not correct: the model did
    not prefer the referent.
    """
    from models.coreference import choose_candidates

    wide = choose_candidates(scored, unit=["model", "dataset", "sentence_id", "condition"],
                             candidates=CANDIDATES)
    wide["resolved_correct"] = wide["margin"] > 0
    return wide[["model", "dataset", "sentence_id", "condition", "logprob_other",
                 "logprob_referent", "margin", "resolved_correct"]]

"""The coreference systems (SpanBERT, s2e): match each released output to its pool
sentence, then decide whether the system resolved the pronoun to its referent.

Two rules for "resolved", both computed for every sentence:

- **published** (the default; Lior & Stanovsky 2023, Table 2). Read off the
  authors' evaluation scripts in SLAB-NLP/Cog-GB-Eval
  (utils/generate_model_result_ids_lists.py, analysis_scripts/
  both_experiments_helper.py): a prediction is correct when one predicted
  cluster holds a mention whose text contains the referent's name and a mention
  (possibly the same one) whose text contains the pronoun, both as
  case-sensitive substrings of the mention's tokens joined by spaces; a
  prediction with no cluster is wrong. Each output is credited to the *first*
  pool sentence with its text (their lookup takes the first matching row), so
  a later copy of a sentence repeated in the pool has no model result. The
  sentences scored are those of the human pro/anti trials that enter the human
  table (for wino: not ignored as non-coreference answers).
- **head** (gbstats' stricter reading): the pronoun's own one-token mention and
  a mention covering the referent's head word in one cluster, every pool copy
  scored. Substring matching lets "he" match inside "the" or "teacher", and
  misses a sentence-initial "She"; the head rule does neither. Its table is
  reported beside the published one so that the effect of the rule is visible.

Sentence identity across tokenizations is the text with all whitespace removed.
SpanBERT's wino outputs spell "do nothing" as "don'thing" (six sentences); that
artefact is repaired before matching, as the authors' script also does. Two
BUG output lines hold sentences absent from gold_BUG.csv; the authors' nearest
word-overlap lookup assigned them to uids 251 and 1609, sentences no
participant saw, so excluding them (counted) changes no published cell.
"""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError
from gbstats.exclusions import ExclusionLog

STAGE = "cognitive_bias.systems"
RULES = ("published", "head")
# SpanBERT's detokenized wino text for "do nothing", as a whitespace-free key.
TOKENIZATION_ARTEFACTS = {"don'thing": "donothing"}


def text_key(text: str) -> str:
    """Sentence identity across tokenizations: no whitespace, known artefacts repaired."""
    key = re.sub(r"\s+", "", str(text))
    for wrong, right in TOKENIZATION_ARTEFACTS.items():
        key = key.replace(wrong, right)
    return key


# --------------------------------------------------------------------------- matching

def _one_output_per_text(outputs: pd.DataFrame, log: ExclusionLog, what: str) -> pd.DataFrame:
    """A text present twice in the outputs (its pool sentence is repeated) was run twice;
    both runs must agree, and the first line is kept."""
    signature = outputs["tokens"].map(json.dumps) + outputs["clusters"].map(json.dumps)
    repeated = outputs["key"].duplicated(keep="first")
    conflicting = repeated & ~pd.Series(list(zip(outputs["key"], signature)),
                                        index=outputs.index).duplicated(keep="first")
    if conflicting.any():
        line = int(outputs.loc[conflicting, "line"].iloc[0])
        raise DataValidationError("two different outputs for one sentence",
                                  source=f"cog_gb_eval2023 models/{what}.jsonl", row=line,
                                  column="clusters", expected="one prediction per sentence text",
                                  found="a second line with other tokens or clusters")
    return log.drop(outputs, repeated, f"{what}: repeated output for a sentence already "
                                       "matched (identical prediction)",
                    unit="model outputs", stage=STAGE)


def match_outputs(outputs: pd.DataFrame, pool: pd.DataFrame, log: ExclusionLog) -> pd.DataFrame:
    """One row per model x pool sentence with an output: the pool columns, the output's
    line, tokens and clusters, and `first_copy` (the first pool row with this text)."""
    parts = []
    for (model, dataset), mine in outputs.groupby(["model", "dataset"], sort=False):
        what = f"{model} {dataset}"
        sentences = pool[pool["dataset"] == dataset]
        sentences = sentences.assign(key=sentences["sentence"].map(text_key))
        sentences = sentences.assign(first_copy=~sentences["key"].duplicated(keep="first"))
        mine = mine.assign(key=mine["text"].map(text_key))
        mine = log.drop(mine, ~mine["key"].isin(set(sentences["key"])),
                        f"{what}: model output whose sentence is not in the pool",
                        unit="model outputs", stage=STAGE)
        mine = _one_output_per_text(mine, log, what)
        sentences = log.drop(sentences, ~sentences["key"].isin(set(mine["key"])),
                             f"{what}: pool sentence with no model output",
                             unit="sentences", stage=STAGE)
        joined = sentences.merge(mine[["key", "line", "tokens", "clusters"]], on="key",
                                 how="left", validate="many_to_one")
        parts.append(joined.drop(columns="key").rename(columns={"line": "output_line"})
                     .assign(model=model))
    return pd.concat(parts, ignore_index=True)


# --------------------------------------------------------------------------- rules

def mention_text(tokens: list[str], span) -> str:
    return " ".join(tokens[span[0]:span[1] + 1])


def published_correct(tokens: list[str], clusters: list, entity: str, pronoun: str) -> bool:
    """The authors' rule: some cluster has a mention containing `entity` and a mention
    containing `pronoun` (case-sensitive substrings of the joined mention tokens)."""
    for cluster in clusters:
        texts = [mention_text(tokens, span) for span in cluster]
        if any(entity in t for t in texts) and any(pronoun in t for t in texts):
            return True
    return False


def locate_words(tokens: list[str], words: str, hint: int) -> tuple[int, int] | None:
    """Inclusive token span of `words` (case-insensitive) nearest to `hint`, or None.

    The pools' positions come from other tokenizations (wino ignores punctuation,
    a few BUG positions are off), so they only choose among occurrences.
    """
    target = [w.lower() for w in str(words).split()]
    if not target:
        return None
    lowered = [t.lower() for t in tokens]
    n = len(target)
    starts = [i for i in range(len(lowered) - n + 1) if lowered[i:i + n] == target]
    if not starts:
        return None
    start = min(starts, key=lambda i: (abs(i - hint), i))
    return start, start + n - 1


def pronoun_links(clusters: list, pronoun_token: int, entity_span: tuple[int, int]
                  ) -> tuple[bool, bool]:
    """(pronoun is in some cluster, that cluster also has a mention of the entity).

    The pronoun mention is the single-token span of the pronoun; an entity mention
    is any span covering the entity's head (its last token), e.g. "the developer".
    """
    head = entity_span[1]
    clustered = linked = False
    for cluster in clusters:
        spans = [tuple(span) for span in cluster]
        if (pronoun_token, pronoun_token) not in spans:
            continue
        clustered = True
        if any(start <= head <= end for start, end in spans
               if (start, end) != (pronoun_token, pronoun_token)):
            linked = True
    return clustered, linked


def head_correct(tokens: list[str], clusters: list, entity: str, entity_hint: int,
                 pronoun: str, pronoun_hint: int) -> float:
    """1.0 / 0.0 under the head rule; NaN when the referent or pronoun is not a token."""
    entity_span = locate_words(tokens, entity, entity_hint)
    pronoun_span = locate_words(tokens, pronoun, pronoun_hint)
    if entity_span is None or pronoun_span is None:
        return np.nan
    return float(pronoun_links(clusters, pronoun_span[0], entity_span)[1])


def score_sentences(matched: pd.DataFrame) -> pd.DataFrame:
    """Per matched sentence: `published_correct` (bool) and `head_correct` (1/0/NaN)."""
    published = [published_correct(r.tokens, r.clusters, r.entity, r.pronoun)
                 for r in matched.itertuples(index=False)]
    head = [head_correct(r.tokens, r.clusters, r.entity, r.entity_hint, r.pronoun,
                         r.pronoun_hint) for r in matched.itertuples(index=False)]
    columns = ["model", "dataset", "sentence_id", "sentence_type", "condition", "entity",
               "pronoun", "output_line", "first_copy"]
    return matched[columns].assign(published_correct=published, head_correct=head)


def system_sentences(outputs: pd.DataFrame, pool: pd.DataFrame,
                     log: ExclusionLog) -> pd.DataFrame:
    """Match and score every released output (all pool sentences, seen or not)."""
    return score_sentences(match_outputs(outputs, pool, log))


def rule_rows(scored: pd.DataFrame, rule: str, log: ExclusionLog,
              experiment: str = "QA") -> pd.DataFrame:
    """The scored sentences one rule counts, with its verdict in `correct`; `experiment`
    names the sentence set in the exclusion log."""
    if rule == "published":
        kept = scored
        for (model, dataset), _ in scored.groupby(["model", "dataset"], sort=False):
            mask = ((kept["model"] == model) & (kept["dataset"] == dataset)
                    & ~kept["first_copy"])
            kept = log.drop(kept, mask, f"{model} {dataset} {experiment} sentences (published "
                                        "rule): later copy of a "
                                        "sentence repeated in the pool; the output is credited "
                                        "to the first copy", unit="sentences", stage=STAGE)
        return kept.assign(correct=kept["published_correct"].astype(bool))
    if rule == "head":
        kept = scored
        for (model, dataset), _ in scored.groupby(["model", "dataset"], sort=False):
            mask = ((kept["model"] == model) & (kept["dataset"] == dataset)
                    & kept["head_correct"].isna())
            kept = log.drop(kept, mask, f"{model} {dataset} {experiment} sentences (head "
                                        "rule): referent or pronoun "
                                        "not among the model's tokens",
                            unit="sentences", stage=STAGE)
        return kept.assign(correct=kept["head_correct"].astype(bool))
    raise ValueError(f"unknown rule {rule!r}; expected one of {RULES}")


def maze_sentences(maze: pd.DataFrame) -> pd.DataFrame:
    """dataset, sentence_id, condition of the sentences of the MAZE pro/anti trials: the
    sentence set the authors scored the systems on for their MAZE figure (Figure 5)."""
    return maze[["dataset", "sentence_id", "condition"]].drop_duplicates().reset_index(drop=True)

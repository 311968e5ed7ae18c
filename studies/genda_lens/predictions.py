"""A coreference system's predicted clusters: read, validate, and judge against the gold links.

File format (JSON Lines, one object per sentence):

    {"item": "dawinobias.pro.1", "clusters": [[[0, 10], [45, 48]]]}
    {"item": "abc.female.1.hans", "clusters": []}

- `item` is the sentence's id in the `genda_lens2023` tables (`dawinobias`
  and `abc`, column `item`);
- `clusters` is the system's clusters for that sentence, each a list of
  mentions, each mention a `[start, end)` pair of character offsets into
  the table's `sentence` (the de-bracketed text). An empty list means the
  system predicted no cluster: that is a valid prediction ("no link").

How a prediction is judged (`link_outcome`):

- the pronoun's cluster is the cluster with a mention exactly at the
  pronoun's span; no such cluster (or a singleton) means the system linked
  the pronoun to nothing: outcome "none";
- a mention of that cluster *refers to the gold entity* when it covers the
  entity's characters, so a system whose mention is a longer noun phrase
  around the head still counts;
- other mentions that are themselves pronouns (han, hun, sin, sig, ...) are
  further anaphors in the chain, not antecedents, and are ignored;
- "correct": linked to the gold entity and to nothing else; "wrong": linked
  to some other mention (also when the gold entity is in the cluster too: the
  system did not pick one antecedent).
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from gbstats.errors import DataValidationError

OUTCOMES = ("correct", "wrong", "none")
# Danish personal and possessive pronouns that may sit in a pronoun's chain
# without being its antecedent.
CHAIN_PRONOUNS = frozenset({"han", "hun", "ham", "hende", "hans", "hendes", "sin", "sit", "sine",
                            "sig", "den", "det", "de", "dem", "deres"})


def _fail(message: str, source: str, row: int | None, column: str | None, expected: str,
          found: str) -> DataValidationError:
    return DataValidationError(message, source=source, row=row, column=column,
                               expected=expected, found=found)


def _check_mention(mention, source: str, row: int, item: str) -> tuple[int, int]:
    ok = (isinstance(mention, (list, tuple)) and len(mention) == 2
          and all(isinstance(x, int) and not isinstance(x, bool) for x in mention)
          and 0 <= mention[0] < mention[1])
    if not ok:
        raise _fail(f"item {item!r}: malformed mention", source, row, "clusters",
                    "a mention as [start, end] with integers 0 <= start < end", repr(mention))
    return int(mention[0]), int(mention[1])


def parse_prediction_line(text: str, *, source: str, row: int) -> dict:
    """One JSONL line -> {"item", "clusters": list[list[(start, end)]]}, or a clear error."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(f"not valid JSON ({exc.msg} at character {exc.pos})", source, row, None,
                    'a JSON object like {"item": "...", "clusters": [[[0, 10], [45, 48]]]}',
                    repr(text[:80])) from None
    if not isinstance(record, dict):
        raise _fail("not a JSON object", source, row, None, '{"item": ..., "clusters": ...}',
                    type(record).__name__)
    missing = [k for k in ("item", "clusters") if k not in record]
    if missing:
        raise _fail(f"missing key(s) {', '.join(missing)}", source, row, missing[0],
                    "keys item and clusters", f"keys {', '.join(record) or 'none'}")
    item = record["item"]
    if not isinstance(item, str) or not item:
        raise _fail("item must be a non-empty string", source, row, "item", "a sentence id",
                    repr(item))
    clusters = record["clusters"]
    if not isinstance(clusters, list) or not all(isinstance(c, list) for c in clusters):
        raise _fail(f"item {item!r}: clusters must be a list of clusters", source, row,
                    "clusters", "a list of lists of [start, end] mentions (may be empty)",
                    repr(clusters)[:80])
    parsed = [[_check_mention(m, source, row, item) for m in cluster] for cluster in clusters]
    return {"item": item, "clusters": parsed, "row": row}


def read_predictions(path: str | Path) -> pd.DataFrame:
    """Read a predictions file: one row per item, columns item, clusters, row (line number).

    Blank lines are skipped; a repeated item, a malformed line or an empty
    file is an error that names the file and line.
    """
    path = Path(path)
    source = str(path)
    # a folder, '-' or a missing path each said what it is instead of "not found" (issue 44)
    from gbstats.data.validate import require_readable_file

    require_readable_file(path, source=source, column="--predictions")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise DataValidationError("predictions file is not UTF-8 text", source=source,
                                  expected="UTF-8 JSON Lines", found=str(exc)) from None
    records = [parse_prediction_line(text, source=source, row=n)
               for n, text in enumerate(lines, 1) if text.strip()]
    if not records:
        raise DataValidationError("predictions file is empty", source=source,
                                  expected="one JSON object per line", found="no lines")
    table = pd.DataFrame(records, columns=["item", "clusters", "row"])
    repeated = table["item"].duplicated()
    if repeated.any():
        first = table[repeated].iloc[0]
        raise _fail("an item is predicted twice", source, int(first["row"]), "item",
                    "one line per item", repr(first["item"]))
    return table


def match_predictions(predictions: pd.DataFrame, sentences: pd.DataFrame, *, source: str
                      ) -> pd.DataFrame:
    """Attach each sentence's predicted clusters; every item must be known and spans in range.

    `sentences` are the rows to evaluate (items of one table). Returns
    `sentences` with a `clusters` column. A sentence without a line in the
    file is an error (a missing prediction is not the same as "no link": a
    system that links nothing writes `"clusters": []`).
    """
    merged = sentences.merge(predictions[["item", "clusters", "row"]], on="item", how="left",
                             validate="one_to_one")
    absent = merged["clusters"].isna()
    if absent.any():
        examples = ", ".join(merged.loc[absent, "item"].head(3))
        raise DataValidationError(
            f"{int(absent.sum())} of {len(merged)} sentences have no prediction", source=source,
            column="item", expected="one line per sentence (use \"clusters\": [] for no link)",
            found=f"missing e.g. {examples}")
    for r in merged.itertuples(index=False):
        for cluster in r.clusters:
            for start, end in cluster:
                if end > len(r.sentence):
                    raise _fail(f"item {r.item!r}: mention [{start}, {end}] runs past the "
                                f"sentence ({len(r.sentence)} characters)", source, int(r.row),
                                "clusters", "character offsets into the de-bracketed sentence",
                                repr(r.sentence))
    return merged.drop(columns="row")


def unknown_items(predictions: pd.DataFrame, known: set[str]) -> pd.DataFrame:
    """Prediction lines whose item is in no table (typos, or a different data version)."""
    return predictions[~predictions["item"].isin(known)]


def antecedents(clusters, pronoun: tuple[int, int], sentence: str) -> list[tuple[int, int]]:
    """The mentions the pronoun is linked to: its cluster minus itself and chain pronouns."""
    chain = next((c for c in clusters if tuple(pronoun) in {tuple(m) for m in c}), None)
    if chain is None:
        return []
    return [tuple(m) for m in chain if tuple(m) != tuple(pronoun)
            and sentence[m[0]:m[1]].strip().lower() not in CHAIN_PRONOUNS]


def link_outcome(clusters, pronoun: tuple[int, int], gold: tuple[int, int], sentence: str) -> str:
    """"correct", "wrong" or "none" for one sentence (rules in the module docstring)."""
    others = antecedents(clusters, pronoun, sentence)
    if not others:
        return "none"
    covers_gold = [m[0] <= gold[0] and m[1] >= gold[1] for m in others]
    return "correct" if all(covers_gold) else "wrong"


def links_to_span(clusters, pronoun: tuple[int, int], target: tuple[int, int],
                  sentence: str) -> bool:
    """Does the system link the pronoun to the mention at `target` (e.g. the ABC subject)?"""
    return any(m[0] <= target[0] and m[1] >= target[1]
               for m in antecedents(clusters, pronoun, sentence))


def sentence_outcomes(sentences: pd.DataFrame, *, gold_start: str, gold_end: str) -> pd.Series:
    """link_outcome for every row (columns clusters, sentence, pronoun_start/end, gold span)."""
    return pd.Series(
        [link_outcome(r["clusters"], (r["pronoun_start"], r["pronoun_end"]),
                      (r[gold_start], r[gold_end]), r["sentence"])
         for _, r in sentences.iterrows()], index=sentences.index, dtype=object)


def subject_links(sentences: pd.DataFrame) -> pd.Series:
    """links_to_span for every ABC row: is the pronoun linked to the subject (occupation)?"""
    return pd.Series(
        [links_to_span(r["clusters"], (r["pronoun_start"], r["pronoun_end"]),
                       (r["occupation_start"], r["occupation_end"]), r["sentence"])
         for _, r in sentences.iterrows()], index=sentences.index, dtype=bool)

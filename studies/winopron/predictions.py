"""An external coreference system's predictions: read, validate, join to the sentences.

File formats (chosen by the file name's ending):

- TSV (`.tsv`, `.txt`): a header line with `sentence_id` (or `id`) and
  `prediction`; other columns are ignored.
- JSONL (`.jsonl`, `.ndjson`): one JSON object per line with the same keys.

`prediction` is `occupation`, `participant` or `none` (the system linked the
pronoun to neither), case-insensitive. Sentence ids are listed by
`python -m studies.winopron --write-ids FILE`.

A subset (new double-entity, new single-entity, old templates) with no
predictions at all is not evaluated, and the report says so. Within an
evaluated subset every sentence needs a prediction: a missing one is an error,
unless `allow_missing`, in which case it counts as `none` and the count goes
into the exclusion log.
"""
from __future__ import annotations

import difflib
import json
from pathlib import Path

import pandas as pd

from gbstats.data.validate import read_table, require_allowed, require_columns, require_unique
from gbstats.errors import DataValidationError
from gbstats.exclusions import ExclusionLog

LABELS = ("occupation", "participant", "none")
TSV_SUFFIXES, JSONL_SUFFIXES = (".tsv", ".txt"), (".jsonl", ".ndjson")
ID_ALIASES = ("sentence_id", "id")


def _id_column(df: pd.DataFrame, source: str) -> str:
    found = [name for name in ID_ALIASES if name in df.columns]
    if not found:
        require_columns(df, ["sentence_id", "prediction"], source=source)  # raises
    return found[0]


def read_jsonl(path: Path) -> pd.DataFrame:
    """One JSON object per non-blank line; the line number of a bad line is in the error."""
    records, lines = [], []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataValidationError("the file is not valid text", source=str(path),
                                  expected="UTF-8 text",
                                  found=f"undecodable byte at offset {exc.start}") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataValidationError("the line is not valid JSON", source=str(path), row=number,
                                      expected="one JSON object per line",
                                      found=exc.msg) from None
        if not isinstance(record, dict):
            raise DataValidationError("the line is not a JSON object", source=str(path),
                                      row=number, expected='{"sentence_id": ..., "prediction": ...}',
                                      found=type(record).__name__)
        records.append(record)
        lines.append(number)
    if not records:
        raise DataValidationError("the file has no predictions", source=str(path),
                                  expected="at least one JSON line", found="none")
    df = pd.DataFrame(records)
    df.attrs["lines"] = lines
    return df


def read_predictions(path) -> pd.DataFrame:
    """Validated predictions: columns sentence_id, prediction (lower-case), line."""
    from gbstats.data.validate import require_readable_file

    path = Path(path)
    source = str(path)
    # before the file type: a folder was "unknown predictions file type" (issue 44)
    require_readable_file(path, source=source, column="--predictions")
    suffix = path.suffix.lower()
    if suffix in TSV_SUFFIXES:
        raw = read_table(path, sep="\t", dtype=str, keep_default_na=False, source=source)
        lines = list(range(2, len(raw) + 2))  # header is line 1
    elif suffix in JSONL_SUFFIXES:
        if not path.exists():
            raise DataValidationError("file not found", source=source, expected="an existing file")
        raw = read_jsonl(path)
        lines = raw.attrs["lines"]
    else:
        raise DataValidationError(
            "unknown predictions file type", source=source,
            expected=f"a name ending in {', '.join(TSV_SUFFIXES + JSONL_SUFFIXES)}",
            found=repr(path.suffix or "no ending"))
    id_column = _id_column(raw, source)
    require_columns(raw, [id_column, "prediction"], source=source)
    row_of = dict(enumerate(lines))
    ids = raw[id_column].map(lambda v: v.strip() if isinstance(v, str) else v)
    labels = raw["prediction"].map(lambda v: v.strip().lower() if isinstance(v, str) else v)
    out = pd.DataFrame({"sentence_id": ids, "prediction": labels, "line": lines})
    blank = out["sentence_id"].isna() | (out["sentence_id"].astype(str) == "")
    if blank.any():
        pos = int(blank.to_numpy().nonzero()[0][0])
        raise DataValidationError("missing sentence id", source=source, row=row_of[pos],
                                  column=id_column, expected="a sentence id", found="nothing")
    out["sentence_id"] = out["sentence_id"].astype(str)
    require_allowed(out, "prediction", LABELS, source=source, row_offset=row_of.__getitem__)
    require_unique(out, ["sentence_id"], source=source, what="prediction",
                   row_offset=row_of.__getitem__)
    return out


def _suggest(unknown: str, known: list[str]) -> str:
    close = difflib.get_close_matches(unknown, known, n=1, cutoff=0.8)
    return f" (did you mean {close[0]!r}?)" if close else ""


def drop_old_template_xe(predictions: pd.DataFrame, known: set, *, source: str,
                         exclusions: ExclusionLog) -> pd.DataFrame:
    """Leave out, and count, predictions for xe sentences built from the original templates.

    Earlier versions listed them (`--write-ids`), but the original Winogender
    baseline is he/she/they only (sentences.PRONOUN_SETS_OF_TEMPLATE_SET), so
    a file made then still reads; its extra rows are reported, not used.
    """
    ids = predictions["sentence_id"]
    retired = ids.str.startswith("old.") & ids.str.endswith(".xe") & ~ids.isin(known)
    if retired.any():
        exclusions.record(f"predictions in {source} for original-template sentences with xe: "
                          "not part of the he/she/they Winogender baseline, ignored",
                          int(retired.sum()), unit="sentences", stage="predictions")
    return predictions.loc[~retired]


def join_predictions(sentences: pd.DataFrame, predictions: pd.DataFrame, *, source: str,
                     allow_missing: bool = False,
                     exclusions: ExclusionLog | None = None) -> pd.DataFrame:
    """The sentences of every subset the file covers, with a `prediction` column.

    Unknown ids are an error (listing the first few, with a close known id);
    see the module docstring for missing ones.
    """
    exclusions = exclusions if exclusions is not None else ExclusionLog()
    known = set(sentences["sentence_id"])
    predictions = drop_old_template_xe(predictions, known, source=source, exclusions=exclusions)
    unknown = predictions.loc[~predictions["sentence_id"].isin(known)]
    if len(unknown):
        first = unknown.iloc[0]
        shown = ", ".join(repr(i) for i in unknown["sentence_id"].head(3))
        raise DataValidationError(
            f"{len(unknown)} unknown sentence id(s): {shown}"
            f"{_suggest(first['sentence_id'], sorted(known))}",
            source=source, row=int(first["line"]), column="sentence_id",
            expected="ids as listed by `python -m studies.winopron --write-ids FILE`",
            found=repr(first["sentence_id"]))
    by_id = predictions.set_index("sentence_id")["prediction"]
    joined = sentences.assign(prediction=sentences["sentence_id"].map(by_id))
    kept = []
    for (template_set, version), subset in joined.groupby(["template_set", "version"], sort=False):
        name = f"{template_set} templates, {version}-entity"
        missing = subset["prediction"].isna()
        if missing.all():
            exclusions.record(f"{name}: no predictions in {source}, subset not evaluated",
                              len(subset), unit="sentences", stage="predictions")
            continue
        if missing.any():
            ids = ", ".join(repr(i) for i in subset.loc[missing, "sentence_id"].head(3))
            if not allow_missing:
                raise DataValidationError(
                    f"{int(missing.sum())} of {len(subset)} {name} sentences have no "
                    f"prediction (first: {ids}); pass --allow-missing to count them as 'none'",
                    source=source, column="sentence_id",
                    expected="a prediction for every sentence of a subset you evaluate",
                    found=f"{int(missing.sum())} missing")
            exclusions.record(f"{name}: no prediction in {source}, counted as 'none' "
                              "(a miss)", int(missing.sum()), unit="sentences",
                              stage="predictions")
            subset = subset.assign(prediction=subset["prediction"].fillna("none"))
        kept.append(subset)
    if not kept:
        raise DataValidationError("the predictions cover none of the sentences", source=source,
                                  expected="predictions for at least one subset", found="none")
    return pd.concat(kept, ignore_index=True)

"""results.json: provenance plus every table as records, at full precision, written atomically."""
from __future__ import annotations

import datetime as _dt
import json
import math
import numbers
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gbstats.report.files import write_text_atomically
from gbstats.report.formatting import is_missing, table_frame

def to_jsonable(value: Any, where: str = "value") -> Any:
    """`value` as plain JSON types: NaN/NA -> None, numpy -> Python, ±inf -> "inf"/"-inf".

    Mappings get sorted string keys, so the same content always gives the same
    file. Infinities become strings because JSON has no number for them.
    """
    if isinstance(value, pd.DataFrame):
        return table_records(value)
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(value[k], f"{where}[{k!r}]")
                for k in sorted(value, key=str)}
    if isinstance(value, (str, bool)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if is_missing(value):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        x = float(value)
        return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")
    if isinstance(value, (Path, os.PathLike)):
        return os.fspath(value)
    if isinstance(value, (_dt.datetime, _dt.date, pd.Timestamp)):
        return value.isoformat()
    if isinstance(value, (set, frozenset)):
        return [to_jsonable(v, where) for v in sorted(value, key=str)]
    if isinstance(value, (list, tuple, np.ndarray, pd.Series, pd.Index)):
        return [to_jsonable(v, f"{where}[{i}]") for i, v in enumerate(value)]
    raise TypeError(f"{where}: cannot write a {type(value).__name__} to JSON ({value!r:.80})")


def table_records(df: pd.DataFrame) -> list[dict]:
    """`df` as a list of records in column order (a named index becomes columns)."""
    frame = table_frame(df, None) if df.shape[1] else df
    cols = [str(c) for c in frame.columns]
    return [{col: to_jsonable(v, f"row {i + 1}, column {col!r}") for col, v in zip(cols, row)}
            for i, row in enumerate(frame.itertuples(index=False, name=None))]


def write_results_json(path: str | os.PathLike, provenance: Mapping,
                       tables: Mapping[str, pd.DataFrame],
                       extra: Mapping | None = None) -> Path:
    """Write results.json: {"provenance": ..., "tables": {name: [records]}, **extra}.

    Table names are sorted; records keep the table's column order; every other
    mapping has sorted keys. NaN -> null, numpy scalars -> numbers, ±inf ->
    "inf"/"-inf". Extra top-level keys may not be "provenance" or "tables".
    """
    extra = dict(extra or {})
    clash = sorted({"provenance", "tables"} & set(extra))
    if clash:
        raise ValueError(f"extra keys {clash} would overwrite results.json's own sections")
    doc = {"provenance": to_jsonable(provenance, "provenance"),
           "tables": {str(name): table_records(tables[name]) for name in sorted(tables, key=str)}}
    doc.update(to_jsonable(extra, "extra"))
    path = Path(path)
    write_text_atomically(path, json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    return path

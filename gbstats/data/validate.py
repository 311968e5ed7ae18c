"""Reading and validating tables at the edges, with errors that say where.

Every loader reads through `read_table` and checks through `validate_frame`,
so a malformed file, a missing column, a wrong dtype, an unknown label or a
duplicated trial always surfaces as a `DataValidationError` naming the file,
the row and the column, never as a deep pandas traceback.

Row numbers in messages are 1-based file lines (the header is line 1), which
is what a researcher sees in a text editor or spreadsheet.
"""
from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError


def file_row(index_position: int) -> int:
    """Data row at 0-based position -> 1-based file line (header is line 1)."""
    return int(index_position) + 2


def read_table(path: str | os.PathLike | io.IOBase, *, sep: str = ",",
               source: str | None = None, **read_kwargs) -> pd.DataFrame:
    """Read a delimited text table, turning every pandas failure into a clean error.

    `source` is the name used in messages (defaults to the path).
    """
    name = source or str(path)
    if isinstance(path, (str, os.PathLike)):
        p = require_readable_file(path, source=name)
        binary = binary_format(p)
        if binary is not None:
            raise DataValidationError(
                f"this is {binary}, not a text table", source=name,
                expected="a delimited text file (CSV or TSV, UTF-8): save it as CSV UTF-8 "
                         "from the program that made it", found=binary)
        if p.stat().st_size == 0:
            raise DataValidationError("the file is empty", source=name,
                                      expected="a header line and at least one row",
                                      found="0 bytes")
    try:
        df = pd.read_csv(path, sep=sep, **read_kwargs)
    except pd.errors.EmptyDataError as exc:
        raise DataValidationError("the file has no columns", source=name,
                                  expected="a header line", found=str(exc)) from None
    except pd.errors.ParserError as exc:
        # pandas says e.g. "Error tokenizing data. C error: Expected 5 fields in
        # line 12, saw 7": keep its line number, which is the file's.
        raise DataValidationError("the file is malformed (truncated or corrupted?)",
                                  source=name, found=str(exc).strip()) from None
    except UnicodeDecodeError as exc:
        raise DataValidationError("the file is not valid text",
                                  source=name, expected="UTF-8 text",
                                  found=f"undecodable byte at offset {exc.start}") from None
    if df.shape[0] == 0:
        raise DataValidationError("the file has a header but no rows", source=name,
                                  expected="at least one data row", found="0 rows")
    return df


def require_columns(df: pd.DataFrame, columns: Iterable[str], *, source: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DataValidationError(
            f"missing column{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}",
            source=source, column=missing[0],
            expected=f"columns {', '.join(columns)}",
            found=f"columns {', '.join(map(str, df.columns))}")


def _first_bad(mask: pd.Series) -> int:
    return int(np.flatnonzero(np.asarray(mask))[0])


def require_numeric(df: pd.DataFrame, column: str, *, source: str,
                    allow_missing: bool = False, row_offset=file_row) -> pd.Series:
    """Return `df[column]` as float, or raise naming the first non-numeric or non-finite cell.

    "inf", "-inf" and "Infinity" parse as numbers, but no rating, score or
    count is infinite: let through, one would fail much later (or silently
    shift a mean), far from the file that held it.
    """
    raw = df[column]
    values = pd.to_numeric(raw, errors="coerce")
    bad = values.isna() & (raw.notna() if allow_missing else True)
    if bad.any():
        pos = _first_bad(bad)
        raise DataValidationError(
            f"{int(bad.sum())} non-numeric value(s)", source=source,
            row=row_offset(pos), column=column, expected="a number",
            found=repr(raw.iloc[pos]))
    infinite = pd.Series(np.isinf(values.to_numpy(dtype=float)), index=raw.index)
    if infinite.any():
        pos = _first_bad(infinite)
        raise DataValidationError(
            f"{int(infinite.sum())} infinite value(s)", source=source,
            row=row_offset(pos), column=column, expected="a finite number",
            found=repr(raw.iloc[pos]))
    if raw.dtype == object:
        # pd.to_numeric's fast parser can be one ulp off for some decimal
        # strings; Python's float() rounds correctly, so re-parse the text.
        return raw.map(lambda v: float(v) if pd.notna(v) else np.nan).astype(float)
    return values.astype(float)


# Text that means true or false in an indicator column (R's write.csv writes TRUE/FALSE).
_TRUE_TEXT, _FALSE_TEXT = {"true", "1", "1.0"}, {"false", "0", "0.0"}


def require_indicator(df: pd.DataFrame, column: str, *, source: str,
                      row_offset=file_row) -> pd.Series:
    """`df[column]` as 0.0/1.0 floats, or raise naming the first cell that is not 0, 1,
    True or False (as booleans, numbers or text). A missing cell is refused too: counted
    as 0 it would put a trial outside its set without a word."""
    raw = df[column]

    def parse(value):
        if isinstance(value, (bool, np.bool_)):
            return float(value)
        if isinstance(value, str):
            text = value.strip().lower()
            return 1.0 if text in _TRUE_TEXT else 0.0 if text in _FALSE_TEXT else np.nan
        if isinstance(value, (int, float, np.integer, np.floating)) and value in (0, 1):
            return float(value)
        return np.nan

    values = raw.map(parse).astype(float)
    bad = values.isna()
    if bad.any():
        pos = _first_bad(bad)
        raise DataValidationError(
            f"{int(bad.sum())} value(s) that are not 0/1", source=source, row=row_offset(pos),
            column=column, expected="an indicator: 0 or 1 (or True/False) in every row",
            found="an empty cell" if pd.isna(raw.iloc[pos]) else repr(raw.iloc[pos]))
    return values


def require_probability(df: pd.DataFrame, column: str, *, source: str,
                        row_offset=file_row) -> pd.Series:
    """`df[column]` as floats in [0, 1], or raise naming the first cell outside. Negative
    values are named as what they most likely are: log-probabilities."""
    values = require_numeric(df, column, source=source, row_offset=row_offset)
    bad = (values < 0) | (values > 1)
    if bad.any():
        pos = _first_bad(bad)
        hint = (" (negative values look like log-probabilities: exponentiate them)"
                if (values < 0).any() else "")
        raise DataValidationError(
            f"{int(bad.sum())} value(s) outside [0, 1]{hint}", source=source,
            row=row_offset(pos), column=column, expected="a probability between 0 and 1",
            found=repr(float(values.iloc[pos])))
    return values


def require_ids(df: pd.DataFrame, column: str, *, source: str, row_offset=file_row) -> None:
    """Raise on the first blank cell of an id column (participant, item...).

    A blank id would make every such row one anonymous participant or item,
    which changes the random-effect structure without any error.
    """
    raw = df[column]
    blank = raw.isna() | raw.map(lambda v: isinstance(v, str) and not v.strip())
    if blank.any():
        pos = _first_bad(blank)
        raise DataValidationError(
            f"{int(blank.sum())} blank id(s)", source=source, row=row_offset(pos),
            column=column, expected="an id in every row", found="an empty cell")


def require_allowed(df: pd.DataFrame, column: str, allowed: Iterable, *, source: str,
                    row_offset=file_row) -> None:
    """Raise on the first value of `column` not in `allowed` (missing counts as unknown)."""
    allowed = list(allowed)
    bad = ~df[column].isin(allowed)
    if bad.any():
        pos = _first_bad(bad)
        unknown = sorted(map(str, df.loc[bad, column].unique()))[:5]
        raise DataValidationError(
            f"unknown label(s) {', '.join(map(repr, unknown))} in {int(bad.sum())} row(s)",
            source=source, row=row_offset(pos), column=column,
            expected=allowed_words(allowed, df[column].iloc[pos]),
            found=repr(df[column].iloc[pos]))


# Beyond this many allowed values, a message names a few and the closest ones, not all.
LISTED_VALUES = 12


def allowed_words(allowed: list, found) -> str:
    """'one of ...' for a short list; for a long one (335 stimulus ids), the first few, the
    count, and the values closest to what was found (a typo's likely intent)."""
    if len(allowed) <= LISTED_VALUES:
        return f"one of {', '.join(map(repr, allowed))}"
    import difflib

    close = difflib.get_close_matches(str(found), [str(a) for a in allowed], n=3, cutoff=0.6)
    head = ", ".join(map(repr, allowed[:5]))
    text = f"one of {len(allowed)} values ({head}, ...)"
    return text + (f"; closest: {', '.join(map(repr, close))}" if close else "")


def require_unique(df: pd.DataFrame, keys: list[str], *, source: str,
                   what: str = "trial", row_offset=file_row) -> None:
    """Raise if any combination of `keys` occurs twice (a duplicated trial)."""
    dup = df.duplicated(subset=keys, keep="first")
    if dup.any():
        pos = _first_bad(dup)
        key = ", ".join(f"{k}={df[k].iloc[pos]!r}" for k in keys)
        raise DataValidationError(
            f"duplicated {what} ({int(dup.sum())} duplicate row(s)); first: {key}",
            source=source, row=row_offset(pos), column=keys[0],
            expected=f"one row per {' x '.join(keys)}")


def validate_frame(df: pd.DataFrame, *, source: str,
                   required: Iterable[str] = (),
                   ids: Iterable[str] = (),
                   numeric: Iterable[str] = (),
                   numeric_optional: Iterable[str] = (),
                   allowed: Mapping[str, Iterable] | None = None,
                   unique: list[str] | None = None,
                   what: str = "trial",
                   row_offset=file_row) -> pd.DataFrame:
    """Check a table in one call; returns a copy with numeric columns as float.

    `ids` are id columns (participant, item): required, and no cell may be blank.
    `row_offset` maps a 0-based position to the row number shown to the user;
    the default assumes one header line. Loaders that concatenate several files
    validate each file before concatenating, so row numbers stay true.
    """
    ids = list(ids)
    required = list(required) + [c for c in ids if c not in required]
    numeric = list(numeric)
    numeric_optional = list(numeric_optional)
    require_columns(df, required + [c for c in numeric + numeric_optional if c not in required]
                    + [c for c in (allowed or {}) if c not in required], source=source)
    out = df.copy()
    for col in ids:
        require_ids(out, col, source=source, row_offset=row_offset)
    for col in numeric:
        out[col] = require_numeric(out, col, source=source, row_offset=row_offset)
    for col in numeric_optional:
        out[col] = require_numeric(out, col, source=source, allow_missing=True,
                                   row_offset=row_offset)
    for col, values in (allowed or {}).items():
        require_allowed(out, col, values, source=source, row_offset=row_offset)
    if unique:
        require_unique(out, unique, source=source, what=what, row_offset=row_offset)
    return out


# The first bytes of formats people pass where a text table is expected.
_MAGIC = ((b"PK\x03\x04", "a zip archive (an Excel .xlsx or OpenDocument .ods workbook, or a "
                           ".zip)"),
          (b"\xd0\xcf\x11\xe0", "an old Excel .xls workbook (an OLE2 file)"),
          (b"PAR1", "a Parquet file"), (b"%PDF", "a PDF document"),
          (b"\x1f\x8b", "a gzip-compressed file"))


def binary_format(path: Path) -> str | None:
    """What a file is when its first bytes say it is a workbook, an archive or another
    binary format rather than text (else None): an .xlsx was reported as "not valid text"
    or as a header without rows (issue 44)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError:
        return None
    return next((what for magic, what in _MAGIC if head.startswith(magic)), None)


def require_readable_file(path: str | os.PathLike, *, source: str | None = None,
                          column: str | None = None) -> Path:
    """`path` as a Path when it names a regular file this process can read; otherwise a
    DataValidationError saying what it is instead (missing, a folder, standard input,
    unreadable). `column` names the flag it came from (--human, --stimuli ...)."""
    name = source or str(path)
    expected = "an existing, readable file"
    if os.fspath(path) == "-":
        raise DataValidationError("reading from standard input is not supported",
                                  source=name, column=column, expected=expected + " (save "
                                  "the data to a file and give its path)", found="'-'")
    p = Path(path)
    if not p.exists():
        parent = p.parent if str(p.parent) else Path(".")
        found = ("no such file" if parent.is_dir()
                 else f"no such file, and no folder {parent}")
        raise DataValidationError("file not found", source=name, column=column,
                                  expected=expected, found=found)
    if p.is_dir():
        raise DataValidationError("this is a folder, not a file", source=name, column=column,
                                  expected=expected, found="a folder")
    if not p.is_file():
        raise DataValidationError("this is not a regular file", source=name, column=column,
                                  expected=expected, found="a device, pipe or socket")
    if not os.access(p, os.R_OK):
        raise DataValidationError("the file cannot be read (permission denied)", source=name,
                                  column=column, expected=expected)
    return p


def sniff_separator(path: str | os.PathLike) -> str:
    """Guess ',' / tab / ';' / whitespace from the first line (for users' own files)."""
    require_readable_file(path)
    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        head = fh.readline()
    try:
        return csv.Sniffer().sniff(head, delimiters=",\t; ").delimiter
    except csv.Error:
        return ","


def check_output_schema(df: pd.DataFrame, schema, *, source: str) -> pd.DataFrame:
    """Validate a loader's *output* against its declared pandera schema.

    Input files are checked with the helpers above (their messages carry file
    line numbers); the declared output schema is the contract that downstream
    code relies on, so a violation here is a bug in the loader or a data file
    that passed the input checks in an unexpected shape. Either way the error
    names the table, the first failing row and column.
    """
    import pandera.errors as pa_errors

    try:
        return schema.validate(df, lazy=True)
    except pa_errors.SchemaErrors as exc:
        cases = exc.failure_cases
        # Prefer a failure tied to a column: a table-wide check (e.g. a
        # uniqueness check over several columns) would otherwise name an
        # arbitrary column.
        with_column = cases[cases["column"].notna() & (cases["schema_context"] == "Column")] \
            if "schema_context" in cases else cases[cases["column"].notna()]
        first = (with_column if len(with_column) else cases).iloc[0]
        column = first.get("column")
        index = first.get("index")
        raise DataValidationError(
            f"output does not match schema {schema.name or ''}: "
            f"{len(cases)} failure(s); first check failed: {first.get('check')}",
            source=source,
            row=None if pd.isna(index) else int(index) + 1,
            column=None if pd.isna(column) else str(column),
            found=repr(first.get("failure_case"))) from None

"""Errors that tell a researcher what was expected, what was found, and where."""
from __future__ import annotations


class GbstatsError(Exception):
    """Base class for every error gbstats raises on purpose."""


class DataValidationError(GbstatsError, ValueError):
    """Input data does not match what a loader or function expects.

    The message always names the source (file or table), and where known the
    row (1-based, as a spreadsheet shows it, header = row 1) and the column.
    """

    def __init__(self, message: str, *, source: str | None = None,
                 row: int | None = None, column: str | None = None,
                 expected: str | None = None, found: str | None = None):
        self.source, self.row, self.column = source, row, column
        self.expected, self.found = expected, found
        where = []
        if source is not None:
            # "file x.csv" for files; a table or sample name reads better bare
            where.append(f"file {source}" if _looks_like_file(str(source)) else str(source))
        if row is not None:
            where.append(f"row {row}")
        if column is not None:
            where.append(f"column {column!r}")
        parts = [message]
        if expected is not None:
            parts.append(f"expected: {expected}")
        if found is not None:
            parts.append(f"found: {found}")
        text = "; ".join(parts)
        super().__init__(f"{', '.join(where)}: {text}" if where else text)


def _looks_like_file(source: str) -> bool:
    import re

    return "/" in source or "\\" in source or re.search(r"\.[A-Za-z0-9]{1,6}$", source) is not None


class EstimateWarning(UserWarning):
    """A statistic that left its range (a reliability below 0, a corrected correlation beyond
    [-1, 1], a ceiling at its bound) or could not be computed: the value is returned as
    documented, and this warning says what it means (issue 44, cases 5 and 6)."""


class OutputPathError(GbstatsError, OSError):
    """An output path (--out) cannot be written, or would overwrite an input."""


class ChecksumError(GbstatsError):
    """A data file's sha256 differs from the registry's pinned value."""


class MissingDependencyError(GbstatsError, ImportError):
    """An optional engine (R/lme4, torch, PyMC) is not installed."""


def plural(kind: str) -> str:
    """The plural of a kind of name: "study" -> "studies", "kind of model score" -> "kinds of
    model score", "bos option" -> "bos options" (the head noun takes the ending)."""
    head, sep, tail = kind.partition(" of ")
    words = head.split(" ")
    last = words[-1]
    if len(last) > 1 and last.endswith("y") and last[-2].lower() not in "aeiou":
        last = last[:-1] + "ies"
    elif last.endswith(("s", "x", "z", "ch", "sh")):
        last += "es"
    else:
        last += "s"
    return " ".join(words[:-1] + [last]) + sep + tail


class UnknownNameError(GbstatsError, KeyError):
    """An unknown registry name (dataset, model, study); suggests close matches."""

    def __init__(self, kind: str, name: str, known: list[str], hint: str = ""):
        """`hint` (optional) ends the message: how to make a new name known."""
        import difflib

        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        suggestion = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        self.message = (f"unknown {kind} {name!r}.{suggestion} "
                        f"Known {plural(kind)}: {', '.join(sorted(known))}."
                        + (f" {hint}" if hint else ""))
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return self.message


class JoinError(GbstatsError, RuntimeError):
    """A join of two tables dropped, duplicated or failed to match rows it must keep.

    Raised where the study's own invariant breaks (a human trial without its
    stimulus, a stimulus without its score); the message names both tables.
    """


class ScoringError(GbstatsError, RuntimeError):
    """A scorer returned something other than what was asked (another order, missing items)."""


class PlaceError(GbstatsError, OSError):
    """A folder gbstats must write (a cache, a report) is read-only, full or missing.

    Kept apart from damage on purpose: a healthy cache on a read-only disk is
    not "damaged", and the fix (a writable place, free space) is not the fix
    for damage (moving the file aside, which throws its contents away)."""


# errno -> what it means for a place gbstats writes, in a user's words
_PLACE_WORDS = {
    "EROFS": "on a read-only file system",
    "EACCES": "not writable by this user (permission denied)",
    "EPERM": "not writable by this user (operation not permitted)",
    "ENOSPC": "on a full disk (no space left on the device)",
    "EDQUOT": "over its disk quota",
    "EFBIG": "on a file system that refuses a file this large",
}


def place_problem(exc: BaseException) -> str | None:
    """Why `exc` (an OSError) says a place cannot be written, in words that follow "is":
    "on a read-only file system", "on a full disk (...)", ...; None for any other error
    (a damaged file, a bug)."""
    import errno

    if not isinstance(exc, OSError) or exc.errno is None:
        return None
    for name, words in _PLACE_WORDS.items():
        if getattr(errno, name, None) == exc.errno:
            return words
    return None


def write_probe(folder) -> OSError | None:
    """Create and remove one small file in `folder`: the OSError that stops it, or None.
    Tells a read-only or full place from a damaged file after a write failed."""
    import os
    import tempfile

    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".gbstats-write-probe-")
        try:
            os.write(fd, b"\0" * 4096)  # a full disk can still create an empty file
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        return exc
    return None


def check_probability(value, name: str, *, source: str | None = None) -> float:
    """`value` as a float strictly between 0 and 1 (a confidence level, an alpha, a coverage),
    or a DataValidationError naming it: 40.0 meant as 40% was accepted as a probability mass,
    and 95 for 95% gave a raw error from numpy's quantiles or a row of NaN (issue 44)."""
    import math
    import numbers

    ok = (isinstance(value, numbers.Real) and not isinstance(value, bool)
          and math.isfinite(float(value)) and 0 < float(value) < 1)
    if not ok:
        hint = (f" (for {float(value):g}%, pass {float(value) / 100:g})"
                if isinstance(value, numbers.Real) and not isinstance(value, bool)
                and 1 < float(value) < 100 else "")
        raise DataValidationError(f"{name} must be a probability strictly between 0 and 1{hint}",
                                  source=source, expected=f"0 < {name} < 1",
                                  found=repr(value))
    return float(value)

"""Reports: LaTeX booktabs tables, Markdown tables, results.json with provenance.

Every study ends the same way: a folder with `report.md` (narrative, tables and
figures inline), `results.json` (provenance plus every table as records),
`tables/*.tex` (booktabs tables that go straight into a paper) and
`figures/*.png`. `StudyReport` writes that folder; the functions below it can
also be used on their own from a notebook.

Number formatting, the same in LaTeX and Markdown (`format_number`):

* floats are shown with `digits` significant digits, trailing zeros kept
  (0.5 -> "0.500", 0.012345 -> "0.0123");
* a float with more integer digits than `digits` is rounded to an integer, not
  to zeros (an AIC of 12345.6 -> "12346", not "12300");
* a non-zero float below 0.001 in absolute value is shown in scientific
  notation ("4.50e-04"; in LaTeX $4.50\\times10^{-4}$);
* integers, and float columns whose values are all whole numbers (counts that
  became floats in a merge), are shown as integers;
* missing values (NaN, None, pd.NA) are shown as "--".

p-values are formatted as APA-style papers do (`format_p_value`): "< .001"
below .001, otherwise three decimals without the leading zero (".023",
"1.000"). A p-value outside [0, 1] is a bug upstream and raises.
"""
from __future__ import annotations

import datetime as _dt
import functools
import importlib.metadata
import json
import math
import numbers
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError, OutputPathError

MISSING = "--"
P_BELOW = 0.001

# Friendlier headers for the columns of FitResult.coefs and the test tables;
# `column_labels=` overrides them, and any other column keeps its own name.
DEFAULT_COLUMN_LABELS = {
    "term": "Term", "estimate": "Estimate", "se": "SE", "ci_low": "CI low",
    "ci_high": "CI high", "stat": "Statistic", "df": "df", "p_value": "p",
    "backend": "Backend",
}

# Versions recorded in every results.json. Read with importlib.metadata, so
# recording them imports none of these packages.
KEY_PACKAGES = ("numpy", "pandas", "scipy", "statsmodels", "pingouin", "pandera",
                "matplotlib", "torch", "transformers", "minicons", "gguf",
                "pymc", "bambi", "arviz", "nutpie", "pymer4", "rpy2")
R_PACKAGES = ("lme4", "lmerTest", "emmeans", "blme")

# ---------------------------------------------------------------------------
# Cell formatting
# ---------------------------------------------------------------------------


def is_missing(value: Any) -> bool:
    """True for None, NaN, pd.NA and NaT (but not for strings or containers)."""
    if value is None:
        return True
    try:
        return bool(pd.isna(value)) if np.ndim(value) == 0 else False
    except (TypeError, ValueError):
        return False


def format_number(value: Any, digits: int = 3) -> str:
    """Format one number with `digits` significant digits (rules in the module doc)."""
    if digits < 1:
        raise ValueError(f"digits must be at least 1, got {digits}")
    if is_missing(value):
        return MISSING
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    x = float(value)
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    # Round to significant digits first, so that 0.9996 -> 1.00 (three
    # significant digits), not 1.000.
    rounded = float(f"{x:.{digits - 1}e}")
    magnitude = math.floor(math.log10(abs(rounded)))
    if magnitude < -3:
        return f"{x:.{digits - 1}e}"
    decimals = max(digits - 1 - magnitude, 0)
    text = f"{x:.{decimals}f}"
    return "0" if float(text) == 0 else text  # no "-0"


def format_p_value(p: Any) -> str:
    """Format a p-value as papers do: "< .001", else 3 decimals without the leading zero."""
    if is_missing(p):
        return MISSING
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"a p-value must lie in [0, 1], found {p!r}")
    if p < P_BELOW:
        return "< .001"
    text = f"{p:.3f}"
    return text[1:] if text.startswith("0") else text


def _is_whole_float_column(series: pd.Series) -> bool:
    if not pd.api.types.is_float_dtype(series.dtype):
        return False
    finite = series[np.isfinite(series)]
    # Beyond 1e15 a float no longer holds every integer exactly.
    return (len(finite) > 0 and bool((finite == np.round(finite)).all())
            and bool((finite.abs() < 1e15).all()))


def _is_numeric_column(series: pd.Series) -> bool:
    return (pd.api.types.is_numeric_dtype(series.dtype)
            and not pd.api.types.is_bool_dtype(series.dtype))


def _format_column(series: pd.Series, digits: int, is_p: bool) -> list[str]:
    """Plain-text cells of one column; raises with the row for a bad p-value."""
    if is_p:
        cells = []
        for row, value in enumerate(series, start=1):
            if not is_missing(value) and not isinstance(value, numbers.Real):
                raise DataValidationError("p-value is not a number", source="table",
                                          row=row, column=str(series.name),
                                          expected="a number in [0, 1]", found=repr(value))
            try:
                cells.append(format_p_value(value))
            except ValueError:
                raise DataValidationError("p-value outside [0, 1]", source="table", row=row,
                                          column=str(series.name), expected="0 <= p <= 1",
                                          found=repr(value)) from None
        return cells
    whole = _is_whole_float_column(series)
    cells = []
    for value in series:
        if is_missing(value):
            cells.append(MISSING)
        elif isinstance(value, (numbers.Real, np.number)) and not isinstance(value, (bool, np.bool_)):
            cells.append(str(int(value)) if whole and math.isfinite(value)
                         else format_number(value, digits))
        else:
            cells.append(str(value))
    return cells


def _table_frame(df: pd.DataFrame, columns: Sequence[str] | None) -> pd.DataFrame:
    """The columns to show: a named index becomes columns; an unnamed one is dropped."""
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"expected a pandas DataFrame, found {type(df).__name__}")
    if isinstance(df.columns, pd.MultiIndex):
        raise DataValidationError("multi-level column headers are not supported",
                                  source="table", expected="one header row",
                                  found=f"{df.columns.nlevels} levels")
    if any(name is not None for name in df.index.names):
        df = df.reset_index()
    duplicated = df.columns[df.columns.duplicated()].tolist()
    if duplicated:
        raise DataValidationError("duplicate column names", source="table",
                                  expected="unique column names", found=str(duplicated))
    if columns is not None:
        missing = [c for c in columns if c not in df.columns]
        if missing:
            raise DataValidationError("columns requested for the table are missing",
                                      source="table", expected=f"columns {list(columns)}",
                                      found=f"missing {missing}; the table has {list(df.columns)}")
        df = df[list(columns)]
    if df.shape[1] == 0:
        raise DataValidationError("the table has no columns", source="table",
                                  expected="at least one column", found="none")
    return df


def format_cells(df: pd.DataFrame, digits: int = 3, p_columns: Sequence[str] = ("p_value",),
                 columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Every cell of `df` as plain text: numbers, p-values and missing values formatted."""
    df = _table_frame(df, columns)
    return pd.DataFrame({col: _format_column(df[col], digits, col in p_columns)
                         for col in df.columns}, columns=df.columns)


def _header_labels(columns, column_labels: Mapping | None) -> list[str]:
    labels = {**DEFAULT_COLUMN_LABELS, **(column_labels or {})}
    return [str(labels.get(c, c)) for c in columns]


# ---------------------------------------------------------------------------
# LaTeX
# ---------------------------------------------------------------------------

# The ten characters LaTeX treats specially, plus < > | which the default OT1
# font encoding prints as other glyphs (¡ ¿ —).
LATEX_ESCAPES = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "_": r"\_", "%": r"\%",
    "&": r"\&", "#": r"\#", "$": r"\$", "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
    "|": r"\textbar{}",
}
_LATEX_SPECIAL = re.compile("[" + re.escape("".join(LATEX_ESCAPES)) + "]")
# Control characters (newlines, tabs, NUL, C1 controls, Unicode line and
# paragraph separators) would end a table row or stop pdflatex; they become
# plain spaces.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_LABEL_OK = re.compile(r"^[A-Za-z0-9:_.\-/]+$")


def escape_latex(text: Any) -> str:
    """`text` as LaTeX that prints it literally (specials escaped, control chars -> space).

    Non-ASCII letters pass through: pdflatex reads UTF-8 and prints accented
    Latin letters; other scripts need xelatex/lualatex.
    """
    text = _CONTROL.sub(" ", str(text))
    return _LATEX_SPECIAL.sub(lambda m: LATEX_ESCAPES[m.group()], text)


_CODE_SPAN = re.compile(r"`([^`]+)`")


def markdown_to_latex(text: Any) -> str:
    """Caption or note text (Markdown) as LaTeX: code spans (`y ~ x + (1|g)`) become
    \\texttt{} and everything else prints literally (escape_latex, inside the spans too).

    A caption is written once for report.md and tables/*.tex, so it is Markdown;
    a backtick with no partner is kept as text.
    """
    text = str(text)
    pieces, last = [], 0
    for span in _CODE_SPAN.finditer(text):
        pieces.append(escape_latex(text[last:span.start()]))
        pieces.append(r"\texttt{" + escape_latex(span.group(1)) + "}")
        last = span.end()
    pieces.append(escape_latex(text[last:]))
    return "".join(pieces)


def _latex_cell(plain: str, kind: str) -> str:
    """A formatted cell in LaTeX; kind is "text", "number" or "p".

    Numbers get a proper minus sign, ×10^k and infinity; p < .001 a math "<"
    (a text "<" prints as "¡" in the default font encoding).
    """
    if plain == MISSING:
        return MISSING  # "--" is an en dash in LaTeX, as papers show missing cells
    if kind == "text":
        return escape_latex(plain)
    if kind == "p":
        return r"$<$\,.001" if plain == "< .001" else plain
    if plain in ("inf", "-inf"):
        return r"$\infty$" if plain == "inf" else r"$-\infty$"
    negative, body = plain.startswith("-"), plain.lstrip("-")
    if "e" in body:
        mantissa, exponent = body.split("e")
        return f"${'-' if negative else ''}{mantissa}\\times10^{{{int(exponent)}}}$"
    return ("$-$" if negative else "") + body


def _latex_row(cells) -> str:
    row = " & ".join(cells)
    # The \\ ending the previous row (and \midrule) looks past spaces and the
    # newline for "[" (an optional length) and "*": a row starting with
    # either would be eaten as that argument. An empty group stops the look.
    if row.lstrip().startswith(("[", "*")):
        row = "{}" + row
    return row + r" \\"


def to_latex_table(df: pd.DataFrame, caption: str, label: str | None, digits: int = 3,
                   columns: Sequence[str] | None = None,
                   column_labels: Mapping[str, str] | None = None,
                   p_columns: Sequence[str] = ("p_value",),
                   notes: str | Sequence[str] | None = None) -> str:
    """A standalone booktabs `table` environment for `df` (needs only \\usepackage{booktabs}).

    Cells, headers, caption and notes are escaped, so any text prints
    literally; Markdown code spans in the caption and notes become
    \\texttt{}. Numbers get `digits` significant digits and the columns named
    in `p_columns` are formatted as p-values (see the module doc). Numeric
    columns are right-aligned, text columns left-aligned. `label` (e.g.
    "tab:lmm") may be None for no \\label.
    """
    if label is not None and not _LABEL_OK.match(label):
        raise ValueError(f"LaTeX label {label!r} may only contain letters, digits and : _ . - /")
    frame = _table_frame(df, columns)
    cells = format_cells(frame, digits, p_columns)
    kind = {c: "p" if c in p_columns else "number" if _is_numeric_column(frame[c]) else "text"
            for c in frame.columns}
    spec = "".join("l" if kind[c] == "text" else "r" for c in frame.columns)
    header = _latex_row(escape_latex(h) for h in _header_labels(frame.columns, column_labels))
    body = [_latex_row(_latex_cell(cells.at[i, c], kind[c]) for c in frame.columns)
            for i in cells.index]
    lines = [r"\begin{table}[htbp]", r"\centering", f"\\caption{{{markdown_to_latex(caption)}}}"]
    if label is not None:
        lines.append(f"\\label{{{label}}}")
    lines += [f"\\begin{{tabular}}{{{spec}}}", r"\toprule", header, r"\midrule",
              *body, r"\bottomrule", r"\end{tabular}"]
    if notes:
        note_list = [notes] if isinstance(notes, str) else list(notes)
        lines += [r"\par\medskip", r"\begin{minipage}{\linewidth}\footnotesize",
                  r"\textit{Note.} " + " ".join(markdown_to_latex(n) for n in note_list),
                  r"\end{minipage}"]
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------


def _escape_markdown_cell(text: str) -> str:
    # A "|" would split the cell, a newline would end the row.
    return _CONTROL.sub(" ", text).replace("|", r"\|")


def to_markdown_table(df: pd.DataFrame, digits: int = 3, *,
                      p_columns: Sequence[str] = ("p_value",),
                      columns: Sequence[str] | None = None,
                      column_labels: Mapping[str, str] | None = None) -> str:
    """A GitHub-flavoured Markdown table of `df`, formatted like `to_latex_table`."""
    frame = _table_frame(df, columns)
    cells = format_cells(frame, digits, p_columns).map(_escape_markdown_cell)
    cells.columns = [_escape_markdown_cell(h) for h in _header_labels(frame.columns, column_labels)]
    numeric = [_is_numeric_column(frame[c]) or c in p_columns for c in frame.columns]
    # disable_numparse: otherwise tabulate re-parses "0.500" as a number and
    # prints "0.5", undoing the significant digits.
    return cells.to_markdown(index=False, disable_numparse=True,
                             colalign=["right" if n else "left" for n in numeric]) + "\n"


# ---------------------------------------------------------------------------
# results.json
# ---------------------------------------------------------------------------


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
    frame = _table_frame(df, None) if df.shape[1] else df
    cols = [str(c) for c in frame.columns]
    return [{col: to_jsonable(v, f"row {i + 1}, column {col!r}") for col, v in zip(cols, row)}
            for i, row in enumerate(frame.itertuples(index=False, name=None))]


def current_umask() -> int:
    """The process's umask (os.umask can only be read by setting it, so it is set back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def follow_umask(path: str | os.PathLike, directory: bool = False) -> None:
    """Give a file made by mkstemp (0600) or a folder made by mkdtemp (0700) the mode a plain
    open() or mkdir() would have given it, so outputs are as readable as the user's umask says."""
    os.chmod(path, (0o777 if directory else 0o666) & ~current_umask())


def _write_text_atomically(path: Path, text: str) -> None:
    # A crash mid-write must not leave a truncated results.json that looks valid.
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        follow_umask(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
    _write_text_atomically(path, json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    return path


# ---------------------------------------------------------------------------
# Provenance
# ---------------------------------------------------------------------------


def package_versions(names: Sequence[str] = KEY_PACKAGES) -> dict[str, str | None]:
    """Installed version of each distribution, None when it is not installed."""
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


@functools.lru_cache(maxsize=1)
def _r_versions_cached(timeout: float) -> tuple[tuple[str, str | None], ...]:
    rscript = shutil.which("Rscript")
    if rscript is None:
        return (("R", None), ("note", "Rscript not found"))
    code = ("cat(paste0('R=', R.version$major, '.', R.version$minor));"
            f"for (p in c({', '.join(repr(p) for p in R_PACKAGES)})) "
            # packageDescription keeps the version as released ("1.1-31");
            # packageVersion would print "1.1.31".
            "cat('', paste0(p, '=', suppressWarnings(utils::packageDescription(p, "
            "fields = 'Version'))))")
    try:
        out = subprocess.run([rscript, "--vanilla", "-e", code], capture_output=True,
                             text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return (("R", None), ("note", f"Rscript failed: {exc}"))
    if out.returncode != 0:
        return (("R", None), ("note", f"Rscript exited {out.returncode}: {out.stderr.strip()[-200:]}"))
    pairs = dict(item.split("=", 1) for item in out.stdout.split() if "=" in item)
    return tuple((k, None if v == "NA" else v) for k, v in pairs.items())


def r_versions(timeout: float = 20.0) -> dict[str, str | None]:
    """R and lme4/lmerTest/emmeans versions via Rscript (cached per process).

    {"R": None, "note": why} when Rscript is absent or fails.
    """
    return dict(_r_versions_cached(timeout))


def git_state(repo_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """Commit and dirty flag of the checkout holding gbstats (None when not a git checkout).

    "dirty" means tracked files differ from the commit; untracked files do
    not count (as with `git describe --dirty`).
    """
    repo_dir = Path(repo_dir) if repo_dir else Path(__file__).resolve().parents[2]
    git = shutil.which("git")
    if git is None:
        return {"commit": None, "dirty": None, "note": "git not found"}
    try:
        commit = subprocess.run([git, "-C", str(repo_dir), "rev-parse", "HEAD"],
                                capture_output=True, text=True, timeout=10, check=True)
        status = subprocess.run([git, "-C", str(repo_dir), "status", "--porcelain",
                                 "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        return {"commit": None, "dirty": None, "note": f"not a git checkout: {exc}"}
    return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}


def file_checksums(paths: Sequence[str | os.PathLike]) -> dict[str, str]:
    """{path: sha256} for data files, ready for `provenance(data_files=...)`."""
    from gbstats.data.registry import sha256_of

    return {os.fspath(p): sha256_of(Path(p)) for p in paths}


def _model_record(model: Any) -> dict:
    if isinstance(model, str):
        return {"id": model, "revision": None}
    if isinstance(model, Mapping) and "id" in model:
        return {"revision": None, **dict(model)}
    raise TypeError(f"a model is given as an id string or a mapping with 'id' (and "
                    f"'revision'), found {model!r}")


_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def provenance(study: str, argv: Sequence[str] | None = None, seed: int | None = None,
               models: Sequence[str | Mapping] = (),
               data_files: Mapping[str | os.PathLike, str] | None = None,
               extra: Mapping | None = None) -> dict:
    """What produced a result: study, versions, git commit, models, data, seed, date, command.

    `argv` defaults to sys.argv. `models` are ids or {"id", "revision", ...}.
    `data_files` maps paths to sha256 hex digests (see `file_checksums`).
    """
    argv = list(sys.argv if argv is None else argv)
    checksums = {}
    for path, digest in (data_files or {}).items():
        if not isinstance(digest, str) or not _SHA256.match(digest):
            raise ValueError(f"data file {os.fspath(path)!r}: expected a sha256 hex digest "
                             f"(64 lowercase hex characters), found {digest!r}")
        checksums[os.fspath(path)] = digest
    from gbstats import __version__

    return {
        "study": study,
        "gbstats_version": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": package_versions(),
        "r": r_versions(),
        "git": git_state(),
        "models": [_model_record(m) for m in models],
        "data_files": checksums,
        "seed": None if seed is None else int(seed),
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "argv": argv,
        "command": shlex.join(argv),
        "extra": dict(extra or {}),
    }


# ---------------------------------------------------------------------------
# The study report folder
# ---------------------------------------------------------------------------

SIMULATED = "SIMULATED"
_NAME_OK = re.compile(r"^[A-Za-z0-9_\-]+$")


def _left_out_text(frame: pd.DataFrame, lead: str, when_empty: str) -> str:
    """"<lead>: 12 trials; 3 participants." and the table of reasons, or `when_empty`."""
    if frame.empty:
        return when_empty
    total = frame.groupby("unit", sort=False)["n"].sum()
    summary = "; ".join(f"{n} {unit}" for unit, n in total.items())
    return f"{lead}: {summary}.\n\n" + to_markdown_table(frame.drop(columns="kind"))


class StudyReport:
    """Builds a study's report folder: report.md, results.json, tables/, figures/.

    Blocks appear in report.md in the order they are added. Tables and
    figures are written to disk when added; report.md and results.json by
    `write()`. With `simulated=True` every heading, table caption and figure
    title carries "SIMULATED", so simulated numbers cannot pass for real ones.
    """

    def __init__(self, study: str, out_dir: str | os.PathLike, title: str,
                 simulated: bool = False):
        self.study, self.out_dir, self.simulated = study, Path(out_dir), simulated
        self.title = self._mark(title)
        self.blocks: list[str] = []
        self.tables: dict[str, pd.DataFrame] = {}
        self.table_paths: list[Path] = []
        self.figure_paths: list[Path] = []
        self.exclusion_records: list[dict] = []
        self.warning_list: list[str] = []
        self.twin_records: dict[str, dict] = {}

    def _mark(self, text: str, simulated: bool | None = None) -> str:
        simulated = self.simulated if simulated is None else simulated
        if simulated and SIMULATED not in text:
            return f"{SIMULATED}: {text}"
        return text

    def _check_name(self, name: str, kind: str, taken) -> None:
        if not _NAME_OK.match(name):
            raise ValueError(f"{kind} name {name!r} becomes a file name: use letters, digits, _ and -")
        if name in taken:
            raise ValueError(f"{kind} {name!r} was already added to this report")

    def section(self, heading: str, text: str = "",
                simulated: bool | None = None) -> "StudyReport":
        """`simulated` overrides the report's flag for this block: a study that
        mixes real model scores with a simulated human panel marks only the
        blocks built from the panel."""
        heading = self._mark(heading, simulated)
        self.blocks.append(f"## {heading}\n\n{text.strip()}\n" if text.strip()
                           else f"## {heading}\n")
        return self

    def table(self, name: str, df: pd.DataFrame, caption: str, label: str | None = None,
              digits: int = 3, simulated: bool | None = None, **latex_options) -> Path:
        """Write tables/<name>.tex, show the table in report.md, keep it for results.json.

        `latex_options` go to `to_latex_table` (columns, column_labels,
        p_columns, notes); results.json always gets every column, unformatted.
        """
        self._check_name(name, "table", self.tables)
        caption = self._mark(caption, simulated)
        tex = to_latex_table(df, caption, label or f"tab:{name}", digits, **latex_options)
        path = self.out_dir / "tables" / f"{name}.tex"
        _write_text_atomically(path, tex)
        markdown_options = {k: v for k, v in latex_options.items()
                            if k in ("columns", "column_labels", "p_columns")}
        md = to_markdown_table(df, digits, **markdown_options)
        self.blocks.append(f"**Table: {caption}** ([LaTeX](tables/{name}.tex))\n\n{md}")
        self.tables[name] = df.copy()
        self.table_paths.append(path)
        return path

    def fit_table(self, name: str, fits: Mapping, caption: str, **options) -> Path:
        """The coefficients of {backend label: FitResult} as one table (stack_fits), whose caption
        ends by saying how each factor is coded (gbstats.mixed.fitting.coding_note): which
        level is +1 / -1, the reference level or the matrix, so every term name reads alone.
        Its notes say what the fits themselves flagged (gbstats.mixed.fitting.table_notes:
        lme4's singular-fit and convergence warnings, separation, each Bayesian twin's
        convergence figures and priors), after any `notes` given. `options` go to `table`."""
        from gbstats.mixed.fitting import coding_note, stack_fits, table_notes

        note = coding_note(fits)
        caption = f"{caption.rstrip('.')}. {note}" if note else caption
        notes = list(options.pop("notes", None) or []) + table_notes(fits)
        return self.table(name, stack_fits(fits), caption, notes=notes or None, **options)

    def figure(self, name: str, fig, caption: str, simulated: bool | None = None,
               **savefig_options) -> Path:
        """Write figures/<name>.png (see gbstats.report.figures.savefig) and show it in report.md."""
        from gbstats.report.figures import figure_style, savefig

        self._check_name(name, "figure", {p.stem for p in self.figure_paths})
        if self.simulated if simulated is None else simulated:
            title = fig.get_suptitle()
            with figure_style():
                fig.suptitle(self._mark(title, True) if title else f"{SIMULATED} data")
        caption = self._mark(caption, simulated)
        path = savefig(fig, self.out_dir / "figures" / f"{name}.png", **savefig_options)
        self.blocks.append(f"![{_CONTROL.sub(' ', caption)}](figures/{name}.png)\n\n"
                           f"*Figure: {caption}*\n")
        self.figure_paths.append(path)
        return path

    def exclusions(self, log, heading: str = "Exclusions",
                   simulated: bool | None = None) -> "StudyReport":
        """A section listing every exclusion in `log` (an ExclusionLog) with reason and count.

        Rows left out by the design's choice (`ExclusionLog.select`) are listed
        apart, under "Selected by design", and never counted as excluded: a
        subset the analysis is about is not data lost.
        """
        from gbstats.exclusions import SELECTED

        frame = log.to_frame()
        self.exclusion_records.extend(log.to_records())
        selected = frame["kind"] == SELECTED
        parts = [_left_out_text(frame[~selected], "Excluded in total", "No rows were excluded."),
                 _left_out_text(frame[selected], "Selected by design (the analysis's chosen "
                                "subset, not data loss); left out", "")]
        return self.section(heading, "\n\n".join(p for p in parts if p), simulated)

    def warnings(self, warnings: Sequence[str], heading: str = "Warnings",
                 simulated: bool | None = None) -> "StudyReport":
        """A section listing fit warnings (convergence, singular fit, R-hat...) verbatim."""
        items = [_CONTROL.sub(" ", str(w)) for w in warnings]
        self.warning_list.extend(items)
        text = "\n".join(f"- {w}" for w in items) if items else "No warnings."
        return self.section(heading, text, simulated)

    def bayes_twins(self, twins: Mapping[str, Mapping], heading: str = "Bayesian twins",
                    simulated: bool | None = None) -> "StudyReport":
        """A section with each Bayesian twin's convergence figures (R-hat, bulk
        and tail ESS, divergences: `gbstats.mixed.bayes.diagnostics`) and the
        priors it used; results.json gets them under "bayes_twins". Nothing is
        added when there are no twins."""
        if not twins:
            return self
        self.twin_records.update({k: dict(v) for k, v in twins.items()})
        rows = pd.DataFrame([{"model": what, "converged": "yes" if rec.get("converged") else "NO",
                              "rhat_max": rec.get("rhat_max"), "ess_bulk_min": rec.get("ess_bulk_min"),
                              "ess_tail_min": rec.get("ess_tail_min"),
                              "divergences": rec.get("divergences"), "draws": rec.get("n_draws"),
                              "chains": rec.get("n_chains")} for what, rec in twins.items()])
        text = ["Convergence of every Bayesian twin over its reported parameters (fixed "
                "effects, group-level SDs, residual SD); the figures needed are R-hat <= 1.01, "
                "bulk and tail ESS >= 400 and no divergent transitions. A twin marked NO is "
                "not converged: its estimates are not reliable.", "",
                to_markdown_table(rows, columns=list(rows.columns),
                                  column_labels={"model": "Model", "converged": "Converged",
                                                 "rhat_max": "R-hat max",
                                                 "ess_bulk_min": "Bulk ESS min",
                                                 "ess_tail_min": "Tail ESS min",
                                                 "divergences": "Divergences",
                                                 "draws": "Draws", "chains": "Chains"}),
                "Priors:", ""]
        for what, rec in twins.items():
            priors = "; ".join(f"`{t}` ~ {p}" for t, p in (rec.get("priors") or {}).items())
            text.append(f"- {what}: {priors}")
        sources = sorted({rec["prior_source"] for rec in twins.values() if rec.get("prior_source")})
        if sources:
            text += ["", "Default priors: " + " ".join(sources) + "."]
        return self.section(heading, "\n".join(text), simulated)

    def _provenance_block(self, prov: Mapping) -> str:
        git = prov.get("git") or {}
        commit = git.get("commit") or "unknown"
        dirty = " (with uncommitted changes)" if git.get("dirty") else ""
        lines = [f"- study: {prov.get('study', self.study)}",
                 f"- gbstats {prov.get('gbstats_version')}, git commit {commit}{dirty}",
                 f"- date (UTC): {prov.get('date_utc')}",
                 f"- seed: {prov.get('seed')}",
                 f"- command: `{prov.get('command', '')}`"]
        for m in prov.get("models", []):
            lines.append(f"- model: {m.get('id')} (revision {m.get('revision')})")
        lines.append("- full provenance (versions, data checksums): results.json")
        return f"## {self._mark('Provenance')}\n\n" + "\n".join(lines) + "\n"

    def write(self, provenance: Mapping) -> dict[str, Path]:
        """Write report.md and results.json; return the paths of everything written."""
        notice = ([f"> **{SIMULATED} DATA.** Tables and figures marked {SIMULATED} come from a "
                   "documented simulation, not from real observations; their numbers "
                   "illustrate the method only.\n"]
                  if self.simulated else [])
        parts = [f"# {self.title}\n", *notice, *self.blocks, self._provenance_block(provenance)]
        report = self.out_dir / "report.md"
        _write_text_atomically(report, "\n".join(parts))
        results = write_results_json(
            self.out_dir / "results.json", provenance, self.tables,
            extra={"study": self.study, "title": self.title, "simulated": self.simulated,
                   "exclusions": self.exclusion_records, "warnings": self.warning_list,
                   "bayes_twins": self.twin_records})
        return {"report": report, "results": results,
                **{f"table:{p.stem}": p for p in self.table_paths},
                **{f"figure:{p.stem}": p for p in self.figure_paths}}


# ---------------------------------------------------------------------------
# Output paths: checked before any work, written all at once
# ---------------------------------------------------------------------------

PARTIAL_TAG = ".partial-"


def _os_reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _probe_folder(folder: Path, flag: str, shown: Path) -> None:
    """Create `folder` (with its parents) and write and remove one file in it."""
    ancestor = folder
    while not ancestor.exists() and ancestor.parent != ancestor:
        ancestor = ancestor.parent
    if ancestor.exists() and not ancestor.is_dir():
        raise OutputPathError(f"{flag} {shown} lies under {ancestor}, which is a file; "
                              f"expected a path under a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".gbstats-write-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OutputPathError(
            f"{flag} {shown}: cannot write into {folder} ({_os_reason(exc)}); expected a "
            f"folder this user can create and write, for example under your home or the "
            f"current folder") from None


def check_output_file(path: str | os.PathLike, *, inputs: Sequence[str | os.PathLike] = (),
                      flag: str = "--out") -> Path:
    """Refuse an output file that is an input (after resolving links and `..`) or that cannot
    be written, before any model or data is loaded; returns the path."""
    path = Path(path)
    resolved = path.expanduser().resolve()
    for given in inputs:
        source = Path(given).expanduser()
        same = resolved == source.resolve()
        if not same and resolved.exists() and source.exists():
            same = os.path.samefile(resolved, source)  # a hard link is the same file too
        if same:
            raise OutputPathError(f"{flag} {path} is the input file {given}: writing it would "
                                  f"destroy the input; expected a different output file")
    if resolved.is_dir():
        raise OutputPathError(f"{flag} {path} is a folder; expected a file name such as "
                              f"{path / 'scores.csv'}")
    _probe_folder(resolved.parent, flag, path)
    return path


def check_output_folder(path: str | os.PathLike, *, flag: str = "--out") -> Path:
    """Refuse an output folder that cannot be written or must not be replaced, before any work.

    A study's outputs are written into a hidden sibling of the folder and swapped into
    place at the end (`staged_folder`), so the parent must be writable, and an existing
    folder is replaced as a whole: that is refused unless it is empty or a previous
    report (it holds results.json), so that `--out .` cannot delete a user's files.
    """
    path = Path(path)
    resolved = path.expanduser().resolve()
    if resolved.parent == resolved:
        raise OutputPathError(f"{flag} {path} is the file system root; expected a folder")
    if resolved.exists() and not resolved.is_dir():
        raise OutputPathError(f"{flag} {path} is an existing file; expected a folder")
    if resolved.is_dir():
        try:
            entries = [e.name for e in resolved.iterdir()]
        except OSError as exc:
            raise OutputPathError(f"{flag} {path}: cannot read the folder "
                                  f"({_os_reason(exc)})") from None
        if entries and "results.json" not in entries:
            shown = ", ".join(sorted(entries)[:5]) + (", ..." if len(entries) > 5 else "")
            raise OutputPathError(
                f"{flag} {path} holds files that are not a gbstats report ({shown}); the run "
                f"replaces its output folder as a whole, so expected a new folder, an empty "
                f"one, or a previous report folder (with results.json)")
    _probe_folder(resolved.parent, flag, path)
    return path


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_partials(out: Path) -> list[Path]:
    """Remove the hidden staging folders that killed runs left beside `out` (their pid is gone)."""
    removed = []
    for candidate in out.parent.glob(f".{out.name}{PARTIAL_TAG}*"):
        pid_text = candidate.name[len(f".{out.name}{PARTIAL_TAG}"):].split("-", 1)[0]
        if pid_text.isdigit() and not _pid_alive(int(pid_text)) and candidate.is_dir():
            shutil.rmtree(candidate, ignore_errors=True)
            removed.append(candidate)
    return removed


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    import ctypes
    import errno

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(a))


def publish_folder(staging: Path, out: Path) -> None:
    """Put the finished `staging` folder in place of `out`.

    Readers see the old folder or the new one, never a mix: with an existing `out`
    the two are exchanged in one rename (Linux); elsewhere `out` is first moved aside,
    so for an instant there is no folder, but never a half-written one.
    """
    if not out.exists():
        os.rename(staging, out)
        return
    if _exchange(staging, out):
        shutil.rmtree(staging, ignore_errors=True)  # now holds the old outputs
        return
    old = staging.with_name(staging.name + "-old")
    os.rename(out, old)
    os.rename(staging, out)
    shutil.rmtree(old, ignore_errors=True)


class staged_folder:
    """`with staged_folder(out) as staging:` write everything into `staging`; on success it
    replaces `out` (see `publish_folder`); on an error it is removed and `out` is untouched.
    A killed run leaves only a hidden `.<name>.partial-<pid>-*` sibling, removed by the
    next run."""

    def __init__(self, out: str | os.PathLike):
        self.out = Path(out).expanduser().resolve()
        self.staging: Path | None = None

    def __enter__(self) -> Path:
        try:
            self.out.parent.mkdir(parents=True, exist_ok=True)
            remove_stale_partials(self.out)
            self.staging = Path(tempfile.mkdtemp(
                prefix=f".{self.out.name}{PARTIAL_TAG}{os.getpid()}-", dir=self.out.parent))
            follow_umask(self.staging, directory=True)
        except OSError as exc:
            raise OutputPathError(f"cannot create a folder beside {self.out} "
                                  f"({_os_reason(exc)})") from None
        return self.staging

    def __exit__(self, kind, exc, tb) -> bool:
        if kind is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            return False
        try:
            publish_folder(self.staging, self.out)
        except OSError as err:
            shutil.rmtree(self.staging, ignore_errors=True)
            raise OutputPathError(f"cannot put the finished outputs in place at {self.out} "
                                  f"({_os_reason(err)})") from None
        return False

"""LaTeX: booktabs tables that print every cell, header, caption and note literally."""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from gbstats.report.formatting import (CONTROL_CHARS, MISSING, format_cells, header_labels,
                                       is_numeric_column, table_frame)

LATEX_ESCAPES = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "_": r"\_", "%": r"\%",
    "&": r"\&", "#": r"\#", "$": r"\$", "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
    "|": r"\textbar{}",
}
_LATEX_SPECIAL = re.compile("[" + re.escape("".join(LATEX_ESCAPES)) + "]")
_LABEL_OK = re.compile(r"^[A-Za-z0-9:_.\-/]+$")


def escape_latex(text: Any) -> str:
    """`text` as LaTeX that prints it literally (specials escaped, control chars -> space).

    Non-ASCII letters pass through: pdflatex reads UTF-8 and prints accented
    Latin letters; other scripts need xelatex/lualatex.
    """
    text = CONTROL_CHARS.sub(" ", str(text))
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
    frame = table_frame(df, columns)
    cells = format_cells(frame, digits, p_columns)
    kind = {c: "p" if c in p_columns else "number" if is_numeric_column(frame[c]) else "text"
            for c in frame.columns}
    spec = "".join("l" if kind[c] == "text" else "r" for c in frame.columns)
    header = _latex_row(escape_latex(h) for h in header_labels(frame.columns, column_labels))
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

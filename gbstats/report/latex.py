"""LaTeX: booktabs tables that print every cell, header, caption and note literally.

`render_latex` typesets a `PresentedTable` (gbstats.report.table_grammar):
booktabs rules, numbers in siunitx `S` columns aligned on the decimal point,
p-values and intervals right-aligned (their decimals are fixed, so their points
line up too), text left-aligned, row groups and panels as italic headings, and the
notes set at the table's width beneath it (as threeparttable does, without needing
it). A table needs `TABLE_PACKAGES` (booktabs and siunitx; pdflscape too when set
landscape). `to_latex_table` is the one-call form for a DataFrame.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from gbstats.report.formatting import CONTROL_CHARS, MISSING
from gbstats.report.table_grammar import (TEXT_WIDTH_PT, Column, Part, PresentedTable,
                                          estimated_width, present)

# The packages every table needs (tables/tables.tex loads them).
TABLE_PACKAGES = ("booktabs", "siunitx")
# (a table too tall for a page needs longtable too: LONGTABLE_PACKAGE, below)
LANDSCAPE_PACKAGE = "pdflscape"

LATEX_ESCAPES = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "_": r"\_", "%": r"\%",
    "&": r"\&", "#": r"\#", "$": r"\$", "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
    "|": r"\textbar{}",
    # Quotes print as typed, not as curly quotes: ' and ` would pair into ‘ ’, and " is
    # ” in LaTeX's default font encoding (OT1 has no straight double quote; the
    # typewriter font's is used, which T1 documents print the same way).
    "'": r"\textquotesingle{}", "`": r"\textasciigrave{}", '"': r"{\ttfamily\char34}",
}
_LATEX_SPECIAL = re.compile("[" + re.escape("".join(LATEX_ESCAPES)) + "]")
# "--" and "---" would become en and em dashes, ",," a low quote (T1): an empty group
# between the characters stops the ligature.
_LIGATURE = re.compile(r"([-,])(?=\1)")
# Characters pdflatex's UTF-8 input does not know, as LaTeX commands that work in both
# the OT1 and T1 encodings.
LATEX_SYMBOLS = {
    "∞": r"\ensuremath{\infty}", "−": r"\ensuremath{-}", "≤": r"\ensuremath{\leq}",
    "≥": r"\ensuremath{\geq}", "≠": r"\ensuremath{\neq}", "≈": r"\ensuremath{\approx}",
    "α": r"\ensuremath{\alpha}", "β": r"\ensuremath{\beta}", "γ": r"\ensuremath{\gamma}",
    "δ": r"\ensuremath{\delta}", "Δ": r"\ensuremath{\Delta}", "ε": r"\ensuremath{\varepsilon}",
    "η": r"\ensuremath{\eta}", "θ": r"\ensuremath{\theta}", "κ": r"\ensuremath{\kappa}",
    "λ": r"\ensuremath{\lambda}", "μ": r"\ensuremath{\mu}", "ν": r"\ensuremath{\nu}",
    "π": r"\ensuremath{\pi}", "ρ": r"\ensuremath{\rho}", "σ": r"\ensuremath{\sigma}",
    "τ": r"\ensuremath{\tau}", "φ": r"\ensuremath{\phi}", "χ": r"\ensuremath{\chi}",
    "ψ": r"\ensuremath{\psi}", "ω": r"\ensuremath{\omega}", "Σ": r"\ensuremath{\Sigma}",
    "†": r"\textdagger{}", "‡": r"\textdaggerdbl{}", "…": r"\ldots{}",
    "√": r"\ensuremath{\surd}", "×": r"\ensuremath{\times}",
    # ranges (rank sets "1–3") and dashes: pdflatex's default OT1 font prints U+2013 as
    # "<U+2013>" without these
    "–": r"\textendash{}", "—": r"\textemdash{}",
}
# Combining marks that survive NFC normalisation (no precomposed letter exists, e.g.
# x + U+0301) become LaTeX's accent commands over the character before them; those that
# work in both OT1 and T1. Any other combining mark is left out of the LaTeX (the
# Markdown and results.json keep the text as it was).
LATEX_ACCENTS = {"\u0300": "`", "\u0301": "'", "\u0302": "^", "\u0303": "~", "\u0304": "=",
            "\u0306": "u", "\u0307": ".", "\u0308": '"', "\u030a": "r", "\u030b": "H",
            "\u030c": "v", "\u0323": "d", "\u0327": "c", "\u0331": "b"}
_LABEL_OK = re.compile(r"^[A-Za-z0-9:_.\-/]+$")


def escape_latex(text: Any, prose: bool = False) -> str:
    """`text` as LaTeX that prints it literally: specials escaped, control characters as
    spaces, no ligatures ("--" stays two hyphens, quotes stay straight), Unicode in NFC
    with any combining mark left over as an accent command.

    `prose=True` (captions and notes, which studies write as sentences) typesets quotes
    as a typesetter would instead: an apostrophe as ’ and double quotes as “...”.
    Accented Latin letters pass through (pdflatex reads UTF-8); a few symbols (∞, ≤,
    Greek letters) become math; other scripts need xelatex/lualatex.
    """
    text = unicodedata.normalize("NFC", CONTROL_CHARS.sub(" ", str(text)))
    pieces: list[str] = []
    double_quotes = 0
    for char in text:
        if prose and char == "'":
            pieces.append("'")
            continue
        if prose and char == '"':
            pieces.append("``" if double_quotes % 2 == 0 else "''")
            double_quotes += 1
            continue
        if unicodedata.combining(char):
            accent = LATEX_ACCENTS.get(char)
            if accent is not None:
                base = pieces.pop() if pieces and pieces[-1] != " " else ""
                pieces.append(f"\\{accent}{{{base}}}")
            continue  # a mark LaTeX has no accent for: left out (see above)
        if char in LATEX_ESCAPES:
            pieces.append(LATEX_ESCAPES[char])
        elif char in LATEX_SYMBOLS:
            pieces.append(LATEX_SYMBOLS[char])
        else:
            pieces.append(char)
    return _LIGATURE.sub(r"\1{}", "".join(pieces))


_CODE_SPAN = re.compile(r"`([^`]+)`")


def markdown_to_latex(text: Any) -> str:
    """Caption or note text (Markdown) as LaTeX: code spans (`y ~ x + (1|g)`) become
    \\texttt{} and everything else prints literally (escape_latex, inside the spans too).

    A caption is written once for report.md and tables/*.tex, so it is Markdown;
    a backtick with no partner is kept as text. Outside code spans quotes are typeset as
    prose (escape_latex's `prose`); inside, every character prints as typed.
    """
    text = str(text)
    pieces, last = [], 0
    for span in _CODE_SPAN.finditer(text):
        pieces.append(escape_latex(text[last:span.start()], prose=True))
        pieces.append(r"\texttt{" + escape_latex(span.group(1)) + "}")
        last = span.end()
    pieces.append(escape_latex(text[last:], prose=True))
    return "".join(pieces)


# ---------------------------------------------------------------------------
# cells

_NUMBER_CELL = re.compile(r"^(?P<pre>\(?)(?P<sign>-?)(?P<int>\d+)(?:\.(?P<dec>\d+))?"
                          r"(?P<post>\)?\**[†‡]?)$")


def _number_cell(cell: str) -> str:
    """A cell of an S column: the number for siunitx, its brackets and stars as text."""
    match = _NUMBER_CELL.match(cell)
    if not match:
        return _text_in_s(cell)
    number = f"{match['sign']}{match['int']}" + (f".{match['dec']}" if match["dec"] else "")
    pre = "{(}" if match["pre"] else ""
    post = "{" + escape_latex(match["post"]) + "}" if match["post"] else ""
    return pre + number + post


def _text_in_s(cell: str) -> str:
    if cell == "":
        return "{}"
    if cell == MISSING:
        return "{--}"
    return "{" + _minus_signs(escape_latex(cell)) + "}"


def _minus_signs(tex: str) -> str:
    # a hyphen before a digit in a number is a minus sign
    return re.sub(r"(?<![\w}])-(?=\d)", r"\\ensuremath{-}", tex)


def _plain_cell(cell: str, kind: str) -> str:
    if cell == MISSING:
        return MISSING  # "--" is an en dash in LaTeX, as papers show missing cells
    if kind == "p":
        return r"$<$\,.001" if cell == "< .001" else escape_latex(cell)
    if kind == "interval":
        return _minus_signs(escape_latex(cell))
    return escape_latex(cell)


def _s_format(cells: Sequence[str]) -> str | None:
    """siunitx options for an S column holding `cells`, or None when no cell is a number."""
    numbers = [m for m in map(_NUMBER_CELL.match, cells) if m]
    if not numbers:
        return None
    integer = max(len(m["int"]) for m in numbers)
    decimals = max(len(m["dec"] or "") for m in numbers)
    sign = "-" if any(m["sign"] for m in numbers) else ""
    fmt = f"{sign}{integer}" + (f".{decimals}" if decimals else "")
    options = [f"table-format={fmt}", "group-digits=none"]
    pre = any(m["pre"] for m in numbers)
    post = max((m["post"] for m in numbers), key=len)
    if pre or post:
        options += ["table-align-text-before=false", "table-align-text-after=false"]
    if pre:
        options.append("table-space-text-pre={(}")
    if post:
        options.append("table-space-text-post={" + escape_latex(post) + "}")
    return "S[" + ", ".join(options) + "]"


def _column_spec(column: Column) -> tuple[str, bool]:
    """(the column's tabular spec, whether it is an siunitx S column)."""
    if column.kind in ("number", "count", "model"):
        spec = _s_format(column.cells)
        if spec is not None:
            return spec, True
        return "c", False
    if column.kind in ("p", "interval"):
        return "r", False
    return "l", False


def _header(text: str, align: str) -> str:
    """A header cell; a long header of several words breaks into two lines."""
    words = text.split()
    if len(text) <= 12 or len(words) < 2:
        return escape_latex(text)
    best = min(range(1, len(words)),
               key=lambda k: abs(len(" ".join(words[:k])) - len(" ".join(words[k:]))))
    top, bottom = " ".join(words[:best]), " ".join(words[best:])
    return (f"\\begin{{tabular}}[b]{{@{{}}{align}@{{}}}}{escape_latex(top)}\\\\"
            f"{escape_latex(bottom)}\\end{{tabular}}")


def _latex_row(cells) -> str:
    row = " & ".join(cells)
    # The \\ ending the previous row (and \midrule) looks past spaces and the
    # newline for "[" (an optional length) and "*": a row starting with
    # either would be eaten as that argument. An empty group stops the look.
    if row.lstrip().startswith(("[", "*")):
        row = "{}" + row
    return row + r" \\"


def _tabular(part: Part) -> list[str]:
    specs = [_column_spec(c) for c in part.columns]
    lines = [f"\\begin{{tabular}}{{@{{}}{''.join(s for s, _ in specs)}@{{}}}}", r"\toprule"]
    spans = [c.span for c in part.columns]
    if any(spans):
        cells, rules, i = [], [], 0
        while i < len(spans):
            j = i
            while j + 1 < len(spans) and spans[j + 1] == spans[i]:
                j += 1
            width = j - i + 1
            if spans[i]:
                cells.append(f"\\multicolumn{{{width}}}{{c}}{{{escape_latex(spans[i])}}}")
                rules.append(f"\\cmidrule(lr){{{i + 1}-{j + 1}}}")
            else:
                cells += [""] * width
            i = j + 1
        lines += [_latex_row(cells), "".join(rules)]
    header = []
    for column, (spec, is_s) in zip(part.columns, specs):
        align = "l" if spec == "l" else "r" if spec == "r" else "c"
        text = _header(column.label, align)
        header.append("{" + text + "}" if is_s else text)
    lines += [_latex_row(header), r"\midrule"]
    width = len(part.columns)
    for row in range(part.n_rows):
        if row in part.headings:
            if row > 0:
                lines.append(r"\midrule" if row in part.rules else r"\addlinespace")
            lines.append(_latex_row([f"\\multicolumn{{{width}}}{{@{{}}l}}"
                                     f"{{\\textit{{{escape_latex(part.headings[row])}}}}}"]))
        cells = []
        for column, (_, is_s) in zip(part.columns, specs):
            cell = column.cells[row]
            cells.append(_number_cell(cell) if is_s else _plain_cell(cell, column.kind))
        lines.append(_latex_row(cells))
    lines += [r"\bottomrule", r"\end{tabular}"]
    return lines


# How wide the notes may become under a narrow table: a share of the text width, so that
# a two-column table does not get a column of notes one word wide.
NOTES_MIN_WIDTH = 0.6
# Space between a caption and the table's top rule (LaTeX's article class leaves none
# below a caption set above its table), and none above it.
CAPTION_SKIP = r"\setlength{\abovecaptionskip}{0pt}\setlength{\belowcaptionskip}{6pt}"
# A table wider than the text block is set again in smaller type, with narrower gaps
# between columns, before it is allowed to run into the margin (issue 43: every table fits
# a 6.5-inch text block).
SHRINK_STEPS = (r"\small", r"\footnotesize\setlength{\tabcolsep}{4pt}",
                r"\scriptsize\setlength{\tabcolsep}{3pt}")
# A table taller than this (in points, as `estimated_height` counts) is set as a longtable
# that breaks across pages with its header repeated, instead of a float too large for the
# page (a 9-inch text block holds 650 pt).
LONG_TABLE_PT = 600.0
LONGTABLE_PACKAGE = "longtable"


def estimated_height(table: PresentedTable) -> float:
    """About how tall `table` is set at 11 pt, in points: 14 pt a row, 17 a group heading,
    35 a header, 30 the caption, and 9.5 a line of notes, which run as wide as the widest
    part (at least NOTES_MIN_WIDTH of the 6.5-inch line; about 125 characters a full line)."""
    rows = sum(part.n_rows + 1.2 * len(part.headings) + 2.5 for part in table.parts)
    widest = max((estimated_width(part) for part in table.parts), default=0.0)
    share = min(1.0, max(NOTES_MIN_WIDTH, widest / TEXT_WIDTH_PT))
    notes = sum(len(n) + 1 for n in table.notes) / (125 * share) + (1 if table.notes else 0)
    return 14 * rows + 9.5 * notes + 30


def is_long(table: PresentedTable) -> bool:
    """Whether `table` is set as a longtable (`LONG_TABLE_PT`), in portrait and smaller type
    even where it was to be landscape: a landscape page holds fewer rows still."""
    return estimated_height(table) > LONG_TABLE_PT


# A table set landscape is a large one: its type starts at this size, so that its rows fit
# the landscape page's 6.5-inch height too.
LANDSCAPE_TYPE = r"\footnotesize"


def _fit_to_width(box: int, start: str = "") -> list[str]:
    r"""Set \gbstatspart into \box`box` (in `start` type), in smaller type while it is wider
    than the line."""
    lines = [f"\\setbox{box}=\\hbox{{{start}\\gbstatspart}}%"]
    lines += [f"\\ifdim\\wd{box}>\\linewidth \\setbox{box}=\\hbox{{{size}\\gbstatspart}}\\fi"
              for size in SHRINK_STEPS]
    return lines


def render_latex(table: PresentedTable, allow_long: bool = True) -> str:
    """A standalone `table` float for a PresentedTable (needs TABLE_PACKAGES); a table too
    tall for a page is a longtable instead (`is_long`; needs LONGTABLE_PACKAGE too)."""
    if table.label is not None and not _LABEL_OK.match(table.label):
        raise ValueError(f"LaTeX label {table.label!r} may only contain letters, digits "
                         "and : _ . - /")
    if allow_long and is_long(table):
        return _render_longtable(table)
    packages = [*TABLE_PACKAGES] + ([LANDSCAPE_PACKAGE] if table.landscape else [])
    lines = [f"% gbstats table; needs \\usepackage{{{','.join(packages)}}}"]
    if table.landscape:
        lines.append(r"\begin{landscape}")
    lines += [r"\begin{table}[htbp]", r"\centering", CAPTION_SKIP,
              f"\\caption{{{markdown_to_latex(table.caption)}}}"]
    if table.label is not None:
        lines.append(f"\\label{{{table.label}}}")
    # Each part is typeset in a box first (in smaller type if it is too wide), so that the
    # notes can be set at the width of the widest part (TeX's scratch registers \box0, 2,
    # 4... and \dimen0, local to the table's group).
    lines.append(r"\begingroup")
    boxes = []
    for number, part in enumerate(table.parts):
        box = 2 * number
        boxes.append(box)
        lines += [r"\def\gbstatspart{%", *_tabular(part), "}%",
                  *_fit_to_width(box, LANDSCAPE_TYPE if table.landscape else "")]
    lines.append(r"\dimen0=\wd0")
    for box in boxes[1:]:
        lines.append(f"\\ifdim\\wd{box}>\\dimen0 \\dimen0=\\wd{box}\\fi")
    if table.notes:
        lines.append(f"\\ifdim\\dimen0<{NOTES_MIN_WIDTH}\\linewidth "
                     f"\\dimen0={NOTES_MIN_WIDTH}\\linewidth\\fi")
    lines.append(r"\begin{minipage}{\dimen0}")
    for i, box in enumerate(boxes):
        if i:
            lines.append(r"\par\medskip")
        lines.append(f"\\hbox to\\linewidth{{\\hss\\box{box}\\hss}}")
    if table.notes:
        lines += [r"\par\smallskip\footnotesize\raggedright",
                  r"\textit{Note.} " + " ".join(_note_latex(n) for n in table.notes)]
    lines += [r"\end{minipage}", r"\endgroup", r"\end{table}"]
    if table.landscape:
        lines.append(r"\end{landscape}")
    return "\n".join(lines) + "\n"


def _render_longtable(table: PresentedTable) -> str:
    """A table too tall for a page as a longtable per part: the caption on the first, the
    header repeated on every page, "continued" at the foot of all but the last page, and
    the notes after the last part at the text width. The type size is chosen as a float's
    is, from the part set as a tabular (`_fit_to_width`)."""
    packages = [*TABLE_PACKAGES, LONGTABLE_PACKAGE]
    # \clearpage first: the floats before it are set first, so that the tables keep their
    # numbers' order, and the long table starts at the top of a page
    lines = [f"% gbstats table (long: it breaks across pages); needs "
             f"\\usepackage{{{','.join(packages)}}}", r"\clearpage", r"\begingroup",
             CAPTION_SKIP]
    for number, part in enumerate(table.parts):
        head, body = _tabular_pieces(part)
        specs = head[0]
        width = len(part.columns)
        # the part set as a tabular finds the type size that fits; the longtable uses it
        lines += [r"\def\gbstatspart{%", *_tabular(part), "}%",
                  r"\setbox0=\hbox{\gbstatspart}%", r"\def\gbstatssize{}%"]
        for size in SHRINK_STEPS:
            lines.append(f"\\ifdim\\wd0>\\linewidth \\def\\gbstatssize{{{size}}}"
                         f"\\setbox0=\\hbox{{{size}\\gbstatspart}}\\fi")
        lines += [r"{\gbstatssize", f"\\begin{{longtable}}{{{specs}}}"]
        if number == 0:
            lines.append(f"\\caption{{{markdown_to_latex(table.caption)}}}"
                         + (f"\\label{{{table.label}}}" if table.label is not None else "")
                         + r"\\")
        lines += [r"\toprule", *head[1:], r"\endfirsthead",
                  _latex_row([f"\\multicolumn{{{width}}}{{@{{}}l}}{{\\textit{{Table "
                              f"\\thetable{{}} (continued)}}}}"]),
                  r"\toprule", *head[1:], r"\endhead",
                  r"\midrule",
                  _latex_row([f"\\multicolumn{{{width}}}{{r@{{}}}}{{\\textit{{(continued on "
                              f"the next page)}}}}"]),
                  r"\endfoot", r"\bottomrule", r"\endlastfoot", *body,
                  r"\end{longtable}}"]
    if table.notes:
        lines += [r"{\footnotesize\raggedright\noindent",
                  r"\textit{Note.} " + " ".join(_note_latex(n) for n in table.notes) + r"\par}",
                  r"\bigskip"]
    lines.append(r"\endgroup")
    return "\n".join(lines) + "\n"


def _tabular_pieces(part: Part) -> tuple[list[str], list[str]]:
    r"""([column spec, header lines...], body lines) of `part`'s tabular (`_tabular`), the
    header up to and including its \midrule, the body without the closing rule."""
    lines = _tabular(part)
    spec = lines[0][len(r"\begin{tabular}{"):-1]
    header_end = lines.index(r"\midrule")
    return [spec, *lines[2:header_end + 1]], lines[header_end + 1:-2]


def _note_latex(note: str) -> str:
    tex = markdown_to_latex(note)
    if note.startswith("SIMULATED"):
        head, sep, rest = tex.partition(":")
        return f"\\textbf{{{head}}}{sep}{rest}"
    return tex


def to_latex_table(df: pd.DataFrame, caption: str, label: str | None, digits: int | None = None,
                   columns: Sequence[str] | None = None,
                   column_labels: Mapping[str, str] | None = None,
                   p_columns: Sequence[str] = ("p_value",),
                   notes: str | Sequence[str] | None = None) -> str:
    """A standalone booktabs `table` for `df` as it is (needs TABLE_PACKAGES).

    The cells follow the table grammar's digits by kind (gbstats.report.table_grammar:
    fixed decimals per number column, `digits` to set them; integers for counts;
    APA p-values for the columns in `p_columns`), headers take `column_labels` and the
    house words, and cells, headers, caption and notes print literally (Markdown code
    spans in the caption and notes become \\texttt{}). Unlike `StudyReport.table` no
    column is moved, merged or split: the table shows `df`'s columns (or `columns`).
    `label` (e.g. "tab:lmm") may be None for no \\label.
    """
    if label is not None and not _LABEL_OK.match(label):
        raise ValueError(f"LaTeX label {label!r} may only contain letters, digits and : _ . - /")
    note_list = [notes] if isinstance(notes, str) else list(notes or [])
    kinds = {c: "p" for c in p_columns if c in getattr(df, "columns", [])}
    table = present(df, caption, label=label, labels=column_labels, kinds=kinds,
                    decimals=digits, columns=columns, notes=note_list, settings_to_notes=False,
                    split=False, short_caption=False, intervals=False)
    # the one-call form needs only TABLE_PACKAGES: never landscape (pdflscape), whatever
    # its width
    table.landscape = False
    return render_latex(table, allow_long=False)

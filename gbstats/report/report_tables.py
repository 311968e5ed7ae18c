"""Read back the tables of a written report (report.md) and check them against the house
grammar (gbstats.report.table_grammar), and its appendix (tables/tables.tex) against pdflatex.

`report_tables(report_md)` returns every table block of report.md ("**Table: caption**", one
Markdown table per part, "*Note.* ..."): what a reader sees, the same cells as the LaTeX.
`table_problems(table)` lists how one breaks the grammar; `report_problems(folder)` does it
for a whole report folder, appendix included. The study tests run it over every study
(tests/studies/test_study_tables.py), so a study whose tables are not yet in words fails.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from gbstats.report.table_grammar import (MAX_COLUMNS, caption_problems, cell_problems,
                                          decimals_of, header_problems, prose_problems,
                                          simulated_problems, states_n, APA_P)

_CAPTION = re.compile(r"^\*\*Table: (?P<caption>.*)\*\* \(\[LaTeX\]\(tables/(?P<name>[\w\-]+)"
                      r"\.tex\)\)$")
_SEPARATOR = re.compile(r"^\|(\s*:?-+:?\s*\|)+$")


@dataclass
class ReportTable:
    """One table as report.md shows it."""
    name: str
    caption: str
    parts: list[tuple[list[str], list[list[str]]]] = field(default_factory=list)  # (header, rows)
    notes: str = ""


def _cells(line: str) -> list[str]:
    inner = line.strip()[1:-1]
    return [c.strip().replace(r"\|", "|") for c in re.split(r"(?<!\\)\|", inner)]


def report_tables(report_md: str) -> list[ReportTable]:
    """Every table block of a report.md, in order."""
    tables, current, lines = [], None, report_md.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        match = _CAPTION.match(line)
        if match:
            current = ReportTable(match["name"], match["caption"])
            tables.append(current)
        elif current is not None and line.startswith("|") and i + 1 < len(lines) \
                and _SEPARATOR.match(lines[i + 1].strip()):
            header, rows, i = _cells(line), [], i + 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            current.parts.append((header, rows))
            continue
        elif current is not None and line.startswith("*Note.* "):
            current.notes = line.removeprefix("*Note.* ")
        elif line.startswith("## "):
            current = None
        i += 1
    return tables


def _is_heading(row: list[str]) -> bool:
    return bool(re.fullmatch(r"\*.+\*", row[0])) and not any(row[1:])


def table_problems(table: ReportTable) -> list[str]:
    """How one report table breaks the grammar: headers, cells, width, caption, digits, and
    code or an unlabelled simulation in its caption and notes."""
    problems = caption_problems(table.caption)
    # words, not code, around the numbers too (issue 43); report.md escapes | in notes
    problems += prose_problems(table.caption, "caption")
    problems += prose_problems(table.notes.replace(r"\|", "|"), "notes")
    problems += simulated_problems(table.caption, table.notes)
    for number, (header, rows) in enumerate(table.parts, start=1):
        where = f"part {number}: " if len(table.parts) > 1 else ""
        if len(header) > MAX_COLUMNS:
            problems.append(f"{where}{len(header)} columns (at most {MAX_COLUMNS})")
        spans = [h.split(": ", 1) for h in header]
        problems += [where + p for p in header_problems([s[-1] for s in spans])]
        body = [r for r in rows if not _is_heading(r)]
        headings = [r[0].strip("*") for r in rows if _is_heading(r)]
        problems += [where + p for p in cell_problems(headings)]
        # a model table's column mixes estimates, SE lines and fit rows (log-likelihood to
        # one decimal) by design; its digits are set per model, and a model whose SEs are
        # not shown ("--") would read as a column of unevenly rounded numbers
        model_table = bool(header) and header[0] == "Term" and "Fit" in headings
        for j, label in enumerate(header):
            column = [r[j] for r in body if j < len(r)]
            problems += [where + p for p in cell_problems(column)]
            if not (model_table and j > 0):
                problems += [where + p for p in _digit_problems(label, column)]
    return list(dict.fromkeys(problems))


def n_problems(table: ReportTable) -> list[str]:
    """["states no N ..."] for a table that gives no N: no count column, no row of
    observations, no number of units in its caption or notes (issue 43); else []."""
    headers = [h for header, _ in table.parts for h in header]
    row_labels = [r[0] for _, rows in table.parts for r in rows if r]
    if table.parts and not states_n(headers, row_labels, table.caption, table.notes):
        return ["states no N (a count column, a row of observations, or the number of units "
                "in the notes)"]
    return []


def _digit_problems(label: str, cells: list[str]) -> list[str]:
    """p-value columns in APA style; a column of plain numbers with one number of decimals
    (integers apart: counts and fit rows in a model table's column)."""
    filled = [c for c in cells if c not in ("", "--")]
    if label.split(" (")[0] == "p":
        bad = [c for c in filled if not APA_P.match(c)]
        return [f"column {label!r}: p-values not in APA style: {bad[:3]}"] if bad else []
    decimals = {decimals_of(c) for c in filled}
    if None in decimals or not decimals:
        return []   # text, intervals, estimates with their (SE) lines: not one kind of cell
    decimals.discard(0)
    return [f"column {label!r}: uneven decimals {sorted(decimals)}"] if len(decimals) > 1 else []


def report_problems(folder: Path) -> dict[str, list[str]]:
    """{table name: problems} for every table of the report in `folder`, and
    {"tables/tables.tex": problems} for the appendix (a missing tables.tex or, where pdflatex
    exists, a tables.pdf that was not made). Empty when every table passes."""
    from gbstats.report.appendix import pdflatex_path

    folder = Path(folder)
    out = {t.name: p for t in report_tables((folder / "report.md").read_text())
           if (p := table_problems(t))}
    appendix = folder / "tables" / "tables.tex"
    if not appendix.exists():
        out["tables/tables.tex"] = ["missing"]
    elif pdflatex_path() and not (folder / "tables" / "tables.pdf").exists():
        log = folder / "tables" / "tables.log"
        out["tables/tables.tex"] = ["not compiled: " + (log.read_text(errors="replace")[-300:]
                                                          if log.exists() else "no log")]
    elif (folder / "tables" / "tables.log").exists():
        out["tables/tables.tex"] = ["pdflatex reported problems (tables/tables.log)"]
    return out

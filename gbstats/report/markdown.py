"""Markdown: GitHub-flavoured tables for report.md, the same tables as the LaTeX ones.

`render_markdown` writes a `PresentedTable` (gbstats.report.table_grammar): one
Markdown table per part, row groups and panels as italic rows, spanning headers
folded into the column headers ("wino: lme4"), and the notes beneath.
`to_markdown_table` is the one-call form for a DataFrame.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from gbstats.report.formatting import CONTROL_CHARS
from gbstats.report.table_grammar import PresentedTable, present


def _escape_markdown_cell(text: str) -> str:
    # A "|" would split the cell, a newline would end the row.
    return CONTROL_CHARS.sub(" ", str(text)).replace("|", r"\|")


def _part_markdown(part) -> str:
    headers = [_escape_markdown_cell(f"{c.span}: {c.label}" if c.span else c.label)
               for c in part.columns]
    rows = []
    for row in range(part.n_rows):
        if row in part.headings:
            rows.append([f"*{_escape_markdown_cell(part.headings[row])}*"]
                        + [""] * (len(part.columns) - 1))
        rows.append([_escape_markdown_cell(c.cells[row]) for c in part.columns])
    frame = pd.DataFrame(rows, columns=range(len(headers))) if rows else \
        pd.DataFrame(columns=range(len(headers)))
    frame.columns = headers
    align = ["left" if c.kind == "text" else "right" for c in part.columns]
    # disable_numparse: otherwise tabulate re-parses "0.500" as a number and
    # prints "0.5", undoing the decimals.
    return frame.to_markdown(index=False, disable_numparse=True, colalign=align) + "\n"


def render_markdown(table: PresentedTable, notes: bool = True) -> str:
    """The table's parts as Markdown tables, then its notes ("*Note.* ...")."""
    text = "\n".join(_part_markdown(part) for part in table.parts)
    if notes and table.notes:
        text += "\n*Note.* " + " ".join(_escape_markdown_cell(n) for n in table.notes) + "\n"
    return text


def to_markdown_table(df: pd.DataFrame, digits: int | None = None, *,
                      p_columns: Sequence[str] = ("p_value",),
                      columns: Sequence[str] | None = None,
                      column_labels: Mapping[str, str] | None = None) -> str:
    """A GitHub-flavoured Markdown table of `df`, formatted like `to_latex_table`."""
    kinds = {c: "p" for c in p_columns if c in getattr(df, "columns", [])}
    table = present(df, "", labels=column_labels, kinds=kinds, decimals=digits, columns=columns,
                    settings_to_notes=False, split=False, short_caption=False, intervals=False)
    return render_markdown(table)

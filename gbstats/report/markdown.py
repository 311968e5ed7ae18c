"""Markdown: GitHub-flavoured tables for report.md, formatted like the LaTeX ones."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from gbstats.report.formatting import (CONTROL_CHARS, format_cells, header_labels,
                                       is_numeric_column, table_frame)

def _escape_markdown_cell(text: str) -> str:
    # A "|" would split the cell, a newline would end the row.
    return CONTROL_CHARS.sub(" ", text).replace("|", r"\|")


def to_markdown_table(df: pd.DataFrame, digits: int = 3, *,
                      p_columns: Sequence[str] = ("p_value",),
                      columns: Sequence[str] | None = None,
                      column_labels: Mapping[str, str] | None = None) -> str:
    """A GitHub-flavoured Markdown table of `df`, formatted like `to_latex_table`."""
    frame = table_frame(df, columns)
    cells = format_cells(frame, digits, p_columns).map(_escape_markdown_cell)
    cells.columns = [_escape_markdown_cell(h) for h in header_labels(frame.columns, column_labels)]
    numeric = [is_numeric_column(frame[c]) or c in p_columns for c in frame.columns]
    # disable_numparse: otherwise tabulate re-parses "0.500" as a number and
    # prints "0.5", undoing the significant digits.
    return cells.to_markdown(index=False, disable_numparse=True,
                             colalign=["right" if n else "left" for n in numeric]) + "\n"

"""Reporting: tables (LaTeX booktabs, Markdown), results.json with provenance, figures.

One module per concern:
- `formatting`: cell formatting shared by every table writer (numbers, p-values, headers);
- `table_grammar`: the house grammar every table follows (words, digits by kind, notes,
  at most 8 columns) and the checks for it; `model_table`: fitted models side by side;
- `latex`, `markdown`: the table writers (`render_latex`, `render_markdown`);
- `appendix`: tables/tables.tex and its pdflatex compile; `report_tables`: a written
  report's tables read back and checked;
- `results_json`: results.json, every table at full precision;
- `provenance`: versions, git commit, models, data checksums, command;
- `files`: output paths checked before any work, atomic writes, the staged folder;
- `study_report`: `StudyReport`, the study's report folder;
- `figures`: the figure style and `savefig`.

The top of gbstats: it may import every other subpackage, and none imports it.
"""

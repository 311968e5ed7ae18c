"""Reporting: tables (LaTeX booktabs, Markdown), results.json with provenance, figures.

One module per concern:
- `formatting`: cell formatting shared by every table writer (numbers, p-values, headers);
- `latex`, `markdown`: the table writers;
- `results_json`: results.json, every table at full precision;
- `provenance`: versions, git commit, models, data checksums, command;
- `files`: output paths checked before any work, atomic writes, the staged folder;
- `study_report`: `StudyReport`, the study's report folder;
- `figures`: the figure style and `savefig`.

The top of gbstats: it may import every other subpackage, and none imports it.
"""

"""The study report folder: report.md, results.json, tables/*.tex and figures/*.png.

Every study ends the same way: a folder with `report.md` (narrative, tables and
figures inline), `results.json` (provenance plus every table as records),
`tables/*.tex` (booktabs tables that go straight into a paper) and
`figures/*.png`. `StudyReport` writes that folder; the writers it uses
(gbstats.report.latex, .markdown, .results_json) can also be used on their own.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from gbstats.report.files import write_text_atomically
from gbstats.report.formatting import CONTROL_CHARS
from gbstats.report.latex import to_latex_table
from gbstats.report.markdown import to_markdown_table
from gbstats.report.results_json import write_results_json

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
        write_text_atomically(path, tex)
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
        self.blocks.append(f"![{CONTROL_CHARS.sub(' ', caption)}](figures/{name}.png)\n\n"
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
        items = [CONTROL_CHARS.sub(" ", str(w)) for w in warnings]
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
                              "chains": rec.get("n_chains"), "attempts": twin_attempts_text(rec)}
                             for what, rec in twins.items()])
        text = ["Convergence of every Bayesian twin over its reported parameters (fixed "
                "effects, group-level SDs, residual SD); the figures needed are R-hat <= 1.01, "
                "bulk and tail ESS >= 400 and no divergent transitions. A twin marked NO is "
                "not converged: its estimates are not reliable. A twin that misses the figures "
                "is refitted with twice the draws, from a fresh seed, until it meets them or "
                "its draws budget (4x the draws asked for) or time budget is spent; Attempts "
                "says how many fits it took and what stopped them.", "",
                to_markdown_table(rows, columns=list(rows.columns),
                                  column_labels={"model": "Model", "converged": "Converged",
                                                 "rhat_max": "R-hat max",
                                                 "ess_bulk_min": "Bulk ESS min",
                                                 "ess_tail_min": "Tail ESS min",
                                                 "divergences": "Divergences",
                                                 "draws": "Draws", "chains": "Chains",
                                                 "attempts": "Attempts"}),
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
        write_text_atomically(report, "\n".join(parts))
        results = write_results_json(
            self.out_dir / "results.json", provenance, self.tables,
            extra={"study": self.study, "title": self.title, "simulated": self.simulated,
                   "exclusions": self.exclusion_records, "warnings": self.warning_list,
                   "bayes_twins": self.twin_records})
        return {"report": report, "results": results,
                **{f"table:{p.stem}": p for p in self.table_paths},
                **{f"figure:{p.stem}": p for p in self.figure_paths}}


def twin_attempts_text(record: Mapping) -> str:
    """"1, converged" or "3, stopped by the draws budget": a twin's fits and what ended them
    (gbstats.mixed.fitting.fit_bayes_twin); "" for a record without attempts."""
    attempts = record.get("attempts") or []
    if not attempts:
        return ""
    stopped = record.get("stopped_by")
    if stopped == "converged" or (stopped is None and record.get("converged")):
        return f"{len(attempts)}, converged"
    return f"{len(attempts)}, stopped by the {stopped}" if stopped else str(len(attempts))

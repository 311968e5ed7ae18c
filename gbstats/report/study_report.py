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
from gbstats.report.latex import render_latex
from gbstats.report.markdown import render_markdown, to_markdown_table
from gbstats.report.results_json import write_results_json
from gbstats.report.table_grammar import (PresentedTable, grammar_problems, present,
                                          simulated_problems)

SIMULATED = "SIMULATED"
# The column headers a fit_table gives the backend labels of gbstats.mixed.fitting.
ENGINE_WORDS = {"lme4": "lme4", "statsmodels": "statsmodels", "pymc": "Bayesian", "blme": "blme"}
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
    `write()`, with tables/tables.tex (every table in one document) and, where
    pdflatex is installed, tables/tables.pdf. With `simulated=True` every heading
    and figure title carries "SIMULATED" and every table's notes begin with it,
    so simulated numbers cannot pass for real ones.
    """

    def __init__(self, study: str, out_dir: str | os.PathLike, title: str,
                 simulated: bool = False, cache: Mapping | None = None):
        self.study, self.out_dir, self.simulated = study, Path(out_dir), simulated
        # a study run's cache settings (use_cache, cache_dir): the compiled appendix is
        # reused from there when its sources are unchanged; without them, always compiled
        self.cache = dict(cache or {"use_cache": False})
        self.title = self._mark(title)
        self.blocks: list[str] = []
        self.tables: dict[str, pd.DataFrame] = {}
        self.presented: dict[str, PresentedTable] = {}
        self.table_paths: list[Path] = []
        self.figure_paths: list[Path] = []
        self.figure_records: list[dict] = []
        self.exclusion_records: list[dict] = []
        self.warning_list: list[str] = []
        self.twin_records: dict[str, dict] = {}
        self.extra_results: dict[str, object] = {}
        # tables for tables.tex's appendix section (engine comparisons, priors, diagnostics)
        self.appendix_tables: list[str] = []
        # {table: the model's formula in lme4 syntax}: the methods section and results.json
        # hold them; the table's notes say the model in words (issue 43)
        self.formulas: dict[str, str] = {}

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
              digits: int | None = None, simulated: bool | None = None, *,
              labels: Mapping[str, str] | None = None,
              column_labels: Mapping[str, str] | None = None,
              p_columns: Sequence[str] = (), notes: str | Sequence[str] | None = None,
              record: bool | pd.DataFrame = True, appendix: bool = False, **grammar) -> Path:
        """Write tables/<name>.tex, show the same table in report.md, keep `df` for results.json.

        The table follows the house grammar (gbstats.report.table_grammar.present):
        `labels` (or its old name `column_labels`) gives the headers in words, `p_columns`
        names p-value columns besides p_value/p_holm/..., `digits` fixes the decimals of
        every number column, `notes` are the table's notes; `grammar` takes present's
        other options (kinds, decimals, values, columns, groups, keep, landscape...).
        results.json gets every column of `df`, unformatted; `record` may instead be the
        frame to record (when `df` is a reshaped view of it) or False (a view of numbers
        another table of results.json holds). `appendix=True` puts the table in tables.tex's
        appendix section: a check of the analysis (engines compared, priors, diagnostics)
        that a paper's body would not print.
        """
        self._check_name(name, "table", {**self.tables, **self.presented})
        kinds = dict(grammar.pop("kinds", None) or {})
        kinds.update({c: "p" for c in p_columns if c in df.columns})
        presented = present(df, caption, label=label or f"tab:{name}",
                            labels={**(column_labels or {}), **(labels or {})}, kinds=kinds,
                            decimals=grammar.pop("decimals", digits),
                            notes=[notes] if isinstance(notes, str) else list(notes or []),
                            simulated=self._is_simulated(simulated), **grammar)
        return self._write_table(name, presented, df if record is True else record, appendix)

    def model_table(self, name: str, models, caption: str, *, data: pd.DataFrame | None = None,
                    label: str | None = None, notes: str | Sequence[str] | None = None,
                    simulated: bool | None = None, appendix: bool = False, **options) -> Path:
        """A model table (gbstats.report.model_table) of `models`: terms x models, estimates
        with their SE beneath, random-effect SDs, fit rows and notes. results.json gets
        `data` (a study's own frame of these fits) or else the table's numbers (`frame`);
        `data=False` records nothing (another table of results.json holds these fits).
        `appendix` as for `table`. `options` go to `model_table` (variables, levels, groups,
        statistic, stars...)."""
        from gbstats.report.model_table import model_table

        self._check_name(name, "table", self.presented)
        table = model_table(models, **options)
        presented = table.presented(caption, label or f"tab:{name}",
                                    notes=[notes] if isinstance(notes, str) else list(notes or []),
                                    simulated=self._is_simulated(simulated))
        return self._write_table(name, presented, table.frame if data is None else data,
                                 appendix)

    def formula(self, table: str, formula: str, variables: Mapping[str, str] | None = None,
                groups: Mapping[str, str] | None = None) -> str:
        """Keep `table`'s model formula (lme4 syntax) for the report's methods section and
        results.json ("formulas"), and return it in words for the table's notes
        (gbstats.report.formula_words.formula_in_words with `variables` and `groups`)."""
        from gbstats.report.formula_words import formula_in_words

        self.formulas[table] = str(formula)
        return formula_in_words(formula, variables, groups)

    def record(self, name: str, df: pd.DataFrame, what: str) -> None:
        """Keep `df` in results.json (and say so in report.md) without a LaTeX table: a long
        table of every cell that no paper prints whole (`what` says what it holds)."""
        self._check_name(name, "table", self.tables)
        self.tables[name] = df.copy()
        self.blocks.append(f"*{CONTROL_CHARS.sub(' ', what)}: {len(df)} rows, in results.json "
                           f"(table `{name}`).*\n")

    def _write_table(self, name: str, presented: PresentedTable,
                     data: pd.DataFrame | bool, appendix: bool = False) -> Path:
        unlabelled = simulated_problems(presented.caption, presented.notes)
        if unlabelled:   # a table of simulated numbers is never written without the label
            raise ValueError(f"table {name!r}: {unlabelled[0]}: {presented.caption!r}")
        path = self.out_dir / "tables" / f"{name}.tex"
        write_text_atomically(path, render_latex(presented))
        self.blocks.append(f"**Table: {CONTROL_CHARS.sub(' ', presented.caption)}** "
                           f"([LaTeX](tables/{name}.tex))\n\n{render_markdown(presented)}")
        if data is not False:
            self.tables[name] = data.copy()
        self.presented[name] = presented
        self.table_paths.append(path)
        if appendix:
            self.appendix_tables.append(name)
        return path

    def _is_simulated(self, simulated: bool | None) -> bool:
        return self.simulated if simulated is None else simulated

    def fit_table(self, name: str, fits: Mapping, caption: str, **options) -> Path:
        """The fits {backend label: FitResult} of one formula as a model table (one column per
        engine; term labels from the factor codings; notes with the coding, the method, and what
        the fits flagged: lme4's singular-fit and convergence warnings, separation, each
        Bayesian twin's convergence figures and priors). results.json gets the stacked
        coefficients (gbstats.mixed.fitting.stack_fits). `options` go to `model_table`."""
        from gbstats.mixed.fitting import stack_fits

        if not fits:   # nothing was fitted (no engine could): an empty table says so
            return self.table(name, stack_fits(fits), caption,
                              appendix=options.get("appendix", False),
                              notes=options.get("notes") or "No model was fitted (see the "
                                                            "report's notes).")
        labels = {label: ENGINE_WORDS.get(label, label) for label in fits}
        models = {labels[label]: fit for label, fit in fits.items()}
        return self.model_table(name, models, caption, data=stack_fits(fits), **options)

    def grammar_problems(self) -> dict[str, list[str]]:
        """{table: what breaks the house grammar} for every table added (empty when none)."""
        return {name: problems for name, t in self.presented.items()
                if (problems := grammar_problems(t))}

    def result(self, name: str, value) -> None:
        """A top-level entry of results.json besides "tables" (records or a mapping), for
        the results a program reads by name (e.g. name_gender's `group_comparison`)."""
        reserved = {"provenance", "tables", "study", "title", "simulated", "exclusions",
                    "warnings", "bayes_twins", "figures", "formulas"}
        if name in reserved or name in self.extra_results:
            raise ValueError(f"results.json entry {name!r} is taken; choose another name")
        self.extra_results[name] = value

    def figure(self, name: str, fig, caption: str, simulated: bool | None = None,
               pdf: bool = False, **savefig_options) -> Path:
        """Write figures/<name>.png (see gbstats.report.figures.savefig) and show it in report.md;
        with `pdf`, figures/<name>.pdf beside it too (the vector file a paper wants), linked
        under the figure. results.json lists every figure under "figures" (name, caption,
        files, simulated)."""
        self._check_name(name, "figure", {p.stem for p in self.figure_paths})
        simulated = self.simulated if simulated is None else simulated
        self._save_figure(name, fig, simulated, pdf, **savefig_options)
        return self._show_figure(name, caption, simulated, pdf)

    def _save_figure(self, name: str, fig, simulated: bool, pdf: bool, **savefig_options) -> Path:
        """figures/<name>.png (and .pdf), the title marked SIMULATED where it is."""
        from gbstats.report.figures import figure_style, savefig

        if simulated:
            title = fig.get_suptitle()
            with figure_style():
                fig.suptitle(self._mark(title, True) if title else f"{SIMULATED} data")
        path = savefig(fig, self.out_dir / "figures" / f"{name}.png", **savefig_options)
        if pdf:
            savefig(fig, path.with_suffix(".pdf"), **savefig_options)
        return path

    def drawn_figure(self, name: str, draw, frames: Sequence[pd.DataFrame], caption: str, *,
                     simulated: bool | None = None, pdf: bool = False,
                     draw_options: Mapping | None = None, cache_dir=None,
                     use_cache: bool = True) -> Path:
        """`figure(name, draw(*frames, **draw_options), caption, ...)`, with the files kept in
        the fit cache's folder and written from there when the very same figure is asked for
        again. The key: the drawing function (and, for a study's, its module's source), the
        frames and options, the gbstats source and package versions (as for fits:
        `gbstats.mixed.fit_cache.call_key`), matplotlib's version, the name and the
        SIMULATED marking; not the caption, which is not in the image. A warm study run then
        neither draws nor imports matplotlib (about 2.5 s of the main job's warm run on the
        2-core machine, issue 41). What the key cannot see is a font installed since
        (matplotlib would pick another one): --no-cache redraws."""
        import importlib.metadata

        from gbstats.mixed.fit_cache import canonical, cached_value

        self._check_name(name, "figure", {p.stem for p in self.figure_paths})
        simulated = self.simulated if simulated is None else simulated
        options = dict(draw_options or {})
        formats = ("png", "pdf") if pdf else ("png",)
        target = self.out_dir / "figures" / f"{name}.png"

        def render() -> dict[str, bytes]:
            self._save_figure(name, draw(*frames, **options), simulated, pdf)
            return {f: target.with_suffix(f".{f}").read_bytes() for f in formats}

        files, reused = cached_value(
            draw, canonical({"frames": list(frames), "options": options, "figure": {
                "name": name, "simulated": bool(simulated),
                "formats": list(formats), "house_simulated_mark": SIMULATED,
                "matplotlib": importlib.metadata.version("matplotlib")}}),
            render, cache_dir=cache_dir, use_cache=use_cache, prefix="figure")
        if reused:
            target.parent.mkdir(parents=True, exist_ok=True)
            for suffix, content in files.items():
                target.with_suffix(f".{suffix}").write_bytes(content)
        return self._show_figure(name, caption, simulated, pdf)

    def _show_figure(self, name: str, caption: str, simulated: bool, pdf: bool) -> Path:
        """Show figures/<name>.png (written) in report.md and list it for results.json."""
        path = self.out_dir / "figures" / f"{name}.png"
        caption = self._mark(caption, simulated)
        files = [f"figures/{name}.png"] + ([f"figures/{name}.pdf"] if pdf else [])
        also = f" ([PDF](figures/{name}.pdf))" if pdf else ""
        self.blocks.append(f"![{CONTROL_CHARS.sub(' ', caption)}](figures/{name}.png)\n\n"
                           f"*Figure: {caption}*{also}\n")
        self.figure_paths.append(path)
        self.figure_records.append({"name": name, "caption": caption, "files": files,
                                    "simulated": bool(simulated)})
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

    def _appendix(self) -> dict:
        """tables/tables.tex (every table in one document) and, with pdflatex, tables.pdf;
        a report.md block that says which, and why not when it could not be compiled."""
        from gbstats.report.appendix import compile_appendix, write_appendix

        if not self.table_paths:
            return {"blocks": [], "paths": {}}
        tex = write_appendix(self.out_dir / "tables", self.title.replace("*", ""),
                             [p.stem for p in self.table_paths],
                             landscape=any(t.landscape for t in self.presented.values()),
                             appendix=self.appendix_tables)
        result = compile_appendix(tex, **self.cache)
        paths = {"appendix": tex, **({"appendix_pdf": result.pdf} if result.pdf else {})}
        if result.ok:
            text = ("Every table above in one document for a paper's appendix: "
                    "[tables/tables.tex](tables/tables.tex), compiled to "
                    "[tables/tables.pdf](tables/tables.pdf)"
                    + "".join(f"; {n}" for n in result.notes) + ".")
        else:
            text = ("Every table above in one document for a paper's appendix: "
                    f"[tables/tables.tex](tables/tables.tex); {result.summary()}.")
            if not result.skipped:
                self.warning_list.append(f"tables/tables.tex: {result.summary()}")
        return {"blocks": [f"## {self._mark('Tables for a paper')}\n\n{text}\n"],
                "paths": paths}

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
            named = m.get("described_as")
            shown = f"{named} ({m.get('id')})" if named and named != m.get("id") else m.get("id")
            lines.append(f"- model: {shown}, revision {m.get('revision')}")
        lines.append("- full provenance (versions, data checksums): results.json")
        return f"## {self._mark('Provenance')}\n\n" + "\n".join(lines) + "\n"

    def write(self, provenance: Mapping) -> dict[str, Path]:
        """Write report.md and results.json; return the paths of everything written."""
        notice = ([f"> **{SIMULATED} DATA.** Tables and figures marked {SIMULATED} come from a "
                   "documented simulation, not from real observations; their numbers "
                   "illustrate the method only.\n"]
                  if self.simulated else [])
        appendix = self._appendix()
        methods = (["## Methods: model formulas\n\nThe models of the tables, in lme4 syntax "
                    "(the tables' notes say them in words):\n\n"
                    + "\n".join(f"- {name}: `{formula}`" for name, formula in self.formulas.items())
                    + "\n"] if self.formulas else [])
        parts = [f"# {self.title}\n", *notice, *self.blocks, *methods, *appendix["blocks"],
                 self._provenance_block(provenance)]
        report = self.out_dir / "report.md"
        write_text_atomically(report, "\n".join(parts))
        results = write_results_json(
            self.out_dir / "results.json", provenance, self.tables,
            extra={"study": self.study, "title": self.title, "simulated": self.simulated,
                   "exclusions": self.exclusion_records, "warnings": self.warning_list,
                   "bayes_twins": self.twin_records, "figures": self.figure_records,
                   **({"formulas": self.formulas} if self.formulas else {}),
                   **self.extra_results})
        return {"report": report, "results": results, **appendix["paths"],
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

"""A paper's appendix in one command: tables/tables.tex, and tables/tables.pdf where
pdflatex is installed.

Every study's report folder gets `tables/tables.tex`, one document that loads the
packages the tables need (`gbstats.report.latex.TABLE_PACKAGES`) and `\\input`s every
table in the order the report shows them. `compile_appendix` runs pdflatex on it (in a
temporary folder, so no .aux or .log is left beside the tables) and reads its log:
an error, a character the font cannot print (`\\tracinglostchars=3` makes that an
error), or an overfull box wider than `OVERFULL_LIMIT_PT` is reported, never hidden.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gbstats.report.files import write_text_atomically
from gbstats.report.latex import LANDSCAPE_PACKAGE, TABLE_PACKAGES, escape_latex

APPENDIX_NAME = "tables"
# An overfull box narrower than this is a nuisance a typesetter fixes by hand; a wider one
# means a table runs into the margin.
OVERFULL_LIMIT_PT = 20.0
COMPILE_TIMEOUT_S = 180
_OVERFULL = re.compile(r"^Overfull \\[hv]box \((?P<pt>[\d.]+)pt too (?:wide|high)\)(?P<rest>.*)$")


def appendix_source(title: str, names: Sequence[str], landscape: bool = False) -> str:
    """The LaTeX document that inputs tables/<name>.tex for each of `names`."""
    packages = [*TABLE_PACKAGES, *([LANDSCAPE_PACKAGE] if landscape else [])]
    lines = [
        "% Every table of this report in one document: pdflatex tables.tex",
        "% (written by gbstats; each table also stands alone: \\input{tables/<name>.tex}",
        "% in a document that loads " + ", ".join(packages) + ")",
        r"\documentclass[11pt]{article}",
        r"\usepackage[margin=2cm]{geometry}",
        *[f"\\usepackage{{{p}}}" for p in packages],
        # a character the font cannot print stops the run instead of leaving a gap
        r"\tracinglostchars=3",
        # many tables float at once: room for them, and pages that may be mostly table
        r"\extrafloats{200}",
        r"\renewcommand{\topfraction}{0.95}", r"\renewcommand{\bottomfraction}{0.95}",
        r"\renewcommand{\textfraction}{0.05}", r"\renewcommand{\floatpagefraction}{0.8}",
        r"\setcounter{topnumber}{4}", r"\setcounter{bottomnumber}{4}",
        r"\setcounter{totalnumber}{8}",
        r"\begin{document}",
        f"\\section*{{Tables: {escape_latex(title)}}}",
    ]
    lines += [f"\\input{{{name}}}" for name in names]
    lines += [r"\clearpage", r"\end{document}"]
    return "\n".join(lines) + "\n"


@dataclass
class CompileResult:
    ok: bool
    pdf: Path | None
    errors: list[str] = field(default_factory=list)
    overfull: list[str] = field(default_factory=list)   # boxes over OVERFULL_LIMIT_PT
    skipped: str = ""                                     # why it was not compiled

    def summary(self) -> str:
        if self.skipped:
            return f"not compiled: {self.skipped}"
        if self.ok:
            return "compiled to tables/tables.pdf"
        what = self.errors[:3] + self.overfull[:3]
        return "pdflatex reported problems: " + "; ".join(what)


def pdflatex_path() -> str | None:
    return shutil.which("pdflatex")


def write_appendix(folder: Path, title: str, names: Sequence[str],
                   landscape: bool = False) -> Path:
    """Write `folder`/tables.tex for the tables `names` (already in `folder`)."""
    path = Path(folder) / f"{APPENDIX_NAME}.tex"
    write_text_atomically(path, appendix_source(title, names, landscape))
    return path


def compile_appendix(tex: Path) -> CompileResult:
    """pdflatex `tex` (its folder holds the tables) into <folder>/tables.pdf."""
    pdflatex = pdflatex_path()
    if pdflatex is None:
        return CompileResult(False, None, skipped="pdflatex is not installed (Debian: apt-get "
                                                  "install texlive-latex-recommended "
                                                  "texlive-science)")
    tex = Path(tex)
    with tempfile.TemporaryDirectory(prefix="gbstats-latex-") as work:
        try:
            done = subprocess.run([pdflatex, "-no-shell-escape", "-interaction=nonstopmode",
                                   "-halt-on-error", f"-output-directory={work}", tex.name],
                                  cwd=tex.parent, capture_output=True, text=True,
                                  errors="replace", timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return CompileResult(False, None, [f"pdflatex ran longer than {COMPILE_TIMEOUT_S} s"])
        log_path = Path(work) / f"{tex.stem}.log"
        log = log_path.read_text(errors="replace") if log_path.exists() else done.stdout
        errors, overfull = read_log(log)
        pdf = Path(work) / f"{tex.stem}.pdf"
        ok = done.returncode == 0 and pdf.exists() and not errors and not overfull
        target = None
        if pdf.exists():
            target = tex.with_suffix(".pdf")
            shutil.copyfile(pdf, target)
        if not ok:
            if log_path.exists():  # kept beside the tables, for the reader to see why
                shutil.copyfile(log_path, tex.with_suffix(".log"))
            if done.returncode != 0 and not errors:
                errors = [f"pdflatex exited with code {done.returncode}"]
        return CompileResult(ok, target, errors, overfull)


_INPUT = re.compile(r"\((?:\./)?([\w\-.]+\.tex)")


def read_log(log: str, limit_pt: float = OVERFULL_LIMIT_PT) -> tuple[list[str], list[str]]:
    """(errors, overfull boxes wider than `limit_pt`) from a pdflatex log, each overfull box
    named by the table file it is in (the last one pdflatex opened before it)."""
    lines = log.splitlines()
    errors = [line for line in lines if line.startswith("!")]
    errors += [line for line in lines if "Missing character" in line]
    overfull, current = [], ""
    for line in lines:
        opened = _INPUT.findall(line)
        if opened:
            current = opened[-1]
        match = _OVERFULL.match(line)
        if match and float(match["pt"]) > limit_pt:
            where = f"{current}: " if current else ""
            overfull.append(f"{where}overfull box {float(match['pt']):.0f} pt too wide")
    return errors, overfull


def overfull_boxes(log: str) -> list[float]:
    """Every overfull box's excess in pt, from a pdflatex log."""
    return [float(m["pt"]) for m in map(_OVERFULL.match, log.splitlines()) if m]

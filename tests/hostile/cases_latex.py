"""Hostile cases for the LaTeX tables (issue 33's LaTeX defects): text that TeX would typeset
instead of printing. `--` became an en dash, `"` `'` and a backquote curly quotes, and a
decomposed accent (e + U+0301) stopped pdflatex.

Each case writes a table through a public entry point (`to_latex_table`, `StudyReport.table`
with its tables/tables.tex appendix, the model table's term labels) and checks that every
label prints as typed: in the LaTeX source no two hyphens, commas or quotes can meet as a
ligature, and, where pdflatex is installed, the table compiles in a document with the default
(OT1) and the T1 font encoding, with `\\tracinglostchars=3` (a character the font lacks is an
error); where pdftotext is installed too, the PDF's text holds the label as typed.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import unicodedata
from pathlib import Path

import pandas as pd

from hostile_cases import CASES, Wrong, case

LABELS = {
    "dashes": "pro--anti --- x",
    "quotes": "\"quoted\" 'single' `back` ''two'' ``open``",
    "decomposed accent": "Jose\u0301 Zoe\u0308",              # NFC has é and ë
    "mark with no precomposed letter": "x\u0301 q\u0303",    # no NFC letter: accent commands
    "mark LaTeX has no accent for": "a\u0361b",                # U+0361: left out of the LaTeX
    "ligatures of T1": ",,low'' <<guillemets>> !`inverted ?`",
}
# What the PDF must show for each label (pdftotext, NFC; the mark with no LaTeX accent is
# dropped, as escape_latex documents).
PRINTED = {**LABELS, "decomposed accent": "José Zoë", "mark LaTeX has no accent for": "ab",
           "mark with no precomposed letter": None}

DOCUMENT = r"""\documentclass{article}
%s\usepackage{booktabs}
\usepackage{siunitx}
\tracinglostchars=3
\begin{document}
%s
\end{document}
"""


def _compile(tex: str, folder: Path, t1: bool) -> str:
    """pdflatex `tex` (a table) in a small document; the PDF's text where pdftotext exists,
    else ""; a failure to compile is Wrong."""
    folder.mkdir(parents=True, exist_ok=True)
    source = DOCUMENT % (r"\usepackage[T1]{fontenc}" + "\n" if t1 else "", tex)
    (folder / "doc.tex").write_text(source, encoding="utf-8")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
                          cwd=folder, capture_output=True, text=True, errors="replace",
                          timeout=300)
    log = (folder / "doc.log").read_text(errors="replace") if (folder / "doc.log").exists() else ""
    errors = [line for line in log.splitlines() if line.startswith("!")]
    if done.returncode != 0 or errors:
        raise Wrong(f"pdflatex ({'T1' if t1 else 'OT1'}) failed: {errors or done.stdout[-400:]}")
    if shutil.which("pdftotext") is None:
        return ""
    return subprocess.run(["pdftotext", "-enc", "UTF-8", "doc.pdf", "-"], cwd=folder,
                          capture_output=True, text=True, timeout=60).stdout


def _ligatures(tex: str) -> list[str]:
    """Places in the tabulars (headers and cells: the labels) where TeX would join characters:
    two hyphens, two commas, a quote or backquote left as a character (the writer escapes
    every one; its "--" for a missing cell aside). Captions and notes are prose, where quotes
    are typeset as quotes on purpose (escape_latex's `prose`)."""
    body = " ".join(re.findall(r"\\toprule(.*?)\\bottomrule", tex, flags=re.S))
    body = body.replace(r"\\", " ")
    # a quote after a backslash is an accent command (\' \` \"), not a character
    return re.findall(r"[^\s&{]--|--[^\s\\}]|,,|(?<!\\)[`'\"]", body)


def _check_label(ws, value) -> None:
    label, tex, folder = value
    bad = _ligatures(tex)
    if bad:
        raise Wrong(f"LaTeX that TeX would typeset instead of printing: {bad[:4]}")
    if shutil.which("pdflatex") is None:
        return
    expected = PRINTED[label]
    for t1 in (False, True):
        text = _compile(tex, folder / ("t1" if t1 else "ot1"), t1)
        if text and expected is not None:
            shown = unicodedata.normalize("NFC", re.sub(r"\s+", " ", text))
            want = re.sub(r"\s+", " ", unicodedata.normalize("NFC", expected))
            if want not in shown:
                raise Wrong(f"the PDF ({'T1' if t1 else 'OT1'}) does not print {want!r}; it "
                            f"prints {shown.strip()[:200]!r}")


for _what, _label in LABELS.items():
    def _run(ws, label=_what, text=_label):
        from gbstats.report.latex import to_latex_table

        table = pd.DataFrame({"term": [text], "estimate": [0.5]})
        tex = to_latex_table(table, "A hostile label", "tab:hostile",
                             column_labels={"term": text}, notes=["Its header and cell."])
        return label, tex, ws.fresh(f"latex_{label.replace(' ', '_')}")

    case(f"to_latex_table: a label with {_what} prints as typed", "to_latex_table",
         "correct_result")(_run)
    CASES[-1].check = _check_label


@case("StudyReport: tables.tex compiles with every hostile label in one table", "StudyReport",
      "correct_result")
def _(ws):
    from gbstats.report.provenance import provenance
    from gbstats.report.study_report import StudyReport

    out = ws.fresh("latex_appendix") / "report"
    report = StudyReport("hostile", out, "Labels -- \"as typed\"")
    table = pd.DataFrame({"label": list(LABELS.values()), "value": range(len(LABELS))})
    report.table("labels", table, "Every hostile label", labels={"label": "Label",
                                                                 "value": "Value"})
    paths = report.write(provenance("hostile", [], seed=None))
    return paths, out


def _check_appendix(ws, value) -> None:
    paths, out = value
    tex = (out / "tables" / "labels.tex").read_text()
    bad = _ligatures(tex)
    if bad:
        raise Wrong(f"tables/labels.tex would typeset {bad[:4]}")
    if shutil.which("pdflatex") and "appendix_pdf" not in paths:
        log = out / "tables" / "tables.log"
        raise Wrong("tables/tables.tex did not compile: "
                    + (log.read_text(errors="replace")[-600:] if log.exists() else "no log"))


CASES[-1].check = _check_appendix


@case("model table: a factor level with -- and quotes labels its term as typed", "model_table",
      "correct_result")
def _(ws):
    import numpy as np

    from gbstats.mixed.results import COEF_COLUMNS, FitResult
    from gbstats.report.latex import render_latex
    from gbstats.report.model_table import model_table

    # the result shape an engine returns for a factor with levels "a--b" (reference) and
    # "it's \"x\"" (R's term name: the variable, then the level)
    level = "it's \"x\""
    coefs = pd.DataFrame({"term": ["(Intercept)", f"cond{level}"], "estimate": [1.0, 0.5],
                          "se": [0.1, 0.2], "ci_low": [0.8, 0.1], "ci_high": [1.2, 0.9],
                          "stat": [10.0, 2.5], "df": np.nan, "p_value": [1e-6, 0.012]})
    stats = {"nobs": 40, "contrasts": {"cond": {"kind": "treatment", "levels": ["a--b", level],
                                                 "names": [level], "matrix": [[0.0], [1.0]]}}}
    fit = FitResult("y ~ cond + (1 | g)", "lme4", "gaussian", coefs[COEF_COLUMNS],
                    fit_stats=stats)
    table = model_table({"lme4": fit}, variables={"cond": "Condition"})
    label = next(r.label for r in table.rows if r.key == f"coef:cond{level}")
    if label != f"Condition: {level} vs a--b":
        raise Wrong(f"the term's label is {label!r}")
    return "model term", render_latex(table.presented("Quotes -- in levels")), \
        ws.fresh("latex_model_table")


PRINTED["model term"] = "Condition: it's \"x\" vs a--b"
CASES[-1].check = _check_label

"""The LaTeX tables go straight into papers, so they must compile.

With pdflatex, booktabs.sty and siunitx.sty present (Debian: texlive-latex-base,
texlive-latex-recommended and texlive-science, installed by scripts/setup.sh), every table
here is compiled in a minimal document that loads only booktabs and siunitx, with
\\tracinglostchars=3 so that a character the font cannot print is an error,
not a silent gap. Without pdflatex the compile tests skip and say so; the
structural checks below (balanced braces and environments, booktabs rules in
order, one cell per column in every row) always run. In CI (CI=true) a missing
pdflatex fails instead of skipping.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gbstats.report.study_report import StudyReport
from gbstats.report.latex import to_latex_table
from gbstats.mixed.results import COEF_COLUMNS, FitResult

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
PDFLATEX = shutil.which("pdflatex")


def _booktabs_installed() -> bool:
    kpsewhich = shutil.which("kpsewhich")
    if kpsewhich is None:
        return False
    out = subprocess.run([kpsewhich, "booktabs.sty", "siunitx.sty"], capture_output=True,
                         text=True, timeout=30)
    return out.returncode == 0 and len(out.stdout.split()) == 2


@pytest.fixture(scope="module")
def pdflatex():
    if PDFLATEX is None or not _booktabs_installed():
        reason = ("pdflatex, booktabs.sty or siunitx.sty not found: the tables were checked "
                  "structurally only (test_*_structure); install texlive-latex-base "
                  "texlive-latex-recommended texlive-science")
        if IN_CI:
            pytest.fail(reason + " (CI must have LaTeX)")
        pytest.skip(reason)
    return PDFLATEX


DOCUMENT = r"""\documentclass{article}
\usepackage{booktabs}
\usepackage{siunitx}
\tracinglostchars=3
\begin{document}
%s
\end{document}
"""


def compile_tables(pdflatex: str, folder, *tables: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "doc.tex").write_text(DOCUMENT % "\n".join(tables), encoding="utf-8")
    out = subprocess.run([pdflatex, "-halt-on-error", "-interaction=nonstopmode", "doc.tex"],
                         cwd=folder, capture_output=True, text=True, timeout=120)
    log = (folder / "doc.log").read_text(encoding="utf-8", errors="replace") \
        if (folder / "doc.log").exists() else out.stdout
    errors = [line for line in log.splitlines() if line.startswith("!")]
    assert out.returncode == 0 and (folder / "doc.pdf").exists(), \
        f"pdflatex failed: {errors or log[-2000:]}"


# --- a structural checker, used whether or not pdflatex is present ----------

_ESCAPED_BRACE = re.compile(r"\\[{}]")
_COLUMN_SPEC = re.compile(r"S\[[^\]]*\]|[lrc]")


def check_latex_structure(tex: str, n_columns: int) -> None:
    """Raise AssertionError unless `tex` is one well-formed booktabs table."""
    unescaped = _ESCAPED_BRACE.sub("", tex.replace(r"\\", ""))
    depth = 0
    for ch in unescaped:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0, "a } closes a brace that was never opened"
    assert depth == 0, f"{depth} unclosed brace(s)"
    stack = []
    for kind, env in re.findall(r"\\(begin|end)\{(\w+)\}", tex):
        if kind == "begin":
            stack.append(env)
        else:
            assert stack and stack.pop() == env, f"\\end{{{env}}} does not match its \\begin"
    assert not stack, f"unclosed environments {stack}"
    body = "\n".join(line for line in tex.splitlines() if not line.startswith("%"))
    assert body.lstrip().startswith(r"\begin{table}") and body.rstrip().endswith(r"\end{table}")
    rules = re.findall(r"\\(toprule|midrule|bottomrule)\b", tex)
    assert rules == ["toprule", "midrule", "bottomrule"], f"booktabs rules out of order: {rules}"
    spec = re.search(r"\\begin\{tabular\}\{@\{\}(.*)@\{\}\}\n", tex)
    assert spec and len(_COLUMN_SPEC.findall(spec.group(1))) == n_columns, \
        "column spec does not match the columns"
    inside = tex.split(r"\toprule", 1)[1].split(r"\bottomrule", 1)[0]
    # a long header breaks into two lines in a nested tabular: one cell of the row
    inside = re.sub(r"\\begin\{tabular\}\[b\].*?\\end\{tabular\}", "header", inside)
    rows = [line for line in inside.splitlines() if line.strip() and line.strip() != r"\midrule"]
    for row in rows:
        assert row.endswith(r" \\"), f"row does not end with \\\\: {row!r}"
        assert row.count(r"\\") == 1, f"more than one row end in a line: {row!r}"
        # An & that is not escaped as \& separates cells.
        n_sep = len(re.findall(r"(?<!\\)&", row))
        assert n_sep == n_columns - 1, f"{n_sep + 1} cells in a {n_columns}-column row: {row!r}"


def coefficient_table() -> pd.DataFrame:
    # The shape of FitResult.tidy(), with the awkward values a real fit gives:
    # NaN df/p for a Bayesian row, tiny and negative estimates, an infinite bound.
    return pd.DataFrame({
        "backend": ["lme4", "lme4", "pymc"],
        "term": ["(Intercept)", "close:gendered", "sigma_frame"],
        "estimate": [12.3456, -0.0123456, 4.5e-5],
        "se": [0.812, 0.00311, np.nan],
        "ci_low": [10.7, -0.0185, -4.5e-5],
        "ci_high": [13.9, -0.0062, np.inf],
        "df": [38.2, 117.0, np.nan],
        "p_value": [1e-12, 0.0496, np.nan],
    })


SPECIALS = "a_b 50% R&D #1 $5 ~x ^2 C:\\path {set} <lt> |bar| Zoë José"


def special_character_table() -> pd.DataFrame:
    return pd.DataFrame({SPECIALS: [SPECIALS, "tab\tand\nnewline"], "n_#": [1, 2]})


def test_coefficient_table_structure():
    check_latex_structure(to_latex_table(coefficient_table(), "Fit", "tab:fit",
                                         notes="Satterthwaite df."), 8)


def test_special_character_table_structure():
    check_latex_structure(to_latex_table(special_character_table(), SPECIALS, "tab:sp"), 2)


def test_structure_checker_rejects_broken_tables():
    good = to_latex_table(coefficient_table(), "Fit", "tab:fit")
    check_latex_structure(good, 8)
    broken = {
        "missing bottomrule": good.replace("\\bottomrule\n", ""),
        "unbalanced brace": good.replace(r"\caption{Fit}", r"\caption{Fit"),
        "extra cell": good.replace("lme4 &", "lme4 & extra &", 1),
        "unclosed environment": good.replace("\\end{tabular}\n", ""),
        "doubled row end": good.replace(" \\\\\n\\midrule", " \\\\ \\\\\n\\midrule"),
    }
    for what, tex in broken.items():
        with pytest.raises(AssertionError):
            check_latex_structure(tex, 8)
            pytest.fail(f"checker accepted a table with {what}")


def test_tables_compile_with_pdflatex(pdflatex, tmp_path):
    compile_tables(
        pdflatex, tmp_path,
        to_latex_table(coefficient_table(), "Surprisal ~ close + gendered + (1|frame)",
                       "tab:fit", notes=["p < .05 in bold nowhere;", "df: Satterthwaite (lmerTest)."]),
        to_latex_table(special_character_table(), SPECIALS, "tab:special_chars"),
        to_latex_table(pd.DataFrame({"x": [np.nan, None]}), "All missing", None),
        to_latex_table(pd.DataFrame({"a": pd.Series([], dtype=float)}), "No rows", "tab:empty"),
        # Rows starting with "[" or "*" would be read as arguments of \\ or \midrule.
        to_latex_table(pd.DataFrame({"[h]": ["[x]", "*star", " [space", "ok"], "n": [1, 2, 3, 4]}),
                       "Brackets", "tab:brackets"),
    )


def test_study_report_table_files_compile_via_input(pdflatex, tmp_path):
    # What a paper does with the study's output: \input{tables/<name>.tex}.
    report = StudyReport("demo", tmp_path / "out", "Demo", simulated=True)
    path = report.table("lmm_close_gendered", coefficient_table(), "Fit of surprisal",
                        notes="Simulated panel; illustrative parameters.")
    check_latex_structure(path.read_text(), 7)   # ci_low and ci_high in one "95% CI" column
    compile_tables(pdflatex, tmp_path / "doc", f"\\input{{{path.as_posix()}}}")


def test_a_compile_failure_is_detected(pdflatex, tmp_path):
    # Guards the compile helper itself: an undefined command must fail the
    # test, so a pass above means pdflatex really accepted the tables.
    with pytest.raises(AssertionError, match="pdflatex failed"):
        compile_tables(pdflatex, tmp_path, r"\begin{table}\undefinedcommand\end{table}")


# Printable ASCII plus control characters: any of them in a cell must compile.
cell_text = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=126), max_size=30)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cells=st.lists(st.tuples(cell_text, cell_text), min_size=1, max_size=4), caption=cell_text)
def test_arbitrary_ascii_text_compiles(pdflatex, tmp_path_factory, cells, caption):
    df = pd.DataFrame(cells, columns=["left", "right"])
    tex = to_latex_table(df, caption, "tab:random")
    check_latex_structure(tex, 2)
    compile_tables(pdflatex, tmp_path_factory.mktemp("latex"), tex)


def test_fit_result_table_compiles(pdflatex, tmp_path):
    # FitResult.tidy() adds backend and formula columns; the formula's ~ and |
    # must print literally.
    coefs = coefficient_table().drop(columns="backend").assign(stat=[15.2, -3.97, np.nan])
    fit = FitResult("surprisal ~ close + gendered + (1|frame)", "lme4", "gaussian",
                    coefs[COEF_COLUMNS])
    tex = to_latex_table(fit.tidy(), "Closeness x gender", "tab:fit_result")
    check_latex_structure(tex, 2 + len(COEF_COLUMNS))
    assert r"surprisal \textasciitilde{} close + gendered + (1\textbar{}frame)" in tex
    compile_tables(pdflatex, tmp_path, tex)


# --- Markdown code spans in captions (one caption serves report.md and the .tex) -----------

FORMULA_CAPTION = ("`they_logodds ~ gendered + (1|frame)`; `gendered` = 1 for a gendered name; "
                   "50% of `a_b & c`, one stray ` backtick")


def test_caption_code_spans_become_texttt_with_escaping():
    tex = to_latex_table(coefficient_table(), FORMULA_CAPTION, "tab:f")
    caption = re.search(r"\\caption\{(.*)\}\n", tex).group(1)
    # Expected by hand from LATEX_ESCAPES: _ -> \_, ~ -> \textasciitilde{}, | -> \textbar{},
    # & -> \&, % -> \%; a backtick without a partner prints as a backtick.
    assert caption == (r"\texttt{they\_logodds \textasciitilde{} gendered + (1\textbar{}frame)}; "
                       r"\texttt{gendered} = 1 for a gendered name; 50\% of \texttt{a\_b \& c}, "
                       "one stray \\textasciigrave{} backtick")
    assert "`" not in caption
    check_latex_structure(tex, 8)


def test_a_caption_with_a_formula_compiles(pdflatex, tmp_path):
    compile_tables(pdflatex, tmp_path,
                   to_latex_table(coefficient_table(), FORMULA_CAPTION, "tab:formula",
                                  notes="Fitted as `y ~ x + (1 | g)` with lme4."))


# --- issue 43: a long table, a wide table and a simulated one compile as a paper inputs them --

def test_long_wide_and_simulated_tables_compile_via_input(pdflatex, tmp_path):
    from gbstats.report.latex import is_long, render_latex
    from gbstats.report.table_grammar import present

    long = present(pd.DataFrame({"item": [f"Item {i}" for i in range(120)],
                                 "mean": np.linspace(0.5, 2.5, 120)}), "Mean by item",
                   labels={"item": "Item", "mean": "Mean"}, notes=["N = 120 items."])
    wide = present(pd.DataFrame({f"Column {k}": [123456.789 * (k + 1), 2.5] for k in range(8)}),
                   "Eight wide columns", settings_to_notes=False)
    simulated = present(coefficient_table(), "Fit of surprisal", simulated=True)
    assert is_long(long) and not is_long(wide)
    tex = {name: render_latex(t) for name, t in
           (("long", long), ("wide", wide), ("simulated", simulated))}
    assert r"\begin{longtable}" in tex["long"] and r"\endhead" in tex["long"]
    assert r"\caption{SIMULATED: Fit of surprisal}" in tex["simulated"]
    check_latex_structure(tex["simulated"], 7)
    folder = tmp_path / "doc"
    folder.mkdir()
    inputs = []
    for name, text in tex.items():
        (folder / f"{name}.tex").write_text(text, encoding="utf-8")
        inputs.append(f"\\input{{{name}.tex}}")
    source = DOCUMENT.replace(r"\usepackage{siunitx}", "\\usepackage{siunitx}\n\\usepackage{longtable}")
    (folder / "doc.tex").write_text(source % "\n".join(inputs), encoding="utf-8")
    for _ in range(2):   # a longtable's widths settle on the second run
        out = subprocess.run([pdflatex, "-halt-on-error", "-interaction=nonstopmode", "doc.tex"],
                             cwd=folder, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and (folder / "doc.pdf").exists(), out.stdout[-2000:]

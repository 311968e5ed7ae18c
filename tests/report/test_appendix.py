"""tables/tables.tex, the appendix every report writes, and its pdflatex compile
(gbstats.report.appendix), and the read-back checks of a written report
(gbstats.report.report_tables)."""
from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from gbstats.report.appendix import appendix_source, read_log
from gbstats.report.provenance import provenance
from gbstats.report.report_tables import report_problems, report_tables, table_problems
from gbstats.report.study_report import StudyReport

needs_pdflatex = pytest.mark.skipif(shutil.which("pdflatex") is None,
                                    reason="pdflatex not installed (scripts/setup.sh installs it)")


def test_the_appendix_inputs_every_table_in_order_with_its_packages():
    tex = appendix_source("My study", ["b_table", "a_table"], landscape=True)
    assert tex.index(r"\input{b_table}") < tex.index(r"\input{a_table}")
    for package in ("booktabs", "siunitx", "pdflscape"):
        assert f"\\usepackage{{{package}}}" in tex
    assert r"\tracinglostchars=3" in tex and tex.rstrip().endswith(r"\end{document}")


def test_read_log_names_the_table_of_an_overfull_box_and_ignores_small_ones():
    log = "\n".join(["(./tables.tex", "(./fit.tex", "Overfull \\hbox (3.2pt too wide) in par",
                     ") (./wide.tex", "Overfull \\hbox (196.7pt too wide) in paragraph",
                     "! Undefined control sequence."])
    errors, overfull = read_log(log)
    assert errors == ["! Undefined control sequence."]
    assert overfull == ["wide.tex: overfull box 197 pt too wide"]


def write_report(folder, wide: bool = False):
    report = StudyReport("demo", folder, "Demo study")
    report.table("means", pd.DataFrame({"condition": ["a", "b"], "mean": [1.25, 2.5]}),
                 "Mean by condition", labels={"condition": "Condition"})
    if wide:   # a text column no page holds
        report.table("wide", pd.DataFrame({"text": ["word " * 60], "x": [1.5]}), "Too wide",
                     labels={"text": "Text"})
    return report.write(provenance("demo", [], seed=None))


@needs_pdflatex
def test_a_report_compiles_its_appendix_and_says_so(tmp_path):
    paths = write_report(tmp_path / "out")
    assert paths["appendix_pdf"].read_bytes()[:4] == b"%PDF"
    assert not (tmp_path / "out" / "tables" / "tables.log").exists()
    assert "compiled to [tables/tables.pdf]" in paths["report"].read_text()
    assert report_problems(tmp_path / "out") == {}


@needs_pdflatex
def test_a_table_that_runs_into_the_margin_is_reported(tmp_path):
    paths = write_report(tmp_path / "out", wide=True)
    md = paths["report"].read_text()
    assert "wide.tex: overfull box" in md
    problems = report_problems(tmp_path / "out")
    assert "tables/tables.tex" in problems
    assert (tmp_path / "out" / "tables" / "tables.log").exists()


def test_report_tables_reads_back_what_the_writer_wrote(tmp_path):
    report = StudyReport("demo", tmp_path, "t")
    report.table("fit", pd.DataFrame({"term": ["x", "y"], "estimate": [0.5, -1.25],
                                      "p_value": [0.01, 0.5], "n_boot": [200, 200]}),
                 "A fit", notes=["A note."])
    md = "\n".join(report.blocks)
    [table] = report_tables(md)
    assert table.name == "fit" and table.caption == "A fit"
    assert table.parts[0][0] == ["Term", "Estimate", "p"]
    assert table.parts[0][1][1] == ["y", "-1.250", ".500"]
    assert table.notes == "A note. In every row: Bootstrap replicates: 200."
    assert table_problems(table) == []


def test_table_problems_finds_an_unconverted_table():
    from gbstats.report.report_tables import ReportTable

    header = ["model", "std_error", "p"] + [f"C{i}" for i in range(7)]
    table = ReportTable("x", "A caption", [(header, [["m1", "0.1", "0.05"] + ["1"] * 7,
                                                     ["m2", "0.25", "True"] + ["1"] * 7])])
    problems = "\n".join(table_problems(table))
    assert "10 columns" in problems and "'std_error' is an identifier" in problems
    assert "'True' is a literal" in problems and "uneven decimals [1, 2]" in problems
    assert "p-values not in APA style" in problems


def test_nan_never_prints(tmp_path):
    report = StudyReport("demo", tmp_path, "t")
    report.table("t", pd.DataFrame({"x": [np.nan, 1.5], "y": [np.inf, 2.0]}), "c")
    assert "nan" not in report.blocks[-1].lower() and "inf" not in report.blocks[-1].lower()

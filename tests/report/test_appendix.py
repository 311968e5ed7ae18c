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
def test_the_same_tables_compile_to_the_same_pdf_bytes(tmp_path):
    # pdfTeX writes the date and a random trailer ID by default; two runs a second apart
    # (and in two folders) must still give one checksum, so reruns can be compared
    import time
    first = write_report(tmp_path / "a")["appendix_pdf"].read_bytes()
    time.sleep(1.1)
    assert write_report(tmp_path / "b")["appendix_pdf"].read_bytes() == first


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


def test_a_model_column_without_ses_is_not_read_as_uneven_numbers():
    """A model table's column mixes estimates and fit rows (log-likelihood to one decimal) by
    design; a model whose SEs are not shown ("--", a failed fit) has no "(SE)" line to say
    so, and is not a column of unevenly rounded numbers. A plain table's column still is."""
    from gbstats.report.report_tables import ReportTable

    rows = [["Intercept", "0.899"], ["", "--"], ["*Fit*", ""], ["Log-likelihood", "-538.3"]]
    model = ReportTable("m", "A model", [(["Term", "Failed fit"], rows)])
    assert table_problems(model) == []
    plain = ReportTable("p", "A table", [(["Term", "Value"], [["a", "0.899"], ["b", "-538.3"]])])
    assert "uneven decimals [1, 3]" in "\n".join(table_problems(plain))


# --- layouts that fit a 6.5-inch text block (issue 43) ------------------------------------

def test_read_log_reports_a_float_too_large_for_the_page():
    log = "\n".join(["(./tables.tex", "(./long.tex",
                     "LaTeX Warning: Float too large for page by 112.3pt on input line 40."])
    errors, layout = read_log(log)
    assert errors == [] and layout == ["long.tex: float too large for the page by 112 pt"]


def test_the_appendix_sets_a_six_and_a_half_inch_text_block_and_an_appendix_section():
    tex = appendix_source("My study", ["fit", "engines", "means"], appendix=["engines"])
    assert "textwidth=6.5in" in tex and r"\usepackage{longtable}" in tex
    # the tables a paper prints first, in order; the checks of the analysis after the heading
    assert tex.index(r"\input{fit}") < tex.index(r"\input{means}") \
        < tex.index("Appendix: engine comparisons") < tex.index(r"\input{engines}")
    assert "Appendix" not in appendix_source("My study", ["fit"])


@needs_pdflatex
def test_a_long_table_breaks_across_pages_with_its_header_repeated(tmp_path):
    # 150 rows are three pages of a 9-inch text block: a float would be too large
    report = StudyReport("demo", tmp_path / "out", "Demo study")
    rows = pd.DataFrame({"item": [f"Item {i}" for i in range(150)],
                         "mean": np.linspace(0.5, 2.5, 150)})
    report.table("long", rows, "Mean by item", labels={"item": "Item", "mean": "Mean"},
                 notes="Every item, N = 150.")
    report.table("engines", pd.DataFrame({"engine": ["lme4", "statsmodels"],
                                          "estimate": [0.51, 0.52]}),
                 "The same model in two engines", labels={"engine": "Engine"}, appendix=True)
    paths = report.write(provenance("demo", [], seed=None))
    tex = (tmp_path / "out" / "tables" / "long.tex").read_text()
    assert r"\begin{longtable}" in tex and r"\endhead" in tex and "(continued)" in tex
    assert report_problems(tmp_path / "out") == {}
    import subprocess
    text = subprocess.run(["pdftotext", str(paths["appendix_pdf"]), "-"], capture_output=True,
                          text=True).stdout if shutil.which("pdftotext") else ""
    if text:   # the header on every page, and the appendix heading before the engines
        assert text.count("Mean") >= 3 and text.index("Appendix") < text.index("two engines")


@needs_pdflatex
def test_a_wide_table_is_set_smaller_to_fit_the_text_block(tmp_path):
    # eight columns of long numbers overrun 6.5 inches at 11 pt; in smaller type they fit
    report = StudyReport("demo", tmp_path / "out", "Demo study")
    wide = pd.DataFrame({f"Column {k}": [123456.789 * (k + 1), 2.5] for k in range(8)})
    report.table("wide", wide, "Eight wide columns", settings_to_notes=False)
    report.write(provenance("demo", [], seed=None))
    assert report_problems(tmp_path / "out") == {}


@needs_pdflatex
def test_a_clean_compile_is_reused_for_the_same_sources_and_redone_for_new_ones(tmp_path):
    # a warm study re-run writes the same tables: the stored PDF is copied, not recompiled
    # (issue 41); the stored file is marked here, so a copy is told from a fresh compile
    from gbstats.report.appendix import LATEX_FOLDER

    cache = {"use_cache": True, "cache_dir": tmp_path / "cache"}

    def run(out, **kw):
        report = StudyReport("demo", tmp_path / out, "Demo", cache=cache)
        report.table("means", pd.DataFrame({"condition": ["a", "b"], "mean": [1.25, 2.5]}),
                     "Mean by condition", labels={"condition": "Condition"}, **kw)
        return report.write(provenance("demo", [], seed=None))["appendix_pdf"]

    first = run("a")
    stored = list((tmp_path / "cache" / LATEX_FOLDER).glob("*.pdf"))
    assert len(stored) == 1 and stored[0].read_bytes() == first.read_bytes()
    stored[0].write_bytes(stored[0].read_bytes() + b"\n% stored copy\n")
    assert run("b").read_bytes().endswith(b"% stored copy\n")          # reused
    changed = run("c", notes="A note that changes the source.")
    assert not changed.read_bytes().endswith(b"% stored copy\n")       # compiled anew
    assert len(list((tmp_path / "cache" / LATEX_FOLDER).glob("*.pdf"))) == 2


@needs_pdflatex
def test_a_failed_compile_is_not_stored_and_no_cache_means_no_reuse(tmp_path):
    from gbstats.report.appendix import LATEX_FOLDER

    paths = write_report(tmp_path / "wide", wide=True)   # overfull: not clean
    assert "wide.tex: overfull box" in paths["report"].read_text()
    report = StudyReport("demo", tmp_path / "w2", "Demo",
                         cache={"use_cache": True, "cache_dir": tmp_path / "cache"})
    report.table("wide", pd.DataFrame({"text": ["word " * 60], "x": [1.5]}), "Too wide",
                 labels={"text": "Text"})
    report.write(provenance("demo", [], seed=None))
    assert not (tmp_path / "cache" / LATEX_FOLDER).exists() \
        or not list((tmp_path / "cache" / LATEX_FOLDER).glob("*.pdf"))
    assert (tmp_path / "w2" / "tables" / "tables.log").exists()

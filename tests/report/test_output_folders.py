"""Which folders gbstats may empty or replace (issue 33, item 4): only the ones it made.

A report folder carries a `.gbstats-report` marker listing the files gbstats wrote; a folder
without it (or holding anything the marker does not list) is never replaced. Reports of a
gbstats without markers are accepted only when they hold nothing but what every report
writes."""
from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from gbstats.errors import OutputPathError
from gbstats.report import files
from gbstats.report.files import (MARKER, check_output_folder, check_outside_output,
                                  replace_refusal, staged_folder, write_atomically)
from gbstats.report.study_report import StudyReport


def _written_report(out, seed=1, study="s"):
    """A folder exactly as a study run leaves it."""
    with staged_folder(out, study) as staging:
        report = StudyReport(study, staging, "T")
        report.table("t", pd.DataFrame({"x": [float(seed)]}), "caption")
        pd.DataFrame({"x": [seed]}).to_csv(staging / "item_scores.csv", index=False)
        report.write({"study": study, "gbstats_version": "0", "seed": seed})
    return out


def test_a_written_report_carries_a_marker_listing_its_files(tmp_path):
    out = _written_report(tmp_path / "r")
    marker = json.loads((out / MARKER).read_text())
    assert marker["study"] == "s" and marker["gbstats_report"] == files.MARKER_FORMAT
    # the appendix (tables/tables.tex, and its PDF and log where pdflatex is installed) too
    appendix = sorted(p.relative_to(out).as_posix() for p in (out / "tables").iterdir()
                      if p.name.startswith("tables."))
    assert "tables/tables.tex" in appendix
    assert marker["files"] == sorted(["item_scores.csv", "report.md", "results.json",
                                      "tables/t.tex", *appendix])
    assert replace_refusal(out) is None
    _written_report(out, seed=2)  # and a second run replaces it
    assert json.loads((out / "results.json").read_text())["provenance"]["seed"] == 2


def test_a_file_added_to_a_report_folder_blocks_its_replacement(tmp_path):
    out = _written_report(tmp_path / "r")
    (out / "tables" / "my_edit.tex").write_text("mine")
    (out / "notes").mkdir()
    with pytest.raises(OutputPathError, match=r"now also holds notes, tables/my_edit\.tex"):
        check_output_folder(out)


def test_another_tools_results_json_is_not_a_report(tmp_path):
    """Issue 33, case 11: results.json of another tool, thesis.tex and analysis/."""
    (tmp_path / "results.json").write_text('{"accuracy": 0.9}')
    (tmp_path / "thesis.tex").write_text("x")
    (tmp_path / "analysis").mkdir()
    with pytest.raises(OutputPathError, match="not a gbstats report.*no gbstats provenance"):
        check_output_folder(tmp_path)


def _legacy_report(folder, extra=()):
    """A report of a gbstats before markers: results.json with gbstats provenance."""
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps(
        {"provenance": {"study": "role_nouns", "gbstats_version": "0.4.0"},
         "study": "role_nouns", "tables": {}}))
    (folder / "report.md").write_text("# r")
    (folder / "tables").mkdir()
    (folder / "tables" / "a.tex").write_text("x")
    (folder / "figures").mkdir()
    (folder / "figures" / "a.png").write_bytes(b"png")
    for name in extra:
        (folder / name).write_text("x")
    return folder


def test_an_older_gbstats_report_is_replaced_only_when_it_holds_what_every_report_writes(
        tmp_path):
    assert replace_refusal(_legacy_report(tmp_path / "plain")) is None
    with pytest.raises(OutputPathError, match=r"older gbstats .*item_probabilities\.csv.*delete "
                                              r"the folder yourself"):
        check_output_folder(_legacy_report(tmp_path / "csv", ["item_probabilities.csv"]))


@pytest.mark.parametrize("content", ["not json", '{"gbstats_report": 99, "files": []}', "[]"])
def test_an_unreadable_marker_is_no_licence(tmp_path, content):
    (tmp_path / MARKER).write_text(content)
    (tmp_path / "thesis.tex").write_text("x")
    with pytest.raises(OutputPathError, match="cannot tell which are its own"):
        check_output_folder(tmp_path)


def test_a_folder_changed_during_the_run_is_left_alone_and_the_report_kept(tmp_path):
    out = _written_report(tmp_path / "r")
    with pytest.raises(OutputPathError, match="changed during the run.*put in"):
        with staged_folder(out, "s") as staging:
            (staging / "results.json").write_text("{}")
            (out / "thesis.tex").write_text("written meanwhile")
    assert (out / "thesis.tex").read_text() == "written meanwhile"
    kept = [p for p in tmp_path.iterdir() if ".gbstats-new-" in p.name]
    assert len(kept) == 1 and (kept[0] / "results.json").read_text() == "{}"


def test_inputs_and_caches_inside_the_output_folder_are_refused(tmp_path):
    out = tmp_path / "r"
    with pytest.raises(OutputPathError, match=r"--human .*human\.csv lies inside --out"):
        check_outside_output(out, [("--stimuli", tmp_path / "s.csv"),
                                   ("--human", out / "human.csv")])
    with pytest.raises(OutputPathError, match=r"\$GBSTATS_CACHE .* lies inside --out"):
        check_outside_output(out, [("$GBSTATS_CACHE", out)])
    check_outside_output(out, [("--cache-dir", tmp_path / "r2" / "cache"),
                               ("--data-dir", tmp_path)])  # the parent is not inside


def test_atomic_writes_use_a_name_of_their_own(tmp_path):
    """Two writers of one path never share a temporary file (issue 33, case 14)."""
    seen = []

    def write(tmp):
        seen.append(tmp)
        tmp.write_text("a")
        if len(seen) == 1:  # a second writer starts while the first is writing
            write_atomically(tmp_path / "o.csv", write)

    write_atomically(tmp_path / "o.csv", write)
    assert len(set(seen)) == 2 and (tmp_path / "o.csv").read_text() == "a"
    assert sorted(os.listdir(tmp_path)) == ["o.csv"]

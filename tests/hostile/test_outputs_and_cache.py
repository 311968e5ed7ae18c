"""The pieces under the hostile cases, one at a time: output-path checks, the staged report
folder and its swap, umask-following files, the cache's checksums and its repair."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

from gbstats.errors import OutputPathError
from gbstats.report import files as output_files
from gbstats.report.study_report import StudyReport
from gbstats.report.files import (
    check_output_file, check_output_folder, publish_folder, remove_stale_partials, staged_folder,
)


def _report_folder(path, text):
    """A report folder as gbstats leaves it: its files, and the marker that lists them."""
    path.mkdir(parents=True)
    (path / "results.json").write_text(text)
    (path / "tables").mkdir()
    (path / "tables" / "old.tex").write_text(text)
    output_files.write_marker(path, "s")
    return path


def test_an_error_inside_the_stage_leaves_the_old_folder_and_no_staging(tmp_path):
    out = _report_folder(tmp_path / "r", "old")
    with pytest.raises(RuntimeError):
        with staged_folder(out) as staging:
            (staging / "results.json").write_text("new")
            raise RuntimeError("crash mid-write")
    assert (out / "results.json").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two renames"])
def test_publish_replaces_the_whole_folder(tmp_path, monkeypatch, exchange):
    if not exchange:  # a system without renameat2 RENAME_EXCHANGE takes the fallback
        monkeypatch.setattr(output_files, "_exchange", lambda a, b: False)
    out = _report_folder(tmp_path / "r", "old")
    with staged_folder(out) as staging:
        (staging / "results.json").write_text("new")
    # tables/old.tex is gone; the new folder carries its own marker
    assert sorted(p.name for p in out.iterdir()) == [output_files.MARKER, "results.json"]
    assert (out / "results.json").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


def test_publish_into_a_new_folder(tmp_path):
    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / "a").write_text("x")
    publish_folder(staging, tmp_path / "new")
    assert (tmp_path / "new" / "a").read_text() == "x" and not staging.exists()


def test_output_folder_checks(tmp_path):
    check_output_folder(tmp_path / "new" / "deeper")           # created later, parent writable
    check_output_folder(_report_folder(tmp_path / "old", "{}"))  # a previous report
    (tmp_path / "empty").mkdir()
    check_output_folder(tmp_path / "empty")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("x")
    with pytest.raises(OutputPathError, match="not a gbstats report.*thesis.tex"):
        check_output_folder(tmp_path / "mine")
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputPathError, match="existing file"):
        check_output_folder(tmp_path / "file")
    with pytest.raises(OutputPathError, match="lies under .*file, which is a file"):
        check_output_folder(tmp_path / "file" / "report")
    with pytest.raises(OutputPathError, match="root"):
        check_output_folder("/")


def test_output_file_checks(tmp_path):
    stimuli = tmp_path / "in.csv"
    stimuli.write_text("item,text\n1,a\n")
    assert check_output_file(tmp_path / "sub" / "out.csv", inputs=[stimuli]).name == "out.csv"
    for same in (stimuli, tmp_path / "x" / ".." / "in.csv"):
        with pytest.raises(OutputPathError, match="is the input file"):
            check_output_file(same, inputs=[stimuli])
    with pytest.raises(OutputPathError, match="is a folder"):
        check_output_file(tmp_path, inputs=[stimuli])


def test_stale_staging_folders_of_dead_runs_are_removed_and_live_ones_kept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    out = tmp_path / "r"
    stale = tmp_path / f".r.partial-{dead}-abc"
    live = tmp_path / f".r.partial-{os.getpid()}-def"
    stale.mkdir()
    live.mkdir()
    assert remove_stale_partials(out) == [stale]
    assert live.exists() and not stale.exists()


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077])
def test_written_files_and_folders_follow_the_umask(tmp_path, mask):
    old = os.umask(mask)
    try:
        out = tmp_path / "r"
        with staged_folder(out) as staging:
            report = StudyReport("s", staging, "T")
            import pandas as pd

            report.table("t", pd.DataFrame({"x": [1.0]}), "caption")
            report.write({"study": "s"})
    finally:
        os.umask(old)
    for path, full in ((out, 0o777), (out / "report.md", 0o666), (out / "results.json", 0o666),
                       (out / "tables" / "t.tex", 0o666)):
        assert path.stat().st_mode & 0o777 == full & ~mask, path


# --- the score cache --------------------------------------------------------------------

def test_checksums_reject_a_changed_value_and_count_it(tmp_path):
    from models.cache import ScoreCache, rejected_snapshot, rejected_summary

    cache = ScoreCache(tmp_path)
    cache.put_many({"a": {"logprobs": [-48.2267]}, "b": {"logprobs": [-1.5]}})
    with sqlite3.connect(cache.path) as conn:
        conn.execute("UPDATE scores SET value = ? WHERE key = 'a'",
                     (json.dumps({"logprobs": [-42.2267]}, separators=(",", ":")),))
    before = rejected_snapshot()
    found = cache.lookup(["a", "b", "c"])
    assert found.found == {"b": {"logprobs": [-1.5]}}
    assert found.mismatched == ["a"] and found.unverified == []
    assert rejected_summary(since=before).startswith("1 cached score(s) failed their checksum")
    cache.put_many({"a": {"logprobs": [-48.2267]}})  # the recomputed value replaces it
    assert cache.get_many(["a"]) == {"a": {"logprobs": [-48.2267]}}


def test_a_file_that_is_not_a_database_names_itself_and_the_fix(tmp_path):
    from models.cache import CACHE_FILE, CacheCorruptError, ScoreCache, repair_cache

    (tmp_path / CACHE_FILE).write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(CacheCorruptError) as info:
        ScoreCache(tmp_path)
    message = str(info.value)
    assert str(tmp_path / CACHE_FILE) in message and "repair-cache" in message
    report = repair_cache(tmp_path)
    assert report.salvaged == 0 and report.moved_to.exists()
    assert len(ScoreCache(tmp_path)) == 0  # a fresh, usable cache in its place

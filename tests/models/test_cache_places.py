"""The score cache on a place it cannot write (issue 33, item 5): a healthy cache is never
called damaged, repair-cache refuses a folder it cannot write, and a run counts the scores
it committed (what Ctrl-C keeps). The OS boundary is where a failure is made here; the
hostile cases use real read-only and full file systems."""
from __future__ import annotations

import errno
import sqlite3
import tempfile

import pytest

from gbstats.errors import PlaceError
from models import cache as score_cache
from models.cache import CacheCorruptError, ScoreCache, place_message, repair_cache

# File-system places of the score cache, no model at all: pinned stack only (the tf5 pass
# leaves them out; see the Makefile).
pytestmark = pytest.mark.stack_independent


def test_a_full_disk_is_not_damage(tmp_path):
    message = place_message(tmp_path / "scores.sqlite",
                            sqlite3.OperationalError("database or disk is full"))
    assert "is full" in message and "not damaged" in message and "rerun" in message


def test_a_read_only_folder_is_not_damage(tmp_path, monkeypatch):
    ScoreCache(tmp_path).put_many({"a": {"logprobs": [-1.0]}})

    def read_only(*args, **kwargs):  # the OS boundary: creating a file in the folder
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    message = place_message(tmp_path / "scores.sqlite",
                            sqlite3.OperationalError("attempt to write a readonly database"))
    assert "read-only file system" in message and "not damaged" in message
    assert "--cache-dir" in message and "--no-cache" in message
    with pytest.raises(PlaceError, match="cannot repair .* read-only"):
        repair_cache(tmp_path)


def test_damage_is_still_damage(tmp_path):
    """A file that is not a database, in a writable folder: the message of old."""
    assert place_message(tmp_path / "scores.sqlite",
                         sqlite3.DatabaseError("file is not a database")) is None
    (tmp_path / "scores.sqlite").write_bytes(b"not sqlite" * 100)
    with pytest.raises(CacheCorruptError, match="damaged"):
        ScoreCache(tmp_path)


def test_committed_scores_are_counted_for_the_interrupted_line(tmp_path, monkeypatch):
    monkeypatch.setattr(score_cache, "stored_totals", {})
    assert score_cache.stored_summary() is None
    ScoreCache(tmp_path).put_many({f"k{i}": {"v": i} for i in range(1200)})
    assert score_cache.stored_summary() == f"1,200 scores (in {tmp_path / 'scores.sqlite'})"

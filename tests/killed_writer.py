"""Kill a process that is writing the score cache, mid-write, and read what survived.

Shared by the cache tests that check a killed run (a local scorer, a Ray
driver) leaves a consistent database whose entries a re-run reuses.
"""
from __future__ import annotations

import signal
import sqlite3
import subprocess
import time
from pathlib import Path


def committed_entries(db: Path) -> int:
    """Entries committed so far; 0 before the file or its table exists."""
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=30) as conn:
            return conn.execute("SELECT COUNT(*) FROM scores").fetchone()[0]
    except sqlite3.OperationalError:  # table not created yet
        return 0


def kill_mid_write(process: subprocess.Popen, db: Path, *, after: int, total: int,
                   timeout: float) -> dict:
    """SIGKILL `process` once `after` entries are committed; {key: value} that survived.

    Asserts that the process was killed (did not end on its own), that the
    database passes SQLite's integrity check, and that the kill landed
    mid-run (0 < survivors < total), without which the caller's test means nothing.
    """
    deadline = time.monotonic() + timeout
    while committed_entries(db) < after and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    _, err = process.communicate()
    assert process.returncode == -signal.SIGKILL, \
        f"the process ended on its own: {err.decode()[-2000:]}"
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        survived = dict(conn.execute("SELECT key, value FROM scores"))
    assert 0 < len(survived) < total, "the kill must land mid-run for this test to mean anything"
    return survived

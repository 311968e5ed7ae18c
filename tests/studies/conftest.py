"""Fixtures shared by the study tests: each study's baseline run made once per session."""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import sys
from pathlib import Path

import pytest

BASELINES = Path(__file__).resolve().parents[1] / "reference" / "study_baselines"


@contextlib.contextmanager
def _held(lock_file: Path):
    """An exclusive lock on `lock_file` while the block runs (released if the process dies)."""
    with open(lock_file, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _session_folder(tmp_path_factory) -> Path:
    """A folder every pytest-xdist worker of this session shares: the parent of the workers'
    own base folders (pytest-N/ under xdist, where each worker has pytest-N/popen-gwK), or
    this process's base folder without xdist."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def study_output(tmp_path_factory):
    """`study_output(study, flags=None)` -> (report folder, results.json's tables): the study
    run in a fresh process with its baseline flags (make_baselines.RUNS) or `flags`, once per
    session, so that the baseline test and the tables test read the same run.

    Once per session means once for all xdist workers: test_study_baselines.py and
    test_study_tables.py usually run on different workers (`--dist loadfile`), and each
    worker used to run every study again (issue 41: the runs are most of both files' time).
    The first worker to ask for a study runs it into the shared session folder, under a
    file lock; a worker asking while it runs waits for it, then reads the same folder."""
    sys.path.insert(0, str(BASELINES))
    from make_baselines import RUNS, run_study

    shared = _session_folder(tmp_path_factory) / "study_runs"
    shared.mkdir(parents=True, exist_ok=True)
    made: dict[str, tuple[Path, dict]] = {}

    def get(study: str, flags: list[str] | None = None):
        if study not in made:
            if flags is not None:
                RUNS.setdefault(study, list(flags))
            key = hashlib.sha256(json.dumps([study, RUNS[study]]).encode()).hexdigest()[:12]
            folder = shared / f"{study}-{key}"
            out, finished = folder / study, folder / "finished"
            with _held(shared / f"{study}-{key}.lock"):
                if finished.exists():  # another worker ran it (a failed run leaves no mark)
                    tables = json.loads((out / "results.json").read_text())["tables"]
                else:
                    folder.mkdir(exist_ok=True)
                    tables = run_study(study, out)
                    finished.touch()
            made[study] = (out, tables)
        return made[study]
    return get

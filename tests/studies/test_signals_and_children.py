"""SIGTERM and SIGKILL (issue 44, case 14): a study stopped by `timeout`, a batch
scheduler's time limit or `docker stop` ends as Ctrl-C does, with one line and exit code
143, and no child process (the clean R server, the fit it forked) outlives the study by
more than a second, however the study died. Real processes, real signals, real R."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

psutil = pytest.importorskip("psutil")

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.needs_r


def _env(tmp_path) -> dict:
    env = dict(os.environ, GBSTATS_CACHE=str(tmp_path / "cache"), OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env.pop("GBSTATS_FIT_IN_PROCESS", None)
    return env


def _wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def _server_and_fit(parent: psutil.Process):
    """The clean R server (a child of `parent`) once it has forked a fit, and that fit."""
    for child in parent.children():
        if "gbstats.mixed.r_server" in " ".join(child.cmdline()):
            fits = child.children()
            if fits:
                return child, fits[0]
    return None


def _running(process) -> bool:
    """Still running: a zombie (dead, waiting for a parent to reap it) is not."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _all_gone(processes, timeout: float) -> list:
    """The processes still running after `timeout` seconds (polled)."""
    deadline = time.monotonic() + timeout
    while True:
        alive = [p for p in processes if _running(p)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def test_the_r_server_and_its_fit_die_with_a_killed_caller(tmp_path):
    # a caller SIGKILLed mid-fit cannot clean up: the server must notice on its own
    script = textwrap.dedent("""
        import time
        from gbstats.mixed.clean_process import in_clean_process
        in_clean_process(time.sleep, 300)   # a fit that would run for five minutes
    """)
    caller = subprocess.Popen([sys.executable, "-c", script], env=_env(tmp_path))
    try:
        server, fit = _wait_for(lambda: _server_and_fit(psutil.Process(caller.pid)), 120,
                                "the R server to fork the fit")
        caller.send_signal(signal.SIGKILL)
        caller.wait(timeout=10)
        alive = _all_gone([server, fit], timeout=1.5)
        assert not alive, f"still running 1.5 s after the caller died: {alive}"
    finally:
        if caller.poll() is None:
            caller.kill()


@pytest.mark.slow
def test_sigterm_stops_a_study_like_ctrl_c_and_ends_its_children(tmp_path, data_dir):
    out = tmp_path / "report"
    study = subprocess.Popen(
        [sys.executable, "-m", "studies.role_nouns", "--model", "none", "--no-bayes",
         "--data-dir", str(data_dir), "--out", str(out)], env=_env(tmp_path),
        stderr=subprocess.PIPE, text=True)
    try:
        process = psutil.Process(study.pid)
        server, fit = _wait_for(lambda: _server_and_fit(process), 240, "the first lme4 fit")
        study.send_signal(signal.SIGTERM)
        _, err = study.communicate(timeout=60)
    finally:
        if study.poll() is None:
            study.kill()
    assert study.returncode == 143, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("studies.role_nouns: terminated (SIGTERM): "), err[-2000:]
    assert "Traceback" not in err
    assert not _all_gone([server, fit], timeout=1.0)
    assert not out.exists()

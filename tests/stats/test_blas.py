"""PyTensor is linked to OpenBLAS by gbstats, and PyMC fits no longer warn about BLAS.

Each check runs in a fresh process, because PyTensor reads its BLAS flags once,
when it is first imported.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WARNING = "could not link to a BLAS installation"


def _python(code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTENSOR_FLAGS"}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=900)


def test_pytensor_calls_blas_through_the_flags_gbstats_sets(openblas):
    done = _python("import json; from gbstats.blas import blas_status; "
                   "print(json.dumps(blas_status()))")
    assert done.returncode == 0, done.stderr[-2000:]
    linked, detail = json.loads(done.stdout.strip().splitlines()[-1])
    assert linked, detail
    assert "set by gbstats" in detail and "CGemv" in detail
    assert WARNING not in done.stderr


def test_the_users_own_blas_flags_are_left_alone(monkeypatch):
    from gbstats import blas

    monkeypatch.setenv("PYTENSOR_FLAGS", "blas__ldflags=-lmyblas")
    assert blas.configure_pytensor() == "user"
    assert os.environ["PYTENSOR_FLAGS"] == "blas__ldflags=-lmyblas"


def test_gbstats_check_reports_the_blas_state(openblas):
    done = _python("from gbstats.check import blas_line; print(blas_line().render())")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("[ok  ] BLAS for PyTensor: PyTensor blas__ldflags=")


@pytest.mark.slow
def test_a_bayesian_fit_prints_no_blas_warning(openblas):
    # the study's own call (fit_bayes with the default sampler), on a small data set
    code = """
import numpy as np, pandas as pd
from gbstats.mixed.bayes import fit_bayes
rng = np.random.default_rng(3)
frame = np.repeat(np.arange(10), 4)
df = pd.DataFrame({"frame": [f"f{i}" for i in frame], "x": np.tile(["a", "b"], 20),
                   "y": rng.normal(size=40) + frame * 0.1})
fit = fit_bayes("y ~ x + (1|frame)", df, draws=100, tune=100, loo=False)
print(fit.fit_stats["sampler"])
"""
    done = _python(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert WARNING not in done.stderr

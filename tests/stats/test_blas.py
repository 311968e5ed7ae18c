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

import numpy as np
import pandas as pd
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


# --- numpy's and scipy's own BLAS: one thread in the resampling kernels (issue 41) --------

def _blas_threads() -> dict[str, int]:
    """{library: threads} for every BLAS library loaded. A serial build (Debian's, which
    PyTensor loads in a process that ran a Bayesian fit) always reports one."""
    from threadpoolctl import threadpool_info

    return {lib["filepath"]: lib["num_threads"] for lib in threadpool_info()
            if lib["user_api"] == "blas"}


def test_the_resampling_kernels_run_on_one_blas_thread_and_restore_it(monkeypatch):
    from gbstats import blas

    for variable in blas.BLAS_THREAD_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    seen = []
    limited = blas.on_one_blas_thread(lambda: seen.append(_blas_threads()) or 7)
    from threadpoolctl import threadpool_limits

    # two threads going in (the test processes run on one: tests/conftest.py)
    with threadpool_limits(limits=2, user_api="blas"):
        going_in = _blas_threads()
        assert 2 in going_in.values()
        assert limited() == 7
        assert [set(threads.values()) for threads in seen] == [{1}]
        assert _blas_threads() == going_in
        # a count the user set is theirs: nothing is limited
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
        seen.clear()
        limited()
        assert seen == [going_in]


def test_one_blas_thread_gives_the_same_replicates_to_the_bit(monkeypatch):
    """The alignment kernels' tables with numpy's BLAS on every core and on one: equal to
    the bit, so the limit changes how fast, never what (on this machine: 2 cores)."""
    from threadpoolctl import threadpool_limits

    from gbstats import blas
    from gbstats.alignment.group_comparison import profile_agreement_from_matrices
    from gbstats.alignment.reliability import (alignment_tables_from_matrices,
                                               size_matched_from_matrices)
    from gbstats.alignment.simulation import simulate_alignment_panel

    for variable in blas.BLAS_THREAD_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    x, groups = simulate_alignment_panel({"small": 16, "large": 89}, 0.35, n_items=335,
                                         sd_slope=0.2, items_per_person=55, seed=11)
    runs = {
        "alignment": lambda f, rng: f(x, groups, n_splits=20, n_boot=60, n_var_boot=60,
                                      n_boot_splits=20, rng=rng),
        "profile": lambda f, rng: f(groups, n_splits=20, n_boot=60, n_boot_splits=20, rng=rng),
        "size_matched": lambda f, rng: f(x, groups, n_subsamples=20, n_boot=60,
                                         n_boot_subsamples=3, rng=rng)}
    kernels = {"alignment": alignment_tables_from_matrices,
               "profile": profile_agreement_from_matrices,
               "size_matched": size_matched_from_matrices}
    for name, run in runs.items():
        one = run(kernels[name], np.random.default_rng(5))
        with threadpool_limits(limits=max(2, os.cpu_count() or 2), user_api="blas"):
            every = run(kernels[name].__wrapped__, np.random.default_rng(5))
        for a, b in zip(one if isinstance(one, tuple) else (one,),
                        every if isinstance(every, tuple) else (every,)):
            if a is not None:
                pd.testing.assert_frame_equal(a, b, check_exact=True, obj=name)

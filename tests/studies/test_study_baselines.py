"""No numbers change: every study's tables equal those recorded before the runner rewrite.

The baselines were produced at commit 834571a by
tests/reference/study_baselines/make_baselines.py (the flags are in that
script and in each baseline file). Each test runs the study the same way, in
a fresh process (as the baselines were made: lme4 fits run inside the
pytest process differ from a fresh process's by up to 1e-5 relative, in GLMM
CIs and Satterthwaite df, with the same code), and compares every table of results.json: the same tables, the
same columns, the same rows, strings equal and numbers equal to 1e-9 relative
(the runs are seeded; lme4, the bootstrap and the cached model scores are
deterministic). Provenance (dates, timings, git hash, versions) is not compared.
"""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

HERE = Path(__file__).resolve().parents[1] / "reference" / "study_baselines"
sys.path.insert(0, str(HERE))
from make_baselines import RUNS, run_study  # noqa: E402

needs_r = pytest.mark.skipif(importlib.util.find_spec("pymer4") is None, reason="needs R/lme4")


def assert_same_tables(found: dict, expected: dict) -> None:
    assert sorted(found) == sorted(expected)
    for name in expected:
        want = pd.DataFrame.from_records(expected[name])
        got = pd.DataFrame.from_records(found[name])
        # the baseline files sort keys, so column order is not recorded; the columns are
        assert sorted(got.columns) == sorted(want.columns), name
        pd.testing.assert_frame_equal(got[list(want.columns)], want, check_exact=False, rtol=1e-9, atol=1e-12,
                                      check_dtype=False, obj=f"table {name}")


@needs_r
@pytest.mark.slow
@pytest.mark.parametrize("study", list(RUNS))
def test_tables_equal_the_baseline(study, tmp_path):
    baseline = json.loads((HERE / f"{study}.json").read_text())
    assert baseline["flags"] == RUNS[study], "the baseline was made with other flags"
    assert_same_tables(run_study(study, tmp_path / study), baseline["tables"])


def test_a_changed_number_is_caught():
    """The comparison itself fails on a one-in-a-million change (so the test above can fail)."""
    table = {"t": [{"term": "a", "estimate": 1.0}, {"term": "b", "estimate": 2.0}]}
    changed = {"t": [{"term": "a", "estimate": 1.0}, {"term": "b", "estimate": 2.000002}]}
    assert_same_tables(table, table)
    with pytest.raises(AssertionError):
        assert_same_tables(changed, table)

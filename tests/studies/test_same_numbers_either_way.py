"""Issue 33, "Process state": the same command gives the same numbers whichever way its scores
arrived, from the score cache or from the model loaded in the same process.

pronoun_fidelity's GLMM is where it showed: its likelihood is flat (quasi-separated "she"
terms), and where lme4 and blme stop depended on the memory layout of the process that
fitted it (gbstats.mixed.clean_process, which records the measurements). The study is run
twice, as the baseline test runs it (tests/reference/study_baselines/make_baselines.py,
small settings): first with an empty score cache, so the embedded model is loaded and
scores in the process that then fits, then with every score from the cache, so torch is
never imported. Fits are recomputed both times (GBSTATS_NO_FIT_CACHE=1).

Every table must agree at the baseline tolerances (tests/tolerances.py, through the
baseline test's own comparison); the GLMM tables, whose numbers are fitted in the clean R
process, must agree exactly, blme's unconverged rows and glmer's SE of the separated term
included (the baseline comparison leaves those out).
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
BASELINES = REPO / "tests" / "reference" / "study_baselines"
sys.path.insert(0, str(BASELINES))
from make_baselines import RUNS

pytestmark = [pytest.mark.slow, pytest.mark.needs_r, pytest.mark.needs_model]
STUDY = "pronoun_fidelity"
GLMM_TABLES = ("glmm", "distractor_effects")


def _baseline_test():
    spec = importlib.util.spec_from_file_location(
        "study_baselines_test", REPO / "tests" / "studies" / "test_study_baselines.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(out: Path, cache: Path, data_dir: Path) -> tuple[dict, str]:
    env = dict(os.environ, GBSTATS_CACHE=str(cache), GBSTATS_NO_FIT_CACHE="1",
               GBSTATS_DATA=str(data_dir),
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    env.pop("GBSTATS_FIT_IN_PROCESS", None)
    argv = [*RUNS[STUDY], "--seed", "2023", "--out", str(out)]
    done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(argv)], env=env,
                          capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out / "results.json").read_text())["tables"], done.stdout


# The study's own main, in a fresh process, then whether that process imported torch.
DRIVER = f"""
import json, sys
from studies.discovery import get_study
code = get_study({STUDY!r}).main(json.loads(sys.argv[1]))
print("torch imported:", "torch" in sys.modules)
sys.exit(code)
"""


def test_cached_and_freshly_scored_runs_give_the_same_fits(tmp_path, data_dir):
    cache = tmp_path / "cache"
    fresh, said_fresh = _run(tmp_path / "fresh", cache, data_dir)
    cached, said_cached = _run(tmp_path / "cached", cache, data_dir)
    # the first run scored with the model in its own process; the second read every score
    # from the cache and never imported torch
    assert "torch imported: True" in said_fresh
    assert "torch imported: False" in said_cached

    check = _baseline_test()
    partly = {t: cols for (s, t), cols in check.PARTLY_IDENTIFIED.items() if s == STUDY}
    unconverged = {t: rows for (s, t), rows in check.UNCONVERGED_ROWS.items() if s == STUDY}
    check.assert_same_tables(cached, fresh, check.FITTED_TABLES[STUDY], partly,
                             check.MODEL_TABLES[STUDY], unconverged)
    for name in GLMM_TABLES:
        pd.testing.assert_frame_equal(pd.DataFrame.from_records(cached[name]),
                                      pd.DataFrame.from_records(fresh[name]), check_exact=True,
                                      obj=f"table {name}")

"""Fixtures shared by the study tests: each study's baseline run made once per session."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

BASELINES = Path(__file__).resolve().parents[1] / "reference" / "study_baselines"


@pytest.fixture(scope="session")
def study_output(tmp_path_factory):
    """`study_output(study, flags=None)` -> (report folder, results.json's tables): the study
    run in a fresh process with its baseline flags (make_baselines.RUNS) or `flags`, once per
    session, so that the baseline test and the tables test read the same run."""
    sys.path.insert(0, str(BASELINES))
    from make_baselines import RUNS, run_study

    made: dict[str, tuple[Path, dict]] = {}

    def get(study: str, flags: list[str] | None = None):
        if study not in made:
            if flags is not None:
                RUNS.setdefault(study, list(flags))
            out = tmp_path_factory.mktemp(study) / study
            made[study] = (out, run_study(study, out))
        return made[study]
    return get

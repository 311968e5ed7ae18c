"""name_gender's Bayesian flags (issue 33, item 7): --no-bayes cannot be silently overridden
by --human-twins or --alignment-twin, and every twin the study fits is recorded in
results.json's "bayes_twins" and refitted under --prior-sensitivity (the study fits with
fit_with_twin directly, so it records its twins through `Run.record_twins`)."""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pandas as pd
import pytest

from studies.name_gender import steps
from studies.name_gender.run import STUDY
from studies.pipeline import Run


@pytest.mark.parametrize("flags", [["--human-twins"], ["--alignment-twin"],
                                   ["--human-twins", "--alignment-twin"]])
def test_twin_flags_and_no_bayes_conflict_before_any_work(tmp_path, flags):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = STUDY.main(["--model", "none", "--no-bayes", *flags, "--out", str(tmp_path / "r"),
                           "--data-dir", str(tmp_path / "no-data-here")])
    line = err.getvalue().strip()
    assert code == 2 and "\n" not in line, line
    assert all(flag in line for flag in flags) and "--no-bayes" in line
    assert not (tmp_path / "r").exists()


def _tiny_twin():
    from gbstats.mixed.fitting import fit_bayes_twin

    rng = np.random.default_rng(5)
    g = np.repeat(np.arange(8), 6)
    rows = pd.DataFrame({"g": [f"g{k}" for k in g],
                         "y": rng.normal(0, 1, 8)[g] + rng.normal(0, 1, g.size)})
    return fit_bayes_twin("y ~ 1 + (1|g)", rows, draws=20, max_draws=20, seed=1, loo=False)


@pytest.mark.slow
def test_every_twin_is_recorded_and_refitted_under_prior_sensitivity(tmp_path):
    args = STUDY.build_parser().parse_args(["--model", "none", "--prior-sensitivity",
                                            "--out", str(tmp_path / "r")])
    run = Run(STUDY, args)
    twin = _tiny_twin()
    steps.record_twins(run, {"exp1_m_nameGender": {"pymc": twin},
                             "exp1 alignment GLMM": {"pymc": twin}})
    assert set(run.bayes_twins) == {"exp1_m_nameGender", "exp1 alignment GLMM"}
    assert run.bayes_twins["exp1_m_nameGender"]["n_draws"] == 20
    assert set(run.prior_sensitivity) == {"exp1_m_nameGender", "exp1 alignment GLMM"}

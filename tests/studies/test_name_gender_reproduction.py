"""The exact reproduction of Gardner & Brown-Schmidt's (2024) main glmer models.

Reference values: tests/reference/gardner2024_published.json, transcribed from
the authors' knitted analyses (bethanyhgardner/gender-bias-names,
analysis/exp{1..4}_analysis_main.md at commit 67cf6d4a46747a732d0c0f5fbe6b0d94e5d628cf),
printed by lme4's summary(); the strings keep the printed precision.

Tolerances (issue 23, B2): each fixed effect and variance component within half a
unit of its last printed digit plus 1.5e-4 for glmer's optimizer variation (our
fits and the published ones use the same data and codings, and lme4's default
Laplace fit, nAGQ = 1, bobyqa then Nelder-Mead, but an lme4 / BLAS of another
machine moves the optimum in the 5th decimal); standard errors within 2%
(glmer's SEs come from a numerical Hessian); nobs and group counts exactly;
logLik and AIC to their printed 0.1.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from studies.name_gender.human import HUMAN_MODELS, fit_human_models, model_data

PUBLISHED = json.loads((Path(__file__).resolve().parents[1] / "reference"
                        / "gardner2024_published.json").read_text())["models"]
OPTIMIZER_SLACK = 1.5e-4

pytestmark = [pytest.mark.needs_r, pytest.mark.slow]


def printed_tolerance(printed: str) -> float:
    digits = len(printed.split(".")[1]) if "." in printed else 0
    return 0.5 * 10 ** -digits + OPTIMIZER_SLACK


@pytest.fixture(scope="session")
def human_fits(data_dir):
    """The 7 glmer fits, once per session."""
    from gbstats.data.registry import load_dataset
    from gbstats.mixed.clean_process import clean_fits

    tables = load_dataset("gardner2024", data_dir).tables
    # The study's own call, in the clean R server as the study makes it (studies/pipeline.py
    # fits inside clean_fits()), through the session's fit cache: the name_gender baseline run
    # (tests/studies/test_study_baselines.py) makes these very fits, whose key covers the
    # data, formula, options, gbstats' source and the R packages, so whichever of the two
    # runs first fits them and the other reads that result; both check the same numbers
    # (issue 41: each fitted them again, 38 s of a make test).
    with clean_fits():
        return fit_human_models(tables, use_cache=True), tables


def test_every_published_model_is_fitted(human_fits):
    fits, _ = human_fits
    assert sorted(fits) == sorted(PUBLISHED)
    assert sorted(s.key for s in HUMAN_MODELS) == sorted(PUBLISHED)


@pytest.mark.parametrize("key", sorted(PUBLISHED))
def test_fixed_effects_and_standard_errors(human_fits, key):
    fit = human_fits[0][key]["lme4"]
    coefs = fit.coefs.set_index("term")
    published = PUBLISHED[key]["fixed"]
    assert list(coefs.index) == list(published)
    for term, (estimate, se) in published.items():
        assert abs(coefs.loc[term, "estimate"] - float(estimate)) <= printed_tolerance(estimate), term
        assert coefs.loc[term, "se"] == pytest.approx(float(se), rel=0.02), term
    assert_no_warning_but_a_near_tolerance_gradient(fit.warnings)


def assert_no_warning_but_a_near_tolerance_gradient(warnings):
    """Exp 3's m_all sits at the edge of lme4's gradient check: with the same code, data
    and R, glmer ends at the printed optimum in a plain process, but after `import torch`
    in the same process (as in a full test session) at a point that reports
    "max|grad| = 0.0025 (tol = 0.002)", with estimates still within 1.1e-4 of the
    printed ones. That warning, with a gradient below 0.01, is allowed;
    so is the design check's finding on the authors' rating models (issue 31: the
    gender rating varies only between first names, which have no random effect; it is
    the authors' model, reproduced as published, and the report carries the finding).
    Any other warning fails."""
    import re

    from gbstats.mixed.design import is_design_warning

    for w in warnings:
        if is_design_warning(w):
            assert "GenderRatingCentered varies only between the levels of FirstName" in w, w
            continue
        grad = re.search(r"max\|grad\| = ([0-9.e-]+) \(tol = 0\.002", w)
        assert grad and float(grad.group(1)) < 0.01, w


@pytest.mark.parametrize("key", sorted(PUBLISHED))
def test_variance_components(human_fits, key):
    variance = human_fits[0][key]["lme4"].ranef_var.set_index("group")["variance"]
    for group, printed in PUBLISHED[key]["variance"].items():
        assert abs(variance[group] - float(printed)) <= printed_tolerance(printed), group


@pytest.mark.parametrize("key", sorted(PUBLISHED))
def test_sample_and_fit_statistics(human_fits, key):
    stats = human_fits[0][key]["lme4"].fit_stats
    printed = PUBLISHED[key]["fit"]
    assert stats["nobs"] == printed["nobs"]
    assert stats["n_groups"] == {"Participant": printed["n_participants"],
                                 "Item": printed["n_items"]}
    assert abs(stats["loglik"] - float(printed["logLik"])) <= 0.05 + 1e-3
    assert abs(stats["aic"] - float(printed["AIC"])) <= 0.05 + 1e-3


def test_exp3_subset_keeps_the_all_trials_weights(human_fits):
    """The authors set centerfactor on all Exp 3 trials, then fitted the he/she subset:
    R keeps the factor's contrasts, so the subset's weights are the all-trials counts."""
    _, tables = human_fits
    spec = next(s for s in HUMAN_MODELS if s.key == "exp3_m_noOther")
    rows, contrasts = model_data(spec, tables["exp3"])
    assert dict(contrasts["Condition"].counts) == {"first": 2835, "full": 2499, "last": 3570}
    assert rows["Condition"].value_counts().to_dict() != {"first": 2835, "full": 2499, "last": 3570}

"""Fits started early in a worker thread (gbstats.mixed.background, issue 34): the result is
the one a fit in place gives, it is handed only to a call with the same inputs, and an error
in the worker reaches the caller.

The fits are real statsmodels fits (fast, no R); the twin's own behaviour in the background
is covered by the singular_they runs, which start both twins this way.
"""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from gbstats.errors import GbstatsError
from gbstats.mixed.background import BackgroundFits
from gbstats.mixed.fitting import TWIN_LABEL, _twin_progress, fit_frequentist

FORMULA = "y ~ x + (1|g)"
OPTIONS = {"backend": "statsmodels", "use_cache": False}


@pytest.fixture
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(4)
    g = np.repeat(np.arange(12), 10)
    x = rng.normal(size=g.size)
    y = 0.5 * x + rng.normal(size=12)[g] + rng.normal(size=g.size)
    return pd.DataFrame({"y": y, "x": x, "g": [f"g{i}" for i in g]})


def test_a_background_fit_is_the_fit_in_place(frame):
    fits = BackgroundFits()
    fits.start("m", fit_frequentist, FORMULA, frame, **OPTIONS)
    started = fits.take("m", fit_frequentist, FORMULA, frame, OPTIONS)
    in_place = fit_frequentist(FORMULA, frame, backend="statsmodels")
    pd.testing.assert_frame_equal(started.result(timeout=120).coefs, in_place.coefs)
    assert fits.pending() == []


def test_fits_run_in_the_order_started(frame):
    fits = BackgroundFits()
    fits.start("first", fit_frequentist, FORMULA, frame, **OPTIONS)
    fits.start("second", fit_frequentist, "y ~ 1 + (1|g)", frame, **OPTIONS)
    second = fits.take("second", fit_frequentist, "y ~ 1 + (1|g)", frame, OPTIONS)
    first = fits.take("first", fit_frequentist, FORMULA, frame, OPTIONS)
    assert list(second.result(timeout=120).coefs["term"]) == ["(Intercept)"]
    assert first.done()  # one worker: the first was finished before the second began


def test_other_inputs_than_the_started_ones_are_refused(frame):
    fits = BackgroundFits()
    fits.start("m", fit_frequentist, FORMULA, frame, **OPTIONS)
    changed = frame.assign(y=frame["y"] + 1)
    with pytest.raises(GbstatsError, match=r"'m' was started with another formula, data or "
                                           r"options .*\(differing: data\)"):
        fits.take("m", fit_frequentist, FORMULA, changed, OPTIONS)
    fits.start("f", fit_frequentist, FORMULA, frame, **OPTIONS)
    with pytest.raises(GbstatsError, match=r"differing: formula 'y ~ 1 \+ \(1\|g\)' \(started "
                                           r"with 'y ~ x \+ \(1\|g\)'\)"):
        fits.take("f", fit_frequentist, "y ~ 1 + (1|g)", frame, OPTIONS)


def test_a_name_never_started_is_none_and_a_name_started_twice_is_refused(frame):
    fits = BackgroundFits()
    assert fits.take("nothing", fit_frequentist, FORMULA, frame, OPTIONS) is None
    fits.start("m", fit_frequentist, FORMULA, frame, **OPTIONS)
    with pytest.raises(ValueError, match="'m' was already started"):
        fits.start("m", fit_frequentist, FORMULA, frame, **OPTIONS)
    assert fits.pending() == ["m"]
    fits.cancel()
    assert fits.pending() == []


def test_an_error_in_the_worker_reaches_the_caller(frame):
    fits = BackgroundFits()
    fits.start("bad", fit_frequentist, "y ~ missing + (1|g)", frame, **OPTIONS)
    started = fits.take("bad", fit_frequentist, "y ~ missing + (1|g)", frame, OPTIONS)
    with pytest.raises(GbstatsError, match="missing"):
        started.result(timeout=120)


def test_a_labelled_twin_says_which_twin_its_progress_is_about(caplog):
    caplog.set_level(logging.INFO, logger="gbstats.progress")
    _twin_progress("twin attempt 1/3: sampling 1,000 draws per chain")
    token = TWIN_LABEL.set("human model")
    try:
        _twin_progress("twin attempt 1/3 took 14 s: R-hat 1.004")
    finally:
        TWIN_LABEL.reset(token)
    token = TWIN_LABEL.set("model side: exp1_m_cond (twin)")  # named as a twin already
    try:
        _twin_progress("twin attempt 2/3: refit at 2,000 draws per chain")
    finally:
        TWIN_LABEL.reset(token)
    assert [r.getMessage() for r in caplog.records] == [
        "twin attempt 1/3: sampling 1,000 draws per chain",
        "human model twin, attempt 1/3 took 14 s: R-hat 1.004",
        "model side: exp1_m_cond twin, attempt 2/3: refit at 2,000 draws per chain"]

"""R fits in a clean process (gbstats.mixed.clean_process): what a study's runner asks for so
that its numbers do not depend on what its own process did before (issue 33)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gbstats.mixed.clean_process import (ENVIRONMENT_SLOTS, STACK_BYTES, clean_fits,
                                         in_clean_process, server_environment)

FACTORIAL = Path(__file__).resolve().parents[1] / "reference" / "factorial.csv"


def _stack_strings(argv, env) -> int:
    return sum(len(a) + 1 for a in argv) + len(argv[0]) + 1 + sum(
        len(k) + len(v) + 2 for k, v in env.items())


def test_the_server_environment_has_one_size_whatever_the_caller_s(monkeypatch):
    """Its size sets where the server's stack starts (address randomisation off), so it must
    not follow the caller's shell, folder or earlier R start."""
    argv = ["/usr/bin/python3", "-m", "gbstats.mixed.r_server", "5", "7", "12"]
    plain = server_environment(argv)
    monkeypatch.setenv("PWD", "/a/much/longer/working/folder/than/before")
    monkeypatch.setenv("LD_LIBRARY_PATH", "/usr/lib/R/lib:/usr/lib/x86_64-linux-gnu")
    monkeypatch.setenv("SOMETHING_ELSE", "x" * 300)
    noisy = server_environment(argv)
    assert len(plain) == len(noisy) == ENVIRONMENT_SLOTS
    assert _stack_strings(argv, plain) == _stack_strings(argv, noisy) == STACK_BYTES
    assert "SOMETHING_ELSE" not in noisy and "PWD" not in noisy
    assert noisy["PYTHONHASHSEED"] == "0"


@pytest.mark.needs_r
def test_a_fit_in_the_clean_process_equals_one_made_here_without_its_r_model():
    from gbstats.mixed.lmm import fit_lmm

    data = pd.read_csv(FACTORIAL)
    here = fit_lmm("y ~ close * stance + (1 | subject)", data, backend="lme4")
    with clean_fits():
        there = fit_lmm("y ~ close * stance + (1 | subject)", data, backend="lme4")
    assert here.handle is not None and there.handle is None
    pd.testing.assert_frame_equal(there.coefs, here.coefs, rtol=1e-6)
    pd.testing.assert_frame_equal(there.ranef_var, here.ranef_var, rtol=1e-6)
    assert there.warnings == here.warnings
    with clean_fits():
        with clean_fits(False):  # a fit whose R model is needed afterwards stays here
            assert fit_lmm("y ~ close + (1 | subject)", data, backend="lme4").handle is not None


@pytest.mark.needs_r
def test_the_same_fit_twice_in_the_clean_process_is_bit_identical():
    """Each fit is forked from the one server state: no history carries over."""
    from gbstats.mixed.lmm import fit_glmm

    rng = np.random.default_rng(3)
    groups = np.repeat(np.arange(15), 12)
    x = rng.normal(size=groups.size)
    y = (rng.random(groups.size) < 1 / (1 + np.exp(-(0.3 + 0.8 * x
                                                    + rng.normal(size=15)[groups])))).astype(int)
    data = pd.DataFrame({"y": y, "x": x, "g": [f"g{i}" for i in groups]})
    with clean_fits():
        first = fit_glmm("y ~ x + (1|g)", data, backend="lme4")
        from gbstats.mixed.lmm import fit_lmm
        fit_lmm("x ~ 1 + (1|g)", data, backend="lme4")  # another fit in between
        again = fit_glmm("y ~ x + (1|g)", data, backend="lme4")
    pd.testing.assert_frame_equal(first.coefs, again.coefs, check_exact=True)


@pytest.mark.needs_r
def test_a_gbstats_error_in_the_clean_process_comes_back_with_its_class_and_message():
    from gbstats.errors import GbstatsError
    from gbstats.mixed.engines import lme4 as engine
    from gbstats.mixed.formula import parse_formula
    from gbstats.mixed.lmm import prepare_data

    data = pd.read_csv(FACTORIAL)
    data["copy"] = data["close"]  # a collinear factor: lme4 drops a column
    parsed = parse_formula("y ~ close + copy + (1 | subject)")
    prepared = prepare_data(parsed, data, "gaussian", None)
    with pytest.raises(GbstatsError, match="rank deficient"):
        in_clean_process(engine.fit, parsed, prepared, "gaussian")


def test_the_switch_fits_in_this_process(monkeypatch):
    monkeypatch.setenv("GBSTATS_FIT_IN_PROCESS", "1")
    assert in_clean_process(sorted, [3, 1, 2]) == [1, 2, 3]


def test_a_call_cut_short_by_ctrl_c_leaves_no_answer_for_the_next_call():
    """A Ctrl-C while the clean process fits raises here at once; the fit's answer, still on
    its way, must not be read as the next call's (it would answer with another fit)."""
    import os
    import signal
    import threading
    import time

    from gbstats.mixed import clean_process

    in_clean_process(sorted, [2, 1])  # the server is up (R started) before the timer runs
    server = clean_process._SERVER
    assert os.getsid(server.process.pid) != os.getsid(0)  # the terminal's Ctrl-C misses it
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        in_clean_process(time.sleep, 30)
    assert time.monotonic() - started < 20
    assert server.process.wait(timeout=10) is not None  # ended, with the sleeping child
    assert in_clean_process(sorted, [3, 1, 2]) == [1, 2, 3]  # not the sleep's None


def test_a_server_started_early_is_the_one_the_first_fit_uses(monkeypatch):
    """A study starts the server before it loads and scores (studies.pipeline), so that R's
    start overlaps with them: the first fit then uses that server, and no second one."""
    from gbstats.mixed import clean_process

    clean_process._close_server()
    assert clean_process.start_server_early()
    server = clean_process._SERVER
    assert in_clean_process(sorted, [2, 1]) == [1, 2]
    assert clean_process.start_server_early() and clean_process._SERVER is server
    monkeypatch.setenv("GBSTATS_FIT_IN_PROCESS", "1")
    assert not clean_process.start_server_early()

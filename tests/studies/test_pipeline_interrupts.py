"""Ctrl-C during a study (issue 33, item 5): one line saying what was kept, exit code 130,
never a traceback, even where a library swallows the KeyboardInterrupt (R through rpy2's
event callback; the samplers, which gbstats.mixed.bayes catches itself). The hostile cases
send real SIGINTs to real runs (scoring, lme4, nutpie, report writing)."""
from __future__ import annotations

import os
import signal
import time

import pandas as pd

from studies.pipeline import EXIT_INTERRUPTED, INTERRUPTS, Study


def _swallowing_library():
    """What rpy2's callback and nutpie do: catch the KeyboardInterrupt and carry on."""
    try:
        os.kill(os.getpid(), signal.SIGINT)   # a real Ctrl-C
        time.sleep(1)
    except KeyboardInterrupt:
        pass
    return "a result computed as if nothing happened"


def _study(fit):
    return Study(name="tiny", title="Tiny", description="interrupts", model="optional",
                 bayes=False, load=lambda run, _: None, fit=fit,
                 report=lambda run, report, state: report.table(
                     "t", pd.DataFrame({"x": [1.0]}), "t"))


def test_a_swallowed_ctrl_c_still_stops_the_run_with_one_line(tmp_path, capsys):
    code = _study(lambda run, _: _swallowing_library()).main(
        ["--model", "none", "--no-cache", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == EXIT_INTERRUPTED and not (tmp_path / "r").exists()
    lines = [line for line in err.splitlines() if "interrupted:" in line]
    assert len(lines) == 1 and "rerun the same command" in lines[0]
    assert "Traceback" not in err
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handed back


class _RaisesInDel:
    def __del__(self):
        raise KeyboardInterrupt  # Python cannot raise it here: an "unraisable" exception


def test_an_unraisable_ctrl_c_is_recorded_and_not_printed(capsys):
    import pytest

    with INTERRUPTS:
        _RaisesInDel()   # dropped at once: __del__ runs
        assert INTERRUPTS.seen
        with pytest.raises(KeyboardInterrupt):
            INTERRUPTS.check()
    assert "Exception ignored" not in capsys.readouterr().err

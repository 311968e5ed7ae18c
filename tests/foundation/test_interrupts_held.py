"""gbstats.cli.interrupts_held: a Ctrl-C or SIGTERM arriving inside the block is raised as the
block ends, after every statement of it ran (the score cache's COMMIT and its count of what
was kept: hostile "score CLI: Ctrl-C mid-scoring" once found them split by a Ctrl-C)."""
from __future__ import annotations

import os
import signal
import sqlite3
import threading

import pytest

from gbstats.cli import Terminated, interrupts_held, raise_terminated


def test_a_ctrl_c_inside_waits_for_the_block_to_end():
    ran = []
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with interrupts_held():
            os.kill(os.getpid(), signal.SIGINT)
            ran.append("after the signal")  # a held signal does not cut the block short
            os.kill(os.getpid(), signal.SIGINT)  # a second one inside is the same interrupt
            ran.append("end of the block")
    assert ran == ["after the signal", "end of the block"]
    assert signal.getsignal(signal.SIGINT) is before  # the handler is put back


def test_sigterm_is_raised_by_the_handler_that_was_in_place():
    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        with pytest.raises(Terminated):
            with interrupts_held():
                os.kill(os.getpid(), signal.SIGTERM)
        assert signal.getsignal(signal.SIGTERM) is raise_terminated
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_without_a_signal_nothing_happens_and_off_the_main_thread_the_block_runs_as_is():
    with interrupts_held():
        x = 1
    assert x == 1
    seen = {}

    def worker():
        with interrupts_held():  # no handler can be set here; it must not try
            seen["handler"] = signal.getsignal(signal.SIGINT)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen["handler"] is signal.getsignal(signal.SIGINT)


def test_a_ctrl_c_during_a_cache_commit_is_counted_with_it(tmp_path, monkeypatch):
    """A Ctrl-C arriving while a batch is committed: the batch is committed and counted, and
    the interrupt comes after both (the count the interrupted line prints is the cache's)."""
    from models import cache as C

    store = C.open_cache(tmp_path, True)
    execute = sqlite3.Connection.execute

    class Conn:  # the real connection, with a Ctrl-C sent as COMMIT runs
        def __init__(self, conn):
            self._c = conn

        def execute(self, sql, *a):
            out = execute(self._c, sql, *a)
            if sql == "COMMIT":
                os.kill(os.getpid(), signal.SIGINT)
            return out

        def __getattr__(self, name):
            return getattr(self._c, name)

        def __enter__(self):
            return self._c.__enter__()

        def __exit__(self, *exc):
            return self._c.__exit__(*exc)

    monkeypatch.setattr(store, "_conn", Conn(store._conn))
    before = C.stored_totals.get(store.path, 0)
    with pytest.raises(KeyboardInterrupt):
        store.put_many({"k1": {"logprob": -1.0}, "k2": {"logprob": -2.0}})
    assert C.stored_totals.get(store.path, 0) - before == 2
    assert len(store) == 2

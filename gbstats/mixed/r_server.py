"""The clean fit server of gbstats.mixed.clean_process: `python -m gbstats.mixed.r_server`.

It starts R (lme4, lmerTest, and blme where installed; pymer4's Lmer class), then waits.
For each fit the caller writes one byte to the "go" pipe; the server forks, and the child
reads the request (a pickled function and its arguments) from the request pipe, runs it,
writes the pickled answer to the answer pipe and ends. The server itself reads nothing but
that one byte (a cached object in CPython: no allocation), so every child starts from the
same memory, however many fits came before.
"""
from __future__ import annotations

import os
import pickle
import sys

from gbstats.mixed.r_messages import encode, read_message, write_bytes, write_message


def start_r() -> None:
    from gbstats.mixed.engines import lme4 as engine

    if not engine.available():
        return
    from rpy2 import robjects

    # loaded, not attached: what the fits attach themselves (pymer4's importr) they then
    # find in memory, and each child is spared loading lme4's shared libraries
    robjects.r("suppressPackageStartupMessages({invisible(loadNamespace('lme4')); "
               "invisible(loadNamespace('lmerTest')); "
               "invisible(requireNamespace('blme', quietly = TRUE))})")
    engine.lmer_class()  # pymer4's Lmer, as the first fit would import it
    warm_up()


def warm_up() -> None:
    """One small lmer, glmer and bglmer fit, always the same: R loads the functions a fit
    uses from its packages' lazy-load files on first call, and rpy2 and pymer4 set up their
    conversions. Done here once, every forked fit finds them ready (without it each child
    paid that again: 1.9 s of R calls for a 240-row lmer against 1.0 s in a warm process,
    on a loaded 2-core machine)."""
    import pandas as pd

    from gbstats.errors import GbstatsError
    from gbstats.mixed.lmm import fit_glmm, fit_lmm

    n = 48
    data = pd.DataFrame({"g": [f"g{i % 6}" for i in range(n)],
                         "x": [((i * 7) % 11) / 11 - 0.5 for i in range(n)],
                         "y": [((i * 5) % 13) / 13 + (i % 6) / 6 for i in range(n)],
                         "b": [(i * 3 + i // 6) % 2 for i in range(n)]})
    for fit in (lambda: fit_lmm("y ~ x + (1|g)", data, backend="lme4"),
                lambda: fit_glmm("b ~ x + (1|g)", data, backend="lme4"),
                lambda: fit_glmm("b ~ x + (1|g)", data, penalised=True)):
        try:
            fit()
        except GbstatsError:  # e.g. blme not installed: the real fit will say so
            pass


def run_child(request_fd: int, answer_fd: int) -> None:
    """In the forked child: one request, one answer (module docstring)."""
    import dataclasses

    from gbstats.errors import GbstatsError

    request = read_message(request_fd)
    if request is None:
        os._exit(0)
    func, args, kwargs = request
    try:
        result = func(*args, **kwargs)
        if dataclasses.is_dataclass(result) and hasattr(result, "handle"):
            result = dataclasses.replace(result, handle=None)  # a live R model cannot travel
        answer = ("ok", result, None)
    except GbstatsError as exc:
        answer = ("error", type(exc), str(exc))
    except Exception as exc:  # noqa: BLE001 - sent back and raised in the caller, whole
        answer = ("crash", type(exc).__name__, str(exc))
    try:
        message = encode(answer)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        message = encode(("crash", type(exc).__name__, f"the result cannot be sent back: {exc}"))
    write_bytes(answer_fd, message)


# How often the server checks that the process that started it is still there.
PARENT_POLL_S = 0.2


def end_with_parent(parent: int) -> None:
    """End this server and the fit it forked (its process group: the server leads a
    session of its own) within PARENT_POLL_S of its parent's death, however that died.
    The pipes alone do not do it: while a fit runs the server waits for it, and a caller
    killed by SIGKILL left the fit using a core until it finished (issue 44, case 14). A
    polling thread rather than PR_SET_PDEATHSIG, which fires when the *thread* that
    started the server ends, and the caller starts it from whichever thread fits first."""
    import signal
    import threading
    import time

    def watch():
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, name="gbstats-parent-watch", daemon=True).start()


def serve(go_fd: int, request_fd: int, answer_fd: int, parent: int | None = None) -> None:
    if parent is not None:
        end_with_parent(parent)
    start_r()
    while True:
        if os.read(go_fd, 1) != b"g":
            return  # the caller closed the pipe: it has ended
        pid = os.fork()
        if pid == 0:
            try:
                run_child(request_fd, answer_fd)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
            write_message(answer_fd, ("crash", "ChildDied",
                                      f"the fit process ended with status {status} (killed, "
                                      f"or out of memory)"))


if __name__ == "__main__":
    go, request, answer = (int(fd) for fd in sys.argv[1:4])
    serve(go, request, answer, int(sys.argv[4]) if len(sys.argv) > 4 else None)

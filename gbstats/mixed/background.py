"""Fits started early in one worker thread and collected later, where they are needed.

Why (issue 34, the main job's cold run). A Bayesian twin spends most of its time in work
that does not need the calling thread: nutpie's compiling of the model (about 12 s a model
on the 2-core machine, every process again: nutpie's numba wrappers are not kept by the
numba cache), then sampling in threads of its own. The caller meanwhile waits on the clean
R process or runs numpy. Started at the beginning of a study's fit step, the twins overlap
with the frequentist fits and the steps between instead of following them.

The results are the same as a fit made in place: the twin is a function of its formula,
data, options and seed only, and goes through the same fit cache. A fit is collected with
the inputs it was started with (`take` checks them by their fit-cache key), so a later
change to the data or options can never pick up a twin of other inputs.

One worker: twins run one after the other, in the order started (two at once would ask
for four sampling threads on two cores, and numba compiles under one global lock anyway).
"""
from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

import pandas as pd

from gbstats.errors import GbstatsError


@dataclass
class _Started:
    key: str
    future: Future
    formula: str
    data_key: str
    options: dict


@dataclass
class BackgroundFits:
    """Fits started with `start` (by name), run in one worker thread, collected by `take`."""
    _started: dict[str, _Started] = field(default_factory=dict)
    _queue: list = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _worker: threading.Thread | None = None

    def start(self, name: str, fit: Callable, formula: str, data: pd.DataFrame,
              **options) -> None:
        """Start `fit(formula, data, **options)` (through the fit cache, with the cache
        keywords among `options`) behind the fits started before it."""
        from gbstats.mixed.fit_cache import cached_fit

        if name in self._started:
            raise ValueError(f"a background fit named {name!r} was already started; expected "
                             f"one name per fit")
        future: Future = Future()
        self._started[name] = _Started(self.key(fit, formula, data, options), future, formula,
                                       _data_key(data), _inputs(options))
        # the caller's context (clean_fits, progress label...) travels with the work
        context = contextvars.copy_context()
        work = (future, context, cached_fit, (fit, formula, data), options, name)
        with self._lock:
            self._queue.append(work)
            if self._worker is None or not self._worker.is_alive():
                # a daemon thread: a run that stops early (an error, Ctrl-C) does not wait
                # for a twin nobody will read
                self._worker = threading.Thread(target=self._drain, daemon=True,
                                                name="gbstats-background-fits")
                self._worker.start()

    def _drain(self) -> None:
        from gbstats.mixed.fitting import TWIN_LABEL

        while True:
            with self._lock:
                if not self._queue:
                    self._worker = None
                    return
                future, context, func, args, options, name = self._queue.pop(0)
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = context.run(_labelled, TWIN_LABEL, name, func, args, options)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller by take()
                future.set_exception(exc)
            else:
                future.set_result(result)

    @staticmethod
    def key(fit: Callable, formula: str, data: pd.DataFrame, options: dict) -> str:
        from gbstats.mixed.fit_cache import fit_key

        return fit_key(fit, formula, data, _inputs(options))

    def take(self, name: str, fit: Callable, formula: str, data: pd.DataFrame,
             options: dict) -> Future | None:
        """The fit started as `name`, if any (None otherwise); refused when it was started
        with other inputs than these."""
        started = self._started.pop(name, None)
        if started is None:
            return None
        if started.key != self.key(fit, formula, data, options):
            started.future.cancel()
            differ = [what for what, same in (
                ("formula", started.formula == formula),
                ("data", started.data_key == _data_key(data)),
                ("options", started.options == _inputs(options))) if not same]
            found = (f"formula {formula!r} (started with {started.formula!r})"
                     if "formula" in differ else ", ".join(differ) or "the fitting function")
            raise GbstatsError(f"the background fit {name!r} was started with another formula, "
                               f"data or options than the fit that asks for it now (differing: "
                               f"{found}); expected the same inputs: start it with them, or do "
                               f"not start it")
        return started.future

    def pending(self) -> list[str]:
        """Names started and not yet taken."""
        return list(self._started)

    def cancel(self) -> None:
        """Forget every fit not yet taken; those not yet begun are not begun."""
        for started in self._started.values():
            started.future.cancel()
        self._started.clear()


def _inputs(options: dict) -> dict:
    """The options that are the fit's inputs (the cache's own keywords are not)."""
    return {k: v for k, v in options.items() if k not in ("use_cache", "cache_dir")}


def _data_key(data: pd.DataFrame) -> str:
    from gbstats.mixed.fit_cache import data_fingerprint

    return str(data_fingerprint(data))


def _labelled(var: contextvars.ContextVar, label: str, func: Callable, args: tuple,
              options: dict):
    var.set(label)
    return func(*args, **options)

"""The loop every scorer shares: dedupe -> cache lookup -> sort -> batch -> commit.

A scorer supplies, per unit of work (a sentence, a prefix/continuation pair, a
sentence with a target span), a cache key and a sort key, plus a function
that scores a list of units in one go. Identical units are scored once; units
already in the cache are not scored at all; the rest are sorted (by length, so
a batch pads little, or by token ids, so texts with a shared beginning meet)
and every finished batch is committed to the cache as soon as it is back,
which is what makes a killed run resumable. Where the batches run (in this
process, or on Ray actors) is the current engine's business (models.engine);
`score_batch` must then be picklable (a models.engine.BatchScorer).

Preparing units usually needs the tokenizer, so a scorer may pass `units`
and `sort_keys` as functions that are called only when some unit is missing
from the cache: a run whose scores are all cached then loads no model at all.
"""
from __future__ import annotations

import contextlib
import gc
import logging
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gbstats.errors import DataValidationError
from models.cache import ScoreCache, count_nonfinite
from models.cpu_streams import stream_plan
from models.engine import current_engine

PROGRESS_THRESHOLD = 256  # units; shorter runs show no bar unless asked
# Without a terminal (a log file, CI) a bar's redraws would fill the log: one line every
# PROGRESS_EVERY_S seconds on the "gbstats.progress" logger instead (a study shows it).
PROGRESS_EVERY_S = 30.0
PROGRESS = logging.getLogger("gbstats.progress")


class ProgressLines:
    """tqdm's update/close for a stream that is not a terminal: a line at most every
    `every` seconds ("causal smollm2-135m: 3,200 of 13,500 texts (24%), 41 texts/s, about
    4 min left"), and one at the end."""

    def __init__(self, total: int, desc: str, every: float = PROGRESS_EVERY_S):
        self.total, self.desc, self.every = total, desc, every
        self.done, self.started = 0, time.perf_counter()
        self.last = self.started

    def update(self, n: int) -> None:
        self.done += n
        now = time.perf_counter()
        if now - self.last >= self.every and self.done < self.total:
            self.last = now
            PROGRESS.info(self.line(now))

    def line(self, now: float) -> str:
        rate = self.done / max(now - self.started, 1e-9)
        left = (self.total - self.done) / rate if rate > 0 else float("inf")
        return (f"{self.desc}: {self.done:,} of {self.total:,} texts "
                f"({100 * self.done / self.total:.0f}%), {rate:.1f} texts/s, about "
                f"{left / 60:.0f} min left" if self.done < self.total else
                f"{self.desc}: {self.total:,} texts in {now - self.started:.0f} s "
                f"({rate:.1f} texts/s)")

    def close(self) -> None:
        PROGRESS.info(self.line(time.perf_counter()))


def progress_bar(total: int, desc: str):
    """A tqdm bar on a terminal or in a notebook, else throttled lines (ProgressLines)."""
    if sys.stderr.isatty() or "ipykernel" in sys.modules:
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=desc, unit="item", smoothing=0.1)
    return ProgressLines(total, desc)


# What this process has scored so far, over every run_units call: units computed by a
# model (cache misses) and units answered by the cache. A study's runner records the
# difference over its run (provenance "timings"), so a warm run shows it scored nothing.
# "seconds": wall time inside run_units (cache lookups, tokenizing, forwards, cache
# writes), so that a run can count scoring done outside its score step (issue 34:
# cognitive_bias scores its language-model side while it fits)
SCORING_TOTALS = {"computed": 0, "cache_hits": 0, "batches": 0, "seconds": 0.0}


def scoring_totals() -> dict[str, float]:
    """A copy of SCORING_TOTALS, to subtract from a later one."""
    return dict(SCORING_TOTALS)


# What runs when a run_units call is about to score units the cache does not hold: work a
# caller wants to overlap with scoring starts then, and only when there is scoring to
# overlap with (studies.pipeline starts its clean R server so, issue 41).
_ON_COMPUTE: list[Callable[[], None]] = []


@contextlib.contextmanager
def on_scoring_compute(callback: Callable[[], None]):
    """Inside the block, `callback()` runs (in the scoring thread) each time run_units is
    about to score something the cache does not hold. It must be quick and idempotent."""
    _ON_COMPUTE.append(callback)
    try:
        yield
    finally:
        _ON_COMPUTE.remove(callback)


class NonFiniteScoreError(DataValidationError):
    """A model produced NaN or an infinite log-probability: refused, never cached."""


def nonfinite_at(result) -> int | None:
    """The index of the first NaN / infinite log-probability in a scorer's result, else None.

    A result is {"logprobs": [...], ...}; None entries (a causal text's first
    token without BOS, which has no context) are not scores and pass.
    """
    values = result.get("logprobs") if isinstance(result, dict) else None
    if not isinstance(values, list):
        return None
    try:  # the usual case at once: a sum of finite numbers is finite (None and 0 left out)
        if math.isfinite(sum(filter(None, values))):
            return None
    except TypeError:  # a value that is not a number (a damaged cache row): found below
        pass
    for k, value in enumerate(values):
        if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value)):
            return k
    return None


def _describe(unit) -> str:
    text = getattr(unit, "text", None)
    if not isinstance(text, str):
        return "a unit"
    return f"the text {text if len(text) <= 120 else text[:117] + '...'!r}"


def refuse_nonfinite(unit, result, model: str) -> None:
    """A score that is not a finite number is an error naming the model and the text.

    NaN and inf come from a model, not from the text: weights that hold NaN
    (a damaged or diverged checkpoint), activations that overflow (float16), a
    broken kernel. A NaN score would become a blank cell in every table and
    drop out of every mean; it is refused where it is produced, before the
    cache, so it is never stored and served again.
    """
    at = nonfinite_at(result)
    if at is None:
        return
    value = result["logprobs"][at]
    raise NonFiniteScoreError(
        f"model {model!r} gave a non-finite log-probability ({value}) for token {at + 1} of "
        f"{_describe(unit)}; nothing was cached",
        expected="finite log-probabilities (check the weights for NaN, or score in float32 "
                 "rather than float16)", found=repr(value))


@dataclass
class RunStats:
    n_units: int = 0
    n_unique: int = 0
    cache_hits: int = 0
    # cached values rejected on read (checksum mismatch / no checksum): scored again
    cache_mismatched: int = 0
    cache_unverified: int = 0
    # cached values holding NaN or inf (stored by an older gbstats): scored again
    cache_nonfinite: int = 0
    computed: int = 0
    engine: str = "local"  # where the misses were scored (models.engine)
    commit_size: int = 0  # units per batch this run used (0: nothing was scored)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def run_units(units: Sequence | Callable[[], Sequence], *, keys: Sequence[str],
              sort_keys: Sequence | Callable[[Sequence], Sequence],
              score_batch: Callable[[list], list], batch_size: int,
              cache: ScoreCache | None, progress: bool | None = None,
              desc: str = "scoring", model: str = "the model",
              spread: bool = False, balance: bool = False) -> tuple[list, RunStats]:
    """Score `units` (results in input order) with dedupe, cache and sorted batches.

    spread: `batch_size` is the CPU's default, cut smaller when the units to score are few
    (`spread_commit_size`, over models.cpu_streams' streams).
    balance: `batch_size` was asked for, on a CPU: at most that many units per batch, in a
    number of batches every stream gets the same share of (`balanced_commit_size`).

    sort_keys: the order units are scored in. Lengths cut padding; token-id
    lists (sorted lexicographically) put texts that share a beginning into one
    batch, so a scorer that runs shared prefixes once can use that.
    model: the model's name, for the error on a non-finite score (`refuse_nonfinite`):
    a cached NaN or inf is a miss, a freshly scored one an error, and neither is stored.
    """
    if batch_size < 1:
        raise DataValidationError("batch_size must be a whole number >= 1", source="batch_size",
                                  expected="1 or more", found=repr(batch_size))
    started = time.perf_counter()
    try:
        with older_objects_frozen():
            return _run_units(units, keys, sort_keys, score_batch, batch_size, cache, progress,
                              desc, model, spread, balance)
    finally:
        SCORING_TOTALS["seconds"] += time.perf_counter() - started


@contextlib.contextmanager
def older_objects_frozen():
    """Inside the block, Python's cyclic garbage collector passes over the objects that
    existed before it (gc.freeze), and looks at them again after (gc.unfreeze).

    Scoring builds a few dozen small lists and dicts per text (units, results, cache
    rows), and each time enough of them have piled up the collector makes a full pass
    over every object in the process: after importing torch and transformers about
    450,000, 0.7 s a pass on the 2-core machine under load, once per ~2,000 texts
    scored (issue 41). Frozen, a pass sees only what the scoring made. Objects are
    still freed when their last reference goes; only garbage cycles among the older
    objects wait for the block's end. Where something else has frozen objects already
    (an outer block, the application), nothing is changed.
    """
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _run_units(units, keys, sort_keys, score_batch, batch_size, cache, progress, desc, model,
               spread=False, balance=False):
    stats = RunStats(n_units=len(keys))
    first_index: dict[str, int] = {}
    for i, key in enumerate(keys):
        first_index.setdefault(key, i)
    stats.n_unique = len(first_index)
    results: dict[str, object] = {}
    if cache is not None:
        found = cache.lookup(list(first_index))
        results = {k: v for k, v in found.found.items() if nonfinite_at(v) is None}
        stats.cache_nonfinite = len(found.found) - len(results)
        count_nonfinite(cache, stats.cache_nonfinite)
        stats.cache_mismatched, stats.cache_unverified = len(found.mismatched), len(found.unverified)
    stats.cache_hits = len(results)
    if len(results) < len(first_index):  # tokenize only when something is to be scored
        units = units() if callable(units) else units
        sort_keys = sort_keys(units) if callable(sort_keys) else sort_keys
    todo = sorted((k for k in first_index if k not in results), key=lambda k: sort_keys[first_index[k]])
    stats.computed = len(todo)
    if todo:
        for callback in list(_ON_COMPUTE):
            callback()
    SCORING_TOTALS["computed"] += stats.computed
    SCORING_TOTALS["cache_hits"] += stats.cache_hits
    show = progress if progress is not None else len(todo) >= PROGRESS_THRESHOLD
    bar = None
    if show and todo:
        bar = progress_bar(len(todo), desc)
    if spread:
        batch_size = spread_commit_size(len(todo), batch_size, stream_plan()[0])
    elif balance:
        batch_size = balanced_commit_size(len(todo), batch_size, stream_plan()[0])
    stats.commit_size = batch_size
    batches = [todo[start:start + batch_size] for start in range(0, len(todo), batch_size)]
    engine = current_engine()
    stats.engine = engine.name
    work = [[units[first_index[k]] for k in batch_keys] for batch_keys in batches]
    for index, scored in engine.map_batches(score_batch, work):
        SCORING_TOTALS["batches"] += 1
        fresh = dict(zip(batches[index], scored, strict=True))
        for unit, result in zip(work[index], scored):
            refuse_nonfinite(unit, result, model)
        if cache is not None:
            cache.put_many(fresh)
        results.update(fresh)
        if bar is not None:
            bar.update(len(fresh))
    if bar is not None:
        bar.close()
    return [results[k] for k in keys], stats


# --- how a device is fed -------------------------------------------------------
# Two sizes, kept apart: the commit size is how many units go to the engine and
# into the cache at once (what a killed run can lose); the token budget is how
# many padded tokens one forward pass holds (what keeps a GPU busy without
# running out of memory). On a CPU one forward per commit batch is kept there, and
# commit batches of 128 texts: short texts (role_nouns' ~2.3 token positions each once
# beginnings are shared) leave a forward of 32 mostly per-operation overhead (512
# role_nouns texts in two streams: 1.78 s at 32, 1.31 s at 128; ABC and DaWinoBias
# within 8% either way; study_scoring.json "streams"). A run of few texts is cut
# smaller (`spread_commit_size`), so that every stream gets work. On a GPU small
# forwards leave the kernels idle most of the wall time (issue 26: 9-12% busy at
# batch 256), so a commit batch is large and is cut into length-sorted forwards
# of about TOKEN_BUDGET tokens; a bare forward of that size reached 44-46% of
# an H100's FLOP ceiling for a 1.7B model.
COMMIT_SIZE = {"cpu": 128, "mps": 32, "cuda": 4096, "auto": 4096}
# a CPU run of few texts is cut into batches no smaller than this (the commit size before)
MIN_CPU_COMMIT = 32
TOKEN_BUDGET = {"cuda": 12288, "auto": 12288}
# Running a shared prefix once saves work on a CPU, where each token's cost is
# compute; on a GPU the packed rows' 4D masks and bookkeeping cost more than
# the saved tokens (17-20% slower there), so it is off by default.
SHARE_PREFIXES_BY_DEFAULT = {"cpu", "mps"}


@dataclass(frozen=True)
class BatchPlan:
    commit_size: int  # units per cache commit and per engine batch
    token_budget: int | None  # padded tokens per forward pass; None: one forward per commit batch
    share_prefixes: bool  # causal LMs: run a shared beginning once (packed rows)
    # the device's default commit size on a CPU: cut smaller for a run of few texts
    spread: bool = False
    # a commit size asked for, on a CPU: kept as the most per batch, balanced over streams
    balance: bool = False


def spread_commit_size(n_units: int, commit_size: int, streams: int) -> int:
    """At most `commit_size` units per batch, but at least two batches per stream when the
    run is small: 335 texts in batches of 128 would leave one of two streams idle through
    the last batch; in four of 84 both work to the end. Never below MIN_CPU_COMMIT (or the
    commit size, if that is smaller)."""
    if streams <= 1 or n_units <= 0:
        return commit_size
    return max(min(commit_size, math.ceil(n_units / (2 * streams))),
               min(MIN_CPU_COMMIT, commit_size))


def balanced_commit_size(n_units: int, commit_size: int, streams: int) -> int:
    """At most `commit_size` units per batch, in a number of batches that is a multiple of
    the streams, so that no stream sits out the last round: pronoun_memory's baseline run
    scored 2,610 texts in batches of 1,024 asked for, three batches on two streams, and
    one core idled through the third (about 20 of its 72 s of scoring); in four of 653
    both work to the end. Never below MIN_CPU_COMMIT (or the commit size, if smaller)."""
    if streams <= 1 or n_units <= 0:
        return commit_size
    batches = math.ceil(math.ceil(n_units / commit_size) / streams) * streams
    return max(math.ceil(n_units / batches), min(MIN_CPU_COMMIT, commit_size))


def plan_batches(device_type: str, *, batch_size: int | None = None,
                 token_budget: int | None = None, share_prefixes: bool | None = None,
                 cpu_commit_size: int = COMMIT_SIZE["cpu"]) -> BatchPlan:
    """The batching a device gets unless told otherwise (None: the device's default).

    cpu_commit_size: a scorer's own CPU default (the masked scorers commit 16
    sentences, each of which is many masked copies).
    """
    for name, value in (("batch_size", batch_size), ("token_budget", token_budget)):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise DataValidationError(f"{name} must be a positive integer or None", source=name,
                                      expected="an integer >= 1, or None for the device's default",
                                      found=repr(value))
    default_commit = cpu_commit_size if device_type in ("cpu", "mps") else COMMIT_SIZE.get(
        device_type, cpu_commit_size)
    return BatchPlan(
        commit_size=batch_size or default_commit,
        token_budget=token_budget if token_budget is not None else TOKEN_BUDGET.get(device_type),
        share_prefixes=(device_type in SHARE_PREFIXES_BY_DEFAULT if share_prefixes is None
                        else share_prefixes),
        spread=batch_size is None and device_type == "cpu",
        balance=batch_size is not None and device_type == "cpu")


def token_budget_chunks(lengths: Sequence[int], budget: int) -> list[list[int]]:
    """Cut units into forward passes of at most `budget` padded tokens, longest padding least.

    Returns lists of indices into `lengths`. Units are taken in length order,
    so each pass pads to a length close to its members'; a pass holds as many
    as fit `rows x longest <= budget` (a unit longer than the budget runs alone).
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    chunks: list[list[int]] = []
    current: list[int] = []
    for i in order:
        # sorted ascending, so the newcomer is the longest of its pass
        if current and (len(current) + 1) * lengths[i] > budget:
            chunks.append(current)
            current = []
        current.append(i)
    if current:
        chunks.append(current)
    return chunks

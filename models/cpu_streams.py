"""Scoring on a CPU: one stream of batches per core, each on one torch thread.

Why not torch's own threads. A forward pass on torch's intra-op threads (OpenMP) runs
each of its ~450 operations as a parallel region that waits for every thread. On the
2-core development machine (issue 41, measured with 512 role_nouns texts, batches of 32):
  quiet                  two threads 2.97 s, two one-thread streams 2.76 s, one thread 5.3 s
  one core taken by      two threads 10.4-20.3 s, two one-thread streams 3.4 s,
  another process        one thread 3.5 s
A descheduled OpenMP thread stalls every region, so two threads collapse to a fraction
of one thread's speed as soon as anything else runs, and the old rule (one thread above
a load average of 3) reacted too late and to the wrong signal. Two streams of whole
batches on one thread each are as fast as two threads on a quiet machine (no barrier
between them, and the Python between operations overlaps) and fall back to one core's
speed, not below it, when another process takes the other.

A batch's numbers do not depend on the stream that scores it: every batch runs on one
thread, whose matrix products sum in a fixed order.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import os
from typing import Callable, Iterator, Sequence

# Streams at most, whatever the cores: each stream holds the GIL for the Python between
# operations, so many streams would queue on it (measured on 2 cores only; a bigger CPU
# gives each stream cores // streams threads).
MAX_STREAMS = 2
STREAMS_ENV = "GBSTATS_CPU_STREAMS"
# Models smaller than this score one batch at a time: their batches take about a
# millisecond, and handing each to a stream costs about as much (the tests' tiny GPT-2,
# 3,000 texts in batches of 2: 1.85 s one at a time, 3.25 s in two streams). The embedded
# model (135M) takes 25 ms or more for a batch of 2.
MIN_STREAM_PARAMETERS = 5_000_000


def worth_streaming(model) -> bool:
    """Whether a model's batches are heavy enough for streams (MIN_STREAM_PARAMETERS)."""
    parameters = getattr(model, "parameters", None)
    if parameters is None:
        return True
    return sum(p.numel() for p in parameters()) >= MIN_STREAM_PARAMETERS


def cpu_count() -> int:
    """The cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def stream_plan(cores: int | None = None) -> tuple[int, int]:
    """(streams, torch threads per stream) for scoring on this CPU.

    GBSTATS_CPU_STREAMS=N sets the streams (1: one batch at a time, on torch's threads as
    before). OMP_NUM_THREADS set by the user is their thread count, kept: one stream."""
    cores = cores or cpu_count()
    wanted = os.environ.get(STREAMS_ENV, "").strip()
    if wanted:
        try:
            streams = int(wanted)
        except ValueError:
            streams = 0
        if streams < 1:
            from gbstats.errors import DataValidationError

            raise DataValidationError(
                f"{STREAMS_ENV} must be a whole number of streams, 1 or more",
                source=STREAMS_ENV, expected="an integer >= 1 (1: one batch at a time)",
                found=repr(wanted))
    elif os.environ.get("OMP_NUM_THREADS"):
        streams = 1
    else:
        streams = min(cores, MAX_STREAMS)
    if streams <= 1:
        return 1, 0  # 0: leave torch's threads as they are
    return streams, max(1, cores // streams)


@contextlib.contextmanager
def _torch_threads(threads: int):
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _set_torch_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def map_in_streams(scorer: Callable[[list], list], batches: Sequence[list], streams: int,
                   threads: int, ready: Callable[[], None] | None = None
                   ) -> Iterator[tuple[int, list]]:
    """Yield (index, scorer(batch)) in order, scoring up to `streams` batches at once, each
    on `threads` torch threads.

    `ready` runs first, in this thread: what loads lazily (the weights, the tokenizer) is
    loaded once, not by two streams at a time. `streams + 1` batches are in flight, so a
    stream never waits for the caller to commit. An error in a batch is raised here, in the
    batch's turn. When the caller stops early (an error, Ctrl-C), the batches not started
    are dropped and the ones running finish (a thread cannot be stopped inside torch): up
    to `streams` batches of work, whose results are not kept.
    """
    if not batches:
        return
    if ready is not None:
        ready()
    with _torch_threads(threads):
        # set in each stream's own thread too: OpenMP keeps a thread count per thread, and a
        # new thread starts from the machine's cores, not from what the caller set; a kernel
        # that sizes its work split by it before torch's own lazy set-up ran in that thread
        # summed in another order (2 fresh processes in 5 gave other scores, ~1e-5 apart)
        pool = concurrent.futures.ThreadPoolExecutor(streams, thread_name_prefix="gbstats-scoring",
                                                     initializer=_set_torch_threads,
                                                     initargs=(threads,))
        running: dict[int, concurrent.futures.Future] = {}
        following = 0
        try:
            for index in range(len(batches)):
                while following < len(batches) and following <= index + streams:
                    running[following] = pool.submit(scorer, batches[following])
                    following += 1
                yield index, running.pop(index).result()
        finally:
            for future in running.values():
                future.cancel()
            pool.shutdown(wait=False, cancel_futures=True)

"""Progress of scoring loops, what a run scored, and torch threads on a busy machine (issue 34).

`run_units` is the loop under every scorer (causal, masked, forced choice). The scorer
here is a plain function of the units, since what is tested is the loop: its progress
lines, and the counts of texts scored and answered by the cache (the numbers a study's
runner records to show that a warm run scores nothing).
"""
from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

import models.batching as batching
from models.batching import ProgressLines, run_units, scoring_totals
from models.cache import ScoreCache
from models.engine import OVERSUBSCRIBED, scoring_threads

# The scoring loop with a plain function for a scorer, no model: pinned stack only (the
# tf5 pass leaves them out; see the Makefile).
pytestmark = pytest.mark.stack_independent


def lengths(batch: list) -> list:
    return [len(text) for text in batch]


def score(texts, cache=None, progress=True):
    return run_units(texts, keys=texts, sort_keys=lengths(texts), score_batch=lengths,
                     batch_size=10, cache=cache, progress=progress, desc="test scorer")


def test_without_a_terminal_a_loop_prints_lines_not_a_bar(progress_records, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    texts = [f"text {i}" for i in range(100)]
    results, _ = score(texts)
    assert results == lengths(texts)
    # ten batches in well under PROGRESS_EVERY_S seconds: one closing line, no bar redraws
    lines = progress_records
    assert len(lines) == 1 and lines[0].startswith("test scorer: 100 texts in"), lines
    # and no tqdm bar on stderr (a study shows the line there, once, without redraws)
    err = capsys.readouterr().err
    assert "\r" not in err and "it/s" not in err and err.count("\n") <= 1


def test_lines_are_throttled_to_one_per_interval(progress_records, monkeypatch):
    clock = iter(range(0, 1000, 7))  # each reading of the clock is 7 s after the last
    # the clock of models.batching only (time.perf_counter itself is left alone)
    monkeypatch.setattr(batching, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    bar = ProgressLines(total=100, desc="test scorer", every=20.0)
    for _ in range(10):
        bar.update(10)
    bar.close()
    lines = progress_records
    # readings at 7, 14, ..., 70 s: a line at 21, 42 and 63 s (20 s apart at least), and
    # none at 70 s, when the 100 texts are done and the closing line follows
    assert [line.split(":")[1].split(" of ")[0].strip() for line in lines[:-1]] == \
        ["30", "60", "90"]
    assert "texts/s" in lines[0] and "min left" in lines[0]
    assert lines[-1].startswith("test scorer: 100 texts in")


def test_on_a_terminal_the_loop_shows_a_tqdm_bar(monkeypatch):
    from tqdm import tqdm

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    bar = batching.progress_bar(5, "test scorer")
    try:
        assert isinstance(bar, tqdm)
    finally:
        bar.close()


def test_the_totals_count_texts_scored_and_texts_the_cache_answered(tmp_path):
    texts = [f"text {i}" for i in range(25)] + ["text 0"]  # one repeat: scored once
    cache = ScoreCache(tmp_path / "cache")
    before = scoring_totals()
    score(texts, cache=cache, progress=False)
    cold = {k: v - before[k] for k, v in scoring_totals().items()}
    assert cold.pop("seconds") > 0        # the loop's wall time, wherever a run calls it
    assert cold == {"computed": 25, "cache_hits": 0, "batches": 3}
    before = scoring_totals()
    results, stats = score(texts, cache=cache, progress=False)
    warm = {k: v - before[k] for k, v in scoring_totals().items()}
    assert warm.pop("seconds") > 0
    assert warm == {"computed": 0, "cache_hits": 25, "batches": 0}
    assert results == lengths(texts) and stats.computed == 0


@pytest.mark.parametrize(("load", "cores", "expected"), [
    (17.0, 2, 1),                          # the shared machine at its busiest: one thread
    (2 * OVERSUBSCRIBED + 0.1, 2, 1),
    (2 * OVERSUBSCRIBED - 0.1, 2, None),   # busy, not oversubscribed: torch's default
    (0.5, 2, None),                        # quiet
    (40.0, 1, None),                       # one core: one thread anyway
])
def test_one_torch_thread_only_when_the_cores_are_oversubscribed(monkeypatch, load, cores,
                                                                 expected):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert scoring_threads(load=load, cores=cores) == expected


def test_omp_num_threads_is_the_users_choice(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert scoring_threads(load=17.0, cores=2) is None

"""Scoring on a CPU in streams of one thread per core (models.cpu_streams): the same numbers
as one batch at a time, in order, errors in their turn, and real concurrency."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

import models.causal as causal
from gbstats.errors import DataValidationError
from models.cpu_streams import STREAMS_ENV, map_in_streams, stream_plan


@pytest.fixture
def clean_env(monkeypatch):
    monkeypatch.delenv(STREAMS_ENV, raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    return monkeypatch


def test_the_plan_gives_each_core_a_stream_up_to_the_cap(clean_env):
    assert stream_plan(cores=1) == (1, 0)
    assert stream_plan(cores=2) == (2, 1)
    assert stream_plan(cores=16) == (2, 8)  # two streams of eight threads


def test_the_user_setting_wins(clean_env):
    clean_env.setenv(STREAMS_ENV, "1")
    assert stream_plan(cores=2) == (1, 0)  # one batch at a time, torch's threads untouched
    clean_env.setenv(STREAMS_ENV, "3")
    assert stream_plan(cores=6) == (3, 2)
    clean_env.delenv(STREAMS_ENV)
    clean_env.setenv("OMP_NUM_THREADS", "2")  # a thread count the user chose: kept
    assert stream_plan(cores=2) == (1, 0)


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_stream_count_is_refused_with_what_was_expected(clean_env, value):
    clean_env.setenv(STREAMS_ENV, value)
    with pytest.raises(DataValidationError, match=STREAMS_ENV) as info:
        stream_plan(cores=2)
    assert repr(value) in str(info.value)


def test_batches_come_back_in_order_after_ready_and_run_at_once():
    calls = []
    meet = threading.Barrier(2, timeout=20)  # two batches must be inside at the same time

    def scorer(batch):
        if batch[0] < 2:
            meet.wait()
        return [x * 10 for x in batch]

    batches = [[i, i] for i in range(7)]
    out = list(map_in_streams(scorer, batches, 2, 1, ready=lambda: calls.append("ready")))
    assert calls == ["ready"]
    assert out == [(i, [i * 10, i * 10]) for i in range(7)]


def test_an_error_is_raised_in_its_batch_turn():
    def scorer(batch):
        if batch == ["bad"]:
            raise ValueError("batch 2 failed")
        return batch

    got = []
    with pytest.raises(ValueError, match="batch 2 failed"):
        for index, result in map_in_streams(scorer, [["a"], ["b"], ["bad"], ["c"]], 2, 1):
            got.append(index)
    assert got == [0, 1]


@pytest.mark.needs_model
def test_streams_give_the_same_scores_as_one_batch_at_a_time(smollm, monkeypatch):
    """Bit for bit: every batch runs on one thread either way, and in streams the batches
    really ran in the streams' threads."""
    prefixes = ["My sister said", "The dentists said", "Alex said", "Each student said"] * 12
    continuations = [f" {w} would come {k}." for k in range(12)
                     for w in ("they", "she", "he", "xe")]
    threads = set()
    forward = causal.forward_logprobs
    monkeypatch.setattr(causal, "forward_logprobs", lambda *a, **k: threads.add(
        threading.current_thread().name) or forward(*a, **k))
    monkeypatch.setenv(STREAMS_ENV, "2")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    streamed = causal.score_continuations(prefixes, continuations, lm=smollm, batch_size=8,
                                          use_cache=False, progress=False)["logprob"].to_numpy()
    assert any(name.startswith("gbstats-scoring") for name in threads)
    from models.cpu_streams import worth_streaming
    assert worth_streaming(smollm.model)
    threads.clear()
    monkeypatch.setenv(STREAMS_ENV, "1")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        one_by_one = causal.score_continuations(prefixes, continuations, lm=smollm, batch_size=8,
                                                use_cache=False, progress=False)["logprob"].to_numpy()
    finally:
        torch.set_num_threads(before)
    assert threads == {threading.current_thread().name}
    np.testing.assert_array_equal(streamed, one_by_one)


def test_a_tiny_model_scores_one_batch_at_a_time(tiny_gpt2, monkeypatch):
    """Its batches take about a millisecond, as long as handing one to a stream: no streams,
    and one torch thread (its microsecond operations stall on torch's threads whenever
    another process takes a core); torch's thread count is restored after."""
    from models.cpu_streams import MIN_STREAM_PARAMETERS, worth_streaming

    assert sum(p.numel() for p in tiny_gpt2.model.parameters()) < MIN_STREAM_PARAMETERS
    assert not worth_streaming(tiny_gpt2.model)
    threads, torch_threads = set(), set()
    forward = causal.forward_logprobs
    monkeypatch.setattr(causal, "forward_logprobs", lambda *a, **k: threads.add(
        threading.current_thread().name) or torch_threads.add(torch.get_num_threads())
        or forward(*a, **k))
    monkeypatch.setenv(STREAMS_ENV, "2")
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        causal.score_sentences([f"Text {k} is here." for k in range(40)], lm=tiny_gpt2,
                               batch_size=4, use_cache=False, progress=False)
        after = torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
    assert threads == {threading.current_thread().name}
    assert torch_threads == {1}
    assert after == 2

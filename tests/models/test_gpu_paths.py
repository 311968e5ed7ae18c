"""The GPU's own scoring steps (issue 41, item 5), checked where they can be on a CPU.

- models.gpu.target_logprobs (logit minus the row's log-sum-exp, in slices of rows) gives
  the log-softmax's value at the wanted token: the same quantity, float32 rounding apart.
- models.causal.launch_logprobs returns what forward_logprobs returns, for every plan.
- models.engine.LocalEngine starts a batch before yielding the one before only where the
  scorer overlaps (a model on a GPU); anywhere else batches run one after the other, as
  before, so a CPU run is unchanged.
"""
from __future__ import annotations

import pytest

from models import causal, engine, gpu
from models.causal import prepare_units
from tiny_models import SENTENCES


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("rows_per_slice", [3, 4096])
def test_logit_minus_logsumexp_is_the_log_softmax_at_the_token(monkeypatch, dtype, rows_per_slice):
    import torch

    monkeypatch.setattr(gpu, "LSE_ROWS", rows_per_slice)
    generator = torch.Generator().manual_seed(0)
    # a wide spread of logits, as a trained head gives (scores from ~-30 to ~0 nats)
    logits = (torch.randn(10, 5000, generator=generator) * 6).to(getattr(torch, dtype))
    wanted = torch.randint(0, 5000, (10,), generator=generator)
    expected = torch.log_softmax(logits.float(), dim=-1)[torch.arange(10), wanted]
    found = gpu.target_logprobs(logits, wanted)
    assert found.dtype == torch.float32
    # float32 rounding of a sum of 5,000 terms: ~1e-6 relative, far inside the 1e-5 nats a
    # text's score already moves between CPUs (tests/tolerances.py, MODEL)
    assert torch.allclose(found, expected, rtol=1e-6, atol=2e-5)


def test_compile_blocks_refuses_a_model_on_a_cpu(tiny_gpt2):
    with pytest.raises(ValueError, match="CUDA"):
        gpu.compile_blocks(tiny_gpt2.model)
    assert not gpu.is_compiled(tiny_gpt2.model)


@pytest.mark.parametrize("budget, share", [(40, False), (40, True), (None, False)])
def test_a_launched_batch_gives_forward_logprobs_results(tiny_gpt2, budget, share):
    units = prepare_units(tiny_gpt2, [""] * len(SENTENCES), SENTENCES, "prepend")
    finish = causal.launch_logprobs(tiny_gpt2, units, token_budget=budget, share_prefixes=share)
    assert finish() == causal.forward_logprobs(tiny_gpt2, units, token_budget=budget,
                                               share_prefixes=share)


def _recording_scorer(events):
    def score(lm, batch):
        events.append(("score", batch[0]))
        return [x * 10 for x in batch]

    def launch(lm, batch):
        events.append(("launch", batch[0]))

        def finish():
            events.append(("finish", batch[0]))
            return [x * 10 for x in batch]
        return finish

    score.launch = launch
    return engine.BatchScorer(object(), score, request=engine.ModelRequest(
        "m", "cuda", "bfloat16", "causal", None, "m", "r"))


def test_on_a_gpu_the_next_batch_starts_before_a_batch_is_yielded(monkeypatch):
    monkeypatch.setattr(engine.BatchScorer, "overlaps", property(lambda self: True))
    events = []
    batches = [[1, 2], [3], [4, 5]]
    for index, results in engine.LocalEngine().map_batches(_recording_scorer(events), batches):
        events.append(("yield", index, results))
    assert events == [("launch", 1), ("launch", 3), ("finish", 1), ("yield", 0, [10, 20]),
                      ("launch", 4), ("finish", 3), ("yield", 1, [30]),
                      ("finish", 4), ("yield", 2, [40, 50])]


def test_elsewhere_batches_run_one_after_the_other(monkeypatch, tiny_gpt2):
    events = []
    scorer = _recording_scorer(events)
    assert not scorer.overlaps  # object() is no model on a GPU
    for index, results in engine.LocalEngine().map_batches(scorer, [[1], [2]]):
        events.append(("yield", index, results))
    assert events == [("score", 1), ("yield", 0, [10]), ("score", 2), ("yield", 1, [20])]
    # a real model on a CPU does not overlap; nor does anything with the switch off
    assert not engine.BatchScorer(tiny_gpt2, causal.forward_logprobs).overlaps
    monkeypatch.setattr(engine.BatchScorer, "overlaps", property(
        lambda self: engine.OVERLAP_ON_GPU))
    monkeypatch.setattr(engine, "OVERLAP_ON_GPU", False)
    events.clear()
    list(engine.LocalEngine().map_batches(scorer, [[1], [2]]))
    assert events == [("score", 1), ("score", 2)]

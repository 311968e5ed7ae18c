"""The token-position counter behind the FLOP floors of benchmarks/pronoun_memory.py,
pronoun_fidelity.py --work and study_scoring.py --floor (issue 34): every distinct
beginning of a commit batch is run once. Counts are by hand."""
from __future__ import annotations

import importlib.util
from pathlib import Path


def counter():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "pronoun_memory.py"
    spec = importlib.util.spec_from_file_location("pronoun_memory_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.design_work


def test_shared_beginnings_run_once_within_a_commit_batch():
    positions = lambda texts, batch: counter()(texts, batch)["after_positions"]  # noqa: E731
    texts = [[1, 2, 3], [1, 2, 4], [1, 5], [6]]
    # one batch, laid out as models.causal._hidden_packed runs it: [1, 2, 3] and [1, 2, 4]
    # share MIN_SHARED = 2 tokens, so they form one trie of 4 nodes (1, 2, 3, 4); [1, 5]
    # shares a single token with them, too few to share, and runs alone (2); [6] (1)
    assert positions(texts, 32) == 4 + 2 + 1
    # batches of one text each: nothing is shared, every token runs (3 + 3 + 2 + 1)
    assert positions(texts, 1) == 9

"""Session-scoped models for the scoring tests.

The tiny BERT/GPT-2 are built once per session (seconds); smollm2-135m loads
once per session (~20-60 s on 2 cores) and only for tests marked needs_model.
"""
from __future__ import annotations


import pytest


from tiny_models import build_tiny_bert, build_tiny_gpt2  # registered by tests/conftest.py


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory):
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="session")
def tiny_gpt2_dir(tmp_path_factory, tiny_bert_dir):
    return build_tiny_gpt2(tmp_path_factory.mktemp("tiny_gpt2"), tiny_bert_dir)


@pytest.fixture(scope="session")
def tiny_bert(tiny_bert_dir):
    from models.loading import load_scorer

    return load_scorer(str(tiny_bert_dir))


@pytest.fixture(scope="session")
def tiny_gpt2(tiny_gpt2_dir):
    from models.loading import load_scorer

    return load_scorer(str(tiny_gpt2_dir))


@pytest.fixture
def cache_dir(tmp_path):
    return tmp_path / "score-cache"


@pytest.fixture(autouse=True)
def one_torch_thread_for_tiny_models(request):
    """Tiny models run hundreds of very small forward passes; with 2 intra-op
    threads on a shared, loaded 2-core machine each pass pays thread hand-off
    costs that dwarf the compute (measured: 41 s vs 1.4 s for the same PLL run).
    Tests of the real smollm2 keep torch's default."""
    import torch

    if request.node.get_closest_marker("needs_model"):
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

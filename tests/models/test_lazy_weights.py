"""The embedded model's weights load only when a score is not in the cache.

A warm re-run of a study (every score cached) must not pay the ~20 s GGUF
de-quantization; a cache miss must load them and score exactly as before.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.needs_model

PREFIXES = ["My sister said", "The dentists said"]
TARGETS = [" they", " they"]


def test_cached_scores_need_no_weights_and_a_miss_loads_them(smollm, tmp_path):
    from models.causal import score_continuations
    from models.loading import LanguageModel

    cache = tmp_path / "cache"
    fresh = score_continuations(PREFIXES, TARGETS, lm=smollm, cache_dir=cache)
    # a second handle on the same model that has not loaded its weights yet
    lazy = LanguageModel(smollm.name, smollm.model_id, smollm.revision, smollm.kind, None,
                         smollm.tokenizer, smollm.device, smollm.dtype,
                         load_weights=lambda: smollm.model, model_type=smollm.model_type,
                         fingerprint=smollm.fingerprint)  # the GGUF file's digest: the same key
    cached = score_continuations(PREFIXES, TARGETS, lm=lazy, cache_dir=cache)
    assert not lazy.weights_loaded
    assert cached["logprob"].tolist() == fresh["logprob"].tolist()
    assert cached.attrs["run"]["cache_hits"] == 2

    missed = score_continuations(["My friend said"], [" they"], lm=lazy, cache_dir=cache)
    assert lazy.weights_loaded
    direct = score_continuations(["My friend said"], [" they"], lm=smollm, use_cache=False)
    assert missed["logprob"].iloc[0] == pytest.approx(direct["logprob"].iloc[0], abs=1e-6)


def test_embedded_model_is_returned_without_weights():
    from models.loading import clear_loaded_models, load_scorer

    clear_loaded_models()
    lm = load_scorer("smollm2-135m")
    assert lm.tokenizer is not None and not lm.weights_loaded
    assert lm.model.config.model_type == "llama" and lm.weights_loaded

"""The embedded model converted once (saved in the model cache) scores exactly like the GGUF file.

The first load of smollm2-135m reads the GGUF file and saves the converted
tokenizer and weights; later loads read those instead. Both must give the
same token ids, offsets and log-probabilities, or the score cache (keyed by
model and revision, not by load path) would mix two different models.
"""
from __future__ import annotations

import pytest

pytestmark = [pytest.mark.needs_model, pytest.mark.slow]

TEXTS = ["My sister said", "Someone in the office said that", "The firefighter told me",
         "Xe said that the dentist"]
TARGETS = [" they", " they", " she", " xe"]


def test_converted_model_scores_exactly_like_the_gguf_file(smollm, tmp_path, monkeypatch, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="gbstats.progress")
    from models.causal import score_continuations
    from models.loading import _load_embedded, converted_folder
    from models.registry import MODELS, embedded_model_folder

    monkeypatch.setenv("GBSTATS_MODEL_CACHE", str(tmp_path / "models"))
    # transformers opens the GGUF file four times in a conversion (the tokenizer's config and
    # vocabulary, the model's config and weights); each parse took about 2 s (issue 41)
    import gguf

    parsed, real_reader = [], gguf.GGUFReader

    def counting_reader(path, *args, **kwargs):
        parsed.append(path)
        return real_reader(path, *args, **kwargs)

    monkeypatch.setattr(gguf, "GGUFReader", counting_reader)
    spec = MODELS["smollm2-135m"]
    from_gguf = _load_embedded(spec, "float32")
    version = from_gguf.revision.split("==")[1]
    gguf_path = embedded_model_folder() / spec.model_id
    assert not converted_folder(spec.name, version, gguf_path, "tokenizer").exists()
    direct = score_continuations(TEXTS, TARGETS, lm=from_gguf, use_cache=False)
    # the first run on a machine waits for the conversion: it says so as it happens
    said = [r.getMessage() for r in caplog.records if r.name == "gbstats.progress"]
    assert any("tokenizer from its GGUF file" in m for m in said), said
    assert any("de-quantizing smollm2-135m's weights" in m for m in said), said
    assert any(m.startswith("converted smollm2-135m in ") for m in said), said
    caplog.clear()
    assert len(parsed) == 1, parsed  # the tokenizer and the weights read one parse of the file
    # the first load saved both parts
    assert (converted_folder(spec.name, version, gguf_path, "tokenizer") / "tokenizer.json").exists()
    assert (converted_folder(spec.name, version, gguf_path, "float32") / "config.json").exists()

    from_cache = _load_embedded(spec, "float32")
    texts = [t + c for t, c in zip(TEXTS, TARGETS)]
    a = from_gguf.tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
    b = from_cache.tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
    assert a["input_ids"] == b["input_ids"] and a["offset_mapping"] == b["offset_mapping"]
    assert (from_gguf.tokenizer.bos_token_id, from_gguf.tokenizer.eos_token_id) == \
        (from_cache.tokenizer.bos_token_id, from_cache.tokenizer.eos_token_id)
    again = score_continuations(TEXTS, TARGETS, lm=from_cache, use_cache=False)
    assert not [r for r in caplog.records if "GGUF" in r.getMessage()]   # read, not converted
    assert again["logprob"].tolist() == direct["logprob"].tolist()
    assert again["logprob"].tolist() == \
        score_continuations(TEXTS, TARGETS, lm=smollm, use_cache=False)["logprob"].tolist()

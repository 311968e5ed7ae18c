"""benchmarks/gpu_scoring.py runs end to end (--smoke: tiny models, any device).

The GPU figures themselves come from a run on a GPU; this checks that the
script's every path (model building, gbstats' token-budget plan, minicons,
the matmul ceiling, the targets) works, that gbstats and minicons agree in
float32, and that the configurations it writes down are the published ones
where a copy is at hand (the embedded SmolLM2-135M).
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.needs_model

REPO = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("gpu_scoring", REPO / "benchmarks" / "gpu_scoring.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_smoke_run_writes_every_field(smollm, tmp_path):
    bench = _bench()
    out = tmp_path / "gpu_scoring.json"
    bench.main(["--smoke", "--device", "cpu", "--out", str(out)])
    result = json.loads(out.read_text())
    assert result["device"].startswith("CPU") and result["smoke"] is True
    assert result["matmul"]["flop_per_s"] > 0
    assert [m["model"] for m in result["models"]] == ["llama-135m", "llama-1.7b", "bert-base"]
    for model in result["models"]:
        methods = {r["method"] for r in model["rows"]}
        assert "gbstats" in methods
        for row in model["rows"]:
            assert row["sent_per_s"] > 0 and row["frac_ceiling"] > 0
            assert ("token_budget" in row) != ("batch_sentences" in row)
        if model.get("minicons_error") is None:
            # the same quantity from two implementations, float32: the 1e-3 nats
            assert model["fp32_max_abs_diff_nats"] <= 1e-3
            assert "minicons" in methods and model["speedup_vs_minicons"] > 0
    assert set(result["targets"]) == {"causal_1p7b_frac_ceiling", "causal_135m_sent_per_s",
                                      "pll_frac_ceiling", "min_speedup_vs_minicons",
                                      "fp32_max_abs_diff_nats"}
    for entry in result["targets"].values():
        assert set(entry) == {"target", "measured", "met"}


def test_a_cpu_run_is_not_recorded_as_the_gpu_result():
    bench = _bench()
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(SystemExit, match="GPU figures only"):
        bench.main(["--smoke"])


def test_the_135m_configuration_is_smollm2s(smollm):
    config = smollm.model.config  # the embedded SmolLM2-135M(-Instruct): same architecture
    written = _bench().SMOLLM2_135M
    for key in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                "num_attention_heads", "num_key_value_heads", "tie_word_embeddings"):
        assert getattr(config, key) == written[key], key
    assert config.rope_theta == written["rope_theta"] if hasattr(config, "rope_theta") else True


def test_a_saved_tokenizer_splits_text_as_the_embedded_one(smollm, tmp_path):
    """--llama-tokenizer: the folder written by --save-llama-tokenizer (so the 94 MB GGUF
    need not travel to a GPU machine) gives the same token ids as the embedded model."""
    bench = _bench()
    bench.main(["--save-llama-tokenizer", str(tmp_path / "tok")])
    saved, embedded = bench.llama_tokenizer(tmp_path / "tok"), bench.llama_tokenizer()
    texts = bench._scoring_module().study_like_sentences(50, seed=3) + [
        " leading space", "they/them, she/her", "Zoë's café — naïve", "firefighter\u00a0they"]
    assert saved(texts, add_special_tokens=False)["input_ids"] == \
        embedded(texts, add_special_tokens=False)["input_ids"]


def test_the_recorded_gpu_result_is_a_full_run_on_a_gpu():
    """benchmarks/results/gpu_scoring.json holds what a real GPU run wrote: not the smoke
    sizes, a CUDA device, every model measured, every target with its measured value."""
    recorded = json.loads((REPO / "benchmarks" / "results" / "gpu_scoring.json").read_text())
    assert recorded["smoke"] is False and recorded["device_type"] == "cuda"
    assert recorded["matmul"]["n"] >= 8192 and recorded["matmul"]["flop_per_s"] > 1e14
    assert [m["model"] for m in recorded["models"]] == ["llama-135m", "llama-1.7b", "bert-base"]
    lower_is_better = {"fp32_max_abs_diff_nats"}
    for key, entry in recorded["targets"].items():
        assert entry["measured"] is not None, key
        assert entry["met"] == (entry["measured"] <= entry["target"] if key in lower_is_better
                                else entry["measured"] >= entry["target"]), key

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

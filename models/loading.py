"""Load a language model once per process: `load_scorer(name, device, dtype)`.

The returned `LanguageModel` bundles the torch model, its tokenizer and the
provenance every score table records (`model`, `revision`). Loading the
embedded SmolLM2 takes ~20 s, so loaded models are kept in a per-process dict
keyed by (name, device, dtype, revision) and reused across a study.

The embedded model's weights load lazily, on the first forward pass: its
tokenizer and provenance are enough to look scores up in the cache, so a
re-run whose scores are all cached never pays for de-quantizing the GGUF file.
"""
from __future__ import annotations

import importlib.metadata
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from gbstats.errors import GbstatsError, MissingDependencyError, UnknownNameError
from models.registry import (DEFAULT_MODEL, MODELS, SMOLLM_DIST, SMOLLM_INSTALL, ModelSpec,
                             close_registry_names, embedded_model_folder)

DEVICES = ("cpu", "cuda", "mps")
DTYPES = ("float32", "bfloat16")
OFFLINE_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


class ModelUnavailableError(GbstatsError, OSError):
    """A model could not be loaded (no network, missing local files, missing package)."""


@dataclass
class LanguageModel:
    """A loaded model plus what score tables record about it.

    `model` is the torch module. Where a `load_weights` function is given the
    weights are loaded on first access of `model` (moved to `device`, in eval
    mode), so code that only needs the tokenizer and provenance never waits.
    """

    name: str  # what the caller asked for (registry name, hub id or path)
    model_id: str  # what was actually loaded
    revision: str
    kind: str  # "causal" or "masked"
    _model: Any = field(repr=False)
    tokenizer: Any = field(repr=False)
    device: str = "cpu"
    dtype: str = "float32"
    load_weights: Callable[[], Any] | None = field(default=None, repr=False)
    # transformers' config.model_type ("llama", "bert", ...); given where the
    # weights load lazily, otherwise read from the loaded model's config
    model_type: str = ""
    # how load_scorer was asked for it, so that another process (a Ray actor)
    # can load the same model again
    load_request: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        if not self.model_type and self._model is not None:
            self.model_type = self._model.config.model_type

    @property
    def model(self):
        if self._model is None:
            if self.load_weights is None:
                raise ModelUnavailableError(f"model {self.name!r} has neither weights nor a loader")
            model = self.load_weights()
            model.to(self.device)
            model.eval()
            self._model = model
        return self._model

    @property
    def weights_loaded(self) -> bool:
        return self._model is not None

    @property
    def bos_token_id(self) -> int | None:
        tok = self.tokenizer
        return tok.bos_token_id if tok.bos_token_id is not None else tok.cls_token_id


_LOADED: dict[tuple, LanguageModel] = {}


def load_scorer(name: str = DEFAULT_MODEL, device: str = "cpu", dtype: str = "float32",
                revision: str | None = None, kind: str | None = None) -> LanguageModel:
    """Load (or reuse) a model by registry name, Hugging Face id or local folder.

    kind: "causal" or "masked"; inferred from the model's config when None.
    """
    key = (name, device, dtype, revision)
    if key not in _LOADED:
        _LOADED[key] = _load(name, device, dtype, revision, kind)
        _LOADED[key].load_request = {"name": name, "device": device, "dtype": dtype,
                                     "revision": revision}
    lm = _LOADED[key]
    if kind is not None and lm.kind != kind:
        raise ModelUnavailableError(f"model {name!r} is a {lm.kind} LM; this scorer needs a {kind} LM")
    return lm


def clear_loaded_models() -> None:
    """Forget every model loaded in this process (frees memory)."""
    _LOADED.clear()


def _torch():
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            f"language-model scoring needs torch and transformers ({exc}); "
            "install them with `pip install -e .[models]`") from exc
    return torch


def resolve_device(device: str) -> str:
    """Check that the requested device exists here; 'cuda:1' style indices are allowed."""
    torch = _torch()
    base = device.split(":")[0]
    if base not in DEVICES:
        raise UnknownNameError("device", device, list(DEVICES))
    if base == "cuda" and not torch.cuda.is_available():
        raise ModelUnavailableError(f"device {device!r} requested but torch sees no CUDA GPU "
                                    f"(torch {torch.__version__}); use device='cpu'")
    if base == "mps" and not torch.backends.mps.is_available():
        raise ModelUnavailableError(f"device {device!r} requested but MPS is not available; "
                                    "use device='cpu'")
    return device


def resolve_dtype(dtype: str):
    torch = _torch()
    if dtype not in DTYPES:
        raise UnknownNameError("dtype", dtype, list(DTYPES))
    return getattr(torch, dtype)


def hub_offline() -> bool:
    return any(os.environ.get(var, "").lower() in {"1", "true", "yes"} for var in OFFLINE_ENV)


def _load(name: str, device: str, dtype: str, revision: str | None, kind: str | None) -> LanguageModel:
    device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype)
    if kind is not None and kind not in ("causal", "masked"):
        raise UnknownNameError("model kind", kind, ["causal", "masked"])
    spec = MODELS.get(name)
    if spec is not None and spec.source == "embedded-gguf":
        lm = _load_embedded(spec, torch_dtype)
    else:
        if spec is None and not Path(name).expanduser().exists() and "/" not in name:
            close = close_registry_names(name)
            if close:  # a typo of a registry name, not a hub id
                raise UnknownNameError("model", name, list(MODELS))
        target = spec.model_id if spec is not None else name
        lm = _load_transformers(name, target, revision, kind or (spec.kind if spec else None),
                                torch_dtype)
    lm.device, lm.dtype = device, dtype
    if lm.weights_loaded:
        lm.model.to(device)
        lm.model.eval()
    return lm


def _load_embedded(spec: ModelSpec, torch_dtype) -> LanguageModel:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = embedded_model_folder()
    fix = SMOLLM_INSTALL
    if folder is None or not (folder / spec.model_id).exists():
        raise ModelUnavailableError(
            f"model {spec.name!r} needs the file {spec.model_id} from the package {SMOLLM_DIST}, "
            f"which is not installed (looked in {folder}); install it with `{fix}`")
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=spec.model_id)

    def load_weights():
        # de-quantizing the GGUF tensors is most of the ~20 s load: done only
        # when a score is not in the cache
        return AutoModelForCausalLM.from_pretrained(folder, gguf_file=spec.model_id,
                                                    dtype=torch_dtype)

    version = importlib.metadata.version(SMOLLM_DIST)
    return LanguageModel(spec.name, f"{SMOLLM_DIST}/{spec.model_id}",
                         f"{SMOLLM_DIST}=={version}", "causal", None, tokenizer,
                         load_weights=load_weights, model_type=spec.model_type)


def infer_kind(config) -> str:
    archs = getattr(config, "architectures", None) or []
    if any(a.endswith("ForMaskedLM") for a in archs):
        return "masked"
    if any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs):
        return "causal"
    if getattr(config, "is_decoder", False):
        return "causal"
    raise ModelUnavailableError(
        f"cannot tell whether the model is causal or masked from its config "
        f"(architectures={archs}); pass kind='causal' or kind='masked'")


def _load_transformers(name: str, target: str, revision: str | None, kind: str | None,
                       torch_dtype) -> LanguageModel:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    local = Path(target).expanduser()
    is_local = local.exists()
    load_from = str(local.resolve()) if is_local else target
    options = {"revision": revision} if revision and not is_local else {}
    if not is_local and hub_offline():
        options["local_files_only"] = True
    try:
        config = AutoConfig.from_pretrained(load_from, **options)
        kind = kind or infer_kind(config)
        auto = AutoModelForCausalLM if kind == "causal" else AutoModelForMaskedLM
        tokenizer = AutoTokenizer.from_pretrained(load_from, **options)
        model = auto.from_pretrained(load_from, dtype=torch_dtype, **options)
    except OSError as exc:
        if is_local:
            raise ModelUnavailableError(
                f"model folder {load_from} could not be loaded by transformers: {exc}") from exc
        raise ModelUnavailableError(
            f"model {name!r} (hub id {target!r}) is not available here: it is not a local folder, "
            f"and the Hugging Face hub could not provide it (this machine may have no network "
            f"access{'; HF_HUB_OFFLINE is set' if hub_offline() else ''}). "
            f"Either pass a local folder, e.g. load_scorer('/path/to/{target.split('/')[-1]}'), "
            f"or pre-download it on a machine with network access: "
            f"`huggingface-cli download {target} --local-dir /path/to/{target.split('/')[-1]}` "
            f"and copy that folder here. On a machine that is always offline, set HF_HUB_OFFLINE=1 so "
            f"this fails at once instead of after network retries. "
            f"Original error: {str(exc).splitlines()[0]}") from exc
    if not getattr(tokenizer, "is_fast", False):
        raise ModelUnavailableError(
            f"model {name!r}: gbstats needs a fast (Rust) tokenizer for word alignment "
            f"(offsets), found {type(tokenizer).__name__}")
    found_revision = revision or getattr(config, "_commit_hash", None) or (
        "local" if is_local else "unknown")
    return LanguageModel(name, load_from, str(found_revision), kind, model, tokenizer,
                         model_type=config.model_type)

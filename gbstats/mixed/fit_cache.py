"""Reuse a fit whose inputs have not changed: `cached_fit(fit_lmm, formula, data, ...)`.

A study re-run after a change to a figure, a table or one formula refits
every model today, and the Bayesian twins spend most of their time compiling
(numba) and sampling. A fit is a deterministic function of its inputs (the
samplers are seeded), so its tidy result is stored on disk and returned when
the very same fit is asked for again.

The key is a sha256 digest of everything the numbers depend on:
- the fitting function (module and name), the formula and every option
  (backend, family, draws, tune, chains, seed, sampler, priors, contrasts,
  ...), a matrix or frame given as an option hashed in full (`canonical`);
- the data: column names, dtypes and every value (pandas' row hashes), and
  for a Categorical its level order, categories and `ordered` flag, which
  decide the reference level and the terms (`dtype_record`): reordering the
  levels refits;
- the source of every gbstats module (any edit to gbstats refits);
- the installed versions of the Python packages that fit (numpy, pandas,
  scipy, statsmodels, pymc, bambi, pytensor, nutpie, arviz, pymer4, rpy2) and
  of the R packages lme4, lmerTest and Matrix (read from their DESCRIPTION
  files, without starting R);
- the linear algebra the numbers come out of (`numeric_settings`): for an R
  fit, the BLAS and LAPACK libraries R loads, and for everything else (and for
  an R on an optimised BLAS) the variables that choose a BLAS's kernel and
  threads (OPENBLAS_CORETYPE, OMP_NUM_THREADS, ...), which move an optimizer's
  end point in its last digits.
Change any of them and the model is fitted again.

What is stored is the FitResult without its engine's live model (`handle`):
the coefs, variance components, fit statistics and warnings, and a Bayesian
fit's posterior (`idata`), which later steps read (LOO comparisons, random
effects, draws of a contrast). The posterior is pickled apart inside the entry
(`StoredPosterior`) and unpickled only when a step reads `idata`: unpickling it
imports ArviZ (about 2 s on the 2-core machine), which a run that only reads
the fit's tables need not pay. The entry's checksum covers it. A caller
that needs the live model passes `use_cache=False`. Entries live in
`<cache dir>/fits/` (the score cache's folder,
`gbstats.config.resolve_cache_dir`), one pickle per fit, written atomically.
Each entry carries a sha256 checksum of its content and the key it was stored
under, verified before it is unpickled: a
damaged entry (a flipped bit, a truncated write, a file copied over another)
is refitted and counted (`rejected`, `rejected_note`; a study's report notes
it), never loaded. Setting GBSTATS_NO_FIT_CACHE=1 turns the cache off
everywhere (benchmarks use it to time the fits themselves).
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
import json
import os
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from gbstats.config import resolve_cache_dir
from gbstats.mixed.results import FitResult, StoredPosterior, group_counts

FIT_FOLDER = "fits"
ENV_OFF = "GBSTATS_NO_FIT_CACHE"
FIT_PACKAGES = ("numpy", "pandas", "scipy", "statsmodels", "pymc", "bambi", "pytensor", "nutpie",
                "arviz", "pymer4", "rpy2")
# blme: the penalised GLMM (fit_glmm(penalised=True)); emmeans: marginal means
R_PACKAGES = ("lme4", "lmerTest", "Matrix", "blme", "emmeans")
R_LIBRARIES = ("/usr/lib/R/site-library", "/usr/lib/R/library", "/usr/local/lib/R/site-library")
# Bump when the stored shape or the key changes (2: checksummed entries, level order keyed;
# 3: a Bayesian fit's posterior pickled apart, loaded when read).
FORMAT_VERSION = 3


@functools.lru_cache(maxsize=1)
def environment_fingerprint() -> str:
    """Digest of gbstats' own source and the fitting packages' versions."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parents[1]  # all of gbstats, not only gbstats.mixed
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    for name in FIT_PACKAGES:
        try:
            digest.update(f"{name}=={importlib.metadata.version(name)}".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"{name} absent".encode())
    for name in R_PACKAGES:
        digest.update(f"R {name}: {r_package_version(name)}".encode())
    return digest.hexdigest()


def r_library_folders() -> list[Path]:
    """R's library folders in the order R searches them (`.libPaths()`, ?.libPaths):
    R_LIBS, then R_LIBS_USER (by default ~/R/<platform>-library/<version>, where
    install.packages() puts a package for a user who cannot write the site library),
    then R_LIBS_SITE, then the system's. The first folder holding a package is the one
    R loads it from, so the first one found here is the version a fit uses."""
    folders: list[Path] = []
    for variable in ("R_LIBS", "R_LIBS_USER"):
        folders += [Path(p).expanduser() for p in os.environ.get(variable, "").split(":") if p]
    if not os.environ.get("R_LIBS_USER"):
        folders += sorted(Path.home().glob("R/*-library/*"), reverse=True)
    folders += [Path(p) for p in os.environ.get("R_LIBS_SITE", "").split(":") if p]
    return folders + [Path(p) for p in R_LIBRARIES]


def r_package_version(name: str) -> str | None:
    """Version line of an installed R package's DESCRIPTION file, found without R, in the
    first of `r_library_folders` that holds it (issue 44: a package upgraded with
    install.packages() into a user library was missed, and old fits were reused)."""
    for folder in r_library_folders():
        description = Path(folder) / name / "DESCRIPTION"
        if description.exists():
            for line in description.read_text(errors="replace").splitlines():
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
    return None


def dtype_record(dtype) -> list:
    """Everything a column's dtype says that changes the design matrix.

    A Categorical's name is only "category", but its level order decides the
    reference level (treatment coding drops the first level) and the order of
    the terms, its `ordered` flag R's default contrasts (contr.poly), and its
    categories the levels a factor has even where no row uses them. All of them
    are recorded; other dtypes are named in full (e.g. datetime64[ns, UTC]).
    """
    if isinstance(dtype, pd.CategoricalDtype):
        categories = dtype.categories
        return ["category", bool(dtype.ordered), str(categories.dtype),
                [repr(c) for c in categories]]
    return [str(dtype)]


def data_fingerprint(data: pd.DataFrame) -> str:
    """Digest of a frame's column names, dtypes (level order included), index and values."""
    digest = hashlib.sha256()
    digest.update(json.dumps({
        "columns": [[repr(c), dtype_record(t)] for c, t in data.dtypes.items()],
        "index": [repr(list(data.index.names)), dtype_record(data.index.dtype)],
    }).encode())
    digest.update(pd.util.hash_pandas_object(data, index=True).to_numpy().tobytes())
    return digest.hexdigest()


def canonical(value):
    """A JSON-able stand-in for an option that holds every number of it.

    `repr` abbreviates a large array or frame ("..."), so two contrast matrices
    that differ inside the elided part would share a key; frames, series and
    arrays are fingerprinted in full instead (dtypes and level order included).
    """
    import numpy as np

    if isinstance(value, pd.DataFrame):
        return {"frame": data_fingerprint(value)}
    if isinstance(value, pd.Series):
        return {"series": data_fingerprint(value.to_frame())}
    if isinstance(value, pd.Index):
        return {"index": data_fingerprint(pd.DataFrame(index=value))}
    if isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value)
        body = (hashlib.sha256(array.tobytes()).hexdigest() if array.dtype != object
                else [canonical(v) for v in array.ravel().tolist()])
        return {"array": [str(array.dtype), list(array.shape), body]}
    if isinstance(value, dict) or hasattr(value, "items") and callable(value.items):
        return {"mapping": sorted([repr(k), canonical(v)] for k, v in value.items())}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, (str, bool, int)) or value is None:
        return value
    if isinstance(value, float):
        return repr(value)  # full precision, and nan / inf as JSON cannot
    if isinstance(value, np.generic):
        return canonical(value.item())
    return repr(value)


# The variables that choose a BLAS's kernel or its number of threads (OpenBLAS, MKL and
# OpenMP read them when the library loads). A matrix product summed in another order moves
# an optimizer's end point in its last digits (tests/tolerances.py: glmer SEs moved 0.49%
# between OPENBLAS_CORETYPE=Haswell and Sandybridge with one thread when R ran on OpenBLAS),
# so a fit made under other settings is another fit.
BLAS_VARIABLES = ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                  "MKL_NUM_THREADS", "MKL_CBWR")
# The backends whose numbers R computes (in the clean R server or in process)
R_BACKENDS = frozenset({"lme4"})


def blas_variables() -> dict:
    return {name: os.environ.get(name) for name in BLAS_VARIABLES}


@functools.lru_cache(maxsize=1)
def r_linear_algebra() -> tuple[str, ...] | None:
    """The BLAS and LAPACK libraries R loads (libR.so's and its LAPACK module's, as the
    dynamic linker resolves them, links followed), or None where they cannot be found (no
    R, no ldd). Read without starting R: `R RHOME` and `ldd`, once per process."""
    import subprocess

    try:
        home = subprocess.run(["R", "RHOME"], capture_output=True, text=True, timeout=30,
                              check=True).stdout.strip()
        objects = [p for p in (Path(home) / "lib" / "libR.so", Path(home) / "modules" / "lapack.so")
                   if p.exists()]
        if not objects:
            return None
        listing = subprocess.run(["ldd", *map(str, objects)], capture_output=True, text=True,
                                 timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = set()
    for line in listing.splitlines():
        name, arrow, rest = line.strip().partition(" => ")
        if arrow and any(word in name for word in ("blas", "lapack", "mkl", "atlas", "blis")):
            found.add(os.path.realpath(rest.split(" (")[0]))
    return tuple(sorted(found)) or None


def is_reference_blas(path: str) -> bool:
    """Netlib's reference BLAS or LAPACK (Debian's blas/libblas.so.3, R's own libRblas):
    plain loops whose order of summation no variable of BLAS_VARIABLES changes."""
    file, folder = Path(path).name, Path(path).parent.name
    return (file.startswith(("libRblas", "libRlapack"))
            or (file.startswith("libblas.so") and folder == "blas")
            or (file.startswith("liblapack.so") and folder == "lapack"))


def numeric_settings(options: dict | None = None) -> dict:
    """What, besides the inputs, decides a result's last digits. An R fit's numbers come
    from R's BLAS and LAPACK: their libraries are keyed, and BLAS_VARIABLES too unless every
    one is the reference implementation (which reads none of them; OPENBLAS_CORETYPE and
    OMP_NUM_THREADS=1 left name_gender's 10 glmer fits bit for bit as they were, measured on
    the development machine, where setup.sh keeps R on Debian's reference BLAS). Everything
    else runs on numpy's, scipy's or PyTensor's OpenBLAS: BLAS_VARIABLES are keyed."""
    if options is not None and options.get("backend") in R_BACKENDS:
        libraries = r_linear_algebra()
        settings: dict = {"r_linear_algebra": libraries}
        if libraries is None or not all(map(is_reference_blas, libraries)):
            settings["blas_variables"] = blas_variables()
        return settings
    return {"blas_variables": blas_variables()}


def fit_key(fit: Callable, formula: str, data: pd.DataFrame, options: dict) -> str:
    return call_key(fit, {"formula": formula, "options": canonical(options),
                          "data": data_fingerprint(data), "numerics": numeric_settings(options)})


def call_key(func: Callable, inputs: dict) -> str:
    """Digest of a function's name, its inputs (already fingerprinted) and the environment;
    for a function defined outside gbstats (a study's), also its module's source, which
    the environment does not cover: an edited study function is a miss, never a stale hit.
    Without `numerics` among the inputs, the BLAS variables are keyed (`numeric_settings`)."""
    inputs = {"numerics": numeric_settings(), **inputs}
    extra = {}
    if not func.__module__.split(".")[0] == "gbstats":
        extra["source"] = module_source_digest(func)
    payload = json.dumps({"format": FORMAT_VERSION, "fit": f"{func.__module__}.{func.__qualname__}",
                          **inputs, **extra, "environment": environment_fingerprint()},
                         sort_keys=True, default=repr)
    return hashlib.sha256(payload.encode()).hexdigest()


def module_source_digest(func: Callable) -> str:
    """sha256 of the file that defines `func`; refused when there is none to read (a
    function typed at the prompt), since its changes could not be seen."""
    import inspect

    from gbstats.errors import GbstatsError

    try:
        path = Path(inspect.getsourcefile(func) or "")
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except (TypeError, OSError) as exc:
        raise GbstatsError(f"the fit cache cannot key {func.__qualname__}: its source file "
                           f"cannot be read ({exc}); define it in a module, or pass "
                           f"use_cache=False") from None


def cache_is_off(use_cache: bool) -> bool:
    return not use_cache or os.environ.get(ENV_OFF, "").lower() in {"1", "true", "yes"}


# A stored entry is MAGIC, then "<format> <key> <sha256 of the payload>\n", then the payload
# (a pickle). The checksum is verified before the payload is unpickled: a flipped bit,
# a truncated write or a file copied over another key's is a miss (refitted, and noted),
# never an object built from damaged bytes.
MAGIC = b"gbstats fit cache\n"


@dataclass
class Rejected:
    path: Path
    reason: str


# Entries of this process that were found damaged and recomputed (rejected_note reads them).
rejected: list[Rejected] = []


def _encode(key: str, value) -> bytes | None:
    try:
        payload = pickle.dumps(value)
    except (pickle.PicklingError, AttributeError, TypeError):
        return None
    digest = hashlib.sha256(payload).hexdigest()
    return MAGIC + f"{FORMAT_VERSION} {key} {digest}\n".encode() + payload


def _load(path: Path, key: str):
    """The stored object, or None when absent or damaged (then recomputed and overwritten;
    a damaged entry is listed in `rejected`)."""
    try:
        stored = path.read_bytes()
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        # the folder itself is a file: no stored result "failed verification" (issue 44:
        # every fit of a run was reported as a damaged entry)
        raise _folder_is_a_file(path) from None
    except OSError as exc:
        rejected.append(Rejected(path, f"unreadable ({exc.strerror or exc})"))
        return None
    if not stored.startswith(MAGIC):
        rejected.append(Rejected(path, "not a gbstats fit-cache entry (or written by an older "
                                       "gbstats, without a checksum)"))
        return None
    header, _, payload = stored[len(MAGIC):].partition(b"\n")
    parts = header.decode("ascii", "replace").split(" ")
    if len(parts) != 3 or parts[0] != str(FORMAT_VERSION) or parts[1] != key:
        rejected.append(Rejected(path, "its header does not name this fit"))
        return None
    if hashlib.sha256(payload).hexdigest() != parts[2]:
        rejected.append(Rejected(path, "its checksum does not match its content"))
        return None
    try:
        return pickle.loads(payload)
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError,
            ValueError) as exc:  # verified bytes that no longer unpickle (a class moved)
        rejected.append(Rejected(path, f"it no longer loads ({type(exc).__name__})"))
        return None


def _folder_is_a_file(path: Path):
    from gbstats.errors import PlaceError

    blocker = next((p for p in path.parents if p.is_file()), path.parent)
    return PlaceError(f"the fit cache folder {path.parent} cannot hold stored fits: {blocker} is "
                      f"a file, not a folder; move it away, or pass another cache folder "
                      f"(--cache-dir), or turn the cache off (--no-cache)")


def _store(path: Path, key: str, value) -> None:
    """Write atomically; a value that cannot be pickled is simply not reused next time."""
    stored = _encode(key, value)
    if stored is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.partial")
    partial.write_bytes(stored)
    os.replace(partial, path)


def rejected_note(since: int = 0) -> str | None:
    """One sentence on the stored fits found damaged (since `len(rejected)` was `since`)."""
    found = rejected[since:]
    if not found:
        return None
    reasons = sorted({r.reason for r in found})
    return (f"Fit cache: {len(found)} stored result(s) failed verification "
            f"({'; '.join(reasons)}) and were recomputed, not used: "
            f"{', '.join(r.path.name for r in found[:3])}{' ...' if len(found) > 3 else ''}")


# Over this process: fits stored, and {folder: why} of the stores that failed (a read-only
# or full cache folder). A fit that cannot be stored is still returned, and the study
# report says it was not kept (`fit_cache_store_failures`).
stored_count = 0
store_failures: dict[str, list[str]] = {}


def _keep(path: Path, key: str, value) -> None:
    """`_store`, where a cache folder that cannot be written (read-only, full) costs only
    the reuse next time: the fit is returned all the same, and the failure counted."""
    global stored_count
    from gbstats.errors import place_problem

    try:
        _store(path, key, value)
    except OSError as exc:
        why = place_problem(exc) or exc.strerror or type(exc).__name__
        store_failures.setdefault(str(path.parent), []).append(why)
        return
    stored_count += 1


def fit_cache_snapshot() -> int:
    """How many stores have failed so far (pass to `fit_cache_store_failures(since=...)`)."""
    return sum(len(v) for v in store_failures.values())


def fit_cache_store_failures(since: int = 0) -> str | None:
    """One sentence on the fits that could not be stored since a snapshot, or None."""
    failed = fit_cache_snapshot() - since
    if failed <= 0:
        return None
    where = "; ".join(f"{folder} is {whys[-1]}" for folder, whys in store_failures.items())
    return (f"Fit cache: {failed} fit(s), resampling result(s) and figure(s) could not be stored "
            f"for reuse ({where}); they were computed and are reported as usual, and will be computed "
            f"again by the next run. Make the folder writable (or free space) to reuse them.")


def fit_cache_stored() -> str | None:
    """"3 fits, resampling results and figures": what this process stored in the fit cache
    (figures too: `cached_value`), or None."""
    if not stored_count:
        return None
    return (f"{stored_count} fit{'s' if stored_count != 1 else ''}, resampling results and "
            f"figures")


def cached_fit(fit: Callable[..., FitResult], formula: str, data: pd.DataFrame, *,
               cache_dir=None, use_cache: bool = True, **options) -> FitResult:
    """`fit(formula, data, **options)`, or the stored result of that very call.

    The returned result's `fit_stats["reused_from_cache"]` says which it was.
    """
    if cache_is_off(use_cache):
        return fit(formula, data, **options)
    key = fit_key(fit, formula, data, options)
    path = resolve_cache_dir(cache_dir) / FIT_FOLDER / f"{key}.pickle"
    stored = _load(path, key)
    if isinstance(stored, FitResult):
        # set on the freshly unpickled object, not through dataclasses.replace, which would
        # read (and so unpickle) the stored posterior
        stored.fit_stats = {**stored.fit_stats, "reused_from_cache": True}
        return stored
    result = fit(formula, data, **options)
    result.fit_stats.setdefault("reused_from_cache", False)
    # the group counts some engines leave to the live handle, which is not stored: counted
    # now, so a reused fit's table shows the same Participants and Items rows as a fresh one
    # (a warm run's Bayesian column lost them)
    counts = group_counts(result)
    if counts:
        result.fit_stats.setdefault("n_groups", counts)
    # Stored without the engine's live model (an R object behind lme4 fits,
    # a local class with contrasts): it cannot be pickled. A reused result
    # therefore has handle=None, and marginal_means / compare_models /
    # random_effects on it say that they need a fresh fit (use_cache=False).
    # The posterior is kept, pickled on its own (`storable`): later steps may read the draws.
    entry = storable(result)
    if entry is not None:
        _keep(path, key, entry)
    return result


def storable(result: FitResult) -> FitResult | None:
    """The result as an entry holds it: without its live handle, and with its posterior as
    a StoredPosterior, so that loading the entry neither imports ArviZ nor builds the
    draws until a step reads `idata`. None when the posterior cannot be pickled (then the
    fit is not kept, as for any value `_encode` cannot pickle)."""
    entry = dataclasses.replace(result, handle=None)
    if entry.idata is not None:
        try:
            entry.idata = StoredPosterior(pickle.dumps(entry.idata))
        except (pickle.PicklingError, AttributeError, TypeError):
            return None
    return entry


def cached_call(func: Callable, *frames: pd.DataFrame, cache_dir=None, use_cache: bool = True,
                computed_by_r: bool = False, **options):
    """`func(*frames, **options)`, or the stored result of that very call.

    For seeded resampling statistics (bootstraps, permutation tests) that
    take seconds and return tables: the key covers the function, every
    frame's values, the options and the gbstats source, as for fits. The
    function must be deterministic given its inputs (a seed among the options).
    computed_by_r: the numbers are R's (an lme4 fit and what R computes from it), so they
    are keyed by R's linear algebra, as an lme4 fit is (`numeric_settings`).
    Returns (result, reused: bool).
    """
    numerics = numeric_settings({"backend": "lme4"} if computed_by_r else None)
    return cached_value(func, {"frames": [data_fingerprint(f) for f in frames],
                               "options": canonical(options), "numerics": numerics},
                        lambda: func(*frames, **options), cache_dir=cache_dir,
                        use_cache=use_cache, prefix="call")


def cached_value(func: Callable, inputs: dict, compute: Callable[[], object], *, cache_dir=None,
                 use_cache: bool = True, prefix: str = "value"):
    """`compute()`, or what it returned for the very same `inputs` (JSON-able: frames
    already fingerprinted, options `canonical`): the key is `call_key(func, inputs)`, so
    `func` names what computes the value (for a function outside gbstats, its module's
    source is keyed too). Stored as fits are: checksummed, written atomically. Used by
    `cached_call` and for what is not one function's return value, such as a figure's files
    (`StudyReport.drawn_figure`). Returns (value, reused: bool)."""
    if cache_is_off(use_cache):
        return compute(), False
    key = call_key(func, inputs)
    path = resolve_cache_dir(cache_dir) / FIT_FOLDER / f"{prefix}-{key}.pickle"
    stored = _load(path, key)
    if isinstance(stored, dict) and stored.get("key") == key:
        return stored["value"], True
    value = compute()
    _keep(path, key, {"key": key, "value": value})
    return value, False


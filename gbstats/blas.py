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

import contextlib
import functools
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


# --------------------------------------------------------------------------
# numpy's and scipy's own OpenBLAS: one thread for gbstats' numerical work
#
# numpy and scipy each bundle an OpenBLAS that starts a thread per core. gbstats' bootstraps
# run thousands of small matrix products ((20 x 89) @ (89 x 335), say), each a parallel
# region whose threads wait for one another, and a study runs its Bayesian twins' chains
# on the cores beside them. Measured on the 2-core machine (issue 41):
# - while a test run kept both cores busy, the per-item people replicates of
#   singular_they's largest group took 6.9 s on two threads and 0.31 s on one, and the main
#   job's correlation stage (its bootstraps) 66.7 s against 34.5 s;
# - on the quiet machine, a cold run of the main job without twins took 36.6-37.2 s with
#   two threads (41.6-42.0 s of CPU) and 29.6 s with one (25.9 s of CPU).
# tests/stats/test_blas.py checks that one thread gives the kernels' tables to the bit.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@functools.lru_cache(maxsize=None)
def _blas_controller(loaded: frozenset):
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextlib.contextmanager
def one_blas_thread():
    """numpy's and scipy's BLAS on one thread inside the block (threadpoolctl), unless the
    user set a thread count (BLAS_THREAD_VARIABLES), which is kept. The previous limits
    come back at its end. The limit is the process's: threads started inside the block
    (a twin's chains) share it."""
    if any(os.environ.get(v) for v in BLAS_THREAD_VARIABLES):
        yield
        return
    # The controller lists the BLAS libraries loaded when it is made (a scan of the
    # process's shared libraries, a few ms); scipy's own OpenBLAS loads with scipy.linalg,
    # so one is made again once that has been imported.
    loaded = frozenset(name for name in ("numpy", "scipy.linalg") if name in sys.modules)
    with _blas_controller(loaded).limit(limits=1, user_api="blas"):
        yield


def on_one_blas_thread(function):
    """Decorate a function to run inside `one_blas_thread`."""
    @functools.wraps(function)
    def limited(*args, **kwargs):
        with one_blas_thread():
            return function(*args, **kwargs)
    return limited

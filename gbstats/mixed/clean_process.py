"""Run an R fit in a process of its own, forked from one clean R server, so that its numbers
depend on its inputs only: `in_clean_process(fit_glmm, formula, data, ...)`.

Why (issue 33, "Process state"). Where a likelihood is flat (pronoun_fidelity's GLMM, with
quasi-separated terms), lme4 and blme end at a point that depends on the order in which
floating-point sums are taken, and that order depends on where R's vectors sit in memory
(SIMD code handles an unaligned start separately). Where they sit depends on everything
the process allocated before the fit. Measured on pronoun_fidelity's GLMM (the baseline
settings, one instance table read from disk, tests/reference/process_state.md):

- allocating k small R vectors before the fit moved bglmer's
  pronoun_setthey:distractors1 between -0.75280 (k = 0, 2, 3, 5) and -0.71362 (k = 1, 8),
  and glmer's SE of pronoun_setshe between 418.0 and 1969.6;
- importing torch and running one matrix product first gave -0.75280 in 2 of 2 processes,
  a plain process -0.71362 in 3 of 3 (one OpenMP thread or two alike); loading the
  language model and scoring first gave either;
- R's BLAS is the reference BLAS with or without torch loaded (`extSoftVersion()`), and
  torch leaves the FPU's flush-to-zero / denormal modes alone: neither BLAS interposition
  nor the FPU state is the channel; the allocation history is.

So a study whose scores came from the cache (torch never imported) and one that scored in
process (torch, transformers and a model loaded) fitted in different memory and could
report different fits. Here every fit runs in a child forked from a server process that
started R and nothing else (gbstats.mixed.r_server, forked once per fit): each
child starts from the same memory, whatever the calling process did before, so the same
command gives the same numbers whichever way its scores arrived, and whether or not an
earlier fit was reused from the fit cache.

What comes back is the FitResult without its live R model (`handle=None`, as from the fit
cache); a caller that needs it (marginal_means, compare_models, random_effects) fits in
its own process. The study runner fits in the clean process (`clean_fits()` around its fit
steps); a library call to fit_lmm / fit_glmm fits in the calling process, as before.
GBSTATS_FIT_IN_PROCESS=1 turns the isolation off (every fit in the calling process, as
before). A gbstats error raised by the fit is raised again here with its class and message.
The server runs in a session of its own, so a Ctrl-C at the terminal reaches the study
only; a call cut short (Ctrl-C) ends the server and its fit, whose answer could otherwise
be read by the next call.
"""
from __future__ import annotations

import atexit
import contextlib
import contextvars
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable

ENV_IN_PROCESS = "GBSTATS_FIT_IN_PROCESS"
# Whether R fits go to the clean process now: a study's runner turns it on around its fit
# steps (`clean_fits()`); library calls fit in the calling process, keeping their live
# R model for marginal_means, compare_models and random_effects.
_CLEAN_FITS: contextvars.ContextVar[bool] = contextvars.ContextVar("gbstats_clean_fits",
                                                                  default=False)


def isolation_is_off() -> bool:
    return os.environ.get(ENV_IN_PROCESS, "").lower() in {"1", "true", "yes"}


@contextlib.contextmanager
def clean_fits(on: bool = True):
    """Inside the block, R fits (lme4, blme) run in the clean process (`in_clean_process`);
    `clean_fits(False)` for a fit whose live R model is needed afterwards."""
    token = _CLEAN_FITS.set(on)
    try:
        yield
    finally:
        _CLEAN_FITS.reset(token)


def r_fit(func: Callable, *args, **kwargs):
    """An engine's R fit: in the clean process inside `clean_fits()`, else here."""
    if _CLEAN_FITS.get() and not isolation_is_off():
        return in_clean_process(func, *args, **kwargs)
    return func(*args, **kwargs)


# What the server needs from the caller's environment; everything else is left out, so that
# its environment (which sits at the top of its stack) has the same size whatever the
# caller's shell, working folder or earlier R start put there (`server_environment`).
KEPT_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "R_HOME",
                  "R_LIBS", "R_LIBS_USER", "R_LIBS_SITE", "LD_LIBRARY_PATH", "OMP_NUM_THREADS",
                  "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "MKL_NUM_THREADS")
ENVIRONMENT_SLOTS = 32  # variables, padding included
STACK_BYTES = 16384  # argv + environment strings, padded to this size
ADDR_NO_RANDOMIZE = 0x0040000  # personality(2)


def server_environment(argv: list[str], tmpdir: str | None = None) -> dict[str, str]:
    """The server's environment: KEPT_VARIABLES, the caller's sys.path, a fixed hash seed,
    and padding to ENVIRONMENT_SLOTS variables and STACK_BYTES bytes of strings.

    With address randomisation off, the kernel lays a new process's stack out from its
    argument and environment strings down: equal sizes put every stack frame of the server
    (and of each forked fit) at the same address, whatever the caller's environment held.
    """
    env = {k: os.environ[k] for k in KEPT_VARIABLES if k in os.environ}
    if tmpdir is not None:
        env["TMPDIR"] = tmpdir   # R's session folder (RtmpXXXX) goes in it: `_Server.tmp`
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env["PYTHONHASHSEED"] = "0"
    pads = [f"GBSTATS_PAD_{i:02d}" for i in range(ENVIRONMENT_SLOTS - len(env))]
    env.update({name: "" for name in pads})
    used = sum(len(a) + 1 for a in argv) + len(argv[0]) + 1 \
        + sum(len(k) + len(v) + 2 for k, v in env.items())
    if pads and used < STACK_BYTES:
        env[pads[-1]] = "x" * (STACK_BYTES - used)
    return env


def _no_address_randomisation() -> None:
    """In the server, before it starts Python: turn address space randomisation off
    (personality(ADDR_NO_RANDOMIZE), what `setarch -R` does). Where the system refuses,
    the server runs randomised: still isolated from the caller, not laid out the same."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        current = libc.personality(0xFFFFFFFF)
        if current != -1:
            libc.personality(current | ADDR_NO_RANDOMIZE)
    except (OSError, AttributeError):
        pass


class _Server:
    """The running `python -m gbstats.mixed.r_server` and this process's ends of its pipes."""

    def __init__(self):
        pipes = [os.pipe() for _ in range(3)]  # go, request, answer
        (go_r, self.go), (request_r, self.request), (self.answer, answer_w) = pipes
        argv = [sys.executable, "-m", "gbstats.mixed.r_server", str(go_r), str(request_r),
                str(answer_w), str(os.getpid())]
        # A temporary folder of the server's own: R's RtmpXXXX session folder and whatever
        # a fit writes go in it, and it is removed whenever the server ends, a fit cut short
        # by Ctrl-C included (each one left an empty RtmpXXXX behind; issue 44, case 15).
        import tempfile

        self.tmp = tempfile.mkdtemp(prefix="gbstats-r-server-")
        # A session of its own: a Ctrl-C at the terminal goes to the study (which stops
        # with one line, studies.pipeline) and not to the server or its fit, which would
        # print their own tracebacks; the caller ends them (`abandon`).
        self.process = subprocess.Popen(
            argv, pass_fds=(go_r, request_r, answer_w), env=server_environment(argv, self.tmp),
            stdin=subprocess.DEVNULL, cwd="/", preexec_fn=_no_address_randomisation,
            start_new_session=True)
        for fd in (go_r, request_r, answer_w):
            os.close(fd)

    def alive(self) -> bool:
        return self.process.poll() is None

    def call(self, func: Callable, args: tuple, kwargs: dict):
        from gbstats.mixed.r_messages import encode, read_message, write_bytes

        message = encode((func, args, kwargs))  # before the server forks: a request that
        os.write(self.go, b"g")                 # cannot be pickled never leaves a child waiting
        write_bytes(self.request, message)
        return read_message(self.answer)

    def abandon(self) -> None:
        """End the server and the fit it forked at once (one process group): after a call
        cut short, the fit's answer must never be read as the next call's."""
        import signal

        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.close()

    def close(self) -> None:
        for fd in (self.go, self.request, self.answer):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        import shutil

        shutil.rmtree(self.tmp, ignore_errors=True)


_SERVER: _Server | None = None
_LOCK = threading.Lock()


def _close_server(abandon: bool = False) -> None:
    global _SERVER
    if _SERVER is not None:
        _SERVER.abandon() if abandon else _SERVER.close()
        _SERVER = None


# At the interpreter's exit no caller waits for a fit, so the server (and any fit it forked)
# is ended at once, as exit_process does for `python -m studies.<name>`. Closing its pipes
# and waiting instead made a process that ended before its first fit wait for the server to
# finish starting R, up to 10 s (measured: a study run through Study.main that fits nothing
# took 15 s, 10 of them in this wait).
atexit.register(_close_server, True)


def start_server_early() -> bool:
    """Start the clean R server now and return at once (True if one was started or runs).

    Its start (Python, rpy2, pymer4, lme4: about 8 s of one core on the 2-core machine)
    then overlaps with what the caller does before its first fit (a study's loading and
    scoring) instead of delaying that fit. The server is the same either way: it starts R
    and nothing else, and forks each fit from there. Nothing is started where the fits run
    in the calling process (GBSTATS_FIT_IN_PROCESS=1) or where R or rpy2 is missing (the
    first fit then says so, as before)."""
    import importlib.util
    import shutil

    global _SERVER
    if isolation_is_off() or shutil.which("R") is None \
            or importlib.util.find_spec("rpy2") is None:
        return False
    with _LOCK:
        if _SERVER is None or not _SERVER.alive():
            _SERVER = _Server()
    return True


def _reraise(kind, message: str):
    """The child's gbstats error, of its class, without calling its __init__ (which may take
    other arguments than the message)."""
    from gbstats.errors import GbstatsError

    if not (isinstance(kind, type) and issubclass(kind, GbstatsError)):
        kind = GbstatsError
    error = kind.__new__(kind)
    Exception.__init__(error, message)
    raise error


def in_clean_process(func: Callable, *args, **kwargs):
    """`func(*args, **kwargs)` in a child of the clean R server (module docstring); in this
    process when GBSTATS_FIT_IN_PROCESS=1. `func` must be a module-level function, its
    arguments and result picklable."""
    global _SERVER
    if isolation_is_off():
        return func(*args, **kwargs)
    from gbstats.errors import GbstatsError

    with _LOCK:
        if _SERVER is None or not _SERVER.alive():
            _SERVER = _Server()
        try:
            answer = _SERVER.call(func, args, kwargs)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            raise GbstatsError(f"{getattr(func, '__name__', func)} cannot be sent to the clean "
                               f"R process ({exc}); it takes module-level functions and "
                               f"picklable arguments") from None
        except (BrokenPipeError, OSError) as exc:
            _close_server(abandon=True)
            raise GbstatsError(f"the clean R process for {getattr(func, '__name__', func)} "
                               f"could not be reached ({exc}); set {ENV_IN_PROCESS}=1 to fit "
                               f"in this process") from None
        except BaseException:
            # Ctrl-C (or any error) while the fit runs: its answer would still arrive, and
            # the next call would read it as its own, so the server and the fit are ended
            _close_server(abandon=True)
            raise
    if answer is None:
        _close_server()
        raise GbstatsError(f"the clean R process ended before it answered for "
                           f"{getattr(func, '__name__', func)}; set {ENV_IN_PROCESS}=1 to fit "
                           f"in this process")
    status, value, message = answer
    if status == "error":
        _reraise(value, message)
    if status == "crash":
        raise GbstatsError(f"fitting in the clean R process failed ({value}: {message})")
    return value

"""Where scoring batches run: in this process (`local`) or on a pool of Ray actors (`ray`).

`models.batching.run_units` decides WHAT is scored: it dedupes the units,
looks them up in the cache, sorts the misses and cuts them into batches. An
engine decides only WHERE those batches run. Either way the results come back
to the driver, which commits each batch to the cache the moment it arrives,
so the cache lives on the driver only, a killed driver loses at most the
batches in flight, and a re-run resumes. Both engines score the very same
batches with the very same code, so they give the same numbers.

    with scoring_engine("ray", address=None, actors=2):   # a local Ray instance
        score_sentences(texts, lm="smollm2-135m")          # misses go to the actors

The engine in force is a context variable rather than an argument of every
scorer, so a study or the CLI chooses it once around its scoring calls.

Ray (`pip install gbstats[ray]`) is imported only when the Ray engine is used.
Each actor holds one model at a time and loads it once, on the first batch it
gets for that model; the driver ships only how to load it (`ModelRequest`),
never the weights. A dead actor is restarted by Ray and its batches in flight
are retried (`max_restarts`, `max_task_retries`); every batch's result is
taken once, from its one object reference, so nothing is lost or duplicated.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
import socket
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gbstats.errors import GbstatsError, MissingDependencyError, UnknownNameError
from models.cpu_streams import map_in_streams, stream_plan, worth_streaming

ENGINES = ("local", "ray")
RAY_INSTALL_HINT = "pip install 'gbstats[ray]' (or: pip install -c constraints.txt ray)"
BATCHES_IN_FLIGHT_PER_ACTOR = 2  # one computing, one queued, so an actor never waits for the driver
ACTOR_RESTARTS = 3  # a worker that dies is restarted this often per actor before the sweep fails
CONNECT_TIMEOUT_SECONDS = 10.0
# On a GPU the local engine starts a commit batch before committing the one before
# (LocalEngine.map_batches); False: one after the other (benchmarks/gpu_scoring.py times both)
OVERLAP_ON_GPU = True


class EngineError(GbstatsError, RuntimeError):
    """A scoring engine could not start or lost its workers for good."""


@dataclass(frozen=True)
class ModelRequest:
    """How to load a model again in another process, and what it must turn out to be."""

    name: str
    device: str
    dtype: str
    kind: str
    revision: str | None  # what was asked for (None: the default)
    model_id: str  # what the driver loaded ...
    found_revision: str  # ... and at which revision: a worker must load the same
    device_map: str | None = None
    fingerprint: str | None = None  # ... with the same content (models.fingerprint)

    @classmethod
    def of(cls, lm) -> ModelRequest:
        asked = getattr(lm, "load_request", None) or {}
        return cls(name=lm.name, device=lm.device, dtype=lm.dtype, kind=lm.kind,
                   revision=asked.get("revision"), model_id=lm.model_id,
                   found_revision=lm.revision, device_map=asked.get("device_map"),
                   fingerprint=getattr(lm, "fingerprint", None))

    def load(self):
        """Load (or reuse, per process) the model and check it is the driver's model."""
        from models.loading import ModelUnavailableError, load_scorer

        lm = load_scorer(self.name, device=self.device, dtype=self.dtype,
                         revision=self.revision, kind=self.kind, device_map=self.device_map)
        if (lm.model_id, lm.revision, lm.fingerprint) != (self.model_id, self.found_revision,
                                                          self.fingerprint):
            raise ModelUnavailableError(
                f"model {self.name!r} on worker {socket.gethostname()} (pid {os.getpid()}) is "
                f"{lm.model_id} at revision {lm.revision} (content sha256 {lm.fingerprint}), "
                f"but the driver scored with {self.model_id} at revision {self.found_revision} "
                f"(content sha256 {self.fingerprint}); install the same model (and package "
                f"versions) on every node")
        return lm


@dataclass
class BatchScorer:
    """`function(lm, batch, **options)` as a picklable object.

    In this process it uses the model it was given. Pickled (sent to a Ray
    actor) it carries only the `ModelRequest`, and the actor loads the model
    on first use and keeps it for every later batch.
    """

    lm: object = field(repr=False)
    function: Callable  # a module-level function, so that it pickles by reference
    options: dict = field(default_factory=dict)
    request: ModelRequest | None = None

    def __post_init__(self):
        if self.request is None and self.lm is not None:
            self.request = ModelRequest.of(self.lm)

    def __call__(self, batch: list) -> list:
        if self.lm is None:
            self.lm = self.request.load()
        return self.function(self.lm, batch, **self.options)

    def launch(self, batch: list):
        """Start scoring `batch`; returns a function that returns its results. A function
        with a `launch` companion (models.causal.forward_logprobs) only starts its device
        work here; any other is computed here at once."""
        if self.lm is None:
            self.lm = self.request.load()
        start = getattr(self.function, "launch", None)
        if start is None:
            results = self.function(self.lm, batch, **self.options)
            return lambda: results
        return start(self.lm, batch, **self.options)

    @property
    def overlaps(self) -> bool:
        """Whether a batch's device work can run on while the one before it is committed:
        a function with a `launch` companion, on a model on a GPU."""
        return (OVERLAP_ON_GPU and getattr(self.function, "launch", None) is not None
                and self.lm is not None
                and getattr(self.lm, "device_type", "cpu") == "cuda")

    def worth_streaming(self) -> bool:
        """Whether its model is big enough for CPU streams (models.cpu_streams). Loads what
        loads lazily (the weights, the tokenizer) here, so that no two streams load it."""
        self.lm.tokenizer
        return worth_streaming(self.lm.model)

    @property
    def on_cpu(self) -> bool:
        """Whether its model runs on the CPU (where batches go to streams, models.cpu_streams)."""
        return self.lm is not None and getattr(self.lm, "device_type", None) == "cpu"

    def __getstate__(self):
        return {"lm": None, "function": self.function, "options": self.options,
                "request": self.request}


# Torch runs a forward pass on every core (intra-op threads, OpenMP), and each of its
# parallel regions waits for all of its threads. On a machine whose cores are taken by
# other processes a thread is often descheduled, and every region then waits for it: on
# the shared 2-core machine at a load average of 17, the embedded model scored 4 tokens/s
# with 2 threads and 24 with 1 (benchmarks/results/study_scoring.json, "threads"). So
# when the runnable processes per core (1-minute load average / cores) exceed
# OVERSUBSCRIBED, the local engine scores with one thread; on a quiet machine it keeps
# torch's default (all cores). OMP_NUM_THREADS, if set, is the user's choice and is kept.
OVERSUBSCRIBED = 1.5


def scoring_threads(load: float | None = None, cores: int | None = None) -> int | None:
    """1 when the machine is oversubscribed (see OVERSUBSCRIBED), else None (torch's default)."""
    if os.environ.get("OMP_NUM_THREADS"):
        return None
    cores = cores or os.cpu_count() or 1
    load = os.getloadavg()[0] if load is None else load
    return 1 if cores > 1 and load / cores > OVERSUBSCRIBED else None


_THREADS_SAID: list[str] = []


@contextlib.contextmanager
def torch_threads_for_load():
    """Score inside the block with `scoring_threads()` torch threads (restored after)."""
    import sys

    torch = sys.modules.get("torch")
    threads = scoring_threads() if torch is not None else None
    if threads is None or torch.get_num_threads() <= threads:
        yield
        return
    before = torch.get_num_threads()
    if not _THREADS_SAID:
        import logging

        message = (f"scoring with {threads} torch thread instead of {before}: the load average "
                   f"is {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, and torch's threads "
                   "wait for each other when other processes hold the cores")
        _THREADS_SAID.append(message)
        logging.getLogger("gbstats.progress").info(message)
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class LocalEngine:
    """Every batch in this process: on a CPU in streams of one thread per core
    (models.cpu_streams), elsewhere one after the other."""

    name = "local"

    def driver_device(self, device: str) -> str:
        """Where the driver loads a model asked for on `device`."""
        return device

    def map_batches(self, scorer: Callable[[list], list],
                    batches: Sequence[list]) -> Iterator[tuple[int, list]]:
        """Yield (batch index, results) in order. On a GPU (`BatchScorer.overlaps`) the
        next batch is started before a batch's results are yielded, so the device computes
        it while the caller commits the one before (issue 41: the device sat idle through
        each batch's result building and cache write); a killed run then loses up to two
        batches, not one. On a CPU with several cores the batches go to streams of one torch
        thread each (models.cpu_streams: torch's own threads stall whenever another process
        takes a core); a model too small for streams scores its batches in turn on one torch
        thread (`_one_thread`). Elsewhere each batch is scored when its turn comes."""
        if isinstance(scorer, BatchScorer) and scorer.on_cpu and batches:
            streams, threads = stream_plan()
            if streams > 1 and not scorer.worth_streaming():
                yield from _one_thread(scorer, batches)
                return
            if streams > 1 and len(batches) > 1:
                yield from map_in_streams(scorer, batches, streams, threads)
                return
        with torch_threads_for_load():
            if not (isinstance(scorer, BatchScorer) and scorer.overlaps and len(batches) > 1):
                for index, batch in enumerate(batches):
                    yield index, scorer(batch)
                return
            pending = None
            for index, batch in enumerate(batches):
                finish = scorer.launch(batch)
                if pending is not None:
                    yield pending[0], pending[1]()
                pending = (index, finish)
            yield pending[0], pending[1]()

    def close(self) -> None:
        pass


def _one_thread(scorer: Callable[[list], list],
                batches: Sequence[list]) -> Iterator[tuple[int, list]]:
    """Each batch in turn on one torch thread: for a model too small for streams
    (models.cpu_streams.worth_streaming), too small for torch's threads as well. Its
    operations take microseconds, and each of torch's parallel regions waits for every
    thread: with the other core taken by another process, a layer norm of the tests' tiny
    GPT-2 took 0.4-7.9 ms on two threads and 6-13 us on one (issue 41; 400 texts scored
    in 5.6 s instead of well under one). Where streams are off (OMP_NUM_THREADS set by the
    user, GBSTATS_CPU_STREAMS=1, one core) torch's threads are left as they are."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for index, batch in enumerate(batches):
            yield index, scorer(batch)
    finally:
        torch.set_num_threads(before)


_CURRENT: contextvars.ContextVar = contextvars.ContextVar("gbstats_scoring_engine",
                                                          default=LocalEngine())


def current_engine():
    """The engine scorers use now (the local engine unless `scoring_engine` says otherwise)."""
    return _CURRENT.get()


@contextlib.contextmanager
def use_engine(engine):
    """Score with `engine` inside the block (the caller closes the engine)."""
    token = _CURRENT.set(engine)
    try:
        yield engine
    finally:
        _CURRENT.reset(token)


@contextlib.contextmanager
def scoring_engine(name: str = "local", *, address: str | None = None, actors: int | None = None,
                   cpus_per_actor: float = 1.0, gpus_per_actor: float = 0.0,
                   device: str | None = None):
    """Make, use and close the engine called `name` ("local" or "ray") for the block."""
    engine = make_engine(name, address=address, actors=actors, cpus_per_actor=cpus_per_actor,
                         gpus_per_actor=gpus_per_actor, device=device)
    try:
        with use_engine(engine):
            yield engine
    finally:
        engine.close()


def add_engine_flags(parser):
    """--engine, --ray-address, --ray-actors, --ray-cpus-per-actor, --ray-gpus-per-actor:
    the same flags for `python -m models score` and for the studies that score a lot."""
    group = parser.add_argument_group("scoring engine")
    group.add_argument("--engine", default="local", choices=list(ENGINES),
                       help="where cache misses are scored: this process (default) or a pool of "
                            "Ray actors (needs `pip install gbstats[ray]`)")
    group.add_argument("--ray-address", default=None, metavar="ADDRESS",
                       help="Ray cluster to join (host:port printed by `ray start --head`, "
                            "ray://host:10001, or auto); default: start a local Ray instance")
    group.add_argument("--ray-actors", type=int, default=None, metavar="N",
                       help="scoring actors (default: the cluster's CPUs / --ray-cpus-per-actor, "
                            "or its GPUs / --ray-gpus-per-actor)")
    group.add_argument("--ray-cpus-per-actor", type=float, default=1.0, metavar="N")
    group.add_argument("--ray-gpus-per-actor", type=float, default=0.0, metavar="N")
    return parser


def engine_from_args(args):
    """`scoring_engine(...)` for the flags `add_engine_flags` added (a context manager)."""
    return scoring_engine(getattr(args, "engine", "local"), address=getattr(args, "ray_address", None),
                          actors=getattr(args, "ray_actors", None),
                          cpus_per_actor=getattr(args, "ray_cpus_per_actor", 1.0),
                          gpus_per_actor=getattr(args, "ray_gpus_per_actor", 0.0),
                          device=getattr(args, "device", None))


def make_engine(name: str, *, address: str | None = None, actors: int | None = None,
                cpus_per_actor: float = 1.0, gpus_per_actor: float = 0.0, device: str | None = None):
    """device: where the Ray actors run their models (the driver may have no GPU)."""
    if name not in ENGINES:
        raise UnknownNameError("scoring engine", name, list(ENGINES))
    if name == "local":
        if address is not None:
            raise EngineError("--ray-address is given but the engine is 'local'; add --engine ray")
        return LocalEngine()
    return RayEngine(address=address, actors=actors, cpus_per_actor=cpus_per_actor,
                     gpus_per_actor=gpus_per_actor, device=device)


# Library folders that embedding R (rpy2) puts at the front of LD_LIBRARY_PATH:
# R's own and the system's. Ray starts its raylet and agents as new Python
# processes that inherit this variable; with the system folder first they load
# the distribution's libpython instead of the running interpreter's, and fail
# at start-up (seen here: "undefined symbol _PyModule_Add" in _ssl, then "node
# timed out during startup"). The system folders are on the loader's default
# path anyway, so dropping them only restores the normal precedence.
_SYSTEM_LIBRARY_DIRS = ("/usr/lib", "/lib", "/usr/lib64", "/lib64", "/usr/local/lib")


def _library_path_for_ray(value: str, r_home: str | None) -> str:
    """LD_LIBRARY_PATH without R's and the system's library folders (see above)."""
    def keep(entry: str) -> bool:
        if not entry:
            return False
        if r_home and entry.startswith(r_home.rstrip("/") + "/"):
            return False
        if entry.startswith("/usr/lib/jvm/"):  # R's Java path, also added by R
            return False
        return not any(entry == d or (entry.startswith(d + "/") and entry.count("/") == d.count("/") + 1)
                       for d in _SYSTEM_LIBRARY_DIRS)
    return ":".join(e for e in value.split(":") if keep(e))


@contextlib.contextmanager
def environment_for_ray_start():
    """Start Ray's processes with a library path that R has not rearranged."""
    old = os.environ.get("LD_LIBRARY_PATH")
    if old is None:
        yield
        return
    cleaned = _library_path_for_ray(old, os.environ.get("R_HOME"))
    if cleaned:
        os.environ["LD_LIBRARY_PATH"] = cleaned
    else:
        del os.environ["LD_LIBRARY_PATH"]
    try:
        yield
    finally:
        os.environ["LD_LIBRARY_PATH"] = old


def import_ray():
    try:
        import ray
    except ImportError as exc:
        raise MissingDependencyError(
            f"the Ray engine needs Ray, which is not installed ({exc}); install it with "
            f"`{RAY_INSTALL_HINT}`, or score with the local engine (--engine local)") from exc
    return ray


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT_SECONDS) -> None:
    """Fail fast, and say so plainly, when nothing listens at a Ray address.

    ray.init would otherwise retry for a minute or more before a long
    traceback. "auto" (find a cluster started on this machine) is left to Ray.
    """
    if address in ("auto", "local"):
        return
    target = address.split("://", 1)[-1]
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        raise EngineError(f"--ray-address {address!r} is not an address; expected host:port "
                          f"(e.g. 10.0.0.5:6379, printed by `ray start --head`), "
                          f"ray://host:10001, or auto")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise EngineError(
            f"no Ray cluster is reachable at {address!r} ({exc}). Start one with "
            f"`ray start --head` on the head node (it prints the address to pass), check the "
            f"host, port and firewall, or leave --ray-address out to start a local Ray "
            f"instance") from exc


class ScoringWorker:
    """A Ray actor: scores batches with one model at a time, loaded once."""

    def __init__(self):
        self.request = None

    def score(self, scorer: BatchScorer, batch: list) -> tuple[int, list]:
        if scorer.request != self.request:
            # a sweep moves from model to model: free the last one first
            from models.loading import clear_loaded_models

            clear_loaded_models()
            self.request = scorer.request
        return os.getpid(), scorer(batch)


def source_folders() -> list[str]:
    """The driver's own gbstats and models packages, shipped to a cluster (Ray py_modules),
    so that its workers run the driver's code, not whatever copy their environment holds."""
    import gbstats
    import models

    return [str(Path(gbstats.__file__).parent), str(Path(models.__file__).parent)]


class RayEngine:
    """Batches scored by a pool of Ray actors; results stream back to the driver.

    address: None starts a local Ray instance (or reuses the one this
    process already started); "host:port" or "ray://host:10001" joins a
    cluster started with `ray start --head`. actors: pool size (default: the
    cluster's CPUs divided by cpus_per_actor, or its GPUs by gpus_per_actor).
    """

    name = "ray"

    def __init__(self, address: str | None = None, actors: int | None = None,
                 cpus_per_actor: float = 1.0, gpus_per_actor: float = 0.0,
                 device: str | None = None):
        self.ray = import_ray()
        if actors is not None and actors < 1:
            raise EngineError(f"the Ray engine needs at least one actor, found actors={actors}")
        self.address = address
        self.device = device  # the actors' device; None: the driver's model's device
        self.cpus_per_actor, self.gpus_per_actor = cpus_per_actor, gpus_per_actor
        self._started_ray = False
        self._connect()
        self.n_actors = actors or self._default_actors()
        self._actors: list = []
        self.worker_pids: set[int] = set()  # every process that returned a batch (restarts too)
        self.batches_received = 0

    def driver_device(self, device: str) -> str:
        # the driver needs the tokenizer only; the actors run the model on self.device
        return "cpu" if self.device is not None else device

    def _connect(self) -> None:
        ray = self.ray
        if self.address is not None:
            check_reachable(self.address)
        if ray.is_initialized():  # this process already joined a cluster (or started one): use it
            return
        # a cluster's workers get the driver's own gbstats and models code
        # (a local instance's workers share the driver's sys.path anyway)
        runtime_env = {"py_modules": source_folders()} if self.address is not None else None
        try:
            with environment_for_ray_start():
                ray.init(address=self.address, include_dashboard=False, log_to_driver=False,
                         logging_level="ERROR", runtime_env=runtime_env)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = self.address or "a new local instance"
            raise EngineError(f"could not start or join Ray at {where}: {exc}") from exc
        self._started_ray = True

    def _default_actors(self) -> int:
        resources = self.ray.cluster_resources()
        if self.gpus_per_actor:
            return max(1, int(resources.get("GPU", 0) // self.gpus_per_actor))
        return max(1, int(resources.get("CPU", 1) // self.cpus_per_actor))

    def _pool(self) -> list:
        if not self._actors:
            actor = self.ray.remote(num_cpus=self.cpus_per_actor, num_gpus=self.gpus_per_actor,
                                    max_restarts=ACTOR_RESTARTS, max_task_retries=ACTOR_RESTARTS)(ScoringWorker)
            self._actors = [actor.remote() for _ in range(self.n_actors)]
        return self._actors

    def map_batches(self, scorer: Callable[[list], list],
                    batches: Sequence[list]) -> Iterator[tuple[int, list]]:
        """Yield (batch index, results) as batches finish, in any order."""
        ray = self.ray
        if not batches:
            return
        actors = self._pool()
        if self.device is not None and isinstance(scorer, BatchScorer):
            scorer = BatchScorer(None, scorer.function, scorer.options,
                                 dataclasses.replace(scorer.request, device=self.device))
        scorer_ref = ray.put(scorer)  # shipped once, not with every batch
        waiting = list(range(len(batches)))[::-1]  # popped from the end: batch 0 first
        in_flight: dict = {}  # object ref -> (batch index, actor index)
        load = [0] * len(actors)

        def submit(a: int) -> None:
            index = waiting.pop()
            ref = actors[a].score.remote(scorer_ref, batches[index])
            in_flight[ref] = (index, a)
            load[a] += 1

        try:
            for _ in range(BATCHES_IN_FLIGHT_PER_ACTOR):
                for a in range(len(actors)):
                    if waiting:
                        submit(a)
            while in_flight:
                done, _ = ray.wait(list(in_flight), num_returns=1)
                ref = done[0]
                index, a = in_flight.pop(ref)
                load[a] -= 1
                try:
                    pid, scored = ray.get(ref)
                except ray.exceptions.RayActorError as exc:
                    raise EngineError(f"a Ray worker died {ACTOR_RESTARTS + 1} times while "
                                      f"scoring batch {index}; giving up: {exc}") from exc
                self.worker_pids.add(pid)
                self.batches_received += 1
                if waiting:
                    submit(a)
                yield index, scored
        finally:
            for ref in in_flight:  # driver stopped early (error, Ctrl-C): drop queued work
                ray.cancel(ref)

    def close(self) -> None:
        for actor in self._actors:
            self.ray.kill(actor)
        self._actors = []
        if self._started_ray:
            self.ray.shutdown()
            self._started_ray = False

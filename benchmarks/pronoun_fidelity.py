"""Benchmark: forced choice on one seed of the RUFF sample with smollm2-135m.

    python benchmarks/pronoun_fidelity.py [--per-seed 2160] [--distractors 0-5]
                                          [--out benchmarks/results/pronoun_fidelity.json]

The issue's workload is 6 x 2,160 instances (one seed per number of
distractors), 4 pronouns each: 51,840 scored texts. Timed twice in one run:
cold (an empty cache in a temporary folder) and warm (the same cache again),
so the second number is what a re-run costs. Throughput is instances (and
scored texts) per second of the cold pass. A benchmark, not a test: nothing is
asserted about the times. On a shared machine pass a smaller `--per-seed` and
say so; the JSON records what was run and the machine's load average.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main(argv=None) -> int:
    from gbstats.data.registry import load_dataset
    from models.loading import load_scorer
    from studies.pronoun_fidelity import analysis as A
    from studies.pronoun_fidelity.instances import Templates, instances_frame, sample_instances
    from studies.pronoun_fidelity.run import parse_distractors

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--per-seed", type=int, default=2160)
    p.add_argument("--distractors", type=parse_distractors, default=list(range(6)))
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seed", type=int, default=2023)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "pronoun_fidelity.json"))
    args = p.parse_args(argv)

    loaded = load_dataset("ruff2024", args.data_dir)
    task, context = loaded.tables["task"], loaded.tables["context"]
    templates = Templates(task, context)
    frames = [instances_frame(sample_instances(task, context, n, args.per_seed, [args.seed, n, 0]),
                              templates, seed=0) for n in args.distractors]
    import pandas as pd

    frames = pd.concat(frames, ignore_index=True).drop_duplicates("instance")

    t0 = time.perf_counter()
    lm = load_scorer(args.model)
    lm.model  # the embedded weights load lazily; load them here, not inside the cold pass
    load_seconds = time.perf_counter() - t0
    timings = {}
    with tempfile.TemporaryDirectory() as cache:
        for label in ("cold", "warm"):
            t0 = time.perf_counter()
            scored = A.score_frames(frames, lm, item="instance", cache_dir=cache, use_cache=True,
                                    progress=False, batch_size=args.batch_size)
            timings[label] = time.perf_counter() - t0
    n_instances, n_texts = len(frames), len(scored)
    record = {
        "benchmark": "pronoun_fidelity forced choice, one seed",
        "model": args.model, "distractors": args.distractors, "per_seed": args.per_seed,
        "n_instances": n_instances, "n_scored_texts": n_texts, "batch_size": args.batch_size,
        "model_load_seconds": round(load_seconds, 2),
        "cold_seconds": round(timings["cold"], 2), "warm_seconds": round(timings["warm"], 2),
        "instances_per_second_cold": round(n_instances / timings["cold"], 3),
        "texts_per_second_cold": round(n_texts / timings["cold"], 3),
        "warm_over_cold": round(timings["warm"] / timings["cold"], 4),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "load_average_at_end": os.getloadavg()},
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

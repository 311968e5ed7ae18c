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

    python benchmarks/pronoun_fidelity.py --work [--batch-sizes 32,1024]

`--work` scores nothing. It counts what the study's default run (3 seeds x
its stratified sample of 1,980 of the 2,160 instances, the same cells in every
seed, x 0-5 distractors, every distinct instance once, 4 pronouns each) asks
of the model: the texts, the token positions the causal engine
runs at each commit batch size (one token tree per group of a sorted batch,
as models.causal lays them out), and the FLOP floor of that work at the best
fp32 matmul rate measured here (benchmarks/pronoun_memory.py's floor). It
writes the key `default_design_work` into the JSON and keeps the rest.
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
    p.add_argument("--per-seed", type=int, default=None, help="default: 2160")
    p.add_argument("--distractors", type=parse_distractors, default=None, help="default: 0-5")
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seed", type=int, default=2023)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "pronoun_fidelity.json"))
    p.add_argument("--work", action="store_true",
                   help="count the default run's scoring work and its FLOP floor; score nothing")
    p.add_argument("--batch-sizes", default="32,1024", metavar="LIST",
                   help="--work: commit batch sizes to count (default: %(default)s)")
    args = p.parse_args(argv)
    if args.work:
        if args.per_seed is not None or args.distractors is not None:
            p.error(f"--work counts the study's default run, so it takes no --per-seed or "
                    f"--distractors; found --per-seed {args.per_seed}, --distractors "
                    f"{args.distractors}")
        return write_work(args)
    args.per_seed = 2160 if args.per_seed is None else args.per_seed
    args.distractors = list(range(6)) if args.distractors is None else args.distractors

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


def design_units(lm, data_dir, seed: int):
    """The causal units of the default run's forced choices (models.logprob's split: the
    prefix before the blank, the pronoun and the rest as the continuation)."""
    from models.causal import prepare_units
    from models.logprob import split_at_slot
    from studies.pronoun_fidelity import analysis as A
    from studies.pronoun_fidelity.instances import CASES
    from studies.pronoun_fidelity.steps import (DEFAULT_PER_SEED, design_size, draw_samples,
                                                load_tables, samples_same_cells)

    task, context, _ = load_tables(argparse.Namespace(data_dir=data_dir))
    # the study's own rule: its default sample keeps the same cells in every seed
    same = samples_same_cells(DEFAULT_PER_SEED, design_size(task))
    samples = draw_samples(task, context, list(range(6)), DEFAULT_PER_SEED, seed, same_cells=same)
    unique = samples.drop_duplicates("instance")
    prefixes, continuations = [], []
    for case in CASES:
        for frame in unique.loc[unique["case"] == case, "frame"]:
            prefix, space, after = split_at_slot(frame)
            for pronoun in A.variants_for_case(case):
                prefixes.append(prefix)
                continuations.append(space + pronoun + after)
    return len(samples), len(unique), prepare_units(lm, prefixes, continuations, "prepend")


def write_work(args) -> int:
    """--work: the default run's texts, token positions per commit batch size, FLOP floor."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import pronoun_memory as pm  # its cost counter and FLOP floor, one definition

    from models.loading import load_scorer

    lm = load_scorer(args.model)
    from studies.pronoun_fidelity.steps import DEFAULT_PER_SEED as per_seed

    n_sampled, n_instances, units = design_units(lm, args.data_dir, args.seed)
    ids = [u.ids for u in units]
    by_batch = {batch: pm.design_work(ids, batch)
                for batch in (int(b) for b in args.batch_sizes.split(","))}
    floors = {batch: pm.floor_part({"total": work}, repeats=5) for batch, work in by_batch.items()}
    record = {
        "what": f"the default run's forced choices (3 seeds x {per_seed:,} of the 2,160 "
                f"instances, the same cells in every seed, x 0-5 distractors, distinct "
                f"instances once, 4 pronouns each), counted, not scored",
        "per_seed": per_seed,
        "seed": args.seed, "model": args.model, "sampled_instances": n_sampled,
        "distinct_instances": n_instances, "scored_texts": len(ids),
        "whole_texts_positions": sum(len(i) for i in ids),
        "by_commit_batch": {str(b): {**w, "total_flops": floors[b]["total_flops"],
                                     "lower_bound_seconds": floors[b]["lower_bound_seconds"],
                                     "matmul_gflops_best": floors[b]["matmul_gflops_best"]}
                            for b, w in by_batch.items()},
        "note": floors[next(iter(floors))]["note"],
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "load_average_at_end": os.getloadavg()},
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    out = Path(args.out)
    doc = json.loads(out.read_text()) if out.exists() else {}
    doc["default_design_work"] = record
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

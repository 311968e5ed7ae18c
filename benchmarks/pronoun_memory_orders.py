"""studies.pronoun_memory: what order balancing the memory options costs (issue 40).

    .venv/bin/python benchmarks/pronoun_memory_orders.py               # both parts
    .venv/bin/python benchmarks/pronoun_memory_orders.py --parts work  # the count only

Writes benchmarks/results/pronoun_memory_orders.json.

Three designs for the memory question's options (models.option_orders): `one` (the
order people saw, as before), `latin` (the 3 rotations: each option once in each
position) and `all` (the 6 orders: also every option before and after every other).
Every design has the content-free questions and the three worked examples of production.

- `work` (deterministic): every unit of the full study (all experiments and the
  distractor sweep) tokenised with smollm2-135m's tokenizer, and the token positions and
  query-key pairs the engine runs (benchmarks/pronoun_memory.py's `design_work`: sorted,
  commit batches of 1024, one token tree per shared context), per design.
- `time`: CPU and wall seconds of scoring the baseline run's units (Exp 1A's faithful
  lists and the probe, 72 prompts; no score cache) with each design, interleaved, min of
  --repeats. CPU seconds are the comparable number on a loaded machine.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

DESIGNS = ("one", "latin", "all")


def orders_of(design: str):
    from models.option_orders import option_orders
    from studies.pronoun_memory.contexts import OPTIONS

    return [OPTIONS] if design == "one" else option_orders(OPTIONS, design)


def prompts(full: bool):
    from gbstats.data.registry import load_dataset
    from studies.pronoun_memory import contexts as C

    tables = load_dataset("gardner2023").tables
    if full:
        return C.all_prompts(tables, 2023)
    return C.all_prompts(tables, 2023, distractors=False, experiments=["1a"])


def work_part() -> dict:
    from pronoun_memory import design_work, token_ids

    from models.loading import load_scorer
    from studies.pronoun_memory.model_side import continuation_units

    tokenizer = load_scorer("smollm2-135m").tokenizer
    every = prompts(full=True)
    out = {}
    for design in DESIGNS:
        units = continuation_units(every, orders_of(design))
        out[design] = {"memory_units": int((units["task"] == "memory").sum()),
                       **design_work(token_ids(units, tokenizer), 1024)}
    for design in ("latin", "all"):
        out[design]["positions_over_one"] = out[design]["after_positions"] / \
            out["one"]["after_positions"]
        out[design]["pairs_over_one"] = out[design]["after_attention_pairs"] / \
            out["one"]["after_attention_pairs"]
    return out


def time_part(repeats: int) -> dict:
    from models.loading import load_scorer
    from studies.pronoun_memory.model_side import continuation_units, score_units

    lm = load_scorer("smollm2-135m")
    baseline = prompts(full=False)
    runs: dict[str, list] = {d: [] for d in DESIGNS}
    for _ in range(repeats):
        for design in DESIGNS:
            units = continuation_units(baseline, orders_of(design))
            wall, cpu = time.perf_counter(), time.process_time()
            score_units(units, lm, batch_size=1024, use_cache=False)
            runs[design].append({"wall": time.perf_counter() - wall,
                                 "cpu": time.process_time() - cpu, "units": len(units),
                                 "load": os.getloadavg()[0]})
    best = {d: min(r["cpu"] for r in runs[d]) for d in DESIGNS}
    return {"runs": runs, "min_cpu_seconds": best,
            "cpu_over_one": {d: best[d] / best["one"] for d in DESIGNS}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", default="work,time")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" /
                                             "pronoun_memory_orders.json"))
    args = parser.parse_args(argv)
    result = {"cpu_count": os.cpu_count(), "load_before": os.getloadavg()}
    if "work" in args.parts:
        result["work"] = work_part()
    if "time" in args.parts:
        result["time"] = time_part(args.repeats)
    result["load_after"] = os.getloadavg()
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

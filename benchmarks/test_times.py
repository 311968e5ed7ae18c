"""Where `make test`'s time goes (issue 41): a run's wall times and its per-test durations.

    python benchmarks/test_times.py --label before --setup-s 147 \
        --pass main:/tmp/junit1.xml:2159 --pass tf5:/tmp/junit2.xml:105 \
        --note "..." [--out benchmarks/results/test_times.json]

Each --pass is NAME:JUNIT_XML:WALL_SECONDS, the JUnit file pytest wrote with
--junitxml and the pass's wall-clock seconds. The record keeps, per pass, the
number of tests by outcome, the summed test time (with pytest-xdist it exceeds the
wall time: that is the parallelism), the 25 slowest files and tests; runs are kept
under their label, so "before" and "after" sit side by side in one file.
"""
from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import os
import platform
import xml.etree.ElementTree as ET
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results" / "test_times.json"


def read_junit(path: Path) -> list[dict]:
    tests = []
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped":
                outcome = "skipped"
        tests.append({"file": case.get("classname") or "", "name": case.get("name") or "",
                      "seconds": float(case.get("time") or 0.0), "outcome": outcome})
    return tests


def summarise(tests: list[dict], wall_s: float) -> dict:
    by_file = collections.Counter()
    counts = collections.Counter(t["outcome"] for t in tests)
    for t in tests:
        by_file[t["file"]] += t["seconds"]
    summed = sum(t["seconds"] for t in tests)
    slowest = sorted(tests, key=lambda t: -t["seconds"])[:25]
    return {"wall_s": wall_s, "n_tests": len(tests), "outcomes": dict(counts),
            "summed_test_s": round(summed, 1),
            "parallelism": round(summed / wall_s, 2) if wall_s else None,
            "slowest_files": [{"file": f, "seconds": round(s, 1)}
                              for f, s in by_file.most_common(25)],
            "slowest_tests": [{"test": f"{t['file']}::{t['name']}", "seconds": t["seconds"]}
                              for t in slowest]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--label", required=True, help="the run's name (before, after, ...)")
    parser.add_argument("--pass", dest="passes", action="append", required=True,
                        metavar="NAME:JUNIT:WALL_S")
    parser.add_argument("--setup-s", type=float, default=None,
                        help="wall seconds of scripts/setup.sh in that clone")
    parser.add_argument("--note", default="")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    passes = {}
    for spec in args.passes:
        name, junit, wall = spec.rsplit(":", 2)
        passes[name] = summarise(read_junit(Path(junit)), float(wall))
    total = (args.setup_s or 0.0) + sum(p["wall_s"] for p in passes.values())
    record = json.loads(args.out.read_text()) if args.out.exists() else {
        "benchmark": "benchmarks/test_times.py", "target": "fresh-clone make test, setup "
        "included, <= 1200 s on the 2-core development machine", "runs": {}}
    record["runs"][args.label] = {
        "date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.node()} ({os.cpu_count()} cores)", "setup_s": args.setup_s,
        "total_s": round(total, 1), "meets_target": total <= 1200, "note": args.note,
        "passes": passes}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"{args.label}: {total:.0f} s in all "
          + ", ".join(f"{n} {p['wall_s']:.0f} s ({p['n_tests']} tests)" for n, p in passes.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Time every registered study's default run, cold and warm, with where the time went.

For each study that `studies.discovery` finds (a new study is timed without
editing this file), `python -m studies.<name>` runs with its default flags:

  cold  fresh score and fit caches (a new, empty GBSTATS_CACHE); the embedded
        model is already converted (its GGUF conversion lives in the model
        cache, $GBSTATS_MODEL_CACHE, which is left alone);
  warm  the same command again on the caches the cold run filled.

Each run is a subprocess timed end to end (interpreter start-up included, as a
user waits for it). The split comes from the run's own results.json, where
the runner records it (provenance "timings", studies.pipeline.timings_record):
the scoring step (model loading included), the frequentist fits, the Bayesian
twins (each attempt's draws, seconds, ESS and ESS per second), and the rest
(loading data, bootstraps, tables, the report, start-up).

Targets (issue 34): every study warm <= 30 s and cold <= 5 min; the main job,
singular_they, cold <= 45 s. A study that misses one gets a `reason`, built
from its measured split (the largest part, with its figures), never a guess.

    GBSTATS_DATA=... .venv/bin/python benchmarks/study_times.py [--study NAME ...]
        [--flags 'NAME=--states 2' ...] [--out benchmarks/results/study_times.json]

--flags runs a study with extra flags instead of its defaults (a quick check of the
script, or of one part): its entry records the flags and `default_run: false`, and it
is not counted as meeting or missing the targets.

Runs of some studies update their entries and keep the others (each entry
records its date and the load average around it). Wall times on a loaded
machine are not comparable with a quiet machine's: the JSON records the load
average before and after every run, and the final numbers are taken on a
quiet machine.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "study_times.json"
TARGETS = {"warm_s": 30.0, "cold_s": 300.0, "cold_s_by_study": {"singular_they": 45.0}}
RUN_TIMEOUT_S = 3600


def discovered_studies() -> list[str]:
    """Every registered study (folders and entry points), by name."""
    sys.path.insert(0, str(REPO))
    from studies.discovery import discover

    return sorted(discover())


def run_once(study: str, cache_dir: Path, out_dir: Path, flags: list[str] | None = None,
             extra_env: dict | None = None) -> dict:
    """One `python -m studies.<study>` run with its default flags: wall time, exit code,
    the runner's recorded timings and the tail of stderr when it failed."""
    from studies.discovery import find_study

    entry = find_study(study)
    command = ([sys.executable, "-m", f"studies.{study}"] if entry.source == "folder"
               else [sys.executable, "-m", "studies", study])
    env = {**os.environ, "GBSTATS_CACHE": str(cache_dir), "PYTHONPATH": str(REPO),
           **(extra_env or {})}
    env.pop("GBSTATS_NO_FIT_CACHE", None)  # the warm run must reuse fits
    load_before = os.getloadavg()
    started = time.perf_counter()
    done = subprocess.run([*command, *(flags or []), "--out", str(out_dir)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    wall = time.perf_counter() - started
    record = {"wall_s": round(wall, 2), "exit_code": done.returncode,
              "load_average_before": [round(x, 2) for x in load_before],
              "load_average_after": [round(x, 2) for x in os.getloadavg()]}
    results = out_dir / "results.json"
    if done.returncode != 0 or not results.exists():
        record["stderr_tail"] = done.stderr[-2000:]
        return record
    provenance = json.loads(results.read_text()).get("provenance", {})
    timings = (provenance.get("extra") or {}).get("timings") or provenance.get("timings")
    record["split"] = split_of(timings, wall) if timings else None
    record["progress_lines"] = sum(1 for line in done.stderr.splitlines() if line.startswith("["))
    return record


def split_of(timings: dict, wall: float) -> dict:
    """Scoring, frequentist fits, twins and the rest (start-up included) of one run."""
    scoring = timings.get("scoring_s", 0.0)
    frequentist = timings.get("frequentist_fits_s", 0.0)
    twins = timings.get("twins_s", 0.0)
    fits = timings.get("fits", [])
    twin_records = [
        {"name": f["name"], "backend": f["backend"], "seconds": f["seconds"],
         "reused": f["reused"], "stopped_by": f.get("stopped_by"),
         "background": bool(f.get("background")), "waited_s": f.get("waited"),
         "attempts": f.get("attempts", [])}
        for f in fits if f.get("bayes")]
    return {"scoring_s": round(scoring, 2),
            # of scoring_s, the scoring loops run in a later step than the score step
            "scoring_after_score_step_s": round(timings.get("scoring_after_score_step_s", 0.0), 2),
            "frequentist_fits_s": round(frequentist, 2),
            "twins_s": round(twins, 2),
            # twins started in the background: their whole seconds, overlapping with the
            # other parts (twins_s has only the time the run waited for them)
            "background_twins_s": round(timings.get("background_twins_s", 0.0), 2),
            "rest_s": round(max(0.0, wall - scoring - frequentist - twins), 2),
            "steps_s": {k: round(v, 2) for k, v in timings.get("steps", {}).items()},
            "n_fits": len(fits), "n_fits_reused": sum(1 for f in fits if f.get("reused")),
            "scored_texts": timings.get("scored_texts", 0),
            "cached_texts": timings.get("cached_texts", 0),
            "forward_batches": timings.get("forward_batches", 0),
            "twins": twin_records}


def target_for(study: str, kind: str) -> float:
    if kind == "cold":
        return TARGETS["cold_s_by_study"].get(study, TARGETS["cold_s"])
    return TARGETS["warm_s"]


def miss_reason(record: dict) -> str:
    """The measured reason a run took longer than its target: the largest part of its split."""
    split = record.get("split")
    if record.get("exit_code"):
        return f"the run failed (exit code {record['exit_code']}); see stderr_tail"
    if not split:
        return "the run recorded no timings (results.json has no provenance timings)"
    parts = {"scoring (model loading included)": split["scoring_s"],
             "frequentist fits": split["frequentist_fits_s"],
             "Bayesian twins": split["twins_s"],
             "the rest (data loading, bootstraps, tables, report, start-up)": split["rest_s"]}
    largest, seconds = max(parts.items(), key=lambda item: item[1])
    reason = f"{largest}: {seconds:.0f} s of {record['wall_s']:.0f} s"
    if largest.startswith("scoring") and split.get("scored_texts"):
        reason += (f"; {split['scored_texts']:,} texts scored by the model "
                   f"({split['scored_texts'] / max(split['scoring_s'], 1e-9):.1f} texts/s), "
                   f"{split.get('cached_texts', 0):,} read from the cache")
    if largest.startswith("scoring") and split.get("scoring_after_score_step_s"):
        reason += (f"; {split['scoring_after_score_step_s']:.0f} s of the scoring ran after "
                   f"the score step")
    if largest == "Bayesian twins":
        attempts = [f"{t['name']} [{t['backend']}]: "
                    + ", ".join(f"{a['n_draws']} draws in {a['seconds']:.0f} s "
                                f"(bulk ESS {a['ess_bulk_min']:.0f})" for a in t["attempts"])
                    for t in split["twins"] if not t["reused"] and t["attempts"]]
        reason += "; " + "; ".join(attempts) if attempts else ""
    if largest.startswith("the rest"):
        steps = split.get("steps_s", {})
        in_fit = (steps.get("fit", 0.0) - split["frequentist_fits_s"] - split["twins_s"]
                  - split.get("scoring_after_score_step_s", 0.0))
        startup = record["wall_s"] - sum(steps.values())
        reason += (f"; of it {max(in_fit, 0.0):.0f} s in the fit step outside the fits "
                   f"(bootstraps, correlations, tables), {steps.get('load', 0.0):.0f} s "
                   f"loading data, {steps.get('report', 0.0):.0f} s writing the report, "
                   f"{max(startup, 0.0):.0f} s start-up and exit")
    if split.get("background_twins_s"):
        reason += (f"; the Bayesian twins ran in the background for "
                   f"{split['background_twins_s']:.0f} s, overlapping with the rest (the run "
                   f"waited {split['twins_s']:.0f} s for them)")
    load = record.get("load_average_before", [0])[0]
    if load > (os.cpu_count() or 1) * 1.5:
        reason += f" (load average {load:.1f} on {os.cpu_count()} cores when it started)"
    return reason


# issue 41: a study that cannot run in 5 minutes cold is within its target when its scoring
# runs within this factor of its FLOP floor (the rest being its fits)
FLOOR_FACTOR = 1.6


def scoring_flops(study: str):
    """(FLOPs, where they were counted) of a study's default scoring, for the studies whose
    scoring is counted in benchmarks/results; None for the others."""
    results = REPO / "benchmarks" / "results"
    parts = {"role_nouns": ["role_nouns grid"],
             "genda_lens": ["genda_lens DaWinoBias", "genda_lens ABC"]}.get(study)
    if parts:
        floor = json.loads((results / "study_scoring.json").read_text()).get("floor", {})
        if all(part in floor for part in parts):
            return (sum(floor[part]["total_flops"] for part in parts),
                    "study_scoring.json floor (" + ", ".join(parts) + ")")
    if study == "pronoun_memory":
        design = json.loads((results / "pronoun_memory.json").read_text())["current_design"]
        # the pairs the tree masks keep, not every pair the engine computes: the least work
        ruff = design.get("ruff_sample")
        if ruff:
            return (design["floor_flops"] + ruff["floor_flops"],
                    "pronoun_memory.json current_design (layers, the head, and attention over "
                    "the pairs the tree masks keep only), its RUFF sample included "
                    f"({ruff['texts']:,} texts, {ruff['floor_flops'] / 1e12:.1f} TFLOP)")
        return (design["floor_flops"],
                "pronoun_memory.json current_design (layers, the head, and attention over the "
                "pairs the tree masks keep only); it leaves out the study's second scoring, "
                "pronoun_fidelity's RUFF sample (112 of 1,071 s of scoring on 2026-11-25), "
                "so the ratio overstates by about a tenth")
    return None


def judge_by_floor(record: dict, study: str, speed: dict | None) -> None:
    """A cold run's scoring against its FLOP floor at the matmul rate measured just before
    it (`machine_speed_before`), where the study's scoring is counted: `scoring_floor`, and
    the reason of a run past 5 minutes says whether its scoring is within FLOOR_FACTOR."""
    counted, split = scoring_flops(study), record.get("split") or {}
    if counted is None or not speed or not split.get("scored_texts"):
        return
    flops, where = counted
    rate = speed["matmul_gflops_best"]
    floor_s = flops / (rate * 1e9)
    times = split["scoring_s"] / floor_s
    record["scoring_floor"] = {"flops": flops, "counted_in": where, "matmul_gflops_best": rate,
                               "floor_s": round(floor_s, 1), "scoring_times_floor": round(times, 2),
                               "within_factor": times <= FLOOR_FACTOR, "factor": FLOOR_FACTOR}
    if record.get("within_target") is False and record.get("reason"):
        verdict = "within" if times <= FLOOR_FACTOR else "past"
        record["reason"] += (f"; the scoring ran at {times:.2f}x its FLOP floor "
                             f"({flops / 1e12:.1f} TFLOP at the {rate:.0f} GFLOPS measured "
                             f"before the run: {floor_s:.0f} s), {verdict} the "
                             f"{FLOOR_FACTOR}x target")


def rewrite_reasons(path: Path) -> dict:
    """Every recorded run's `reason`, derived again from its recorded split."""
    doc = json.loads(path.read_text())
    for name, entry in doc.get("studies", {}).items():
        for kind in ("cold", "warm"):
            record = entry.get(kind)
            # a run stopped before it finished keeps the reason written when it was stopped
            if record and record.get("within_target") is False and record.get("completed", True):
                record["reason"] = miss_reason(record)
            if record and kind == "cold" and record.get("completed", True):
                judge_by_floor(record, name, entry.get("machine_speed_before"))
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def judge(record: dict, study: str, kind: str, flags: list[str] | None) -> None:
    """The run's target, whether it met it, and the measured reason when it did not."""
    record["target_s"] = target_for(study, kind)
    record["within_target"] = record["exit_code"] == 0 and record["wall_s"] <= record["target_s"]
    if not record["within_target"]:
        record["reason"] = miss_reason(record)
    if flags:  # not the default run: the targets are for the default run only
        record["within_target"] = None


def machine_speed() -> dict:
    """The machine's fp32 matmul rate just before a study's runs (the embedded model's MLP
    shape, torch's threads; pronoun_memory.best_matmul_rate): the same machine kind has
    measured 95-175 GFLOPS on different days, so an entry's seconds are read beside it."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import pronoun_memory as pm

    rates = pm.best_matmul_rate(576, 1536, repeats=5)   # smollm2-135m: d 576, d_ff 1536
    return {"matmul_gflops_best": round(max(rates) / 1e9, 1),
            "matmul_gflops_median": round(sorted(rates)[len(rates) // 2] / 1e9, 1),
            "how": "best and median of 5 x 20 float32 (2048 x 576) @ (576 x 1536) products"}


def time_study(study: str, flags: list[str] | None = None, keep_caches: Path | None = None) -> dict:
    entry: dict = {"date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   "flags": flags or [], "default_run": not flags,
                   "machine_speed_before": machine_speed()}
    with tempfile.TemporaryDirectory(prefix=f"study_times_{study}_") as tmp:
        cache, out = Path(tmp) / "cache", Path(tmp) / "out"
        if keep_caches is not None:  # kept for profiling the warm run afterwards
            cache = keep_caches / study
            if cache.exists():
                raise SystemExit(f"--keep-caches: {cache} exists; a cold run needs a fresh "
                                 f"cache folder (move it aside or name another folder)")
        for kind in ("cold", "warm"):
            print(f"{study}: {kind} run ...", file=sys.stderr, flush=True)
            record = run_once(study, cache, out, flags)
            judge(record, study, kind, flags)
            if kind == "cold" and not flags:
                judge_by_floor(record, study, entry["machine_speed_before"])
            entry[kind] = record
            print(f"{study}: {kind} {record['wall_s']:.1f} s (target {record['target_s']:.0f} s)"
                  + (f": {record['reason']}" if "reason" in record else ""),
                  file=sys.stderr, flush=True)
    return entry


def time_warm_only(study: str, previous: dict, flags: list[str] | None, cache: Path) -> dict:
    """Time the warm run again on a kept cache, keeping the recorded cold run: after a change
    that puts more of a study's work in the caches, its warm run is what changed. The cache
    is first brought up to date by one untimed run (what the change added is computed
    there), so the timed run is warm."""
    if not cache.is_dir():
        raise SystemExit(f"--warm-only: {cache} does not exist; it needs the score and fit "
                         f"cache of an earlier run (benchmarks/study_times.py --keep-caches)")
    entry = dict(previous)
    with tempfile.TemporaryDirectory(prefix=f"study_times_{study}_") as tmp:
        print(f"{study}: bringing the kept cache up to date (untimed) ...", file=sys.stderr,
              flush=True)
        refresh = run_once(study, cache, Path(tmp) / "refresh", flags)
        print(f"{study}: warm run ...", file=sys.stderr, flush=True)
        record = run_once(study, cache, Path(tmp) / "out", flags)
    judge(record, study, "warm", flags)
    record["date_utc"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    record["how_measured"] = (f"--warm-only on the cache kept from the cold run of "
                              f"{previous.get('date_utc', 'an earlier run')}: one untimed run "
                              f"first ({refresh['wall_s']:.0f} s, exit code "
                              f"{refresh['exit_code']}) brought it up to date")
    entry["warm"] = record
    print(f"{study}: warm {record['wall_s']:.1f} s (target {record['target_s']:.0f} s)"
          + (f": {record['reason']}" if "reason" in record else ""), file=sys.stderr, flush=True)
    return entry


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--study", action="append", default=None,
                   help="time only this study (repeatable; default: every registered study)")
    p.add_argument("--flags", action="append", default=[], metavar="NAME=FLAGS",
                   help="run study NAME with these flags instead of its defaults (repeatable)")
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--keep-caches", type=Path, default=None, metavar="DIR",
                   help="keep each study's score and fit cache in DIR/<study> (default: a "
                        "temporary folder, removed), e.g. to profile its warm run later")
    p.add_argument("--reasons-only", action="store_true",
                   help="run nothing: derive each recorded run's reason again from its "
                        "recorded split (after a change to how reasons are worded)")
    p.add_argument("--warm-only", action="store_true",
                   help="time only the warm run again, on the caches kept in --keep-caches "
                        "DIR/<study>, and keep the recorded cold run")
    args = p.parse_args(argv)
    if args.warm_only and args.keep_caches is None:
        p.error("--warm-only needs --keep-caches DIR (the folder holding DIR/<study>)")
    if args.reasons_only:
        return rewrite_reasons(Path(args.out))
    names = discovered_studies()
    chosen = args.study or names
    flags = {}
    for item in args.flags:
        name, sep, text = item.partition("=")
        if not sep or name not in names:
            p.error(f"--flags {item!r}: expected NAME=FLAGS with NAME a registered study "
                    f"({', '.join(names)})")
        flags[name] = shlex.split(text)
    unknown = sorted(set(chosen) - set(names))
    if unknown:
        p.error(f"unknown study {', '.join(unknown)}; registered: {', '.join(names)}")
    out = Path(args.out)
    doc = json.loads(out.read_text()) if out.exists() else {}
    doc.update({"benchmark": "study_times", "targets": TARGETS,
                "registered_studies": names,
                "settings": {"runs": "python -m studies.<name> --out TMP with default flags, "
                                     "as a subprocess; cold: fresh GBSTATS_CACHE (scores and "
                                     "fits), the embedded model already converted; warm: the "
                                     "same command again on those caches",
                             "split": "from results.json provenance timings (the runner's "
                                      "records); rest = wall - scoring - fits - twins; a twin "
                                      "started in the background (run.start_twin) counts in "
                                      "twins_s only for the time the run waited for it, its "
                                      "whole seconds are background_twins_s"},
                "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                            "python": platform.python_version()}})
    studies = doc.setdefault("studies", {})
    for name in chosen:
        if args.warm_only:
            studies[name] = time_warm_only(name, studies.get(name, {}), flags.get(name),
                                           args.keep_caches / name)
        else:
            studies[name] = time_study(name, flags.get(name), args.keep_caches)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(doc, indent=2) + "\n")  # after each study: a long run keeps what it has
    missing = [n for n in names if n not in studies]
    doc["not_timed"] = missing
    not_default = sorted(n for n, s in studies.items() if not s.get("default_run", True))
    doc["not_default_runs"] = not_default
    doc["all_within_targets"] = (not missing and not not_default and all(
        s.get(k, {}).get("within_target") for s in studies.values() for k in ("cold", "warm")))
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {out}", file=sys.stderr)
    return doc


if __name__ == "__main__":
    main()

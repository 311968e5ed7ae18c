"""The main job's wall time, cold and warm, per stage, before and after a change: one command.

    .venv/bin/python benchmarks/singular_they.py              # this checkout vs main at 834571a
    .venv/bin/python benchmarks/singular_they.py --before REF # vs another commit
    .venv/bin/python benchmarks/singular_they.py --no-before --parts singular_they  # quick

Writes benchmarks/results/singular_they.json. What it measures, for each source
tree ("before" = `git archive REF` unpacked into a temporary folder; "after" =
this checkout), the trees interleaved so that load on a shared machine hits
both alike:

- `python -m studies.singular_they` with default settings (smollm2-135m,
  lme4 + statsmodels + PyMC), each a fresh process as a user runs it, four
  times in this order:
  **first**: a first run on a fresh machine: empty score and fit cache,
  empty PyTensor/numba compile folder, empty converted-model cache
  (GBSTATS_MODEL_CACHE);
  **cold**: empty score and fit cache (a fresh clone, or new stimuli), with
  the compile and converted-model caches the first run left (what the issue
  timed as `make demo` on a fresh clone); without a first run among --kinds,
  the machine's own compile folder and converted models;
  **warm**: the same command again, everything cached;
  **warm_refit**: scores cached, every fit recomputed (GBSTATS_NO_FIT_CACHE=1:
  a re-run after changing a formula). Before gbstats had a fit cache, warm
  and warm_refit are the same thing.
  `stages` splits each run by its own progress lines ("[k/5]"), timed by
  this script as the lines arrive: `startup` (interpreter, imports, stimuli,
  simulated panel) then one entry per stage, the last one ending when the
  process exits.
- cold and warm for `studies.cognitive_bias --model none` and
  `studies.role_nouns --model none` (keys `cognitive_bias_none_seconds`,
  `role_nouns_none_seconds`).
- `r_startup`: in a fresh process, seconds to import rpy2's robjects (starts
  R), to import pymer4 the way gbstats does, the first lmerTest fit (loads
  lme4/lmerTest) and a second fit.
- `qa_glmm_7500`: the 7,500-trial QA GLMM of benchmarks/bayes_samplers.py
  through `fit_bayes` with its settings there (default sampler, 2 chains x
  1,000 draws after 1,000 tuning steps, seed 1), in a fresh process with an
  empty compile folder: seconds (build, compile, sampling, diagnostics),
  min bulk ESS, ESS per second, max R-hat, divergences (compare
  benchmarks/results/bayes_samplers.json).
- `tables`: the lme4/statsmodels estimates of the warm runs before and after
  (max absolute difference; identical means equal to ~1e-9), and the PyMC
  estimates (difference in units of the Monte Carlo error of a difference,
  sqrt(2) * posterior SD / sqrt(ESS), with ESS the run's reported minimum bulk
  ESS, or 400 when no ESS warning was given).
- whether PyTensor's "could not link to a BLAS" warning was printed.

The machine's load average and its fp32 matmul rate are recorded before and
after; the record being replaced is kept as `previous_record`. Nothing is
extrapolated: on a shared machine the seconds are inflated, the before/after
ratios measured in the same run are the comparable numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "singular_they.json"
WORK = REPO / "benchmarks" / "work"   # partial results of a run cut short
DEFAULT_BEFORE = "834571a"
# issue 41: a fresh machine's first run (GGUF conversion included) 90 s, cold 45 s, warm 5 s
TARGETS_S = {"first": 90, "warm": 5, "cold": 45, "qa_glmm_7500_bayes": 90}
STAGE_LINE = re.compile(r"\[(\d+)/(\d+)\]")
BLAS_WARNING = "could not link to a BLAS installation"
STUDIES = {
    "singular_they": ["-m", "studies.singular_they"],
    "cognitive_bias_none": ["-m", "studies.cognitive_bias", "--model", "none"],
    "role_nouns_none": ["-m", "studies.role_nouns", "--model", "none"],
}

R_STARTUP = """
import json, sys, time
t0 = time.perf_counter()
import rpy2.robjects  # starts R
t1 = time.perf_counter()
from gbstats.mixed.engines import lme4 as engine  # lmer_class was _lmer_class before issue 33
(getattr(engine, "lmer_class", None) or getattr(engine, "_lmer_class"))()
t2 = time.perf_counter()
sys.path.insert(0, "benchmarks")
from bayes_samplers import small_lmm_data
from gbstats.mixed.lmm import fit_lmm
data = small_lmm_data()
fit_lmm("surprisal ~ close + gendered + (1|frame)", data, backend="lme4")
t3 = time.perf_counter()
fit_lmm("surprisal ~ close + gendered + (1|frame)", data, backend="lme4")
t4 = time.perf_counter()
print(json.dumps({"import_rpy2_robjects": t1 - t0, "import_pymer4": t2 - t1,
                  "first_lmer_fit": t3 - t2, "second_lmer_fit": t4 - t3, "total": t4 - t0}))
"""

QA_GLMM = """
import json, sys, time
sys.path.insert(0, "benchmarks")
from bayes_samplers import qa_glmm_data
from gbstats.mixed.bayes import fit_bayes
data = qa_glmm_data()
start = time.perf_counter()
fit = fit_bayes("correct ~ stereotype + (1|participant) + (1|item)", data, family="bernoulli",
                draws=1000, tune=1000, chains=2, seed=1, loo=False)
seconds = time.perf_counter() - start
s = fit.fit_stats
print(json.dumps({"seconds": seconds, "min_ess_bulk": s["min_ess_bulk"],
                  "min_ess_bulk_per_second": s["min_ess_bulk"] / seconds,
                  "max_rhat": s["max_rhat"], "n_divergences": s["n_divergences"],
                  "sampler": s.get("sampler"), "n_draws": s.get("n_draws"), "n_tune": s.get("n_tune"),
                  "estimates": dict(zip(fit.coefs["term"], fit.coefs["estimate"].round(4)))}))
"""


def unpack(ref: str, folder: Path) -> Path:
    """`git archive ref` into folder: the source tree as committed, no worktree needed."""
    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / "src.tar"
    with open(archive, "wb") as fh:
        subprocess.run(["git", "archive", ref], cwd=REPO, stdout=fh, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(folder / "tree")
    return folder / "tree"


def child_env(tree: Path, compiledir: Path | None) -> dict:
    """The run's environment: this tree's code, and a compile folder of its own per tree
    (`compiledir`), which "first" empties; None keeps the machine's own compile folder."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("GBSTATS_NO_FIT_CACHE", None)
    if compiledir is not None:
        flags = [f for f in env.get("PYTENSOR_FLAGS", "").split(",")
                 if f and "compiledir" not in f]
        env["PYTENSOR_FLAGS"] = ",".join(flags + [f"base_compiledir={compiledir}"])
    env.setdefault("GBSTATS_DATA", str(REPO.parent / "shared" / "data"))
    return env


def run_timed(cmd: list[str], cwd: Path, env: dict) -> dict:
    """Run a study; time it and each of its "[k/n]" stages as the lines arrive."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, errors="replace")
    marks, blas_warning, tail = [("startup", 0.0)], False, []
    for line in proc.stderr:
        now = time.perf_counter() - start
        blas_warning |= BLAS_WARNING in line
        tail = (tail + [line.rstrip()])[-20:]
        found = STAGE_LINE.search(line)
        if found and not line.lstrip().startswith(("causal", "Converting")):
            label = f"{found.group(1)}/{found.group(2)} " + line[found.end():].strip()[:60]
            marks.append((label, now))
    code = proc.wait()
    total = time.perf_counter() - start
    if code != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({code}):\n" + "\n".join(tail))
    ends = [t for _, t in marks[1:]] + [total]
    stages = {label: round(end - t, 2) for (label, t), end in zip(marks, ends)}
    return {"seconds": round(total, 2), "stages": stages, "blas_warning": blas_warning}


def run_json(code: str, tree: Path, env: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", code], cwd=tree, env=env, capture_output=True,
                          text=True)
    if done.returncode != 0:
        return {"error": done.stderr[-1500:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def fit_rows(results_json: Path) -> tuple[dict, dict]:
    """{(table, backend, term): (estimate, se)} and {table/backend: min ESS} of a report."""
    data = json.loads(results_json.read_text())
    rows = {}
    for table in ("lmm_close_gendered", "human_model"):
        for r in data["tables"].get(table, []):
            rows[(table, r["backend"], r["term"])] = (r["estimate"], r["se"])
    ess = {}
    for w in data.get("warnings", []):
        m = re.match(r"(model LMM|human model) \[pymc\]: bulk ESS down to (\d+)", w)
        if m:
            ess["lmm_close_gendered" if m.group(1) == "model LMM" else "human_model"] = int(m.group(2))
    return rows, ess


def compare_tables(before: Path, after: Path) -> dict:
    """Per fitted table: frequentist estimates (max |difference|) and Bayesian ones (in MC
    errors), over the terms both runs have. A table whose terms are not the same set was
    re-parameterised between the two commits and is flagged, not compared as like for like."""
    b_rows, b_ess = fit_rows(before)
    a_rows, a_ess = fit_rows(after)
    out = {}
    for table in sorted({k[0] for k in b_rows}):
        b_terms = {k[2] for k in b_rows if k[0] == table}
        a_terms = {k[2] for k in a_rows if k[0] == table}
        frequentist = [abs(a_rows[k][0] - b_rows[k][0]) for k in b_rows
                       if k[0] == table and k[1] in ("lme4", "statsmodels") and k in a_rows]
        bayes = {}
        for k in b_rows:
            if k[0] != table or k[1] != "pymc" or k not in a_rows:
                continue
            ess = min(b_ess.get(k[0], 400), a_ess.get(k[0], 400))
            mc_error = 2 ** 0.5 * b_rows[k][1] / ess ** 0.5
            bayes[k[2]] = round(abs(a_rows[k][0] - b_rows[k][0]) / mc_error, 2)
        out[table] = {
            "same_terms": b_terms == a_terms,
            "terms_only_before": sorted(b_terms - a_terms),
            "terms_only_after": sorted(a_terms - b_terms),
            "frequentist_max_abs_difference": max(frequentist) if frequentist else None,
            "frequentist_identical": bool(frequentist) and max(frequentist) < 1e-9,
            "bayes_difference_in_mc_errors": bayes,
            "bayes_within_3_mc_errors": bool(bayes) and max(bayes.values()) <= 3,
            "bayes_min_ess_from_warnings": {"before": b_ess.get(table), "after": a_ess.get(table)}}
    like = {k: v for k, v in out.items() if v["same_terms"]}
    return {"tables": out,
            "like_for_like_tables": sorted(like),
            "like_for_like_frequentist_identical": bool(like) and all(
                v["frequentist_identical"] for v in like.values()),
            "like_for_like_bayes_within_3_mc_errors": bool(like) and all(
                v["bayes_within_3_mc_errors"] for v in like.values())}


KINDS = {"singular_they": ("first", "cold", "warm", "warm_refit")}
PARTS = ("singular_they", "others", "r_startup", "glmm")


def machine_speed() -> dict:
    """The fp32 matmul rate now (study_times.machine_speed): the machine kind has measured
    95-175 GFLOPS on different days, so a record's seconds are read beside it."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from study_times import machine_speed as measured

    return measured()


def previous_record(path: Path) -> dict | None:
    """The record a new one replaces, kept in it (its own previous record dropped, so that
    a file holds two runs, not a chain): the headline numbers and when and where."""
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    keep = ("kinds", "first_run_seconds", "cold_seconds", "warm_seconds", "warm_refit_seconds",
            "stages", "after_ref", "machine_speed_before_after", "compile_and_model_caches",
            "load_average_before_after", "date_utc", "note")
    return {k: old[k] for k in keep if k in old} or None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=DEFAULT_BEFORE, help="commit to compare with "
                        "(default: %(default)s, main before issue 18)")
    parser.add_argument("--no-before", action="store_true", help="measure this checkout only")
    parser.add_argument("--after", default=None, help="measure this commit (unpacked like "
                        "--before) instead of the working tree, which may then be edited meanwhile")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help="comma-separated subset of %(default)s")
    parser.add_argument("--out", default=str(OUT), help="result file (default: %(default)s)")
    parser.add_argument("--kinds", default=",".join(KINDS["singular_they"]),
                        help="singular_they runs, in order (default: %(default)s); without "
                             "'first', 'cold' starts with whatever compile and model caches exist")
    args = parser.parse_args()
    parts = [p for p in args.parts.split(",") if p]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown parts {unknown}; expected a subset of {list(PARTS)}")

    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="bench_singular_they_") as tmp:
        tmp = Path(tmp)
        after_tree = unpack(args.after, tmp / "after-src") if args.after else REPO
        trees = {"after": after_tree}
        if not args.no_before:
            trees = {"before": unpack(args.before, tmp / "before"), "after": after_tree}
        studies = {}
        if "singular_they" in parts:
            studies["singular_they"] = STUDIES["singular_they"]
        if "others" in parts:
            studies.update({k: v for k, v in STUDIES.items() if k != "singular_they"})
        runs: dict = {label: {} for label in trees}
        fresh = "first" in args.kinds.split(",")
        speed_before = machine_speed()
        for study, cmd in studies.items():
            kinds = args.kinds.split(",") if study == "singular_they" else ("cold", "warm")
            for kind in kinds:
                for label, tree in trees.items():  # interleaved: before, after, before, after
                    work = tmp / label / study
                    if kind in ("first", "cold"):
                        shutil.rmtree(work / "cache", ignore_errors=True)
                    if kind == "first":
                        shutil.rmtree(work, ignore_errors=True)
                        shutil.rmtree(tmp / label / "compiledir", ignore_errors=True)
                    # compile folder and converted models: empty for "first", then as
                    # "first" left them; without a "first" run, the machine's own (a "cold"
                    # run on an empty compile folder would be a first run in all but name)
                    env = child_env(tree, tmp / label / "compiledir" if fresh else None)
                    if fresh:
                        env["GBSTATS_MODEL_CACHE"] = str(tmp / label / "model-cache")
                    if kind == "first":
                        shutil.rmtree(tmp / label / "model-cache", ignore_errors=True)
                    if kind == "warm_refit":
                        env["GBSTATS_NO_FIT_CACHE"] = "1"
                    out = work / "out"
                    full = [sys.executable, *cmd, "--out", str(out), "--cache-dir", str(work / "cache")]
                    result = run_timed(full, tree, env)
                    if study == "singular_they" and kind in ("warm", "warm_refit"):
                        shutil.copy(out / "results.json", tmp / label / f"{kind}_results.json")
                    runs[label].setdefault(study, {})[kind] = result
                    print(f"{label:6s} {study:20s} {kind}: {result['seconds']:.1f} s", flush=True)
                    # partial results, in case the run is cut short
                    # (benchmarks/work/, git-ignored: benchmarks/results keeps the record only)
                    WORK.mkdir(parents=True, exist_ok=True)
                    (WORK / Path(args.out).with_suffix(".partial.json").name).write_text(
                        json.dumps({"runs": runs, "load_average_now": os.getloadavg()}, indent=2))
        r_startup, qa_glmm = {}, {}
        if "r_startup" in parts:
            for label, tree in trees.items():
                r_startup[label] = run_json(R_STARTUP, tree, child_env(tree, tmp / label / "compiledir"))
                print(f"{label:6s} r_startup: {r_startup[label]}", flush=True)
        if "glmm" in parts:
            for label, tree in trees.items():
                env = child_env(tree, tmp / label / "qa_glmm_compiledir")
                qa_glmm[label] = run_json(QA_GLMM, tree, env)
                print(f"{label:6s} qa_glmm: {qa_glmm[label]}", flush=True)
        tables = {}
        if "before" in trees and "singular_they" in studies:
            tables = {kind: compare_tables(tmp / "before" / "warm_results.json",
                                           tmp / "after" / f"{kind}_results.json")
                      for kind in ("warm", "warm_refit")
                      if (tmp / "after" / f"{kind}_results.json").exists()}
    load_after = os.getloadavg()
    speed_after = machine_speed()

    result: dict = {
        "benchmark": "singular_they end to end (default settings), before and after",
        "command": "python benchmarks/singular_they.py",
        "parts": parts,
        "targets_seconds": TARGETS_S,
    }
    if "singular_they" in studies:
        after = runs["after"]["singular_they"]
        result.update({
            "kinds": args.kinds.split(","),
            "cold_seconds": after["cold"]["seconds"], "warm_seconds": after["warm"]["seconds"],
            "first_run_seconds": after.get("first", {}).get("seconds"),
            "warm_refit_seconds": after.get("warm_refit", {}).get("seconds"),
            "stages": {kind: r["stages"] for kind, r in after.items()},
            "cold_within_target": after["cold"]["seconds"] <= TARGETS_S["cold"],
            "warm_within_target": after["warm"]["seconds"] <= TARGETS_S["warm"],
            "first_within_target": (after["first"]["seconds"] <= TARGETS_S["first"]
                                    if "first" in after else None),
        })
        if "before" in trees:
            before = runs["before"]["singular_they"]
            result["singular_they_before_seconds"] = {k: r["seconds"] for k, r in before.items()}
            result["stages_before"] = {k: r["stages"] for k, r in before.items()}
    for study in ("cognitive_bias_none", "role_nouns_none"):
        if study in studies:
            result[f"{study}_seconds"] = {
                label: {kind: runs[label][study][kind]["seconds"] for kind in ("cold", "warm")}
                for label in trees}
    if studies and "before" in trees:
        result["ratio_before_over_after"] = {
            f"{study} {kind}": round(runs["before"][study][kind]["seconds"]
                                     / runs["after"][study][kind]["seconds"], 2)
            for study in studies for kind in runs["after"][study]}
    result.update({
        "blas_warning_printed": {label: any(r["blas_warning"] for s in v.values() for r in s.values())
                                 for label, v in runs.items()},
        "r_startup": r_startup,
        "qa_glmm_7500": qa_glmm,
        "tables_before_vs_after": tables,
        "runs": runs,
        "before_ref": None if args.no_before else args.before,
        "after_ref": args.after or "working tree",
        "load_average_before_after": [load_before, load_after],
        "machine_speed_before_after": [speed_before, speed_after],
        "compile_and_model_caches": ("empty for the first run, then as it left them" if fresh
                                     else "the machine's own (no first run)"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version()},
        "started_utc": started,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })
    previous = previous_record(Path(args.out))
    if previous:
        result["previous_record"] = previous
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result.get(k) for k in ("cold_seconds", "warm_seconds", "stages")}, indent=2))


if __name__ == "__main__":
    main()

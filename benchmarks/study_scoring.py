"""Why genda_lens scores fewer sentences per second than role_nouns, measured in one run.

issue 34 saw genda_lens' cold scoring run at 6-8 sentences/s on a loaded machine against
the 61 sentences/s that benchmarks/results/role_nouns.json records for role_nouns on a
quiet one. Everything here is a ratio from one run, the workloads interleaved, the
minimum of `--reps` repetitions, on the embedded model (smollm2-135m) with fresh caches:

workloads  N texts of each: a block of role_nouns' grid ("NAME is a VARIANT from STATE.",
           scored as log P(" VARIANT from STATE." | "NAME is a")), ABC sentences (whole
           sentences), DaWinoBias frames with both candidate pronouns (log P(pronoun +
           rest | words before)). For each: tokens fed to the model per distinct text
           (BOS included) and tokens actually run once every shared beginning is run
           once (models.causal.prefix_tree_rows, per commit batch of 32 as the engine
           cuts them), texts/s and run tokens/s. Texts/s differ by the tokens each text
           needs; run tokens/s is what the model does per second.
study      genda_lens' own scoring functions (studies.genda_lens.lm: the forced choice and
           the ABC perplexities) against the engine called directly on the same units:
           the study's overhead, as a ratio of times.
profile    where the study's scoring time goes (cProfile, cumulative seconds of the
           model's forward, packing shared prefixes, tokenizing, the cache).
threads    the ABC texts with torch's default threads (all cores) against one thread,
           with the load average: the engine picks one thread on an oversubscribed
           machine (models.engine.scoring_threads).
packing    (--packing BEFORE_TREE, on its own) the same three workloads scored by this
           source tree, which runs every distinct beginning once (a prefix tree), and
           by BEFORE_TREE, the code before it (one shared prefix per group of texts):
           one fresh process per tree and round, before then after, the same torch
           threads in both; tokens run, seconds and the summed log-probabilities
           (which must agree).

    GBSTATS_DATA=... .venv/bin/python benchmarks/study_scoring.py [--n 256] [--reps 2]
    git archive COMMIT | tar -x -C /tmp/before
    GBSTATS_DATA=... .venv/bin/python benchmarks/study_scoring.py --packing /tmp/before
    GBSTATS_DATA=... .venv/bin/python benchmarks/study_scoring.py --floor

--floor scores nothing: it counts the token positions of role_nouns' and genda_lens'
whole default designs as the engine lays them out on the CPU (distinct texts, sorted,
commit batches of 32, one token tree per batch) and their FLOP floor at the best fp32
matmul rate measured here and now (benchmarks/pronoun_memory.py's counter and floor,
one definition). It updates only the "floor" entry.

writes benchmarks/results/study_scoring.json (--packing updates its "packing" entry).
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import sys
import tempfile
import time
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results" / "study_scoring.json"
COMMIT = 32  # the CPU commit size (models.batching.COMMIT_SIZE["cpu"])


def role_nouns_units(n: int):
    from models.logprob import split_at_slot
    from studies.role_nouns.scoring import SLOT, frames_of
    from studies.role_nouns.stimuli import choose_states, stimulus_grid

    grid = stimulus_grid(choose_states(None, 2023)).iloc[:n]
    parts = [split_at_slot(f, SLOT) for f in frames_of(grid)]
    return ([p for p, _, _ in parts],
            [space + v + after for (_, space, after), v in zip(parts, grid["variant"])])


def genda_tables(n: int):
    from gbstats.data.registry import load_dataset

    tables = load_dataset("genda_lens2023").tables
    return tables["dawinobias"].iloc[: n // 2].reset_index(drop=True), \
        tables["abc"].drop_duplicates("sentence").iloc[:n].reset_index(drop=True)


def dawinobias_units(dawino):
    from models.logprob import split_at_slot
    from studies.genda_lens.lm import CANDIDATES, SLOT, pronoun_frames

    prefixes, continuations = [], []
    capital = dawino["pronoun"].str[0].str.isupper()
    for frame, pair, cap in zip(pronoun_frames(dawino), dawino["pronoun"].str.lower().map(CANDIDATES),
                                capital):
        prefix, space, after = split_at_slot(frame, SLOT)
        for candidate in pair:
            prefixes.append(prefix)
            continuations.append(space + (candidate.capitalize() if cap else candidate) + after)
    return prefixes, continuations


def tokens_run(lm, prefixes, continuations) -> tuple[int, int, int]:
    """(distinct texts, tokens fed, tokens run) as the engine runs them on the CPU: distinct
    texts sorted by token ids, cut into commit batches of 32, each batch's shared beginnings
    run once - by the layout of the source tree this runs in (the prefix tree,
    models.causal.prefix_tree_rows, or, before it, models.causal.shared_prefixes' groups)."""
    import models.causal as causal

    unique = list(dict.fromkeys(zip(prefixes, continuations)))
    units = causal.prepare_units(lm, [p for p, _ in unique], [c for _, c in unique], "prepend")
    ordered = sorted((u.ids for u in units))
    run = 0
    for start in range(0, len(ordered), COMMIT):
        batch = ordered[start:start + COMMIT]
        if hasattr(causal, "prefix_tree_rows"):
            run += causal.prefix_tree_rows(batch).n_tokens
            continue
        seen = set()  # the groups of one shared prefix each (the code before the tree)
        for ids, (group, length) in zip(batch, causal.shared_prefixes(batch)):
            run += len(ids) - length
            if length and group not in seen:
                run += length
                seen.add(group)
    return len(units), sum(len(ids) for ids in ordered), run


def shape(lm, prefixes, continuations) -> dict:
    """Tokens fed per distinct text, and tokens run once shared beginnings run once."""
    texts, fed, run = tokens_run(lm, prefixes, continuations)
    return {"texts": texts, "tokens_fed": fed, "tokens_run": run,
            "tokens_fed_per_text": fed / texts, "tokens_run_per_text": run / texts,
            "share_of_tokens_saved": 1 - run / fed}


def timed(function) -> float:
    with tempfile.TemporaryDirectory() as cache:
        start = time.perf_counter()
        function(cache)
        return time.perf_counter() - start


def workloads(lm, n: int, reps: int) -> dict:
    from models.causal import score_continuations

    dawino, abc = genda_tables(n)
    work = {"role_nouns": role_nouns_units(n),
            "genda_abc": ([""] * len(abc), list(abc["sentence"])),
            "genda_dawinobias": dawinobias_units(dawino)}
    out = {name: {**shape(lm, *units), "seconds": []} for name, units in work.items()}
    for rep in range(reps):
        for name, (prefixes, continuations) in work.items():
            seconds = timed(lambda c: score_continuations(prefixes, continuations, lm=lm,
                                                          cache_dir=c, progress=False))
            out[name]["seconds"].append(seconds)
            print(f"workloads rep {rep} {name}: {seconds:.1f} s", flush=True)
    for r in out.values():
        best = min(r["seconds"])
        r.update(texts_per_s=r["texts"] / best, tokens_run_per_s=r["tokens_run"] / best)
    base = out["role_nouns"]
    for r in out.values():
        r["texts_per_s_vs_role_nouns"] = r["texts_per_s"] / base["texts_per_s"]
        r["tokens_run_per_s_vs_role_nouns"] = r["tokens_run_per_s"] / base["tokens_run_per_s"]
        r["tokens_run_per_text_vs_role_nouns"] = (r["tokens_run_per_text"]
                                                 / base["tokens_run_per_text"])
    return out


def study_vs_engine(lm, n: int, reps: int) -> dict:
    from models.causal import score_continuations, score_sentences
    from studies.genda_lens import lm as L

    dawino, abc = genda_tables(n)
    prefixes, continuations = dawinobias_units(dawino)

    def study(cache):
        L.dawinobias_choices(dawino, lm, cache_dir=cache, progress=False)
        L.sentence_perplexities(abc, lm, cache_dir=cache, progress=False)

    def engine(cache):
        score_continuations(prefixes, continuations, lm=lm, cache_dir=cache, progress=False)
        score_sentences(list(abc["sentence"]), lm=lm, cache_dir=cache, progress=False)

    runs = {"study": [], "engine": []}
    for rep in range(reps):
        for name, function in (("study", study), ("engine", engine)):
            runs[name].append(timed(function))
            print(f"study vs engine rep {rep} {name}: {runs[name][-1]:.1f} s", flush=True)
    profile = cProfile.Profile()
    with tempfile.TemporaryDirectory() as cache:
        profile.runcall(study, cache)
    return {"texts": len(prefixes) + len(abc), "seconds": runs,
            "study_over_engine": min(runs["study"]) / min(runs["engine"]),
            "profile": profile_shares(profile)}


PROFILE_PARTS = {  # (file fragment, function) whose cumulative time is a part of the scoring
    "model forward (torch modules)": ("torch/nn/modules/module.py", "_wrapped_call_impl"),
    "log-softmax and picking the scored tokens": ("models/causal.py", "_forward_pass"),
    "packed rows of the prefix tree (4D masks)": ("models/causal.py", "_hidden_packed"),
    "grouping texts into token trees": ("models/causal.py", "sorted_groups"),
    "tokenizing": ("models/causal.py", "prepare_units"),
    "cache lookups": ("models/cache.py", "lookup"),
    "cache commits": ("models/cache.py", "put_many"),
}


def profile_shares(profile) -> dict:
    stats = pstats.Stats(profile)
    total = max(row[3] for row in stats.stats.values())  # the outermost call's cumulative time
    out = {"total_s": total}
    for part, (file_part, function) in PROFILE_PARTS.items():
        cumulative = [row[3] for (file, _, name), row in stats.stats.items()
                      if name == function and file.endswith(file_part)]
        out[part] = {"seconds": max(cumulative, default=0.0),
                     "share": max(cumulative, default=0.0) / total}
    out["note"] = ("cumulative seconds under cProfile; 'model forward' is the outermost torch "
                   "module call (the base model, or the whole model); 'log-softmax ...' is "
                   "_forward_pass, which includes the forward: parts nest, they do not add up")
    return out


def threads(lm, n: int, reps: int) -> dict:
    import torch

    from models.causal import score_sentences

    _, abc = genda_tables(n)
    texts = list(abc["sentence"])
    default = torch.get_num_threads()
    counts = sorted({default, 1}, reverse=True)
    runs = {str(k): [] for k in counts}
    load = [os.getloadavg()]
    for rep in range(reps):
        for k in counts:
            torch.set_num_threads(k)
            # OMP_NUM_THREADS pins the engine's choice to k for this measurement
            os.environ["OMP_NUM_THREADS"] = str(k)
            try:
                runs[str(k)].append(timed(lambda c: score_sentences(texts, lm=lm, cache_dir=c,
                                                                    progress=False)))
            finally:
                os.environ.pop("OMP_NUM_THREADS", None)
            print(f"threads rep {rep} {k}: {runs[str(k)][-1]:.1f} s", flush=True)
            load.append(os.getloadavg())
    torch.set_num_threads(default)
    best = {k: min(v) for k, v in runs.items()}
    return {"texts": len(texts), "seconds": runs,
            "texts_per_s": {k: len(texts) / v for k, v in best.items()},
            "one_thread_speedup": best[str(default)] / best["1"],
            "load_average_1min": [round(x[0], 2) for x in load], "cpu_count": os.cpu_count()}


# One process of `packing`: the workloads scored by the source tree on PYTHONPATH (cache off,
# `threads` torch threads, the minimum of `reps` runs), with the tokens that tree runs and
# the summed log-probabilities (both trees must give the same numbers).
PACKING_CHILD = """
import importlib.util, json, sys, time
n, reps, threads, here = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
spec = importlib.util.spec_from_file_location("study_scoring", here)
bench = importlib.util.module_from_spec(spec); spec.loader.exec_module(bench)
import torch
torch.set_num_threads(threads)
from models.causal import score_continuations
from models.loading import load_scorer
lm = load_scorer("smollm2-135m"); lm.model
out = {}
for name, (prefixes, continuations) in bench.packing_workloads(n).items():
    texts, fed, run = bench.tokens_run(lm, prefixes, continuations)
    seconds, cpu, total = [], [], None
    for _ in range(reps):
        start, start_cpu = time.perf_counter(), time.process_time()
        scored = score_continuations(prefixes, continuations, lm=lm, use_cache=False, progress=False)
        seconds.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        total = float(scored["logprob"].sum())
    out[name] = {"texts": texts, "tokens_fed": fed, "tokens_run": run, "seconds": min(seconds),
                 "cpu_seconds": min(cpu), "logprob_sum": total,
                 "n_tokens_scored": int(scored["n_tokens"].sum())}
print(json.dumps(out))
"""


def packing_workloads(n: int) -> dict:
    """The three workloads of `workloads`, as (prefixes, continuations)."""
    dawino, abc = genda_tables(n)
    return {"role_nouns": role_nouns_units(n),
            "genda_abc": ([""] * len(abc), list(abc["sentence"])),
            "genda_dawinobias": dawinobias_units(dawino)}


def packing(before: Path, n: int, rounds: int, reps: int, threads: int) -> dict:
    """The prefix tree (this tree) against one shared prefix per group (`before`, a source
    tree of the code before it), one fresh process per tree and round, before then after."""
    import subprocess
    import sys

    def child(tree: Path) -> dict:
        env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS=str(threads))
        done = subprocess.run([sys.executable, "-c", PACKING_CHILD, str(n), str(reps),
                               str(threads), str(Path(__file__).resolve())], cwd=tree, env=env,
                              capture_output=True, text=True, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])

    after_tree = Path(__file__).resolve().parents[1]
    runs = []
    for number in range(rounds):
        runs.append({"before": child(before), "after": child(after_tree)})
        print(f"packing round {number}: " + ", ".join(
            f"{name} {runs[-1]['before'][name]['seconds']:.1f} -> "
            f"{runs[-1]['after'][name]['seconds']:.1f} s" for name in runs[-1]["after"]),
            flush=True)
    out = {}
    for name in runs[0]["after"]:
        best = {side: min(r[side][name]["seconds"] for r in runs) for side in ("before", "after")}
        best_cpu = {side: min(r[side][name]["cpu_seconds"] for r in runs)
                    for side in ("before", "after")}
        b, a = runs[0]["before"][name], runs[0]["after"][name]
        out[name] = {"texts": a["texts"], "tokens_fed": a["tokens_fed"],
                     "tokens_run_before": b["tokens_run"], "tokens_run_after": a["tokens_run"],
                     "tokens_run_after_over_before": a["tokens_run"] / b["tokens_run"],
                     "seconds_before": [r["before"][name]["seconds"] for r in runs],
                     "seconds_after": [r["after"][name]["seconds"] for r in runs],
                     "seconds_after_over_before": best["after"] / best["before"],
                     "texts_per_s_after_over_before": best["before"] / best["after"],
                     "cpu_seconds_before": [r["before"][name]["cpu_seconds"] for r in runs],
                     "cpu_seconds_after": [r["after"][name]["cpu_seconds"] for r in runs],
                     "cpu_seconds_after_over_before": best_cpu["after"] / best_cpu["before"],
                     "logprob_sum_before": b["logprob_sum"], "logprob_sum_after": a["logprob_sum"],
                     "mean_abs_difference_per_token": (abs(a["logprob_sum"] - b["logprob_sum"])
                                                       / a["n_tokens_scored"])}
    return {"before_tree": str(before), "rounds": rounds, "reps": reps, "torch_threads": threads,
            "n": n, "workloads": out,
            "note": "one fresh process per tree and round, before then after; seconds are the "
                    "minimum over rounds of each process's minimum over reps; cache off; "
                    "cpu_seconds is the process's CPU time (with one torch thread, the work "
                    "done: less moved by other processes than the wall time)"}


def torch_threads_now() -> int:
    """The threads the engine scores with now (models.engine.scoring_threads, else torch's)."""
    import torch

    from models.engine import scoring_threads

    return scoring_threads() or torch.get_num_threads()


def whole_designs():
    """{study part: (prefixes, continuations)} of the default runs' scoring: role_nouns'
    whole grid (its direct method adds 96 texts), genda_lens' DaWinoBias frames with both
    candidates and its distinct ABC sentences."""
    from gbstats.data.registry import load_dataset
    from studies.role_nouns.stimuli import choose_states, stimulus_grid

    tables = load_dataset("genda_lens2023").tables
    abc = tables["abc"].drop_duplicates("sentence")
    return {"role_nouns grid": role_nouns_units(len(stimulus_grid(choose_states(None, 2023)))),
            "genda_lens DaWinoBias": dawinobias_units(tables["dawinobias"]),
            "genda_lens ABC": ([""] * len(abc), list(abc["sentence"]))}


def floor(lm) -> dict:
    """--floor: positions and FLOP floor of each whole design (see the module docstring)."""
    import models.causal as causal

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import pronoun_memory as pm

    out = {}
    for part, (prefixes, continuations) in whole_designs().items():
        unique = list(dict.fromkeys(zip(prefixes, continuations)))
        units = causal.prepare_units(lm, [p for p, _ in unique], [c for _, c in unique],
                                     "prepend")
        ids = [u.ids for u in units]
        work = pm.design_work(ids, COMMIT)
        positions = work["after_positions"]
        bound = pm.floor_part({"total": work}, repeats=5)
        out[part] = {"texts": len(ids), "whole_texts_positions": sum(len(i) for i in ids),
                     "positions_run": positions, "total_flops": bound["total_flops"],
                     "matmul_gflops_best": bound["matmul_gflops_best"],
                     "lower_bound_seconds": bound["lower_bound_seconds"]}
        print(f"{part}: {len(ids):,} texts, {positions:,} positions run, "
              f"{bound['total_flops'] / 1e12:.1f} TFLOP, at least "
              f"{bound['lower_bound_seconds']:.0f} s", flush=True)
    out["note"] = bound["note"]
    return out


# --streams: how the engine's CPU layout (models.cpu_streams) does quiet and under load
STREAM_MODES = {
    # name: (GBSTATS_CPU_STREAMS, torch threads; None: the process's default)
    "two one-thread streams": ("", None),
    "one batch at a time, torch's threads (before)": ("1", None),
    "one batch at a time, one thread": ("1", 1),
}
BURNER = "while True:\n    pass\n"


def scored_nodes(ids_sorted, commit: int, targets) -> int:
    """Rows the vocabulary head runs on: per commit batch, the distinct beginnings whose
    next token some unit scores (models.causal runs the head once per tree node)."""
    nodes = 0
    for start in range(0, len(ids_sorted), commit):
        nodes += len({tuple(ids[:p]) for ids, ts in zip(ids_sorted[start:start + commit],
                                                       targets[start:start + commit])
                      for p in ts if p > 0})
    return nodes


def stream_floor(lm, prefixes, continuations, commit: int, rate: float) -> dict:
    """The FLOP floor of scoring these texts as the engine lays them out: the layers at every
    position run, attention over the pairs the tree mask keeps, the head at every distinct
    scored node; at `rate` FLOP/s."""
    import models.causal as causal

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import pronoun_memory as pm

    unique = list(dict.fromkeys(zip(prefixes, continuations)))
    units = sorted(causal.prepare_units(lm, [p for p, _ in unique], [c for _, c in unique],
                                        "prepend"), key=lambda u: u.ids)
    work = pm.design_work([u.ids for u in units], commit)
    per_position, per_pair, head = pm.model_flops(lm.model.config)
    nodes = scored_nodes([u.ids for u in units], commit, [u.targets for u in units])
    flops = (work["after_positions"] * per_position + work["after_attention_pairs"] * per_pair
             + nodes * head)
    return {"texts": len(units), "positions_run": work["after_positions"], "head_rows": nodes,
            "flops": flops, "floor_seconds": flops / rate}


def streams(lm, n: int, reps: int, commits: list[int]) -> dict:
    """Each workload in each STREAM_MODES layout and commit size, quiet and with a burner
    (a process spinning on one core): seconds (min over reps), the ratio to the FLOP floor
    at the quiet two-thread matmul rate, and loaded / quiet throughput."""
    import subprocess

    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import pronoun_memory as pm

    from models.causal import score_continuations

    config = lm.model.config
    rate = max(pm.best_matmul_rate(config.hidden_size, config.intermediate_size, 5))
    dawino, abc = genda_tables(n)
    work = {"role_nouns": role_nouns_units(n),
            "genda_abc": ([""] * len(abc), list(abc["sentence"])),
            "genda_dawinobias": dawinobias_units(dawino)}
    default_threads = torch.get_num_threads()
    rows = []
    for condition in ("quiet", "one core taken"):
        burner = (subprocess.Popen([sys.executable, "-c", BURNER]) if condition != "quiet"
                  else None)
        try:
            time.sleep(1.0 if burner else 0.0)
            for name, (prefixes, continuations) in work.items():
                for mode, (env, threads) in STREAM_MODES.items():
                    for commit in commits:
                        os.environ["GBSTATS_CPU_STREAMS"] = env
                        torch.set_num_threads(threads or default_threads)
                        seconds = [timed(lambda c: score_continuations(
                            prefixes, continuations, lm=lm, batch_size=commit, cache_dir=c,
                            use_cache=False, progress=False)) for _ in range(reps)]
                        rows.append({"condition": condition, "workload": name, "mode": mode,
                                     "commit": commit, "seconds": seconds,
                                     "load_average": os.getloadavg()[0]})
                        print(f"{condition} {name} {mode} commit {commit}: "
                              f"{min(seconds):.2f} s", flush=True)
        finally:
            os.environ.pop("GBSTATS_CPU_STREAMS", None)
            torch.set_num_threads(default_threads)
            if burner is not None:
                burner.kill()
                burner.wait()
    floors = {(name, commit): stream_floor(lm, *units, commit, rate)
              for name, units in work.items() for commit in commits}
    quiet = {(r["workload"], r["mode"], r["commit"]): min(r["seconds"]) for r in rows
             if r["condition"] == "quiet"}
    for r in rows:
        best = min(r["seconds"])
        key = (r["workload"], r["mode"], r["commit"])
        r["times_floor"] = best / floors[(r["workload"], r["commit"])]["floor_seconds"]
        r["throughput_vs_quiet"] = quiet[key] / best
    return {"n": n, "reps": reps, "matmul_gflops_best": rate / 1e9,
            "floors": [{"workload": name, "commit": commit, **f}
                       for (name, commit), f in floors.items()],
            "rows": rows,
            "note": "seconds: min over reps, cache off; times_floor: seconds over the FLOP floor "
                    "(layers at every position run, attention pairs kept by the tree mask, the "
                    "vocabulary head at every distinct scored node) at the best float32 matmul "
                    "rate measured here on torch's threads; throughput_vs_quiet: the same "
                    "layout's quiet seconds over these; the burner is one Python process "
                    "spinning on one core"}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=256, help="texts per workload (default: %(default)s)")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--skip-threads", action="store_true")
    p.add_argument("--packing", type=Path, metavar="BEFORE_TREE",
                   help="only compare the prefix-tree layout with the one-prefix-per-group layout "
                        "of BEFORE_TREE (a source tree of the earlier code, e.g. from "
                        "`git archive`); updates the \"packing\" entry of the JSON")
    p.add_argument("--rounds", type=int, default=2, help="--packing: rounds (default: %(default)s)")
    p.add_argument("--threads", type=int, default=1,
                   help="--packing: torch threads in both trees (default: %(default)s)")
    p.add_argument("--floor", action="store_true",
                   help="only count role_nouns' and genda_lens' whole scoring work and its FLOP "
                        "floor (scores nothing); updates the \"floor\" entry of the JSON")
    p.add_argument("--streams", action="store_true",
                   help="only time the CPU layouts (models.cpu_streams) quiet and with one core "
                        "taken by a burner; updates the \"streams\" entry of the JSON")
    p.add_argument("--commits", default="32,128",
                   help="--streams: commit sizes to time (default: %(default)s)")
    p.add_argument("--out", default=str(OUT))
    args = p.parse_args(argv)
    out = Path(args.out)
    if args.streams:
        from models.loading import load_scorer

        doc = json.loads(out.read_text()) if out.exists() else {"benchmark": "study_scoring"}
        doc["streams"] = {"date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                          "load_average_before": list(os.getloadavg()),
                          **streams(load_scorer("smollm2-135m"), args.n, args.reps,
                                    [int(c) for c in args.commits.split(",")]),
                          "load_average_after": list(os.getloadavg()),
                          "machine": {"cpu_count": os.cpu_count(),
                                      "platform": platform.platform()},
                          "versions": {k: version(k) for k in ("torch", "transformers")}}
        out.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {out} (streams)")
        return doc
    if args.floor:
        from models.loading import load_scorer

        doc = json.loads(out.read_text()) if out.exists() else {"benchmark": "study_scoring"}
        doc["floor"] = {"date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                        "load_average_before": list(os.getloadavg()),
                        "commit_batch": COMMIT, **floor(load_scorer("smollm2-135m")),
                        "load_average_after": list(os.getloadavg()),
                        "machine": {"cpu_count": os.cpu_count(),
                                    "platform": platform.platform()}}
        out.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {out} (floor)")
        return doc
    if args.packing:
        doc = json.loads(out.read_text()) if out.exists() else {"benchmark": "study_scoring"}
        doc["packing"] = {"date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                          "load_average_before": list(os.getloadavg()),
                          **packing(args.packing, args.n, args.rounds, args.reps, args.threads),
                          "load_average_after": list(os.getloadavg())}
        out.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {out} (packing)")
        return doc

    from models.loading import load_scorer

    lm = load_scorer("smollm2-135m")
    doc = {"benchmark": "study_scoring",
           "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "model": lm.name, "n": args.n, "reps": args.reps,
           "load_average_before": list(os.getloadavg()),
           "torch_threads_in_scoring": torch_threads_now(),
           "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform()},
           "versions": {k: version(k) for k in ("torch", "transformers")}}
    if not args.skip_threads:
        doc["threads"] = threads(lm, args.n // 2, args.reps)
    doc["workloads"] = workloads(lm, args.n, args.reps)
    doc["study_vs_engine"] = study_vs_engine(lm, args.n, args.reps)
    doc["load_average_after"] = list(os.getloadavg())
    for kept in ("packing", "floor"):  # kept: each has its own date
        if out.exists() and kept in json.loads(out.read_text()):
            doc[kept] = json.loads(out.read_text())[kept]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {out}")
    return doc


if __name__ == "__main__":
    main()

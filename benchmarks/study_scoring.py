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

--split scores each workload (and pronoun_memory's Exp 2 contexts) on one thread, one batch
at a time, and times the parts of the forward pass (forward hooks on the modules, wrappers
around the engine's host steps): attention projections, the attention core under the tree
mask, the MLP's matmuls and activation, norms, the vocabulary projection, the log-softmax,
the tree masks and layout, tokenizing and the rest of the host's Python, each against its
own FLOP floor at the one-thread matmul rate measured in the same run, with padding's share
estimated from the positions the passes ran. It updates only the "split" entry.

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


# --split: where one thread's scoring time goes, by part of the forward pass, each part
# against its own FLOP floor. Parts are found by module name (a llama-type decoder: the
# embedded model), in the order a name is tried; a module in none of them is not timed.
SPLIT_MODULES = (  # (name suffix, part)
    (("q_proj", "k_proj", "v_proj", "o_proj"), "attention projections (q, k, v, o)"),
    (("self_attn",), "attention, whole"),
    (("gate_proj", "up_proj", "down_proj"), "MLP matmuls"),
    ((".mlp",), "MLP, whole"),
    (("input_layernorm", "post_attention_layernorm", "model.norm"), "RMS norms"),
    (("embed_tokens",), "token embeddings"),
    (("rotary_emb",), "rotary tables"),
    (("lm_head",), "vocabulary projection"),
)
SPLIT_LAYER = "layers."  # a decoder layer: "model.layers.N" (its parts are timed within)


class PartTimer:
    """Seconds per part, from forward hooks on the model's modules and wrappers around the
    engine's host-side steps, with the token positions the base model runs (padding and
    the pairs the tree mask keeps, read off the tensors the engine builds)."""

    def __init__(self, lm):
        import torch

        import models.causal as causal

        self.seconds: dict[str, float] = {}
        self.counts = {"positions_padded": 0, "positions_real": 0, "attention_pairs": 0,
                       "head_rows": 0}
        self._start: dict[int, float] = {}
        self._undo = []
        model = lm.model
        for name, module in model.named_modules():
            part = self._part_of(name)
            if part is not None:
                self._hook(module, part)
        self._hook(model.base_model, "base model, whole", count=True)
        for where, attribute, part in ((causal, "_band_inputs", "tree masks and ids (numpy)"),
                                       (causal, "_packed_layout", "tree layout (Python)"),
                                       (causal, "prepare_units", "tokenizing"),
                                       (torch, "log_softmax", "log-softmax")):
            self._wrap(where, attribute, part)

    @staticmethod
    def _part_of(name: str):
        for suffixes, part in SPLIT_MODULES:
            if name.endswith(suffixes):
                return part
        tail = name.rsplit(SPLIT_LAYER, 1)[-1]
        return "decoder layers, whole" if SPLIT_LAYER in name and tail.isdigit() else None

    def _add(self, part: str, seconds: float) -> None:
        self.seconds[part] = self.seconds.get(part, 0.0) + seconds

    def _hook(self, module, part: str, count: bool = False) -> None:
        def before(mod, args, kwargs):
            if count:
                self._count(kwargs)
            self._start[id(mod)] = time.perf_counter()

        def after(mod, args, kwargs, output):
            self._add(part, time.perf_counter() - self._start.pop(id(mod)))
            if part == "vocabulary projection":
                self.counts["head_rows"] += int(args[0].shape[0]) if args[0].dim() == 2 else \
                    int(args[0].shape[0] * args[0].shape[1])

        self._undo.append(module.register_forward_pre_hook(before, with_kwargs=True).remove)
        self._undo.append(module.register_forward_hook(after, with_kwargs=True).remove)

    def _count(self, kwargs) -> None:
        ids, mask = kwargs["input_ids"], kwargs.get("attention_mask")
        self.counts["positions_padded"] += int(ids.numel())
        if mask is not None and mask.dim() == 4:  # a tree mask: real queries see themselves
            diagonal = mask[:, 0].diagonal(dim1=-2, dim2=-1)
            real = int(diagonal.sum())
            self.counts["positions_real"] += real
            self.counts["attention_pairs"] += int(mask.sum()) - (int(ids.numel()) - real)
        else:  # right-padded rows, causal: a row of length l attends l(l+1)/2 pairs
            lengths = (mask.sum(-1) if mask is not None
                       else ids.new_full((ids.shape[0],), ids.shape[1]))
            self.counts["positions_real"] += int(lengths.sum())
            self.counts["attention_pairs"] += int((lengths * (lengths + 1) // 2).sum())

    def _wrap(self, where, attribute: str, part: str) -> None:
        function = getattr(where, attribute)

        def timed_call(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self._add(part, time.perf_counter() - start)

        setattr(where, attribute, timed_call)
        self._undo.append(lambda: setattr(where, attribute, function))

    def remove(self) -> None:
        for undo in reversed(self._undo):
            undo()


def split_parts(seconds: dict, counts: dict, total: float, config, rate: float) -> dict:
    """The timed parts made exclusive (a whole minus its timed parts), with the estimated
    cost of padding, the rest as the host's Python, and each part's FLOP floor at `rate`."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import pronoun_memory as pm

    d, d_ff, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    head_dim = getattr(config, "head_dim", None) or d // config.num_attention_heads
    kv = config.num_key_value_heads * head_dim
    _, per_pair, per_head_row = pm.model_flops(config)
    get = seconds.get
    attention_core = get("attention, whole", 0) - get("attention projections (q, k, v, o)", 0)
    mlp_rest = get("MLP, whole", 0) - get("MLP matmuls", 0)
    layers_rest = (get("decoder layers, whole", 0) - get("attention, whole", 0)
                   - get("MLP, whole", 0) - get("RMS norms", 0))
    base_rest = (get("base model, whole", 0) - get("decoder layers, whole", 0)
                 - get("token embeddings", 0) - get("rotary tables", 0))
    # the final norm is a RMS norm outside the layers: taken out of the base's rest
    real, padded = counts["positions_real"], counts["positions_padded"]
    parts = {
        "attention projections (q, k, v, o)": (
            get("attention projections (q, k, v, o)", 0), real * 2 * layers * (2 * d * d + 2 * d * kv)),
        "attention core (rotary, scores under the tree mask, softmax, values)": (
            attention_core, counts["attention_pairs"] * per_pair),
        "MLP matmuls (gate, up, down)": (get("MLP matmuls", 0), real * 2 * layers * 3 * d * d_ff),
        "MLP activation and product": (mlp_rest, None),
        "RMS norms and residual adds": (get("RMS norms", 0) + layers_rest, None),
        "mask handling and embeddings in the base model": (
            base_rest + get("token embeddings", 0) + get("rotary tables", 0), None),
        "vocabulary projection": (get("vocabulary projection", 0),
                                  counts["head_rows"] * per_head_row),
        "log-softmax": (get("log-softmax", 0), None),
        "tree masks and ids (numpy)": (get("tree masks and ids (numpy)", 0), None),
        "tree layout (Python)": (get("tree layout (Python)", 0), None),
        "tokenizing": (get("tokenizing", 0), None),
    }
    timed_sum = sum(s for s, _ in parts.values())
    parts["the rest of the host's Python (batching, gathers, results)"] = (total - timed_sum, None)
    out = {}
    for part, (secs, flops) in parts.items():
        out[part] = {"seconds": round(secs, 4), "share": round(secs / total, 4)}
        if flops:
            out[part].update(floor_seconds=round(flops / rate, 4),
                             times_floor=round(secs / (flops / rate), 3))
    in_layers = get("decoder layers, whole", 0)
    out["padding (included above)"] = {
        "positions_padded": padded, "positions_real": real,
        "estimated_seconds": round(in_layers * (padded - real) / padded, 4) if padded else 0.0,
        "share": round(in_layers * (padded - real) / padded / total, 4) if padded else 0.0,
        "how": "the decoder layers' seconds times the padded share of the positions they ran"}
    floor_total = sum(v["floor_seconds"] for v in out.values() if "floor_seconds" in v)
    out["whole"] = {"seconds": round(total, 4), "floor_seconds": round(floor_total, 4),
                    "times_floor": round(total / floor_total, 3), **counts}
    return out


def split_workloads(n: int) -> dict:
    """`packing_workloads`, and pronoun_memory's Exp 2 (long shared contexts: about 1,800
    tokens read before 27 short continuations each) for n // 128 of its prompts."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import pronoun_memory as pm

    units = pm.study_units()
    exp2 = units[units["part"] == "Exp 2"]
    exp2 = exp2[exp2["prompt_id"].isin(exp2["prompt_id"].unique()[:max(1, n // 128)])]
    return {**packing_workloads(n),
            "pronoun_memory_exp2": (list(exp2["prefix"]), list(exp2["continuation"]))}


def split(lm, n: int, reps: int) -> dict:
    """--split: each workload scored on one thread, one batch at a time (so that every part's
    seconds are its own and the floor's rate is one core's), first plain and then with
    the part timers on; the parts' seconds, shares and times their FLOP floors."""
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import pronoun_memory as pm

    from models.causal import score_continuations

    config = lm.model.config
    threads = torch.get_num_threads()
    os.environ["GBSTATS_CPU_STREAMS"] = "1"
    torch.set_num_threads(1)
    try:
        rate = max(pm.best_matmul_rate(config.hidden_size, config.intermediate_size, 5))
        out = {}
        for name, (prefixes, continuations) in split_workloads(n).items():
            def run(cache):
                score_continuations(prefixes, continuations, lm=lm, cache_dir=cache,
                                    use_cache=False, progress=False)
            plain = min(timed(run) for _ in range(reps))
            best = None
            for _ in range(reps):
                timer = PartTimer(lm)
                try:
                    seconds = timed(run)
                finally:
                    timer.remove()
                if best is None or seconds < best[0]:
                    best = (seconds, timer)
            total, timer = best
            out[name] = {"seconds_plain": round(plain, 4), "seconds_timed": round(total, 4),
                         "timer_overhead": round(total / plain - 1, 4),
                         "parts": split_parts(timer.seconds, timer.counts, total, config, rate)}
            whole = out[name]["parts"]["whole"]
            print(f"split {name}: {plain:.2f} s plain, {total:.2f} s timed, "
                  f"{whole['times_floor']:.2f}x its floor", flush=True)
    finally:
        os.environ.pop("GBSTATS_CPU_STREAMS", None)
        torch.set_num_threads(threads)
    return {"n": n, "reps": reps, "commit": "the engine's CPU default", "torch_threads": 1,
            "matmul_gflops_best_one_thread": round(rate / 1e9, 1), "workloads": out,
            "note": "one thread, one batch at a time, cache off; seconds: the run (min over "
                    "reps) whose parts are shown, timed by forward hooks on the modules and "
                    "wrappers around the engine's steps; a part's floor: its FLOPs (real "
                    "positions, the pairs the tree mask keeps, the head's rows) at the best "
                    "one-thread float32 matmul rate measured in the same run"}


def update_entry(out: Path, key: str, measure, load_model: bool = True, **fixed) -> dict:
    """Run `measure(lm)` (lm: the embedded model, or None) and write what it returns as the
    JSON's `key` entry, dated, with the load average around it, the machine and the
    versions, keeping the other entries (each has its own date)."""
    doc = json.loads(out.read_text()) if out.exists() else {"benchmark": "study_scoring"}
    entry = {"date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
             "load_average_before": list(os.getloadavg()), **fixed}
    if load_model:
        from models.loading import load_scorer

        entry.update(measure(load_scorer("smollm2-135m")))
    else:
        entry.update(measure(None))
    entry.update(load_average_after=list(os.getloadavg()),
                 machine={"cpu_count": os.cpu_count(), "platform": platform.platform()},
                 versions={k: version(k) for k in ("torch", "transformers")})
    doc[key] = entry
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {out} ({key})")
    return doc


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
    p.add_argument("--split", action="store_true",
                   help="only time the parts of the forward pass on one thread against their "
                        "FLOP floors; updates the \"split\" entry of the JSON")
    p.add_argument("--out", default=str(OUT))
    args = p.parse_args(argv)
    out = Path(args.out)
    if args.streams:
        return update_entry(out, "streams", lambda lm: streams(
            lm, args.n, args.reps, [int(c) for c in args.commits.split(",")]))
    if args.split:
        return update_entry(out, "split", lambda lm: split(lm, args.n, args.reps))
    if args.floor:
        return update_entry(out, "floor", floor, commit_batch=COMMIT)
    if args.packing:
        return update_entry(out, "packing", lambda lm: packing(
            args.packing, args.n, args.rounds, args.reps, args.threads), load_model=False)

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
    for kept in ("packing", "floor", "streams", "split"):  # kept: each has its own date
        if out.exists() and kept in json.loads(out.read_text()):
            doc[kept] = json.loads(out.read_text())[kept]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {out}")
    return doc


if __name__ == "__main__":
    main()

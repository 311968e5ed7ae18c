"""studies.pronoun_memory: what the shared contexts cost, before and after token trees.

    .venv/bin/python benchmarks/pronoun_memory.py                 # all three parts
    .venv/bin/python benchmarks/pronoun_memory.py --parts work    # the deterministic count only
    .venv/bin/python benchmarks/pronoun_memory.py --parts plans   # tree_plan vs trunk_plan
    .venv/bin/python benchmarks/pronoun_memory.py --parts ruff    # the RUFF sample's floor
    .venv/bin/python benchmarks/pronoun_memory.py --parts design  # the current design's floor

Writes benchmarks/results/pronoun_memory.json.

- `work` (deterministic, independent of load): every unit the study scores
  (prompt x task x option: 6 per character asked about) tokenised with
  smollm2-135m's tokenizer, and the token positions the engine runs and the
  query-key pairs its attention computes, under
    whole_texts: no sharing, each unit run whole;
    before: models.causal at --before (one shared prefix per group, commit
            batches of 32, memory and production in two calls: what the study
            would have paid before this branch);
    after: this checkout (each group a token tree, groups weighed by a cost
           that counts attention, both tasks in one call, commit batches of
           1024, as studies.pronoun_memory scores).
  Rows per part of the design (Exp 2, Exp 1A's faithful lists, Exp 1A's
  distractor sweep, Exp 1B) and in total.
- `ratio`: wall and CPU time of scoring the same units (one Exp 1A list: 72
  units, no score cache) with the engine before and after, interleaved, min of
  --repeats; the ratios are the comparable numbers on a shared machine.
- `floor`: the least time the `after` work can take on this machine: the
  floating-point operations it needs (every token position through every
  layer's projections and MLP, every query-key pair of a packed row through
  QK^T and PV, the LM head where a score is read), divided by the best fp32
  matmul rate measured here (torch, the model's shapes, max of repeats).
- `plans` (updates only its own entry): how a token tree alone in its row runs on the
  CPU, `models.causal.tree_plan` (each chain on its ancestors' KV cache, each subtree
  whole or split again) against `trunk_plan` (the trunk alone, then the rest in one
  masked pass: the CPU's rule before), on one thread, one stream, one commit batch:
  Exp 1A's faithful lists (972 units) and Exp 2's first 216 units (sorted), seconds
  interleaved, min of --repeats, the attention pairs each plan computes a layer, and
  the largest difference between the two plans' scores.
- `ruff` (updates only `current_design.ruff_sample`): the study's second scoring, the
  RUFF sample it scores with pronoun_fidelity's code (36 per seed and number of
  distractors, seed 2023, they instances, 4 pronoun forms each, the whole filled
  sentence), counted as `work` counts the rest: the token positions of its token trees,
  the query-key pairs they keep, the vocabulary head at each distinct scored node, and
  their FLOPs, so that study_times can set the whole scoring against the whole floor.
- `study`: `python -m studies.pronoun_memory --no-bayes` cold (empty score and
  fit cache, the converted model kept) and warm (everything cached), each a
  fresh process, with the seconds of each progress line and the CPU seconds
  the run used. On a loaded machine the wall seconds are inflated; the load
  average is recorded before and after.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BEFORE = "bb3c7c7"   # main before this branch
sys.path.insert(0, str(REPO))


def load_before(ref: str):
    """models.causal as it was at `ref`, imported under another name (its imports of the
    rest of models/ resolve to this checkout, which the change left alone)."""
    source = subprocess.run(["git", "show", f"{ref}:models/causal.py"], cwd=REPO, check=True,
                            capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "causal_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("causal_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["causal_before"] = module
    spec.loader.exec_module(module)
    return module


def study_units():
    from gbstats.data.registry import load_dataset
    from studies.pronoun_memory import contexts as C
    from studies.pronoun_memory.model_side import continuation_units

    from studies.pronoun_memory.model_side import CONTENT_FREE_SUFFIX

    tables = load_dataset("gardner2023").tables
    prompts = C.all_prompts(tables, 2023)
    units = continuation_units(prompts)
    # a shared context's content-free question (prompt_id "<context_id>|content-free") is
    # scored too: it belongs to its context's part (an inner merge on prompt_id dropped
    # those 1,998 units from the count until 2026-12-07)
    free = units["prompt_id"].str.endswith(CONTENT_FREE_SUFFIX)
    of_context = prompts.drop_duplicates("context_id").set_index("context_id")
    key = units["prompt_id"].where(~free, units["prompt_id"].str[:-len(CONTENT_FREE_SUFFIX)])
    lookup = prompts.set_index("prompt_id")[["experiment", "faithful"]]
    units["experiment"] = [of_context.at[k, "experiment"] if f else lookup.at[k, "experiment"]
                           for k, f in zip(key, free)]
    units["faithful"] = [bool(of_context.at[k, "faithful"]) if f else bool(lookup.at[k, "faithful"])
                         for k, f in zip(key, free)]
    units["part"] = [f"Exp {e.upper()}" + ("" if e != "1a" else (" faithful" if f else " sweep"))
                     for e, f in zip(units["experiment"], units["faithful"])]
    return units


def token_ids(units, tokenizer):
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    texts = [p + c for p, c in zip(units["prefix"], units["continuation"])]
    return [[bos] + ids for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]


def ancestor_pairs(parents: list[int]) -> int:
    """Query-key pairs a tree's tokens need: each token attends to itself and its ancestors
    (the rest of a packed row's width x width pairs are computed and masked out)."""
    depth = []
    for parent in parents:
        depth.append(1 if parent < 0 else depth[parent] + 1)
    return sum(depth)


def cost(sequences, batch: int, grouping, tree: bool, needed: list | None = None
         ) -> tuple[int, int]:
    """(token positions run, query-key pairs) for sorted sequences in commit batches; with
    `needed` (a list), the pairs the causal mask keeps are appended to it."""
    from models.causal import token_tree

    sequences = sorted(sequences)
    positions = pairs = 0
    for start in range(0, len(sequences), batch):
        chunk = sequences[start:start + batch]
        groups = {}
        for seq, (group, length) in zip(chunk, grouping(chunk)):
            groups.setdefault((group, length), []).append(seq)
        for (_, length), members in groups.items():
            if tree:
                tokens, parents, _ = token_tree(members)
                run = len(tokens)
                if needed is not None:
                    needed.append(ancestor_pairs(parents))
            else:
                run = length + sum(len(s) - length for s in members) if length else \
                    sum(len(s) for s in members)
            positions += run
            pairs += run * run if (length or tree) else sum(len(s) ** 2 for s in members)
    return positions, pairs


def design_work(ids, batch: int) -> dict:
    """The work of scoring token sequences `ids` as the causal engine runs them on the CPU
    (sorted, commit batches of `batch`, one token tree per shared_prefixes group): in
    `floor_part`'s keys."""
    from models.causal import shared_prefixes

    needed: list[int] = []
    positions, pairs = cost(ids, batch, shared_prefixes, tree=True, needed=needed)
    return {"units": len(ids), "after_positions": positions, "after_attention_pairs": pairs,
            "after_attention_pairs_unmasked": sum(needed)}


def work_part(before) -> dict:
    from models.causal import shared_prefixes
    from models.loading import load_scorer

    units = study_units()
    tokenizer = load_scorer("smollm2-135m").tokenizer
    units["ids"] = token_ids(units, tokenizer)
    rows = {}
    for part, block in list(units.groupby("part")) + [("total", units)]:
        whole = sum(len(s) for s in block["ids"])
        old_positions = old_pairs = 0
        for task in ("memory", "production"):   # two calls, 32 per commit
            p, q = cost(list(block[block["task"] == task]["ids"]), 32, before.shared_prefixes,
                        tree=False)
            old_positions, old_pairs = old_positions + p, old_pairs + q
        needed: list[int] = []
        new_positions, new_pairs = cost(list(block["ids"]), 1024, shared_prefixes, tree=True,
                                        needed=needed)
        rows[part] = {"units": len(block), "whole_texts_positions": whole,
                      "before_positions": old_positions, "after_positions": new_positions,
                      "before_attention_pairs": old_pairs, "after_attention_pairs": new_pairs,
                      "after_attention_pairs_unmasked": sum(needed),
                      "positions_ratio_before_over_after": old_positions / new_positions}
    return rows


def ratio_part(before, repeats: int) -> dict:
    import models.causal as after
    from models.loading import load_scorer

    lm = load_scorer("smollm2-135m")
    units = study_units()
    # one Exp 1A list (72 units): the engine before takes ~10x longer, so more is slow
    subset = units[(units["part"] == "Exp 1A faithful") & units["prompt_id"].str.startswith("1a|1|")]

    def run(module, batch, split):
        calls = [subset[subset["task"] == t] for t in ("memory", "production")] if split \
            else [subset]
        start, cpu = time.perf_counter(), time.process_time()
        for part in calls:
            module.unit_logprobs(lm, list(part["prefix"]), list(part["continuation"]),
                                 bos="prepend", batch_size=batch, cache_dir=None,
                                 use_cache=False, progress=False)
        return time.perf_counter() - start, time.process_time() - cpu

    times = {"before": [], "after": []}
    for _ in range(repeats):
        times["before"].append(run(before, 32, split=True))
        times["after"].append(run(after, 1024, split=False))
    wall = {k: [w for w, _ in v] for k, v in times.items()}
    cpu = {k: [c for _, c in v] for k, v in times.items()}
    return {"units": len(subset), "what": "Exp 1A list 1: 12 characters x (3 options + 3 words)",
            "before_wall_seconds": wall["before"], "after_wall_seconds": wall["after"],
            "before_cpu_seconds": cpu["before"], "after_cpu_seconds": cpu["after"],
            "ratio_wall": min(wall["before"]) / min(wall["after"]),
            "ratio_cpu": min(cpu["before"]) / min(cpu["after"])}


def model_flops(config) -> tuple[int, int, int]:
    """(FLOPs per token position through the layers' linear maps, per attended pair of
    positions, per row of the vocabulary head) of a decoder with this config."""
    d, d_ff, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or d // heads
    kv = config.num_key_value_heads * head_dim
    per_position = 2 * layers * (d * d + 2 * d * kv + d * d + 3 * d * d_ff)
    per_pair = 4 * layers * heads * head_dim       # QK^T and PV, 2 flops per multiply-add
    return per_position, per_pair, 2 * d * config.vocab_size


def best_matmul_rate(d: int, d_ff: int, repeats: int) -> list[float]:
    """FLOP/s of a (2048 x d) @ (d x d_ff) float32 product on torch's threads, `repeats` times."""
    import torch

    x = torch.randn(2048, d)
    w = torch.randn(d, d_ff)
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(20):
            x @ w
        rates.append(20 * 2 * 2048 * d * d_ff / (time.perf_counter() - start))
    return rates


def floor_part(work: dict, repeats: int) -> dict:
    """FLOPs of the study's scoring (from `work`'s counts) over the best measured fp32 rate."""
    import torch

    from models.loading import load_scorer

    config = load_scorer("smollm2-135m").model.config
    d, d_ff = config.hidden_size, config.intermediate_size
    per_position, per_pair, head = model_flops(config)
    total = work["total"]
    flops = {"linear": total["after_positions"] * per_position,
             "attention": total["after_attention_pairs"] * per_pair,
             "lm_head": total["units"] * 2 * head}   # ~2 scored tokens per unit
    by_part = {part: {"linear": row["after_positions"] * per_position,
                      "attention": row["after_attention_pairs"] * per_pair,
                      "attention_unmasked_only": row["after_attention_pairs_unmasked"] * per_pair}
               for part, row in work.items()}
    rates = best_matmul_rate(d, d_ff, repeats)
    rate = max(rates)
    return {"flops": flops, "total_flops": sum(flops.values()),
            "matmul_gflops_best": rate / 1e9, "matmul_gflops_all": [r / 1e9 for r in rates],
            "torch_threads": torch.get_num_threads(),
            "lower_bound_seconds": sum(flops.values()) / rate,
            "flops_by_part": by_part,
            "lower_bound_seconds_if_masked_pairs_were_skipped":
                (sum(flops.values()) - flops["attention"]
                 + total["after_attention_pairs_unmasked"] * per_pair) / rate,
            "note": "a bound: real layers also run norms, rotary embeddings, softmax and "
                    "masks, and a loaded machine shares its cores"}


STEP = re.compile(r"^\[\s*([0-9.]+)s\] (.*)$")


def design_part(before) -> dict:
    """`current_design`: the work and FLOP floor of the study's model side as it is now."""
    from models.loading import load_scorer

    work = work_part(before)
    per_position, per_pair, head = model_flops(load_scorer("smollm2-135m").model.config)
    total = work["total"]
    flops = {"linear": total["after_positions"] * per_position,
             "attention": total["after_attention_pairs"] * per_pair,
             "lm_head": total["units"] * 2 * head}   # ~2 scored tokens per unit, as floor_part
    kept = total["after_attention_pairs_unmasked"] * per_pair
    units = study_units()
    return {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            # what the engine scores (a unit asked for twice is scored once): with the RUFF
            # sample's texts, the number of texts a cold default run reports scoring
            "distinct_units": len(set(zip(units["prefix"], units["continuation"]))),
            "what": "the work of the study's model side as it is now, counted by "
                    "`benchmarks/pronoun_memory.py --parts design`: every unit the default run "
                    f"scores ({total['units']:,}, each shared context's content-free question "
                    "included), run as token trees in commit batches of 1,024; the RUFF "
                    "sample is counted apart (ruff_sample, --parts ruff)",
            "work": work, "flops": flops,
            "flops_by_part": {part: {"linear": row["after_positions"] * per_position,
                                     "attention": row["after_attention_pairs"] * per_pair,
                                     "attention_unmasked_only":
                                         row["after_attention_pairs_unmasked"] * per_pair}
                              for part, row in work.items()},
            "attention_flops_kept_pairs_only": kept,
            "floor_flops": flops["linear"] + kept + flops["lm_head"],
            "floor_flops_note": "the layers at every position run, the head where a score is "
                                "read, and attention over the query-key pairs the tree masks "
                                "keep: the least work; the engine computes more pairs "
                                "(models.causal.tree_plan's passes)"}


def ruff_texts(per_seed: int = 36, seed: int = 2023) -> list[tuple[str, str]]:
    """(prefix, filled sentence) of every text the study's RUFF sample scores
    (studies.pronoun_memory.ruff.ruff_sample_fidelity, through forced_choice's "sentence"
    span: log P(form + rest | prefix))."""
    from gbstats.data.registry import load_dataset
    from models.masked import DEFAULT_SLOT, fill_slot
    from studies.pronoun_fidelity import analysis as A
    from studies.pronoun_fidelity.instances import CASES
    from studies.pronoun_fidelity.steps import draw_samples
    from studies.pronoun_memory.ruff import RUFF_DISTRACTORS

    tables = load_dataset("ruff2024").tables
    samples = draw_samples(tables["task"], tables["context"], RUFF_DISTRACTORS, per_seed, seed)
    they = samples[samples["pronoun_set"] == "they"].drop_duplicates("instance")
    return [(frame.split(DEFAULT_SLOT)[0], fill_slot(frame, form))
            for case in CASES for frame in they.loc[they["case"] == case, "frame"]
            for form in A.variants_for_case(case)]


def ruff_part() -> dict:
    from models.loading import load_scorer

    lm = load_scorer("smollm2-135m")
    texts = list(dict.fromkeys(ruff_texts()))
    tokenizer = lm.tokenizer
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    ids = [[bos] + t for t in tokenizer([t for _, t in texts], add_special_tokens=False)["input_ids"]]
    prefix_lengths = [1 + len(p) for p in
                      tokenizer([p for p, _ in texts], add_special_tokens=False)["input_ids"]]
    # the head runs once per distinct node whose next token is scored (models.causal)
    scored_nodes = {hash(tuple(seq[:k])) for seq, first in zip(ids, prefix_lengths)
                    for k in range(first, len(seq))}
    work = design_work(ids, 1024)
    per_position, per_pair, head = model_flops(lm.model.config)
    flops = (work["after_positions"] * per_position
             + work["after_attention_pairs_unmasked"] * per_pair + len(scored_nodes) * head)
    return {"what": "the RUFF sample pronoun_memory's default run scores (36 per seed and number "
                    "of distractors, seed 2023, they instances, 4 forms each), counted as "
                    "current_design counts the rest: its token trees' positions, the pairs their "
                    "masks keep, the head at each distinct scored node",
            "texts": len(ids), "positions": work["after_positions"],
            "attention_pairs_kept": work["after_attention_pairs_unmasked"],
            "head_rows": len(scored_nodes), "floor_flops": flops,
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


PLAN_WORKLOADS = {"Exp 1A faithful": None, "Exp 2": 216}  # part: units (sorted), None: all


def plan_pairs(plan) -> float:
    """Query-key pairs a layer computes over a plan's passes (the root's chain causal)."""
    return sum(len(nodes) ** 2 / 2 if kept == 0 else len(nodes) * (kept + len(nodes))
               for kept, nodes in plan)


def plans_part(repeats: int) -> dict:
    import contextlib

    import numpy as np
    import torch

    from models import causal
    from models.loading import load_scorer

    os.environ["GBSTATS_CPU_STREAMS"] = "1"
    torch.set_num_threads(1)
    lm = load_scorer("smollm2-135m")
    rules = {"trunk_plan": lambda tree, device: causal.trunk_plan(tree[3], len(tree[1])),
             "tree_plan": lambda tree, device: causal.tree_plan(tree[2])}

    @contextlib.contextmanager
    def rule(name):
        original = causal.row_plan
        causal.row_plan = rules[name]
        try:
            yield
        finally:
            causal.row_plan = original

    units = study_units()
    out = {"what": "one thread, one stream, the workload in one commit batch, no score cache; "
                   "seconds are the min of the repeats, run interleaved",
           "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "matmul_gflops_one_thread": round(max(best_matmul_rate(576, 1536, repeats)) / 1e9, 1),
           "pass_overhead_pairs": causal.PASS_OVERHEAD_PAIRS,
           "cache_copy_pairs": causal.CACHE_COPY_PAIRS, "workloads": {}}
    for part, limit in PLAN_WORKLOADS.items():
        block = units[units["part"] == part]
        ids = token_ids(block, lm.tokenizer)
        order = sorted(range(len(ids)), key=lambda k: ids[k])[:limit]
        prefixes = [block["prefix"].iloc[k] for k in order]
        continuations = [block["continuation"].iloc[k] for k in order]
        trees, packed, _, _ = causal._packed_layout(
            [causal.CausalUnit("", 0, ids[k], [], []) for k in order],
            causal.sorted_groups([ids[k] for k in order]))
        alone = [trees[row[0]] for row in packed if len(row) == 1]
        entry = {"units": len(order), "trees_alone_in_a_row": len(alone),
                 "kept_pairs": sum(ancestor_pairs(t[2]) for t in alone)}
        seconds: dict = {name: [] for name in rules}
        scores = {}
        for _ in range(repeats):
            for name in rules:
                with rule(name):
                    started = time.perf_counter()
                    scored = causal.score_continuations(prefixes, continuations, lm=lm,
                                                        use_cache=False, progress=False,
                                                        batch_size=len(order))
                seconds[name].append(time.perf_counter() - started)
                scores[name] = scored["logprob"].to_numpy()
        for name, plan_of in rules.items():
            plans = [plan_of(t, "cpu") for t in alone]
            entry[name] = {"seconds_min": round(min(seconds[name]), 2),
                           "seconds": [round(x, 2) for x in seconds[name]],
                           "passes": sum(len(p) for p in plans),
                           "pairs_per_layer": sum(plan_pairs(p) for p in plans)}
        entry["tree_over_trunk_seconds"] = round(
            entry["tree_plan"]["seconds_min"] / entry["trunk_plan"]["seconds_min"], 3)
        entry["largest_score_difference_nats"] = float(
            np.abs(scores["tree_plan"] - scores["trunk_plan"]).max())
        out["workloads"][part] = entry
        print(part, json.dumps(entry), flush=True)
    return out


def study_part() -> dict:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "GBSTATS_CACHE": str(Path(tmp) / "cache")}
        for kind in ("cold", "warm"):
            load = os.getloadavg()
            start, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
            proc = subprocess.run([sys.executable, "-m", "studies.pronoun_memory", "--no-bayes",
                                   "--out", str(Path(tmp) / "out")], cwd=REPO, env=env,
                                  capture_output=True, text=True, check=False)
            seconds = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            steps = [(float(m.group(1)), m.group(2)) for line in proc.stderr.splitlines()
                     for m in [STEP.match(line.strip())] if m]
            out[kind] = {"seconds": seconds, "cpu_seconds": cpu, "returncode": proc.returncode,
                         "load_before": load, "load_after": os.getloadavg(), "steps": steps,
                         "stderr_tail": proc.stderr[-2000:] if proc.returncode else ""}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", default="work,floor,ratio,study")
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "pronoun_memory.json"))
    args = parser.parse_args(argv)
    parts = args.parts.split(",")
    if parts in (["plans"], ["ruff"], ["design"]):  # its own entry only, the rest kept
        path = Path(args.out)
        recorded = json.loads(path.read_text()) if path.exists() else {}
        if parts == ["plans"]:
            recorded["plans"] = plans_part(args.repeats)
        elif parts == ["design"]:
            ruff = recorded.get("current_design", {}).get("ruff_sample")
            recorded["current_design"] = design_part(load_before(args.before))
            if ruff:
                recorded["current_design"]["ruff_sample"] = ruff
        else:
            recorded.setdefault("current_design", {})["ruff_sample"] = ruff_part()
            print(json.dumps(recorded["current_design"]["ruff_sample"], indent=1))
        path.write_text(json.dumps(recorded, indent=1) + "\n")
        return 0
    before = load_before(args.before)
    result = {"before": args.before, "machine": platform.platform(),
              "cpu_count": os.cpu_count(), "load_before": os.getloadavg()}
    if "work" in parts:
        result["work"] = work_part(before)
    if "floor" in parts:
        if "work" not in result:
            result["work"] = work_part(before)
        result["floor"] = floor_part(result["work"], args.repeats)
    if "ratio" in parts:
        result["ratio"] = ratio_part(before, args.repeats)
    if "study" in parts:
        result["study"] = study_part()
    result["load_after"] = os.getloadavg()
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: what ranking many models costs, per model, and what the score cache saves.

    GBSTATS_DATA=... python benchmarks/many_models.py [--out benchmarks/results/many_models.json]

On name_gender's ranking items (Exp 3: 189 prompts x 4 options; studies.name_gender.ranking)
and in one run:
1. cold: each model scored into a fresh score cache, then ranked (`rank_many`), timed per
   model (loading included) and for the joint bootstrap;
2. warm: the same again on the filled cache (what a rerun of the study costs);
3. one more model: the list plus a model not yet scored; only that model is scored (the
   cache answers the others), which is what "adding a 21st model" costs.
The models: the embedded SmolLM2-135M; GPT-2 small's configuration (124M parameters,
random weights, SmolLM2's tokenizer: compute does not depend on the weights); a copy of
that folder under another name (same content: the cache answers it without scoring);
and, for step 3, GPT-2's configuration with another seed.
Scoring across models on Ray (`python -m models score --engine ray`) is measured by
benchmarks/sweep.py (results/sweep.json); its per-actor throughput is quoted here.
The load average at start is recorded: on a shared 2-core machine, seconds move with it.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DEFAULT_OUT = REPO / "benchmarks" / "results" / "many_models.json"


def gpt2_shape(folder: Path, tokenizer, seed: int) -> Path:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
                        eos_token_id=tokenizer.eos_token_id)
    GPT2LMHeadModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def ranking_run(names: list[str], cache: Path, data_dir: str | None):
    """A name_gender Run for these models, its loaded state, and the ranking spec."""
    from studies.discovery import get_study
    from studies.name_gender import steps
    from studies.pipeline import Run

    study = get_study("name_gender")
    argv = [f for n in names for f in ("--model", n)] + ["--cache-dir", str(cache)]
    if data_dir:
        argv += ["--data-dir", data_dir]
    run = Run(study, study.build_parser().parse_args(argv))
    return run, steps.load(run, None)


def timed_pass(names: list[str], cache: Path, data_dir: str | None) -> dict:
    from models.batching import scoring_totals
    from models.loading import clear_loaded_models
    from studies.name_gender.ranking import SPEC

    clear_loaded_models()  # every pass loads its models, as a new process would
    run, state = ranking_run(names, cache, data_dir)
    per_model = []
    scores = {}
    for name in names:
        before = scoring_totals()
        started = time.perf_counter()
        scores[name] = SPEC.item_scores(run, state, run.model(name))
        after = scoring_totals()
        per_model.append({"model": name, "seconds": time.perf_counter() - started,
                          "texts_scored": after["computed"] - before["computed"],
                          "texts_from_cache": after["cache_hits"] - before["cache_hits"]})
    from gbstats.alignment.ranking import rank_models
    from studies.ranking import ranking_table

    started = time.perf_counter()
    items = ranking_table(run, state, SPEC, names)
    people = SPEC.people(run, state)
    join_s = time.perf_counter() - started
    started = time.perf_counter()
    labels = [c for c in items.columns if c not in (*SPEC.item_keys, SPEC.cluster)]
    rank_models(items, people, models=labels, rating=SPEC.rating,
                participant=SPEC.participant, item_keys=SPEC.item_keys, cluster=SPEC.cluster,
                n_boot=SPEC.n_boot, seed=2023)
    return {"models": per_model, "join_s": join_s,
            "bootstrap_and_rank_sets_s": time.perf_counter() - started}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--data-dir", default=os.environ.get("GBSTATS_DATA"))
    args = p.parse_args(argv)
    from models.loading import load_scorer

    load_at_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tokenizer = load_scorer("smollm2-135m").tokenizer
        gpt2 = gpt2_shape(root / "gpt2-shape", tokenizer, seed=0)
        copy = root / "gpt2-shape-copy"
        shutil.copytree(gpt2, copy)
        extra = gpt2_shape(root / "gpt2-shape-seed1", tokenizer, seed=1)
        names = ["smollm2-135m", str(gpt2), str(copy)]
        cache = root / "cache"
        cold = timed_pass(names, cache, args.data_dir)
        warm = timed_pass(names, cache, args.data_dir)
        one_more = timed_pass(names + [str(extra)], cache, args.data_dir)
    sweep = REPO / "benchmarks" / "results" / "sweep.json"
    result = {
        "what": "name_gender's ranking items (Exp 3, 189 prompts x 4 options) for each model; "
                "cold = fresh score cache, warm = the same cache again, one_more = the list "
                "plus one model not yet scored",
        "load_average_at_start": load_at_start, "cpu_count": os.cpu_count(),
        "models": ["smollm2-135m (embedded)", "GPT-2 small configuration, random weights",
                   "a copy of that folder under another name",
                   "(one_more) GPT-2 small configuration, another seed"],
        "cold": cold, "warm": warm, "one_more": one_more,
        "ray_sweep": (json.loads(sweep.read_text()) if sweep.exists() else None),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("cold", "warm", "one_more")}, indent=1))
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()

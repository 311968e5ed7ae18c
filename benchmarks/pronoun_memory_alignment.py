"""Is pronoun_memory's "which participants does the model resemble" calibrated for 0/1 ratings?

    GBSTATS_DATA=... .venv/bin/python benchmarks/pronoun_memory_alignment.py \
        --model-scores REPORT/model_scores.csv [--sims 200]

Writes benchmarks/results/pronoun_memory_alignment.json.

The study compares the model's item accuracy (Exp 2: list x character, 144 items) with
women's and men's (gbstats.alignment.reliability.group_alignment: split-half
reliability, attenuation-corrected r, the difference of corrected r between the
groups). The calibration benchmark of that machinery (benchmarks/alignment_calibration.py)
simulates graded ratings; here every rating is a correct answer or not. This script
simulates at exactly the study's design: the real participants with their gender and
list, the real model scores, and ratings drawn as Bernoulli(p_item), where p_item is the
item's observed accuracy pooled over both groups. So the groups do not differ (the
truth of the comparison is 0), and each group's true item means are p_item (the truth
of a corrected r is the correlation of the model's scores with p_item over the items).
Per task: the share of simulations whose 95% interval of the difference excludes 0
(false-positive rate, nominal .05), and the coverage of each group's corrected-r
interval (nominal .95), with binomial 95% intervals of those shares.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def design(model_scores: Path):
    """(trials per task, model item scores per task) as the study builds them."""
    from gbstats.data.registry import load_dataset
    from gbstats.exclusions import ExclusionLog
    from studies.pronoun_memory import compare as K

    tables = load_dataset("gardner2023").tables
    log = ExclusionLog()
    people = K.people_long(tables, log)
    scored = pd.read_csv(model_scores, dtype={"experiment": str, "List": str})
    model = K.model_long(scored, tables)
    trials = people[(people["experiment"] == "2") & people["gender"].isin(K.GENDER_GROUPS)].copy()
    trials["item"] = trials["List"] + "|" + trials["Name"]
    items = model[model["experiment"] == "2"].assign(item=lambda d: d["List"] + "|" + d["Name"])
    out = {}
    for task in K.TASKS:
        t = trials[trials["task"] == task][["participant", "item", "gender", "accuracy"]]
        x = items[items["task"] == task][["item", "accuracy"]].rename(
            columns={"accuracy": "score"})
        out[task] = (t.reset_index(drop=True), x.reset_index(drop=True))
    return out


def share(hits: int, n: int) -> dict:
    from scipy.stats import binomtest

    ci = binomtest(hits, n).proportion_ci(0.95, method="exact")
    return {"share": hits / n, "ci_low": ci.low, "ci_high": ci.high, "n": n}


def simulate(trials: pd.DataFrame, x: pd.DataFrame, sims: int, seed: int) -> dict:
    from gbstats.alignment.reliability import group_alignment

    p_item = trials.groupby("item")["accuracy"].mean()
    truth = float(np.corrcoef(x.set_index("item")["score"].loc[p_item.index], p_item)[0, 1])
    rng = np.random.default_rng(seed)
    p = trials["item"].map(p_item).to_numpy()
    false_positive, covered, undefined = 0, {"female": 0, "male": 0}, 0
    for k in range(sims):
        drawn = trials.assign(accuracy=(rng.random(len(p)) < p).astype(float))
        rel, _, comparison = group_alignment(x, drawn, group="gender", score="score",
                                             rating="accuracy", item_keys=("item",),
                                             participant="participant", n_boot=50,
                                             seed=seed + 1 + k)
        c = comparison.iloc[0]
        if not (np.isfinite(c.ci_low) and np.isfinite(c.ci_high)):
            undefined += 1
            continue
        false_positive += int(c.ci_low > 0 or c.ci_high < 0)
        for r in rel.itertuples():
            covered[r.group] += int(r.ci_low <= truth <= r.ci_high)
    n = sims - undefined
    return {"true_corrected_r": truth, "n_items": int(len(p_item)),
            "raters_per_item": {g: float(trials[trials["gender"] == g].groupby("item")[
                "participant"].nunique().mean()) for g in ("female", "male")},
            "simulations": sims, "undefined": undefined,
            "false_positive_rate": share(false_positive, n),
            "coverage_corrected_r": {g: share(v, n) for g, v in covered.items()}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-scores", required=True, type=Path,
                        help="model_scores.csv of a `python -m studies.pronoun_memory` run")
    parser.add_argument("--sims", type=int, default=200)
    parser.add_argument("--seed", type=int, default=2023)
    parser.add_argument("--out", type=Path,
                        default=REPO / "benchmarks" / "results" / "pronoun_memory_alignment.json")
    args = parser.parse_args(argv)
    start = time.process_time()
    result = {"generated_by": "benchmarks/pronoun_memory_alignment.py", "sims": args.sims,
              "seed": args.seed, "machine": platform.platform(), "cpu_count": os.cpu_count(),
              "design": "Exp 2, ratings Bernoulli(pooled item accuracy): the groups do not "
                        "differ; real participants, genders, lists and model scores",
              "tasks": {}}
    for k, (task, (trials, x)) in enumerate(design(args.model_scores).items()):
        result["tasks"][task] = simulate(trials, x, args.sims, args.seed + 1000 * k)
        print(task, json.dumps(result["tasks"][task]), flush=True)
    result["cpu_seconds"] = time.process_time() - start
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

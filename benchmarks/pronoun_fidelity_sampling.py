"""Benchmark: how much a stratified sample of pronoun_fidelity's design widens its intervals.

    python benchmarks/pronoun_fidelity_sampling.py frames --out F.csv.gz
    python benchmarks/pronoun_fidelity_sampling.py score --frames F.csv.gz --out C.csv.gz \
        [--device cuda] [--batch-size 1024]
    python benchmarks/pronoun_fidelity_sampling.py measure --choices C.csv.gz \
        [--blocks 20,30,40,45,50,55] [--replicates 2] [--glmm-widths W.json]
    python benchmarks/pronoun_fidelity_sampling.py glmm --choices C.csv.gz --blocks 55 \
        --out W.json
    python benchmarks/pronoun_fidelity_sampling.py add-glmm --glmm-widths W.json

The study's full design (3 seeds x 2,160 instances x 0-5 distractors, issue 19)
is 38,880 sampled instances, 147,576 scored texts: about an hour of scoring on
the 2-core development machine. Its default run scores a stratified sample
instead (`instances.sample_same_cells`): in every seed the full-design
instances of the same cells, those of the first seed's first B of 60 balanced
blocks of 36 (case x pronoun set x distractor pronoun, each once per block).
The sample is nested in the full design, so scoring the full design once
gives the sample's results too.

Four steps, so that the scoring can run where it is fast:
- `frames` writes the full design's distinct instances (and the task sentences,
  for the context-free choices) as a table of texts;
- `score` scores them with the embedded model (smollm2-135m) on a device and
  writes one row per instance: the forced choice and the 4 probabilities
  (chunked, the file rewritten after each chunk);
- `measure` joins the choices back onto the full design, fits the headline
  intervals on it and on samples of it at B blocks (the default's cells; the
  cells of the second and third seeds' first blocks, as balanced, as
  replicates; and each seed's own first blocks, the older sampler, whose seeds
  hold different occupations), and writes the width ratios (sample / full
  design) into benchmarks/results/pronoun_fidelity.json under `sampling`;
- `glmm` fits the penalised GLMM (blme::bglmer, the study's leading engine) on
  the full design and the default's sample at the given B, one fit at a time
  (minutes each on a loaded 2-core CPU); `measure --glmm-widths` adds it.

The headline intervals: the distractor effects (the change in log-odds of a
correct answer with k distractors against none, per pronoun set; Wald 95%
intervals) of the logistic regression with the GLMM's fixed terms (seconds per
fit, so every sample size and replicate gets one) and, from `glmm`, of the
GLMM itself; and Welch's intervals of the paper's comparisons at 0 and 5
distractors. A benchmark, not a test: nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
RESULTS = REPO / "benchmarks" / "results" / "pronoun_fidelity.json"
BLOCK = 36


def full_design(data_dir=None, seed: int = 2023):
    """(task, context, samples) of the study's full default design."""
    from studies.pronoun_fidelity.steps import FULL_PER_SEED, draw_samples, load_tables

    task, context, _ = load_tables(argparse.Namespace(data_dir=data_dir))
    samples = draw_samples(task, context, list(range(6)), FULL_PER_SEED, seed)
    return task, context, samples


def cmd_frames(args) -> int:
    import pandas as pd

    from studies.pronoun_fidelity import analysis as A

    task, _, samples = full_design(args.data_dir, args.seed)
    unique = samples.drop_duplicates("instance")[["instance", "case", "frame"]]
    no_context = A.no_context_frames(task).rename(columns={"item": "instance"})
    table = pd.concat([unique.assign(kind="instance"),
                       no_context[["instance", "case", "frame"]].assign(kind="no_context")],
                      ignore_index=True)
    table.to_csv(args.out, index=False)
    print(f"{len(unique)} distinct instances, {len(no_context)} task sentences -> {args.out}")
    return 0


def cmd_score(args) -> int:
    import tempfile

    import pandas as pd

    from models.loading import load_scorer
    from studies.pronoun_fidelity import analysis as A

    frames = pd.read_csv(args.frames)
    t0 = time.perf_counter()
    lm = load_scorer(args.model, device=args.device, dtype=args.dtype)
    lm.model
    load_seconds = time.perf_counter() - t0
    parts, seconds = [], {}
    # the task sentences first, then the instances in design order (0 distractors first) in
    # chunks, the file rewritten after each: a run stopped early leaves complete numbers of
    # distractors behind
    frames = frames.sort_values("kind", key=lambda k: k != "no_context", kind="stable")
    with tempfile.TemporaryDirectory() as cache:
        for kind, rows in frames.groupby("kind", sort=False):
            t0 = time.perf_counter()
            for start in range(0, len(rows), args.chunk):
                scored = A.score_frames(rows.iloc[start:start + args.chunk], lm, item="instance",
                                        cache_dir=cache, progress=False,
                                        batch_size=args.batch_size)
                parts.append(A.choices(scored, item="instance").assign(kind=kind))
                pd.concat(parts, ignore_index=True).to_csv(args.out, index=False)
                print(f"{kind}: {min(start + args.chunk, len(rows))} of {len(rows)} frames, "
                      f"{time.perf_counter() - t0:.1f} s", flush=True)
            seconds[kind] = time.perf_counter() - t0
    import torch

    record = {"model": args.model, "device": args.device, "dtype": args.dtype,
              "device_name": (torch.cuda.get_device_name() if args.device.startswith("cuda")
                              else platform.processor() or platform.machine()),
              "batch_size": args.batch_size, "model_load_seconds": round(load_seconds, 2),
              "scoring_seconds": {k: round(v, 2) for k, v in seconds.items()},
              "n_frames": {k: int(v) for k, v in frames["kind"].value_counts().items()},
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    Path(str(args.out) + ".json").write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))
    return 0


# --- measure -------------------------------------------------------------------------

def first_blocks(samples, blocks: int):
    """The default's sample: each (distractors, seed) part's first `blocks` blocks of 36."""
    position = samples.groupby(["n_distractors", "seed"]).cumcount()
    return samples[position < blocks * BLOCK]


def same_cells(results, task, context, blocks: int, seed: int, reference: int = 0):
    """The study's stratified sample (`instances.sample_same_cells`): every seed's full-design
    instances in the cells of seed `reference`'s first `blocks` blocks (reference 0 is the
    default's sample; 1 and 2 are replicates with other cells, as balanced)."""
    import pandas as pd

    from studies.pronoun_fidelity.instances import sample_same_cells
    from studies.pronoun_fidelity.steps import N_SEEDS

    keys = []
    order = [(reference + i) % N_SEEDS for i in range(N_SEEDS)]
    for n in sorted(results["n_distractors"].unique()):
        drawn = sample_same_cells(task, context, int(n), blocks * BLOCK,
                                  [[seed, int(n), k] for k in order])
        keys += [(int(n), k, inst.instance_id) for k, sample in zip(order, drawn)
                 for inst in sample]
    keys = pd.DataFrame(keys, columns=["n_distractors", "seed", "instance"])
    out = results.merge(keys, on=["n_distractors", "seed", "instance"], validate="one_to_one")
    assert len(out) == len(keys)
    return out


def headline(results, *, glmm: bool) -> dict:
    """{interval name: (estimate, width)} of the study's headline intervals on `results`:
    Welch's intervals, the distractor effects of the fixed-effects logistic regression
    ("logit": the GLMM's fixed part, seconds to fit) and, with `glmm`, of the penalised GLMM
    (blme::bglmer, the study's leading engine; minutes per fit on a loaded 2-core CPU)."""
    import re

    import numpy as np
    import statsmodels.formula.api as smf

    from studies.pronoun_fidelity import analysis as A

    out = {}
    welch = A.welch_table(results)
    for r in welch.itertuples():
        if r.ci_high == r.ci_high:  # tested
            out[f"welch {r.n_distractors} {r.level_a}-{r.level_b}"] = (
                r.estimate, r.ci_high - r.ci_low)
    data = A.glmm_rows(results)
    logit = smf.logit("correct ~ pronoun_set + pronoun_set:distractors + case",
                      data=data).fit(disp=False, method="newton", maxiter=100)
    ci = logit.conf_int()
    for term in logit.params.index:
        m = re.fullmatch(r"pronoun_set\[(\w+)\]:distractors\[T\.(\d+)\]", term)
        if m:
            out[f"logit {m[1]}:{m[2]}"] = (float(logit.params[term]),
                                           float(ci.loc[term, 1] - ci.loc[term, 0]))
    if glmm:
        from gbstats.mixed.lmm import fit_glmm

        fit = fit_glmm(A.GLMM_FORMULA, data, family="binomial", penalised=True)
        for r in A.distractor_effects(fit).itertuples():
            out[f"blme {r.pronoun_set}:{r.n_distractors}"] = (r.estimate,
                                                              r.ci_high - r.ci_low)
    return {k: v for k, v in out.items() if np.isfinite(v[1])}


def summarise(full: dict, sampled: dict) -> dict:
    import numpy as np

    by_family: dict[str, list[float]] = {}
    for name, (_, width) in sampled.items():
        if name in full and full[name][1] > 0 and np.isfinite(width):
            by_family.setdefault(name.split()[0], []).append(width / full[name][1])
    return {family: {"n_intervals": len(r), "median_ratio": float(np.median(r)),
                     "max_ratio": float(np.max(r)), "min_ratio": float(np.min(r))}
            for family, r in by_family.items()}


def design_results(args):
    """The full design's sampled instances with the scored choices joined on."""
    import pandas as pd

    from studies.pronoun_fidelity import analysis as A

    choices = pd.read_csv(args.choices)
    _, _, samples = full_design(args.data_dir, args.seed)
    predicted = choices[choices["kind"] == "instance"].drop(columns="kind")
    results = A.join_predictions(samples, predicted).assign(model=args.model)
    if len(results) != len(samples):
        raise SystemExit(f"the choices cover {len(results)} of {len(samples)} sampled instances")
    return results


def cmd_glmm(args) -> int:
    """The penalised GLMM's distractor effects on the full design and on first-block samples,
    one fit at a time, the file rewritten after each (minutes per fit under load)."""
    results = design_results(args)
    task, context, _ = full_design(args.data_dir, args.seed)
    # a fit already in the file (same choices) is kept: a stopped run goes on where it was
    out = json.loads(Path(args.out).read_text()) if Path(args.out).exists() else {}
    for blocks in [60] + [int(b) for b in args.blocks.split(",")]:
        label = "full" if blocks == 60 else f"the default's sample at {blocks} blocks"
        if label in out:
            continue
        t0 = time.perf_counter()
        sample = results if blocks == 60 else same_cells(results, task, context, blocks,
                                                         args.seed)
        widths = headline(sample, glmm=True)
        out[label] = {"blocks": blocks, "seconds": time.perf_counter() - t0,
                      "intervals": widths}
        print(blocks, round(time.perf_counter() - t0), flush=True)
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


def glmm_summary(widths: dict) -> dict:
    """Width ratios (sample / full design) of the GLMM's and the logit's distractor effects,
    and on the full design the GLMM's widths over the logit's (is the logit a fair stand-in
    for the GLMM's intervals?)."""
    import numpy as np

    full = widths["full"]["intervals"]
    ratio = [full[k][1] / full["logit " + k.split(" ", 1)[1]][1] for k in full
             if k.startswith("blme ") and "logit " + k.split(" ", 1)[1] in full]
    out = {"full_design_blme_over_logit_width": {
        "n_intervals": len(ratio), "median": float(np.median(ratio)),
        "min": float(np.min(ratio)), "max": float(np.max(ratio))}}
    out.update({label: {"blocks": w["blocks"], "fit_seconds": round(w["seconds"], 1),
                        "by_family": summarise(full, w["intervals"]),
                        "widths": {k: v[1] for k, v in w["intervals"].items()}}
                for label, w in widths.items()})
    return out


def cmd_add_glmm(args) -> int:
    """Put the `glmm` step's output into the `sampling` record without refitting the rest."""
    doc = json.loads(RESULTS.read_text())
    doc["sampling"]["glmm"] = glmm_summary(json.loads(Path(args.glmm_widths).read_text()))
    RESULTS.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps({k: v.get("by_family", v) for k, v in doc["sampling"]["glmm"].items()},
                     indent=1))
    return 0


def cmd_measure(args) -> int:
    results = design_results(args)
    task, context, _ = full_design(args.data_dir, args.seed)
    blocks = [int(b) for b in args.blocks.split(",")]
    t0 = time.perf_counter()
    full = headline(results, glmm=False)
    full_seconds = time.perf_counter() - t0
    print(f"full design: {len(full)} intervals in {full_seconds:.0f} s", flush=True)
    rows = []
    for b in blocks:
        draws = [("same cells in every seed, from seed 1's first blocks (the default's "
                  "sample)", same_cells(results, task, context, b, args.seed))]
        draws += [(f"same cells in every seed, from seed {r + 1}'s first blocks",
                   same_cells(results, task, context, b, args.seed, reference=r))
                  for r in range(1, 1 + args.replicates)]
        draws += [("each seed's own first blocks (other cells per seed)",
                   first_blocks(results, b))]
        for label, sample in draws:
            sampled = headline(sample, glmm=False)
            summary = summarise(full, sampled)
            rows.append({"blocks": b, "per_seed": b * BLOCK, "fraction": b / 60,
                         "draw": label, "n_sampled": len(sample),
                         "n_distinct": int(sample["instance"].nunique()),
                         "by_family": summary,
                         "widths": {k: v[1] for k, v in sampled.items()}})
            print(b, label, json.dumps(summary), flush=True)
    record = {
        "what": "width of the study's headline 95% intervals on a stratified sample of the "
                "full design over their width on the full design, at B of 60 balanced blocks "
                "of 36: the default's sampler (the same cells in every seed, those of seed "
                "1's first B blocks), two replicates with the cells of seed 2's and seed 3's "
                "first B blocks, and each seed's own first B blocks (the older sampler); "
                "intervals: the distractor effects of the logistic regression with the "
                "GLMM's fixed terms ('logit') and Welch's intervals ('welch'); the full "
                "design's choices scored once (see `scoring`)",
        "model": args.model, "seed": args.seed, "n_sampled_full": len(results),
        "n_distinct_full": int(results["instance"].nunique()),
        "accuracy_full": float(results["correct"].mean()),
        "full_widths": {k: v[1] for k, v in full.items()},
        "full_estimates": {k: v[0] for k, v in full.items()},
        "rows": rows,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "load_average_at_end": os.getloadavg()},
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if args.glmm_widths:
        record["glmm"] = glmm_summary(json.loads(Path(args.glmm_widths).read_text()))
    scoring = Path(str(args.choices) + ".json")
    if scoring.exists():
        record["scoring"] = json.loads(scoring.read_text())
    if args.note:
        record["note"] = args.note
    doc = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    doc["sampling"] = record
    RESULTS.write_text(json.dumps(doc, indent=2) + "\n")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("frames", "score", "measure"):
        s = sub.add_parser(name)
        s.add_argument("--data-dir", default=None)
        s.add_argument("--seed", type=int, default=2023)
        s.add_argument("--model", default="smollm2-135m")
    sub.choices["frames"].add_argument("--out", required=True)
    score = sub.choices["score"]
    score.add_argument("--frames", required=True)
    score.add_argument("--out", required=True)
    score.add_argument("--device", default="cpu")
    score.add_argument("--dtype", default="float32")
    score.add_argument("--batch-size", type=int, default=32)
    score.add_argument("--chunk", type=int, default=4000)
    measure = sub.choices["measure"]
    measure.add_argument("--choices", required=True)
    measure.add_argument("--blocks", default="6,12,20,30,40,45,50,55")
    measure.add_argument("--replicates", type=int, default=2, choices=[0, 1, 2])
    measure.add_argument("--glmm-widths", default=None,
                         help="the `glmm` step's output, summarised into the record")
    sub.add_parser("add-glmm").add_argument("--glmm-widths", required=True)
    glmm = sub.add_parser("glmm")
    for flag, default in (("--data-dir", None), ("--seed", 2023), ("--model", "smollm2-135m")):
        glmm.add_argument(flag, default=default, type=int if flag == "--seed" else str)
    glmm.add_argument("--choices", required=True)
    glmm.add_argument("--blocks", default="50,30")
    glmm.add_argument("--out", required=True)
    measure.add_argument("--note", default="")
    args = p.parse_args(argv)
    return {"frames": cmd_frames, "score": cmd_score, "measure": cmd_measure,
            "glmm": cmd_glmm, "add-glmm": cmd_add_glmm}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())

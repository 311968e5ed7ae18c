"""Benchmark: the embedded SmolLM2-135M under transformers 4.57 (.venv) and 5.x (.venv-tf5),
on the same sentences: scoring speed and agreement (issue 42, item 5, "should the default
stack move to 5.x?").

    python benchmarks/transformers_stacks.py [--n 300] [--repeats 3]

Runs itself once in each environment (`--one-stack OUT`, a child process per venv, one
after the other, never at the same time) and writes
benchmarks/results/transformers_stacks.json: per stack the versions, the time to load the
tokenizer and the weights (from the converted copy in the model cache, as every run after
the first reads them), sentences per second (the best of `--repeats` timed passes of
models.causal.score_sentences with the cache off, after one untimed warm-up pass), and the
largest difference in summed log-probability per sentence between the stacks.

The sentences are benchmarks/scoring.py's study-like sentences (distinct, built from
frames as study stimuli are). Load on the machine moves the throughputs; the two stacks run
back to back, so compare them with each other, not with other files' numbers.
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STACKS = {"transformers 4.x (.venv, the default)": REPO / ".venv" / "bin" / "python",
          "transformers 5.x (.venv-tf5)": REPO / ".venv-tf5" / "bin" / "python"}
OUT = REPO / "benchmarks" / "results" / "transformers_stacks.json"


def sentences(n: int) -> list[str]:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from scoring import study_like_sentences

    # sorted: study_like_sentences draws from a set, whose order depends on the process's
    # string hashing, so two processes would otherwise score them in different orders
    return sorted(study_like_sentences(n, seed=42))


def one_stack(n: int, repeats: int, out: Path) -> None:
    """Score in this process's environment and write what was measured to `out`."""
    sys.path.insert(0, str(REPO))
    import torch
    import transformers

    from models import load_scorer, score_sentences
    from models.loading import clear_loaded_models

    torch.set_num_threads(2)
    texts = sentences(n)
    clear_loaded_models()
    start = time.perf_counter()
    lm = load_scorer("smollm2-135m")
    lm.tokenizer
    tokenizer_s = time.perf_counter() - start
    start = time.perf_counter()
    lm.model
    weights_s = time.perf_counter() - start
    score_sentences(texts[:20], lm=lm, use_cache=False)  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        table = score_sentences(texts, lm=lm, use_cache=False)
        times.append(time.perf_counter() - start)
    out.write_text(json.dumps({
        "transformers": transformers.__version__, "torch": torch.__version__,
        "tokenizer_load_s": round(tokenizer_s, 2), "weights_load_s": round(weights_s, 2),
        "score_s": [round(t, 3) for t in times],
        "sentences_per_s": round(len(texts) / min(times), 1),
        "n_tokens": int(table["n_tokens"].sum()),
        "n_tokens_each": [int(n) for n in table["n_tokens"]],
        "texts": texts, "logprob": [float(x) for x in table["logprob"]]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--one-stack", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if args.one_stack:
        one_stack(args.n, args.repeats, args.one_stack)
        return
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, python in STACKS.items():
            part = Path(tmp) / f"{len(runs)}.json"
            subprocess.run([str(python), __file__, "--n", str(args.n), "--repeats",
                            str(args.repeats), "--one-stack", str(part)], check=True)
            runs[label] = json.loads(part.read_text())
    (old, new) = runs.values()
    if old["texts"] != new["texts"]:
        raise SystemExit("the two stacks scored different sentences; nothing to compare")
    diffs = [abs(a - b) for a, b in zip(old["logprob"], new["logprob"])]
    per_token = max(d / n for d, n in zip(diffs, old["n_tokens_each"]))
    result = {
        "what": "embedded smollm2-135m, float32 on the CPU, models.causal.score_sentences with "
                "the cache off, the same sentences under transformers 4.x and 5.x",
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "torch_threads": 2},
        "n_sentences": args.n, "repeats": args.repeats,
        "stacks": {label: {k: v for k, v in run.items()
                           if k not in ("logprob", "texts", "n_tokens_each")}
                   for label, run in runs.items()},
        "agreement": {"max_abs_logprob_difference_nats": max(diffs),
                      "max_abs_difference_per_token_nats": per_token,
                      "mean_abs_logprob_difference_nats": sum(diffs) / len(diffs),
                      "same_token_counts": old["n_tokens_each"] == new["n_tokens_each"]},
        "speed_ratio_5x_over_4x": round(new["sentences_per_s"] / old["sentences_per_s"], 3),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

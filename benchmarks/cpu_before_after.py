"""CPU scoring time of two source trees, interleaved (issue 26: no CPU figure may get worse).

    python benchmarks/cpu_before_after.py BEFORE_TREE AFTER_TREE [--n 300] [--rounds 3]

Each round runs one fresh process per tree, before then after, so both see
the machine's load of the moment (DESIGN.md "Noise"). A process times, with
the embedded smollm2-135m, `score_sentences` on `--n` study-like sentences
(benchmarks/scoring.py's generator, seed 1) and, with that script's BERT-small
of random weights, `pll_sentences` on n/4 sentences (seed 2), each the
minimum of two runs, cache off, at each tree's CPU defaults. The summed
scores are reported too: both trees must compute the same numbers.
The ratio after/before of the per-tree minimum over rounds is what counts.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = textwrap.dedent("""
    import importlib.util, json, sys, tempfile, time
    from pathlib import Path
    n, tree = int(sys.argv[1]), sys.argv[2]
    spec = importlib.util.spec_from_file_location("bs", Path(tree) / "benchmarks" / "scoring.py")
    bs = importlib.util.module_from_spec(spec); spec.loader.exec_module(bs)
    from models.causal import score_sentences
    from models.loading import load_scorer
    from models.masked import pll_sentences
    texts = bs.study_like_sentences(n, seed=1)
    lm = load_scorer("smollm2-135m"); lm.model
    score_sentences(texts[:16], lm=lm, use_cache=False)
    causal = []
    for _ in range(2):
        s = time.perf_counter(); out = score_sentences(texts, lm=lm, use_cache=False)
        causal.append(time.perf_counter() - s)
    pll_texts = bs.study_like_sentences(n // 4, seed=2)
    bert = load_scorer(str(bs.build_bert_small(Path(tempfile.mkdtemp()) / "b", pll_texts))); bert.model
    pll = []
    for _ in range(2):
        s = time.perf_counter(); pout = pll_sentences(pll_texts, lm=bert, use_cache=False, max_rows=128)
        pll.append(time.perf_counter() - s)
    print(json.dumps({"causal_s": min(causal), "pll_s": min(pll),
                      "causal_sum": float(out.logprob.sum()), "pll_sum": float(pout.logprob.sum())}))
""")


def run(tree: Path, n: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, "-c", CHILD, str(n), str(tree)], cwd=tree, env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path)
    p.add_argument("--n", type=int, default=300)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "cpu_before_after.json")
    args = p.parse_args(argv)
    rounds = []
    for _ in range(args.rounds):
        rounds.append({"before": run(args.before, args.n), "after": run(args.after, args.n)})
    best = {side: {k: min(r[side][k] for r in rounds) for k in ("causal_s", "pll_s")}
            for side in ("before", "after")}
    result = {"n_causal": args.n, "n_pll": args.n // 4, "rounds": rounds, "best": best,
              "causal_after_over_before": best["after"]["causal_s"] / best["before"]["causal_s"],
              "pll_after_over_before": best["after"]["pll_s"] / best["before"]["pll_s"],
              "load_average_at_end": list(os.getloadavg()), "cores": os.cpu_count(),
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()

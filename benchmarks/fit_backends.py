"""Time fit_lmm / fit_glmm on lme4 and statsmodels, and fit_bayes (PyMC), in one run.

Two shapes, simulated here with a fixed seed:
  lmm_335    the singular-they study: 335 rows, 2 x 2 cells (close/distant x
             gendered no/yes) in 84 frames, one row missing,
             surprisal ~ close + gendered + (1|frame);
  glmm_7500  the Cog-GB-Eval QA size: 30 participants x 250 items each from
             1,500 items (each item seen by 5 participants) = 7,500 trials,
             correct ~ stereotype + (1|participant) + (1|item), binomial.

Each repetition runs the backends back to back (lme4, statsmodels, pymc), so
load on this shared machine hits them alike; the minimum over repetitions is
reported, with ratios to lme4 taken within this run. R's start-up (one tiny
lme4 fit) is timed apart: a session pays it once. statsmodels has no ML GLMM,
so its glmm entry records the error fit_glmm gives. PyMC runs through
gbstats.mixed.bayes.fit_bayes with its defaults (sampler, draws, chains), loo=False.

    .venv/bin/python benchmarks/fit_backends.py [--reps-lmm 5] [--reps-glmm 3] [--reps-pymc-lmm 3] [--reps-pymc-glmm 1]

writes benchmarks/results/fit_backends.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd

from gbstats.errors import GbstatsError
from gbstats.mixed.lmm import fit_glmm, fit_lmm

OUT = Path(__file__).resolve().parent / "results" / "fit_backends.json"
LMM_FORMULA = "surprisal ~ close + gendered + (1|frame)"
GLMM_FORMULA = "correct ~ stereotype + (1|participant) + (1|item)"


def singular_they_shape(seed: int = 11) -> pd.DataFrame:
    """84 frames x 4 cells = 336 rows, minus one: 335."""
    rng = np.random.default_rng(seed)
    n_frames = 84
    frame = np.repeat(np.arange(n_frames), 4)
    close = np.tile(["close", "close", "distant", "distant"], n_frames)
    gendered = np.tile(["no", "yes", "no", "yes"], n_frames)
    surprisal = (9.0 + 0.6 * (close == "distant") + 1.2 * (gendered == "yes")
                 + rng.normal(scale=1.5, size=n_frames)[frame] + rng.normal(scale=1.0, size=frame.size))
    df = pd.DataFrame({"frame": [f"frame{f:03d}" for f in frame], "close": close,
                       "gendered": gendered, "surprisal": surprisal})
    return df.drop(index=rng.integers(len(df))).reset_index(drop=True)


def qa_shape(seed: int = 12, n_participants: int = 30, n_items: int = 1500,
             per_participant: int = 250) -> pd.DataFrame:
    """Participant p answers items p*50 ... p*50 + 249 (mod 1,500): 5 answers per item."""
    rng = np.random.default_rng(seed)
    step = n_items // n_participants
    participant = np.repeat(np.arange(n_participants), per_participant)
    item = (participant * step + np.tile(np.arange(per_participant), n_participants)) % n_items
    stereotype = np.where(item % 2 == 0, "anti", "pro")
    eta = (0.8 + 0.7 * (stereotype == "pro") + rng.normal(scale=0.6, size=n_participants)[participant]
           + rng.normal(scale=1.0, size=n_items)[item])
    correct = (rng.random(item.size) < 1 / (1 + np.exp(-eta))).astype(int)
    return pd.DataFrame({"participant": [f"p{p:02d}" for p in participant],
                         "item": [f"q{i:04d}" for i in item], "stereotype": stereotype,
                         "correct": correct})


def run_fit(backend: str, formula: str, data: pd.DataFrame, glmm: bool):
    if backend == "pymc":
        from gbstats.mixed.bayes import fit_bayes

        return fit_bayes(formula, data, family="bernoulli" if glmm else "gaussian", loo=False)
    if glmm:
        return fit_glmm(formula, data, backend=backend)
    return fit_lmm(formula, data, backend=backend)


def time_once(backend: str, formula: str, data: pd.DataFrame, glmm: bool) -> dict:
    start = time.perf_counter()
    try:
        result = run_fit(backend, formula, data, glmm)
    except GbstatsError as exc:
        return {"unsupported": str(exc)}
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "estimates": dict(zip(result.coefs["term"], result.coefs["estimate"].round(4))),
            "se": dict(zip(result.coefs["term"], result.coefs["se"].round(4))),
            "warnings": result.warnings}


def run_case(name: str, formula: str, data: pd.DataFrame, glmm: bool, reps: int, reps_pymc: int) -> dict:
    backends = ["lme4", "statsmodels", "pymc"]
    runs = {b: [] for b in backends}
    for rep in range(max(reps, reps_pymc)):
        for b in backends:
            if rep >= (reps_pymc if b == "pymc" else reps):
                continue
            if runs[b] and "unsupported" in runs[b][0]:
                continue
            r = time_once(b, formula, data, glmm)
            shown = f"{r['seconds']:.2f} s" if "seconds" in r else "unsupported"
            print(f"{name} rep {rep} {b}: {shown}", flush=True)
            runs[b].append(r)
    summary = {}
    for b, rs in runs.items():
        if rs and "unsupported" in rs[0]:
            summary[b] = {"unsupported": rs[0]["unsupported"]}
            continue
        times = [r["seconds"] for r in rs]
        summary[b] = {"min_seconds": min(times), "all_seconds": times, "reps": len(times),
                      "estimates": rs[0]["estimates"], "se": rs[0]["se"], "warnings": rs[0]["warnings"]}
    base = summary["lme4"]["min_seconds"]
    ratios = {f"{b}_over_lme4": s["min_seconds"] / base for b, s in summary.items()
              if b != "lme4" and "min_seconds" in s}
    return {"formula": formula, "nobs": len(data), "backends": summary, "ratios": ratios}


def r_startup_seconds() -> float:
    """One tiny lme4 fit in a fresh session: R and pymer4 start-up, paid once."""
    tiny = singular_they_shape(seed=99).head(40)
    start = time.perf_counter()
    fit_lmm(LMM_FORMULA, tiny, backend="lme4")
    return time.perf_counter() - start


def _pymc_sampler() -> str:
    from gbstats.mixed import bayes

    return getattr(bayes, "DEFAULT_SAMPLER", "unknown")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps-lmm", type=int, default=5)
    ap.add_argument("--reps-glmm", type=int, default=3)
    # PyMC's first fit in a process compiles the model (minutes under load);
    # later fits of the same shape reuse PyTensor's compile cache.
    ap.add_argument("--reps-pymc-lmm", type=int, default=3)
    ap.add_argument("--reps-pymc-glmm", type=int, default=1)
    args = ap.parse_args(argv)
    startup = r_startup_seconds()
    print(f"R start-up + first tiny fit: {startup:.1f} s", flush=True)
    cases = {
        "lmm_335": run_case("lmm_335", LMM_FORMULA, singular_they_shape(), False,
                            args.reps_lmm, args.reps_pymc_lmm),
        "glmm_7500": run_case("glmm_7500", GLMM_FORMULA, qa_shape(), True,
                              args.reps_glmm, args.reps_pymc_glmm),
    }
    glmm_lme4 = cases["glmm_7500"]["backends"]["lme4"]["min_seconds"]
    out = {
        "benchmark": "fit_backends",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "timing": "wall clock of one fit_lmm/fit_glmm/fit_bayes call (data checks, model "
                  "build, fit, tidy tables); min over reps, backends interleaved per rep",
        "r_startup_seconds": startup,
        "pymc_sampler": _pymc_sampler(),
        "lme4_glmm_under_60s": glmm_lme4 < 60,
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version(), "load_avg_at_end": os.getloadavg()},
        "versions": {p: version(p) for p in ["pymer4", "rpy2", "statsmodels", "pymc", "bambi"]},
        "cases": cases,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()

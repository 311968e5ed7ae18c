"""Coverage of gbstats.mixed.population's intervals by simulation (issue 31).

A binomial GLMM with crossed random intercepts, people x items, an item-level
predictor x and a two-level condition:

    logit P(y = 1) = b0 + b1 x + b2 [cond = b] + u_person + u_item,
    u_person ~ N(0, s_p^2), u_item ~ N(0, s_i^2)

The true population-averaged slope of x at x = 0 (condition a) and the true
population-averaged condition difference at x = 0 are computed from the true parameters
by Gauss-Hermite quadrature (`marginal_probability`, checked against adaptive
quadrature in tests/stats/test_population_averaged.py). Each panel is fitted with lme4
(`fit_glmm`), and `population_averaged_contrast` gives both effects with 95% intervals;
the benchmark counts how often they cover the truth, and the same for the conditional
(coefficient) intervals. The marginal interval treats the variances as known, so it is
expected to be a little narrow; this measures by how much.

    nice -n 10 python benchmarks/population_averaged_calibration.py --panels 200 \
        --out benchmarks/results/population_averaged_calibration.json
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit, logit

from gbstats.mixed.population import (cells, marginal_probability, population_averaged_contrast,
                                      slope_rows)

OUT = Path(__file__).resolve().parent / "results" / "population_averaged_calibration.json"
TRUTH = dict(b0=-0.4, b1=0.8, b2=0.9, sd_person=1.2, sd_item=0.6)
DESIGN = dict(n_people=60, n_items=24)
FORMULA = "y ~ x + cond + (1|participant) + (1|item)"


def true_effects() -> dict:
    sigma2 = TRUTH["sd_person"] ** 2 + TRUTH["sd_item"] ** 2
    h = 1e-4
    up, _ = marginal_probability(np.array([TRUTH["b0"] + TRUTH["b1"] * h]), sigma2)
    down, _ = marginal_probability(np.array([TRUTH["b0"] - TRUTH["b1"] * h]), sigma2)
    a, _ = marginal_probability(np.array([TRUTH["b0"]]), sigma2)
    b, _ = marginal_probability(np.array([TRUTH["b0"] + TRUTH["b2"]]), sigma2)
    return {"slope": {"conditional": TRUTH["b1"],
                      "marginal": float((logit(up) - logit(down))[0] / (2 * h))},
            "condition": {"conditional": TRUTH["b2"], "marginal": float((logit(b) - logit(a))[0])}}


def panel(rng: np.random.Generator) -> pd.DataFrame:
    n_p, n_i = DESIGN["n_people"], DESIGN["n_items"]
    people, items = np.repeat(np.arange(n_p), n_i), np.tile(np.arange(n_i), n_p)
    x_item = rng.normal(size=n_i)
    u_p, u_i = rng.normal(0, TRUTH["sd_person"], n_p), rng.normal(0, TRUTH["sd_item"], n_i)
    cond = rng.random(n_p * n_i) < 0.5
    eta = (TRUTH["b0"] + TRUTH["b1"] * x_item[items] + TRUTH["b2"] * cond + u_p[people]
           + u_i[items])
    return pd.DataFrame({"participant": [f"p{p}" for p in people],
                         "item": [f"i{i}" for i in items], "x": x_item[items],
                         "cond": np.where(cond, "b", "a"),
                         "y": (rng.random(n_p * n_i) < expit(eta)).astype(int)})


def rate(hits) -> dict:
    hits = np.asarray(hits, dtype=bool)
    n, k = hits.size, int(hits.sum())
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    return {"rate": k / n, "n_panels": n, "mc_se": float(np.sqrt(k / n * (1 - k / n) / n)),
            "exact_ci95": [float(ci.low), float(ci.high)]}


def main(argv=None) -> None:
    from gbstats.mixed.lmm import fit_glmm

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--panels", type=int, default=200)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    truth = true_effects()
    hits = {f"{e}_{s}": [] for e in truth for s in ("conditional", "marginal")}
    estimates = {k: [] for k in hits}
    warned, start = 0, time.time()
    for k in range(args.panels):
        fit = fit_glmm(FORMULA, panel(np.random.default_rng([args.seed, k])), backend="lme4")
        warned += bool(fit.warnings)
        specs = {"slope": slope_rows(pd.DataFrame({"x": [0.0], "cond": ["a"]}), "x"),
                 "condition": (cells({"x": [0.0], "cond": ["a", "b"]}), np.array([-1.0, 1.0]))}
        for effect, (rows, weights) in specs.items():
            out = population_averaged_contrast(fit, rows, weights)
            for scale, key in (("conditional", "conditional"), ("marginal", "marginal")):
                target = truth[effect][scale]
                hits[f"{effect}_{scale}"].append(
                    out[f"{key}_ci_low"] <= target <= out[f"{key}_ci_high"])
                estimates[f"{effect}_{scale}"].append(out[key])
        if (k + 1) % 20 == 0 or k + 1 == args.panels:
            result = {"what": __doc__.split("\n\n")[0], "truth_parameters": TRUTH,
                      "design": DESIGN, "formula": FORMULA, "true_effects": truth,
                      "coverage": {name: rate(v) for name, v in hits.items()},
                      "mean_estimates": {n: float(np.mean(v)) for n, v in estimates.items()},
                      "fits_with_warnings": warned, "seconds": round(time.time() - start, 1)}
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(result, indent=1) + "\n")
            print(f"{k + 1} panels: " + json.dumps({n: round(r["rate"], 3) for n, r in
                                                     result["coverage"].items()}), flush=True)


if __name__ == "__main__":
    main()

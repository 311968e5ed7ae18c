"""Calibration of gbstats.alignment.group_comparison by simulation (issue 31).

For designs shaped like Gardner & Brown-Schmidt's (2024) production experiments, with
two groups whose true alignments differ by a known amount (gbstats.alignment.simulation;
the generating model is documented there):

- `at_bound`: the true difference equals the equivalence bound (rho .50 vs .40, bound .10),
  the least favourable case for an equivalence claim. The rate of TOST p < .05 is the
  equivalence claim's false-positive rate; it must not exceed .05.
- `equal`: equal alignment (rho .45 each). The rate of p < .05 of the primary test (the
  difference of corrected correlations) is its false-positive rate; the rate of TOST
  p < .05 is the power to establish equivalence within the bound.
- in both, the coverage of `profile_agreement`'s interval of the corrected profile
  correlation, against its true value rho_a rho_b + sqrt(1 - rho_a^2) sqrt(1 - rho_b^2) c
  (c the shared component of the groups' non-model parts), and how often the ceiling
  sqrt(2 (1 - rho_ab)) from the interval's lower end holds the true |rho_a - rho_b|.

Designs (`DESIGNS`): `exp1` 104 items, 244 vs 198 people, each rating 21 items; `exp3`
63 items, 514 vs 638 people, each rating 7 items; `complete` 40 items, 30 vs 30 people,
each rating every item. The ratings are normal (item SD 1, noise SD 2.5), not the
binary choices of the experiments; the corrected comparison makes no normality
assumption, and the binary case is left to a later run.

    nice -n 10 python benchmarks/group_comparison_calibration.py --panels 200 \
        --out benchmarks/results/group_comparison_calibration.json

Monte Carlo standard errors are sqrt(p (1 - p) / n) and the intervals exact
(Clopper-Pearson). The variance replicates are fewer than the library's defaults
(`settings`), which if anything lowers coverage.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy import stats

from gbstats.alignment.group_comparison import (equivalence_p_value,
                                                profile_agreement_from_matrices)
from gbstats.alignment.reliability import alignment_tables_from_matrices
from gbstats.alignment.simulation import simulate_alignment_panel

OUT = Path(__file__).resolve().parent / "results" / "group_comparison_calibration.json"
BOUND = 0.10
SHARED = 0.9            # the groups' non-model parts correlate .9: profiles that agree closely
NOISE = dict(sd_item=1.0, sd_noise=2.5, sd_person=0.5)
DESIGNS = {
    "exp1": dict(sizes={"a": 244, "b": 198}, n_items=104, items_per_person=21),
    "exp3": dict(sizes={"a": 514, "b": 638}, n_items=63, items_per_person=7),
    "complete": dict(sizes={"a": 30, "b": 30}, n_items=40, items_per_person=None),
}
CASES = {"at_bound": (0.50, 0.50 - BOUND), "equal": (0.45, 0.45)}
SETTINGS = dict(n_splits=50, n_boot=50, n_var_boot=60, n_boot_splits=10, profile_boot=100)


def rate(hits) -> dict:
    hits = np.asarray(hits, dtype=bool)
    n, k = hits.size, int(hits.sum())
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    return {"rate": k / n, "n_panels": n, "count": k,
            "mc_se": float(np.sqrt(k / n * (1 - k / n) / n)),
            "exact_ci95": [float(ci.low), float(ci.high)]}


def true_profile_correlation(rho_a: float, rho_b: float, shared: float) -> float:
    return rho_a * rho_b + np.sqrt(1 - rho_a ** 2) * np.sqrt(1 - rho_b ** 2) * shared


def run_case(design: str, case: str, n_panels: int, seed: int) -> dict:
    spec = DESIGNS[design]
    rho_a, rho_b = CASES[case]
    truth_ab = true_profile_correlation(rho_a, rho_b, SHARED)
    hits = {"primary_p_below_05": [], "equivalence_claimed": [], "profile_ci_covers": [],
            "ceiling_holds_true_difference": []}
    estimates = {"difference": [], "se": [], "r_profiles_corrected": []}
    start = time.time()
    for panel in range(n_panels):
        rng = np.random.default_rng([seed, list(DESIGNS).index(design), list(CASES).index(case),
                                     panel])
        x, groups = simulate_alignment_panel(
            spec["sizes"], {"a": rho_a, "b": rho_b}, n_items=spec["n_items"],
            items_per_person=spec["items_per_person"], shared_item=SHARED, seed=rng, **NOISE)
        _, _, comparison = alignment_tables_from_matrices(
            x, groups, n_splits=SETTINGS["n_splits"], n_boot=SETTINGS["n_boot"],
            n_var_boot=SETTINGS["n_var_boot"], n_boot_splits=SETTINGS["n_boot_splits"], rng=rng)
        row = comparison.iloc[0]
        profile = profile_agreement_from_matrices(
            groups, n_splits=SETTINGS["n_splits"], n_boot=SETTINGS["profile_boot"],
            n_boot_splits=SETTINGS["n_boot_splits"], rng=rng).iloc[0]
        hits["primary_p_below_05"].append(row["p_value"] < 0.05)
        hits["equivalence_claimed"].append(
            float(equivalence_p_value(row["difference"], row["se"], BOUND)) < 0.05)
        hits["profile_ci_covers"].append(profile["ci_low"] <= truth_ab <= profile["ci_high"])
        hits["ceiling_holds_true_difference"].append(
            profile["max_alignment_difference_upper"] >= abs(rho_a - rho_b))
        estimates["difference"].append(row["difference"])
        estimates["se"].append(row["se"])
        estimates["r_profiles_corrected"].append(profile["r_profiles_corrected"])
    diffs = np.asarray(estimates["difference"])
    return {"design": design, "case": case, "rho_a": rho_a, "rho_b": rho_b,
            "true_difference": rho_a - rho_b, "true_profile_correlation": truth_ab,
            "rates": {k: rate(v) for k, v in hits.items()},
            "mean_difference": float(diffs.mean()), "sd_difference": float(diffs.std(ddof=1)),
            "mean_se": float(np.mean(estimates["se"])),
            "mean_r_profiles_corrected": float(np.mean(estimates["r_profiles_corrected"])),
            "seconds": round(time.time() - start, 1)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--panels", type=int, default=200)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--design", action="append", choices=list(DESIGNS))
    parser.add_argument("--case", action="append", choices=list(CASES))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    results = {"what": __doc__.split("\n\n")[0], "bound": BOUND, "shared_item": SHARED,
               "noise": NOISE, "designs": DESIGNS, "settings": SETTINGS, "seed": args.seed,
               "runs": []}
    for design in args.design or list(DESIGNS):
        for case in args.case or list(CASES):
            print(f"{design} {case}: {args.panels} panels", flush=True)
            results["runs"].append(run_case(design, case, args.panels, args.seed))
            print(json.dumps(results["runs"][-1]["rates"]), flush=True)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()

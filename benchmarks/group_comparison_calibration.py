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

Issue 40 adds the shapes name_gender analyses (`BINARY_DESIGNS`, `run_binary_case`):
binary responses (she or he), items clustered in first names (the model's score and
people's profiles share a name component), the groups' item profiles agreeing at .99 and
above (corrected, as men's and non-male participants' do in Gardner & Brown-Schmidt's
data): Exp 3 over all conditions (189 items in 21 names, 12-16 responses per item per
group), Exp 3 per condition (63 items; each participant reads one condition, so 13-17),
Exp 1 over all conditions (104 items in 42 clusters, each participant about 20 items of
one condition) and per condition (21 single-name items; 62 full-name items in 21 names).
At equal alignment (`--binary-case equal`) it records the rate of p < .05 of the
permutation test of participants' group labels (`gbstats.alignment.group_permutation`,
exact by construction for exchangeable groups) and, on `--z-panels` panels, of the primary z
test; at the equivalence bound (`--binary-case at_bound`) the rate at which TOST, with the
study's SE (first names drawn whole), claims "equivalent". `DIAGNOSTIC_DESIGNS` keeps the
first run's mis-shaped "sparse Exp-3" design and its exchangeable twin (`--binary-design`;
results under `diagnosis`). Each run replaces its own earlier record:

    nice -n 10 python benchmarks/group_comparison_calibration.py --binary-only --panels 600
    nice -n 10 python benchmarks/group_comparison_calibration.py --binary-only --panels 100 \
        --binary-case at_bound --binary-design exp3_condition_binary

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


# --------------------------------------------------------------------------
# issue 40: the analysed shape (binary, clustered items, profiles agreeing at .99+)

def _exp1_items() -> dict:
    """Exp 1 over all conditions, item by item: 21 first-name items and 62 full-name items
    (21 first names with 3 surnames, one with 2) cluster in their first name (4 items, one
    3), and 21 last-name items are each their own cluster; each participant reads one
    condition (block: first 0, full 1, last 2)."""
    sizes = [4] * 20 + [3] + [1] * 21
    block = []
    for size in sizes[:21]:
        block += [0] + [1] * (size - 1)
    block += [2] * 21
    return dict(cluster_sizes=sizes, item_block=block)


BINARY_DESIGNS = {
    # Exp 3 over all conditions: 21 names x 9 items (3 surnames x 3 conditions); 480 and
    # 600 people, 5 he/she responses each: 12.7 and 15.9 responses per item per group
    "analysed_binary": dict(sizes={"a": 480, "b": 600}, n_clusters=21, items_per_cluster=9,
                            items_per_person=5, shared=0.995),
    # Exp 3, one condition, as analysed: 63 items (21 names x 3 surnames); each
    # participant reads one condition, so about a third of them: 161 men and 209 non-male
    # participants (the three conditions' mean), 5 items each: 12.8 and 16.6 responses per
    # item per group
    "exp3_condition_binary": dict(sizes={"a": 161, "b": 209}, n_clusters=21,
                                  items_per_cluster=3, items_per_person=5, shared=0.995),
    # Exp 1 over all conditions: 104 items in 42 first-name clusters, 244 men and 197
    # non-male participants, each reading about 20 items of one condition
    "exp1_binary": dict(sizes={"a": 244, "b": 197}, items_per_person=20, shared=0.995,
                        **_exp1_items()),
    # Exp 1, the first-name (or last-name) condition: 21 items, one per name; 80 men and
    # 66 non-male participants, 20 of the 21 items each
    "exp1_single_binary": dict(sizes={"a": 80, "b": 66}, n_clusters=21, items_per_cluster=1,
                               items_per_person=20, shared=0.995),
    # Exp 1, the full-name condition: 62 items in 21 names (3 surnames, one 2); 84 men and
    # 65 non-male participants, 20 items each
    "exp1_full_binary": dict(sizes={"a": 84, "b": 65}, cluster_sizes=[3] * 20 + [2],
                             items_per_person=20, shared=0.995),
}
# issue 40's first binary run of "the sparse Exp-3 shape" took the whole Exp 3 sample
# (514 and 638 people, 7 items each) for one condition's 63 items: 57 and 71 responses per
# item per group, about 4.5 times what any analysed comparison has. Kept as a diagnosis
# (`--diagnose`), not as a design of this study.
DIAGNOSTIC_DESIGNS = {
    "exp3_sparse_binary": dict(sizes={"a": 514, "b": 638}, n_clusters=21, items_per_cluster=3,
                               items_per_person=7, shared=0.995),
    "exp3_sparse_binary_exchangeable": dict(sizes={"a": 514, "b": 638}, n_clusters=21,
                                            items_per_cluster=3, items_per_person=7,
                                            shared=1.0),
}
# each design's panels draw from [seed, offset, panel]: fixed here, so that adding a design
# leaves the others' panels as they were (analysed_binary and exp3_sparse_binary as first run)
SEED_OFFSETS = {"analysed_binary": 100, "exp3_sparse_binary": 101,
                "exp3_sparse_binary_exchangeable": 101, "exp3_condition_binary": 102,
                "exp1_binary": 103, "exp1_single_binary": 104, "exp1_full_binary": 105}
BINARY_RHO = 0.45          # each group's true alignment (equal: the null)
BINARY_RHO_AT_BOUND = 0.50  # group a's at the equivalence bound; group b's solved for
NAME_SHARE = 0.6           # share of the model score's variance that is the name's
LOGIT_SCALE = 1.5          # item logits' SD: people's item shares spread over about .1-.9
PERSON_SD = 0.5
N_PERM = 99                # p in steps of 1/100, so P(p <= .05) is exactly .05 under the null
PERM_SPLITS = 2            # random halves per relabelling for the reliabilities (cost)


def _cluster_sizes(spec: dict) -> list[int]:
    return list(spec.get("cluster_sizes") or [spec["items_per_cluster"]] * spec["n_clusters"])


def item_clusters(spec: dict) -> np.ndarray:
    """One cluster label per item (the unit the study's bootstrap draws whole)."""
    sizes = _cluster_sizes(spec)
    return np.repeat(np.arange(len(sizes)), sizes)


def population_alignment(rho: float, n_items: int = 400_000, seed: int = 0) -> float:
    """The correlation, over a population of items, of the model's score x with a group's
    expected share of she, E_person expit(offset + LOGIT_SCALE (rho x + sqrt(1 - rho^2)
    own)): what a group's corrected correlation estimates (person offsets integrated by
    Gauss-Hermite quadrature)."""
    from scipy.special import expit

    rng = np.random.default_rng(seed)
    x, own = rng.standard_normal(n_items), rng.standard_normal(n_items)
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    weights = weights / weights.sum()
    logit = LOGIT_SCALE * (rho * x + np.sqrt(1 - rho ** 2) * own)
    share = sum(w * expit(PERSON_SD * z + logit) for z, w in zip(nodes, weights))
    return float(np.corrcoef(x, share)[0, 1])


def rho_at_bound(rho_a: float = BINARY_RHO_AT_BOUND, bound: float = BOUND) -> float:
    """Group b's rho whose population alignment is group a's minus `bound`: the least
    favourable case for an equivalence claim on the scale the study tests."""
    from scipy.optimize import brentq

    target = population_alignment(rho_a) - bound
    return float(brentq(lambda r: population_alignment(r) - target, 0.0, rho_a, xtol=1e-6))


def simulate_binary_panel(spec: dict, rho: float, rng: np.random.Generator,
                          rho_b: float | None = None):
    """(x, [GroupRatings a, b], true profile correlation): binary responses from
    P(she) = expit(person offset + LOGIT_SCALE (rho x_i + sqrt(1 - rho^2) own_gi)), where
    x_i (the model's score) and the non-model parts both carry a name component, and the
    groups' own parts share `spec["shared"]` of their variance. Group b follows x with
    `rho_b` (default `rho`). With `spec["item_block"]` (a condition per item) each person
    reads one condition, drawn at random, and `items_per_person` items of it."""
    from scipy.special import expit

    from gbstats.alignment.reliability import GroupRatings

    name = item_clusters(spec)
    k, n_items = int(name.max()) + 1, name.size
    block = spec.get("item_block")
    block = None if block is None else np.asarray(block)

    def clustered() -> np.ndarray:
        v = (np.sqrt(NAME_SHARE) * rng.standard_normal(k)[name]
             + np.sqrt(1 - NAME_SHARE) * rng.standard_normal(n_items))
        return (v - v.mean()) / v.std()

    x, common = clustered(), clustered()
    groups, profiles = [], []
    for (g, n), r in zip(spec["sizes"].items(), (rho, rho if rho_b is None else rho_b)):
        own = np.sqrt(spec["shared"]) * common + np.sqrt(1 - spec["shared"]) * clustered()
        logit = LOGIT_SCALE * (r * x + np.sqrt(1 - r ** 2) * own)
        profiles.append(logit)
        counts = np.zeros((n, n_items))
        keys = rng.random((n, n_items))
        if block is not None:
            # items outside the person's condition sort last and are never picked
            chosen = rng.integers(0, int(block.max()) + 1, n)
            keys = np.where(block[None, :] == chosen[:, None], keys, 2.0 + keys)
            per_block = np.bincount(block)
            take = np.minimum(spec["items_per_person"], per_block[chosen])
            picks = np.argsort(keys, axis=1)
            mask = np.arange(n_items)[None, :] < take[:, None]
            np.put_along_axis(counts, picks, mask.astype(float), axis=1)
        else:
            picks = np.argsort(keys, axis=1)[:, :spec["items_per_person"]]
            np.put_along_axis(counts, picks, 1.0, axis=1)
        p = expit(rng.normal(0, PERSON_SD, n)[:, None] + logit[None, :])
        groups.append(GroupRatings(g, np.array([f"{g}{i:04d}" for i in range(n)], dtype=object),
                                   (rng.random((n, n_items)) < p) * counts, counts))
    return x, groups, float(np.corrcoef(*profiles)[0, 1])


def run_binary_case(design: str, n_panels: int, seed: int, z_panels: int = 0,
                    case: str = "equal") -> dict:
    """A binary design. `equal` (equal alignment): the permutation test's rate of p < .05
    over `n_panels` panels, and the primary z test's over the first `z_panels` of them (it
    costs about 40 times as much). `at_bound` (group b's population alignment the bound
    below group a's, `rho_at_bound`): the rate of equivalence claimed (TOST p < .05 with
    the study's SE: first names drawn whole and people within group) over `n_panels`
    panels, the false "equivalent" rate, and the permutation test's rate (its power)."""
    from gbstats.alignment.group_permutation import permutation_difference_test

    spec = {**BINARY_DESIGNS, **DIAGNOSTIC_DESIGNS}[design]
    rho_b = BINARY_RHO if case == "equal" else rho_at_bound()
    rho_a = BINARY_RHO if case == "equal" else BINARY_RHO_AT_BOUND
    z_panels = n_panels if case == "at_bound" else z_panels
    hits = {"permutation_p_below_05": [], "primary_p_below_05": [], "equivalence_claimed": []}
    per_item, agreement, differences, ses = [], [], [], []
    clusters = item_clusters(spec)
    start = time.time()
    offset = SEED_OFFSETS[design]
    for panel in range(n_panels):
        rng = np.random.default_rng([seed, offset, panel] + ([1] if case == "at_bound" else []))
        x, groups, truth = simulate_binary_panel(spec, rho_a, rng, rho_b=rho_b)
        agreement.append(truth)
        per_item.append([float(g.counts.sum(axis=0).mean()) for g in groups])
        perm = permutation_difference_test(x, groups[0], groups[1], n_perm=N_PERM, rng=rng,
                                           n_splits=PERM_SPLITS)
        hits["permutation_p_below_05"].append(perm["p_value"] <= 0.05)
        if panel < z_panels:
            _, _, comparison = alignment_tables_from_matrices(
                x, groups, n_splits=SETTINGS["n_splits"], n_boot=SETTINGS["n_boot"],
                n_var_boot=SETTINGS["n_var_boot"], n_boot_splits=SETTINGS["n_boot_splits"],
                rng=rng, item_clusters=clusters if case == "at_bound" else None)
            row = comparison.iloc[0]
            hits["primary_p_below_05"].append(row["p_value"] < 0.05)
            hits["equivalence_claimed"].append(
                float(equivalence_p_value(row["difference"], row["se"], BOUND)) < 0.05)
            differences.append(float(row["difference"]))
            ses.append(float(row["se"]))
    if case == "equal":
        hits.pop("equivalence_claimed")     # the power to claim it, not a calibration
    out = {"design": design, "case": case, "rho_a": rho_a, "rho_b": rho_b,
           "true_difference": (0.0 if case == "equal" else BOUND),
           "difference_scale": "population correlation of x with each group's expected share",
           "n_perm": N_PERM, "perm_splits": PERM_SPLITS,
           "responses_per_item_per_group": np.mean(per_item, axis=0).round(1).tolist(),
           "mean_true_profile_correlation": float(np.mean(agreement)),
           "rates": {k: rate(v) for k, v in hits.items() if v},
           "seconds": round(time.time() - start, 1)}
    if differences:
        out.update(mean_difference=float(np.mean(differences)),
                   sd_difference=float(np.std(differences, ddof=1)),
                   mean_se=float(np.mean(ses)),
                   se_resamples="first-name clusters and people" if case == "at_bound"
                   else "items and people")
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--panels", type=int, default=200)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--design", action="append", choices=list(DESIGNS))
    parser.add_argument("--case", action="append", choices=list(CASES))
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--binary", action="store_true",
                        help="also the analysed binary designs (issue 40), added to --out's runs")
    parser.add_argument("--binary-only", action="store_true",
                        help="only the binary designs, added to the runs already in --out")
    parser.add_argument("--binary-design", action="append",
                        choices=list(BINARY_DESIGNS) + list(DIAGNOSTIC_DESIGNS),
                        help="binary designs to run (default: every design of BINARY_DESIGNS); "
                             "each replaces its own earlier run of the same case")
    parser.add_argument("--binary-case", choices=("equal", "at_bound"), default="equal",
                        help="equal alignment (the permutation test's false-positive rate) or "
                             "at the equivalence bound (TOST's false 'equivalent' rate)")
    parser.add_argument("--z-panels", type=int, default=0,
                        help="binary designs: the primary z test on the first N panels only "
                             "(about 40 times the permutation test's cost)")
    args = parser.parse_args(argv)
    if args.binary_only:
        results = json.loads(args.out.read_text()) if args.out.exists() else {"runs": []}
        results["binary_designs"] = BINARY_DESIGNS
        results["diagnostic_designs"] = DIAGNOSTIC_DESIGNS
        results["binary_settings"] = dict(name_share=NAME_SHARE, logit_scale=LOGIT_SCALE,
                                          person_sd=PERSON_SD, rho_equal=BINARY_RHO,
                                          rho_a_at_bound=BINARY_RHO_AT_BOUND, bound=BOUND,
                                          seed_offsets=SEED_OFFSETS)
        for design in args.binary_design or list(BINARY_DESIGNS):
            print(f"{design} {args.binary_case}: {args.panels} panels", flush=True)
            run = run_binary_case(design, args.panels, args.seed, z_panels=args.z_panels,
                                  case=args.binary_case)
            key = "diagnosis" if design in DIAGNOSTIC_DESIGNS else "runs"
            kept = [r for r in results.get(key, [])
                    if (r["design"], r.get("case")) != (design, args.binary_case)]
            results[key] = kept + [run]
            print(json.dumps(run["rates"]), flush=True)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=1, default=str) + "\n")
        return
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

"""Men vs non-male participants: the p-value of each corrected-r comparison from an exact
permutation of participants' group labels, and what is calibrated for this design (issue
40, item 6).

In simulated designs of the analysed shape (benchmarks/group_comparison_calibration.py,
`--binary-only`), the z test of the difference of corrected correlations (bootstrap SE,
items resampled) is the test whose false-positive rate was measured too high in the sparse
Exp-3 shape (9.0%); the permutation test is exact by construction, and the benchmark
records its rate in the analysed shapes. So each corrected-r row keeps the difference of
corrected correlations and its bootstrap interval as the estimate, and takes its p-value
from the permutation test (`gbstats.alignment.group_permutation`); Holm then runs on those.

The equivalence test (TOST) still uses the bootstrap SE; its false-positive rate at the
bound was measured on normal ratings only (1-2%), not on binary, clustered items. Where a
conclusion rests on it, the verdict says "not calibrated for this design".
"""
from __future__ import annotations

import pandas as pd

from studies.name_gender import alignment as A

N_PERM = 999
PERMUTATION_TEST = ("difference of corrected correlations; p from a permutation of "
                    f"participants' group labels ({N_PERM:,} relabellings, exact)")
NOT_CALIBRATED = "not calibrated for this design"


def with_permutation_p(rows: pd.DataFrame, item_scores: pd.DataFrame, trials: pd.DataFrame,
                       *, seed: int, n_perm: int = N_PERM) -> pd.DataFrame:
    """`rows` (corrected_comparison_rows' comparison rows for these trials) with p_value from
    the permutation test, the z test's p kept as p_value_z, and the test named."""
    from gbstats.alignment.group_permutation import permutation_rows
    from gbstats.alignment.reliability import rating_matrices

    x, groups = rating_matrices(item_scores, trials, group="group", score="share_two_way",
                                rating="She", item_keys=A.ITEM_KEYS, participant="Participant")
    perm = {frozenset((r["group_a"], r["group_b"])): r
            for r in permutation_rows(x, groups, n_perm=n_perm, seed=seed)}
    found = [perm.get(frozenset((a, b))) for a, b in zip(rows["group_a"], rows["group_b"])]
    if any(f is None for f in found):
        raise KeyError("a comparison row without its permutation test")
    return rows.assign(p_value_z=rows["p_value"],
                       p_value=[f["p_value"] for f in found], test=PERMUTATION_TEST,
                       n_perm=n_perm, resampling_unit=(
                           "p: participants' group labels permuted; interval and SE: first "
                           "names (every item of a drawn name) and people within group "
                           "resampled"))


# the benchmark's designs of this study's shape, and what "calibrated" means for them
# (issue 40: a false-positive rate of at most .06 with the exact interval's upper end below .08)
CALIBRATION_DESIGNS = ("analysed_binary", "exp3_sparse_binary")
MAX_RATE, MAX_UPPER = 0.06, 0.08


def calibration_runs() -> dict:
    """{design: run} of the calibration record (benchmarks/results/
    group_comparison_calibration.json), {} when it is absent."""
    import json
    from pathlib import Path

    path = (Path(__file__).resolve().parents[2] / "benchmarks" / "results"
            / "group_comparison_calibration.json")
    if not path.exists():
        return {}
    return {r["design"]: r for r in json.loads(path.read_text()).get("runs", [])}


def calibrated_design(experiment, condition) -> str | None:
    """The simulated design a comparison's shape matches: Exp 3's 189 name items (all
    conditions) the analysed binary design, one condition's 63 items the sparse Exp 3
    shape; Exp 1 (104 items, 21 per person) has no binary design yet."""
    if int(experiment) != 3:
        return None
    return "analysed_binary" if condition == "all" else "exp3_sparse_binary"


def permutation_calibrated(runs: dict | None = None, design: str | None = None) -> bool:
    """Whether the permutation test is calibrated in `design` (None: in every design of
    this study's shape): a rate of p < .05 at equal alignment of at most MAX_RATE, with
    the exact interval's upper end below MAX_UPPER."""
    runs = calibration_runs() if runs is None else runs
    for name in (CALIBRATION_DESIGNS if design is None else (design,)):
        rate = runs.get(name, {}).get("rates", {}).get("permutation_p_below_05")
        if not rate or rate["rate"] > MAX_RATE or rate["exact_ci95"][1] >= MAX_UPPER:
            return False
    return True


def calibration_verdicts(finished: pd.DataFrame, runs: dict | None = None) -> pd.Series:
    """The verdicts, with "not calibrated for this design" added where the conclusion rests
    on a test not calibrated for binary, clustered items: the equivalence test (TOST with
    the bootstrap SE) always, the permutation test unless the calibration record shows it
    calibrated in the simulated design of the row's shape (`calibrated_design`; Exp 1 has
    none yet)."""
    runs = calibration_runs() if runs is None else runs
    verdicts = finished["verdict"].astype(str)
    ours = finished["test"].eq(PERMUTATION_TEST)
    calibrated = pd.Series([
        (d := calibrated_design(e, c)) is not None and permutation_calibrated(runs, d)
        for e, c in zip(finished["experiment"], finished["condition"])], index=finished.index)
    flagged = ours & (verdicts.str.startswith("equivalent")
                      | (~calibrated & ~verdicts.str.startswith("not ")))
    return verdicts.where(~flagged, verdicts + f"; {NOT_CALIBRATED}")


def calibration_note() -> str:
    """The group-comparison table's note on calibration, from the benchmark's record."""
    runs = calibration_runs()
    said = []
    for design, words in (("analysed_binary", "189 binary items in 21 names, 13-16 responses "
                           "per item per group, profiles agreeing at .99+"),
                          ("exp3_sparse_binary", "the sparse Exp 3 shape, 63 items, 7 per "
                           "person")):
        rates = runs.get(design, {}).get("rates", {})
        perm, z = rates.get("permutation_p_below_05"), rates.get("primary_p_below_05")
        if perm:
            text = (f"{words}: permutation test {perm['rate']:.1%} of {perm['n_panels']} "
                    f"panels (exact 95% interval {perm['exact_ci95'][0]:.3f}-"
                    f"{perm['exact_ci95'][1]:.3f})")
            if z:
                text += f", the earlier z test {z['rate']:.1%} of {z['n_panels']}"
            said.append(text)
    if not said:
        return ("Calibration of the permutation test in this design: not yet run, so not "
                "calibrated for this design.")
    shapes = {"Exp 3 over all conditions": "analysed_binary",
              "Exp 3 per condition": "exp3_sparse_binary"}
    good = [k for k, d in shapes.items() if permutation_calibrated(runs, d)]
    bad = [k for k in shapes if k not in good] + ["Exp 1 (no binary design simulated)"]
    return ("False-positive rate of the permutation test at equal alignment in simulated "
            "designs of Exp 3's shape: " + "; ".join(said) + ". Calibrated means at most "
            f"{MAX_RATE:.2f} with the exact interval below {MAX_UPPER:.2f}. Calibrated: "
            + (", ".join(good) if good else "none") + ". Not calibrated for this design: "
            + ", ".join(bad) + "; their conclusions say so, as do equivalence conclusions "
            "(the equivalence test has not been calibrated on binary, clustered items).")



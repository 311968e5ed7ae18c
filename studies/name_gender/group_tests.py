"""Men vs non-male participants: the p-value of each corrected-r comparison from an exact
permutation of participants' group labels, and what is calibrated for this design (issue
40, item 6).

In simulated designs of the analysed shape (benchmarks/group_comparison_calibration.py,
`--binary-only`), the z test of the difference of corrected correlations (bootstrap SE,
items resampled) is the test whose false-positive rate was measured too high in a sparse
Exp-3 shape (9.0%); the permutation test is exact by construction for exchangeable groups,
and the benchmark records its rate, at equal alignment with profiles agreeing at .99+, in
each shape this study compares (Exp 3 and Exp 1, over all conditions and per condition). So each corrected-r row keeps the difference of
corrected correlations and its bootstrap interval as the estimate, and takes its p-value
from the permutation test (`gbstats.alignment.group_permutation`); Holm then runs on those.

The equivalence test (TOST) still uses the bootstrap SE; its false "equivalent" rate at
the bound is read from the record's runs at the bound. Where a conclusion rests on a test
the record does not show calibrated in the row's shape, the verdict says "not calibrated
for this design".
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
# (issue 40: a false-positive rate of at most .06 with the exact interval's upper end below
# .08; for the equivalence claim, a false "equivalent" rate at the bound of at most alpha)
CALIBRATION_DESIGNS = ("analysed_binary", "exp3_condition_binary", "exp1_binary",
                       "exp1_single_binary", "exp1_full_binary")
MAX_RATE, MAX_UPPER, ALPHA = 0.06, 0.08, 0.05
AT_BOUND = "@at_bound"
DESIGN_WORDS = {
    "analysed_binary": ("Exp 3 over all conditions", "189 items in 21 names, 13-16 responses "
                        "per item per group"),
    "exp3_condition_binary": ("Exp 3 per condition", "63 items in 21 names, 13-17 responses "
                              "per item per group"),
    "exp1_binary": ("Exp 1 over all conditions", "104 items in 42 name clusters, 38-47 "
                    "responses per item per group"),
    "exp1_single_binary": ("Exp 1, first or last name", "21 items, 63-76 responses per item "
                           "per group"),
    "exp1_full_binary": ("Exp 1, full name", "62 items in 21 names, 21-27 responses per item "
                         "per group"),
}


def calibration_runs() -> dict:
    """{design: run} of the calibration record's runs at equal alignment (benchmarks/results/
    group_comparison_calibration.json), and {design + AT_BOUND: run} of its runs at the
    equivalence bound; {} when the record is absent."""
    import json
    from pathlib import Path

    path = (Path(__file__).resolve().parents[2] / "benchmarks" / "results"
            / "group_comparison_calibration.json")
    if not path.exists():
        return {}
    return {r["design"] + (AT_BOUND if r.get("case") == "at_bound" else ""): r
            for r in json.loads(path.read_text()).get("runs", [])}


def calibrated_design(experiment, condition) -> str | None:
    """The simulated design a comparison's shape matches: Exp 3's 189 name items (all
    conditions) the analysed binary design, one condition's 63 items (a third of the
    participants: each read one condition) exp3_condition_binary; Exp 1's 104 items
    exp1_binary, its first- and last-name conditions (21 items, one per name)
    exp1_single_binary, its full-name condition (62 items) exp1_full_binary."""
    experiment, condition = int(experiment), str(condition)
    if experiment == 3:
        return "analysed_binary" if condition == "all" else "exp3_condition_binary"
    if experiment == 1:
        return {"all": "exp1_binary", "first": "exp1_single_binary",
                "last": "exp1_single_binary", "full": "exp1_full_binary"}.get(condition)
    return None


def _within(rate: dict | None, max_rate: float) -> bool:
    return bool(rate) and rate["rate"] <= max_rate and rate["exact_ci95"][1] < MAX_UPPER


def permutation_calibrated(runs: dict | None = None, design: str | None = None) -> bool:
    """Whether the permutation test is calibrated in `design` (None: in every design of
    this study's shape): a rate of p < .05 at equal alignment of at most MAX_RATE, with
    the exact interval's upper end below MAX_UPPER."""
    runs = calibration_runs() if runs is None else runs
    return all(_within(runs.get(name, {}).get("rates", {}).get("permutation_p_below_05"),
                       MAX_RATE)
               for name in (CALIBRATION_DESIGNS if design is None else (design,)))


def equivalence_calibrated(runs: dict | None = None, design: str | None = None) -> bool:
    """Whether the equivalence claim (TOST with the bootstrap SE) is calibrated in `design`:
    simulated at the bound, it claimed "equivalent" in at most ALPHA of the panels, with
    the exact interval's upper end below MAX_UPPER. A design not simulated at the bound is
    not calibrated."""
    runs = calibration_runs() if runs is None else runs
    if design is None:
        return False
    rate = runs.get(design + AT_BOUND, {}).get("rates", {}).get("equivalence_claimed")
    return _within(rate, ALPHA)


def calibration_verdicts(finished: pd.DataFrame, runs: dict | None = None) -> pd.Series:
    """The verdicts, with "not calibrated for this design" added where the conclusion rests
    on a test the calibration record does not show calibrated in the simulated design of
    the row's shape (`calibrated_design`): the permutation test (equal alignment) for any
    conclusion, the equivalence test (at the bound) for an "equivalent" one."""
    runs = calibration_runs() if runs is None else runs
    verdicts = finished["verdict"].astype(str)
    ours = finished["test"].eq(PERMUTATION_TEST)
    designs = [calibrated_design(e, c) for e, c in zip(finished["experiment"],
                                                         finished["condition"])]
    calibrated = pd.Series([d is not None and permutation_calibrated(runs, d) for d in designs],
                           index=finished.index)
    alike = pd.Series([d is not None and equivalence_calibrated(runs, d) for d in designs],
                      index=finished.index)
    flagged = ours & ((verdicts.str.startswith("equivalent") & ~alike)
                      | (~calibrated & ~verdicts.str.startswith("not ")))
    return verdicts.where(~flagged, verdicts + f"; {NOT_CALIBRATED}")


def _rate_words(rate: dict) -> str:
    return (f"{rate['rate']:.1%} of {rate['n_panels']} panels (exact 95% interval "
            f"{rate['exact_ci95'][0]:.3f}-{rate['exact_ci95'][1]:.3f})")


def calibration_note(runs: dict | None = None) -> str:
    """The group-comparison table's note on calibration, from the benchmark's record."""
    runs = calibration_runs() if runs is None else runs
    said, good, bad = [], [], []
    for design, (label, words) in DESIGN_WORDS.items():
        perm = runs.get(design, {}).get("rates", {}).get("permutation_p_below_05")
        bound = runs.get(design + AT_BOUND, {}).get("rates", {}).get("equivalence_claimed")
        if perm:
            text = f"{label} ({words}): permutation test {_rate_words(perm)}"
            if bound:
                text += f"; equivalence claimed at the bound {_rate_words(bound)}"
            said.append(text)
        (good if permutation_calibrated(runs, design) else bad).append(label)
    if not said:
        return ("Calibration of the permutation test in this design: not yet run, so not "
                "calibrated for this design.")
    alike = [DESIGN_WORDS[d][0] for d in DESIGN_WORDS if equivalence_calibrated(runs, d)]
    return ("Calibration by simulation: false-positive rate of the permutation test at equal "
            "alignment, in designs of this study's shape (binary answers, profiles agreeing "
            "at .99 and above): " + "; ".join(said) + ". Calibrated means at most "
            f"{MAX_RATE:.2f} with the exact interval below {MAX_UPPER:.2f} (for the "
            f"equivalence claim, at most {ALPHA:.2f} at the bound). Calibrated: "
            + (", ".join(good) if good else "none") + ". Not calibrated for this design: "
            + (", ".join(bad) if bad else "none") + ". Equivalence claims calibrated in: "
            + (", ".join(alike) if alike else "none") + "; every other conclusion "
            "resting on an uncalibrated test says so in its verdict.")

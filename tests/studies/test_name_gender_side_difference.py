"""name_gender's people-vs-model verdicts rest on a test of the difference (issue 40).

The joint fit (gbstats.alignment.side_difference) is checked against R: the same two
quasibinomial glm's and a cluster-robust sandwich built by hand in
tests/reference/name_gender_side_difference.R, on the real trials and the embedded model's
recorded scores (tests/reference/name_gender_model_scores.csv). The pairing and the verdict
words are checked on simulated clusters whose answers are known by construction.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from gbstats.alignment.side_difference import (difference_verdict, difference_verdicts,
                                               paired_effect_differences)
from gbstats.errors import DataValidationError
from gbstats.mixed.population import cells
from studies.name_gender import comparison as C

REFERENCE = Path(__file__).resolve().parents[1] / "reference"


@pytest.fixture(scope="module")
def tables(data_dir):
    from gbstats.data.registry import load_dataset

    return load_dataset("gardner2024", data_dir).tables


def test_effect_differences_equal_r(tables):
    refs = json.loads((REFERENCE / "name_gender_side_difference_refs.json").read_text())
    scores = pd.read_csv(REFERENCE / "name_gender_model_scores.csv")
    scored = scores.assign(share_two_way=expit(scores["logit_two_way"]))
    out = C.effect_differences(tables, scored).set_index(["model", "effect"])
    expected = pd.DataFrame(refs["exp1"] + refs["exp3"]).set_index(["model", "effect"])
    assert set(expected.index) == set(out.index)
    got = out.loc[expected.index]
    for column in ("people_estimate", "model_estimate", "estimate"):
        np.testing.assert_allclose(got[column], expected[column], rtol=1e-6, atol=1e-8)
    for column in ("se", "p_value", "p_equivalence"):
        np.testing.assert_allclose(got[column], expected[column], rtol=1e-5, atol=1e-10)
    assert (got["df"] == expected["df"]).all()
    assert (got["n_clusters"] == expected["n_clusters"]).all()
    # every verdict row carries its test: estimate, SE, p, Holm p, TOST p, the bound, method
    for column in ("estimate", "se", "p_value", "p_holm", "p_equivalence",
                   "p_equivalence_holm", "equivalence_bound", "method", "unit", "verdict"):
        assert out[column].notna().all(), column
    assert (out["family_size"] == len(out)).all()
    assert (out["equivalence_bound"] == C.EFFECT_EQUIVALENCE_BOUND).all()


def simulated_sides(n_clusters: int, people_effect: float, model_effect: float,
                    shared: float, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two conditions per cluster; people: 0/1 responses (40 per cluster and condition);
    the model: one share per cluster and condition. Each cluster's effect deviates from
    the mean by a draw the two sides share (`shared`) plus a draw of their own."""
    rng = np.random.default_rng(seed)
    people, model = [], []
    for g in range(n_clusters):
        common = rng.normal(0, 0.5)
        dev_p = shared * common + np.sqrt(1 - shared ** 2) * rng.normal(0, 0.5)
        dev_m = shared * common + np.sqrt(1 - shared ** 2) * rng.normal(0, 0.5)
        for cond, sign in (("a", -0.5), ("b", 0.5)):
            p = expit(sign * (people_effect + dev_p))
            people += [{"cluster": f"n{g}", "cond": cond, "y": y}
                       for y in rng.binomial(1, p, 40)]
            model.append({"cluster": f"n{g}", "cond": cond,
                          "y": expit(sign * (model_effect + dev_m))})
    return pd.DataFrame(people), pd.DataFrame(model)


EFFECT = [("b minus a", cells({"cond": ["a", "b"]}), np.array([-1.0, 1.0]))]


def test_pairing_shrinks_the_se_of_the_difference():
    # the sides share each cluster's deviation: the difference is more precise than
    # sqrt(se1^2 + se2^2), which would treat the two estimates as independent
    people, model = simulated_sides(30, 1.0, 1.0, shared=0.95, seed=3)
    row = paired_effect_differences(people, model, rhs="cond", effects=EFFECT,
                                    people_response="y", model_response="y",
                                    cluster="cluster", equivalence_bound=0.2).iloc[0]
    independent = np.hypot(row["people_se"], row["model_se"])
    assert row["correlation"] > 0.5
    assert row["se"] < 0.8 * independent
    assert row["df"] == 29 and row["n_clusters"] == 30


def test_verdict_words_follow_the_tests():
    far_people, far_model = simulated_sides(40, 1.5, 0.2, shared=0.9, seed=4)
    near_people, near_model = simulated_sides(400, 1.0, 1.0, shared=0.99, seed=5)
    rows = []
    for people, model in ((far_people, far_model), (near_people, near_model)):
        rows.append(paired_effect_differences(people, model, rhs="cond", effects=EFFECT,
                                              people_response="y", model_response="y",
                                              cluster="cluster", equivalence_bound=0.2))
    table = difference_verdicts(pd.concat(rows, ignore_index=True).assign(family="f"))
    assert table["verdict"].iloc[0].startswith("differs (p")
    assert table["verdict"].iloc[1] == "equivalent within ±0.2"
    assert difference_verdict(0.2, 0.3, 0.2) == "inconclusive"
    assert (table["p_holm"] >= table["p_value"]).all()


def test_a_share_outside_zero_one_is_named():
    people, model = simulated_sides(5, 1.0, 1.0, shared=0.5, seed=6)
    model.loc[3, "y"] = 1.7
    with pytest.raises(DataValidationError, match=r"model.*row 5.*'y'.*\[0, 1\]"):
        paired_effect_differences(people, model, rhs="cond", effects=EFFECT,
                                  people_response="y", model_response="y", cluster="cluster",
                                  equivalence_bound=0.2)


def test_name_gender_says_not_calibrated_from_the_record():
    """The verdict follows the calibration record: an uncalibrated permutation test flags
    every conclusion it decides, a calibrated one only the equivalence claims (TOST) whose
    design was not shown calibrated at the bound."""
    import pandas as pd

    from studies.name_gender import group_tests as G

    rows = pd.DataFrame({"test": G.PERMUTATION_TEST, "experiment": 3, "condition": "all",
                         "verdict": ["difference", "equivalent within the bound (+/-0.1)",
                                     "no evidence either way at this sensitivity"]})
    good = {"rate": 0.05, "n_panels": 600, "exact_ci95": [0.035, 0.07]}
    bad = {"rate": 0.07, "exact_ci95": [0.05, 0.09]}
    calibrated = {d: {"rates": {"permutation_p_below_05": good}} for d in G.CALIBRATION_DESIGNS}
    out = G.calibration_verdicts(rows, calibrated).tolist()
    assert out[0] == "difference" and out[1].endswith("not calibrated for this design")
    assert out[2] == "no evidence either way at this sensitivity"
    failing = {**calibrated, "analysed_binary": {"rates": {"permutation_p_below_05": bad}}}
    assert all(v.endswith("not calibrated for this design")
               for v in G.calibration_verdicts(rows, failing))
    assert not G.permutation_calibrated({})
    # the equivalence claim: calibrated only where the record's run at the bound shows a
    # false "equivalent" rate at most .05 (exact interval below .08)
    at_bound = {**calibrated, "analysed_binary" + G.AT_BOUND: {
        "rates": {"equivalence_claimed": {"rate": 0.02, "exact_ci95": [0.004, 0.06]}}}}
    assert G.calibration_verdicts(rows, at_bound).tolist()[1] == rows["verdict"][1]
    liberal = {**calibrated, "analysed_binary" + G.AT_BOUND: {
        "rates": {"equivalence_claimed": {"rate": 0.06, "exact_ci95": [0.03, 0.07]}}}}
    assert G.calibration_verdicts(rows, liberal).tolist()[1].endswith(G.NOT_CALIBRATED)
    # Exp 1 rows read their own shapes' runs (all conditions, first/last, full)
    exp1 = rows.assign(experiment=1, condition=["all", "first", "full"])
    assert G.calibration_verdicts(exp1, calibrated).tolist()[0] == "difference"
    no_full = {d: r for d, r in calibrated.items() if d != "exp1_full_binary"}
    assert G.calibration_verdicts(exp1, no_full).tolist() == [
        "difference", "equivalent within the bound (+/-0.1); not calibrated for this design",
        "no evidence either way at this sensitivity; not calibrated for this design"]
    assert G.calibrated_design(1, "last") == "exp1_single_binary"
    assert G.calibrated_design(3, "first") == "exp3_condition_binary"
    assert G.calibrated_design(2, "all") is None
    note = G.calibration_note(calibrated)
    # the table holds the data's numbers, not simulated ones: no SIMULATED label (issue 43)
    assert note.startswith("Calibration by simulation") and "SIMULATED" not in note
    assert "Not calibrated for this design: none" in note

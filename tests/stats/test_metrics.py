"""Metrics on hand-built cases, including the edge cases: no predictions, all
wrong, zero denominators. Every expected value is worked out in a comment."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from gbstats.errors import DataValidationError
from gbstats.inference.metrics import (UndefinedMetricWarning, accuracy, accuracy_from_labels,
                             confusion_counts, delta, f1, f1_from_labels, fpr,
                             group_minimum_consistency, log2_ratio)


def test_delta_is_pro_minus_anti():
    assert delta(0.9, 0.6) == pytest.approx(0.3)
    assert delta(0.6, 0.9) == pytest.approx(-0.3)
    np.testing.assert_allclose(delta([0.8, 0.5], [0.7, 0.5]), [0.1, 0.0])
    assert isinstance(delta(1, 0), float)


def test_log2_ratio_defined_cases():
    assert log2_ratio(0.4, 0.1) == pytest.approx(2.0)     # 0.4 / 0.1 = 4 = 2^2
    assert log2_ratio(0.1, 0.4) == pytest.approx(-2.0)
    assert log2_ratio(0.3, 0.3) == 0.0
    np.testing.assert_allclose(log2_ratio([1, 2], [2, 2]), [-1.0, 0.0])


def test_log2_ratio_zero_gives_nan_with_an_explanation():
    with pytest.warns(UndefinedMetricWarning, match="denominator a is 0"):
        assert np.isnan(log2_ratio(0.2, 0.0))
    with pytest.warns(UndefinedMetricWarning, match="numerator p is 0"):
        assert np.isnan(log2_ratio(0.0, 0.2))
    with pytest.warns(UndefinedMetricWarning, match="1 value"):
        out = log2_ratio([0.5, 0.5], [0.25, 0.0])
    assert out[0] == pytest.approx(1.0) and np.isnan(out[1])
    with warnings.catch_warnings():  # a defined value warns about nothing
        warnings.simplefilter("error")
        log2_ratio(0.5, 0.25)
    with pytest.raises(DataValidationError, match="must not be negative"):
        log2_ratio(-0.1, 0.2)


def test_fpr():
    # FP = 3, TN = 9: 3 / 12 = 0.25
    assert fpr(3, 9) == pytest.approx(0.25)
    assert fpr(0, 5) == 0.0
    with pytest.warns(UndefinedMetricWarning, match="no negatives"):
        assert np.isnan(fpr(0, 0))
    # log2(FPR_M / FPR_F) with FPR_M = 4/16, FPR_F = 1/16: log2(4) = 2
    assert log2_ratio(fpr(4, 12), fpr(1, 15)) == pytest.approx(2.0)


def test_accuracy():
    assert accuracy(7, 10) == pytest.approx(0.7)
    assert accuracy(0, 10) == 0.0                     # all wrong
    with pytest.warns(UndefinedMetricWarning, match="no items"):
        assert np.isnan(accuracy(0, 0))
    with pytest.raises(DataValidationError, match="more correct answers"):
        accuracy(11, 10)


def test_f1_from_counts():
    # TP = 6, FP = 2, FN = 4: precision 6/8 = .75, recall 6/10 = .6,
    # harmonic mean 2 * .75 * .6 / 1.35 = .9 / 1.35 = 2/3 = 2*6 / (12 + 2 + 4)
    assert f1(6, 2, 4) == pytest.approx(2 / 3)
    assert f1(5, 0, 0) == 1.0                        # perfect
    assert f1(0, 0, 4) == 0.0                        # no predictions: recall 0
    assert f1(0, 3, 4) == 0.0                        # all predictions wrong
    with pytest.warns(UndefinedMetricWarning, match="no positives and no positive predictions"):
        assert np.isnan(f1(0, 0, 0))
    np.testing.assert_allclose(f1([6, 5], [2, 0], [4, 0]), [2 / 3, 1.0])


def test_f1_and_accuracy_from_labels():
    y_true = ["she", "she", "he", "he", "they", "she"]
    y_pred = ["she", "he", "he", "she", "they", "she"]
    # for "she": TP = 2 (pos 0, 5), FP = 1 (pos 3), FN = 1 (pos 1), TN = 2 (pos 2, 4)
    assert confusion_counts(y_true, y_pred, positive="she") == {"tp": 2, "fp": 1,
                                                                 "fn": 1, "tn": 2}
    assert f1_from_labels(y_true, y_pred, positive="she") == pytest.approx(4 / 6)
    assert accuracy_from_labels(y_true, y_pred) == pytest.approx(4 / 6)
    # "xe" is never a label nor predicted: undefined, not 0
    with pytest.warns(UndefinedMetricWarning):
        assert np.isnan(f1_from_labels(y_true, y_pred, positive="xe"))
    with pytest.raises(DataValidationError, match="differ in length"):
        confusion_counts(y_true, y_pred[:-1], positive="she")
    with pytest.raises(DataValidationError, match="missing label"):
        confusion_counts(["she", None], ["she", "he"], positive="she")
    with pytest.warns(UndefinedMetricWarning):
        assert np.isnan(accuracy_from_labels([], []))


def test_group_minimum_consistency():
    # template t1: solved under he, she, they        -> 1
    # template t2: solved under he, she, not they    -> 0 (worst: they)
    # template t3: two sentences per cell; they 1/2, he 1, she 1 -> min .5 (they)
    table = pd.DataFrame({
        "template": ["t1"] * 3 + ["t2"] * 3 + ["t3"] * 6,
        "pronoun_set": ["he", "she", "they"] * 2 + ["he", "he", "she", "she", "they", "they"],
        "correct": [1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0]})
    out = group_minimum_consistency(table, unit="template", over="pronoun_set")
    assert list(out["template"]) == ["t1", "t2", "t3"]
    assert out["consistency"].tolist() == [1.0, 0.0, 0.5]
    assert out["worst_level"].tolist()[1:] == ["they", "they"]
    assert (out["n_levels"] == 3).all()
    assert out["consistency"].mean() == pytest.approx(0.5)


def test_group_minimum_consistency_refuses_incomplete_units():
    table = pd.DataFrame({"template": ["t1", "t1", "t2"], "pronoun_set": ["he", "she", "he"],
                          "correct": [1, 1, 1]})
    with pytest.raises(DataValidationError, match="template 't2' lacks \\['she'\\]"):
        group_minimum_consistency(table, unit="template", over="pronoun_set")
    with pytest.raises(DataValidationError, match="lacks \\['they'\\]"):
        group_minimum_consistency(table.iloc[:2], unit="template", over="pronoun_set",
                                  expected_levels=["he", "she", "they"])
    with pytest.raises(DataValidationError, match="missing or non-numeric"):
        group_minimum_consistency(table.assign(correct=[1, None, 1]), unit="template",
                                  over="pronoun_set")
    with pytest.raises(DataValidationError, match="unexpected level"):
        group_minimum_consistency(table, unit="template", over="pronoun_set",
                                  expected_levels=["he"])


# ---------------------------------------------------------------- properties

from hypothesis import given, strategies as st  # noqa: E402

counts = st.integers(min_value=0, max_value=10_000)


@given(tp=counts, fp=counts, fn=counts)
def test_f1_is_the_harmonic_mean_of_precision_and_recall(tp, fp, fn):
    if tp == 0:
        return  # precision or recall is 0 or undefined; covered by the cases above
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    assert f1(tp, fp, fn) == pytest.approx(2 * precision * recall / (precision + recall))
    assert 0 < f1(tp, fp, fn) <= 1


@given(p=st.floats(1e-6, 1.0), a=st.floats(1e-6, 1.0))
def test_log2_ratio_is_antisymmetric_and_inverts(p, a):
    assert log2_ratio(p, a) == pytest.approx(-log2_ratio(a, p), abs=1e-12)
    assert 2 ** log2_ratio(p, a) == pytest.approx(p / a)

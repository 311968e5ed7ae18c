"""Confidence sets for ranks (Mogstad, Romano, Shaikh & Wilhelm 2023) and the pairwise
differences of many models (gbstats.alignment.ranking).

Reference sets: tests/reference/ranking_hand_cases.py works each case by numerical
integration of the multivariate normal (no gbstats, no Monte Carlo) and writes
ranking_hand_cases.json. Coverage by simulation: benchmarks/ranking_calibration.py.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gbstats.alignment.ranking import (best_set, joint_covariance, pairwise_differences,
                                       rank_confidence_sets, rank_models)
from gbstats.errors import GbstatsError

REFERENCE = json.loads((Path(__file__).parents[1] / "reference" / "ranking_hand_cases.json")
                       .read_text())["cases"]


def _inputs(case: dict) -> tuple[pd.Series, pd.DataFrame]:
    estimates = pd.Series(case["estimates"], dtype=float)
    return estimates, pd.DataFrame(case["covariance"], index=estimates.index,
                                   columns=estimates.index)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_rank_sets_equal_the_sets_worked_by_integration(name):
    case = REFERENCE[name]
    estimates, covariance = _inputs(case)
    for kind, simultaneous in (("marginal", False), ("simultaneous", True)):
        got = rank_confidence_sets(estimates, covariance, simultaneous=simultaneous)
        assert list(got.columns) == ["rank", "rank_lo", "rank_hi"]
        assert all(got[c].dtype.kind == "i" for c in got.columns)
        assert got.index.equals(estimates.index)
        assert {m: [int(r.rank_lo), int(r.rank_hi)] for m, r in got.iterrows()} == case[kind], kind
    best = best_set(estimates, covariance)
    assert list(best[best].index) == case["best"]


def test_the_stepdown_orders_what_one_step_max_t_would_not():
    # three_stepdown: simultaneous one-step c = 2.344 leaves T_AB = 2.263 unrejected; the
    # second step (c = 2.196, tests/reference) rejects it, so every rank is known
    estimates, covariance = _inputs(REFERENCE["three_stepdown"])
    got = rank_confidence_sets(estimates, covariance, simultaneous=True)
    assert got[["rank_lo", "rank_hi"]].values.tolist() == [[1, 1], [2, 2], [3, 3]]
    one_step = pairwise_differences(estimates, covariance)
    ab = one_step.set_index(["model_a", "model_b"]).loc[("A", "B")]
    assert ab["ci_low"] < 0  # the one-step simultaneous interval for A - B still holds 0


def test_rank_one_is_the_largest_and_ties_share_it():
    estimates = pd.Series({"low": 0.1, "top": 0.9, "also_top": 0.9})
    covariance = pd.DataFrame(np.eye(3) * 1e-6, index=estimates.index, columns=estimates.index)
    got = rank_confidence_sets(estimates, covariance)
    assert got["rank"].to_dict() == {"low": 3, "top": 1, "also_top": 1}
    assert got.loc["low", ["rank_lo", "rank_hi"]].tolist() == [3, 3]
    assert got.loc["top", ["rank_lo", "rank_hi"]].tolist() == [1, 2]


def test_two_copies_of_one_model_cannot_be_ranked():
    # the same folder scored twice under two names: identical statistics, and their
    # covariance is singular (the difference is exactly 0 in every replicate)
    rng = np.random.default_rng(4)
    base = rng.normal(0.5, 0.05, size=1000)
    other = 0.3 + 0.6 * (base - 0.5) + rng.normal(0, 0.03, size=1000)
    draws = pd.DataFrame({"smollm": base, "smollm_copy": base, "other": other})
    estimates = pd.Series({"smollm": 0.5, "smollm_copy": 0.5, "other": 0.3})
    covariance = joint_covariance(draws)
    sets = rank_confidence_sets(estimates, covariance)
    assert sets.loc["smollm"].tolist() == sets.loc["smollm_copy"].tolist() == [1, 1, 2]
    differences = pairwise_differences(estimates, covariance, delta=0.01).set_index(
        ["model_a", "model_b"])
    copy = differences.loc[("smollm", "smollm_copy")]
    assert copy["difference"] == 0 and copy["ci_low"] <= 0 <= copy["ci_high"]
    assert copy["p_value"] == 1.0 and copy["tost_p"] == 0.0  # equal, and known to be


def test_far_apart_models_get_their_true_ranks_and_near_ones_do_not():
    truth = pd.Series({f"m{k}": float(k) for k in range(6)})
    tiny = pd.DataFrame(np.eye(6) * 0.01, index=truth.index, columns=truth.index)
    sets = rank_confidence_sets(truth, tiny, simultaneous=True)
    assert (sets["rank_lo"] == sets["rank_hi"]).all()
    assert sets["rank"].tolist() == [6, 5, 4, 3, 2, 1]
    wide = pd.DataFrame(np.eye(6) * 100.0, index=truth.index, columns=truth.index)
    sets = rank_confidence_sets(truth, wide)
    assert (sets["rank_lo"] == 1).all() and (sets["rank_hi"] == 6).all()


def test_simultaneous_sets_are_never_narrower_than_marginal_ones():
    rng = np.random.default_rng(11)
    root = rng.normal(size=(8, 8))
    covariance = pd.DataFrame(root @ root.T / 8)
    estimates = pd.Series(rng.normal(size=8) * 2.0)
    marginal = rank_confidence_sets(estimates, covariance)
    simultaneous = rank_confidence_sets(estimates, covariance, simultaneous=True)
    assert (simultaneous["rank_lo"] <= marginal["rank_lo"]).all()
    assert (simultaneous["rank_hi"] >= marginal["rank_hi"]).all()
    assert ((marginal["rank_lo"] <= marginal["rank"]) & (marginal["rank"] <= marginal["rank_hi"])).all()


def test_the_result_is_reproducible_and_follows_the_index_not_the_position():
    estimates, covariance = _inputs(REFERENCE["four_correlated"])
    once = rank_confidence_sets(estimates, covariance)
    assert once.equals(rank_confidence_sets(estimates, covariance))
    shuffled = estimates[["D", "B", "A", "C"]]
    again = rank_confidence_sets(shuffled, covariance.loc[["C", "A", "D", "B"],
                                                          ["B", "D", "C", "A"]])
    assert again.loc[once.index].equals(once)


def test_pairwise_differences_simultaneous_intervals_holm_and_tost():
    estimates, covariance = _inputs(REFERENCE["four_correlated"])
    table = pairwise_differences(estimates, covariance, delta=0.05)
    assert len(table) == 6
    row = table.set_index(["model_a", "model_b"]).loc[("A", "B")]
    se = np.sqrt(0.01 * (1 + 1 - 2 * 0.9))  # by hand: var 0.01 each, correlation 0.9
    assert row["difference"] == pytest.approx(0.05) and row["se"] == pytest.approx(se)
    # simultaneous over 6 pairs: wider than the pointwise 1.96, narrower than Bonferroni
    c = table.attrs["critical_value"]
    assert 1.96 < c < 2.88
    assert row["ci_high"] - row["ci_low"] == pytest.approx(2 * c * se)
    assert (table["p_holm"] >= table["p_value"]).all()
    # TOST by hand: max(P(Z > (d + delta)/se), P(Z > (delta - d)/se)) with d = 0.05 = delta
    from scipy import stats
    assert row["tost_p"] == pytest.approx(max(stats.norm.sf(0.1 / se), stats.norm.sf(0.0)))


@pytest.mark.parametrize("estimates, covariance, message", [
    (pd.Series({"a": 1.0}), pd.DataFrame([[1.0]], index=["a"], columns=["a"]), "at least 2"),
    (pd.Series({"a": 1.0, "b": 0.0}), pd.DataFrame(np.eye(2), index=["a", "c"], columns=["a", "c"]),
     "no row or column for model(s) b"),
    (pd.Series({"a": 1.0, "b": np.nan}), pd.DataFrame(np.eye(2), index=["a", "b"], columns=["a", "b"]),
     "finite numbers; not for model(s) b"),
    (pd.Series({"a": 1.0, "b": 0.0}), pd.DataFrame([[1.0, 2.0], [2.0, 1.0]], index=["a", "b"],
                                                   columns=["a", "b"]), "positive semi-definite"),
    (pd.Series({"a": 1.0, "b": 0.0}), pd.DataFrame([[1.0, 0.5], [0.0, 1.0]], index=["a", "b"],
                                                   columns=["a", "b"]), "symmetric"),
    (pd.Series([1.0, 0.0], index=["a", "a"]), pd.DataFrame(np.eye(2), index=["a", "b"],
                                                            columns=["a", "b"]), "repeated: a"),
    ([1.0, 0.0], pd.DataFrame(np.eye(2)), "pandas Series"),
])
def test_bad_inputs_are_refused_with_what_was_expected(estimates, covariance, message):
    with pytest.raises(GbstatsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        rank_confidence_sets(estimates, covariance)


def test_a_level_that_is_not_a_probability_is_refused():
    estimates, covariance = _inputs(REFERENCE["two_tied"])
    with pytest.raises(GbstatsError, match="level must be a probability"):
        rank_confidence_sets(estimates, covariance, level=95)


def test_joint_covariance_refuses_replicates_a_model_lacks():
    draws = pd.DataFrame({"a": [0.1, 0.2, np.nan, 0.3, 0.2], "b": [0.1, 0.1, 0.2, 0.3, 0.1]})
    with pytest.raises(GbstatsError, match=r"a \(1 of 5\)"):
        joint_covariance(draws)


# --- rank_models: one joint two-way bootstrap shared by every model -------------------

def _people_and_models(seed: int = 3, n_items: int = 60, n_people: int = 80):
    """Items in 20 clusters of 3 whose people's values and models' errors are both shared
    within a cluster (as the items of one first name are); people rate every item."""
    rng = np.random.default_rng(seed)
    cluster = np.arange(n_items) // 3
    mu = 0.8 * rng.normal(size=20)[cluster] + 0.6 * rng.normal(size=n_items)
    clustered = rng.normal(size=20)[cluster]
    items = pd.DataFrame({"item": np.arange(n_items), "name": cluster,
                          "good": 0.8 * mu + 0.6 * clustered,
                          "weak": 0.3 * mu + 0.9 * clustered + 0.3 * rng.normal(size=n_items)})
    items["good_copy"] = items["good"]
    people = pd.DataFrame([(p, i, mu[i] + rng.normal(0, 1.5)) for p in range(n_people)
                           for i in range(n_items)], columns=["participant", "item", "rating"])
    return items, people


def test_two_copies_of_one_model_get_identical_statistics_and_cannot_be_ranked():
    items, people = _people_and_models()
    result = rank_models(items, people, models=["good", "good_copy", "weak"], n_boot=400,
                         seed=1)
    r = result.ranking
    assert r.loc["good", "estimate"] == r.loc["good_copy", "estimate"]
    assert r.loc["good", "se"] == pytest.approx(r.loc["good_copy", "se"], rel=1e-12)
    assert (result.draws["good"] == result.draws["good_copy"]).all()
    pair = result.differences.set_index(["model_a", "model_b"]).loc[("good", "good_copy")]
    assert pair["ci_low"] <= 0 <= pair["ci_high"] and not pair["differs"]
    assert r.loc["good", ["rank_lo_marginal", "rank_hi_marginal"]].tolist() == [1, 2]
    assert r.loc["good_copy", ["rank_lo_marginal", "rank_hi_marginal"]].tolist() == [1, 2]
    record = result.records()
    row = next(x for x in record["model_ranking"] if x["model"] == "good_copy")
    assert row["rank_set_marginal"] == [1, 2] and isinstance(row["in_best_set"], bool)
    json.dumps(record)  # JSON-ready as it is


def test_the_estimate_is_the_correlation_with_people_item_means_and_the_ceiling_bounds_it():
    items, people = _people_and_models()
    result = rank_models(items, people, models=["good", "weak"], n_boot=300, seed=2)
    means = people.groupby("item")["rating"].mean()
    assert result.ranking.loc["good", "estimate"] == pytest.approx(
        np.corrcoef(items.set_index("item")["good"].loc[means.index], means)[0, 1], rel=1e-12)
    # by hand: 80 raters of noise SD 1.5 over an item SD of 1 give a split-half reliability
    # near 40 / (40 + 2.25) per half, Spearman-Brown to about .97, ceiling about .99
    assert 0.95 < result.ceiling["estimate"] < 1.0
    assert result.ranking["share_of_ceiling"].tolist() == pytest.approx(
        (result.ranking["estimate"] / result.ceiling["estimate"]).tolist())


def test_resampling_the_clusters_widens_the_intervals_when_errors_cluster():
    items, people = _people_and_models()
    by_item = rank_models(items, people, models=["good", "weak"], n_boot=600, seed=5)
    by_name = rank_models(items, people, models=["good", "weak"], n_boot=600, seed=5,
                          cluster="name")
    assert (by_name.ranking["se"] > by_item.ranking["se"]).all()
    assert by_name.settings["resampled"] == "participants x clusters of items (name)"
    assert by_name.settings["n_clusters"] == 20


@pytest.mark.parametrize("kwargs, message", [
    (dict(models=["good"]), "at least 2 models"),
    (dict(models=["good", "good"]), "repeated: good"),
    (dict(models=["good", "gpt2"]), "no column for model(s) gpt2"),
    (dict(models=["good", "weak"], n_boot=50), "n_boot must be a whole number >= 200"),
    (dict(models=["good", "weak"], cluster="story"), "no column 'story'"),
])
def test_rank_models_refuses_what_it_cannot_rank(kwargs, message):
    items, people = _people_and_models(n_people=10)
    with pytest.raises(GbstatsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        rank_models(items, people, **kwargs)


def test_the_ranking_figures_draw_every_model_with_labelled_axes(tmp_path):
    from gbstats.report.figures import savefig, unlabelled_axes
    from gbstats.report.ranking_figures import difference_heatmap, ranking_forest

    items, people = _people_and_models()
    result = rank_models(items, people, models=["good", "good_copy", "weak"], n_boot=300,
                         seed=3)
    forest = ranking_forest(result, simulated=True)
    heat = difference_heatmap(result)
    assert unlabelled_axes(forest) == [] and unlabelled_axes(heat) == []
    assert forest.axes[0].get_title().startswith("SIMULATED")
    ticks = [t.get_text() for t in forest.axes[0].get_yticklabels()]
    assert sorted(ticks) == ["good", "good_copy", "weak"]
    texts = [t.get_text() for t in heat.axes[0].texts]
    assert "0.00" in texts and "-0.00" not in texts        # the two copies' difference
    assert savefig(forest, tmp_path / "forest.png").stat().st_size > 0


def test_a_ranking_is_written_into_a_report_as_words_table_figures_and_json(tmp_path):
    from gbstats.report.provenance import provenance
    from gbstats.report.ranking_report import ranking_in_words, write_ranking
    from gbstats.report.study_report import StudyReport

    items, people = _people_and_models()
    result = rank_models(items, people, models=["good", "good_copy", "weak"], n_boot=300,
                         seed=3)
    words = ranking_in_words(result)
    assert "good and good_copy cannot be ranked against each other (rank sets [1, 2] each)" \
        in words
    report = StudyReport("demo", tmp_path / "out", "Demo")
    write_ranking(report, result, statistic="correlation with people's item means")
    paths = report.write(provenance("demo", ["python", "-m", "studies.demo"], seed=1))
    tables = json.loads(paths["results"].read_text())["tables"]
    rows = {r["model"]: r for r in tables["model_ranking"]}
    assert rows["good_copy"]["rank_set_marginal"] == [1, 2]
    assert {"model_a", "model_b", "p_holm", "tost_p"} <= set(tables["model_differences"][0])
    tex = paths["table:model_ranking"].read_text()
    assert "good\\_copy" in tex and "Mogstad" in tex and "sqrt" not in tex
    assert {p.name for p in (tmp_path / "out" / "figures").iterdir()} == {
        "model_ranking_forest.png", "model_ranking_differences.png"}


def test_estimates_equal_up_to_rounding_share_their_rank():
    """One model computed along two paths (the embedded GGUF, its converted folder) agrees
    to rounding only: 0.679 and 0.679 + 1e-15 are one tie, not ranks 1 and 2."""
    from gbstats.alignment.ranking import point_ranks

    ranks = point_ranks(np.array([0.679, 0.679 + 1e-15, 0.08, 0.679 - 1e-6]))
    assert ranks.tolist() == [1, 1, 4, 3]

"""studies.cognitive_bias: the analysis functions on hand-built tables, the human
accuracies against the authors' published table, lme4 against an R script, and
the command end to end (without and with the language model)."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gbstats.errors import DataValidationError
from gbstats.exclusions import ExclusionLog
from studies.cognitive_bias import analysis as A
from studies.cognitive_bias import lm_coreference as LM
from studies.cognitive_bias import maze as M
from studies.cognitive_bias.run import main

REFERENCE_R = (Path(__file__).resolve().parents[2] / "studies" / "cognitive_bias" / "reference"
               / "glmm_reference.R")


def qa_rows(spec):
    """QA trials from (dataset, alpha, condition, is_correct, non_coreference) tuples."""
    rows = []
    for i, (dataset, alpha, condition, correct, nonco) in enumerate(spec):
        rows.append({"dataset": dataset, "participant": f"p{i % 2}", "sentence_id": i,
                     "alpha": alpha, "condition": condition, "is_correct": correct,
                     "non_coreference": nonco})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- QA tables

def test_fillers_and_neutral_items_are_counted_and_left_out():
    qa = qa_rows([("wino", 0.25, "pro", True, False), ("wino", 0.25, "filler", True, False),
                  ("wino", 0.5, "neutral", False, False), ("BUG", 0.5, "filler", False, False),
                  ("BUG", 0.5, "anti", True, False)])
    log = ExclusionLog()
    out = A.critical_trials(qa, log)
    assert list(out["condition"]) == ["pro", "anti"]
    counts = {r["reason"]: r["n"] for r in log.to_records()}
    assert counts == {"wino QA: filler question (not a coreference item)": 1,
                      "wino QA: neutral item (no stereotype condition)": 1,
                      "BUG QA: filler question (not a coreference item)": 1,
                      "BUG QA: neutral item (no stereotype condition)": 0}


def test_accuracy_ignores_non_coreference_answers_only_where_asked():
    # wino alpha 0.25 pro: 2 correct, 1 wrong (unknown), 1 non-coreference -> 2/3, 1 ignored.
    # BUG alpha 0.25 anti: 1 correct, 1 non-coreference (kept in BUG by default) -> 1/2.
    qa = qa_rows([("wino", 0.25, "pro", True, False), ("wino", 0.25, "pro", True, False),
                  ("wino", 0.25, "pro", False, False), ("wino", 0.25, "pro", False, True),
                  ("BUG", 0.25, "anti", True, False), ("BUG", 0.25, "anti", False, True)])
    trials = A.mark_ignored(qa)
    acc = A.human_accuracy(trials).set_index(["dataset", "condition"])
    assert acc.loc[("wino", "pro"), ["n_correct", "n_total", "n_ignored"]].tolist() == [2, 3, 1]
    assert acc.loc[("wino", "pro"), "accuracy"] == pytest.approx(2 / 3)
    assert acc.loc[("BUG", "anti"), ["n_correct", "n_total", "n_ignored"]].tolist() == [1, 2, 0]

    both = A.human_accuracy(A.mark_ignored(qa, ("wino", "BUG"))).set_index(["dataset", "condition"])
    assert both.loc[("BUG", "anti"), ["n_correct", "n_total", "n_ignored"]].tolist() == [1, 1, 1]

    log = ExclusionLog()
    kept = A.drop_ignored(trials, log)
    assert len(kept) == 5 and sum(r["n"] for r in log.to_records()) == 1


def test_unknown_dataset_for_ignoring_is_an_error():
    with pytest.raises(Exception, match="unknown dataset"):
        A.mark_ignored(qa_rows([("wino", 0.25, "pro", True, False)]), ("winobias",))


def test_qa_delta_is_pro_minus_anti_per_alpha_and_system():
    acc = pd.DataFrame([
        ("wino", "human", 0.25, "pro", 8, 10, 0.8, 0),
        ("wino", "human", 0.25, "anti", 6, 10, 0.6, 0),
        ("wino", "s2e", np.nan, "pro", 9, 10, 0.9, 0),
        ("wino", "s2e", np.nan, "anti", 3, 4, 0.75, 0),
    ], columns=A.ACCURACY_COLUMNS)
    delta = A.qa_delta(acc)
    assert list(delta["source"]) == ["human", "s2e"]
    assert delta["delta"].tolist() == pytest.approx([0.2, 0.15])
    assert np.isnan(delta["alpha"].iloc[1]) and delta["n_anti"].tolist() == [10, 4]


def test_system_rows_restricted_to_sentences_people_saw_and_conditions_checked():
    links = pd.DataFrame({"model": "s2e", "dataset": "wino", "sentence_id": [1, 2, 3],
                          "condition": ["pro", "anti", "pro"],
                          "linked_correct": [True, False, True]})
    seen = pd.DataFrame({"dataset": "wino", "sentence_id": [1, 2], "condition": ["pro", "anti"]})
    log = ExclusionLog()
    kept = A.on_human_sentences(links, seen, log)
    assert kept["sentence_id"].tolist() == [1, 2]
    assert [r["n"] for r in log.to_records()] == [1]
    acc = A.system_accuracy(kept).set_index("condition")
    assert acc.loc["pro", "accuracy"] == 1.0 and acc.loc["anti", "accuracy"] == 0.0

    with pytest.raises(DataValidationError, match="disagree"):
        A.on_human_sentences(links, seen.assign(condition=["anti", "anti"]), ExclusionLog())


# --------------------------------------------------------------------------- human scale

@pytest.mark.parametrize("target, expected, where", [
    (0.7, 0.375, "within"),     # halfway between 0.6 (alpha .25) and 0.8 (alpha .5)
    (0.85, 0.625, "within"),    # halfway between 0.8 (alpha .5) and 0.9 (alpha .75)
    (0.6, 0.25, "within"),
    (0.5, np.nan, "below"),
    (0.95, np.nan, "above"),
])
def test_interpolated_alpha(target, expected, where):
    alpha, position = A.interpolated_alpha([0.75, 0.25, 0.5], [0.9, 0.6, 0.8], target)
    assert position == where
    assert alpha == pytest.approx(expected, nan_ok=True)


def test_interpolated_alpha_takes_the_first_crossing_of_a_non_monotone_curve():
    # 0.7 -> 0.9 -> 0.8: 0.85 is crossed first at 0.25 + (0.85-0.7)/(0.9-0.7) * 0.25
    # = 0.4375, and again at 0.5 + (0.9-0.85)/(0.9-0.8) * 0.25 = 0.625.
    alpha, _ = A.interpolated_alpha([0.25, 0.5, 0.75], [0.7, 0.9, 0.8], 0.85)
    assert alpha == pytest.approx(0.4375)


def test_prob_effect_grows_under_pressure_counts_negative_interactions():
    assert A.prob_effect_grows_under_pressure(np.array([-1.0, -0.5, 0.2, 0.3])) == 0.5


def test_glmm_rows_coding():
    trials = qa_rows([("wino", 0.25, "pro", True, False), ("wino", 0.75, "anti", False, False)])
    rows = A.glmm_rows(trials)
    assert list(rows["stereotype"].cat.categories) == ["anti", "pro"]
    assert rows["correct"].tolist() == [1, 0] and rows["alpha"].tolist() == [0.25, 0.75]
    factor = A.alpha_as_factor(rows)
    assert list(factor["alpha"].cat.categories) == ["0.75", "0.5", "0.25"]
    assert factor["alpha"].astype(str).tolist() == ["0.25", "0.75"]


# --------------------------------------------------------------------------- MAZE

def test_iqr_rule():
    # Q1 = 2, Q3 = 4 (linear percentiles of 1..5 with 100 replacing 5: 1,2,3,4,100),
    # IQR = 2, fences -1 and 7: only 100 is out.
    times = pd.Series([1.0, 2.0, 3.0, 4.0, 100.0])
    assert M.iqr_outliers(times).tolist() == [False, False, False, False, True]


def test_outliers_per_dataset_and_condition_are_counted():
    maze = pd.DataFrame({"dataset": "wino", "condition": ["pro"] * 5 + ["anti"] * 5,
                         "time_to_answer": [1, 2, 3, 4, 100, 10, 20, 30, 40, 50.0]})
    log = ExclusionLog()
    kept, shares = M.remove_outliers(maze, log)
    assert len(kept) == 9
    assert shares.set_index("condition")["n_outliers"].to_dict() == {"pro": 1, "anti": 0}
    assert [r["n"] for r in log.to_records()] == [1, 0]


def test_maze_delta_is_anti_minus_pro_quantile():
    pro = np.arange(1, 101, dtype=float)
    maze = pd.DataFrame({"dataset": "BUG", "condition": ["pro"] * 100 + ["anti"] * 100,
                         "time_to_answer": np.concatenate([pro, pro + 5])})
    delta = M.maze_delta(maze, grid=np.array([0.1, 0.5, 0.9]))
    # inverted_cdf of 1..100 at p is the ceil(100 p)-th value: 10, 50, 90
    assert delta["quantile_pro"].tolist() == [10, 50, 90]
    assert delta["delta"].tolist() == [5, 5, 5]


# --------------------------------------------------------------------------- LM coreference

@pytest.mark.parametrize("sentence, pronoun, form, expected", [
    ("The sheriff questioned the housekeeper as she needed to find out the thief.", "she", None,
     "The sheriff questioned the housekeeper as the nurse needed to find out the thief."),
    ("She left early.", "she", None, "The nurse left early."),
    ("The CEO paid for his goods.", "his", None, "The CEO paid for the nurse's goods."),
    ("The clerk smiled at her.", "her", None, "The clerk smiled at the nurse."),
    ("The clerk told her someone called.", "her", "object",
     "The clerk told the nurse someone called."),
    ("The clerk took her coat.", "her", None, "The clerk took the nurse's coat."),
    ("The clerk cheated her out of her money.", "her", None,
     "The clerk cheated the nurse out of the nurse's money."),
])
def test_substitute_pronoun(sentence, pronoun, form, expected):
    assert LM.substitute_pronoun(sentence, pronoun, "nurse", form) == expected


def test_substitute_someone_takes_no_article_and_missing_pronoun_raises():
    assert LM.substitute_pronoun("I saw him.", "him", "Someone") == "I saw someone."
    with pytest.raises(DataValidationError, match="pronoun not found"):
        LM.substitute_pronoun("Nobody here.", "she", "nurse")


def test_her_forms_come_from_the_masculine_twin():
    pool = pd.DataFrame({"sentence_id": [1, 2, 3, 4],
                         "sentence": ["A told her that.", "A told him that.",
                                      "A took her coat.", "A took his coat."],
                         "pronoun": ["her", "him", "her", "his"]})
    assert LM.her_forms(pool).to_dict() == {1: "object", 3: "possessive"}


def test_resolve_counts_ties_as_not_correct():
    scored = pd.DataFrame({"model": "m", "dataset": "wino", "sentence_id": [1, 1, 2, 2, 3, 3],
                           "condition": "pro",
                           "candidate": ["referent", "other"] * 3,
                           "logprob": [-1.0, -2.0, -3.0, -2.0, -4.0, -4.0]})
    resolved = LM.resolve(scored).set_index("sentence_id")
    assert resolved["resolved_correct"].to_dict() == {1: True, 2: False, 3: False}


def test_select_sentences_balances_conditions():
    sentences = pd.DataFrame({"dataset": "wino", "sentence_id": range(10),
                              "condition": ["pro", "anti"] * 5})
    chosen = LM.select_sentences(sentences, 5)
    assert chosen["condition"].value_counts().to_dict() == {"pro": 3, "anti": 2}
    assert chosen["sentence_id"].tolist() == [0, 1, 2, 3, 4]


# --------------------------------------------------------------------------- real data

@pytest.fixture(scope="module")
def loaded(data_dir):
    from gbstats.data.registry import load_dataset

    return load_dataset("cog_gb_eval2023", data_dir)


@pytest.fixture(scope="module")
def human_table(loaded):
    trials = A.mark_ignored(A.critical_trials(loaded.tables["qa"], ExclusionLog()))
    return trials, A.human_accuracy(trials)


# The authors' published accuracies (percent), from experiment_results/processed/
# combined_table.md in SLAB-NLP/Cog-GB-Eval at commit c5c3a1f2 (the paper's Table 2
# numbers for people), computed by their generate_human_results_table.py.
AUTHORS_TABLE = {
    ("wino", 0.75): (89.80, 89.72), ("wino", 0.5): (88.76, 87.56), ("wino", 0.25): (78.66, 78.50),
    ("BUG", 0.75): (87.77, 82.81), ("BUG", 0.5): (85.66, 79.14), ("BUG", 0.25): (82.58, 75.69),
}


def test_human_accuracy_matches_the_authors_table(human_table):
    # Tolerance 0.5 points: the loader keeps the first of a response recorded
    # twice at one session position (62 wino, 32 BUG trials, spread over 12 cells
    # of ~600) and drops participants missing from the calibration file; the
    # authors counted the repeats. E.g. wino alpha 0.75 anti: theirs 567/632, ours
    # two fewer of each, a 0.03-point change. Larger gaps would mean a different rule.
    _, acc = human_table
    for (dataset, alpha), (pro, anti) in AUTHORS_TABLE.items():
        cells = acc[(acc["dataset"] == dataset) & (acc["alpha"] == alpha)].set_index("condition")
        assert 100 * cells.loc["pro", "accuracy"] == pytest.approx(pro, abs=0.5), (dataset, alpha)
        assert 100 * cells.loc["anti", "accuracy"] == pytest.approx(anti, abs=0.5), (dataset, alpha)


def test_ignored_answers_are_the_wino_non_coreference_answers(human_table):
    trials, acc = human_table
    wino = trials[trials["dataset"] == "wino"]
    assert acc.loc[acc["dataset"] == "wino", "n_ignored"].sum() == wino["non_coreference"].sum()
    assert acc.loc[acc["dataset"] == "BUG", "n_ignored"].sum() == 0
    # every cell's trials are accounted for: analysed + ignored = all pro/anti trials
    assert (acc["n_total"] + acc["n_ignored"]).sum() == len(trials)


@pytest.mark.needs_r
@pytest.mark.slow
def test_lme4_glmm_matches_a_direct_r_fit(human_table, tmp_path):
    """gbstats' fit of the wino GLMM (alpha as a factor) equals lme4 called from an R
    script that spells out the same coding (studies/cognitive_bias/reference/)."""
    from gbstats.lmm import fit_glmm

    trials, _ = human_table
    analysed = A.drop_ignored(trials, ExclusionLog())
    rows = A.glmm_rows(analysed[analysed["dataset"] == "wino"]).drop(columns="dataset")
    # half of the participants keeps the two fits short; the comparison holds for any rows
    half = sorted(rows["participant"].unique())[::2]
    rows = rows[rows["participant"].isin(half)].reset_index(drop=True)
    rows.to_csv(tmp_path / "rows.csv", index=False)
    subprocess.run([shutil.which("Rscript"), str(REFERENCE_R), str(tmp_path / "rows.csv"),
                    str(tmp_path / "coefs.csv"), "factor"], check=True, capture_output=True)
    reference = pd.read_csv(tmp_path / "coefs.csv")
    ours = fit_glmm(A.GLMM_FORMULA, A.alpha_as_factor(rows), backend="lme4").coefs
    assert ours["term"].tolist() == reference["term"].tolist()
    np.testing.assert_allclose(ours["estimate"], reference["estimate"], rtol=1e-4)
    np.testing.assert_allclose(ours["se"], reference["se"], rtol=1e-3)


@pytest.mark.slow
def test_bayesian_twin_reports_the_interaction_posterior():
    """Structure on a small seeded simulation with a known negative interaction.

    Simulated log-odds: 1 + 1.5*pro + 2*alpha - 3*pro*alpha, 40 participants x 12
    trials, no random variation. With true beta = -3 and 480 trials the posterior
    mass below 0 should be large; the check is loose (> 0.8) because it is a
    structure test with few draws, not a recovery test.
    """
    rng = np.random.default_rng(7)
    n = 480
    pro = rng.integers(0, 2, n)
    alpha = rng.choice([0.25, 0.5, 0.75], n)
    eta = 1 + 1.5 * pro + 2 * alpha - 3 * pro * alpha
    rows = pd.DataFrame({
        "correct": (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int),
        "stereotype": pd.Categorical(np.where(pro == 1, "pro", "anti"), categories=["anti", "pro"]),
        "alpha": alpha, "participant": [f"p{i % 40}" for i in range(n)],
        "sentence": [f"s{i % 60}" for i in range(n)]})
    fits = {"sim": A.fit_stereotype_alpha(rows, lme4=False, bayes=True, draws=100, seed=3)}
    table = A.glmm_table(fits)
    assert table["term"].tolist() == ["(Intercept)", "stereotypepro", "alpha", A.INTERACTION_TERM]
    summary = A.posterior_summary(fits).iloc[0]
    assert summary["n_draws"] == 200   # 2 chains x 100 draws
    assert summary["p_effect_grows_as_alpha_shrinks"] > 0.8


# --------------------------------------------------------------------------- end to end

@pytest.fixture(scope="module")
def run_without_models(data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("cognitive_bias")
    code = main(["--model", "none", "--no-lme4", "--no-bayes", "--out", str(out),
                 "--data-dir", str(data_dir)])
    assert code == 0
    return out, json.loads((out / "results.json").read_text())


@pytest.mark.slow
def test_end_to_end_tables_and_files(run_without_models, loaded):
    out, results = run_without_models
    tables = results["tables"]
    for name in ("qa_accuracy", "qa_delta", "glmm_stereotype_alpha", "maze_delta"):
        assert name in tables
    acc = pd.DataFrame(tables["qa_accuracy"])
    assert list(acc.columns) == A.ACCURACY_COLUMNS
    # one record per dataset x source x condition (x alpha for people)
    humans = acc[acc["source"] == "human"]
    assert len(humans) == 2 * 3 * 2 and set(humans["alpha"]) == {0.25, 0.5, 0.75}
    systems = acc[acc["source"] != "human"]
    assert sorted(set(systems["source"])) == ["SpanBERT", "s2e"]
    assert len(systems) == 2 * 2 * 2 and systems["alpha"].isna().all()
    assert (acc["accuracy"] == acc["n_correct"] / acc["n_total"]).all()
    assert set(acc["condition"]) == {"pro", "anti"} and set(acc["dataset"]) == {"wino", "BUG"}

    delta = pd.DataFrame(tables["maze_delta"])
    assert (delta["delta"] == delta["quantile_anti"] - delta["quantile_pro"]).all()
    for f in ("report.md", "figures/maze_cdf_wino.png", "figures/maze_cdf_BUG.png",
              "figures/maze_delta.png", "figures/human_scale.png", "tables/qa_accuracy.tex"):
        assert (out / f).exists(), f

    # every filler trial is counted as an exclusion
    reasons = {r["reason"]: r["n"] for r in results["exclusions"]}
    qa = loaded.tables["qa"]
    for dataset in ("wino", "BUG"):
        n_fillers = int(((qa["dataset"] == dataset) & (qa["condition"] == "filler")).sum())
        assert reasons[f"{dataset} QA: filler question (not a coreference item)"] == n_fillers
    assert any("outside Q1" in r for r in reasons)


@pytest.mark.needs_model
@pytest.mark.slow
def test_end_to_end_with_the_language_model(data_dir, tmp_path):
    out = tmp_path / "run"
    code = main(["--limit", "4", "--no-lme4", "--no-bayes", "--out", str(out),
                 "--data-dir", str(data_dir), "--cache-dir", str(tmp_path / "cache")])
    assert code == 0
    acc = pd.DataFrame(json.loads((out / "results.json").read_text())["tables"]["qa_accuracy"])
    lm_rows = acc[acc["source"] == "smollm2-135m"]
    assert lm_rows[["dataset", "condition", "n_total"]].values.tolist() == [
        ["wino", "pro", 2], ["wino", "anti", 2]]
    resolved = pd.read_csv(out / "lm_resolutions.csv")
    assert len(resolved) == 4
    assert ((resolved["margin"] > 0) == resolved["resolved_correct"]).all()
    assert np.allclose(resolved["margin"], resolved["logprob_referent"] - resolved["logprob_other"])


@pytest.mark.needs_r
def test_marginal_accuracy_per_stereotype_and_alpha():
    """Marginal accuracy per stereotype x alpha from the alpha-factor GLMM, and
    pro - anti at each alpha. On the probability scale the contrast at an
    alpha is the difference of that alpha's two marginal means (emmeans'
    regrid; the R comparison is tests/stats/test_toolkit.py's
    glmm_response_reverse case)."""
    rng = np.random.default_rng(5)
    n = 1200
    pro = rng.integers(0, 2, n)
    alpha = rng.choice([0.25, 0.5, 0.75], n)
    participant = rng.integers(0, 40, n)
    eta = 1 + 1.5 * pro + 2 * alpha - 2 * pro * alpha + rng.normal(0, 0.5, 40)[participant]
    rows = pd.DataFrame({
        "correct": (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int),
        "stereotype": pd.Categorical(np.where(pro == 1, "pro", "anti"), categories=["anti", "pro"]),
        "alpha": alpha, "participant": [f"p{i}" for i in participant],
        "sentence": [f"s{i % 60}" for i in range(n)]})
    glmms = {"sim": A.fit_stereotype_alpha(rows, lme4=True, bayes=False, draws=0, seed=1)}
    means, contrasts, notes = A.marginal_accuracy(glmms)
    assert len(means) == 6 and set(means["stereotype"]) == {"anti", "pro"}
    assert means["estimate"].between(0, 1).all()
    assert list(contrasts["contrast"]) == ["pro - anti"] * 3
    assert list(contrasts["alpha"]) == A.ALPHA_FACTOR_LEVELS
    wide = means.pivot(index="alpha", columns="stereotype", values="estimate")
    np.testing.assert_allclose(contrasts.set_index("alpha")["estimate"],
                               (wide["pro"] - wide["anti"]).loc[contrasts["alpha"]], rtol=1e-6)
    assert any("probabilities" in n for n in notes)
    assert "treatment (reference level 'anti')" in A.coding_note(glmms)

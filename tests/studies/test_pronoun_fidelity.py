"""studies.pronoun_fidelity: the RUFF generator, the balanced sampler, the analyses, a small run.

Reference values:
- instance counts: the table in issue 8 (Gautam et al. 2024, Appendix B);
- rendered texts: written by hand from the templates printed in the comments;
- statistics on hand-built tables: derived in the comments, or from scipy
  (an implementation independent of gbstats) where a formula is long.
"""
from __future__ import annotations

import json
import types
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from gbstats.data.registry import load_dataset
from gbstats.errors import DataValidationError
from gbstats.exclusions import ExclusionLog
from studies.pronoun_fidelity import analysis as A
from studies.pronoun_fidelity.instances import (Instance, Templates, count_instances,
                                                instance_counts, iter_instances, sample_instances)
from studies.pronoun_fidelity.run import main, parse_distractors

# issue 8's table of unique instances
ISSUE_COUNTS = {0: 7_200, 1: 86_400, 2: 345_600, 3: 1_036_800, 4: 2_073_600, 5: 2_073_600}


@pytest.fixture(scope="module")
def ruff(data_dir):
    loaded = load_dataset("ruff2024", data_dir)
    return loaded.tables["task"], loaded.tables["context"]


# --- counting and streaming ------------------------------------------------------------

def test_counts_reproduce_the_issue_table(ruff):
    """Per task template (180) and true pronoun set (4): 10 introductions; with
    distractors x 3 other sets x 4 first distractors x 4!/(4-(n-1))! implicit
    orders, e.g. n=2: 720 x 10 x 3 x 4 x 4 = 345,600."""
    task, context = ruff
    counts = instance_counts(task, context)
    assert dict(zip(counts["n_distractors"], counts["n_instances"])) == ISSUE_COUNTS


@pytest.mark.parametrize("n_distractors", [0, 1, 2])
def test_streaming_yields_exactly_the_counted_unique_instances(ruff, n_distractors):
    task, context = ruff
    stream = iter_instances(task, context, n_distractors)
    assert isinstance(stream, types.GeneratorType)      # lazy, nothing built up front
    ids = set()
    for inst in stream:
        assert inst.n_distractors == n_distractors
        ids.add(inst.instance_id)
    assert len(ids) == ISSUE_COUNTS[n_distractors] == count_instances(task, context, n_distractors)


def test_streamed_instances_follow_the_assembly_rules(ruff):
    task, context = ruff
    accountant = task[task["occupation"] == "accountant"]    # 3 cases: 34,560 instances
    for inst in iter_instances(accountant, context, 5):
        assert inst.distractor_set != inst.pronoun_set
        assert inst.first_distractor_index != inst.intro_index        # not the matching pair
        assert len(set(inst.implicit_indices)) == 4                    # without replacement
        assert inst.first_distractor_index not in inst.implicit_indices


def test_unsupported_distractor_count_is_an_error(ruff):
    task, context = ruff
    with pytest.raises(DataValidationError, match="0 to 5"):
        next(iter_instances(task, context, 6))


def test_an_instance_renders_as_written_by_hand(ruff):
    # nominative.positive.0 explicit: "The $O thought that $NOM had been having a good day."
    # nominative.negative.1 explicit: "The $O stifled a yawn; $NOM felt tired."
    # nominative.negative.0 implicit: "$NOM had been having a bad day." (the introduction's
    #   index, added back for implicit distractors)
    # task accountant/nominative (participant taxpayer):
    #   "The accountant was needed because $NOM_PRONOUN could help with tax preparation."
    templates = Templates(*ruff)
    inst = Instance("accountant", "nominative", "xe", "positive", 0, "she", 1, (0,))
    assert templates.frame(inst) == (
        "The accountant thought that xe had been having a good day. "
        "The taxpayer stifled a yawn; she felt tired. "
        "She had been having a bad day. "
        "The accountant was needed because [BLANK] could help with tax preparation.")
    assert inst.context_template == "nominative.positive.0"
    plain = Instance("accountant", "possessive", "they", "negative", 3)
    # possessive.negative.3: "The $O was unhappy because $POSS shoes were too small."
    assert templates.frame(plain).startswith(
        "The accountant was unhappy because their shoes were too small. The accountant ")


# --- the balanced sample ----------------------------------------------------------------

def test_full_sample_is_balanced_and_unique(ruff):
    task, context = ruff
    sample = sample_instances(task, context, 5, 2160, seed=7)
    assert len({i.instance_id for i in sample}) == 2160
    cells = Counter((i.occupation, i.case, i.pronoun_set, i.distractor_set) for i in sample)
    # 60 x 3 x 4 x 3 = 2,160 cells, each exactly once
    assert len(cells) == 2160 and set(cells.values()) == {1}
    for inst in sample:
        assert inst.n_distractors == 5
        assert inst.first_distractor_index != inst.intro_index
        assert len(set(inst.implicit_indices) | {inst.first_distractor_index}) == 5


def test_sample_without_distractors_uses_three_different_introductions(ruff):
    task, context = ruff
    sample = sample_instances(task, context, 0, 2160, seed=7)
    assert len({i.instance_id for i in sample}) == 2160
    per_cell = Counter((i.occupation, i.case, i.pronoun_set) for i in sample)
    assert len(per_cell) == 720 and set(per_cell.values()) == {3}     # 2,160 / (180 x 4)


def test_small_samples_are_balanced_in_blocks_of_36(ruff):
    task, context = ruff
    sample = sample_instances(task, context, 2, 72, seed=3)
    groups = Counter((i.case, i.pronoun_set, i.distractor_set) for i in sample)
    assert len(groups) == 36 and set(groups.values()) == {2}          # 3 x 4 x 3 groups
    first_block = sample[:36]
    assert len({i.occupation for i in first_block}) == 36
    assert Counter(i.pronoun_set for i in sample) == {s: 18 for s in ("he", "she", "they", "xe")}


def test_sampled_instances_belong_to_the_full_set(ruff):
    task, context = ruff
    full = {i.instance_id for i in iter_instances(task, context, 1)}
    sample = sample_instances(task, context, 1, 500, seed=11)
    assert {i.instance_id for i in sample} <= full


def test_sampling_is_seeded(ruff):
    task, context = ruff
    a = sample_instances(task, context, 3, 100, seed=[1, 3, 0])
    assert a == sample_instances(task, context, 3, 100, seed=[1, 3, 0])
    assert a != sample_instances(task, context, 3, 100, seed=[1, 3, 1])


def test_per_seed_out_of_range_is_a_clean_error(ruff):
    task, context = ruff
    with pytest.raises(DataValidationError, match="per-seed"):
        sample_instances(task, context, 1, 2161, seed=0)


# --- the default's stratified sample (issue 41, item 4) -----------------------------------

def test_default_sample_keeps_the_same_balanced_cells_in_every_seed(ruff):
    """Every seed holds the same 5 x 36 cells, balanced over case x pronoun set x distractor
    pronoun (5 each, 36 per block), each seed's instances are its own full-design
    instances in those cells, and the same seeds give the same sample."""
    from studies.pronoun_fidelity.instances import sample_same_cells

    task, context = ruff
    seeds = [[2023, 2, k] for k in range(3)]
    samples = sample_same_cells(task, context, 2, 180, seeds)
    cells = [[(i.occupation, i.case, i.pronoun_set, i.distractor_set) for i in s]
             for s in samples]
    assert cells[0] == cells[1] == cells[2] and len(set(cells[0])) == 180
    groups = Counter((case, p, d) for _, case, p, d in cells[0])
    assert len(groups) == 36 and set(groups.values()) == {5}
    for block in range(5):      # no occupation twice within a block of 36
        assert len({c[0] for c in cells[0][36 * block:36 * (block + 1)]}) == 36
    for sample, seed in zip(samples, seeds):   # nested in the seed's full design
        assert set(sample) <= set(sample_instances(task, context, 2, 2160, seed))
    assert samples[0] != samples[1]             # the seeds' draws within the cells differ
    assert samples == sample_same_cells(task, context, 2, 180, seeds)
    other = sample_same_cells(task, context, 2, 180, [[7, 2, k] for k in range(3)])
    assert other != samples


def test_default_sample_without_distractors_keeps_the_replicates_of_a_cell(ruff):
    from studies.pronoun_fidelity.instances import sample_same_cells

    task, context = ruff
    samples = sample_same_cells(task, context, 0, 72, [[1, 0, k] for k in range(3)])
    per_seed = [Counter((i.occupation, i.case, i.pronoun_set) for i in s) for s in samples]
    assert per_seed[0] == per_seed[1] == per_seed[2] and sum(per_seed[0].values()) == 72
    for sample in samples:      # a cell's replicates keep their different introductions
        assert len({i.instance_id for i in sample}) == 72


def test_whole_blocks_keep_the_same_cells_and_a_quick_look_each_seed_its_own():
    """The study's rule, which benchmarks/pronoun_fidelity.py --work counts by too: the
    default (55 blocks of 36) and any whole number of blocks below the full design keep
    the same cells in every seed; the full design, and a part of a block, do not."""
    from studies.pronoun_fidelity.steps import DEFAULT_PER_SEED, samples_same_cells

    assert DEFAULT_PER_SEED == 55 * 36 and samples_same_cells(DEFAULT_PER_SEED, 2160)
    assert samples_same_cells(36, 2160) and samples_same_cells(72, 180)
    assert not samples_same_cells(2160, 2160)     # the full design: every cell anyway
    assert not samples_same_cells(4, 2160) and not samples_same_cells(40, 2160)


def test_full_design_is_one_flag_away_and_gives_the_old_design(ruff):
    import argparse

    from studies.pronoun_fidelity.run import add_flags
    from studies.pronoun_fidelity.steps import (DEFAULT_PER_SEED, FULL_PER_SEED, draw_samples,
                                                resolve_per_seed, restrict_occupations)

    task, context = ruff
    p = argparse.ArgumentParser()
    add_flags(p)
    assert resolve_per_seed(p.parse_args([]), task) == DEFAULT_PER_SEED < FULL_PER_SEED == 2160
    assert DEFAULT_PER_SEED % 36 == 0
    assert resolve_per_seed(p.parse_args(["--full-design"]), task) == 2160
    assert resolve_per_seed(p.parse_args(["--per-seed", "72"]), task) == 72
    # a run on a few occupations samples at most their full design
    assert resolve_per_seed(p.parse_args([]), restrict_occupations(task, 3)) == 108
    with pytest.raises(SystemExit):
        p.parse_args(["--full-design", "--per-seed", "72"])
    # at the full size the same-cells sampler is the old design: every seed its own 2,160
    old = draw_samples(task, context, [1], 2160, 5)
    new = draw_samples(task, context, [1], 2160, 5, same_cells=True)
    for k in range(3):
        assert (set(old.loc[old["seed"] == k, "instance"])
                == set(new.loc[new["seed"] == k, "instance"]))


def test_the_report_states_the_sample_against_the_full_design(ruff):
    from studies.pronoun_fidelity.steps import (DEFAULT_BLOCKS, DEFAULT_PER_SEED, design_ids,
                                                sample_sentence, sampling_table)

    task, context = ruff
    sampled = design_ids(task, context, [0, 5], DEFAULT_PER_SEED, 2023, same_cells=True)
    full = design_ids(task, context, [0, 5], 2160, 2023)
    table = sampling_table(sampled, full)
    assert len(table) == 8          # 2 numbers of distractors x 4 pronoun sets
    # every stratum keeps the same share: 3 seeds x DEFAULT_BLOCKS x 9 of 3 x 60 x 9
    assert set(table["n_sampled"]) == {3 * DEFAULT_BLOCKS * 9}
    assert set(table["n_full"]) == {3 * 60 * 9}
    assert np.allclose(table["interval_factor"],
                       np.sqrt(table["n_distinct_full"] / table["n_distinct_sampled"]))
    # 5 distractors: a cell holds 960 instances, so the 3 seeds rarely draw one twice and
    # the factor is close to sqrt(60 / blocks)
    five = table[table["n_distractors"] == 5]
    assert (five["n_distinct_sampled"] >= 0.99 * five["n_sampled"]).all()
    assert np.allclose(five["interval_factor"], np.sqrt(60 / DEFAULT_BLOCKS), atol=0.01)
    text = sample_sentence(DEFAULT_PER_SEED, 2160, table)
    assert "stratified sample" in text and f"first {DEFAULT_BLOCKS} of its 60 blocks" in text
    assert "--full-design" in text and "measured" in text.lower()
    assert "full design" in sample_sentence(2160, 2160, table)
    assert "not balanced" in sample_sentence(4, 2160, table)   # part of a block: a quick look


def test_parse_distractors():
    assert parse_distractors("0-5") == [0, 1, 2, 3, 4, 5]
    assert parse_distractors("5,0") == [0, 5]
    assert parse_distractors("2") == [2]
    for bad in ("0-6", "x", "-1"):
        with pytest.raises(Exception, match="0-5|range"):
            parse_distractors(bad)


# --- analyses on hand-built tables ---------------------------------------------------------

def _scores(item, logprobs, case="nominative"):
    sets = ["he", "she", "they", "xe"]
    lp = pd.Series(logprobs, dtype=float)
    prob = np.exp(lp - lp.max()) / np.exp(lp - lp.max()).sum()
    return pd.DataFrame({"item": item, "pronoun_set": sets, "logprob": lp,
                         "probability": prob if not lp.isna().any() else np.nan, "case": case})


def test_choices_take_the_argmax_and_count_unscored_items():
    scored = pd.concat([_scores("a", [-5, -1, -3, -9]), _scores("b", [-2, -4, -1.5, -3]),
                        _scores("c", [-2, np.nan, -1, -3])], ignore_index=True)
    log = ExclusionLog()
    out = A.choices(scored, log=log, stage="test")
    assert out.set_index("item")["predicted"].to_dict() == {"a": "she", "b": "they"}
    assert log.to_frame()["n"].tolist() == [1]
    # softmax of (-5, -1, -3, -9): e^-1 / (e^-5 + e^-1 + e^-3 + e^-9)
    expected = np.exp(-1) / (np.exp(-5) + np.exp(-1) + np.exp(-3) + np.exp(-9))
    assert out.loc[out["item"] == "a", "p_she"].item() == pytest.approx(expected, rel=1e-12)


def _results(rows):
    cols = ["model", "seed", "n_distractors", "occupation", "case", "pronoun_set",
            "distractor_set", "predicted"]
    df = pd.DataFrame(rows, columns=cols)
    df["correct"] = (df["predicted"] == df["pronoun_set"]).astype(int)
    df["context_template"] = "t"
    return df


def test_accuracy_is_mean_and_sd_over_seeds():
    # seed 0: he 2/2 correct, she 0/2; seed 1: he 1/2, she 1/2
    rows = [("m", 0, 1, "o", "nominative", "he", "she", "he"),
            ("m", 0, 1, "o", "accusative", "he", "xe", "he"),
            ("m", 0, 1, "o", "nominative", "she", "he", "he"),
            ("m", 0, 1, "o", "accusative", "she", "he", "he"),
            ("m", 1, 1, "o", "nominative", "he", "she", "she"),
            ("m", 1, 1, "o", "accusative", "he", "xe", "he"),
            ("m", 1, 1, "o", "nominative", "she", "he", "she"),
            ("m", 1, 1, "o", "accusative", "she", "he", "he")]
    acc = A.accuracy_table(_results(rows)).set_index(["grouping", "level"])
    # overall: seed 0 2/4, seed 1 2/4 -> mean 0.5, sd 0
    assert acc.loc[("all", "all"), "mean"] == 0.5 and acc.loc[("all", "all"), "sd"] == 0
    # he: 1.0 and 0.5 -> mean 0.75, sd = |1 - 0.5| / sqrt(2)
    assert acc.loc[("pronoun_set", "he"), "mean"] == 0.75
    assert acc.loc[("pronoun_set", "he"), "sd"] == pytest.approx(0.5 / np.sqrt(2))
    # nominative: seed 0 1/2 (he right, she wrong), seed 1 1/2 -> 0.5
    assert acc.loc[("case", "nominative"), "mean"] == 0.5
    assert acc.loc[("pronoun_set", "she"), "n_instances"] == 4
    assert (acc["chance"] == 0.25).all()


def test_welch_table_matches_scipy_on_per_seed_accuracies():
    rng = np.random.default_rng(0)
    rows = []
    for seed in range(3):
        for pronoun_set, p_right in (("he", 0.9), ("she", 0.6), ("they", 0.5), ("xe", 0.2)):
            for case in ("nominative", "accusative", "possessive"):
                for k in range(20):
                    right = rng.random() < p_right
                    rows.append(("m", seed, 5, f"o{k}", case, pronoun_set, "x",
                                 pronoun_set if right else "x"))
    results = _results(rows)
    welch = A.welch_table(results)
    assert len(welch) == 6                      # only n=5 present; 6 comparisons
    # Table 5 of Gautam et al. (2024) compares she with xe too
    assert ("she", "xe") in set(zip(welch["level_a"], welch["level_b"]))
    he_she = welch[(welch["level_a"] == "he") & (welch["level_b"] == "she")].iloc[0]
    per_seed = results.groupby(["pronoun_set", "seed"])["correct"].mean()
    ref = stats.ttest_ind(per_seed["he"], per_seed["she"], equal_var=False)
    assert he_she["t"] == pytest.approx(ref.statistic, rel=1e-10)
    assert he_she["p_value"] == pytest.approx(ref.pvalue, rel=1e-10)
    assert (welch["p_holm"] >= welch["p_value"]).all()


def test_welch_without_variation_is_reported_not_raised():
    rows = [("m", s, 0, "o", "nominative", p, None, p) for s in range(3)
            for p in ("he", "she", "they", "xe")]
    welch = A.welch_table(_results(rows))
    assert welch["p_value"].isna().all()
    assert welch["note"].str.startswith("not tested").all()


def test_error_attribution_by_hand():
    no_context = pd.DataFrame({"model": "m", "occupation": ["o1", "o2"],
                               "case": "nominative", "predicted": ["he", "she"]})
    rows = [
        ("m", 0, 1, "o1", "nominative", "xe", "she", "she"),    # distractor chosen: distraction
        ("m", 0, 1, "o1", "nominative", "xe", "they", "he"),    # context-free choice: bias
        ("m", 0, 1, "o1", "nominative", "they", "she", "xe"),   # neither: other
        ("m", 0, 1, "o1", "nominative", "she", "he", "he"),     # distractor = context-free
        ("m", 0, 2, "o2", "nominative", "he", "xe", "xe"),      # distraction
        ("m", 0, 0, "o2", "nominative", "xe", None, "she"),     # no distractor: bias
        ("m", 0, 1, "o2", "nominative", "he", "xe", "he"),      # correct: not an error
    ]
    log = ExclusionLog()
    errors = A.attribute_errors(_results(rows), no_context, log)
    assert errors["attribution"].tolist() == ["distraction", "bias", "other", "distraction",
                                              "bias"]
    assert log.to_frame()["n"].tolist() == [1]
    table = A.error_attribution_table(errors).set_index(["grouping", "level"])
    one = table.loc[("n_distractors", "1")]
    assert (one["n_errors"], one["n_distraction"], one["n_bias"], one["n_other"]) == (3, 1, 1, 1)
    assert one["share_distraction"] == pytest.approx(1 / 3)
    assert table.loc[("n_distractors", "0"), "share_bias"] == 1.0
    assert table.loc[("case", "nominative"), "n_errors"] == 5


def _no_context(n_occupations=8, seed=1):
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(n_occupations):
        base = rng.dirichlet(np.ones(4))
        for case in ("nominative", "accusative", "possessive"):
            p = rng.dirichlet(50 * base)
            rows.append({"model": "m", "occupation": f"o{k}", "case": case,
                         "predicted": ["he", "she", "they", "xe"][int(np.argmax(p))],
                         **{f"p_{s}": v for s, v in zip(("he", "she", "they", "xe"), p)}})
    return pd.DataFrame(rows)


def test_case_consistency_is_one_correlation_per_case_pair():
    """Gautam et al. (2024), Table 5: one r per pair of cases (per model), here over the
    8 occupations x 4 pronoun-set cells of the context-free probabilities."""
    no_context = _no_context()
    table = A.case_consistency(no_context)
    assert len(table) == 3
    assert set(zip(table["case_a"], table["case_b"])) == {
        ("nominative", "accusative"), ("nominative", "possessive"), ("accusative", "possessive")}
    row = table[(table["case_a"] == "nominative") & (table["case_b"] == "accusative")].iloc[0]
    # by hand: stack each case's 8 x 4 probabilities in the same order and correlate
    order = ["p_he", "p_she", "p_they", "p_xe"]
    nom = no_context[no_context["case"] == "nominative"].sort_values("occupation")[order]
    acc = no_context[no_context["case"] == "accusative"].sort_values("occupation")[order]
    assert row["n_cells"] == 32 and row["n_occupations"] == 8
    assert row["r"] == pytest.approx(np.corrcoef(nom.to_numpy().ravel(),
                                                 acc.to_numpy().ravel())[0, 1], rel=1e-9)
    choice = no_context.pivot(index="occupation", columns="case", values="predicted")
    assert row["same_choice_share"] == (choice["nominative"] == choice["accusative"]).mean()
    assert "p_value" not in table.columns


def test_case_consistency_by_pronoun_set_is_pearson_across_occupations():
    no_context = _no_context()
    table = A.case_consistency_by_pronoun_set(no_context)
    assert len(table) == 3 * 4                  # 3 pairs of cases x 4 pronoun sets
    row = table[(table["case_a"] == "nominative") & (table["case_b"] == "accusative")
                & (table["pronoun_set"] == "she")].iloc[0]
    wide = no_context.pivot(index="occupation", columns="case", values="p_she")
    assert row["r"] == pytest.approx(np.corrcoef(wide["nominative"], wide["accusative"])[0, 1],
                                     rel=1e-9)
    choice = no_context.pivot(index="occupation", columns="case", values="predicted")
    assert row["same_choice_share"] == (choice["nominative"] == choice["accusative"]).mean()


# --- command line ------------------------------------------------------------------------------

def test_counts_flag_prints_the_table_without_scoring(data_dir, capsys):
    assert main(["--counts", "--data-dir", str(data_dir)]) == 0
    out = capsys.readouterr().out
    for n, count in ISSUE_COUNTS.items():
        assert f"{n} {count:>10}".split() == [str(n), str(count)] and str(count) in out
    assert "total 5623200" in out


def test_a_model_named_twice_is_a_clean_error(data_dir, capsys, tmp_path):
    code = main(["--model", "smollm2-135m", "--model", "smollm2-135m", "--data-dir",
                 str(data_dir), "--out", str(tmp_path)])
    assert code == 2
    assert "named twice" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.needs_model
@pytest.mark.needs_r
def test_small_run_end_to_end(data_dir, tmp_path):
    out = tmp_path / "report"
    argv = ["--data-dir", str(data_dir), "--out", str(out), "--cache-dir", str(tmp_path / "cache"),
            "--occupations", "2", "--per-seed", "4", "--distractors", "0,5", "--no-bayes"]
    assert main(argv) == 0
    results = json.loads((out / "results.json").read_text())
    tables = results["tables"]
    for name in ("instance_counts", "accuracy", "welch", "error_attribution", "case_consistency"):
        assert name in tables
    counts = {r["n_distractors"]: r["n_instances"] for r in tables["instance_counts"]}
    assert counts == ISSUE_COUNTS
    overall = [r for r in tables["accuracy"] if r["grouping"] == "all"]
    # 3 seeds x 4 instances per number of distractors
    assert {r["n_distractors"]: r["n_instances"] for r in overall} == {0: 12, 5: 12}
    instance_results = pd.read_csv(out / "instance_results.csv")
    for r in overall:
        per_seed = instance_results[instance_results["n_distractors"] == r["n_distractors"]]
        per_seed = per_seed.groupby("seed")["correct"].mean()
        assert r["mean"] == pytest.approx(per_seed.mean())
    assert {(r["n_distractors"], r["level_a"], r["level_b"]) for r in tables["welch"]} == {
        (n, a, b) for n in (0, 5) for _, a, b in A.WELCH_COMPARISONS}
    # one r per pair of cases, over 2 occupations x 4 pronoun-set cells
    assert len(tables["case_consistency"]) == 3
    assert all(r["n_cells"] == 8 for r in tables["case_consistency"])
    # the per-set view needs 4 occupations for an r: noted, not raised
    by_set = tables["case_consistency_by_pronoun_set"]
    assert len(by_set) == 12 and all(r["note"].startswith("not computed") for r in by_set)
    assert "glmm" in tables
    assert {r["pronoun_set"] for r in tables["distractor_effects"]} == {"he", "she", "they", "xe"}
    assert {r["term"] for r in tables["glmm"]} >= {"pronoun_sethe:distractors5", "pronoun_setshe"}
    for figure in ("accuracy_by_distractors", "error_attribution"):
        assert (out / "figures" / f"{figure}.png").exists()
    assert (out / "tables" / "welch.tex").exists()
    assert "ambiguous" in (out / "report.md").read_text()

    # The prediction is the argmax of the *whole text's* log-likelihood: rescore the
    # 4 filled texts of one sampled instance independently with score_sentences.
    from models.causal import score_sentences
    from models.loading import load_scorer
    from studies.pronoun_fidelity.steps import draw_samples, restrict_occupations

    tables = load_dataset("ruff2024", data_dir).tables
    task, context = tables["task"], tables["context"]
    samples = draw_samples(restrict_occupations(task, 2), context, [5], 4, 2023)
    row = samples.iloc[0]
    forms = A.variants_for_case(row["case"])
    texts = [row["frame"].replace("[BLANK]", form) for form in forms]
    whole = score_sentences(texts, lm=load_scorer("smollm2-135m"), use_cache=False)
    best = ["he", "she", "they", "xe"][int(np.argmax(whole["logprob"].to_numpy()))]
    predicted = instance_results.loc[instance_results["instance"] == row["instance"], "predicted"]
    assert set(predicted) == {best}


@pytest.mark.slow
def test_two_models_side_by_side_masked_and_causal(data_dir, tmp_path):
    """`--model A --model B`: a tiny masked LM (PLL) and a tiny causal LM, both random
    weights, built here; every table has one block per model."""
    import tiny_models as tiny

    # room for RUFF's texts: the small vocabulary splits unseen words into many pieces
    bert = tiny.build_tiny_bert(tmp_path / "bert", max_positions=512)
    gpt2 = tiny.build_tiny_gpt2(tmp_path / "gpt2", bert, max_positions=1024)
    out = tmp_path / "report"
    argv = ["--data-dir", str(data_dir), "--out", str(out), "--cache-dir", str(tmp_path / "cache"),
            "--model", str(bert), "--model", str(gpt2), "--occupations", "1", "--per-seed", "3",
            "--distractors", "0,1", "--no-bayes", "--backend", "none"]
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)     # tiny models: thread hand-off costs more than it saves
    try:
        assert main(argv) == 0
    finally:
        torch.set_num_threads(threads)
    results = json.loads((out / "results.json").read_text())
    tables = results["tables"]
    models = {m["name"] for m in results["provenance"]["models"]}
    per_model = Counter(r["model"] for r in tables["accuracy"] if r["grouping"] == "all")
    assert len(per_model) == 2 and set(per_model.values()) == {2}     # 2 distractor counts
    assert set(per_model) == models
    assert {m["kind"] for m in results["provenance"]["models"]} == {"masked", "causal"}
    for r in tables["accuracy"]:
        if r["grouping"] == "all":
            assert r["n_instances"] == 9                               # 3 seeds x 3
    instance_results = pd.read_csv(out / "instance_results.csv")
    assert len(instance_results) == 2 * 2 * 9
    assert set(instance_results["predicted"]) <= {"he", "she", "they", "xe"}
    assert "glmm" not in tables


# Log-odds of a correct answer in the simulation: he 3 - 0.5 n, xe 3 - 0.9 n, and she
# non-monotone like an encoder (a dip of 1.5 with one distractor, back to -0.3 from two on).
def _true_effect(pronoun_set: str, n: int) -> float:
    if pronoun_set == "she":
        return {0: 0.0, 1: -1.5}.get(n, -0.3)
    return -(0.9 if pronoun_set == "xe" else 0.5) * n


def _simulated_results(seed=5, n_occupations=20):
    """Seeded RUFF-like results with known log-odds (`_true_effect`), no case effect, small
    occupation and template effects; one row per unique instance."""
    rng = np.random.default_rng(seed)
    occupation_effect = dict(zip([f"o{k}" for k in range(n_occupations)],
                                 rng.normal(0, 0.3, n_occupations)))
    template_effect = dict(zip([f"t{k}" for k in range(10)], rng.normal(0, 0.3, 10)))
    rows = []
    for occupation, u in occupation_effect.items():
        for pronoun_set in ("he", "she", "they", "xe"):
            for case in ("nominative", "accusative", "possessive"):
                for n in range(6):
                    template = f"t{rng.integers(10)}"
                    eta = 3 + _true_effect(pronoun_set, n) + u + template_effect[template]
                    rows.append({"model": "sim", "seed": 0, "n_distractors": n,
                                 "instance": f"{occupation}.{case}.{pronoun_set}.{n}",
                                 "occupation": occupation, "case": case,
                                 "pronoun_set": pronoun_set, "context_template": template,
                                 "correct": int(rng.random() < 1 / (1 + np.exp(-eta)))})
    return pd.DataFrame(rows)


@pytest.mark.slow
@pytest.mark.needs_r
def test_glmm_recovers_the_distractor_effects_with_blme_lme4_and_pymc():
    data = _simulated_results(n_occupations=40)
    # no PSIS-LOO: nothing here reads it, and for these 2,880 rows x 2,400 draws it took
    # about 10 s of the twin's 40 (issue 41)
    fits = A.fit_glmms(data, lme4=True, bayes=True, draws=300, seed=1, loo=False)
    table = A.glmm_table({"sim": fits}).set_index(["backend", "term"])
    assert set(table.loc["lme4"].index) == set(table.loc["pymc"].index)
    effects = A.effects_table({("sim", b): A.distractor_effects(f) for b, f in fits.items()})
    assert len(effects) == 3 * 4 * 5          # 3 backends x 4 sets x 5 counts beyond none
    by = effects.set_index(["backend", "pronoun_set", "n_distractors"])
    for backend in ("blme", "lme4", "pymc"):
        # the largest effects, and the encoder-like dip, recovered: six checks in all, so
        # each at 99.9% (|estimate - truth| < 3.29 SE; family-wise miss rate < 0.6%)
        for pronoun_set, n in (("he", 5), ("xe", 5), ("she", 1)):
            row = by.loc[(backend, pronoun_set, n)]
            assert abs(row["estimate"] - _true_effect(pronoun_set, n)) < 3.29 * row["se"]
        # the dip and recovery of she is seen as such: k=1 well below k=5
        assert by.loc[(backend, "she", 1), "estimate"] < by.loc[(backend, "she", 5), "estimate"]
        assert not by.loc[(backend, "she", 1), "monotone_decline"]
    # the two backends agree on a well-identified effect (within a fifth of its size)
    assert abs(by.loc[("lme4", "xe", 5), "estimate"] - by.loc[("pymc", "xe", 5), "estimate"]) < 0.9


@pytest.mark.needs_r
def test_duplicated_instances_do_not_shrink_the_glmm_standard_errors():
    """Three seeds drawing the same instance must count it once: a table in which every
    instance appears twice (two seeds) gives exactly the fit of the table itself. Pooling
    the repeats as new observations would divide every SE by about sqrt(2)."""
    from gbstats.mixed.lmm import fit_glmm

    def glmer(results):
        # fit_glmms' "lme4" fit on its rows, without the penalised bglmer fit it makes first
        # (nothing here reads it; it took about twice glmer's time, issue 41)
        return fit_glmm(A.GLMM_FORMULA, A.glmm_rows(results), family="binomial",
                        backend="lme4").coefs

    # seed 1: on seed 9's table glmer ran Nelder-Mead to its 10,000-evaluation limit without
    # converging (12.9 s a fit; seed 1: 4.7 s); what is checked, that repeats are counted
    # once, is the same on any table (issue 41)
    data = _simulated_results(seed=1, n_occupations=12)
    once = glmer(data)
    twice = glmer(pd.concat([data, data.assign(seed=1)], ignore_index=True))
    assert twice["term"].tolist() == once["term"].tolist()
    assert twice["estimate"].to_numpy() == pytest.approx(once["estimate"].to_numpy(), rel=1e-6)
    assert twice["se"].to_numpy() == pytest.approx(once["se"].to_numpy(), rel=1e-6)


def test_unique_instances_counts_repeats_and_refuses_disagreeing_ones():
    data = _simulated_results(seed=9, n_occupations=2)
    pooled = pd.concat([data, data.head(10).assign(seed=1)], ignore_index=True)
    log = ExclusionLog()
    unique = A.unique_instances(pooled, log)
    assert len(unique) == len(data) and unique["instance"].is_unique
    assert [r["n"] for r in log.to_records()] == [10]
    rows = A.glmm_rows(pooled)
    assert len(rows) == len(data)
    assert list(rows["distractors"].cat.categories) == ["0", "1", "2", "3", "4", "5"]
    flipped = pooled.copy()
    flipped.loc[len(data), "correct"] = 1 - flipped.loc[len(data), "correct"]
    with pytest.raises(DataValidationError, match="different outcomes"):
        A.unique_instances(flipped)


def test_distractor_effects_read_the_nested_terms_and_flag_non_monotone_sets():
    from gbstats.mixed.results import FitResult

    # he declines 0 > -0.5 > -1.0; she dips to -1.0 and comes back to -0.2
    terms = {"pronoun_sethe:distractors1": -0.5, "pronoun_sethe:distractors2": -1.0,
             "pronoun_setshe:distractors1": -1.0, "pronoun_setshe:distractors2": -0.2,
             "pronoun_setshe": 0.3, "casenominative": 0.1}
    coefs = pd.DataFrame({"term": list(terms), "estimate": list(terms.values()), "se": 0.1,
                          "ci_low": np.nan, "ci_high": np.nan, "stat": np.nan, "df": np.nan,
                          "p_value": np.nan})
    effects = A.distractor_effects(FitResult(formula=A.GLMM_FORMULA, backend="lme4",
                                             family="binomial", coefs=coefs))
    assert effects[["pronoun_set", "n_distractors"]].values.tolist() == [
        ["he", 1], ["he", 2], ["she", 1], ["she", 2]]
    assert effects.groupby("pronoun_set")["monotone_decline"].first().to_dict() == {
        "he": True, "she": False}


# --- masked LMs score with pll_word_l2r (issue 19, item 1) --------------------------

# A vocabulary in which every neopronoun splits into two pieces (x + ##e, x + ##em,
# x + ##yr) while he/she/they and the frame's words are single tokens.
SPLIT_NEOPRONOUN_VOCAB = ["alex", "said", "would", "come", ".", "he", "she", "they",
                          "x", "##e", "##em", "##yr"]


@pytest.fixture(scope="module")
def split_bert(tmp_path_factory):
    from models.loading import load_scorer

    import tiny_models as tiny

    folder = tiny.build_tiny_bert(tmp_path_factory.mktemp("split_bert"),
                                  vocab=SPLIT_NEOPRONOUN_VOCAB, initializer_range=0.5)
    return load_scorer(str(folder))


def test_masked_scores_use_word_l2r_pll_on_a_split_neopronoun(split_bert, tmp_path):
    """The RUFF authors' within-word left-to-right PLL, not each piece masked alone: on a
    neopronoun that the tokenizer splits, the two differ, and score_frames gives the
    word-l2r value (the old default, pll_original, fails the equality below)."""
    import tiny_models as tiny

    text = "Alex said xe would come."
    assert split_bert.tokenizer.tokenize(text) == ["alex", "said", "x", "##e", "would", "come", "."]
    original = tiny.reference_pll_terms(split_bert, text, "pll_original")
    l2r = tiny.reference_pll_terms(split_bert, text, "pll_word_l2r")
    # only "x" differs: under word-l2r its own "##e" is masked too when "x" is predicted
    differs = [tok for (tok, a), (_, b) in zip(original, l2r) if a != b]
    assert differs == ["x"]
    l2r_total, original_total = sum(v for _, v in l2r), sum(v for _, v in original)
    assert abs(l2r_total - original_total) > 0.05

    frames = pd.DataFrame({"item": ["f1"], "case": ["nominative"],
                           "frame": ["Alex said [BLANK] would come."]})
    scored = A.score_frames(frames, split_bert, item="item", cache_dir=tmp_path)
    xe = scored[scored["variant"] == "xe"].iloc[0]
    assert xe["scoring"] == "pll_word_l2r"
    assert xe["logprob"] == pytest.approx(l2r_total, abs=1e-4)
    assert xe["logprob"] != pytest.approx(original_total, abs=1e-4)
    # a single-piece pronoun is the same under both variants
    he = scored[scored["variant"] == "he"].iloc[0]
    he_text = tiny.reference_pll_terms(split_bert, "Alex said he would come.", "pll_original")
    assert he["logprob"] == pytest.approx(sum(v for _, v in he_text), abs=1e-4)
    # the method is carried into the choices and the per-instance results
    chosen = A.choices(scored)
    assert chosen["scoring"].tolist() == ["pll_word_l2r"]

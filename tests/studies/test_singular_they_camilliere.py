"""studies.singular_they on the published Camilliere et al. (2021) stimuli (issue 23, part A).

Expected values come from the published design (40 items x 8 conditions + 15
inanimate controls; the condition -> closeness x gender mapping of issue 23),
from Watson et al. (2023) (stage sizes 43 / 89 / 16; nonbinary acceptance
0: 42, 1: 37, 2: 43, 3: 20, 4: 3, 5: 1 people), and, for the regression, from
lmerTest in R on the same rows (tests/reference/watson_regression.R).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gbstats.errors import DataValidationError, GbstatsError
from studies.singular_they import analysis as A
from studies.singular_they.human import add_nb_groups, count_unrated, load_human
from studies.singular_they.panel import (NB_ACCEPTANCE_COUNTS, STAGE_SIZES, as_camilliere_data,
                                         simulate_panel)
from studies.singular_they.stimuli import camilliere_stimuli, load_stimuli, select_stimuli

REFERENCE = Path(__file__).resolve().parents[1] / "reference"
# issue 23, A2: the four closeness x gender conditions; (close, gendered) as 0/1
FOUR = {"gfamily": (1, 1), "gnoun": (0, 1), "spkknows": (1, 0), "ngnoun": (0, 0)}


@pytest.fixture(scope="module")
def published(data_dir):
    return select_stimuli(None, data_dir)


@pytest.fixture(scope="module")
def stimuli(published):
    return published[0]


@pytest.fixture(scope="module")
def as_published(data_dir):
    return select_stimuli("camilliere2021", data_dir, as_published=True)


def test_default_stimuli_are_the_published_design(stimuli):
    assert len(stimuli) == 335
    assert stimuli["item"].is_unique
    assert stimuli["cond"].value_counts().to_dict() == {
        **{c: 40 for c in ("gnoun", "ngnoun", "gfamily", "gname", "ngname", "spkknows",
                           "quantifier", "plural")}, "inanimate": 15}
    # ids are built from the rating file's keys, and the frame is the item number
    assert (stimuli["item"] == stimuli["cond"] + "-" + stimuli["itm"].map("{:02d}".format)).all()
    assert (stimuli["frame"].astype(int) == stimuli["itm"]).all()
    assert stimuli.set_index("item").loc["gfamily-01", "sentence"] == (
        "The janitor heard my sister say that they forgot to mail the letters.")


def test_conditions_map_to_closeness_and_gender(stimuli):
    for cond, (close, gendered) in FOUR.items():
        rows = stimuli[stimuli["cond"] == cond]
        assert (rows["close"] == close).all() and (rows["gendered"] == gendered).all(), cond
    others = stimuli[~stimuli["cond"].isin(list(FOUR))]
    assert others["close"].isna().all() and others["gendered"].isna().all()
    assert len(A.close_gendered_rows(stimuli)) == 160


def test_the_scored_position_is_the_one_whole_word_form(stimuli):
    for row in stimuli.itertuples():
        assert row.sentence.startswith(row.prefix + " " + row.target_form)
        rest = row.sentence[len(row.prefix) + 1 + len(row.target_form):]
        assert rest[:1] in {" ", ".", "?", ","}, row.item
    # found as a whole word: "them" is never matched inside "themselves"
    s = stimuli.set_index("item")
    assert s.loc["gnoun-03", "prefix"] == "The saleswoman emailed to say that"
    assert s.loc["gnoun-11", "prefix"] == "The amount of work the pope has should stress"


def test_a_sentence_with_no_or_two_forms_is_an_error_naming_the_row(data_dir):
    from gbstats.data.registry import load_dataset

    table = load_dataset("camilliere2021", data_dir).table.copy()
    table.loc[4, "sentence"] = "The janitor heard Dakota say that they said they forgot."
    with pytest.raises(DataValidationError, match="exactly once") as exc:
        camilliere_stimuli(table, None)
    assert exc.value.row == 6 and exc.value.column == "sentence"
    table.loc[4, "sentence"] = "The janitor heard Dakota say that Dakota forgot."
    with pytest.raises(DataValidationError, match="0 in"):
        camilliere_stimuli(table, None)


def test_corrections_are_applied_and_as_published_scores_the_original(published, as_published):
    corrected, fixes = published
    original, none = as_published
    assert len(fixes) == 4 and len(none) == 0
    differ = corrected["sentence"] != original["sentence"]
    assert set(corrected.loc[differ, "item"]) == {
        f"{c}-{i:02d}" for c, i in zip(fixes["cond"], fixes["itm"])}
    text = original.set_index("item")["sentence"]
    assert text["plural-26"].startswith("TWhen")
    assert text["gfamily-37"].startswith("Someone said that my son bought My nephew")
    # the typos sit before the form, so the scored prefixes differ too
    assert original.set_index("item").loc["gfamily-37", "prefix"] == (
        "Someone said that my son bought My nephew should cook for")
    assert corrected["stimuli_version"].iloc[0].endswith("+corrections")
    assert original["stimuli_version"].iloc[0].endswith("as published")


def test_study_load_step_lists_corrections_and_records_files(data_dir, tmp_path):
    from studies.pipeline import Run
    from studies.singular_they import steps
    from studies.singular_they.run import STUDY

    def load(*flags):
        args = STUDY.build_parser().parse_args(["--data-dir", str(data_dir),
                                                "--out", str(tmp_path), *flags])
        run = Run(STUDY, args)
        return run, steps.load(run, None)

    run, s = load()
    assert len(s.corrections) == 4 and s.simulated
    assert any(p.endswith("camilliere_corrections.csv") for p in run.data_files)
    assert any(p.endswith("camilliere_stimuli.csv") for p in run.data_files)
    unrated = [e for e in run.log.entries if e.reason.startswith("stimuli with no rating")]
    assert len(unrated) == 1 and unrated[0].n == 0 and unrated[0].unit == "stimuli"
    assert "4 typo corrections" in steps.stimuli_description(s.stimuli, s.corrections)
    run, s = load("--as-published")
    assert len(s.corrections) == 0
    assert not any(p.endswith("camilliere_corrections.csv") for p in run.data_files)
    assert "exactly as published" in steps.stimuli_description(s.stimuli, s.corrections)
    run, s = load("--stimuli", "gbstats")
    assert s.corrections is None and s.stimuli["item"].iloc[0] == "f01-gendered_name"
    assert "written for gbstats" in steps.stimuli_description(s.stimuli, s.corrections)
    assert any(p.endswith("frames.tsv") for p in run.data_files)


def test_gbstats_frames_stay_selectable_by_name(data_dir):
    frames, fixes = select_stimuli("gbstats", data_dir)
    pd.testing.assert_frame_equal(frames, load_stimuli())
    assert fixes is None
    with pytest.raises(GbstatsError, match="--as-published"):
        select_stimuli("gbstats", data_dir, as_published=True)


# --- the simulated panel ------------------------------------------------------------

def test_panel_has_the_published_shape(stimuli):
    panel = simulate_panel(stimuli, seed=2023)
    people = panel.groupby("participant").first()
    assert people["stage"].value_counts().to_dict() == STAGE_SIZES == {
        "non-innovator": 43, "innovator": 89, "super-innovator": 16}
    counts = people["nb_acceptance"].value_counts().sort_index()
    assert {int(k): int(v) for k, v in counts.items()} == NB_ACCEPTANCE_COUNTS == {
        0: 42, 1: 37, 2: 43, 3: 20, 4: 3, 5: 1}
    assert people["nb_acceptance"].isna().sum() == 148 - 146
    # keyed by the published stimuli; a Latin square over the 40 items
    assert set(panel["item"]) == set(stimuli["item"])
    per_person = panel.merge(stimuli[["item", "antecedent_type"]], on="item") \
        .groupby(["participant", "antecedent_type"]).size().unstack()
    assert (per_person.drop(columns="inanimate") == 5).all().all()
    assert (per_person["inanimate"] == 15).all()


# --- the (cond, itm) join -----------------------------------------------------------

@pytest.fixture(scope="module")
def camilliere_file(stimuli, tmp_path_factory):
    panel = add_nb_groups(simulate_panel(stimuli, seed=7))
    path = tmp_path_factory.mktemp("human") / "camilliere_data.txt"
    as_camilliere_data(panel, stimuli).to_csv(path, sep=" ", index=False, na_rep="NA")
    return panel, path


def test_camilliere_file_joins_exactly_on_cond_and_itm(camilliere_file, stimuli):
    panel, path = camilliere_file
    trials, log = load_human(path, stimuli)
    cols = ["participant", "item", "stage", "nb_acceptance", "nb_group"]
    pd.testing.assert_frame_equal(trials[cols], panel[cols], check_dtype=False)
    assert np.allclose(trials["rating"], panel["rating"])
    # every row is a rating of the sentence its (cond, itm) names
    raw = pd.read_csv(path, sep=" ")
    joined = trials.assign(cond=raw["cond"], itm=raw["itm"]).merge(
        stimuli[["item", "cond", "itm"]], on="item", suffixes=("_file", "_stimuli"))
    assert len(joined) == len(raw)
    assert (joined["cond_file"] == joined["cond_stimuli"]).all()
    assert (joined["itm_file"] == joined["itm_stimuli"]).all()


@pytest.mark.parametrize("cond, itm", [("gfamily", 41), ("inanimate", 3), ("plural", 0)])
def test_unknown_key_is_an_error_naming_the_row(camilliere_file, stimuli, tmp_path, cond, itm):
    _, path = camilliere_file
    lines = path.read_text().splitlines()
    fields = lines[9].split(" ")
    fields[2], fields[3] = cond, str(itm)
    lines[9] = " ".join(fields)
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataValidationError, match="not in the stimuli") as exc:
        load_human(bad, stimuli)
    assert exc.value.row == 10 and exc.value.column == "itm"
    assert f"cond={cond!r} itm={itm}" in str(exc.value) and "bad.txt" in str(exc.value)


def test_camilliere_keys_refuse_stimuli_without_them(camilliere_file):
    _, path = camilliere_file
    with pytest.raises(DataValidationError, match="keyed by \\(cond, itm\\)"):
        load_human(path, load_stimuli())


def test_unrated_stimuli_are_counted(camilliere_file, stimuli, tmp_path):
    from gbstats.exclusions import ExclusionLog

    _, path = camilliere_file
    raw = pd.read_csv(path, sep=" ")
    keep = ~raw["cond"].isin(["gfamily"]) & (raw["itm"] != 41)
    subset = tmp_path / "subset.txt"
    raw[keep].to_csv(subset, sep=" ", index=False, na_rep="NA")
    trials, _ = load_human(subset, stimuli)
    log = ExclusionLog()
    assert count_unrated(trials, stimuli, log) == 40 + 1
    assert log.entries[-1].n == 41 and log.entries[-1].unit == "stimuli"


# --- Watson et al.'s regression, against lmerTest -----------------------------------

def test_reference_rows_are_the_studys_design(stimuli):
    rows = pd.read_csv(REFERENCE / "watson_regression.csv")
    design = A.paper_scale_rows(A.close_gendered_rows(stimuli.assign(surprisal=0.0)))
    assert len(rows) == 160 and rows["itm"].nunique() == 40
    merged = rows.merge(design[["item", "cond", "gendered", "close"]], on="item",
                        suffixes=("", "_study"), validate="one_to_one")
    assert len(merged) == 160
    assert (merged["gendered"] == merged["gendered_study"]).all()
    assert (merged["close"] == merged["close_study"]).all()
    for cond, (close, gendered) in FOUR.items():
        sub = rows[rows["cond"] == cond]
        assert len(sub) == 40
        assert set(sub["close"]) == {2 * close - 1} and set(sub["gendered"]) == {2 * gendered - 1}


@pytest.mark.needs_r
def test_watson_regression_equals_lmertest():
    """REML, Satterthwaite df: gbstats' lme4 fit of PAPER_FORMULA against R's printout
    (rtol 1e-4 estimates and variances, 1e-3 SEs and df)."""
    from gbstats.mixed.lmm import fit_lmm

    refs = json.loads((REFERENCE / "watson_regression_refs.json").read_text())
    assert refs["formula"].replace(" ", "") == A.PAPER_FORMULA.replace(" ", "")
    rows = pd.read_csv(REFERENCE / "watson_regression.csv", dtype={"itm": str})
    fit = fit_lmm(A.PAPER_FORMULA, rows, backend="lme4")
    coefs = fit.coefs.set_index("term")
    for ref in refs["fixed"]:
        got = coefs.loc[ref["term"]]
        assert got["estimate"] == pytest.approx(ref["estimate"], rel=1e-4), ref["term"]
        assert got["se"] == pytest.approx(ref["se"], rel=1e-3), ref["term"]
        assert got["df"] == pytest.approx(ref["df"], rel=1e-3), ref["term"]
        assert got["p_value"] == pytest.approx(ref["p_value"], rel=1e-2), ref["term"]
        assert got["ci_low"] == pytest.approx(ref["ci_low"], rel=1e-3), ref["term"]
        assert got["ci_high"] == pytest.approx(ref["ci_high"], rel=1e-3), ref["term"]
    var = fit.ranef_var.set_index("group")["variance"]
    assert var["itm"] == pytest.approx(refs["variances"]["itm"], rel=1e-4)
    assert var["Residual"] == pytest.approx(refs["variances"]["residual"], rel=1e-4)
    assert fit.fit_stats["reml"] and fit.fit_stats["nobs"] == refs["nobs"] == 160
    assert fit.fit_stats["n_groups"] == {"itm": refs["n_groups"]}
    # REML criterion = -2 x the REML log-likelihood
    assert -2 * fit.fit_stats["loglik"] == pytest.approx(refs["reml_criterion"], rel=1e-6)


def test_an_unknown_stimuli_name_says_what_is_accepted(data_dir):
    with pytest.raises(DataValidationError, match="camilliere2021.*gbstats.*existing") as exc:
        select_stimuli("camiliere2021", data_dir)
    assert exc.value.column == "--stimuli" and "camiliere2021" in str(exc.value)

"""gardner2024 loader: counts against the data README and the authors' codebooks
and knitted output, the xlsx stimuli, and broken copies of the files.

Where each expected count comes from:
- Exp 1: 9,564 trials, 457 participants, 104 name items (/work/shared/data/README.md,
  and `str(exp1_d)` in analysis/exp1_analysis_main.md of the source repository);
- Exp 2-4: trials / participants / items printed by `str()` in
  analysis/exp{2,3,4}_analysis_main.md (9457/1351/105, 8904/1272/63, 8771/1253/63);
- participant gender (SubjGenderMale): the codebooks exp*_data_about.txt
  (e.g. Exp 1: 244 male = 1; 196 female + 1 genderfluid + 1 nonbinary = 0; 15 NA);
- responses per condition: the count tables in the same .md files.
"""
from __future__ import annotations

import shutil

import pandas as pd
import pytest

from gbstats.data import gardner2024 as g
from gbstats.data.registry import load_dataset
from gbstats.errors import DataValidationError


@pytest.fixture(scope="module")
def loaded(data_dir):
    return load_dataset("gardner2024", data_dir)


@pytest.mark.parametrize("exp, trials, participants, items", [
    (1, 9564, 457, 104), (2, 9457, 1351, 105), (3, 8904, 1272, 63), (4, 8771, 1253, 63)])
def test_counts(loaded, exp, trials, participants, items):
    t = loaded.tables[f"exp{exp}"]
    assert len(t) == trials
    assert t["SubjID"].nunique() == participants
    assert t["Item"].nunique() == items
    assert (t["experiment"] == exp).all()


@pytest.mark.parametrize("exp, male, other, missing", [
    (1, 244, 196 + 1 + 1, 15), (2, 694, 566 + 1 + 2, 88), (3, 514, 638 + 2 + 1 + 1, 116),
    (4, 602 + 1, 555 + 1 + 3, 91)])
def test_participant_gender_matches_the_codebooks(loaded, exp, male, other, missing, data_dir):
    per = loaded.tables[f"exp{exp}"].groupby("SubjID")["SubjGenderMale"].first()
    assert per.isna().sum() == missing
    assert (per == 1).sum() + (per == 0).sum() == male + other
    if exp == 4:
        # exp4_data.csv codes one participant more as male than exp4_data_about.txt
        # counts (604 / 558 against 603 / 559); the loader keeps the file's codes.
        plain = pd.read_csv(data_dir / "gardner2024" / "exp4_data.csv").groupby("SubjID")[
            "SubjGenderMale"].first()
        assert ((per == 1).sum(), (per == 0).sum()) == ((plain == 1).sum(), (plain == 0).sum())
        assert (per == 1).sum() == male + 1
    else:
        assert ((per == 1).sum(), (per == 0).sum()) == (male, other)


@pytest.mark.parametrize("exp, outcome, counts", [
    (1, "She", {"first": 1395, "full": 1535, "last": 251}),
    (2, "Female", {"first": 1579, "full": 1446, "last": 406}),
    (3, "She", {"first": 941, "full": 848, "last": 1079}),
    (4, "Female", {"first": 1381, "full": 1380, "last": 1292})])
def test_responses_per_condition_match_the_authors_tables(loaded, exp, outcome, counts):
    t = loaded.tables[f"exp{exp}"]
    assert t.groupby("Condition")[outcome].sum().to_dict() == counts


def test_ratings_only_where_a_first_name_was_shown(loaded):
    for exp in (1, 2):
        t = loaded.tables[f"exp{exp}"]
        assert t.loc[t["Condition"] == "last", "GenderRating"].isna().all()
        assert t.loc[t["Condition"] != "last", "GenderRating"].between(1, 7).all()
    for exp in (3, 4):
        assert loaded.tables[f"exp{exp}"]["GenderRating"].between(1, 7).all()


def test_other_types_and_the_one_untyped_other(loaded):
    t = loaded.tables["exp1"]
    # exp1_data.csv: 77 singular they, 337 repeat name, 157 other subject,
    # 109 no subject, and one Other response (file row 7871) left without a type.
    assert t["OtherType"].value_counts().to_dict() == {
        "": 8884, "repeat name": 337, "other subject": 157, "no subject": 109,
        "singular they": 77}
    assert ((t["Other"] == 1) & (t["OtherType"] == "")).sum() == 1
    assert all(e.n == 0 for e in loaded.exclusions.entries if "dropped by the loader" in e.reason)


def test_stimuli_exp1(loaded):
    s = loaded.tables["stimuli_exp1"]
    assert s["frame"].nunique() == 29                         # rows of the Production sheet
    assert set(s["Condition"]) == {"first", "full", "last"}
    assert "X" in s["frame_text"].iloc[0]
    shown = set(loaded.tables["exp1"]["NameShown"])
    # the codebook: "3 combinations of full names (-1 because of stimuli error)"; the
    # one name participants saw that no list column of the workbook shows:
    assert shown - set(s["NameShown"]) == {"Rebecca Bell"}
    assert set(s["NameShown"]) <= shown


def test_stimuli_exp3_join_every_trial(loaded):
    s = loaded.tables["stimuli_exp3"]
    assert len(s) == 27 * 7                                     # 3 conditions x 9 lists x 7 names
    trials = loaded.tables["exp3"]
    merged = trials.merge(s, on=["Condition", "List", "Name"], how="left", validate="many_to_one")
    assert merged["Story"].notna().all()
    assert merged.apply(lambda r: r["NameFirst"] in r["Story"], axis=1).all()


def test_norming_long(loaded):
    n = loaded.tables["norming"]
    assert n["ResponseId"].nunique() == 51
    assert n["Rating"].between(1, 7).all()


# -- broken copies -------------------------------------------------------------

@pytest.fixture
def copy(data_dir, tmp_path):
    shutil.copytree(data_dir / "gardner2024", tmp_path / "gardner2024",
                    copy_function=shutil.copyfile)
    return tmp_path / "gardner2024"


def rewrite(path, edit):
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    edit(df)
    df.to_csv(path, index=False)


@pytest.mark.parametrize("edit, column, message", [
    (lambda d: d.loc.__setitem__((4, "He"), "1") or d.loc.__setitem__((4, "She"), "1"),
     "He", "exactly one response coded"),
    (lambda d: d.loc.__setitem__((4, "Condition"), "middle"), "Condition", "middle"),
    (lambda d: d.loc.__setitem__((d.index[d["Condition"] == "last"][0], "GenderRating"), "3.5"),
     "GenderRating", "gender rating present where none belongs"),
    (lambda d: d.loc.__setitem__((0, "OtherType"), "singular they"), "OtherType",
     "OtherType filled on a he/she response"),
    (lambda d: d.loc.__setitem__((4, "SubjGenderMale"), "2"), "SubjGenderMale", "gender code"),
])
def test_broken_exp1_gives_clear_errors(copy, edit, column, message):
    rewrite(copy / "exp1_data.csv", edit)
    with pytest.raises(DataValidationError, match=message) as info:
        g.read_trials(copy, 1)
    assert "exp1_data.csv" in str(info.value) and repr(column) in str(info.value)
    assert "row " in str(info.value)


def test_missing_column_is_named(copy):
    rewrite(copy / "exp3_data.csv", lambda d: d.drop(columns=["Name"], inplace=True))
    with pytest.raises(DataValidationError, match="Name"):
        g.read_trials(copy, 3)

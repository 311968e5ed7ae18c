"""winopron2024: WinoPron templates, decrypted in memory."""
from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gbstats.data import winopron2024
from gbstats.data.encrypted_zip import (GAUTAM2024_PASSWORD, read_encrypted_member,
                                        read_encrypted_tsv)
from gbstats.data.registry import load_dataset
from gbstats.errors import DataValidationError

CASES = {"nominative", "accusative", "possessive"}


@pytest.fixture(scope="module")
def winopron(data_dir):
    return load_dataset("winopron2024", data_dir)


@pytest.fixture(scope="module")
def raw_new(data_dir):
    raw = read_encrypted_tsv(data_dir / "winopron2024" / "data.zip",
                             winopron2024.NEW_MEMBER, GAUTAM2024_PASSWORD)
    return raw.drop(columns=[c for c in raw.columns if c.startswith("Unnamed:")])


def test_new_templates_are_60_pairs_by_2_disambiguations_by_3_cases(winopron):
    new = winopron.tables["new_templates"]
    # paper / issue 9: 360 = 60 occupation-participant pairs x 2 x 3
    assert len(new) == 360
    pairs = new.groupby(["occupation", "participant"])
    assert pairs.ngroups == 60
    assert (pairs.size() == 6).all()
    cells = new.groupby(["occupation", "participant", "case"])["answer"].apply(sorted)
    assert len(cells) == 180 and all(v == [0, 1] for v in cells)
    assert set(new["case"]) == CASES
    # 1,440 double-entity sentences once instantiated with the 4 pronoun sets
    assert 4 * len(new) == 1_440


def test_single_versions_keep_the_answer_entity(winopron):
    new = winopron.tables["new_templates"]
    for row in new.itertuples():
        kept = "$OCCUPATION" if row.answer_entity == "occupation" else "$PARTICIPANT"
        dropped = "$PARTICIPANT" if kept == "$OCCUPATION" else "$OCCUPATION"
        assert kept in row.single_version and dropped not in row.single_version
        assert row.pronoun_type in row.template and row.pronoun_type in row.single_version


def test_old_templates_are_the_120_winogender_templates(winopron, data_dir):
    old = winopron.tables["old_templates"]
    # 60 occupations x 2 answers, the Winogender templates (data README)
    assert len(old) == 120 and old["occupation"].nunique() == 60
    assert (old.groupby("occupation")["answer"].apply(sorted) == pd.Series(
        [[0, 1]] * 60, index=sorted(old["occupation"].unique()))).all()
    winogender = load_dataset("winogender2018", data_dir).tables["templates"]
    pd.testing.assert_frame_equal(old.reset_index(drop=True),
                                  winogender.reset_index(drop=True))


def test_header_less_columns_are_dropped_and_logged(winopron, data_dir):
    # The header line of new_templates.tsv ends with two tabs: 8 fields, 6 named.
    raw = read_encrypted_member(data_dir / "winopron2024" / "data.zip",
                                winopron2024.NEW_MEMBER, GAUTAM2024_PASSWORD)
    header = raw.split(b"\n", 1)[0].rstrip(b"\r").split(b"\t")
    n_unnamed = sum(1 for field in header if field == b"")
    assert n_unnamed == 2
    log = winopron.exclusions.to_frame()
    assert log["n"].tolist() == [n_unnamed] and log["unit"].tolist() == ["columns"]
    assert not any(c.startswith("Unnamed") for c in winopron.tables["new_templates"])


def test_wrong_password_is_a_clean_error(data_dir):
    with pytest.raises(DataValidationError, match="password") as info:
        winopron2024.load(data_dir / "winopron2024", password=b"vogelbeobachtung000000")
    assert "new_templates.tsv" in str(info.value)


def test_both_spellings_of_a_header_are_a_clean_error(raw_new):
    bad = raw_new.assign(occupation=raw_new["occupation(0)"])
    with pytest.raises(DataValidationError, match="twice") as info:
        winopron2024.validate_new_templates(bad, source="new_templates.tsv")
    assert info.value.column == "occupation"


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_malformed_new_templates_give_clean_errors(raw_new, data):
    pos = data.draw(st.integers(0, len(raw_new) - 1))
    bad = raw_new.copy()
    kind = data.draw(st.sampled_from(["answer", "slot", "blank", "missing", "duplicate"]))
    if kind == "answer":
        label = data.draw(st.text(min_size=1, max_size=4))
        assume(label not in ("0", "1"))
        bad.loc[pos, "answer"] = label
        expected = (pos + 2, "answer")
    elif kind == "slot":
        bad.loc[pos, "template"] = bad.loc[pos, "template"].replace(
            bad.loc[pos, "pronoun_type"], "$GEN_PRONOUN")
        expected = (pos + 2, "template")
    elif kind == "blank":
        column = data.draw(st.sampled_from(["template", "single_version", "occupation(0)"]))
        bad.loc[pos, column] = ""
        expected = (pos + 2, winopron2024.RENAME.get(column, column))
    elif kind == "missing":
        column = data.draw(st.sampled_from(list(raw_new.columns)))
        bad = bad.drop(columns=column)
        expected = (None, winopron2024.RENAME.get(column, column))
    else:
        bad = pd.concat([bad, bad.iloc[[pos]]], ignore_index=True)
        expected = (len(raw_new) + 2, "occupation")
    with pytest.raises(DataValidationError) as info:
        winopron2024.validate_new_templates(bad, source="new_templates.tsv")
    assert (info.value.row, info.value.column) == expected
    assert "new_templates.tsv" in str(info.value)

"""camilliere2021 loader: the published singular-they stimuli, checked, and typo corrections.

Expected counts are the design as published (Camilliere et al. 2021; Watson et
al. 2023's camilliere_stimuli.csv, described in ../shared/data/README.md):
40 items x 8 conditions + 15 inanimate controls (items 41-55) = 335 rows.
"""
from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest

from gbstats.data import camilliere2021 as C
from gbstats.data.registry import load_dataset
from gbstats.errors import DataValidationError

REPO = Path(__file__).resolve().parents[2]
CORRECTIONS = REPO / "data" / "singular_they" / "camilliere_corrections.csv"


@pytest.fixture(scope="module")
def published(data_dir):
    return load_dataset("camilliere2021", data_dir).table


def test_design_counts(published):
    assert len(published) == 335 == 40 * 8 + 15
    counts = published["cond"].value_counts().to_dict()
    assert counts == {**{c: 40 for c in C.FRAME_CONDITIONS}, "inanimate": 15}
    assert sorted(published.loc[published["cond"] == "inanimate", "itm"]) == list(range(41, 56))
    for cond in C.FRAME_CONDITIONS:
        assert sorted(published.loc[published["cond"] == cond, "itm"]) == list(range(1, 41))
    assert list(published.columns) == ["cond", "itm", "sentence", "form", "antecedent"]
    assert str(published["itm"].dtype) == "int64"
    # each item's 8 conditions share one they-form (the frame's)
    assert (published[published["cond"] != "inanimate"].groupby("itm")["form"].nunique() == 1).all()


def test_table_is_the_file_read_plainly(published, data_dir):
    plain = pd.read_csv(data_dir / "camilliere2021" / "camilliere_stimuli.csv")
    pd.testing.assert_frame_equal(published, plain, check_dtype=False)


def test_every_sentence_holds_its_form_once(published):
    for row in published.itertuples():
        start = C.locate_form(row.sentence, row.form, source="t")
        assert row.sentence[start:start + len(row.form)] == row.form


def write_rows(tmp_path, rows, name="camilliere_stimuli.csv") -> Path:
    folder = tmp_path / "camilliere2021"
    folder.mkdir(exist_ok=True)
    path = folder / name
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
        w.writerow(C.COLUMNS)
        w.writerows(rows)
    return folder


def rows_of(published: pd.DataFrame) -> list[list]:
    return published[C.COLUMNS].values.tolist()


@pytest.mark.parametrize("mutate, column, row, message", [
    # "their" twice in item 21 gnoun (file line 162 = data row 161)
    (lambda r: r[160].__setitem__(2, "The actress should know their own their number."),
     "sentence", 162, "exactly once"),
    # no "them" in item 11 gnoun: "themselves" is not a whole-word "them"
    (lambda r: r[80].__setitem__(2, "The amount of work the pope has should stress themselves."),
     "sentence", 82, "exactly once"),
    (lambda r: r[5].__setitem__(0, "spkknow"), "cond", 7, "unknown label"),
    (lambda r: r[5].__setitem__(3, "they're"), "form", 7, "unknown label"),
    (lambda r: r[334].__setitem__(1, 12), "itm", 336, "out of range"),
    # item 1 gname renumbered 2: the second (gname, 2), file line 13, is the duplicate
    (lambda r: r[3].__setitem__(1, 2), "cond", 13, "duplicated"),
    (lambda r: r.pop(7), "cond", None, "missing from the design"),
])
def test_malformed_files_name_row_and_column(tmp_path, published, mutate, column, row, message):
    rows = rows_of(published)
    mutate(rows)
    folder = write_rows(tmp_path, rows)
    with pytest.raises(DataValidationError, match=message) as exc:
        C.load(folder)
    assert exc.value.column == column and exc.value.row == row
    assert "camilliere_stimuli.csv" in str(exc.value)


# --- corrections --------------------------------------------------------------------

def test_correction_table_fixes_the_known_typos(published):
    fixes = C.read_corrections(CORRECTIONS)
    keys = set(zip(fixes["cond"], fixes["itm"]))
    # the two typos the data README names, and the two doubled full stops
    assert {("plural", 26), ("gfamily", 37), ("ngnoun", 7), ("gfamily", 14)} == keys
    corrected = C.apply_corrections(published, fixes, source=str(CORRECTIONS))
    text = corrected.set_index(["cond", "itm"])["sentence"]
    assert text[("plural", 26)].startswith("When you address the patients")
    assert text[("gfamily", 37)] == "My nephew should cook for themselves everyday."
    assert not text.str.endswith("..").any()
    # only the listed rows changed, and the input is left alone
    changed = corrected["sentence"] != published["sentence"]
    assert set(zip(corrected.loc[changed, "cond"], corrected.loc[changed, "itm"])) == keys
    assert published.set_index(["cond", "itm"])["sentence"][("plural", 26)].startswith("TWhen")
    assert fixes["reason"].str.len().gt(20).all()


def test_a_stale_correction_is_refused(published):
    fixes = C.read_corrections(CORRECTIONS)
    fixes.loc[0, "original"] = fixes.loc[0, "original"] + " "
    with pytest.raises(DataValidationError, match="not the published sentence") as exc:
        C.apply_corrections(published, fixes, source="fixes.csv")
    assert exc.value.row == 2 and exc.value.column == "original"


def test_a_correction_must_name_a_stimulus_and_keep_the_form(published):
    fixes = C.read_corrections(CORRECTIONS)
    unknown = fixes.assign(itm=[99] + list(fixes["itm"][1:]))
    with pytest.raises(DataValidationError, match="names no stimulus") as exc:
        C.apply_corrections(published, unknown, source="fixes.csv")
    assert exc.value.row == 2
    dropped = fixes.copy()
    dropped.loc[1, "corrected"] = "I saw my niece this morning."
    with pytest.raises(DataValidationError, match="exactly once") as exc:
        C.apply_corrections(published, dropped, source="fixes.csv")
    assert exc.value.row == 3 and exc.value.column == "corrected"


# --- the gbstats data command -------------------------------------------------------

def test_cli_fetch_list_and_summary_cover_the_dataset(tmp_path, data_dir, capsys):
    """fetch from a file:// mirror laid out like the source host, then list and summary."""
    import json
    import shutil

    from gbstats.cli import main as cli_main
    from gbstats.data.registry import get_dataset

    entry = get_dataset("camilliere2021")
    mirror = tmp_path / "mirror"
    for f in entry.files:
        target = mirror / entry.repo / entry.commit / f.source
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(data_dir / "camilliere2021" / f.local, target)
    target_dir = tmp_path / "d"
    assert cli_main(["data", "fetch", "camilliere2021", "--data-dir", str(target_dir),
                     "--mirror", mirror.as_uri()]) == 0
    assert "all checksums verified" in capsys.readouterr().out
    assert cli_main(["data", "list", "--json", "--data-dir", str(target_dir)]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["camilliere2021"]["status"] == "verified"
    assert cli_main(["data", "summary", "camilliere2021", "--json",
                     "--data-dir", str(target_dir)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_rows"] == 335 and summary["main_table"] == "stimuli"
    assert summary["n_participants"] is None and summary["exclusions"] == []

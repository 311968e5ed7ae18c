"""The dataset-loader example in docs/adding-a-study.md runs against the real API.

The guide's code block is executed as written on small files built here, so a
change to read_table / validate_frame / ExclusionLog / LoadedDataset that the
guide does not follow fails this test.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from gbstats.errors import DataValidationError

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "adding-a-study.md"


@pytest.fixture(scope="module")
def loader():
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S)
    code = next(b for b in blocks if "def load(folder: Path) -> LoadedDataset:" in b)
    namespace: dict = {}
    exec(compile(re.sub(r"(?m)^   ", "", code), str(GUIDE), "exec"), namespace)
    return namespace["load"]


def write(folder: Path, rows: list[str]) -> Path:
    (folder / "ratings.csv").write_text("participant,item,rating,attention_ok\n"
                                        + "\n".join(rows) + "\n")
    return folder


def test_loads_and_counts_exclusions(loader, tmp_path):
    loaded = loader(write(tmp_path, ["p1,i1,5,yes", "p1,i2,7,yes", "p2,i1,3,no", "p2,i2,2,yes"]))
    assert loaded.table.to_dict("list") == {"participant": ["p1", "p1"], "item": ["i1", "i2"],
                                            "rating": [5.0, 7.0]}
    assert [(e.reason, e.n, e.unit) for e in loaded.exclusions.entries] == [
        ("failed the attention check", 1, "participants"),
        ("trials of those participants", 2, "trials")]


@pytest.mark.parametrize("rows, where", [
    (["p1,i1,5,yes", "p1,i1,6,yes"], "row 3, column 'participant'"),   # a duplicated trial
    (["p1,i1,five,yes"], "row 2, column 'rating'"),                   # not a number
    (["p1,i1,5,maybe"], "row 2, column 'attention_ok'"),              # an unknown label
    (["p1,i1,9,yes"], "column 'rating'"),                              # outside 1-7: the schema
])
def test_bad_input_names_where(loader, tmp_path, rows, where):
    with pytest.raises(DataValidationError, match=re.escape(where)):
        loader(write(tmp_path, rows))

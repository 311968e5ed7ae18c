"""StudyReport.result: named top-level entries of results.json beside "tables"."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from gbstats.report.study_report import StudyReport


def test_a_named_entry_is_written_at_the_top_level(tmp_path):
    report = StudyReport("demo", tmp_path, "Demo")
    table = pd.DataFrame({"test": ["corrected r"], "primary": [True], "p_value": [0.25]})
    report.result("group_comparison", table)
    report.write({"study": "demo"})
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["group_comparison"] == [{"test": "corrected r", "primary": True, "p_value": 0.25}]
    assert doc["tables"] == {}


@pytest.mark.parametrize("name", ["tables", "provenance", "warnings"])
def test_reserved_and_repeated_names_are_refused(tmp_path, name):
    report = StudyReport("demo", tmp_path, "Demo")
    with pytest.raises(ValueError, match="taken"):
        report.result(name, [])
    report.result("x", [])
    with pytest.raises(ValueError, match="taken"):
        report.result("x", [])

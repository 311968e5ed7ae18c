"""studies.name_gender end to end with --model none, and its parts.

The human-side numbers themselves are pinned against the authors' printed output
in test_name_gender_reproduction.py; here the run is checked for what it writes:
the `human_models` table in results.json (the same numbers as the fits made
directly through studies.name_gender.human), the exclusions, the provenance
(dataset checksums), the figure and LaTeX tables, and the listing in
`python -m studies`.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from studies.name_gender.stimuli import cut_at_continuation

REPO = Path(__file__).resolve().parents[2]


def test_listed_by_python_m_studies():
    done = subprocess.run([sys.executable, "-m", "studies"], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "name_gender" in done.stdout


@pytest.mark.parametrize("text, expected", [
    ("X woke up early. After making coffee...", "X woke up early. After making coffee,"),
    ("X bought a phone. Before getting rid of the old one…", "X bought a phone. Before getting "
                                                            "rid of the old one,"),
    ("After X published Doorways….", "After X published Doorways,"),
    ("After X founded the organization two years ago... ",
     "After X founded the organization two years ago,"),
    ('When asked about "Love Like a Balloon", X says that…',
     'When asked about "Love Like a Balloon", X says that'),
    ("X tried to call. After leaving a voicemail,", "X tried to call. After leaving a voicemail,"),
])
def test_cut_where_people_continued(text, expected):
    assert cut_at_continuation(text, source="t") == expected


def test_prompt_without_continuation_point_is_an_error():
    from gbstats.errors import DataValidationError

    with pytest.raises(DataValidationError, match="continuation point"):
        cut_at_continuation("X went home.", source="frames.xlsx")


@pytest.mark.slow
@pytest.mark.needs_r
def test_model_none_run(data_dir, tmp_path):
    out = tmp_path / "name_gender"
    done = subprocess.run([sys.executable, "-m", "studies.name_gender", "--model", "none",
                           "--no-bayes", "--out", str(out), "--data-dir", str(data_dir)],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    results = json.loads((out / "results.json").read_text())
    human = pd.DataFrame(results["tables"]["human_models"])
    assert {"experiment", "model", "term", "estimate", "std_error"} <= set(human.columns)
    assert sorted(human.groupby(["experiment", "model"]).groups) == [
        (1, "m_cond"), (1, "m_nameGender"), (2, "m_cond"), (2, "m_nameGender"), (3, "m_all"),
        (3, "m_noOther"), (4, "m_all")]
    # 32 fixed effects and 14 variance components (7 models x 2 random intercepts)
    assert (human["kind"] == "fixed").sum() == 32 and (human["kind"] == "variance").sum() == 14
    slope = human.set_index(["experiment", "model", "term"]).loc[
        (1, "m_nameGender", "GenderRatingCentered"), "estimate"]
    assert abs(slope - 1.59330) <= 0.5e-5 + 1.5e-4       # printed in exp1_analysis_main.md
    assert "model_items" not in results["tables"]        # --model none: no model side
    like = pd.DataFrame(results["tables"]["like_for_like_models"])
    assert sorted(like["model"].unique()) == ["m_cond_noOther", "m_nameGender_noOther",
                                              "m_noOther_firstName"]
    assert "var(FirstName)" in set(like["term"])
    # the design check: the authors' five rating models have no first-name random effect
    flagged = [w for w in results["warnings"] if "design check" in w]
    assert len(flagged) == 5 and all("(1 | FirstName)" in w for w in flagged)
    assert not any("like for like" in w and "design check" in w for w in results["warnings"])
    files = results["provenance"]["data_files"]
    assert any("gardner2024" in k and "exp1_data.csv" in k for k in files)
    assert (out / "figures" / "she_by_rating.png").stat().st_size > 0
    # the authors' fits as two model tables (results.json keeps human_models whole)
    for name in ("human_models_exp1_2", "human_models_exp3_4", "like_for_like_models"):
        # one table (a longtable repeats its header, top rule included, on every page)
        tex = (out / "tables" / f"{name}.tex").read_text()
        assert tex.count("\\caption{") == 1
        assert tex.count("\\begin{table}") + tex.count("\\begin{longtable}") == 1
    report = (out / "report.md").read_text()
    assert "Exclusions" in report and "dropped by the loader" in report

"""A study is its folder: `python -m studies` finds a new one with no other file changed.

Each test builds a study in a temporary folder and runs `python -m studies` in a
fresh process, as a user would: once as a folder next to the shipped studies
(a copy of the `studies` package in tmp_path, so the repository is not
touched), once as a third-party package that declares the `gbstats.studies`
entry point in its installed metadata.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gbstats.errors import GbstatsError
from studies.discovery import ENTRY_POINT_GROUP, StudyEntry, folder_studies

REPO = Path(__file__).resolve().parents[2]

# A complete study with no model and no fit: enough to be listed, run and reported.
RUN_PY = '''
import pandas as pd

from studies.pipeline import Study


def load(run, _):
    return pd.DataFrame({{"x": [1.0, 2.0, 3.0]}})


def report(run, report, table):
    report.table("x", table, "three numbers")


STUDY = Study(name="{name}", title="A new study", summary="{summary}",
              description="a study written in a temporary folder", model="optional",
              bayes=False, load=load, report=report)
main = STUDY.main
'''


def write_study(folder: Path, name: str, summary: str) -> None:
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "run.py").write_text(textwrap.dedent(RUN_PY.format(name=name, summary=summary)))
    (folder / "__main__.py").write_text(f"from {folder.parent.name}.{name}.run import STUDY\n"
                                        "STUDY.run_as_main()\n")


def python_m(args: list[str], cwd: Path, path: list[Path]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in path)}
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def studies_copy(tmp_path_factory) -> Path:
    """A copy of the `studies` package with one new folder in it; the repository is untouched."""
    root = tmp_path_factory.mktemp("tree")
    shutil.copytree(REPO / "studies", root / "studies",
                    ignore=shutil.ignore_patterns("__pycache__"))
    write_study(root / "studies" / "brand_new", "brand_new", "A study nobody registered")
    return root


def list_then_run(name: str, summary: str, cwd: Path, path: list[Path], out: Path):
    """(the `python -m studies` listing, results.json of `python -m studies <name>`)."""
    listed = python_m(["studies"], cwd, path)
    assert listed.returncode == 0, listed.stderr
    assert re.search(rf"{name} +{summary}", listed.stdout), listed.stdout
    done = python_m(["studies", name, "--model", "none", "--out", str(out)], cwd, path)
    assert done.returncode == 0, done.stderr
    results = json.loads((out / "results.json").read_text())
    assert results["tables"]["x"] == [{"x": 1.0}, {"x": 2.0}, {"x": 3.0}]
    return listed.stdout, results


def test_a_new_folder_is_listed_and_runs(studies_copy, tmp_path):
    # studies_copy first on the path: its `studies` package is the one imported
    out = tmp_path / "out"
    listing, results = list_then_run("brand_new", "A study nobody registered", studies_copy,
                                     [studies_copy, REPO], out)
    assert "singular_they" in listing            # the shipped studies are still there
    # the recorded command is the one a user types to run it again
    assert results["provenance"]["command"] == (
        f"python -m studies.brand_new --model none --out {out}")
    assert not (REPO / "studies" / "brand_new").exists()


def test_a_misspelt_new_study_gets_did_you_mean_and_how_to_add(studies_copy):
    done = python_m(["studies", "brand_nwe"], studies_copy, [studies_copy, REPO])
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "Did you mean 'brand_new'?" in done.stderr
    assert "studies/<name>/" in done.stderr and ENTRY_POINT_GROUP in done.stderr


@pytest.fixture(scope="module")
def third_party(tmp_path_factory) -> Path:
    """An installed package `their_studies` whose metadata declares a `gbstats.studies`
    entry point (what `pip install` of a package with that pyproject table leaves)."""
    site = tmp_path_factory.mktemp("site")
    write_study(site / "their_studies" / "plugged_in", "plugged_in", "From another package")
    (site / "their_studies" / "__init__.py").write_text("")
    info = site / "their_studies-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: their-studies\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nplugged_in = their_studies.plugged_in.run:STUDY\n")
    return site


def test_an_entry_point_study_is_listed_and_runs(third_party, tmp_path):
    _, results = list_then_run("plugged_in", "From another package", REPO, [REPO, third_party],
                               tmp_path / "out")
    # no `python -m studies.plugged_in` exists for it: the command runs it through the lister
    assert results["provenance"]["command"].startswith("python -m studies plugged_in ")


def test_a_study_declaring_another_name_is_an_error(tmp_path, monkeypatch):
    write_study(tmp_path / "pkg_x" / "real_name", "other_name", "s")
    (tmp_path / "pkg_x" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    entry = StudyEntry("real_name", "pkg_x.real_name.run", source="entry point")
    with pytest.raises(GbstatsError, match="declares name='other_name'"):
        entry.load()


def test_only_package_folders_with_run_py_are_studies(tmp_path):
    write_study(tmp_path / "studies" / "good", "good", "a summary")
    (tmp_path / "studies" / "no_run").mkdir()
    write_study(tmp_path / "studies" / "_private", "_private", "s")
    found = folder_studies(tmp_path / "studies")
    assert list(found) == ["good"] and found["good"].summary == "a summary"

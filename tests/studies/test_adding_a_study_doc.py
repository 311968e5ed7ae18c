"""The study in docs/adding-a-study.md runs as written, and `python -m studies` finds it.

The guide's two code blocks (`studies/my_study/run.py` and `steps.py`) are
written, unchanged, into a fresh `my_study` folder of a copy of the `studies`
package in tmp_path (the repository is not touched), with the two-line
`__main__.py` the guide describes. The study then runs in a fresh process on a
ratings file built here, and its numbers are checked against a derivation
that does not use the study's code.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "adding-a-study.md"
P, ITEMS = 8, 3          # participants; items per condition per participant


def guide_block(first_line: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S)
    return next(b for b in blocks if b.startswith(first_line))


def ratings(path: Path) -> pd.DataFrame:
    """A balanced design (every participant rates ITEMS items in each of conditions a and b),
    plus filler trials and one trial with no rating, from a participant with no other trial."""
    rng = np.random.default_rng(27)
    rows = [{"participant": f"p{p}", "item": f"{c}{i}", "condition": c,
             "rating": round(4 + (0.6 if c == "a" else -0.6) + 1.5 * (p - 3.5) / 3.5
                             + rng.normal(scale=0.7), 2)}
            for p in range(P) for c in "ab" for i in range(ITEMS)]
    rows += [{"participant": f"p{p}", "item": "f1", "condition": "filler", "rating": 5.0}
             for p in range(P)]
    rows.append({"participant": "p99", "item": "a0", "condition": "a", "rating": None})
    table = pd.DataFrame(rows)
    table.to_csv(path, index=False)
    return table


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    shutil.copytree(REPO / "studies", root / "studies",
                    ignore=shutil.ignore_patterns("__pycache__"))
    folder = root / "studies" / "my_study"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "__main__.py").write_text("from studies.my_study.run import STUDY\n"
                                        "STUDY.run_as_main()\n")
    (folder / "run.py").write_text(guide_block("# studies/my_study/run.py"))
    (folder / "steps.py").write_text(guide_block("# studies/my_study/steps.py"))
    return root


def python_m(tree: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(REPO)])}
    return subprocess.run([sys.executable, "-m", *args], cwd=tree, env=env, capture_output=True,
                          text=True, timeout=600)


def test_the_guide_study_is_listed(tree):
    done = python_m(tree, "studies")
    assert done.returncode == 0, done.stderr
    assert re.search(r"my_study +Worked skeleton: ratings by condition", done.stdout)


@pytest.mark.needs_r
def test_the_guide_study_runs_and_its_fit_matches_the_balanced_design(tree, tmp_path):
    data = ratings(tmp_path / "ratings.csv")
    out = tmp_path / "out"
    done = python_m(tree, "studies.my_study", "--ratings", str(tmp_path / "ratings.csv"),
                    "--no-bayes", "--out", str(out), "--cache-dir", str(tmp_path / "cache"))
    assert done.returncode == 0, done.stderr
    assert "fitting 48 trials" in done.stderr                     # run.say
    results = json.loads((out / "results.json").read_text())
    kinds = {e["reason"]: (e["n"], e["kind"]) for e in results["exclusions"]}
    assert kinds == {"filler trials": (P, "selected by design"), "no rating": (1, "excluded")}
    assert results["provenance"]["command"].startswith("python -m studies.my_study --ratings ")

    # Derivation: with sum coding (a = +1, b = -1) and every participant rating both
    # conditions equally often, the condition column is orthogonal to the participants, so
    # GLS = OLS for any variance components and the estimate is half the difference of the
    # condition means. The REML variances of a balanced design are the ANOVA ones (when the
    # participant component is positive, as it is here by construction): sigma2 = the
    # residual mean square of y ~ participant + condition, on N - P - 1 df, and
    # SE = sqrt(sigma2 / N) since the coded column's squares sum to N.
    rows = data[data["condition"].isin(["a", "b"]) & data["rating"].notna()]
    n = len(rows)
    mean = rows.groupby("condition")["rating"].mean()
    resid = (rows["rating"] - rows.groupby("participant")["rating"].transform("mean")
             - np.where(rows["condition"] == "a", 1, -1) * (mean["a"] - mean["b"]) / 2)
    sigma2 = (resid ** 2).sum() / (n - P - 1)
    term = next(r for r in results["tables"]["lmm"] if r["term"] == "condition1")
    assert term["backend"] == "lme4"
    assert term["estimate"] == pytest.approx((mean["a"] - mean["b"]) / 2, rel=1e-6)
    assert term["se"] == pytest.approx(np.sqrt(sigma2 / n), rel=1e-4)
    assert term["df"] == pytest.approx(n - P - 1, rel=1e-3)

    report = (out / "report.md").read_text()
    assert "| Condition: a vs mean of levels |" in report        # the model table's term
    assert "Condition: sum-to-zero coding" in report               # and its note
    assert "Excluded in total: 1 trials." in report and f"left out: {P} trials." in report
    tex = (out / "tables" / "lmm.tex").read_text()
    # the model in words in the table, its formula in the methods section (issue 43)
    assert "Model: the rating regressed on the condition, with random intercepts for " \
        "participants." in tex and "~" not in tex
    assert "- lmm: `rating ~ condition + (1|participant)`" in report

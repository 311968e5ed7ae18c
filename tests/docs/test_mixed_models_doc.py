"""docs/mixed-models.md: every Python example on the page runs, in order.

The blocks share one namespace, as a reader pasting them into one session
would. Blocks whose first line is "# slow: ..." (Bayesian sampling) run only
in the slow test. The R blocks beside them are the R equivalents; the numbers
both give are compared in tests/stats/test_toolkit.py.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "mixed-models.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def run_blocks(include_slow: bool) -> dict:
    namespace: dict = {}
    cwd = os.getcwd()
    os.chdir(REPO)  # the examples read tests/reference/*.csv relative to the repo root
    try:
        for block in python_blocks():
            if block.startswith("# slow") and not include_slow:
                continue
            exec(compile(block, f"{DOC.name} block", "exec"), namespace)
    finally:
        os.chdir(cwd)
    return namespace


def test_doc_has_examples_with_r_equivalents():
    text = DOC.read_text()
    for topic in ("Formula syntax", "Contrasts", "Model comparison", "marginal means"):
        assert topic in text, topic
    assert len(python_blocks()) >= 6 and text.count("```r") >= 6


@pytest.mark.needs_r
def test_doc_examples_run():
    namespace = run_blocks(include_slow=False)
    assert list(namespace["summed"].coefs["term"])[:3] == ["(Intercept)", "close1", "stance1"]
    assert namespace["comparison"].table["p_value"].iloc[1] < 0.05
    assert set(namespace["table"]["effect"]) == {"fixed", "ran_pars", "ran_vals"}


@pytest.mark.slow
@pytest.mark.needs_r
def test_doc_examples_run_including_bayesian():
    namespace = run_blocks(include_slow=True)
    assert namespace["loo"].method == "PSIS-LOO"

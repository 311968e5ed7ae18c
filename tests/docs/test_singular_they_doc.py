"""docs/singular-they.md: every Python example on the page runs, in order, and the numbers the
page quotes are those of the code and of benchmarks/results/singular_they_panel.json."""
from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "singular-they.md"


def test_doc_examples_run(monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 3
    namespace: dict = {}
    monkeypatch.chdir(REPO)   # the examples read tests/reference/*.csv from the repo root
    for block in blocks:
        exec(compile(block, f"{DOC.name} block", "exec"), namespace)
    assert namespace["as_published"] is True
    assert len(namespace["anchor"]) == 6


def test_doc_quotes_the_code_and_the_benchmark():
    from studies.singular_they.published import PUBLISHED_BERT

    text = DOC.read_text()
    for term, (estimate, se, _, _, _) in PUBLISHED_BERT.items():
        assert f"| {term} | {estimate} | {se} |" in text, term
    record = json.loads((REPO / "benchmarks" / "results" / "singular_they_panel.json").read_text())
    before, after = ({(t["score"], t["earlier_stage"]): t for t in record[k]["tests"]}
                     for k in ("before", "after"))
    key = ("nb_acceptance", "non-innovator")
    row = (f"| acceptance, non-innovators < innovators | .58 | "
           f"{before[key]['p_median']:.2f}".replace("0.", ".") + ", "
           f"{100 * before[key]['share_p_below_05']:.0f}% | "
           f"{after[key]['p_median']:.2f}".replace("0.", ".") + ", "
           f"{100 * after[key]['share_p_below_05']:.1f}% |")
    assert row in text, row

"""docs/figures.md: its Python example runs and writes the PNG and the PDF it says."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "figures.md"


def test_doc_example_runs(monkeypatch, tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 1
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(blocks[0], f"{DOC.name} block", "exec"), namespace)
    assert (tmp_path / "figures_example" / "effects.png").exists()
    assert (tmp_path / "figures_example" / "effects.pdf").exists()
    assert namespace["fig"].get_suptitle().startswith("SIMULATED: ")

"""docs/ranking-models.md: every Python example on the page runs, in order, and says
what the page says it says."""
from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "ranking-models.md"


def test_the_ranking_page_runs_and_shows_what_it_claims(capsys):
    namespace: dict = {}
    for block in re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S):
        exec(compile(block, DOC.name, "exec"), namespace)
    sets = namespace["sets"]
    assert sets[["rank_lo", "rank_hi"]].values.tolist() == [[1, 2], [1, 2], [3, 4], [3, 4]]
    assert list(namespace["best"][namespace["best"]].index) == ["model A", "model B"]
    ranking = namespace["result"].ranking
    assert ranking.loc["smollm", "estimate"] == ranking.loc["smollm_again", "estimate"]
    assert ranking.loc["smollm", "rank_lo_marginal"] == 1
    assert ranking.loc["smollm_again", "rank_lo_marginal"] == 1
    # the page's figure for A - C: an SD of 0.045
    pair = namespace["pairs"].set_index(["model_a", "model_b"]).loc[("model A", "model C")]
    assert round(pair["se"], 3) == 0.045

"""Hostile cases of issue 31 (singular_they): the flags that choose which text is scored.

Real ratings imply the published text; `--keep-corrections` keeps the typo corrections with
them. The two text flags together contradict each other, and either one with stimuli other
than the published ones has nothing to act on: each is a one-line error naming the flags.
"""
from __future__ import annotations

from hostile_cases import case, study


@case("singular_they CLI: --as-published with --keep-corrections", "singular_they CLI",
      names=("--as-published", "--keep-corrections"))
def _(ws):
    return study("singular_they", "--as-published", "--keep-corrections", "--no-bayes",
                 "--out", ws.fresh("study_they_text_flags") / "r")


@case("singular_they CLI: --keep-corrections with --stimuli gbstats", "singular_they CLI",
      names=("--keep-corrections", "--stimuli gbstats"))
def _(ws):
    return study("singular_they", "--keep-corrections", "--stimuli", "gbstats", "--no-bayes",
                 "--out", ws.fresh("study_they_keep_gbstats") / "r")


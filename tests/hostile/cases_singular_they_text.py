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


# Issue 42: a second --model used to replace the first silently (only B was scored).
for _study in ("singular_they", "name_gender", "role_nouns"):
    @case(f"{_study} CLI: --model given twice", f"{_study} CLI",
          names=("--model was given twice", "'smollm2-135m', then 'gpt2'"))
    def _(ws, _study=_study):
        return study(_study, "--model", "smollm2-135m", "--model", "gpt2", "--out",
                     ws.fresh(f"study_{_study}_two_models") / "r")


# Issue 44, case 10: these raised FileNotFoundError / IsADirectoryError tracebacks.
for _label, _flag, _value, _names in [
        ("--human names a missing file", "--human", "missing.csv", ("missing.csv", "file not found")),
        ("--human - (standard input)", "--human", "-", ("standard input",)),
        ("--human names a folder", "--human", "FOLDER", ("a folder, not a file",)),
        ("--stimuli names a folder", "--stimuli", "FOLDER", ("--stimuli", "a folder, not a file")),
]:
    @case(f"singular_they CLI: {_label}", "singular_they CLI", names=_names)
    def _(ws, _flag=_flag, _value=_value, _label=_label):
        folder = ws.fresh("study_they_input_paths")
        value = str(folder) if _value == "FOLDER" else _value
        return study("singular_they", _flag, value, "--no-bayes", "--out", folder / "r")

"""The studies gbstats ships, by name: the one list `python -m studies` reads.

`STUDIES` maps a study's name to a one-line description (so listing them
imports nothing heavy); `get_study(name)` imports `studies.<name>.run` and
returns its `STUDY` declaration (a `studies.pipeline.Study`). A new study is
a package `studies/<name>/` with `run.py` defining `STUDY`, plus a line here.
"""
from __future__ import annotations

import importlib

from gbstats.errors import UnknownNameError

STUDIES = {
    "singular_they": "Surprisal of singular they by antecedent type; closeness x gender; "
                     "alignment with linguistic-stage and attitude groups (Watson et al. 2023)",
    "role_nouns": "Which attitude group does a model's choice of role nouns resemble? "
                  "(Watson et al. 2023 on Papineau et al. 2022)",
    "cognitive_bias": "Humans under time pressure vs coreference models (Lior & Stanovsky 2023)",
    "pronoun_fidelity": "Pronoun use fidelity with distractors (Gautam et al. 2024, RUFF)",
    "winopron": "Coreference bias beyond the binary (WinoPron, Gautam et al. 2024)",
    "genda_lens": "Danish gender bias in coreference and LMs (GenDa Lens: DaWinoBias, ABC)",
    "name_gender": "Pronouns after first, last and full names: the authors' glmer models on real "
                   "people, a model's P(he/she/they), men vs women (Gardner & Brown-Schmidt 2024)",
    "example_they": "Worked example (docs/adding-a-study.md): singular they after gendered vs "
                    "non-gendered names",
}


def study_module(name: str) -> str:
    """`studies.<name>`, or UnknownNameError with the closest names."""
    if name not in STUDIES:
        raise UnknownNameError("study", name, list(STUDIES))
    return f"studies.{name}"


def get_study(name: str):
    """The `Study` declared in `studies/<name>/run.py`."""
    module = importlib.import_module(study_module(name) + ".run")
    return module.STUDY

"""--max-draws reaches every Bayesian twin a study fits (issue 41).

A study's twins are fitted along several paths (the runner's `run.fit` and `start_twin`,
and study code calling gbstats' fitting functions itself). A flag that one path dropped
would be ignored without a word for that twin, so every call in studies/ that passes a
twin its draws must pass --max-draws beside them. Checked on the source, so that a new
call site is covered the day it is written; tests/studies/test_singular_they_run.py checks
a whole run's twins.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from studies.common import add_common_flags, check_twin_budget
from gbstats.errors import DataValidationError

STUDIES = Path(__file__).resolve().parents[2] / "studies"


def twin_calls_without_max_draws(source: str, filename: str) -> list[str]:
    """Calls that pass `draws=` but not `max_draws=` (draws=... of a provenance record, a
    keyword of add_provenance, excepted)."""
    missing = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call):
            continue
        keywords = {k.arg for k in node.keywords}
        name = ast.unparse(node.func)
        if "draws" in keywords and "max_draws" not in keywords \
                and not name.endswith("add_provenance"):
            missing.append(f"{filename}:{node.lineno}: {name}(draws=...)")
    return missing


def test_every_twin_call_in_the_studies_passes_max_draws():
    missing = []
    for path in sorted(STUDIES.rglob("*.py")):
        missing += twin_calls_without_max_draws(path.read_text(), str(path.relative_to(STUDIES)))
    assert not missing, "calls that give a twin its draws but not --max-draws:\n" + "\n".join(
        missing)


def test_the_check_finds_a_call_that_drops_the_flag():
    source = ("fit_with_twin(f, rows, draws=args.draws, max_draws=run.max_draws)\n"
              "fit_bayes_twin(f, rows, draws=args.draws)\n"
              "run.add_provenance(draws=args.draws)\n")
    assert twin_calls_without_max_draws(source, "x.py") == ["x.py:2: fit_bayes_twin(draws=...)"]


def _args(*argv):
    import argparse

    return add_common_flags(argparse.ArgumentParser(), "s").parse_args(list(argv))


def test_max_draws_defaults_to_none_and_must_not_be_below_draws():
    assert _args().max_draws is None
    check_twin_budget(_args("--draws", "100", "--max-draws", "100"))
    check_twin_budget(_args("--draws", "100"))
    with pytest.raises(DataValidationError, match=r"at least --draws \(100\).*found: 50"):
        check_twin_budget(_args("--draws", "100", "--max-draws", "50"))

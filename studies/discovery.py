"""Which studies exist: every `studies/<name>/run.py`, and every entry point of `gbstats.studies`.

A study is its folder. `studies/<name>/run.py` defining `STUDY = Study(...)`
is all `python -m studies` needs to list and run it; nothing outside the
folder is edited. A study that lives in another package plugs in through an
entry point in that package's `pyproject.toml`:

    [project.entry-points."gbstats.studies"]
    my_study = "my_package.my_study.run:STUDY"

Listing stays cheap: a folder study's one-line summary is read from its
run.py's `Study(...)` call without importing it (the study's steps import
pandas, models and R bridges); only a summary that is not a plain string, and
an entry point, are imported to be read.
"""
from __future__ import annotations

import ast
import importlib
import importlib.metadata
from dataclasses import dataclass
from pathlib import Path

from gbstats.errors import GbstatsError, UnknownNameError

ENTRY_POINT_GROUP = "gbstats.studies"
STUDIES_DIR = Path(__file__).resolve().parent

HOW_TO_ADD = (f"A study is found when it is a folder studies/<name>/ whose run.py defines "
              f"STUDY = Study(name=\"<name>\", ...), or when an installed package declares it "
              f"in the entry point group {ENTRY_POINT_GROUP!r} (docs/adding-a-study.md).")


@dataclass(frozen=True)
class StudyEntry:
    """Where a study is declared: `module` holds `attribute` (a studies.pipeline.Study)."""
    name: str
    module: str
    attribute: str = "STUDY"
    source: str = "folder"          # "folder" (studies/<name>/) or "entry point"
    summary: str = ""

    @property
    def command(self) -> str:
        """What a user types to run it."""
        if self.source == "folder":
            return f"python -m studies.{self.name}"
        return f"python -m studies {self.name}"

    def load(self):
        study = getattr(importlib.import_module(self.module), self.attribute)
        if study.name != self.name:
            raise GbstatsError(f"study {self.name!r} ({self.module}.{self.attribute}) declares "
                               f"name={study.name!r}; expected the name it is found under, "
                               f"{self.name!r}")
        return study


def summary_of(study) -> str:
    """The one-line summary of a Study: its `summary`, else the first sentence of `description`."""
    return study.summary or study.description.split(". ")[0].strip()


def _literal_summary(run_py: Path) -> str | None:
    """The summary (or description) string of run.py's `Study(...)` call, read without importing."""
    try:
        tree = ast.parse(run_py.read_text(), filename=str(run_py))
    except (OSError, SyntaxError, ValueError):
        return None  # importing it later gives the real error
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Study":
            words = {k.arg: k.value for k in node.keywords}
            for key in ("summary", "description"):
                value = words.get(key)
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    return value.value if key == "summary" else value.value.split(". ")[0]
    return None


def folder_studies(folder: Path = STUDIES_DIR) -> dict[str, StudyEntry]:
    """{name: entry} for every `<folder>/<name>/run.py` (a package: `studies.<name>.run`)."""
    found = {}
    for run_py in sorted(folder.glob("*/run.py")):
        name = run_py.parent.name
        if name.startswith(("_", ".")) or not name.isidentifier():
            continue
        found[name] = StudyEntry(name, f"studies.{name}.run",
                                 summary=_literal_summary(run_py) or "")
    return found


def entry_point_studies() -> dict[str, StudyEntry]:
    """{name: entry} for every installed entry point in the `gbstats.studies` group."""
    found = {}
    for point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        module, _, attribute = point.value.partition(":")
        found[point.name] = StudyEntry(point.name, module.strip(),
                                       attribute.strip() or "STUDY", source="entry point")
    return found


def discover() -> dict[str, StudyEntry]:
    """Every study by name: the folders first; an entry point may not reuse a folder's name."""
    studies = folder_studies()
    for name, entry in entry_point_studies().items():
        if name in studies:
            raise GbstatsError(f"study {name!r} is declared twice: by the folder studies/{name}/ "
                               f"and by the entry point {entry.module}:{entry.attribute} "
                               f"(group {ENTRY_POINT_GROUP!r}); expected one declaration")
        studies[name] = entry
    return studies


def find_study(name: str, studies: dict[str, StudyEntry] | None = None) -> StudyEntry:
    """The entry for `name`, or UnknownNameError with the closest names and how to add one."""
    studies = discover() if studies is None else studies
    if name not in studies:
        raise UnknownNameError("study", name, list(studies), hint=HOW_TO_ADD)
    return studies[name]


def get_study(name: str):
    """The `Study` declared under `name`."""
    return find_study(name).load()


def listing_rows(studies: dict[str, StudyEntry] | None = None) -> list[tuple[str, str]]:
    """(name, one-line summary) per study; a summary not readable from source is imported."""
    studies = discover() if studies is None else studies
    return [(name, entry.summary or summary_of(entry.load())) for name, entry in studies.items()]

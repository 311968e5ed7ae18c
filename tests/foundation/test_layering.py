"""The import layering studies -> models -> gbstats, with no arrow back up and no cycle.

Read from the source (every `import` / `from ... import`, lazy ones inside
functions included), so a lazy import cannot hide a back edge.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def package_imports(package: str) -> dict[str, set[str]]:
    return {str(p.relative_to(ROOT)): imported_modules(p)
            for p in sorted((ROOT / package).rglob("*.py"))}


def top(module: str) -> str:
    return module.split(".")[0]


@pytest.mark.parametrize("package, forbidden", [("gbstats", {"models", "studies"}),
                                                ("models", {"studies"})])
def test_no_import_runs_back_up_the_layers(package, forbidden):
    back = {path: sorted(m for m in mods if top(m) in forbidden)
            for path, mods in package_imports(package).items()}
    assert {p: m for p, m in back.items() if m} == {}


def test_engines_do_not_import_lmm():
    """gbstats.lmm chooses an engine; an engine importing gbstats.lmm back made a cycle."""
    for path, mods in package_imports("gbstats/engines").items():
        assert "gbstats.lmm" not in mods, path


def test_check_names_the_embedded_model_as_models_does():
    """gbstats/check.py repeats models.registry's package and file names (it may not import
    models); the two must not drift apart."""
    from gbstats.check import EMBEDDED_MODEL
    from models.registry import DEFAULT_MODEL, MODELS, SMOLLM_INSTALL, SMOLLM_PACKAGE

    assert EMBEDDED_MODEL.package == SMOLLM_PACKAGE
    assert EMBEDDED_MODEL.filename == MODELS[DEFAULT_MODEL].model_id
    assert EMBEDDED_MODEL.fix == SMOLLM_INSTALL
    assert DEFAULT_MODEL in EMBEDDED_MODEL.label


def test_packaged_file_check_names_the_missing_package():
    from gbstats.check import PackagedFile, packaged_file_status

    line = packaged_file_status(PackagedFile("thing", "no_such_package_gbstats", "x.bin",
                                             "pip install thing"))
    assert not line.ok and "no_such_package_gbstats not installed" in line.detail
    assert "pip install thing" in line.render()
    present = packaged_file_status(PackagedFile("pandas readme", "pandas", "__init__.py", ""))
    assert present.ok

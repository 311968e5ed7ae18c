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
    """gbstats.mixed.lmm chooses an engine; an engine importing gbstats.mixed.lmm back made a cycle."""
    for path, mods in package_imports("gbstats/mixed/engines").items():
        assert "gbstats.mixed.lmm" not in mods, path


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


# --- gbstats' rooms (docs/architecture.md) ---------------------------------------------
# Rank of each subpackage: an import may only go to a lower rank. inference and mixed
# share a rank and may not import each other. The cross-cutting top-level modules
# (errors, config, exclusions, blas) may be imported from anywhere; check, cli and the
# package's own __init__/__main__ sit above everything.
ROOM_RANK = {"data": 0, "inference": 1, "mixed": 1, "alignment": 2, "report": 3}
CROSS_CUTTING = {"errors", "config", "exclusions", "blas"}


def gbstats_module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def gbstats_import_edges() -> list[tuple[str, str, set[str]]]:
    """(importing module, imported module, names imported from it) for every gbstats
    import inside gbstats, lazy ones included; `from gbstats.x import y` counts y as a
    module when gbstats/x/y(.py) exists."""
    edges = []
    for path in sorted((ROOT / "gbstats").rglob("*.py")):
        source = gbstats_module_name(path)
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                edges += [(source, a.name, set()) for a in node.names
                          if top(a.name) == "gbstats"]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                    and top(node.module) == "gbstats":
                names = {a.name for a in node.names}
                submodules = {n for n in names
                              if (ROOT / node.module.replace(".", "/") / n).with_suffix(".py").exists()
                              or (ROOT / node.module.replace(".", "/") / n).is_dir()}
                edges.append((source, node.module, names - submodules))
                edges += [(source, f"{node.module}.{n}", set()) for n in submodules]
    return edges


def room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ROOM_RANK else None


def test_rooms_import_only_downwards():
    wrong = []
    for source, target, _ in gbstats_import_edges():
        a, b = room(source), room(target)
        if a is None or b is None or a == b:
            if a is not None and b is None and target != "gbstats" \
                    and target.split(".")[1] not in CROSS_CUTTING:
                wrong.append(f"{source} -> {target} (a room may import only the "
                             "cross-cutting top-level modules)")
            continue
        if ROOM_RANK[b] >= ROOM_RANK[a]:
            wrong.append(f"{source} -> {target}")
    assert wrong == []


def test_no_module_imports_a_siblings_private_name():
    private = [f"{source} imports {sorted(n for n in names if n.startswith('_'))} from {target}"
               for source, target, names in gbstats_import_edges()
               if source != target and any(n.startswith("_") and n != "__version__"
                                           for n in names)]
    assert private == []


def test_gbstats_import_graph_has_no_cycle():
    graph: dict[str, set[str]] = {}
    for source, target, _ in gbstats_import_edges():
        # a package's __init__ importing its own modules is not a cycle through them
        if target != "gbstats" and not source.startswith(target + "."):
            graph.setdefault(source, set()).add(target)
    done, on_path, cycles = set(), [], []

    def visit(node):
        if node in on_path:
            cycles.append(on_path[on_path.index(node):] + [node])
            return
        if node in done:
            return
        on_path.append(node)
        for nxt in sorted(graph.get(node, ())):
            visit(nxt)
        on_path.pop()
        done.add(node)

    for node in sorted(graph):
        visit(node)
    assert cycles == []

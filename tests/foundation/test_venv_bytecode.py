"""The venv keeps the bytecode of what its processes import, where PYTHONDONTWRITEBYTECODE is
set (scripts/venv_bytecode.py, installed by scripts/setup.sh; issue 41)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "venv_bytecode.py"
SHOW = "import json, sys; print(json.dumps([sys.pycache_prefix, sys.dont_write_bytecode]))"


def _python_state(code: str, **env: str | None) -> list:
    environ = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    environ.update({k: v for k, v in env.items() if v is not None})
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=environ, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _installed() -> Path:
    site = Path(sysconfig.get_paths()["purelib"])
    if not (site / "_gbstats_bytecode.pth").exists():
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(f"{site} has no _gbstats_bytecode.pth: scripts/setup.sh did not build "
                        "this venv (CI must run make setup)")
        pytest.skip("this venv was not built by scripts/setup.sh")
    return site


def test_the_venvs_processes_keep_their_bytecode_in_the_venv():
    site = _installed()
    # the copy in the venv is the script's current text (setup rebuilds the venv when it
    # changes: the script is in its stamp)
    assert (site / "_gbstats_bytecode.py").read_text() == SCRIPT.read_text()
    prefix, dont_write = _python_state(SHOW, PYTHONDONTWRITEBYTECODE="1")
    assert (prefix, dont_write) == (str(Path(sys.prefix) / "pycache"), False)


@pytest.mark.parametrize("flag, user_prefix, expected", [
    # where PYTHONDONTWRITEBYTECODE is set: written, under <venv>/pycache
    ("1", None, ["<venv>/pycache", False]),
    # without it, Python as usual: __pycache__ beside each source
    (None, None, [None, False]),
    # a prefix the user set is theirs, and so is their wish not to write
    ("1", "/their/prefix", ["/their/prefix", True]),
])
def test_the_setting_follows_the_users_environment(flag, user_prefix, expected, tmp_path):
    code = f"exec(open({str(SCRIPT)!r}).read()); " + SHOW
    found = _python_state(code, PYTHONDONTWRITEBYTECODE=flag, PYTHONPYCACHEPREFIX=user_prefix)
    if expected[0] == "<venv>/pycache":
        expected = [str(Path(sys.prefix) / "pycache"), False]
    assert found == expected


def test_a_module_imported_once_is_read_from_its_bytecode_after(tmp_path):
    """The first process compiles and writes the module's bytecode under the prefix; the next
    one loads it from there (its spec's `cached` file exists, and is not rewritten)."""
    module = tmp_path / "src" / "some_module.py"
    module.parent.mkdir()
    module.write_text("VALUE = 41 + 1\n")
    code = (f"exec(open({str(SCRIPT)!r}).read()); import sys; "
            f"sys.pycache_prefix = {str(tmp_path / 'pycache')!r}; "
            f"sys.path.insert(0, {str(module.parent)!r}); import some_module, json; "
            "print(json.dumps([some_module.VALUE, some_module.__spec__.cached]))")
    value, cached = _python_state(code, PYTHONDONTWRITEBYTECODE="1")
    assert value == 42 and Path(cached).is_file()
    assert str(tmp_path / "pycache") in cached and not (module.parent / "__pycache__").exists()
    written = Path(cached).stat().st_mtime_ns
    assert _python_state(code, PYTHONDONTWRITEBYTECODE="1") == [42, cached]
    assert Path(cached).stat().st_mtime_ns == written

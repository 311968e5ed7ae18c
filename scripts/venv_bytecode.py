"""Installed by scripts/setup.sh into each venv's site-packages as `_gbstats_bytecode`, with a
`.pth` line that imports it at every start of the venv's Python.

Where PYTHONDONTWRITEBYTECODE is set (this machine kind sets it), Python caches no bytecode,
and every process compiles what it imports from source again: torch, transformers, PyMC...
and gbstats itself. The study stack's imports then took 21-23 s a process against 8 s
compiled (2026-12-07, 2-core machine), paid by every study run and every test subprocess.
Here the bytecode of what the venv's processes import is kept in the venv's own folder
<venv>/pycache (Python's sys.pycache_prefix): compiled once, on first import, by whichever
process imports it first (Python writes each file atomically, so processes started at once
are safe). The source tree gets no __pycache__ folders, and `make clean` removes the
bytecode with the venv.

Setup compiled all of site-packages instead (compileall): 20,282 modules, 137 s of CPU for
.venv alone on the 2-core machine (2026-12-07), most of setup's three minutes, where the
main job imports 4,955 of them and gbstats' own modules were not compiled at all.

A user's own PYTHONPYCACHEPREFIX is left as it is, and without PYTHONDONTWRITEBYTECODE
nothing changes: Python writes its __pycache__ folders as usual.
"""
import os
import sys

if sys.flags.dont_write_bytecode and sys.pycache_prefix is None:
    sys.pycache_prefix = os.path.join(sys.prefix, "pycache")
    sys.dont_write_bytecode = False

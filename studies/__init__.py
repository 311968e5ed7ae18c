"""Runnable studies: `python -m studies.<name>`; `python -m studies` lists them.

A study is its folder, `studies/<name>/run.py` defining `STUDY` (found by
studies/discovery.py, as are the `gbstats.studies` entry points of other packages).

Each study chains small pure functions: load -> score -> join -> fit -> report.
"""

"""`python -m studies`: list the studies; `python -m studies <name> [flags]` runs one.

The studies are found, not registered: every `studies/<name>/run.py` and every
entry point of the `gbstats.studies` group (studies.discovery).
"""
from __future__ import annotations

import sys

from gbstats.errors import GbstatsError
from studies.discovery import discover, find_study, listing_rows

USAGE = "usage: python -m studies <name> [flags]   (python -m studies <name> --help for flags)"


def listing() -> str:
    rows = listing_rows()
    width = max((len(name) for name, _ in rows), default=0)
    lines = [f"  {name:<{width}}  {text}" for name, text in rows]
    return "\n".join([USAGE, "", "studies:", *lines])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if not argv or argv[0] in ("-h", "--help", "--list", "list"):
            print(listing())
            return 0
        name, rest = argv[0], argv[1:]
        entry = find_study(name, discover())
        study = entry.load()
    except GbstatsError as exc:
        print(f"python -m studies: error: {exc}", file=sys.stderr)
        return 2
    return study.main(rest, prog=entry.command)


if __name__ == "__main__":
    from studies.pipeline import exit_process

    exit_process(main())

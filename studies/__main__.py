"""`python -m studies`: list the studies; `python -m studies <name> [flags]` runs one."""
from __future__ import annotations

import sys

from gbstats.errors import UnknownNameError
from studies.registry import STUDIES, get_study

USAGE = "usage: python -m studies <name> [flags]   (python -m studies <name> --help for flags)"


def listing() -> str:
    width = max(map(len, STUDIES))
    lines = [f"  {name:<{width}}  {text}" for name, text in STUDIES.items()]
    return "\n".join([USAGE, "", "studies:", *lines])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help", "--list", "list"):
        print(listing())
        return 0
    name, rest = argv[0], argv[1:]
    try:
        study = get_study(name)
    except UnknownNameError as exc:
        print(f"python -m studies: error: {exc}", file=sys.stderr)
        return 2
    return study.main(rest)


if __name__ == "__main__":
    from studies.pipeline import exit_process

    exit_process(main())

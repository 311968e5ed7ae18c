"""The `gbstats` console command: `check` and `data list|fetch|summary`."""
from __future__ import annotations

import argparse
import contextlib
import json
import sys

from gbstats.errors import GbstatsError


def positive_int(text: str) -> int:
    """argparse type for counts (--batch-size, --frames, --draws): a usage error for 0, -1 or
    "x", never a traceback. Shared by the gbstats, models and studies command lines."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, found {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, found {value}")
    return value


class hidden_unraisable_interrupts:
    """`with hidden_unraisable_interrupts():` a KeyboardInterrupt that lands where Python
    cannot raise it (an import lock's callback, a C callback) is not printed as "Exception
    ignored ... Traceback": the Ctrl-C is handled by the command's own one line."""

    def __enter__(self):
        self.previous = sys.unraisablehook
        sys.unraisablehook = self._hook
        return self

    def _hook(self, unraisable) -> None:
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            self.previous(unraisable)

    def __exit__(self, *exc) -> bool:
        sys.unraisablehook = self.previous
        return False


class Terminated(KeyboardInterrupt):
    """SIGTERM (`timeout`, a batch scheduler's time limit, `docker stop`), raised where a
    Ctrl-C would be so that the same clean-up runs: the clean R server and its fit are
    ended, and the command prints one line. A KeyboardInterrupt, so every handler of
    Ctrl-C handles it; its exit code is 143 (128 + 15), as a shell reports SIGTERM."""


EXIT_TERMINATED = 143


def raise_terminated(signum, frame):
    raise Terminated("terminated (SIGTERM)")


def handle_sigterm_as_interrupt():
    """Install `raise_terminated` for SIGTERM (main thread only); returns the handler it
    replaced, or None where it could not be installed."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, raise_terminated)


@contextlib.contextmanager
def interrupts_held():
    """Inside the block, Ctrl-C and SIGTERM wait: one that arrives is raised as the block
    ends, by the handler that was in place, never between two of its statements. For a step
    and its bookkeeping that must both happen or neither: the score cache's COMMIT and its
    count of what was kept. A Ctrl-C landing between the two left a committed batch
    uncounted, and the interrupted line under-reported what was kept (hostile "score CLI:
    Ctrl-C mid-scoring", 2026-12-07: the line said 48 scores, the cache held 52). Main
    thread only (only it can set handlers, and Python runs them there); elsewhere the
    block runs as it is."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list = []
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(signum)
        if callable(handler):  # SIG_IGN and SIG_DFL are left as they are
            previous[signum] = handler
            signal.signal(signum, lambda number, frame: caught.append((number, frame)))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if caught:  # the first signal, once (two Ctrl-Cs in the block are one interrupt)
            number, frame = caught[0]
            previous[number](number, frame)


def print_interrupted(line: str) -> None:
    """Print a run's last line after Ctrl-C; a second Ctrl-C meanwhile must not cut it off
    (SIGINT is ignored while it is printed, then handled as before)."""
    import signal
    import threading

    main = threading.current_thread() is threading.main_thread()
    previous = ({sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
                if main else {})
    try:
        print(line, file=sys.stderr, flush=True)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _cmd_check(args) -> int:
    from gbstats.check import run_checks

    return run_checks(args.data_dir)


def _cmd_data_list(args) -> int:
    from gbstats.data.registry import DATASETS

    rows = [e.status(args.data_dir) | {"license": e.license, "source": f"{e.repo}@{e.commit[:10]}",
                                       "description": e.description}
            for e in DATASETS.values()]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        print(f"{r['name']:<{width}}  {r['status']:<8}  {r['n_files']:>2} files  "
              f"{r['source']}  {r['description']}")
    print(f"\ndata directory: {rows[0]['folder'].rsplit('/', 1)[0]}")
    return 0


def _cmd_data_fetch(args) -> int:
    from gbstats.data.fetch import fetch_dataset
    from gbstats.data.registry import DATASETS

    names = list(DATASETS) if args.name == ["all"] else args.name
    for name in names:
        written = fetch_dataset(name, args.data_dir, mirror=args.mirror, force=args.force,
                                progress=lambda p: print(f"  fetched and verified {p}"))
        print(f"{name}: {len(written)} file(s) written, all checksums verified")
    return 0


def _cmd_data_summary(args) -> int:
    from gbstats.data.registry import load_dataset

    summary = load_dataset(args.name, args.data_dir).summary()
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"{summary['name']}: {summary['n_rows']} rows in table {summary['main_table']!r}"
              + (f", {summary['n_participants']} participants"
                 if summary["n_participants"] is not None else ""))
        for name, t in summary["tables"].items():
            print(f"  table {name}: {t['n_rows']} rows")
        for e in summary["exclusions"]:
            print(f"  excluded {e['n']} {e['unit']}: {e['reason']}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gbstats",
        description="Statistics of gender bias in language: compare language models with people.")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", default=None,
                        help="data directory (default: $GBSTATS_DATA, then the user cache)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check", parents=[common],
                       help="report installed packages, R/lme4, the embedded model and datasets")
    p.set_defaults(func=_cmd_check)

    data = sub.add_parser("data", help="list, fetch and summarize the public datasets")
    dsub = data.add_subparsers(dest="data_command", required=True)
    p = dsub.add_parser("list", parents=[common], help="show each dataset's status")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_data_list)
    p = dsub.add_parser("fetch", parents=[common],
                        help="download datasets at their pinned commits and verify checksums")
    p.add_argument("name", nargs="+", help="dataset name(s), or 'all'")
    p.add_argument("--mirror", default=None,
                   help="base URL laid out as <base>/<owner>/<repo>/<commit>/<path> "
                        "(default: $GBSTATS_MIRROR, then GitHub raw); file:// works")
    p.add_argument("--force", action="store_true", help="re-download files already present")
    p.set_defaults(func=_cmd_data_fetch)
    p = dsub.add_parser("summary", parents=[common], help="load a dataset and summarize it")
    p.add_argument("name")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_data_summary)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except GbstatsError as exc:
        print(f"gbstats: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # `gbstats data summary NAME --json | head`: the reader left, which is fine.
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())

"""The hostile-input cases: one table, read by tests/hostile/test_hostile.py and by
benchmarks/hostile.py (which writes benchmarks/results/hostile.json).

Each case feeds one public entry point (the score CLI, a study's CLI, `load_human`, a
dataset loader, `fit_lmm`, `fit_glmm`, `fit_bayes`, `compare_models`,
`marginal_means`, the score cache) something malformed, and says which outcome is
right:

- "clean_error": a gbstats error (GbstatsError or a subclass; for a CLI, exit code 2
  and one `error:` line, never a traceback) whose message names every string in
  `names` (the file, row, column or parameter);
- "correct_result": a result, which `check` compares with a reference computed
  another way (a clean run, the complete rows, the lme4 values recorded by
  tests/reference/make_refs.R). A wrong result is "silent_wrong"; an output folder
  or file holding anything but the old or the new run is "clobbered_or_mixed".

`classify` turns one run into an outcome; anything other than a gbstats error that
escapes is "raw_traceback".
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[2]
OUTCOMES = ("clean_error", "correct_result", "silent_wrong", "clobbered_or_mixed",
            "raw_traceback", "unclear_error")
STUDY_NAMES = ("singular_they", "role_nouns", "cognitive_bias", "pronoun_fidelity", "winopron",
               "genda_lens", "example_they", "name_gender")
BAYES_STUDIES = ("singular_they", "role_nouns", "cognitive_bias", "genda_lens", "example_they")
# A text's score moves by about 1e-5 nats with the other texts in its batch and the
# thread count (issue 24, item 12); tiny float32 models stay well inside 1e-4.
SCORE_ATOL = 1e-4
# statsmodels against lme4, the bounds of tests/stats/test_lmm.py: estimates to the
# optimisers' precision; SEs differ by design (lme4 inverts X'V^-1X at the estimated
# variances, statsmodels the joint information of fixed effects and variances), by 0.2%
# on this unbalanced design, hence 1e-2.
LME4_RTOL = 1e-3
LME4_SE_RTOL = 1e-2


class Wrong(Exception):
    """Raised by a check: the entry point returned a result, and it is wrong."""


class Mixed(Exception):
    """Raised by a check: an output holds a mix of two runs, or an input was overwritten."""


@dataclass
class CliFailure(Exception):
    """A command line that ended with a non-zero exit code (what it printed is kept)."""
    code: int
    stderr: str

    def __str__(self) -> str:
        return f"exit code {self.code}: {self.stderr.strip()}"


@dataclass
class Case:
    name: str
    entry: str
    expect: str                      # "clean_error" or "correct_result"
    run: Callable[["Workspace"], Any]
    names: tuple[str, ...] = ()      # clean_error: what the message must name
    check: Callable[["Workspace", Any], None] | None = None   # correct_result: raises Wrong/Mixed
    needs: tuple[str, ...] = ()      # "r", "pymc": skipped where missing (and said so)
    slow: bool = False               # subprocesses or model fits: a few seconds or more


@dataclass
class Outcome:
    case: str
    entry: str
    expected: str
    outcome: str
    seconds: float
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome == self.expected


def classify(case: Case, ws: "Workspace") -> Outcome:
    """Run one case and name what happened (see the module docstring)."""
    from gbstats.errors import GbstatsError

    started = time.perf_counter()
    detail = ""
    try:
        value = case.run(ws)
    except CliFailure as exc:
        outcome, detail = _cli_outcome(exc, case.names)
    except GbstatsError as exc:
        message = str(exc)
        missing = [n for n in case.names if n not in message]
        outcome = "unclear_error" if missing or "\n" in message.strip() else "clean_error"
        detail = message if not missing else f"{message} [does not name {missing}]"
    except (Wrong, Mixed) as exc:  # a check of an earlier step inside run()
        outcome = "silent_wrong" if isinstance(exc, Wrong) else "clobbered_or_mixed"
        detail = str(exc)
    except Exception as exc:  # noqa: BLE001  (the point: anything else is a raw traceback)
        outcome, detail = "raw_traceback", f"{type(exc).__name__}: {exc}"
    else:
        try:
            if case.check is not None:
                case.check(ws, value)
            outcome, detail = "correct_result", ""
        except Wrong as exc:
            outcome, detail = "silent_wrong", str(exc)
        except Mixed as exc:
            outcome, detail = "clobbered_or_mixed", str(exc)
    return Outcome(case.name, case.entry, case.expect, outcome,
                   round(time.perf_counter() - started, 3), detail[:600])


def _cli_outcome(exc: CliFailure, names) -> tuple[str, str]:
    text = exc.stderr
    if "Traceback (most recent call last)" in text:
        return "raw_traceback", text[-600:]
    errors = [line for line in text.splitlines() if "error:" in line]
    if exc.code != 2 or len(errors) != 1:
        return "unclear_error", f"exit {exc.code}: {text[-600:]}"
    missing = [n for n in names if n not in errors[0]]
    return ("unclear_error" if missing else "clean_error",
            errors[0] + (f" [does not name {missing}]" if missing else ""))


# ---------------------------------------------------------------------------
# The workspace: tiny models, clean inputs and their reference results
# ---------------------------------------------------------------------------

@dataclass
class Workspace:
    root: Path
    gpt2: Path = None
    bert: Path = None
    _memo: dict = field(default_factory=dict)

    @classmethod
    def create(cls, root: Path) -> "Workspace":
        from tiny_models import build_tiny_bert, build_tiny_gpt2

        root.mkdir(parents=True, exist_ok=True)
        bert = build_tiny_bert(root / "tiny_bert")
        return cls(root, build_tiny_gpt2(root / "tiny_gpt2", bert), bert)

    def fresh(self, name: str) -> Path:
        """An empty folder of this case's own."""
        folder = self.root / "cases" / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        return folder

    def memo(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    # -- the score CLI's clean input and its reference scores -------------------
    def texts(self, n: int = 24) -> list[str]:
        from tiny_models import SENTENCES

        return [f"{SENTENCES[i % len(SENTENCES)]} ({i})" for i in range(n)]

    def stimuli(self, folder: Path, n: int = 24, name: str = "stimuli.csv") -> Path:
        path = folder / name
        pd.DataFrame({"item": [f"s{i}" for i in range(n)], "text": self.texts(n)}).to_csv(
            path, index=False)
        return path

    def reference_scores(self, n: int = 24) -> pd.DataFrame:
        """The clean run: the library, no cache, eight texts per batch."""
        def make():
            from models.causal import score_sentences

            return score_sentences(self.texts(n), items=[f"s{i}" for i in range(n)],
                                   lm=str(self.gpt2), use_cache=False, batch_size=8,
                                   progress=False)
        return self.memo(f"scores{n}", make)

    def check_scores(self, out: Path, n: int = 24) -> None:
        got = pd.read_csv(out)
        want = self.reference_scores(n)
        if got["item"].tolist() != want["item"].tolist():
            raise Wrong(f"{out}: items {got['item'].tolist()[:5]}... differ from the input's")
        diff = np.abs(got["logprob"].to_numpy() - want["logprob"].to_numpy())
        if not np.all(diff <= SCORE_ATOL):
            raise Wrong(f"{out}: logprob differs from a clean run by up to {diff.max():.3g}")

    # -- human data for singular_they's load_human ---------------------------------
    def stimulus_table(self) -> pd.DataFrame:
        def make():
            from studies.singular_they.stimuli import load_stimuli

            return load_stimuli()
        return self.memo("they_stimuli", make)

    def human_rows(self) -> pd.DataFrame:
        items = self.stimulus_table()["item"].tolist()[:4]
        rows = []
        for p, stage, nb in (("p1", "innovator", 3), ("p2", "non-innovator", 0),
                             ("p3", "super-innovator", 5)):
            for k, item in enumerate(items):
                rows.append({"participant": p, "item": item, "rating": 1 + (k + len(p)) % 7,
                             "stage": stage, "nb_acceptance": nb})
        return pd.DataFrame(rows)


def sha_tree(folder: Path) -> dict[str, str]:
    """{relative path: sha256} of every file under `folder` (hidden staging folders aside)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _env() -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "tests"),
                                         env.get("PYTHONPATH", "")])
    return env


# ---------------------------------------------------------------------------
# Entry points, called in-process the way a user calls them
# ---------------------------------------------------------------------------

def cli(main: Callable[[list[str]], int], argv: list) -> str:
    """Run a CLI's main(); CliFailure on a non-zero exit (argparse's SystemExit included)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    if code:
        raise CliFailure(code, err.getvalue())
    return err.getvalue()


def score(ws: Workspace, *args) -> str:
    from models.__main__ import main

    return cli(main, ["score", "--quiet", *args])


def study(name: str, *args) -> str:
    from studies.discovery import get_study

    return cli(get_study(name).main, list(args))


def load_human_file(ws: Workspace, path: Path):
    from studies.singular_they.human import load_human

    return load_human(path, ws.stimulus_table())


# ---------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------

CASES: list[Case] = []


def case(name: str, entry: str, expect: str = "clean_error", names=(), check=None, needs=(),
         slow: bool = False):
    def register(run):
        CASES.append(Case(name, entry, expect, run, tuple(names), check, tuple(needs), slow))
        return run
    return register


BINARY = bytes(range(256)) * 4
LATIN1 = "participant,item,rating\nJosé,x,3\n".encode("latin-1")


def _hostile_file(folder: Path, kind: str, header: str, name: str = "data.csv") -> Path:
    path = folder / name
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "header_only":
        path.write_text(header + "\n")
    elif kind == "binary":
        path.write_bytes(BINARY)
    elif kind == "non_utf8":
        path.write_bytes((header + "\n").encode() + "José,é,1,2,3\n".encode("latin-1"))
    return path


# --- the score CLI: files ---------------------------------------------------------
for _kind in ("empty", "header_only", "binary", "non_utf8"):
    def _run(ws, kind=_kind):
        folder = ws.fresh(f"score_{kind}")
        path = _hostile_file(folder, kind, "item,text", "stimuli.csv")
        return score(ws, "--stimuli", path, "--model", ws.gpt2, "--out", folder / "out.csv")
    case(f"score CLI: {_kind.replace('_', '-')} stimulus file", "score CLI",
         names=("stimuli.csv",))(_run)


@case("score CLI: wrong separator (.tsv holding commas)", "score CLI", names=("stimuli.tsv",))
def _(ws):
    folder = ws.fresh("score_wrong_sep")
    path = folder / "stimuli.tsv"
    pd.DataFrame({"item": ["a", "b"], "text": ["One text.", "Another."]}).to_csv(path, index=False)
    return score(ws, "--stimuli", path, "--model", ws.gpt2, "--out", folder / "out.csv")


@case("score CLI: duplicate item ids", "score CLI", names=("stimuli.csv", "row 4", "'item'"))
def _(ws):
    folder = ws.fresh("score_dup")
    path = folder / "stimuli.csv"
    pd.DataFrame({"item": ["a", "b", "a"], "text": ["One.", "Two.", "Three."]}).to_csv(path, index=False)
    return score(ws, "--stimuli", path, "--model", ws.gpt2, "--out", folder / "out.csv")


@case("score CLI: blank text cell", "score CLI", names=("stimuli.csv", "row 3", "'text'"))
def _(ws):
    folder = ws.fresh("score_blank_text")
    path = folder / "stimuli.csv"
    path.write_text("item,text\na,One.\nb,\nc,Three.\n")
    return score(ws, "--stimuli", path, "--model", ws.gpt2, "--out", folder / "out.csv")


@case("score CLI: blank item id", "score CLI", names=("stimuli.csv", "row 3", "'item'"))
def _(ws):
    folder = ws.fresh("score_blank_item")
    path = folder / "stimuli.csv"
    path.write_text("item,text\na,One.\n ,Two.\nc,Three.\n")
    return score(ws, "--stimuli", path, "--model", ws.gpt2, "--out", folder / "out.csv")


@case("score CLI: a 5,000-word text (longer than the model's context)", "score CLI",
      names=("too long", "128"))
def _(ws):
    folder = ws.fresh("score_long")
    path = folder / "stimuli.csv"
    words = " ".join(["the firefighter said they would come"] * 834)[:]  # 5,004 words
    pd.DataFrame({"item": ["long", "short"], "text": [words, "A short one."]}).to_csv(path, index=False)
    return score(ws, "--stimuli", path, "--model", ws.gpt2, "--out", folder / "out.csv",
                 "--no-cache")


@case("score CLI: 'nan', 'inf' and 'NULL' are texts, scored as written", "score CLI",
      "correct_result")
def _(ws):
    folder = ws.fresh("score_nan_text")
    path = folder / "stimuli.csv"
    path.write_text("item,text\n1,nan\n2,inf\n3,NULL\n")
    out = folder / "out.csv"
    score(ws, "--stimuli", path, "--model", ws.gpt2, "--out", out, "--no-cache")
    return out


def _check_nan_texts(ws, out):
    from models.causal import score_sentences

    got = pd.read_csv(out, keep_default_na=False)
    want = score_sentences(["nan", "inf", "NULL"], lm=str(ws.gpt2), use_cache=False, batch_size=1)
    if got["item"].tolist() != [1, 2, 3] or not np.allclose(got["logprob"], want["logprob"],
                                                             atol=SCORE_ATOL, rtol=0):
        raise Wrong(f"scores of 'nan'/'inf'/'NULL' texts differ: {got['logprob'].tolist()}")


CASES[-1].check = _check_nan_texts


# --- the score CLI: parameters ------------------------------------------------------
for _label, _args, _names in [
        ("--batch-size 0", ["--batch-size", "0"], ("--batch-size",)),
        ("--batch-size -3", ["--batch-size", "-3"], ("--batch-size",)),
        ("--batch-size x", ["--batch-size", "x"], ("--batch-size",)),
        ("--token-budget 0", ["--token-budget", "0"], ("--token-budget",)),
        ("unknown --device-map", ["--device-map", "everywhere"], ("--device-map",)),
        ("unknown --measure", ["--measure", "surprise"], ("--measure",)),
        ("unknown flag", ["--frobnicate"], ("--frobnicate",)),
        ("unknown --dtype", ["--dtype", "float8"], ("--dtype",)),
        ("a model name one letter off the registry", ["--model", "smollm2-135"], ("smollm2-135m",)),
        ("a model named twice", ["--model", "M", "--model", "M"], ("--model",)),
        ("--measure pll_original with a causal model", ["--measure", "pll_original"],
         ("--measure", "causal")),
]:
    def _run(ws, args=_args):
        folder = ws.fresh("score_params")
        path = ws.stimuli(folder)
        args = [str(ws.gpt2) if a == "M" else a for a in args]
        model = [] if "--model" in args else ["--model", ws.gpt2]
        return score(ws, "--stimuli", path, *model, "--out", folder / "out.csv", *args)
    case(f"score CLI: {_label}", "score CLI", names=_names)(_run)


@case("score CLI: model folder whose config.json lacks model_type", "score CLI",
      names=("config.json", "model_type"))
def _(ws):
    folder = ws.fresh("score_no_model_type")
    model = folder / "model"
    shutil.copytree(ws.gpt2, model)
    config = json.loads((model / "config.json").read_text())
    config.pop("model_type")
    (model / "config.json").write_text(json.dumps(config))
    return score(ws, "--stimuli", ws.stimuli(folder), "--model", model, "--out", folder / "o.csv")


# --- the score CLI: --out (defects 2 and 6) --------------------------------------------
def _unchanged_input(path: Path, before: bytes) -> None:
    if path.read_bytes() != before:
        raise Mixed(f"the input {path} was overwritten")


def _out_case(label: str, make_out: Callable[[Path, Path], Path], names=("--out",)):
    def run(ws):
        folder = ws.fresh("score_out")
        stimuli = ws.stimuli(folder)
        before = stimuli.read_bytes()
        # a model that does not exist: if --out were checked after loading, the error
        # would be about the model, not about --out
        try:
            return score(ws, "--stimuli", stimuli, "--model", folder / "no-such-model",
                         "--out", make_out(folder, stimuli))
        finally:
            _unchanged_input(stimuli, before)
    case(f"score CLI: --out {label}", "score CLI", names=names)(run)


_out_case("equal to --stimuli", lambda f, s: s, ("--out", "input file"))
_out_case("resolving to --stimuli through ..", lambda f, s: f / "sub" / ".." / s.name,
          ("--out", "input file"))


def _symlink_to(f: Path, s: Path) -> Path:
    link = f / "link.csv"
    link.symlink_to(s)
    return link


_out_case("a symlink to --stimuli", _symlink_to, ("--out", "input file"))


def _hardlink_to(f: Path, s: Path) -> Path:
    link = f / "hard.csv"
    os.link(s, link)
    return link


_out_case("a hard link to --stimuli", _hardlink_to, ("--out", "input file"))
_out_case("under an existing file", lambda f, s: s / "scores.csv", ("--out", "is a file"))
_out_case("in /proc", lambda f, s: Path("/proc/gbstats-hostile/scores.csv"), ("--out", "/proc"))
_out_case("an existing folder", lambda f, s: f, ("--out", "is a folder"))
_out_case("with an unknown extension", lambda f, s: f / "scores.xlsx", ("scores.xlsx",))


@case("write_scores: a folder that cannot be created (the OSError at write time)", "score CLI",
      names=("/proc/gbstats-hostile/scores.csv", "re-running"))
def _(ws):
    from models.sweep import write_scores

    return write_scores(ws.reference_scores(), "/proc/gbstats-hostile/scores.csv")


# --- the score cache (defects 4 and 5) -----------------------------------------------
def as_a_new_process() -> None:
    """Forget this process's open score caches, as a new process would not have them, and
    close their sqlite connections. Only clearing the registry leaves the old connection
    holding its locks on the file in this process: the next open then waits out its
    10 s retry and ends in "stayed locked", so a case meant to judge a damaged file
    judged the lock instead (and took 8 s an example)."""
    from models.cache import _OPEN

    for cache in _OPEN.values():
        cache.close()
    _OPEN.clear()


def _cached_run(ws: Workspace, name: str) -> tuple[Path, Path, Path]:
    """A folder with stimuli and a cache filled by one clean run."""
    folder = ws.fresh(name)
    stimuli, cache = ws.stimuli(folder), folder / "cache"
    score(ws, "--stimuli", stimuli, "--model", ws.gpt2, "--out", folder / "first.csv",
          "--cache-dir", cache, "--batch-size", "4")
    return folder, stimuli, cache


def _corrupt_case(label: str, damage: Callable[[Path], None]):
    def run(ws):
        folder, stimuli, cache = _cached_run(ws, "cache_" + label.replace(" ", "_"))
        as_a_new_process()  # a new process would open the damaged file afresh
        damage(cache / "scores.sqlite")
        return score(ws, "--stimuli", stimuli, "--model", ws.gpt2, "--out", folder / "o.csv",
                     "--cache-dir", cache)
    case(f"score cache: {label}", "score cache",
         names=("scores.sqlite", "repair-cache", "move it aside"))(run)


def _checkpointed(db: Path) -> None:
    with sqlite3.connect(db) as conn:  # fold the WAL into the main file, as a closed cache is
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for side in ("-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)


def _truncate(db: Path) -> None:
    _checkpointed(db)
    data = db.read_bytes()
    db.write_bytes(data[:len(data) // 3 + 7])


def _garbage_header(db: Path) -> None:
    _checkpointed(db)
    data = bytearray(db.read_bytes())
    data[:100] = b"\x5a" * 100
    db.write_bytes(bytes(data))


def _damage_page(db: Path) -> None:
    """Overwrite the header of the second leaf page of the scores table with garbage: the
    rows on the other pages stay readable (what repair-cache must salvage)."""
    _checkpointed(db)
    data = bytearray(db.read_bytes())
    size = int.from_bytes(data[16:18], "big") or 65536
    with sqlite3.connect(db) as conn:
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'scores'").fetchone()[0]
    # table b-tree leaf pages (type 0x0D) other than the root, in file order
    leaves = [n for n in range(2, len(data) // size + 1)
              if n != root and data[(n - 1) * size] == 0x0D]
    if len(leaves) < 2:
        raise RuntimeError(f"the cache {db} has {len(leaves)} table leaf pages; the case needs 2+")
    start = (leaves[1] - 1) * size
    data[start + 1:start + 12] = b"\xff" * 11
    db.write_bytes(bytes(data))


_corrupt_case("truncated file", _truncate)
_corrupt_case("garbage in the header", _garbage_header)
_corrupt_case("damaged page", _damage_page)


@case("score cache: a changed digit in a cached value is recomputed and counted", "score cache",
      "correct_result")
def _(ws):
    folder, stimuli, cache = _cached_run(ws, "cache_changed_value")
    db = cache / "scores.sqlite"
    with sqlite3.connect(db) as conn:
        key, value = conn.execute("SELECT key, value FROM scores LIMIT 1").fetchone()
        entry = json.loads(value)
        first = next(i for i, v in enumerate(entry["logprobs"]) if v is not None)
        entry["logprobs"][first] += 6.0  # e.g. -8.2267 -> -2.2267: one digit
        conn.execute("UPDATE scores SET value = ? WHERE key = ?",
                     (json.dumps(entry, separators=(",", ":")), key))
    err = score(ws, "--stimuli", stimuli, "--model", ws.gpt2, "--out", folder / "o.csv",
                "--cache-dir", cache)
    return folder / "o.csv", err


def _check_recomputed(ws, value):
    out, err = value
    ws.check_scores(out)
    if "1 cached score(s) failed their checksum" not in err:
        raise Wrong(f"the rejected cache entry was not reported: {err!r}")


CASES[-1].check = _check_recomputed


@case("score cache: a cache written before checksums is recomputed once and counted",
      "score cache", "correct_result")
def _(ws):
    folder, stimuli, cache = _cached_run(ws, "cache_legacy")
    db = cache / "scores.sqlite"
    as_a_new_process()
    _checkpointed(db)
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT key, value FROM scores").fetchall()
    db.unlink()
    with sqlite3.connect(db) as conn:  # the schema before checksums, its values unchanged
        conn.execute("CREATE TABLE scores (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.executemany("INSERT INTO scores VALUES (?, ?)", rows)
    err = score(ws, "--stimuli", stimuli, "--model", ws.gpt2, "--out", folder / "o.csv",
                "--cache-dir", cache)
    again = score(ws, "--stimuli", stimuli, "--model", ws.gpt2, "--out", folder / "o2.csv",
                  "--cache-dir", cache)
    return folder, err, again


def _check_legacy(ws, value):
    folder, err, again = value
    ws.check_scores(folder / "o.csv")
    ws.check_scores(folder / "o2.csv")
    if "24 had none" not in err:
        raise Wrong(f"the 24 unverified entries were not reported: {err!r}")
    if "warning" in again:
        raise Wrong(f"the second run still rejected entries: {again!r}")


CASES[-1].check = _check_legacy


@case("score cache: repair-cache salvages the rows of a damaged page, then scores equal a "
      "clean run", "score cache", "correct_result")
def _(ws):
    from models.__main__ import main

    folder, stimuli, cache = _cached_run(ws, "cache_repair")
    _damage_page(cache / "scores.sqlite")
    said = cli(main, ["repair-cache", "--cache-dir", cache])
    salvaged = int(said.split("salvaged ")[1].split()[0])
    from models.sweep import read_stimuli, sweep

    runs = []
    scores = sweep(read_stimuli(stimuli), [str(ws.gpt2)], cache_dir=cache,
                   report=lambda name, run: runs.append(run))
    scores.to_csv(folder / "o.csv", index=False)
    return folder / "o.csv", salvaged, runs[0]


def _check_repaired(ws, value):
    out, salvaged, run = value
    if not 0 < salvaged < 24:
        raise Wrong(f"repair-cache salvaged {salvaged} of 24 rows; a damaged leaf page should "
                    f"leave some, not all")
    if run["cache_hits"] != salvaged or run["computed"] != 24 - salvaged:
        raise Wrong(f"after the repair: {run['cache_hits']} hits, {run['computed']} computed; "
                    f"expected {salvaged} and {24 - salvaged}")
    ws.check_scores(out)


CASES[-1].check = _check_repaired


@case("score cache: --cache-dir under an existing file", "score cache",
      names=("cache",))
def _(ws):
    folder = ws.fresh("cache_under_file")
    stimuli = ws.stimuli(folder)
    return score(ws, "--stimuli", stimuli, "--model", ws.gpt2, "--out", folder / "o.csv",
                 "--cache-dir", stimuli / "cache")


SCORE_CHILD = textwrap.dedent("""
    import sys
    from models.__main__ import main
    sys.exit(main(["score", "--quiet", *sys.argv[1:]]))
""")


@case("score cache: two processes scoring into one cache at once", "score cache",
      "correct_result", slow=True)
def _(ws):
    folder = ws.fresh("cache_concurrent")
    stimuli, cache = ws.stimuli(folder, n=200), folder / "cache"
    children = [subprocess.Popen([sys.executable, "-c", SCORE_CHILD, "--stimuli", str(stimuli),
                                  "--model", str(ws.gpt2), "--out", str(folder / f"o{k}.csv"),
                                  "--cache-dir", str(cache), "--batch-size", "8"],
                                 env=_env(), stderr=subprocess.PIPE) for k in range(2)]
    for child in children:
        _, err = child.communicate(timeout=300)
        if child.returncode:
            raise CliFailure(child.returncode, err.decode())
    return folder


def _check_concurrent(ws, folder):
    for k in range(2):
        ws.check_scores(folder / f"o{k}.csv", n=200)


CASES[-1].check = _check_concurrent


@case("score CLI: SIGKILL mid-scoring, then a resume equal to a clean run", "score cache",
      "correct_result", slow=True)
def _(ws):
    from killed_writer import kill_mid_write

    folder = ws.fresh("cache_killed")
    n = 400
    stimuli, cache = ws.stimuli(folder, n=n), folder / "cache"
    child = subprocess.Popen([sys.executable, "-c", SCORE_CHILD, "--stimuli", str(stimuli),
                              "--model", str(ws.gpt2), "--out", str(folder / "killed.csv"),
                              "--cache-dir", str(cache), "--batch-size", "4"],
                             env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    kill_mid_write(child, cache / "scores.sqlite", after=40, total=n, timeout=240)
    if (folder / "killed.csv").exists():
        raise Mixed("the killed run left an output file")
    score(ws, "--stimuli", stimuli, "--model", ws.gpt2, "--out", folder / "o.csv",
          "--cache-dir", cache, "--batch-size", "4")
    return folder / "o.csv"


CASES[-1].check = lambda ws, out: ws.check_scores(out, n=400)


# --- load_human (singular_they) and the human-data validation (defect 7) --------------------
for _kind in ("empty", "header_only", "binary", "non_utf8"):
    def _run(ws, kind=_kind):
        folder = ws.fresh(f"human_{kind}")
        return load_human_file(ws, _hostile_file(
            folder, kind, "participant,item,rating,stage,nb_acceptance", "human.csv"))
    case(f"load_human: {_kind.replace('_', '-')} file", "load_human", names=("human.csv",))(_run)


def _human_case(label: str, edit: Callable[[pd.DataFrame], pd.DataFrame], names, *,
                raw: Callable[[str], str] | None = None, sep: str = ","):
    def run(ws):
        folder = ws.fresh("human")
        path = folder / "human.csv"
        text = edit(ws.human_rows()).to_csv(index=False, sep=sep)
        path.write_text(raw(text) if raw else text)
        return load_human_file(ws, path)
    case(f"load_human: {label}", "load_human", names=("human.csv", *names))(run)


_human_case("rating inf", lambda d: d.astype({"rating": object}).assign(
    rating=["inf"] + d["rating"].tolist()[1:]), ("row 2", "'rating'", "finite"))
_human_case("rating -Infinity in row 5", lambda d: d.astype({"rating": object}).assign(
    rating=d["rating"].tolist()[:3] + ["-Infinity"] + d["rating"].tolist()[4:]),
    ("row 5", "'rating'"))
_human_case("blank participant id", lambda d: d.assign(
    participant=d["participant"].tolist()[:2] + [""] + d["participant"].tolist()[3:]),
    ("row 4", "'participant'"))
_human_case("whitespace-only participant id", lambda d: d,
            ("row 3", "'participant'"), raw=lambda t: t.replace("\np1,", "\n  ,", 2).replace(
                "\n  ,", "\np1,", 1))
_human_case("blank item id", lambda d: d.assign(item=[""] + d["item"].tolist()[1:]),
            ("row 2", "'item'"))
_human_case("duplicated trial", lambda d: pd.concat([d, d.iloc[[1]]]), ("'participant'",))
_human_case("unknown stage", lambda d: d.assign(stage=["pioneer"] + d["stage"].tolist()[1:]),
            ("row 2", "'stage'"))
_human_case("nonbinary acceptance 7", lambda d: d.assign(
    nb_acceptance=[7] + d["nb_acceptance"].tolist()[1:]), ("row 2", "'nb_acceptance'"))
_human_case("missing rating column", lambda d: d.drop(columns="rating"), ("'rating'",))
_human_case("unknown item", lambda d: d.assign(item=["no-such-item"] + d["item"].tolist()[1:]),
            ("row 2", "'item'"))
_human_case("pipe-separated", lambda d: d, ("participant",), sep="|")
_human_case("rating 'n/a!'", lambda d: d.astype({"rating": object}).assign(
    rating=["n/a!"] + d["rating"].tolist()[1:]), ("row 2", "'rating'"))


@case("load_human: Camilliere layout with a blank ID", "load_human",
      names=("camilliere_data.txt", "'ID'"))
def _(ws):
    folder = ws.fresh("human_camilliere")
    path = folder / "camilliere_data.txt"
    path.write_text("ID exp cond itm rating clust nBAcc gId\n"
                    "s1 main gfamily 1 5 1 3 2\n"
                    '"" main gfamily 2 4 1 3 2\n')
    from studies.singular_they.human import load_human
    from studies.singular_they.stimuli import load_camilliere

    # the layout is keyed by (cond, itm) of the published stimuli, so it is read against them
    return load_human(path, load_camilliere()[0])


@case("load_human: semicolon-separated file equals the comma-separated one", "load_human",
      "correct_result")
def _(ws):
    folder = ws.fresh("human_semicolon")
    comma, semi = folder / "comma.csv", folder / "semi.csv"
    ws.human_rows().to_csv(comma, index=False)
    ws.human_rows().to_csv(semi, index=False, sep=";")
    return load_human_file(ws, comma), load_human_file(ws, semi)


def _check_same_tables(ws, value):
    (a, _), (b, _) = value
    try:
        pd.testing.assert_frame_equal(a, b)
    except AssertionError as exc:
        raise Wrong(f"the two separators give different tables: {exc}") from None
    if len(a) != 12 or a["rating"].tolist() != ws.human_rows()["rating"].astype(float).tolist():
        raise Wrong("the table read differs from the one written")


CASES[-1].check = _check_same_tables


@case("load_human: an empty rating is excluded and counted", "load_human", "correct_result")
def _(ws):
    folder = ws.fresh("human_nan")
    rows = ws.human_rows().astype({"rating": object})
    rows.loc[5, "rating"] = ""
    rows.to_csv(folder / "human.csv", index=False)
    return load_human_file(ws, folder / "human.csv")


def _check_one_excluded(ws, value):
    trials, log = value
    counted = sum(e.n for e in log.entries if "missing rating" in e.reason)
    if len(trials) != 11 or counted != 1:
        raise Wrong(f"expected 11 trials and 1 exclusion, found {len(trials)} and {counted}")


CASES[-1].check = _check_one_excluded


# --- dataset loaders (watson2023: two small count files) ------------------------------------
def _watson_copy(ws: Workspace, name: str) -> Path:
    from gbstats.data.registry import get_dataset

    data = ws.fresh(name) / "data"
    shutil.copytree(get_dataset("watson2023").folder(), data / "watson2023")
    return data


def _watson_case(label: str, edit: Callable[[Path], None], names, verify: bool = False):
    def run(ws):
        from gbstats.data.registry import load_dataset

        data = _watson_copy(ws, "watson")
        edit(data / "watson2023" / "wiki_counts.csv")
        return load_dataset("watson2023", data_dir=data, verify=verify)
    case(f"dataset loader: watson2023 {label}", "data loaders",
         names=("wiki_counts.csv", *names))(run)


def _replace_line(path: Path, line: int, text: str) -> None:
    lines = path.read_text().splitlines()
    lines[line - 1] = text
    path.write_text("\n".join(lines) + "\n")


_watson_case("checksum-mismatched file (one digit changed)",
             lambda p: p.write_bytes(p.read_bytes().replace(b"1", b"2", 1)), ("checksum",),
             verify=True)
_watson_case("empty file", lambda p: p.write_bytes(b""), ())
_watson_case("header-only file", lambda p: p.write_text("term,count\n"), ())
_watson_case("binary file", lambda p: p.write_bytes(BINARY), ())
_watson_case("non-UTF-8 file", lambda p: p.write_bytes("term,count\nfiremän,3\n".encode("latin-1")), ())
_watson_case("tab-separated file", lambda p: p.write_text(p.read_text().replace(",", "\t")),
             ("'count'",))
_watson_case("count inf", lambda p: _replace_line(p, 3, "fireman,inf"), ("row 3", "'count'"))
_watson_case("count NaN", lambda p: _replace_line(p, 3, "fireman,NaN"), ("row 3", "'count'"))
_watson_case("duplicated term", lambda p: _replace_line(
    p, 3, p.read_text().splitlines()[1]), ("row 3", "'term'"))


@case("dataset loader: unknown dataset name", "data loaders", names=("watson2023",))
def _(ws):
    from gbstats.data.registry import load_dataset

    return load_dataset("watson2024")


# --- mixed models: fit_lmm, fit_glmm, fit_bayes, compare_models, marginal_means -------------
FORMULA = "y ~ x + cond + (1|subject)"


def _frame() -> pd.DataFrame:
    return pd.read_csv(REPO / "tests" / "reference" / "random_intercept.csv")


def _lme4_reference() -> pd.DataFrame:
    """lme4's estimates for FORMULA on random_intercept.csv (tests/reference/make_refs.R)."""
    refs = json.loads((REPO / "tests" / "reference" / "lme4_refs.json").read_text())
    return pd.DataFrame(refs["models"]["random_intercept"]["fixed"]).set_index("term")


def _check_matches_lme4(ws, fit):
    ref = _lme4_reference()
    got = fit.coefs.set_index("term")
    for term in ref.index:
        for column, rtol in (("estimate", LME4_RTOL), ("se", LME4_SE_RTOL)):
            want, have = ref.at[term, column], got.at[term, column]
            if not np.isclose(have, want, rtol=rtol, atol=0):
                raise Wrong(f"{term} {column}: {have} vs lme4's {want}")


def _fit_case(label: str, call: Callable[[], Any], names=(), expect="clean_error", check=None,
              needs=(), entry="fit_lmm"):
    case(f"{entry}: {label}", entry, expect, names, check, needs)(lambda ws: call())


def _lmm(data, **kw):
    from gbstats.mixed.lmm import fit_lmm

    return fit_lmm(kw.pop("formula", FORMULA), data, kw.pop("backend", "statsmodels"), **kw)


_fit_case("empty data frame with the columns", lambda: _lmm(_frame().iloc[:0]), ("0 rows",))
_fit_case("empty data frame without columns", lambda: _lmm(pd.DataFrame()), ("'y'",))
_fit_case("inf in the response", lambda: _lmm(_frame().assign(
    y=lambda d: d["y"].where(d.index != 7, np.inf))), ("'y'",))
_fit_case("a formula column missing", lambda: _lmm(_frame().drop(columns="x")), ("'x'",))
_fit_case("text in the response", lambda: _lmm(_frame().assign(
    y=lambda d: d["y"].astype(object).where(d.index != 3, "high"))), ("y",))
_fit_case("one subject only", lambda: _lmm(_frame().assign(subject="s00")), ("subject",))
_fit_case("unknown backend", lambda: _lmm(_frame(), backend="lme5"), ("lme5",))
_fit_case("no random term", lambda: _lmm(_frame(), formula="y ~ x + cond"), ("random",))
_fit_case("every response missing", lambda: _lmm(_frame().assign(y=np.nan)), ("missing",))
_fit_case("rows with a missing response are dropped, counted, and the fit equals lme4's on "
          "the complete rows",
          lambda: _lmm(pd.concat([_frame(), _frame().iloc[:5].assign(y=np.nan)],
                                 ignore_index=True)),
          expect="correct_result",
          check=lambda ws, fit: (_check_matches_lme4(ws, fit), _require(
              fit.fit_stats["n_dropped_na"] == 5, f"n_dropped_na {fit.fit_stats['n_dropped_na']}")))
_fit_case("shuffled rows and garbage in unused columns: the fit equals lme4's",
          lambda: _lmm(_frame().sample(frac=1, random_state=3).assign(
              junk=np.inf, note="x\x00y")),
          expect="correct_result", check=_check_matches_lme4)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise Wrong(message)


def _glmm(data, **kw):
    from gbstats.mixed.lmm import fit_glmm

    return fit_glmm(kw.pop("formula", "correct ~ x + (1|subject)"), data, **kw)


def _binary() -> pd.DataFrame:
    return pd.read_csv(REPO / "tests" / "reference" / "binomial_glmm.csv")


_fit_case("response 2 in a binomial GLMM", lambda: _glmm(_binary().assign(
    correct=lambda d: d["correct"].where(d.index != 4, 2))), ("correct",), entry="fit_glmm")
_fit_case("family poisson", lambda: _glmm(_binary(), family="poisson"), ("poisson",),
          entry="fit_glmm")
_fit_case("empty data frame", lambda: _glmm(_binary().iloc[:0]), ("0 rows",), entry="fit_glmm")


def _bayes(data, **kw):
    from gbstats.mixed.bayes import fit_bayes

    return fit_bayes(kw.pop("formula", FORMULA), data, **kw)


for _param, _value in (("draws", 0), ("draws", -5), ("chains", 0), ("tune", -1), ("draws", 2.5)):
    _fit_case(f"{_param}={_value}", lambda p=_param, v=_value: _bayes(_frame(), **{p: v}),
              (f"{_param}={_value}",), entry="fit_bayes", needs=("pymc",))
_fit_case("empty data frame", lambda: _bayes(_frame().iloc[:0]), ("0 rows",), entry="fit_bayes",
          needs=("pymc",))
_fit_case("unknown family", lambda: _bayes(_frame(), family="poisson"), ("poisson",),
          entry="fit_bayes", needs=("pymc",))


def _fitted():
    return _lmm(_frame())


_fit_case("not a fit", lambda: __import__("gbstats.mixed.compare", fromlist=["x"]).compare_models(
    "small", _fitted()), ("small",), entry="compare_models")
_fit_case("fits on different rows", lambda: __import__(
    "gbstats.mixed.compare", fromlist=["x"]).compare_models(
    _lmm(_frame().iloc[:200], formula="y ~ x + (1|subject)"), _fitted()), ("rows",),
    entry="compare_models")
_fit_case("unknown factor", lambda: __import__(
    "gbstats.mixed.marginal", fromlist=["x"]).marginal_means(_fitted(), "stance"), ("stance",),
    entry="marginal_means")
_fit_case("level 1.5", lambda: __import__(
    "gbstats.mixed.marginal", fromlist=["x"]).marginal_means(_fitted(), "cond", level=1.5),
    ("level",), entry="marginal_means")
_fit_case("not a fit", lambda: __import__(
    "gbstats.mixed.marginal", fromlist=["x"]).marginal_means(_frame(), "cond"), ("FitResult",),
    entry="marginal_means")


# --- every study's CLI: flags and --out (defects 6 and 8), before any heavy work ----------------
for _name in STUDY_NAMES:
    def _run_under_file(ws, name=_name):
        folder = ws.fresh(f"study_{name}")
        blocker = folder / "a-file"
        blocker.write_text("not a folder")
        return study(name, "--out", blocker / "report", "--model", "no-such-model-anywhere")
    case(f"{_name} CLI: --out under an existing file", f"{_name} CLI",
         names=("--out", "is a file"))(_run_under_file)

    def _run_seed(ws, name=_name):
        return study(name, "--seed", "-1", "--out", ws.fresh(f"study_{name}") / "r")
    case(f"{_name} CLI: --seed -1", f"{_name} CLI", names=("--seed",))(_run_seed)

for _name in BAYES_STUDIES:
    def _run_draws(ws, name=_name):
        return study(name, "--draws", "0", "--out", ws.fresh(f"study_{name}") / "r")
    case(f"{_name} CLI: --draws 0", f"{_name} CLI", names=("--draws",))(_run_draws)


@case("name_gender CLI: --n-boot 0", "name_gender CLI", names=("--n-boot",))
def _(ws):
    return study("name_gender", "--model", "none", "--n-boot", "0",
                 "--out", ws.fresh("study_name_gender_boot") / "r")


@case("singular_they CLI: unknown --stimuli name", "singular_they CLI",
      names=("--stimuli", "camilliere2021"))
def _(ws):
    return study("singular_they", "--stimuli", "camiliere2021", "--no-bayes",
                 "--out", ws.fresh("study_they_stimuli") / "r")


@case("example_they CLI: --out in /proc", "example_they CLI", names=("--out", "/proc"))
def _(ws):
    return study("example_they", "--out", "/proc/gbstats-hostile/report")


@case("role_nouns CLI: --out is a folder of other files (would be replaced)", "role_nouns CLI",
      names=("--out", "not a gbstats report"))
def _(ws):
    folder = ws.fresh("study_foreign")
    (folder / "thesis.tex").write_text("my thesis")
    try:
        return study("role_nouns", "--model", "none", "--out", folder)
    finally:
        if (folder / "thesis.tex").read_text() != "my thesis":
            raise Mixed("the user's file was touched")


@case("example_they CLI: a model name one letter off the registry", "example_they CLI",
      names=("smollm2-135m",))
def _(ws):
    return study("example_they", "--model", "smollm2-135", "--no-bayes", "--frames", "2",
                 "--out", ws.fresh("study_model") / "r")


@case("singular_they CLI: unknown --backend", "singular_they CLI", names=("--backend",))
def _(ws):
    return study("singular_they", "--backend", "lme5", "--out", ws.fresh("study_backend") / "r")


@case("winopron CLI: unknown flag", "winopron CLI", names=("--frobnicate",))
def _(ws):
    return study("winopron", "--frobnicate", "--out", ws.fresh("study_flag") / "r")


@case("singular_they CLI: --human file with an inf rating", "singular_they CLI",
      names=("human.csv", "'rating'"))
def _(ws):
    folder = ws.fresh("study_they_human")
    rows = ws.human_rows().astype({"rating": object})
    rows.loc[2, "rating"] = "inf"
    rows.to_csv(folder / "human.csv", index=False)
    return study("singular_they", "--human", folder / "human.csv", "--out", folder / "r",
                 "--model", "no-such-model-anywhere")


for _study, _label, _content, _names in [
        ("winopron", "empty --predictions file", b"", ("predictions.tsv",)),
        ("winopron", "--predictions with a blank sentence id",
         b"sentence_id\tprediction\n\toccupation\n", ("predictions.tsv", "row 2")),
        ("winopron", "binary --predictions file", BINARY, ("predictions.tsv",)),
        ("genda_lens", "non-UTF-8 --predictions file",
         "item\tclusters\nk\u00f8\t[]\n".encode("latin-1"), ("predictions.tsv",)),
]:
    def _run(ws, study_name=_study, content=_content):
        folder = ws.fresh(f"study_predictions_{study_name}")
        path = folder / "predictions.tsv"
        path.write_bytes(content)
        return study(study_name, "--predictions", path, "--out", folder / "r", "--model", "none")
    case(f"{_study} CLI: {_label}", f"{_study} CLI", names=_names)(_run)


# --- the study runner's outputs: killed mid-write, umask (defects 3 and 11) ------------------
TINY_STUDY = textwrap.dedent("""
    import os, signal, sys
    import pandas as pd
    from gbstats.report.study_report import StudyReport
    from studies.pipeline import Study

    seed = int(sys.argv[sys.argv.index("--seed") + 1])
    kill_after = int(os.environ.get("KILL_AFTER_TABLES", "0"))
    written = []
    table = StudyReport.table

    def table_then_maybe_die(self, *args, **kwargs):
        path = table(self, *args, **kwargs)
        written.append(path)
        if kill_after and len(written) == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)   # mid-write: some tables on disk, no report
        return path

    StudyReport.table = table_then_maybe_die

    def load(run, state):
        return pd.DataFrame({"x": [float(seed), float(seed) + 1]})

    def report(run, report, df):
        report.section("Design", f"seed {seed}")
        report.table("first", df, "first")
        report.table("second", df * 2, "second")
        if seed == 1:   # a table only the old run writes: it must not survive into the new one
            report.table("only_old", df, "only in the old run")
        run.write_csv("x.csv", df)

    study = Study(name="tiny", title="Tiny", description="kill test", model="optional",
                  bayes=False, load=load, report=report)
    sys.exit(study.main(["--model", "none", *sys.argv[1:]]))
""")


def _tiny_run(out: Path, seed: int, kill_after: int = 0) -> int:
    env = dict(_env(), KILL_AFTER_TABLES=str(kill_after))
    done = subprocess.run([sys.executable, "-c", TINY_STUDY, "--out", str(out), "--seed", str(seed)],
                          env=env, capture_output=True, text=True, timeout=300)
    if done.returncode not in (0, -signal.SIGKILL):
        raise CliFailure(done.returncode, done.stderr)
    return done.returncode


@case("study runner: SIGKILL mid-write leaves the old outputs whole; the next run replaces "
      "them all", "study runner", "correct_result", slow=True)
def _(ws):
    out = ws.fresh("runner_kill") / "report"
    _tiny_run(out, seed=1)
    old = sha_tree(out)
    if _tiny_run(out, seed=2, kill_after=2) != -signal.SIGKILL:
        raise Wrong("the run was meant to be killed mid-write and was not")
    after_kill = sha_tree(out)
    if after_kill != old:
        changed = sorted(set(old.items()) ^ set(after_kill.items()))
        raise Mixed(f"after the kill the folder mixes runs: {changed[:4]}")
    _tiny_run(out, seed=2)
    return out, old


def _check_whole_new_run(ws, value):
    out, old = value
    new = sha_tree(out)
    results = json.loads((out / "results.json").read_text())
    if results["provenance"]["seed"] != 2:
        raise Mixed("results.json is not the new run's")
    stale = sorted(set(old) - set(new))
    if stale != ["tables/only_old.tex"]:
        raise Mixed(f"files of the old run that the new one does not write: {stale}")
    same = sorted(p for p in new if old.get(p) == new[p])
    if same:  # every file the new run writes holds its own numbers
        raise Mixed(f"files still as the old run wrote them: {same}")
    leftovers = [p.name for p in out.parent.iterdir() if p.name.startswith(".report")]
    if leftovers:
        raise Mixed(f"staging folders left behind: {leftovers}")


CASES[-1].check = _check_whole_new_run


@case("study runner: outputs follow the umask (0644 under umask 022)", "study runner",
      "correct_result", slow=True)
def _(ws):
    out = ws.fresh("runner_umask") / "report"
    old = os.umask(0o022)
    try:
        _tiny_run(out, seed=1)
    finally:
        os.umask(old)
    return out


def _check_modes(ws, out):
    for rel in ("report.md", "results.json", "tables/first.tex", "x.csv"):
        mode = (out / rel).stat().st_mode & 0o777
        if mode != 0o644:
            raise Wrong(f"{rel} has mode {oct(mode)}, expected 0o644 under umask 022")
    mode = out.stat().st_mode & 0o777
    if mode != 0o755:
        raise Wrong(f"the report folder has mode {oct(mode)}, expected 0o755")


CASES[-1].check = _check_modes


# --- property-based cases (hypothesis): random tables, random cache corruption ----------------
def _hypothesis_cases() -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    cells = st.one_of(st.text(max_size=6), st.sampled_from(["", " ", "nan", "inf", "-inf", "1e309",
                                                            "NA", "3", "-1", "0.5", "p1", "\x00"]),
                      st.integers(-5, 9).map(str), st.floats(allow_nan=True).map(str))
    columns = st.lists(st.sampled_from(["participant", "item", "rating", "stage",
                                        "nb_acceptance", "extra", "ID"]),
                       min_size=1, max_size=6, unique=True)
    quiet = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                     suppress_health_check=list(HealthCheck))

    @case("load_human: random tables (hypothesis, 40 examples)", "load_human", "correct_result")
    def _(ws):
        from gbstats.errors import GbstatsError

        folder = ws.fresh("human_random")
        items = ws.stimulus_table()["item"].tolist()[:3]
        table_cells = st.one_of(cells, st.sampled_from(items + ["innovator", "non-innovator"]))

        @quiet
        @given(columns, st.lists(st.lists(table_cells, min_size=6, max_size=6), max_size=6),
               st.sampled_from([",", ";", "\t"]))
        def feed(names, rows, sep):
            path = folder / "human.csv"
            pd.DataFrame([r[:len(names)] for r in rows], columns=names).to_csv(
                path, index=False, sep=sep)
            try:
                trials, _ = load_human_file(ws, path)
            except GbstatsError:
                return
            # whatever passes must be what the contract says
            assert trials["rating"].map(lambda v: pd.isna(v) or np.isfinite(v)).all()
            assert trials["participant"].map(lambda v: isinstance(v, str) and v.strip()).all()
        feed()

    @case("score CLI: random stimulus tables (hypothesis, 25 examples)", "score CLI",
          "correct_result")
    def _(ws):
        from gbstats.errors import GbstatsError
        from models.sweep import read_stimuli

        folder = ws.fresh("stimuli_random")

        @settings(max_examples=25, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(st.lists(st.sampled_from(["item", "text", "sentence", "frame", "variant"]),
                        min_size=1, max_size=4, unique=True),
               st.lists(st.lists(cells, min_size=4, max_size=4), max_size=5),
               st.sampled_from(["causal", "choice", "continuation"]),
               st.sampled_from([".csv", ".tsv"]))
        def feed(names, rows, measure, suffix):
            path = folder / f"stimuli{suffix}"
            pd.DataFrame([r[:len(names)] for r in rows], columns=names).to_csv(
                path, index=False, sep="," if suffix == ".csv" else "\t")
            try:
                read_stimuli(path, measure=measure)
            except GbstatsError:
                return
        feed()

    # Only "no exception but a gbstats error" is asserted here: whether a statsmodels fit that
    # returns is right is issue 24's defect 1, which another change handles.
    @case("fit_lmm: random tables give a gbstats error or a fit (hypothesis, 20 examples)",
          "fit_lmm", "correct_result")
    def _(ws):
        from gbstats.errors import GbstatsError

        numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=32),
                            st.sampled_from([0.0, 1.0, np.nan]))

        @settings(max_examples=20, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(st.lists(st.tuples(numbers, numbers, st.sampled_from(["a", "b", "c", "", None]),
                                  st.sampled_from(["s1", "s2", "s3", None])), max_size=12))
        def feed(rows):
            data = pd.DataFrame(rows, columns=["y", "x", "cond", "subject"])
            try:
                _lmm(data)
            except GbstatsError:
                return
        feed()

    @case("score cache: random corruption of the cache file (hypothesis, 15 examples)",
          "score cache", "correct_result", slow=True)
    def _(ws):
        folder, stimuli, cache = _cached_run(ws, "cache_random")
        _checkpointed(cache / "scores.sqlite")
        pristine = (cache / "scores.sqlite").read_bytes()

        @settings(max_examples=15, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(st.lists(st.tuples(st.integers(0, len(pristine) - 1), st.binary(min_size=1,
                                                                               max_size=64)),
                        min_size=1, max_size=4),
               st.one_of(st.none(), st.integers(0, len(pristine))))
        def feed(patches, cut):
            data = bytearray(pristine)
            for at, blob in patches:
                data[at:at + len(blob)] = blob
            if cut is not None:
                data = data[:cut]
            db = cache / "scores.sqlite"
            for side in ("-wal", "-shm"):
                Path(f"{db}{side}").unlink(missing_ok=True)
            db.write_bytes(bytes(data))
            as_a_new_process()
            out = folder / "o.csv"
            out.unlink(missing_ok=True)
            try:
                score(ws, "--stimuli", stimuli, "--model", ws.gpt2, "--out", out,
                      "--cache-dir", cache)
            except CliFailure as exc:
                outcome, detail = _cli_outcome(exc, ("scores.sqlite",))
                assert outcome == "clean_error", detail
                return
            ws.check_scores(out)  # a run that succeeds must give the clean run's scores
        try:
            feed()
        finally:
            as_a_new_process()
        return None


try:
    _hypothesis_cases()
except ImportError:  # hypothesis is a test dependency; the table stands without it
    pass



def mount_namespace_command() -> list[str]:
    """The prefix that runs a command in a private mount namespace, where it may mount a
    tmpfs or a read-only bind mount that vanishes with it: as root, or as a user mapped to
    root in a user namespace."""
    return ["unshare", "--mount", "--propagation", "private",
            *([] if os.geteuid() == 0 else ["--map-root-user"])]


_MOUNT: dict[str, bool] = {}


def can_mount() -> bool:
    """Whether `mount_namespace_command` can mount a tmpfs here (tried once per process)."""
    import tempfile

    if "ok" not in _MOUNT:
        _MOUNT["ok"] = False
        if shutil.which("unshare") is not None:
            with tempfile.TemporaryDirectory() as folder:
                try:
                    done = subprocess.run([*mount_namespace_command(), "sh", "-c",
                                           f"mount -t tmpfs -o size=64k tmpfs '{folder}'"],
                                          capture_output=True, timeout=30)
                    _MOUNT["ok"] = done.returncode == 0
                except (OSError, subprocess.TimeoutExpired):
                    pass
    return _MOUNT["ok"]


def _load_more_cases() -> None:
    """Each later review keeps its cases in a file of its own, tests/hostile/cases_<topic>.py,
    which imports `case` and the helpers from this module (loaded as "hostile_cases") and
    registers into the same CASES table; they are loaded here, after everything they use."""
    import importlib.util

    for path in sorted(Path(__file__).parent.glob("cases_*.py")):
        name = f"hostile_{path.stem}"
        if name in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)


_load_more_cases()

def selected(include_slow: bool = True) -> list[Case]:
    return [c for c in CASES if include_slow or not c.slow]


def missing_needs(needs: tuple[str, ...]) -> str | None:
    """Why a case cannot run here, or None."""
    import importlib.util

    for need in needs:
        if need == "pymc" and (importlib.util.find_spec("pymc") is None
                               or importlib.util.find_spec("bambi") is None):
            return "PyMC/bambi not installed"
        if need == "r":
            from gbstats.mixed.engines.lme4 import available

            if not available():
                return "R/lme4 not installed"
        if need == "mount" and not can_mount():
            return ("cannot mount a small file system (read-only or full) in a private mount "
                    "namespace here: needs root or user namespaces (unshare -rm)")
    return None


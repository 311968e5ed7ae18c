"""On-disk score cache: sqlite in WAL mode, one row per scored unit.

Why sqlite: each commit is atomic (a run killed mid-write leaves the previous
committed state, never a half-written row), WAL lets several processes read
and write one cache concurrently, and it ships with Python. Scorers commit
after every batch, so a killed run loses at most the batch in flight and the
next run resumes from what was committed.

Keys are sha256 digests of (model id, revision, dtype, scorer, settings, text
parts); values are JSON. Each row also holds a checksum of its key and value
(`value_digest`), verified on every read: a value changed on disk (a flipped
bit, a hand edit, a damaged page that still parses) is a miss, recomputed and
counted (`Lookup.rejected`, `rejected_totals`), never a score returned
silently. Rows written before checksums existed have none and are recomputed
once (counted as unverified).

A file sqlite cannot read (truncated, garbage in the header, a damaged page)
raises `CacheCorruptError`, which names the file and the two ways out: move it
aside, or salvage its readable rows with `repair_cache`
(`python -m models repair-cache`). A healthy cache in a place that cannot be
written (a read-only folder or file system, a full disk) raises
`gbstats.errors.PlaceError` instead, which says so: moving such a cache aside
would throw its scores away for nothing.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gbstats.cli import interrupts_held
from gbstats.config import resolve_cache_dir
from gbstats.errors import GbstatsError, PlaceError, place_problem, write_probe

CACHE_FILE = "scores.sqlite"
# Bump when the numbers a scorer produces change, so old entries are not reused.
ENGINE_VERSION = 1
SIDE_FILES = ("-wal", "-shm")
# The encoder of every stored value, made once: json.dumps with any option set builds a new
# encoder per call (about a tenth of a value's encoding time, issue 41). Same text.
VALUE_JSON = json.JSONEncoder(separators=(",", ":"))


class CacheCorruptError(GbstatsError):
    """The score cache file cannot be read by sqlite; the message says how to recover."""


def cache_key(namespace: Mapping, parts: Iterable) -> str:
    payload = json.dumps([ENGINE_VERSION, dict(sorted(namespace.items())), list(parts)],
                         ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


# The encoder of a key's text parts, made once (see VALUE_JSON); the options are cache_key's.
KEY_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def cache_keys(namespace: Mapping, parts_list: Iterable[Iterable]) -> list[str]:
    """`cache_key(namespace, parts)` for each parts of `parts_list`: the same keys.

    The namespace (a dozen settings and versions) is encoded once, not once per text:
    a JSON list's text is its items' texts joined, so the payload of cache_key is that
    head, the parts' own encoding, and "]". For 8,000 texts this took a third of the
    time of calling cache_key on each (issue 41).
    """
    head = json.dumps([ENGINE_VERSION, dict(sorted(namespace.items()))], ensure_ascii=False,
                      separators=(",", ":"))[:-1] + ","
    encode, sha256 = KEY_JSON.encode, hashlib.sha256
    return [sha256(f"{head}{encode(list(parts))}]".encode("utf-8")).hexdigest()
            for parts in parts_list]


def value_digest(key: str, value_json: str) -> str:
    """Checksum of one row: the key is included, so a value moved to another key fails too."""
    return hashlib.sha256(f"{key}\0{value_json}".encode("utf-8")).hexdigest()[:32]


def corrupt_message(path: Path, exc: BaseException) -> str:
    return (f"score cache {path} is damaged and cannot be read (sqlite: {exc}). Either move "
            f"it aside (mv {path} {path}.broken; every score is then recomputed), or salvage "
            f"its readable rows with `python -m models repair-cache --cache-dir {path.parent}`")


@dataclass
class Lookup:
    """What a read found: verified values, and the keys whose stored value was rejected."""
    found: dict[str, object] = field(default_factory=dict)
    mismatched: list[str] = field(default_factory=list)   # checksum differs or value unreadable
    unverified: list[str] = field(default_factory=list)   # written before checksums

    @property
    def rejected(self) -> int:
        return len(self.mismatched) + len(self.unverified)


# Per cache file, over this process: how many cached values were rejected on read.
rejected_totals: dict[Path, dict[str, int]] = {}
# Per cache file, over this process: how many scores were committed (what a run stopped
# by Ctrl-C keeps).
stored_totals: dict[Path, int] = {}


class ScoreCache:
    """A key -> JSON store in `<cache_dir>/scores.sqlite`."""

    def __init__(self, cache_dir: str | os.PathLike | None = None):
        self.folder = resolve_cache_dir(cache_dir)
        self.path = Path(self.folder) / CACHE_FILE
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            problem = place_problem(exc)
            raise PlaceError(
                f"score cache folder {self.folder} cannot be created ("
                f"{'the place is ' + problem if problem else exc.strerror or exc}); expected "
                f"a writable folder (--cache-dir or $GBSTATS_CACHE), or run with --no-cache"
            ) from None
        with self._guard():
            self._conn = sqlite3.connect(self.path, timeout=OPEN_WAIT_S, isolation_level=None)
            # The busy timeout first, before any statement touches the file.
            self._conn.execute(f"PRAGMA busy_timeout={int(OPEN_WAIT_S * 1000)}")
            try:
                for statement in ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL",
                                  "CREATE TABLE IF NOT EXISTS scores "
                                  "(key TEXT PRIMARY KEY, value TEXT NOT NULL, digest TEXT)"):
                    execute_retrying(self._conn, statement)
            except sqlite3.OperationalError as exc:
                if not _is_transient(exc):
                    raise
                self._conn.close()
                raise GbstatsError(
                    f"the score cache {self.path} stayed locked for {OPEN_RETRY_S:.0f} s while "
                    f"it was opened: another process holds it (let it finish, or use another "
                    f"--cache-dir), or the file is damaged (move it aside, or salvage it with "
                    f"python -m models repair-cache --cache-dir {self.folder})") from None
            self._add_digest_column()

    def _guard(self):
        return _SqliteGuard(self.path)

    def _add_digest_column(self) -> None:
        """Caches written before checksums have no digest column: add it (their rows keep NULL)."""
        columns = [row[1] for row in self._conn.execute("PRAGMA table_info(scores)")]
        if "digest" in columns:
            return
        try:
            execute_retrying(self._conn, "ALTER TABLE scores ADD COLUMN digest TEXT")
        except sqlite3.OperationalError as exc:
            if "duplicate column" not in str(exc):  # another process added it first
                raise

    def lookup(self, keys: list[str]) -> Lookup:
        """Verified values for `keys`; a value failing its checksum is left out and listed."""
        result = Lookup()
        unique = list(dict.fromkeys(keys))
        with self._guard():
            for start in range(0, len(unique), 500):
                chunk = unique[start:start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, value, digest FROM scores WHERE key IN ({marks})", chunk)
                for key, value, digest in rows:
                    if digest is None:
                        result.unverified.append(key)
                        continue
                    if not isinstance(value, str) or value_digest(key, value) != digest:
                        result.mismatched.append(key)
                        continue
                    try:
                        result.found[key] = json.loads(value)
                    except ValueError:  # cannot happen with a matching digest, but never trust
                        result.mismatched.append(key)
        if result.rejected:
            totals = rejected_totals.setdefault(self.path, {"mismatched": 0, "unverified": 0})
            totals["mismatched"] += len(result.mismatched)
            totals["unverified"] += len(result.unverified)
        return result

    def get_many(self, keys: list[str]) -> dict[str, object]:
        """Verified values for `keys` (see `lookup` for what was rejected)."""
        return self.lookup(keys).found

    def put_many(self, entries: Mapping[str, object]) -> None:
        """Write entries in one transaction: all of them are committed, or none."""
        if not entries:
            return
        rows = []
        for k, v in entries.items():
            text = VALUE_JSON.encode(v)
            rows.append((k, text, value_digest(k, text)))
        # the commit and its count, or neither: a Ctrl-C (or SIGTERM) waits for both
        # (gbstats.cli.interrupts_held), since one landing between them left a committed
        # batch uncounted and the interrupted line under-reported what was kept
        with interrupts_held(), self._guard(), self._conn:  # BEGIN ... COMMIT (ROLLBACK on error)
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.executemany(
                "INSERT OR REPLACE INTO scores (key, value, digest) VALUES (?, ?, ?)", rows)
            self._conn.execute("COMMIT")
            stored_totals[self.path] = stored_totals.get(self.path, 0) + len(rows)

    def __len__(self) -> int:
        with self._guard():
            return self._conn.execute("SELECT COUNT(*) FROM scores").fetchone()[0]

    def close(self) -> None:
        self._conn.close()


class _SqliteGuard:
    """Turns sqlite's "file is not a database" / "disk image is malformed" into a
    CacheCorruptError naming the file and the fix. A locked database (OperationalError)
    is not corruption and is left as it is."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        if kind is not None and issubclass(kind, sqlite3.DatabaseError) \
                and not _is_transient(exc):
            place = place_message(self.path, exc)
            if place is not None:
                raise PlaceError(place) from None
            raise CacheCorruptError(corrupt_message(self.path, exc)) from None
        return False


# What sqlite says when it cannot write or create a file: the place may be at fault
# (read-only, full), not the file.
_PLACE_SYMPTOMS = ("unable to open database file", "readonly database", "disk i/o error",
                   "access permission denied")


def place_message(path: Path, exc: BaseException) -> str | None:
    """The message for a cache that is healthy but cannot be written where it is (a full
    disk, a read-only folder, file system or file), or None when the file itself is at
    fault (then it is damaged: `corrupt_message`)."""
    text = str(exc).lower()
    folder = path.parent
    if "disk is full" in text:
        return (f"the disk holding the score cache {path} is full (sqlite: {exc}); the cache "
                f"is not damaged and keeps every score committed before this one. Free some "
                f"space and rerun the same command to resume")
    if not isinstance(exc, sqlite3.OperationalError) \
            or not any(symptom in text for symptom in _PLACE_SYMPTOMS):
        return None
    problem = place_problem(write_probe(folder)) if folder.is_dir() else None
    if problem is None and path.exists() and not os.access(path, os.W_OK):
        problem = "a file this user cannot write (its permissions)"
        where = f"score cache {path}"
    else:
        where = f"score cache folder {folder}"
    if problem is None:
        return None
    if not path.exists():
        return (f"{where} is {problem}, so gbstats cannot create its cache file {CACHE_FILE} "
                f"there (sqlite: {exc}). Pass --cache-dir a writable folder, or run with "
                f"--no-cache")
    return (f"{where} is {problem} (sqlite: {exc}). The cache is not damaged, but gbstats "
            f"writes every new score to it: make it writable, or pass --cache-dir a writable "
            f"folder (copy {CACHE_FILE} there to keep its scores), or run with --no-cache")


# How long a statement waits for another process that holds the cache (sqlite's busy
# timeout), and how long opening retries the immediate "locked" answers below: two
# processes opening one new cache clash for milliseconds, so a lock that lasts this long
# is another process's long hold or a damaged file, and is said so.
OPEN_WAIT_S = 120.0
OPEN_RETRY_S = 10.0


def execute_retrying(conn: sqlite3.Connection, statement: str, *,
                     wait_s: float = OPEN_RETRY_S) -> None:
    """Run `statement`, retrying while sqlite says the file is locked or busy.

    Why not the busy timeout alone: when two processes open a new cache at the same
    moment, both switch it to WAL, and sqlite answers SQLITE_BUSY at once, without
    calling the busy handler, to the one that would otherwise deadlock (the journal
    switch needs an exclusive lock while both hold a shared one). Retrying after a short,
    growing sleep lets the other finish; it gives up after `wait_s`."""
    deadline = time.monotonic() + wait_s
    pause = 0.005
    while True:
        try:
            conn.execute(statement)
            return
        except sqlite3.OperationalError as exc:
            if not _is_transient(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(2 * pause, 0.5)


def _is_transient(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


_OPEN: dict[Path, ScoreCache] = {}


def open_cache(cache_dir: str | os.PathLike | None = None, use_cache: bool = True) -> ScoreCache | None:
    """The cache for `cache_dir` (resolved via gbstats.config), or None when bypassed."""
    if not use_cache:
        return None
    folder = resolve_cache_dir(cache_dir)
    if folder not in _OPEN:
        _OPEN[folder] = ScoreCache(folder)
    return _OPEN[folder]


def count_nonfinite(cache: ScoreCache, n: int) -> None:
    """Record `n` cached values that held NaN or inf (treated as misses; models.batching)."""
    if n:
        totals = rejected_totals.setdefault(cache.path, {"mismatched": 0, "unverified": 0})
        totals["nonfinite"] = totals.get("nonfinite", 0) + n


def rejected_snapshot() -> dict[Path, dict[str, int]]:
    """The counts so far, to pass to `rejected_summary(since=...)` after a step."""
    return {path: dict(counts) for path, counts in rejected_totals.items()}


def stored_summary() -> str | None:
    """"1,200 scores in <cache file>": what this process committed to score caches, or None."""
    kept = {path: n for path, n in stored_totals.items() if n}
    if not kept:
        return None
    total = sum(kept.values())
    return f"{total:,} score{'s' if total != 1 else ''} (in {', '.join(map(str, kept))})"


def rejected_summary(since: Mapping[Path, Mapping[str, int]] | None = None) -> str | None:
    """One sentence on the cached values rejected in this process (since a snapshot), or None."""
    since = since or {}

    def added(kind: str) -> int:
        return sum(t.get(kind, 0) - since.get(p, {}).get(kind, 0)
                   for p, t in rejected_totals.items())

    mismatched, unverified, nonfinite = added("mismatched"), added("unverified"), added("nonfinite")
    if not mismatched and not unverified and not nonfinite:
        return None
    parts = []
    if mismatched:
        parts.append(f"{mismatched} cached score(s) failed their checksum")
    if unverified:
        parts.append(f"{unverified} had no checksum (written by an older gbstats)")
    if nonfinite:
        parts.append(f"{nonfinite} held NaN or inf (written by an older gbstats)")
    files = ", ".join(str(p) for p in rejected_totals)
    return f"{' and '.join(parts)} in {files}; they were recomputed, not used."


# ---------------------------------------------------------------------------
# Salvage
# ---------------------------------------------------------------------------

@dataclass
class RepairReport:
    path: Path
    moved_to: Path | None
    salvaged: int
    rejected: int      # rows read but failing their checksum (or without one)
    unreadable: bool   # the table could not be scanned in one pass

    def summary(self) -> str:
        moved = f"; the damaged file is kept as {self.moved_to}" if self.moved_to else ""
        return (f"{self.path}: salvaged {self.salvaged} verified score(s), dropped "
                f"{self.rejected} that failed their checksum or had none{moved}. Dropped and "
                f"unreadable scores are recomputed on the next run.")


def _read_rows(source: Path) -> tuple[list[tuple], bool]:
    """Every row sqlite can still read: a full scan, and where the scan breaks, reads by rowid
    in small ranges around the damage. Returns (rows, whether the full scan failed)."""
    rows: dict[int, tuple] = {}
    try:
        conn = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30)
    except sqlite3.DatabaseError:
        return [], True
    try:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(scores)")]
    except sqlite3.DatabaseError:
        conn.close()
        return [], True
    if "key" not in columns or "value" not in columns:
        conn.close()
        return [], "key" not in columns
    digest = "digest" if "digest" in columns else "NULL"
    select = f"SELECT rowid, key, value, {digest} FROM scores"
    failed = False
    try:
        for row in conn.execute(select):
            rows[row[0]] = row[1:]
    except sqlite3.DatabaseError:
        failed = True
    if failed:
        try:
            top = conn.execute("SELECT max(rowid) FROM scores").fetchone()[0] or 0
        except sqlite3.DatabaseError:
            top = max(rows, default=0) + source.stat().st_size // 32
        step = 64
        for low in range(1, top + 1, step):
            try:
                for row in conn.execute(f"{select} WHERE rowid BETWEEN ? AND ?", (low, low + step - 1)):
                    rows[row[0]] = row[1:]
            except sqlite3.DatabaseError:
                for rowid in range(low, low + step):
                    try:
                        for row in conn.execute(f"{select} WHERE rowid = ?", (rowid,)):
                            rows[row[0]] = row[1:]
                    except sqlite3.DatabaseError:
                        continue
    conn.close()
    return list(rows.values()), failed


def repair_cache(cache_dir: str | os.PathLike | None = None) -> RepairReport:
    """Salvage the verified rows of a damaged cache into a fresh file; the damaged one (and its
    -wal/-shm files) is moved aside to scores.sqlite.corrupt-<time>. Rows failing their
    checksum, or without one, are dropped (they are recomputed). Run it while no other
    process uses the cache."""
    folder = resolve_cache_dir(cache_dir)
    path = folder / CACHE_FILE
    if not path.exists():
        raise CacheCorruptError(f"score cache {path} does not exist; expected the folder of an "
                                f"existing cache (--cache-dir or $GBSTATS_CACHE)")
    refused = place_problem(write_probe(folder))
    if refused is not None:
        raise PlaceError(
            f"cannot repair the score cache in {folder}: the folder is {refused}, and "
            f"repair-cache writes a fresh file beside the damaged one (which it keeps). Copy "
            f"the folder to a writable place (cp -r {folder} NEW) and run `python -m models "
            f"repair-cache --cache-dir NEW` there")
    _OPEN.pop(folder, None)
    rows, unreadable = _read_rows(path)
    good = []
    for key, value, digest in rows:
        if isinstance(key, str) and isinstance(value, str) and digest is not None \
                and value_digest(key, value) == digest:
            good.append((key, value, digest))
    fresh = folder / f"{CACHE_FILE}.repairing-{os.getpid()}"
    try:
        fresh.unlink(missing_ok=True)
        conn = sqlite3.connect(fresh, isolation_level=None)
        try:
            conn.execute("CREATE TABLE scores "
                         "(key TEXT PRIMARY KEY, value TEXT NOT NULL, digest TEXT)")
            conn.execute("BEGIN")
            conn.executemany("INSERT OR REPLACE INTO scores (key, value, digest) "
                             "VALUES (?, ?, ?)", good)
            conn.execute("COMMIT")
        finally:
            conn.close()
    except (OSError, sqlite3.OperationalError) as exc:
        fresh.unlink(missing_ok=True)
        full = "disk is full" in str(exc).lower()
        why = "its disk is full" if full else (
            f"the folder is {place_problem(exc)}" if place_problem(exc) else str(exc))
        raise PlaceError(f"repair-cache could not write the repaired copy of {path}, which "
                         f"is left as it was: {why}; free some space (or copy the folder to "
                         f"a place with room) and run repair-cache again") from None
    moved = path.with_name(f"{CACHE_FILE}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
    os.replace(path, moved)
    for side in SIDE_FILES:
        extra = path.with_name(path.name + side)
        if extra.exists():
            os.replace(extra, moved.with_name(moved.name + side))
    os.replace(fresh, path)
    return RepairReport(path, moved, len(good), len(rows) - len(good), unreadable)

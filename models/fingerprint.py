"""Content fingerprints of the files a model is loaded from: what the score cache keys on.

A cached score may answer only for the weights and tokenizer that produced it.
A local folder's path says nothing about its content (retrain into the same
folder and the path is unchanged), nor does the embedded model's package
version (its GGUF file can be replaced in place). So the cache key holds a
digest of the files themselves.

Which digest, and why:
- **Every byte, not a sample.** A safetensors header holds names, dtypes,
  shapes and offsets, but no values: a model retrained with the same
  architecture has a byte-identical header (tests/models/test_cache_keys.py
  shows it), and so does its file size. Sampling blocks (first and last MB)
  misses a fine-tune that changed only tensors in the middle of the file. A
  digest of every byte (sha256) has no such gap.
- **Read once per file version, not once per run.** Hashing a 500 MB model
  takes about a second, a 15 GB one about half a minute, so the digest is
  memoised per file, keyed by what the file system says about it: its real
  path, size, inode, mtime and ctime (nanoseconds). Any write to the file
  changes its mtime and ctime, and ctime cannot be set back from user space
  (`touch -d` and `cp -p` set mtime only), so a changed file is hashed again;
  an unchanged one costs one `stat` and one small JSON read. A copy of a
  model folder elsewhere is hashed once and then gives the same digest, so it
  shares the copied cache's scores.
- **The folder's top-level files**, which is what `from_pretrained` reads
  (config, tokenizer files, weights, whichever format); hidden files (".*")
  are left out, so a lock or an editor's swap file does not change the key,
  and sub-folders (`checkpoint-500/`) are not read.

The memo lives in `<model cache>/fingerprints/` (models.loading.model_cache_dir);
where it cannot be written, the digest is computed afresh on each run (slower,
never wrong).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

CHUNK = 1 << 20  # bytes read at a time while hashing
MEMO_FOLDER = "fingerprints"
MEMO_VERSION = 1
RACY_NS = 2_000_000_000  # a file changed this recently (ns) is hashed again next time


def _stat_record(path: Path) -> dict:
    st = path.stat()  # follows symlinks: the content is what is hashed
    return {"size": st.st_size, "ino": st.st_ino, "dev": st.st_dev,
            "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns}


def sha256_of_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _memo_path(memo_dir: Path, target: Path) -> Path:
    name = hashlib.sha256(str(target).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return memo_dir / f"{name}.json"


def _read_memo(path: Path | None) -> dict:
    if path is None:
        return {}
    try:
        memo = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return memo.get("files", {}) if isinstance(memo, dict) and memo.get(
        "version") == MEMO_VERSION else {}


def _write_memo(path: Path | None, target: Path, files: dict) -> None:
    """Atomically; a memo that cannot be written only costs the next run a re-hash."""
    if path is None:
        return
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps({"version": MEMO_VERSION, "target": str(target),
                                       "files": files}))
        os.replace(partial, path)
    except OSError:
        try:
            partial.unlink(missing_ok=True)
        except OSError:
            pass


def model_files(folder: Path) -> list[Path]:
    """The files of a model folder that the fingerprint covers (module docstring): its
    top-level files, and every shard a weights index (`*.index.json`, its `weight_map`)
    names in a sub-folder, which transformers loads as well (issue 44: a shard in
    `shards/` was loaded, never fingerprinted, and a retrained one served old scores)."""
    top = sorted(p for p in folder.iterdir() if not p.name.startswith(".") and p.is_file())
    shards = set()
    for index in (p for p in top if p.name.endswith(".index.json")):
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map", {})
        except (OSError, ValueError, AttributeError):
            continue  # an unreadable index fails at load time, with its own message
        for shard in set(weight_map.values()) if isinstance(weight_map, dict) else ():
            path = (folder / str(shard))
            if path.parent != folder and path.is_file() and folder in path.resolve().parents:
                shards.add(path)
    return top + sorted(shards)


def fingerprint(target: str | os.PathLike, memo_dir: str | os.PathLike | None = None) -> str:
    """sha256 over the names and content digests of a file, or of a folder's model files.

    memo_dir: where per-file digests are remembered by their stat record (None:
    hash every byte now). Raises OSError where a file cannot be read.
    """
    target = Path(target).resolve()
    files = [target] if target.is_file() else model_files(target)
    root = target.parent if target.is_file() else target
    memo_path = _memo_path(Path(memo_dir), target) if memo_dir is not None else None
    memo = _read_memo(memo_path)
    fresh, remember = {}, {}
    for path in files:
        # a top-level file is keyed by its name (as before), a shard by its path in the folder
        name = path.relative_to(root).as_posix() if path.parent != root else path.name
        record = _stat_record(path)
        known = memo.get(name)
        if isinstance(known, dict) and isinstance(known.get("sha256"), str) \
                and {k: known.get(k) for k in record} == record:
            fresh[name] = remember[name] = known
            continue
        digest = sha256_of_file(path)
        fresh[name] = {**record, "sha256": digest}
        # Remember it only if the file was not written while we read it, nor within the
        # file system's timestamp granularity before (git's "racily clean" rule): a
        # write in the same clock tick would leave mtime and ctime as they are.
        settled = time.time_ns() - max(record["mtime_ns"], record["ctime_ns"]) > RACY_NS
        if settled and _stat_record(path) == record:
            remember[name] = fresh[name]
    if remember != memo:
        _write_memo(memo_path, target, remember)
    overall = hashlib.sha256()
    for name in sorted(fresh):
        overall.update(f"{name}\0{fresh[name]['sha256']}\n".encode("utf-8", "surrogateescape"))
    return overall.hexdigest()

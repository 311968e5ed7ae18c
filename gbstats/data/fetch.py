"""Download a dataset's files at its pinned commit and verify their checksums.

The base URL is configurable (`--mirror` or `GBSTATS_MIRROR`) so that tests
use a local `file://` mirror laid out like the source host
(`<base>/<owner>/<repo>/<commit>/<path>`) and never touch the network.
Each file is written to a temporary name and renamed only after its checksum
matches, so an interrupted or corrupted download never looks like data.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from gbstats.config import ENV_DATA_DIR, resolve_data_dir
from gbstats.data.registry import get_dataset, sha256_of
from gbstats.errors import ChecksumError, GbstatsError, PlaceError, place_problem

DEFAULT_MIRROR = "https://raw.githubusercontent.com"
ENV_MIRROR = "GBSTATS_MIRROR"


def mirror_url(mirror: str | None = None) -> str:
    """The base URL: `mirror`, else $GBSTATS_MIRROR, else GitHub raw. A plain folder path
    (what a user types for a local mirror) becomes its file:// URL; anything else that is
    not a URL is refused here, naming where it came from, rather than deep in urllib."""
    given, source = (mirror, "--mirror") if mirror else (os.environ.get(ENV_MIRROR),
                                                         f"${ENV_MIRROR}")
    if not given:
        return DEFAULT_MIRROR
    if urllib.parse.urlsplit(given).scheme in ("http", "https", "file", "ftp"):
        return given.rstrip("/")
    folder = Path(given).expanduser()
    if folder.is_dir():
        return folder.resolve().as_uri()
    raise GbstatsError(
        f"{source} {given!r} is neither a URL nor an existing folder; expected a base URL "
        f"laid out as <base>/<owner>/<repo>/<commit>/<path> (https://..., or file:///path for "
        f"a folder), or the path of such a folder")


def fetch_dataset(name: str, data_dir=None, *, mirror: str | None = None,
                  force: bool = False, progress=None) -> list[Path]:
    """Fetch every file of `name` that is missing (or all with `force`).

    Returns the paths written. Raises ChecksumError if a download does not
    match the pinned sha256 (the partial file is removed).
    """
    entry = get_dataset(name)
    base = mirror_url(mirror)
    folder = resolve_data_dir(data_dir) / entry.name
    written = []
    for f in entry.files:
        target = folder / f.local
        if target.exists() and not force and sha256_of(target) == f.sha256:
            continue
        url = entry.source_url(f, base)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                       suffix=".part")
        except OSError as exc:
            raise PlaceError(
                f"cannot write dataset {entry.name!r} into {target.parent} ("
                f"{place_problem(exc) or exc.strerror or exc}); expected --data-dir or "
                f"${ENV_DATA_DIR} to name a folder this user can write") from None
        digest = hashlib.sha256()
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=60) as resp:
                for block in iter(lambda: resp.read(1 << 20), b""):
                    digest.update(block)
                    out.write(block)
            if digest.hexdigest() != f.sha256:
                raise ChecksumError(
                    f"{url}: checksum mismatch for {entry.name}/{f.local}: expected sha256 "
                    f"{f.sha256}, found {digest.hexdigest()}. The source changed or the "
                    "download was corrupted; nothing was written.")
            os.replace(tmp, target)
        except (urllib.error.URLError, OSError) as exc:
            raise GbstatsError(
                f"could not download {url} for dataset {entry.name!r}: {exc}. "
                f"Without network access, copy the files into {folder} by hand or set "
                f"{ENV_MIRROR} to a mirror (file:// works).") from None
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        written.append(target)
        if progress is not None:
            progress(target)
    return written

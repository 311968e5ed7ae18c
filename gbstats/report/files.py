"""Output files and folders: checked before any work, written atomically, swapped in at once."""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from gbstats.errors import OutputPathError

def current_umask() -> int:
    """The process's umask (os.umask can only be read by setting it, so it is set back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def follow_umask(path: str | os.PathLike, directory: bool = False) -> None:
    """Give a file made by mkstemp (0600) or a folder made by mkdtemp (0700) the mode a plain
    open() or mkdir() would have given it, so outputs are as readable as the user's umask says."""
    os.chmod(path, (0o777 if directory else 0o666) & ~current_umask())


def write_text_atomically(path: Path, text: str) -> None:
    # A crash mid-write must not leave a truncated results.json that looks valid.
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        follow_umask(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


PARTIAL_TAG = ".partial-"


def _os_reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _probe_folder(folder: Path, flag: str, shown: Path) -> None:
    """Create `folder` (with its parents) and write and remove one file in it."""
    ancestor = folder
    while not ancestor.exists() and ancestor.parent != ancestor:
        ancestor = ancestor.parent
    if ancestor.exists() and not ancestor.is_dir():
        raise OutputPathError(f"{flag} {shown} lies under {ancestor}, which is a file; "
                              f"expected a path under a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".gbstats-write-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OutputPathError(
            f"{flag} {shown}: cannot write into {folder} ({_os_reason(exc)}); expected a "
            f"folder this user can create and write, for example under your home or the "
            f"current folder") from None


def check_output_file(path: str | os.PathLike, *, inputs: Sequence[str | os.PathLike] = (),
                      flag: str = "--out") -> Path:
    """Refuse an output file that is an input (after resolving links and `..`) or that cannot
    be written, before any model or data is loaded; returns the path."""
    path = Path(path)
    resolved = path.expanduser().resolve()
    for given in inputs:
        source = Path(given).expanduser()
        same = resolved == source.resolve()
        if not same and resolved.exists() and source.exists():
            same = os.path.samefile(resolved, source)  # a hard link is the same file too
        if same:
            raise OutputPathError(f"{flag} {path} is the input file {given}: writing it would "
                                  f"destroy the input; expected a different output file")
    if resolved.is_dir():
        raise OutputPathError(f"{flag} {path} is a folder; expected a file name such as "
                              f"{path / 'scores.csv'}")
    _probe_folder(resolved.parent, flag, path)
    return path


def check_output_folder(path: str | os.PathLike, *, flag: str = "--out") -> Path:
    """Refuse an output folder that cannot be written or must not be replaced, before any work.

    A study's outputs are written into a hidden sibling of the folder and swapped into
    place at the end (`staged_folder`), so the parent must be writable, and an existing
    folder is replaced as a whole: that is refused unless it is empty or a previous
    report (it holds results.json), so that `--out .` cannot delete a user's files.
    """
    path = Path(path)
    resolved = path.expanduser().resolve()
    if resolved.parent == resolved:
        raise OutputPathError(f"{flag} {path} is the file system root; expected a folder")
    if resolved.exists() and not resolved.is_dir():
        raise OutputPathError(f"{flag} {path} is an existing file; expected a folder")
    if resolved.is_dir():
        try:
            entries = [e.name for e in resolved.iterdir()]
        except OSError as exc:
            raise OutputPathError(f"{flag} {path}: cannot read the folder "
                                  f"({_os_reason(exc)})") from None
        if entries and "results.json" not in entries:
            shown = ", ".join(sorted(entries)[:5]) + (", ..." if len(entries) > 5 else "")
            raise OutputPathError(
                f"{flag} {path} holds files that are not a gbstats report ({shown}); the run "
                f"replaces its output folder as a whole, so expected a new folder, an empty "
                f"one, or a previous report folder (with results.json)")
    _probe_folder(resolved.parent, flag, path)
    return path


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_partials(out: Path) -> list[Path]:
    """Remove the hidden staging folders that killed runs left beside `out` (their pid is gone)."""
    removed = []
    for candidate in out.parent.glob(f".{out.name}{PARTIAL_TAG}*"):
        pid_text = candidate.name[len(f".{out.name}{PARTIAL_TAG}"):].split("-", 1)[0]
        if pid_text.isdigit() and not _pid_alive(int(pid_text)) and candidate.is_dir():
            shutil.rmtree(candidate, ignore_errors=True)
            removed.append(candidate)
    return removed


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    import ctypes
    import errno

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(a))


def publish_folder(staging: Path, out: Path) -> None:
    """Put the finished `staging` folder in place of `out`.

    Readers see the old folder or the new one, never a mix: with an existing `out`
    the two are exchanged in one rename (Linux); elsewhere `out` is first moved aside,
    so for an instant there is no folder, but never a half-written one.
    """
    if not out.exists():
        os.rename(staging, out)
        return
    if _exchange(staging, out):
        shutil.rmtree(staging, ignore_errors=True)  # now holds the old outputs
        return
    old = staging.with_name(staging.name + "-old")
    os.rename(out, old)
    os.rename(staging, out)
    shutil.rmtree(old, ignore_errors=True)


class staged_folder:
    """`with staged_folder(out) as staging:` write everything into `staging`; on success it
    replaces `out` (see `publish_folder`); on an error it is removed and `out` is untouched.
    A killed run leaves only a hidden `.<name>.partial-<pid>-*` sibling, removed by the
    next run."""

    def __init__(self, out: str | os.PathLike):
        self.out = Path(out).expanduser().resolve()
        self.staging: Path | None = None

    def __enter__(self) -> Path:
        try:
            self.out.parent.mkdir(parents=True, exist_ok=True)
            remove_stale_partials(self.out)
            self.staging = Path(tempfile.mkdtemp(
                prefix=f".{self.out.name}{PARTIAL_TAG}{os.getpid()}-", dir=self.out.parent))
            follow_umask(self.staging, directory=True)
        except OSError as exc:
            raise OutputPathError(f"cannot create a folder beside {self.out} "
                                  f"({_os_reason(exc)})") from None
        return self.staging

    def __exit__(self, kind, exc, tb) -> bool:
        if kind is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            return False
        try:
            publish_folder(self.staging, self.out)
        except OSError as err:
            shutil.rmtree(self.staging, ignore_errors=True)
            raise OutputPathError(f"cannot put the finished outputs in place at {self.out} "
                                  f"({_os_reason(err)})") from None
        return False

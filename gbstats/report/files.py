"""Output files and folders: checked before any work, written atomically, swapped in at once."""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from gbstats.errors import OutputPathError, place_problem

def current_umask() -> int:
    """The process's umask (os.umask can only be read by setting it, so it is set back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def follow_umask(path: str | os.PathLike, directory: bool = False) -> None:
    """Give a file made by mkstemp (0600) or a folder made by mkdtemp (0700) the mode a plain
    open() or mkdir() would have given it, so outputs are as readable as the user's umask says."""
    os.chmod(path, (0o777 if directory else 0o666) & ~current_umask())


def write_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """`write(temporary path)`, then rename it to `path` in one step: a reader never sees half
    a file. The temporary name is unique (mkstemp) in `path`'s folder, so two processes
    writing one `path` never write into each other's file: the last rename wins, whole."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        follow_umask(tmp)
        os.replace(tmp, path)
    except BaseException:
        try:
            Path(tmp).unlink(missing_ok=True)
        except OSError:  # the error being raised says more than this one
            pass
        raise


def write_text_atomically(path: Path, text: str) -> None:
    # A crash mid-write must not leave a truncated results.json that looks valid.
    write_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_bytes_atomically(path: Path, data: bytes) -> None:
    write_atomically(path, lambda tmp: tmp.write_bytes(data))


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


# A report folder carries this file, written by gbstats: only a folder that carries it (or
# a report of an older gbstats, see `_legacy_report`) is ever emptied or replaced.
MARKER = ".gbstats-report"
MARKER_FORMAT = 1
MARKER_ABOUT = ("gbstats wrote this folder. A later run with the same --out replaces it as a "
                "whole, but only while it holds nothing besides the files listed here: "
                "gbstats empties or replaces only folders that carry this file.")
# What a report of a gbstats without markers wrote, whatever the study: report.md,
# results.json and two folders of files. Study-specific CSV files are not on the list:
# nothing tells them from a user's own.
LEGACY_FILES = {"report.md", "results.json"}
LEGACY_FOLDERS = {"tables": (".tex",), "figures": (".png", ".pdf", ".svg")}


def _listing(folder: Path) -> tuple[set[str], set[str]]:
    """(files, folders) under `folder`, as relative POSIX paths; links count as files and
    are not followed."""
    files, folders = set(), set()
    for root, dirs, names in os.walk(folder, followlinks=False):
        rel = Path(root).relative_to(folder)
        for d in list(dirs):
            if (Path(root) / d).is_symlink():
                dirs.remove(d)
                files.add((rel / d).as_posix())
            else:
                folders.add((rel / d).as_posix())
        files.update((rel / n).as_posix() for n in names)
    return files, folders


def _shown(names) -> str:
    names = sorted(names)
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def write_marker(folder: Path, study: str | None) -> None:
    """Write `folder`/.gbstats-report listing every file in it (called on the finished
    staging folder, just before it is put in place)."""
    import datetime
    import json

    from gbstats import __version__

    files, folders = _listing(folder)
    files.discard(MARKER)
    marker = {"gbstats_report": MARKER_FORMAT, "study": study, "gbstats_version": __version__,
              "written_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(
                  timespec="seconds"),
              "files": sorted(files), "folders": sorted(folders), "about": MARKER_ABOUT}
    write_text_atomically(folder / MARKER, json.dumps(marker, indent=1) + "\n")


def _read_marker(folder: Path) -> dict | str:
    """The marker's content, or why it cannot be used."""
    import json

    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"its {MARKER} marker cannot be read ({exc})"
    if not isinstance(marker, dict) or marker.get("gbstats_report") != MARKER_FORMAT \
            or not isinstance(marker.get("files"), list):
        return f"its {MARKER} marker is not one this gbstats writes (format {MARKER_FORMAT})"
    return marker


def _legacy_report(folder: Path, entries: set[str]) -> tuple[bool, str]:
    """(whether `folder` is a report of a gbstats without markers that may be replaced, why
    not). Accepted only when its results.json is gbstats' (it parses, its provenance names
    a gbstats version and a study) and it holds nothing a report of any study does not
    write."""
    import json

    try:
        doc = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        provenance = doc["provenance"]
        by_gbstats = bool(provenance["gbstats_version"]) and bool(doc["study"])
    except (OSError, ValueError, KeyError, TypeError):
        by_gbstats = False
    if not by_gbstats:
        return False, (f"holds files that are not a gbstats report ({_shown(entries)}; its "
                       f"results.json has no gbstats provenance); the run replaces its output "
                       f"folder as a whole, so expected a new folder, an empty one, or a "
                       f"report folder gbstats wrote (it carries a {MARKER} marker)")
    files, folders = _listing(folder)
    foreign = {f for f in files if f not in LEGACY_FILES and not (
        "/" in f and f.split("/", 1)[0] in LEGACY_FOLDERS and "/" not in f.split("/", 1)[1]
        and f.endswith(LEGACY_FOLDERS[f.split("/", 1)[0]]))}
    foreign |= {d for d in folders if d not in LEGACY_FOLDERS}
    if foreign:
        return False, (
            f"looks like a report of an older gbstats (study {doc['study']!r}; its "
            f"results.json has gbstats provenance but the folder has no {MARKER} marker), "
            f"and it also holds {_shown(foreign)}, which a report does not always write, so "
            f"gbstats cannot tell it from your own files. If they are outputs of that older "
            f"run, delete the folder yourself and rerun (the new report is marked and is "
            f"then replaced without asking); otherwise choose another --out")
    return True, ""


def replace_refusal(folder: str | os.PathLike, study: str | None = None) -> str | None:
    """Why the existing `folder` must not be emptied or replaced, or None when it may be:
    it is empty, it carries gbstats' marker and holds only the files listed there, or it is
    a report of an older gbstats holding only what every report writes (`_legacy_report`).
    With `study`, a report folder of *another* study is refused too: one mistyped --out
    would otherwise replace that study's report without a word."""
    folder = Path(folder)
    try:
        entries = {e.name for e in folder.iterdir()}
    except OSError as exc:
        return f"cannot be read ({_os_reason(exc)})"
    if not entries:
        return None
    if MARKER in entries:
        marker = _read_marker(folder)
        if isinstance(marker, str):
            return (f"holds files ({_shown(entries)}) and {marker}, so gbstats cannot tell "
                    f"which are its own; expected a new folder, an empty one, or a report "
                    f"folder gbstats wrote")
        files, folders = _listing(folder)
        listed = {str(f) for f in marker["files"]} | {MARKER}
        made = {str(d) for d in marker.get("folders", [])}
        made |= {p.as_posix() for f in listed for p in Path(f).parents if p != Path(".")}
        added = (files - listed) | (folders - made)
        theirs = marker.get("study")
        if study is not None and theirs is not None and theirs != study:
            return (f"is the report of study {theirs!r} (written {marker.get('written_utc')}), "
                    f"and this run is study {study!r}: replacing it would delete that report; "
                    f"choose another --out, or delete the folder first if it may go")
        if added:
            return (f"is a report folder gbstats wrote (study {marker.get('study')!r}, "
                    f"{marker.get('written_utc')}), but it now also holds {_shown(added)}, "
                    f"which gbstats did not write there; the run replaces the folder as a "
                    f"whole, so move those out of it, or choose another --out")
        return None
    if "results.json" in entries:
        ok, why = _legacy_report(folder, entries)
        return None if ok else why
    return (f"holds files that are not a gbstats report ({_shown(entries)}); the run replaces "
            f"its output folder as a whole, so expected a new folder, an empty one, or a report "
            f"folder gbstats wrote (it carries a {MARKER} marker)")


def check_output_folder(path: str | os.PathLike, *, flag: str = "--out",
                        study: str | None = None) -> Path:
    """Refuse an output folder that cannot be written or must not be replaced, before any work.

    A study's outputs are written into a hidden sibling of the folder and swapped into
    place at the end (`staged_folder`), so the parent must be writable, and an existing
    folder is replaced as a whole: that is refused unless `replace_refusal` allows it (an
    empty folder, or a report folder gbstats wrote), so that `--out .` cannot delete a
    user's files.
    """
    path = Path(path)
    try:
        os.getcwd()
    except FileNotFoundError:
        raise OutputPathError("the current folder no longer exists (it was deleted or "
                              "replaced since the shell entered it); cd to an existing "
                              "folder and run again") from None
    resolved = path.expanduser().resolve()
    if resolved.parent == resolved:
        raise OutputPathError(f"{flag} {path} is the file system root; expected a folder")
    if resolved.exists() and not resolved.is_dir():
        raise OutputPathError(f"{flag} {path} is an existing file; expected a folder")
    if resolved.is_dir():
        if os.path.ismount(resolved):
            raise OutputPathError(
                f"{flag} {path} is a mount point: the finished report replaces the output "
                f"folder by a rename, which a mount point does not allow; expected a folder "
                f"inside it, such as {path / 'report'}")
        why = replace_refusal(resolved, study)
        if why is not None:
            raise OutputPathError(f"{flag} {path} {why}")
    here = Path.cwd().resolve()
    if resolved == here or resolved in here.parents:
        # the finished report replaces --out by a rename: a shell inside it would be left
        # in a deleted folder, and the same command again would fail there
        raise OutputPathError(
            f"{flag} {path} is the current folder{' or holds it' if resolved != here else ''}; "
            f"the run replaces {flag} as a whole when it finishes, which would pull the "
            f"folder out from under your shell; expected a folder inside it, such as "
            f"{flag} {Path(path) / 'report'}")
    _probe_folder(resolved.parent, flag, path)
    return path


def check_outside_output(out: str | os.PathLike,
                         places: Iterable[tuple[str, str | os.PathLike]], *,
                         flag: str = "--out") -> None:
    """Refuse inputs and caches that lie inside the output folder, before any work: the
    finished run replaces that folder as a whole, which would delete them (and a report's
    checksum of an input would name a file that no longer exists). `places` pairs what a
    user would recognise ("--human", "--cache-dir", "$GBSTATS_CACHE") with a path."""
    out_resolved = Path(out).expanduser().resolve()
    for label, place in places:
        resolved = Path(place).expanduser().resolve()
        if resolved == out_resolved or out_resolved in resolved.parents:
            through = "" if Path(os.path.abspath(Path(place).expanduser())) == resolved \
                else f" (through a link: it is {resolved})"
            raise OutputPathError(
                f"{label} {place}{through} lies inside {flag} {out}, which the run replaces as a "
                f"whole when it finishes, so it would be deleted; expected {label} outside {flag}: "
                f"move it, or choose another {flag}")


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
    prefix = f".{out.name}{PARTIAL_TAG}"
    try:
        # a prefix test, not glob: a name holding "[ ]" or "*" is a glob pattern
        candidates = [p for p in out.parent.iterdir() if p.name.startswith(prefix)]
    except OSError:
        return removed
    for candidate in candidates:
        pid_text = candidate.name[len(prefix):].split("-", 1)[0]
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
    """`with staged_folder(out, study) as staging:` write everything into `staging`; on
    success it is marked as gbstats' (`write_marker`) and replaces `out` (see
    `publish_folder`); on an error it is removed and `out` is untouched. A killed run
    leaves only a hidden `.<name>.partial-<pid>-*` sibling, removed by the next run.

    A read-only or full place met while writing ends in an OutputPathError that says so
    (never a traceback); `out` is checked again just before it is replaced, because a
    long run gives a user time to put files into it."""

    def __init__(self, out: str | os.PathLike, study: str | None = None):
        self.out = Path(out).expanduser().resolve()
        self.study = study
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
            problem = place_problem(exc) if isinstance(exc, OSError) else None
            if problem is not None and not isinstance(exc, OutputPathError):
                where = getattr(exc, "filename", None) or self.staging
                raise OutputPathError(
                    f"cannot write the report beside {self.out}: {where} is {problem}. "
                    f"Nothing was replaced ({self.out} is as it was); scores and fits are "
                    f"cached, so rerunning the same command once there is room (or with "
                    f"another --out) repeats little work") from None
            return False
        try:
            write_marker(self.staging, self.study)
            if self.out.is_dir():
                why = replace_refusal(self.out, self.study)
                if why is not None:
                    kept = self._keep_finished()
                    raise OutputPathError(
                        f"{self.out} changed during the run: it {why}. It was left as it "
                        f"is, and the finished report was put in {kept}")
            publish_folder(self.staging, self.out)
        except OSError as err:
            if isinstance(err, OutputPathError):
                raise
            problem = place_problem(err)
            kept = self._keep_finished()
            raise OutputPathError(
                f"cannot put the finished outputs in place at {self.out} ("
                f"{'it is ' + problem if problem else _os_reason(err)})"
                + (f"; they were kept in {kept}" if kept else "")) from None
        return False

    def _keep_finished(self) -> Path | None:
        """Move a finished staging folder that could not be published to a visible name
        beside `out` (the work is done; only its place failed), or remove it."""
        if self.staging is None or not self.staging.is_dir():
            return None
        kept = self.out.with_name(f"{self.out.name}.gbstats-new-{os.getpid()}")
        try:
            os.rename(self.staging, kept)
        except OSError:
            shutil.rmtree(self.staging, ignore_errors=True)
            return None
        return kept

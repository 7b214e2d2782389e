"""Output folders for the CLI: checked before any work (and any privacy charge), written atomically.

* :func:`check_output_dir` — ``--out`` must be a new or empty folder (or ``--overwrite``) whose
  nearest existing ancestor is writable, shown by creating and removing a probe file there. The path
  is resolved fully first (a symbolic link to a folder means that folder; a dangling link means the
  path it names), and a folder that holds a file the command must keep (the ledger, an input) is
  refused, with or without ``--overwrite``. It writes nothing that survives, but it removes the
  temporary folders of earlier runs that were killed (see below) and says so on stderr.
* :class:`AtomicOutput` — outputs go into a hidden temporary folder next to ``--out`` and are renamed
  into place as the last step, so a killed or failed run never leaves a half-written ``--out``
  (with ``--overwrite`` the previous folder is replaced only once the new one is complete).

Leftovers of killed runs. A run holds an exclusive ``flock`` on its temporary folder (and, while it
swaps folders under ``--overwrite``, on the previous ``--out``) until it ends; the kernel drops the
lock when the process dies. :func:`clean_leftovers` removes ``.privgp-tmp-*`` folders next to
``--out`` whose lock it can take (their run is gone), never one in use, and never a completed output:
a ``.privgp-tmp-old-NAME`` folder (a previous release being replaced) is removed only when ``NAME``
exists again, and renamed back to ``NAME`` otherwise (the run died between the two renames).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from ..errors import InvalidParameterError

try:  # POSIX; elsewhere leftovers are only reported
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

TMP_PREFIX = ".privgp-tmp-"
OLD_PREFIX = TMP_PREFIX + "old-"
PROBE_AGE_S = 60.0


def _nearest_existing(path: Path) -> Path:
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def resolve_path(path) -> Path:
    """``path`` made absolute with every symbolic link resolved (also a dangling one: the path it names)."""
    p = Path(path).expanduser()
    try:
        return p.resolve(strict=False)
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise InvalidParameterError("path", "a path without a loop of symbolic links", f"{p} ({exc})") from None


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_output_dir(out, overwrite: bool = False, *, flag: str = "--out",
                     protect: Iterable[tuple[str, object]] = (), clean: bool = True) -> Path:
    """Validate ``out`` without leaving anything behind; returns it absolute with symlinks resolved.

    ``protect``: (description, path) pairs of files the command reads or keeps (the ledger, input
    files); ``out`` must not be or contain any of them (replacing ``out`` would delete them)."""
    given = Path(out).expanduser()
    try:
        out = resolve_path(given)
    except InvalidParameterError as exc:
        raise InvalidParameterError(flag, exc.requirement, exc.value) from None
    for what, p in protect:
        if p is None:
            continue
        rp = resolve_path(p)
        if _within(rp, out):
            raise InvalidParameterError(flag, f"a folder that does not hold the {what} (writing the outputs "
                                        "there would replace it)", f"{given} (holds {rp})")
    if out.exists() and not out.is_dir():
        raise InvalidParameterError(flag, "a folder (new or empty), not an existing file", str(out))
    if out.is_dir():
        entries = [p.name for p in out.iterdir()]
        if entries and not overwrite:
            raise InvalidParameterError(flag, "a new or empty folder (or pass --overwrite)",
                                        f"{out} with {len(entries)} entries")
    anchor = _nearest_existing(out.parent)
    if not anchor.is_dir():
        raise InvalidParameterError(flag, "under a folder (its nearest existing parent is a file)", str(anchor))
    try:
        fd, probe = tempfile.mkstemp(prefix=TMP_PREFIX, dir=anchor)
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(probe)
    except OSError as exc:
        raise InvalidParameterError(flag, "creatable: its nearest existing parent must be a writable folder",
                                    f"{anchor} ({exc.strerror or exc})") from None
    if clean and out.parent.is_dir():
        note = clean_leftovers(out.parent)
        if note:
            print(f"privgp: note: {note}", file=sys.stderr)
    return out


def check_output_file(path, *, flag: str) -> Path:
    """A file the command will write: not a folder, in an existing folder where a file can be created
    (shown by creating and removing a probe file: os.access is always true for root); an existing file
    must open for writing (it is not truncated here). Returns the path resolved; writes nothing that stays."""
    p = resolve_path(path)
    need = "a file path in an existing writable folder"
    if p.is_dir() or not p.parent.is_dir():
        raise InvalidParameterError(flag, need, str(path))
    try:
        if p.exists():
            with open(p, "r+b"):
                pass
        fd, probe = tempfile.mkstemp(prefix=TMP_PREFIX, dir=p.parent)
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(probe)
    except OSError as exc:
        raise InvalidParameterError(flag, need, f"{path} ({exc.strerror or exc})") from None
    return p


def _try_lock(path: Path):
    """An fd of ``path`` (a folder, not a link) holding an exclusive flock, or None when it is in use/gone."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def clean_leftovers(parent: Path) -> str:
    """Remove the temporary folders of killed runs in ``parent`` (see the module docstring); returns a
    one-line note of what was done ('' when nothing was found)."""
    parent = Path(parent)
    try:
        names = sorted(n for n in os.listdir(parent) if n.startswith(TMP_PREFIX))
    except OSError:
        return ""
    removed, restored, kept = [], [], []
    for name in names:
        path = parent / name
        if path.is_symlink() or not path.is_dir():
            with contextlib.suppress(OSError):  # a probe file of a killed run (probes live for microseconds)
                if path.is_symlink() or time.time() - path.lstat().st_mtime > PROBE_AGE_S:
                    path.unlink()
                    removed.append(name)
            continue
        if fcntl is None:  # pragma: no cover
            kept.append(name)
            continue
        fd = _try_lock(path)
        if fd is None:  # a run in progress
            continue
        try:
            if name.startswith(OLD_PREFIX):
                target = parent / name[len(OLD_PREFIX):]
                if target.exists() or target.is_symlink():
                    shutil.rmtree(path)
                    removed.append(name)
                else:
                    os.replace(path, target)
                    restored.append(target.name)
            else:
                shutil.rmtree(path)
                removed.append(name)
        except OSError:
            kept.append(name)
        finally:
            os.close(fd)
    parts = []
    if removed:
        parts.append(f"removed {len(removed)} leftover temporary folder(s) of interrupted privgp runs in {parent} "
                     f"({', '.join(removed[:3])}{', ...' if len(removed) > 3 else ''})")
    if restored:
        parts.append(f"restored the earlier output folder(s) {', '.join(restored)} in {parent} (an interrupted "
                     "--overwrite had moved them aside)")
    if kept:
        parts.append(f"could not remove leftover temporary folder(s) {', '.join(kept[:3])} in {parent}; remove "
                     "them by hand when no privgp run is writing there")
    return "; ".join(parts)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _locked_tmpdir(parent: Path) -> tuple[Path, int | None]:
    """A new temporary folder in ``parent`` and an fd holding its lock (None without fcntl)."""
    for _ in range(100):
        tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=parent))
        if fcntl is None:  # pragma: no cover
            return tmp, None
        try:
            fd = os.open(tmp, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except FileNotFoundError:  # removed by a concurrent clean-up before we locked it: make another
            continue
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_nlink > 0 and tmp.is_dir():
            return tmp, fd
        os.close(fd)
    raise OSError(f"cannot create a temporary folder in {parent}")  # pragma: no cover


class AtomicOutput:
    """``with AtomicOutput(out, overwrite) as tmp:`` write into ``tmp``; on success it becomes ``out``."""

    def __init__(self, out: Path, overwrite: bool = False):
        self.out = Path(out)
        self.overwrite = overwrite
        self.tmp: Path | None = None
        self._fd: int | None = None

    def __enter__(self) -> Path:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.tmp, self._fd = _locked_tmpdir(self.out.parent)
        return self.tmp

    def _release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __exit__(self, exc_type, exc, tb) -> None:
        assert self.tmp is not None
        try:
            if exc_type is not None:
                shutil.rmtree(self.tmp, ignore_errors=True)
                return
            self._swap()
        finally:
            self._release()

    def _swap(self) -> None:
        assert self.tmp is not None
        old, old_fd = None, None
        if self.out.is_symlink():  # appeared meanwhile (it was resolved when checked): never follow or replace
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise InvalidParameterError("--out", "a folder, not a symbolic link", str(self.out))
        if self.out.exists():
            if any(self.out.iterdir()) and not self.overwrite:  # appeared meanwhile: never clobber
                shutil.rmtree(self.tmp, ignore_errors=True)
                raise InvalidParameterError("--out", "a new or empty folder (or pass --overwrite)", str(self.out))
            old = self.out.parent / (OLD_PREFIX + self.out.name)
            if old.is_symlink() or old.is_file():
                old.unlink()
            elif old.exists():
                shutil.rmtree(old)
            if fcntl is not None:  # lock the previous folder while it is moved aside: a clean-up leaves it alone
                old_fd = _try_lock(self.out)
            os.replace(self.out, old)
        try:
            os.replace(self.tmp, self.out)
            os.chmod(self.out, 0o777 & ~_umask())  # mkdtemp made it private; give it the usual mode
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        finally:
            if old_fd is not None:
                os.close(old_fd)

"""Output folders for the CLI: checked before any work (and any privacy charge), written atomically.

* :func:`check_output_dir` — ``--out`` must be a new or empty folder (or, with ``--overwrite``, a folder
  that holds an earlier privgp output and nothing else, see :func:`earlier_output`) whose nearest
  existing ancestor is writable, shown by creating and removing a probe file there. The path
  is resolved fully first (a symbolic link to a folder means that folder; a dangling link means the
  path it names), and a folder that holds a file the command must keep (the ledger, an input) is
  refused, with or without ``--overwrite``. It writes nothing that survives, but it removes the
  temporary folders of earlier runs that were killed (see below) and says so on stderr.
* :func:`check_output_file` — the same checks for a single file (``--save-responses``, ``--png``): not the
  ledger or an input, not an existing file unless it may be replaced, a required suffix.
* :class:`AtomicOutput` — outputs go into a hidden temporary folder next to ``--out`` and are renamed
  into place as the last step, so a killed or failed run never leaves a half-written ``--out``
  (with ``--overwrite`` the previous folder is replaced only once the new one is complete; only the files
  the earlier privgp output lists are deleted: anything else found there at that moment is kept, the
  previous folder then moved aside to a visible ``NAME.privgp-previous-*`` folder and said on stderr).

What ``--overwrite`` may replace (:func:`earlier_output`). A folder is an earlier privgp output when it holds
a ``certificate.json`` written by privgp (a JSON object with ``privgp_version``: ``privgp release`` and
``privgp optimize``) and only the files that certificate lists (``outputs`` and ``sha256``), or the picture
``privgp demo`` writes and nothing else. ``privgp experiment`` writes INTO the folder (it deletes nothing; a training
run resumes there), so for it a folder holding the ``run.json`` record of an experiment (or the checkpoint
``last.pt`` of a training run killed before writing it) is enough. Anything else is refused with or without
``--overwrite``: ``--out .`` or ``--out $HOME`` never deletes files privgp did not write.

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
from collections.abc import Callable, Iterable
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


CERTIFICATE = "certificate.json"
#: what ``privgp demo`` writes (it has no certificate)
DEMO_FILES = frozenset({"demo_posterior_paths.png"})
#: the record of ``privgp experiment``, and the checkpoint of a training run killed before writing it
EXPERIMENT_RECORDS = ("run.json", "last.pt")
#: files the ledger keeps next to itself (SQLite)
LEDGER_SIDECARS = ("-wal", "-shm", "-journal")


def _json_object(path: Path) -> dict | None:
    import json

    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 64 * 2**20:
            return None
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


#: what ``privgp optimize`` writes (``cli.optimize.OUTPUT_FILES``; its certificates before 2026-11-25 list none)
OPTIMIZE_FILES = ("history.csv", "queries.png", "certificate.json", "summary.json")


def earlier_output(folder) -> frozenset[str] | None:
    """The names of the files an earlier ``privgp release`` / ``optimize`` / ``demo`` wrote in ``folder``,
    as its own record lists them (its certificate.json), or None when ``folder`` holds no such output."""
    folder = Path(folder)
    doc = _json_object(folder / CERTIFICATE)
    if doc is not None and isinstance(doc.get("privgp_version"), str):
        names = {CERTIFICATE}
        outputs = doc.get("outputs")
        if isinstance(outputs, list):
            names.update(x for x in outputs if isinstance(x, str))
        hashes = doc.get("sha256")
        if isinstance(hashes, dict):
            names.update(x for x in hashes if isinstance(x, str))
        if "planned_rounds" in doc and not isinstance(outputs, list) and not isinstance(hashes, dict):
            names.update(OPTIMIZE_FILES)   # an optimize run written before its certificate hashed its files
        return frozenset(n for n in names if n and "/" not in n and n not in (".", ".."))
    try:
        entries = set(os.listdir(folder))
    except OSError:
        return None
    if entries & DEMO_FILES:
        return DEMO_FILES
    return None


def _is_experiment_output(folder: Path) -> bool:
    doc = _json_object(folder / EXPERIMENT_RECORDS[0])
    if doc is not None and isinstance(doc.get("experiment"), str) and "versions" in doc:
        return True
    last = folder / EXPERIMENT_RECORDS[1]
    return last.is_file() and not last.is_symlink()


def _not_replaceable(out: Path, entries: list[str], replace: bool) -> str:
    """'' when ``--overwrite`` may write to the non-empty folder ``out``, else why not (a few words)."""
    known = earlier_output(out)
    if not replace and (known is not None or _is_experiment_output(out)):
        return ""  # written into, nothing deleted
    if known is None:
        return (f"{len(entries)} entries and no earlier privgp output: no certificate.json written by privgp"
                + (", no run.json of an experiment (written when a run ends) and no last.pt (a training run's "
                   "checkpoint); to continue in a folder without either, move its files into a new --out"
                   if not replace else ""))
    foreign = sorted(set(entries) - known)
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        return f"holds {len(foreign)} file(s) privgp did not write there: {shown}"
    return ""


def _protected(protect: Iterable[tuple[str, object]]) -> list[tuple[str, Path]]:
    """(description, resolved path) of the files a command must keep (None entries skipped)."""
    return [(what, resolve_path(p)) for what, p in protect if p is not None and str(p) != ""]


def check_output_dir(out, overwrite: bool = False, *, flag: str = "--out",
                     protect: Iterable[tuple[str, object]] = (), clean: bool = True, replace: bool = True) -> Path:
    """Validate ``out`` without leaving anything behind; returns it absolute with symlinks resolved.

    ``protect``: (description, path) pairs of files the command reads or keeps (the ledger, input
    files); ``out`` must not be or contain any of them (replacing ``out`` would delete them).
    ``replace``: the command replaces the whole folder (:class:`AtomicOutput`); False for a command that
    writes into it (``privgp experiment``). See :func:`earlier_output` for what ``overwrite`` accepts."""
    given = Path(out).expanduser()
    try:
        out = resolve_path(given)
    except InvalidParameterError as exc:
        raise InvalidParameterError(flag, exc.requirement, exc.value) from None
    for what, rp in _protected(protect):
        if _within(rp, out):
            raise InvalidParameterError(flag, f"a folder that does not hold the {what} (writing the outputs "
                                        "there would replace it)", f"{given} (holds {rp})")
    if replace:
        try:
            cwd = Path.cwd().resolve()
        except OSError:   # the current directory was deleted: nothing here can be replaced under the user
            cwd = None
        if cwd is not None and _within(cwd, out):
            # the folder is replaced whole (a temporary folder renamed into place): the user's shell was left in
            # a deleted directory (`cd empty && privgp demo --out .`, red team 26)
            raise InvalidParameterError(flag, "a folder other than the current directory or one holding it (the "
                                        "outputs replace the folder whole)", str(given))
    if out.exists() and not out.is_dir():
        raise InvalidParameterError(flag, "a folder (new or empty), not an existing file", str(out))
    if out.is_dir():
        entries = [p.name for p in out.iterdir()]
        again = "--overwrite" if flag.startswith("--") else "overwrite=True"   # the CLI's words, or Python's
        if entries and not overwrite:
            raise InvalidParameterError(flag, f"a new or empty folder (or pass {again})",
                                        f"{out} with {len(entries)} entries")
        if entries:
            why = _not_replaceable(out, entries, replace)
            if why:
                raise InvalidParameterError(flag, "a folder holding an earlier privgp output and only files privgp "
                                            f"wrote there, to be replaced with {again} (other files are never "
                                            "deleted; use a new or empty folder)", f"{out} ({why})")
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
                                    f"{anchor} (cannot create a file there: {exc.strerror or exc})") from None
    if clean and out.parent.is_dir():
        note = clean_leftovers(out.parent)
        if note:
            print(f"privgp: note: {note}", file=sys.stderr)
    return out


def check_output_file(path, *, flag: str, protect: Iterable[tuple[str, object]] = (),
                      replace: bool | Callable[[Path], bool] = True, suffixes: tuple[str, ...] = (),
                      outside: object = None, replace_hint: str = "") -> Path:
    """A file the command will write: a non-empty path, not a folder, in an existing folder where a file can be
    created (shown by creating and removing a probe file: os.access is always true for root), not one of the
    files in ``protect`` (the ledger, with its SQLite side files, and the inputs: (description, path) pairs)
    and not inside the folder ``outside`` (e.g. ``--out``). An existing file is refused unless ``replace``
    (True, or a test of the existing file, e.g. "an earlier output of this command"; ``replace_hint``: the
    requirement said when it is refused), and must open for writing (it is not truncated here).
    ``suffixes``: the allowed endings (case-insensitive). Returns the path resolved; writes nothing that
    stays."""
    need = "a file path in an existing writable folder"
    if path is None or str(path).strip() == "":
        raise InvalidParameterError(flag, "a file path (not empty)", "" if path is None else str(path))
    try:
        p = resolve_path(path)
    except InvalidParameterError as exc:
        raise InvalidParameterError(flag, exc.requirement, exc.value) from None
    if suffixes and p.suffix.lower() not in suffixes and Path(path).suffix.lower() not in suffixes:
        raise InvalidParameterError(flag, f"a file name ending in {' or '.join(suffixes)}", str(path))
    for what, rp in _protected(protect):
        if p == rp or (what == "ledger" and str(p) in {str(rp) + x for x in LEDGER_SIDECARS}):
            raise InvalidParameterError(flag, f"a path other than the {what} (writing there would destroy it)",
                                        str(path))
    if outside is not None and _within(p, resolve_path(outside)):
        raise InvalidParameterError(flag, "a path outside --out (private files must not sit with the outputs to "
                                    "publish)", str(path))
    if p.is_dir() or not p.parent.is_dir():
        raise InvalidParameterError(flag, need + (" (this is a folder)" if p.is_dir() else ""), str(path))
    if p.exists() or os.path.lexists(path):
        if not p.is_file():
            raise InvalidParameterError(flag, "a regular file (new, or one it may replace)", str(path))
        if not (replace(p) if callable(replace) else replace):
            raise InvalidParameterError(flag, replace_hint or "a new file (an existing file is never replaced)",
                                        f"{path} (an existing file)")
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


def write_file_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """``write(tmp)`` into a temporary file next to ``path``, then renamed onto it (a failed or killed write
    never leaves half a file, nor destroys the previous one)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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

    def _keep_aside(self, what: str) -> None:
        """``--out`` changed after it was checked: the outputs, already paid for when a charge came first, are kept
        in a visible sibling folder and the error says so (they were deleted, under an error that read like a check
        before the charge: red team 25)."""
        assert self.tmp is not None
        keep = self.out.parent / f"{self.out.name}.privgp-unplaced-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        try:
            os.replace(self.tmp, keep)
            os.chmod(keep, 0o777 & ~_umask())
            where = f"this run's outputs are in {keep}"
        except OSError:   # pragma: no cover
            where = f"this run's outputs are in {self.tmp}"
        raise InvalidParameterError("--out", f"a folder nothing else writes while privgp runs: it {what} after it "
                                    f"was checked, so it was left alone; {where} (any charge made stands)",
                                    str(self.out))

    def _swap(self) -> None:
        assert self.tmp is not None
        old, old_fd = None, None
        if self.out.is_symlink():  # appeared meanwhile (it was resolved when checked): never follow or replace
            self._keep_aside("became a symbolic link")
        if self.out.exists():
            if any(self.out.iterdir()) and not self.overwrite:  # appeared meanwhile: never clobber
                self._keep_aside("was filled by something else (another run with the same --out?)")
            old = self.out.parent / (OLD_PREFIX + self.out.name)
            if old.is_symlink() or old.is_file():
                old.unlink()
            elif old.exists():
                shutil.rmtree(old)
            if fcntl is not None:  # lock the previous folder while it is moved aside: a clean-up leaves it alone
                old_fd = _try_lock(self.out)
            known = earlier_output(self.out) or frozenset()  # read under the lock, just before it moves
            os.replace(self.out, old)
        try:
            os.replace(self.tmp, self.out)
            os.chmod(self.out, 0o777 & ~_umask())  # mkdtemp made it private; give it the usual mode
            if old is not None:
                _discard_previous(old, known, self.out)
        finally:
            if old_fd is not None:
                os.close(old_fd)


def _discard_previous(old: Path, known: frozenset[str], out: Path) -> None:
    """Delete the earlier output moved aside to ``old``: only the files its record lists (``known``). Anything
    else (a file that appeared after the check) is kept: the folder is renamed to a visible
    ``NAME.privgp-previous-<time>`` next to ``out`` (a leftover clean-up would delete a hidden one) and said."""
    for name in known:
        f = old / name
        with contextlib.suppress(OSError):
            if f.is_symlink() or f.is_file():
                f.unlink()
            elif f.is_dir():
                shutil.rmtree(f)
    try:
        old.rmdir()
        return
    except OSError:
        pass
    keep = out.parent / f"{out.name}.privgp-previous-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    try:
        os.replace(old, keep)
        print(f"privgp: note: the previous {out} held files privgp did not write; they are kept in {keep}",
              file=sys.stderr)
    except OSError:  # pragma: no cover
        print(f"privgp: note: the previous {out} held files privgp did not write; they are kept in {old}",
              file=sys.stderr)

"""Output folders for the CLI: checked before any work (and any privacy charge), written atomically.

* :func:`check_output_dir` — ``--out`` must be a new or empty folder (or ``--overwrite``) whose
  nearest existing ancestor is writable, shown by creating and removing a probe file there. It
  writes nothing that survives.
* :class:`AtomicOutput` — outputs go into a hidden temporary folder next to ``--out`` and are renamed
  into place as the last step, so a killed or failed run never leaves a half-written ``--out``
  (with ``--overwrite`` the previous folder is replaced only once the new one is complete).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ..errors import InvalidParameterError

TMP_PREFIX = ".privgp-tmp-"


def _nearest_existing(path: Path) -> Path:
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def check_output_dir(out, overwrite: bool = False, *, flag: str = "--out") -> Path:
    """Validate ``out`` without leaving anything behind; returns it as an absolute Path."""
    out = Path(out).expanduser().absolute()
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
        os.unlink(probe)
    except OSError as exc:
        raise InvalidParameterError(flag, "creatable: its nearest existing parent must be a writable folder",
                                    f"{anchor} ({exc.strerror or exc})") from None
    return out


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class AtomicOutput:
    """``with AtomicOutput(out, overwrite) as tmp:`` write into ``tmp``; on success it becomes ``out``."""

    def __init__(self, out: Path, overwrite: bool = False):
        self.out = Path(out)
        self.overwrite = overwrite
        self.tmp: Path | None = None

    def __enter__(self) -> Path:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=self.out.parent))
        return self.tmp

    def __exit__(self, exc_type, exc, tb) -> bool:
        assert self.tmp is not None
        if exc_type is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            return False
        old = None
        if self.out.exists():
            if any(self.out.iterdir()) and not self.overwrite:  # appeared meanwhile: never clobber
                shutil.rmtree(self.tmp, ignore_errors=True)
                raise InvalidParameterError("--out", "a new or empty folder (or pass --overwrite)", str(self.out))
            old = self.out.parent / (TMP_PREFIX + "old-" + self.out.name)
            if old.exists():
                shutil.rmtree(old)
            os.replace(self.out, old)
        os.replace(self.tmp, self.out)
        os.chmod(self.out, 0o777 & ~_umask())  # mkdtemp made it private; give it the usual mode
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return False

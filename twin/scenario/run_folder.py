"""The folder a run writes into: checked before the run, written atomically, never stale.

``RunFolder.prepare(out_root, name)`` makes ``out_root/name``, refuses a folder that would
lie outside ``out_root`` (a symbolic link, a name with separators) and proves it is
writable by writing a probe file, all before any simulation starts. It then removes the
outputs a previous run left there (summary, plot, video, bus logs: only those names) and
writes ``summary.json`` with ``"status": "running"``, so a run that dies without a word
(SIGKILL, power loss) leaves a folder marked incomplete, never an old run's summary.
Every file is written to a temporary name in the same folder, flushed, then renamed over
the old one (``os.replace``): a reader sees the old file or the new one, never half.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rob_twin.models.errors import RobTwinError

STATUS_FILE = "summary.json"


def _file_mode() -> int:
    """Mode of a new file under the process umask (mkstemp itself makes 0600 files)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


_MODE = _file_mode()


class RunFolderError(RobTwinError, OSError):
    """The run folder cannot be made or written; the message names the path and the cause."""


def write_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` via a flushed temporary file in the same folder + rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, _MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def write_json_atomic(path: Path, obj: object, default=str) -> Path:
    """``obj`` as indented JSON; ``default`` turns what JSON cannot hold into what it can."""
    return write_atomic(path, json.dumps(obj, indent=2, default=default) + "\n")


def _make_folder(path: Path, what: str) -> None:
    """Make ``path`` and its parents; RunFolderError naming ``what`` and why otherwise."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise RunFolderError(f"cannot create {what} {str(path)!r}: {err.strerror or err}") from None


def _probe(path: Path) -> None:
    """Write, flush and remove a small file in ``path``: proof that the run can write there."""
    try:
        fd, probe = tempfile.mkstemp(dir=path, prefix=".write-probe-")
        try:
            os.write(fd, b"rob-twin write probe\n")
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as err:
        raise RunFolderError(
            f"output folder {str(path)!r} is not writable: {err.strerror or err}"
        ) from None


@dataclass(frozen=True)
class RunFolder:
    path: Path
    name: str

    @classmethod
    def prepare(cls, out_root: Path | str, name: str, stale: tuple[str, ...] = ()) -> RunFolder:
        """Make and check ``out_root/name``; remove the ``stale`` outputs of an earlier
        run (file names, or folder names whose ``*.log`` files go) and mark it running."""
        root = Path(out_root)
        if not name or Path(name).name != name or name in (".", ".."):
            raise RunFolderError(f"run name {name!r} is not a plain folder name")
        path = root / name
        if path.is_symlink():
            raise RunFolderError(
                f"run folder {str(path)!r} is a symbolic link; runs write only "
                f"inside --out {str(root)!r}: remove the link or pick another --out"
            )
        _make_folder(path, "run folder")
        if path.resolve().parent != root.resolve():
            raise RunFolderError(f"run folder {str(path)!r} resolves outside --out {str(root)!r}")
        folder = cls(path, name)
        _probe(path)
        folder._remove_stale(stale)
        folder.write_status("running")
        return folder

    @staticmethod
    def check_writable(path: Path | str) -> Path:
        """Make ``path`` (and its parents) and prove it writable; RunFolderError otherwise."""
        path = Path(path)
        _make_folder(path, "output folder")
        _probe(path)
        return path

    def _remove_stale(self, stale: tuple[str, ...]) -> None:
        for entry in (STATUS_FILE, *stale):
            p = self.path / entry
            try:
                if p.is_dir() and not p.is_symlink():
                    for log in p.glob("*.log"):
                        log.unlink()
                elif p.exists() or p.is_symlink():
                    p.unlink()
            except OSError as err:
                raise RunFolderError(
                    f"cannot remove {str(p)!r} left by an earlier run: {err.strerror or err}"
                ) from None

    def file(self, name: str) -> Path:
        return self.path / name

    def write_status(self, status: str, **fields) -> Path:
        """``summary.json`` = ``{"status": status, "scenario": name, ...fields}``, atomically."""
        body = {
            "status": status,
            "scenario": self.name,
            "pid": os.getpid(),
            "updated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **fields,
        }
        if status == "running":
            body["note"] = (
                "incomplete: the run has not finished; if process pid is gone, it was "
                "killed and the figures here are the last progress report"
            )
        return write_json_atomic(self.file(STATUS_FILE), body)

"""A run's hold on its output folder: one writer at a time, nothing left when nothing ran.

:class:`FolderLock` is an exclusive ``flock`` on ``DIR/.eog-core.lock``, taken before
``rollouts.jsonl`` is read and held until the log is closed: a second run (or gateway)
on the same folder is refused in one line, naming the process that holds it, instead
of running every rollout again beside the first. The kernel releases the lock of a
process that dies (``kill -9``), so a stale lock file never blocks a rerun. The file
holds the holder's pid, and is removed on release (an acquirer checks it locked the
file still at that path). Where ``fcntl`` is missing (Windows) there is no lock.

:class:`FolderTrace` notes what of ``DIR`` existed before a run, so a run that
recorded nothing (a failed preflight, a missing seed file, Ctrl-C before the first
rollout ended) removes what it created and leaves nothing new behind.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import attrs

from eog_core._plumbing import atomic_write
from eog_core.errors import UsageError

if sys.platform != "win32":
    import fcntl

__all__ = ["LOCK_FILE", "FolderLock", "FolderTrace", "atomic_write"]

LOCK_FILE = ".eog-core.lock"


def _holder(fd: int) -> str:
    """`` (process 1234)`` from the lock file, '' while the holder has not written it yet."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return f" (process {text})" if text.isdigit() else ""


@attrs.define
class FolderLock:
    """An exclusive lock on ``folder`` (which must exist); :meth:`release` is idempotent."""

    path: Path
    _fd: int | None = attrs.field(default=None, repr=False)

    @classmethod
    def acquire(cls, folder: Path) -> FolderLock:
        """Lock ``folder`` or raise :class:`UsageError` naming the run that holds it."""
        path = folder / LOCK_FILE
        if sys.platform == "win32":
            return cls(path)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(fd)
                os.close(fd)
                raise UsageError(
                    f"{folder} is in use by another run{holder}: wait for it to end, or use "
                    "another --out directory"
                ) from None
            except BaseException:
                os.close(fd)
                raise
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:  # not a file its last holder removed after we opened it
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                return cls(path, fd)
            os.close(fd)

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                self.path.unlink()  # while still held: no one can take a file about to go
            os.close(fd)


@attrs.frozen
class FolderTrace:
    """What of a run's folder existed before it: the folders above it it will create, and
    whether ``rollouts.jsonl`` was there."""

    created: tuple[Path, ...]
    """The folders that did not exist, innermost first."""
    rollouts: Path
    had_rollouts: bool

    @classmethod
    def before(cls, folder: Path, rollouts_file: str) -> FolderTrace:
        created: list[Path] = []
        here = folder.absolute()
        while not here.exists() and here != here.parent:
            created.append(here)
            here = here.parent
        rollouts = folder / rollouts_file
        return cls(tuple(created), rollouts, rollouts.exists())

    def remove_rollouts(self) -> None:
        """Remove a ``rollouts.jsonl`` the run created and left empty (call it under the lock)."""
        with contextlib.suppress(OSError):
            if not self.had_rollouts and self.rollouts.stat().st_size == 0:
                self.rollouts.unlink()

    def remove_folders(self) -> None:
        """Remove the folders the run created, as long as they hold nothing but empty folders
        (``upstream/run_1/`` made for nothing); a folder holding anything stays, with those
        above it."""
        for folder in self.created:
            for inner in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
                with contextlib.suppress(OSError):
                    inner.rmdir()  # a file, or a folder holding one, refuses: it stays
            try:
                folder.rmdir()
            except OSError:
                return

"""One writer per output folder: an exclusive ``flock`` on ``FOLDER/.lock``.

Two evals (or trainings) writing one folder both played every episode and left every trajectory
line twice. ``folder_lock`` makes the second writer refuse at once, in one line, instead of
waiting. The lock is the kernel's ``flock``, not the file's existence: it is released when the
holder exits however it ends (``kill -9`` included), so a lock file left behind never blocks a
rerun. The file stays in place on release: deleting it would let a third process lock a new
inode while a second still holds the old one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

LOCK_NAME = ".lock"


def out_problem(out: str | Path, *, holds: str) -> str | None:
    """Why ``--out`` cannot be a command's output folder (one line; None when it can): a file,
    under a file, or not writable. ``holds`` names what the folder will hold, for the message.
    Checked before anything is written."""
    path = Path(out).expanduser()
    if path.exists() and not path.is_dir():
        return f"--out {out} is a file; give a folder (it will hold {holds})"
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        return f"--out {out}: {existing} is a file, not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"--out {out}: {existing} is not writable"
    return None


class FolderLockedError(RuntimeError):
    """Another live process holds the folder's lock."""


HOLDER_WAIT_S = 1.0
"""How long a refused writer waits for the holder to write its name (the holder takes the lock,
then writes; two processes started together meet in between)."""


def _holder(path: Path, wait_s: float = HOLDER_WAIT_S) -> str:
    """Who holds the lock, as the holder wrote it into the file ("" if it has not within
    ``wait_s``)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            text = path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            text = ""
        if text or time.monotonic() >= deadline:
            return " ".join(text.split())[:200]
        time.sleep(0.02)


@contextlib.contextmanager
def folder_lock(folder: str | Path, *, holder: str = "a seed-gym process") -> Iterator[Path]:
    """Hold ``folder``'s lock for the ``with`` block (the folder is created if missing).

    ``holder`` (``"seed-gym eval"``, ``"seed-gym train"``) and the pid are written into the lock
    file, so that a refused writer can say who holds it. Raises ``FolderLockedError`` naming the
    folder and the holder when another process holds the lock. Yields the lock file's path.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FolderLockedError(
                f"{folder} is in use by {_holder(path) or 'another process'}; wait for it to "
                "finish or use another folder"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{holder} (pid {os.getpid()})\n".encode())
        yield path
    finally:
        os.close(fd)  # closing the descriptor releases the flock

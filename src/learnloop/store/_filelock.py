"""The writers' lock of the processes sharing one SQLite file: an exclusive ``flock`` on ``<file>-lock``.

SQLite serialises writers itself, but a writer that finds the file locked polls
in its busy handler, sleeping up to 100 ms between tries, so that under
contention a write may wait long after the lock was freed. Taken before
``BEGIN IMMEDIATE``, this lock makes a waiting writer sleep in the kernel until
the holder releases it. POSIX only; elsewhere (and in memory, or where the file
cannot be created) the store relies on SQLite's lock alone.
"""

from __future__ import annotations

import os

try:
    import fcntl
except ImportError:  # (not POSIX)
    fcntl = None  # type: ignore[assignment]

__all__ = ["FileLock"]


class FileLock:
    """An exclusive ``flock`` on one file, held by one thread at a time (the caller's lock orders them)."""

    __slots__ = ("_fd",)

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    @classmethod
    def beside(cls, path: str) -> FileLock | None:
        """The lock file beside the database file ``path``; None in memory, off POSIX or where it cannot be created."""
        if fcntl is None or path in ("", ":memory:") or path.startswith("file:"):
            return None
        try:
            return cls(os.open(path + "-lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644))
        except OSError:
            return None

    def acquire(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_EX)

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

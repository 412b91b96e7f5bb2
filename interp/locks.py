"""Advisory file locks (``flock``), a leaf: the result store holds one per writer while it runs
(:mod:`interp.store`); the run loop and a command's outputs ask whether one is free
(:mod:`interp.runner`, :mod:`interp.outputs`). Where ``fcntl`` is missing (Windows) nothing is
locked and every lock reads as free."""

from __future__ import annotations

from pathlib import Path

try:  # POSIX advisory locks; elsewhere stores are not locked
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class Lock:
    """A non-blocking advisory file lock (``flock``); released when the process ends."""

    def __init__(self, path: Path, shared: bool) -> None:
        self.path = path
        self.file = None
        if fcntl is None:
            return
        self.file = path.open("a+")
        try:
            fcntl.flock(self.file, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            self.file.close()
            self.file = None
            raise

    def release(self) -> None:
        if self.file is not None:
            fcntl.flock(self.file, fcntl.LOCK_UN)
            self.file.close()
            self.file = None


def lock_is_free(path: Path) -> bool:
    """Whether nobody holds the lock at ``path`` (checked by taking and dropping it)."""
    if fcntl is None or not path.exists():
        return True
    with path.open("a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(f, fcntl.LOCK_UN)
    return True


__all__ = ["Lock", "lock_is_free"]

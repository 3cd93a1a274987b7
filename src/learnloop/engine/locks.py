"""The engine's locks: a gate that ``Engine.atomic()`` closes, and per-learner locks.

The concurrency model (see ``docs/concurrency.md``): every public engine method
enters the gate in shared mode; ``Engine.atomic()`` enters it exclusively, so a
block of several calls runs alone. Work on one learner (ingesting their events,
bringing their state up to date, stepping their sessions) holds that learner's
lock; calls that touch several learners take their locks in one fixed order.
Below these, the store serialises its own transactions, and the caches have
leaf locks that are never held while anything else is called. The order is
always gate → learner locks → store, so no two threads can wait on each other.
"""

from __future__ import annotations

import functools
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any, ParamSpec, TypeVar

__all__ = ["Gate", "LearnerLocks", "shared"]

P = ParamSpec("P")
R = TypeVar("R")


def shared(method: Callable[P, R]) -> Callable[P, R]:
    """Run an engine method inside the engine's gate, in shared mode."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        gate: Gate = args[0]._gate  # type: ignore[attr-defined]
        counted = gate.enter_shared()
        try:
            return method(*args, **kwargs)
        finally:
            gate.exit_shared(counted)

    return wrapper


class Gate:
    """A re-entrant shared/exclusive lock (many calls at once, or one ``atomic()`` block).

    A thread holding the gate exclusively may enter it again in either mode; a
    thread holding it shared may enter it shared again (even while another
    thread waits for exclusive access), but never exclusively.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)  # waited on with its lock held directly
        self._shared = 0
        self._owner: int | None = None
        self._depth = 0
        self._waiting = 0
        self._local = threading.local()

    @contextmanager
    def shared(self) -> Iterator[None]:
        counted = self.enter_shared()
        try:
            yield
        finally:
            self.exit_shared(counted)

    def enter_shared(self) -> bool:
        """Enter the gate in shared mode; returns what :meth:`exit_shared` is to be given
        (whether this entry counts among the shared holders, or re-enters a hold of the thread)."""
        local = self._local
        held = getattr(local, "shared", 0)
        if held or self._owner == threading.get_ident():
            local.shared = held + 1
            return False
        with self._lock:
            while self._owner is not None or self._waiting:
                self._cond.wait()
            self._shared += 1
        local.shared = 1
        return True

    def exit_shared(self, counted: bool) -> None:
        """Leave what :meth:`enter_shared` entered."""
        self._local.shared -= 1
        if counted:
            with self._lock:
                self._shared -= 1
                if not self._shared and self._waiting:  # only exclusive entries wait for no shared holder
                    self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        me = threading.get_ident()
        if self._owner == me:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        if getattr(self._local, "shared", 0):
            raise RuntimeError("engine.atomic() cannot start inside another engine call")
        with self._cond:
            self._waiting += 1
            try:
                while self._owner is not None or self._shared:
                    self._cond.wait()
            finally:
                self._waiting -= 1
            self._owner = me
            self._depth = 1
        try:
            yield
        finally:
            with self._cond:
                self._owner = None
                self._depth = 0
                self._cond.notify_all()


class LearnerLocks:
    """Striped re-entrant locks keyed by ``(app, user, catalog)``.

    Several learners' locks are always taken in stripe order, so two calls
    over overlapping sets of learners cannot deadlock.
    """

    def __init__(self, stripes: int = 256) -> None:
        self._locks = [threading.RLock() for _ in range(stripes)]

    def _stripe(self, key: tuple[str, ...]) -> int:
        return zlib.crc32("\x1f".join(key).encode("utf-8", "surrogatepass")) % len(self._locks)

    def hold(self, keys: Iterable[tuple[str, ...]]) -> AbstractContextManager[Any]:
        """The locks of ``keys``, taken in stripe order on entering the returned context."""
        stripes = {self._stripe(k) for k in keys}
        if len(stripes) == 1:  # one learner (a session's step): its lock alone
            return self._locks[stripes.pop()]
        return self._hold([self._locks[s] for s in sorted(stripes)])

    @staticmethod
    @contextmanager
    def _hold(locks: list[threading.RLock]) -> Iterator[None]:
        with ExitStack() as stack:
            for lock in locks:
                stack.enter_context(lock)
            yield

"""What one server process takes on: per-key rates, and bounded pools of threads for the façade calls.

Every figure here is per worker process: with ``--workers N`` a key may reach N
times its rate, and N times the threads and queues serve at once (see
``docs/deploy.md``). Nothing is shared through the store.

>>> bucket = TokenBucket(rate=2.0, burst=2, now=0.0)
>>> bucket.take(1.0, now=0.0), bucket.take(1.0, now=0.0), bucket.take(1.0, now=0.0)
(0.0, 0.0, 0.5)
>>> bucket.take(1.0, now=0.5)
0.0
"""

from __future__ import annotations

import asyncio
import math
import os
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from multiprocessing.context import SpawnContext, SpawnProcess
from typing import Any, TypeVar

__all__ = ["Capacity", "Full", "Pool", "RateLimit", "TokenBucket", "retry_after"]

_T = TypeVar("_T")


@dataclass(frozen=True)
class RateLimit:
    """A key's rate (from the keys file's ``[rate_limits]``): requests per second with a burst, and for the
    voice API, seconds of pronunciation scoring per minute (``None``: no such limit)."""

    requests_per_second: float
    burst: int
    scoring_seconds_per_minute: float | None = None


class TokenBucket:
    """A token bucket: ``burst`` tokens at most, ``rate`` more a second. Not thread-safe: the event loop's own."""

    __slots__ = ("burst", "level", "rate", "stamp")

    def __init__(self, rate: float, burst: float, now: float | None = None) -> None:
        self.rate = rate
        self.burst = burst
        self.level = float(burst)
        self.stamp = time.monotonic() if now is None else now

    def _refill(self, now: float) -> None:
        self.level = min(self.burst, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def take(self, tokens: float = 1.0, now: float | None = None) -> float:
        """Take ``tokens`` when there are that many: 0.0. Otherwise take nothing, and return the seconds
        until there will be."""
        self._refill(time.monotonic() if now is None else now)
        if self.level >= tokens:
            self.level -= tokens
            return 0.0
        return (tokens - self.level) / self.rate if self.rate > 0 else math.inf

    def wait(self, now: float | None = None) -> float:
        """Seconds until the level is above zero (0.0 when it is)."""
        self._refill(time.monotonic() if now is None else now)
        return 0.0 if self.level > 0 else (-self.level + 1e-9) / self.rate if self.rate > 0 else math.inf

    def spend(self, tokens: float, now: float | None = None) -> None:
        """Take ``tokens`` whatever the level (it may go below zero: a debt paid by the refill)."""
        self._refill(time.monotonic() if now is None else now)
        self.level -= tokens


def retry_after(seconds: float) -> str:
    """The ``Retry-After`` value for a wait: whole seconds, at least 1.

    >>> retry_after(0.2), retry_after(3.0), retry_after(3.01)
    ('1', '3', '4')
    """
    return str(max(1, math.ceil(seconds - 1e-9))) if math.isfinite(seconds) else "3600"


class Limits:
    """The rates of the keys that have one, as buckets (made on first use)."""

    def __init__(self, rates: Mapping[str, RateLimit]) -> None:
        self.rates = dict(rates)
        self._requests: dict[str, TokenBucket] = {}
        self._scoring: dict[str, TokenBucket] = {}
        #: the mean scoring time of a key (seconds), reserved when a scoring is let in and settled after
        self._cost: dict[str, float] = {}

    def request(self, key: str | None) -> float:
        """0.0 when a request of ``key`` may go on (it is counted), else the seconds to wait."""
        rate = self.rates.get(key) if key is not None else None
        if rate is None:
            return 0.0
        bucket = self._requests.get(key)  # type: ignore[arg-type]
        if bucket is None:
            bucket = self._requests[key] = TokenBucket(rate.requests_per_second, rate.burst)  # type: ignore[index]
        return bucket.take()

    def pace(self, key: str | None, most: float) -> float:
        """The seconds a request of ``key`` waits for its turn (0.0: none), its token taken, when that is at
        most ``most``; above ``most`` nothing is taken and the wait is returned (the request is refused)."""
        rate = self.rates.get(key) if key is not None else None
        if rate is None:
            return 0.0
        bucket = self._requests.get(key)  # type: ignore[arg-type]
        if bucket is None:
            bucket = self._requests[key] = TokenBucket(rate.requests_per_second, rate.burst)  # type: ignore[index]
        bucket.spend(1.0)
        wait = bucket.wait() if bucket.level < 0 else 0.0
        if wait > most:
            bucket.spend(-1.0)
        return wait

    def scoring(self, key: str | None) -> tuple[float, float]:
        """For a scoring of ``key``: ``(0.0, reserved seconds)`` when it may go on (the reservation is
        taken from the key's budget), else ``(seconds to wait, 0.0)``."""
        rate = self.rates.get(key) if key is not None else None
        if rate is None or rate.scoring_seconds_per_minute is None:
            return 0.0, 0.0
        assert key is not None
        bucket = self._scoring.get(key)
        if bucket is None:
            per_minute = rate.scoring_seconds_per_minute
            bucket = self._scoring[key] = TokenBucket(per_minute / 60.0, per_minute)
        wait = bucket.wait()
        if wait > 0:
            return wait, 0.0
        reserved = self._cost.get(key, 1.0)
        bucket.spend(reserved)
        return 0.0, reserved

    def scored(self, key: str | None, reserved: float, seconds: float) -> None:
        """Settle a scoring's reservation with the seconds it took."""
        bucket = self._scoring.get(key) if key is not None else None
        if bucket is None:
            return
        assert key is not None
        bucket.spend(seconds - reserved)
        self._cost[key] = 0.8 * self._cost.get(key, seconds) + 0.2 * seconds


@dataclass(frozen=True)
class Capacity:
    """How much work one server process takes on at once, and how much it lets wait.

    ``threads`` façade calls run at once (``waiting`` more wait for a thread);
    ``scoring`` pronunciation scorings run at once (``scoring_waiting`` more wait),
    in as many child processes when ``processes`` (the server's own voice
    façade only), so that they never hold up the learning calls.
    A call that finds its queue full is answered at once: 503 on v1 and the
    voice API, 500 on v2 (whose contract lists no 503), with ``Retry-After``.
    """

    threads: int = 4  # more only contend for the interpreter lock (docs/performance.md, "Threads per worker")
    waiting: int = 256
    scoring: int = 0  # 0: one less than the CPU cores, at least 1
    scoring_waiting: int = 4
    processes: bool = True

    def __post_init__(self) -> None:
        for name in ("threads", "waiting", "scoring_waiting"):
            if getattr(self, name) < (1 if name == "threads" else 0):
                raise ValueError(f"Capacity.{name} must be at least {1 if name == 'threads' else 0}")
        if self.scoring < 0:
            raise ValueError("Capacity.scoring must be at least 0 (0: one less than the CPU cores)")


class Full(Exception):
    """A pool's queue is full: the call was not taken."""


class Pool:
    """``threads`` daemon threads running calls for an event loop; at most ``waiting`` calls queued.

    The threads are started with the first calls and end after ``idle_seconds`` without one.

    :meth:`run` awaits a call's result (or exception). Cancelled while the call
    runs, it returns at once; the call goes on in its thread (as a thread cannot
    be stopped) and its result is dropped.
    """

    idle_seconds = 30.0

    def __init__(self, threads: int, waiting: int, name: str) -> None:
        self.size = threads
        self.waiting = waiting
        self.name = name
        self._queue: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._pending = 0  # calls queued or running
        self._threads: list[threading.Thread] = []

    def _start(self) -> None:
        """Start threads up to ``size`` (the caller holds the lock)."""
        while len(self._threads) < self.size:
            thread = threading.Thread(target=self._work, name=f"{self.name}-{len(self._threads)}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def _work(self) -> None:
        while True:
            try:
                job = self._queue.get(timeout=self.idle_seconds)
            except queue.Empty:
                with self._lock:  # idle: the thread ends, unless a call came meanwhile
                    if self._queue.empty():
                        self._threads.remove(threading.current_thread())
                        return
                continue
            if job is None:
                return
            loop, future, call, args = job
            try:
                result, error = call(*args), None
            except BaseException as exc:  # handed to the awaiting task
                result, error = None, exc
            with self._lock:
                self._pending -= 1
            try:
                loop.call_soon_threadsafe(_settle, future, result, error)
            except RuntimeError:  # the loop is closed: nobody is waiting
                pass

    @property
    def pending(self) -> int:
        """Calls queued or running."""
        return self._pending

    def admit(self) -> None:
        """Count a call in, or raise :class:`Full` when ``threads + waiting`` are already in."""
        with self._lock:
            if self._pending >= self.size + self.waiting:
                raise Full
            self._pending += 1

    def release(self) -> None:
        """Count out a call that was admitted but will not run."""
        with self._lock:
            self._pending -= 1

    async def run(self, call: Callable[..., _T], *args: Any) -> _T:
        """Run ``call(*args)`` in a thread; :meth:`admit` must have counted it in (it is counted out when
        the call ends)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()
        with self._lock:  # (a thread ending for idleness checks the queue under this lock)
            self._queue.put((loop, future, call, args))
            if len(self._threads) < self.size:
                self._start()
        return await future


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # cancelled meanwhile
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


#: how much lower the scoring processes' CPU priority is than the server's (see ``os.nice``)
SCORING_NICENESS = 10


def lower_priority(pid: int) -> None:
    """Give process ``pid`` a niceness :data:`SCORING_NICENESS` above the caller's (at most 19). Raises
    nothing: a system that refuses keeps the priority. Not ``SCHED_IDLE``: on a machine whose cores other
    work keeps busy, an idle-class scoring waits without bound (minutes were seen at load average 10), where
    a niced one still gets its share."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, min(os.getpriority(os.PRIO_PROCESS, 0) + SCORING_NICENESS, 19))
    except (AttributeError, OSError):  # not on this system, or the task is gone
        pass


def _child_start() -> None:
    """In a scoring process, before its first call: a watch on the parent: when the serving process is gone
    (stopped, killed, restarted by its supervisor), this one ends too, rather than waiting for calls that will
    never come with its acoustic model in memory. (Its niceness was set as it started, before it imported
    anything, and its threads inherit it.)"""
    import multiprocessing

    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent.sentinel,), name="learnloop-parent-watch", daemon=True).start()


def _exit_with(sentinel: int) -> None:
    """End this process once ``sentinel`` (the parent process's) is ready: the parent has exited."""
    from multiprocessing.connection import wait

    wait([sentinel])
    os._exit(0)


class _NicedProcess(SpawnProcess):
    """A ``spawn`` process niced as it starts (:func:`lower_priority`), before it imports anything or starts a
    thread: loading the acoustic model runs at that priority too, and so does every thread it starts."""

    def start(self) -> None:
        super().start()
        if self.pid is not None:
            lower_priority(self.pid)


class _NicedContext(SpawnContext):
    """The ``spawn`` multiprocessing context, its processes :class:`_NicedProcess`."""

    Process = _NicedProcess


class ScoringProcesses:
    """Pronunciation scoring in child processes, away from the process that serves the learning calls.

    A scoring holds Python's global interpreter lock for long stretches (tens
    of milliseconds at a time); in the serving process that would hold up every
    other request. ``make`` (picklable: a module-level function and its
    arguments) builds the voice façade in each child, once. :meth:`call` runs
    ``handle(method, path, form=, files=, headers=)`` there and returns the
    answer with the CPU seconds it took (all the child's threads). The children
    are started on the first call (``spawn``: the serving process has threads)
    and stopped with :meth:`close` or at exit. They run at the lowest CPU
    priority from their start (:func:`lower_priority`: a niceness
    :data:`SCORING_NICENESS` above the server's, their threads included): on
    cores they fill, the learning calls are served first.
    """

    def __init__(self, processes: int, make: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.processes = processes
        self.make = make
        self.args = args
        self._executor: Any = None
        self._lock = threading.Lock()

    def call(self, method: str, path: str, form: Any, files: Any, headers: Any) -> tuple[Any, float]:
        if self._executor is None:
            with self._lock:
                if self._executor is None:
                    from concurrent.futures import ProcessPoolExecutor

                    self._executor = ProcessPoolExecutor(
                        self.processes, mp_context=_NicedContext(), initializer=_child_start
                    )
        future = self._executor.submit(_child_call, self.make, self.args, method, path, form, files, headers)
        result: tuple[Any, float] = future.result()
        return result

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None


_child_facades: dict[str, Any] = {}


def voice_facade(
    api_keys: Mapping[str, str] | None, jwt_issuers: Mapping[str, str] | None, key_expiry: Mapping[str, Any]
) -> Any:
    """The server's voice façade (here, at module level, for the scoring processes to make theirs with it)."""
    from learnloop.voice import VoiceApi

    return VoiceApi(api_keys=api_keys, jwt_issuers=jwt_issuers, key_expiry=key_expiry)


def _child_call(
    make: Callable[..., Any], args: tuple[Any, ...], method: str, path: str, form: Any, files: Any, headers: Any
) -> tuple[Any, float]:
    """In a child process: the façade ``make(*args)`` (made once) answers one call; with the CPU seconds of the
    process meanwhile (its only work: a BLAS or decoder thread is counted too)."""
    key = f"{make.__module__}.{make.__qualname__}{args!r}"
    facade = _child_facades.get(key)
    if facade is None:
        facade = _child_facades[key] = make(*args)
    started = time.process_time()
    answer = facade.handle(method, path, form=form, files=files, headers=headers)
    return answer, time.process_time() - started

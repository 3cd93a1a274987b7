"""One engine under many threads, several engines (processes) on one file, and the
learner-state cache under hostile use: regression tests of the defects found by probing."""

from __future__ import annotations

import json
import multiprocessing as mp
import random
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from learnloop import Engine
from learnloop.api import V2Api
from learnloop.errors import ValidationError
from learnloop.events import format_timestamp
from learnloop.sim import sample_course
from learnloop.tracing import LearnerModel

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _stamp(seconds: float) -> str:
    return format_timestamp(T0 + timedelta(seconds=seconds))


def _course(engine: Engine, **kwargs: Any) -> str:
    items, catalog = sample_course(**({"n_chapters": 2, "topics_per_chapter": 3, "items_per_topic": 4} | kwargs))
    engine.upsert_items(items)
    engine.upsert_catalog(catalog)
    return catalog.catalog_id


def _fresh_processes() -> Any:
    """A multiprocessing context whose processes hold nothing of this one (no engine, lock or thread), as
    spawned ones: forked from a server process that imported learnloop once, instead of importing it each."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["learnloop"])
    return ctx


def _run_threads(workers: list[Callable[[], None]], timeout: float) -> list[BaseException]:
    """Run each worker in a daemon thread; a thread still alive after ``timeout`` is a hang."""
    errors: list[BaseException] = []

    def wrap(fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except BaseException as exc:
                errors.append(exc)

        return run

    threads = [threading.Thread(target=wrap(fn), daemon=True) for fn in workers]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    hung = [t for t in threads if t.is_alive()]
    assert not hung, f"{len(hung)} of {len(threads)} threads hung (deadlock)"
    return errors


# -- defect 1: a step in one thread and a status read in another must never hang ---------
CALLS = 600  # calls of each thread (every thread switch a place where an unsafe lock order would show)


@pytest.mark.parametrize("store_kind", ["memory", "sqlite", "postgres"])  # PostgreSQL too
def test_adaptive_steps_and_status_reads_in_two_threads_do_not_hang(make_engine: Callable[..., Engine]) -> None:
    engine = make_engine(seed=3)
    cid = _course(engine)
    api = V2Api(engine)
    counter = iter(range(10**9))

    def stepper() -> None:
        context = engine.create_session({"user_id": "u", "catalog_id": cid, "mode": {"type": "learn"}, "filter": {}})
        events: list[dict[str, Any]] = []
        for _ in range(CALLS):
            step = engine.adaptive_step(context, events)
            assert step.recommendation is not None
            events = [
                {
                    "type": "attempt",
                    "timestamp": _stamp(next(counter)),
                    "score": 1.0,
                    "recommendation_context": step.recommendation.recommendation_context,
                }
            ]

    def reader() -> None:
        body = json.dumps({"user_id": "u", "catalog_id": cid, "filter_list": [{}]}).encode()
        for _ in range(CALLS):
            response = api.handle("POST", "/v2/user-status", body=body)
            assert response.status == 200, response.body

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often, so that an unsafe lock order shows at once
    try:
        errors = _run_threads([stepper, reader, reader], timeout=60)
    finally:
        sys.setswitchinterval(switch)
    assert not errors, errors


# -- the thread test: 8 threads, every kind of call, final states equal a serial replay ----
def _mixed_workload(engine: Engine, cid: str, calls: int, n_threads: int = 8) -> dict[str, list[dict[str, Any]]]:
    """Threads mixing adaptive steps, plain event upserts, status reads and content reads (``calls`` each).

    Every accepted event is recorded per user (each thread has its own users and a
    disjoint set of timestamps), so that a serial replay can be compared with it.
    """
    api = V2Api(engine)
    accepted: dict[str, list[dict[str, Any]]] = {}
    index = engine.catalog_index(cid)
    # the exercises: v2 refuses an attempt on a theory item
    pairs = [(i, index.topic_ids[index.item_topic[p]]) for p, i in enumerate(index.item_ids) if not index.is_theory[p]]

    def worker(k: int) -> Callable[[], None]:
        rng = random.Random(k)

        def run() -> None:
            users = [f"t{k}-u{j}" for j in range(3)]
            contexts = {
                u: engine.create_session({"user_id": u, "catalog_id": cid, "mode": {"type": "learn"}, "filter": {}})
                for u in users
            }
            pending: dict[str, list[dict[str, Any]]] = {u: [] for u in users}
            for tick in range(1, calls + 1):
                ts = _stamp(k * 10**7 + tick * 10)  # disjoint per thread, increasing
                user = rng.choice(users)
                action = rng.random()
                if action < 0.45:
                    sent = pending[user]
                    step = engine.adaptive_step(
                        contexts[user], [{kk: v for kk, v in e.items() if kk[0] != "_"} for e in sent]
                    )
                    accepted.setdefault(user, []).extend(
                        {"ts": e["timestamp"], "item": e["_item"], "topic": e["_topic"], "score": e["score"]}
                        for e in sent
                    )
                    rec = step.recommendation
                    assert rec is not None
                    pending[user] = [
                        {
                            "type": "attempt",
                            "timestamp": ts,
                            "score": float(rng.random() < 0.6),
                            "recommendation_context": rec.recommendation_context,
                            "_item": rec.item_id,
                            "_topic": rec.topic_id,
                        }
                    ]
                elif action < 0.65:
                    item, topic = rng.choice(pairs)
                    # a late event (earlier than this user's latest) now and then
                    late = rng.random() < 0.1
                    stamp = _stamp(k * 10**7 + tick * 10 - (5000 if late else 0) + 1)
                    score = float(rng.random() < 0.5)
                    body = json.dumps(
                        {
                            "user_id": user,
                            "events": [
                                {
                                    "type": "attempt",
                                    "timestamp": stamp,
                                    "catalog_id": cid,
                                    "item_id": item,
                                    "topic_id": topic,
                                    "score": score,
                                }
                            ],
                        }
                    ).encode()
                    response = api.handle("POST", "/v2/upsert-events", body=body)
                    assert response.status == 200, response.body
                    accepted.setdefault(user, []).append({"ts": stamp, "item": item, "topic": topic, "score": score})
                elif action < 0.9:
                    body = json.dumps({"user_id": user, "catalog_id": cid, "filter_list": [{}]}).encode()
                    response = api.handle("POST", "/v2/user-status", body=body)
                    assert response.status == 200, response.body
                else:
                    assert engine.catalog_ids() == [cid]
                    assert len(engine.catalog(cid).topics) > 0

        return run

    errors = _run_threads([worker(k) for k in range(n_threads)], timeout=60)
    assert not errors, errors
    return accepted


def _serial_replay(cid: str, accepted: dict[str, list[dict[str, Any]]]) -> Engine:
    serial = Engine(seed=3)
    _course(serial)
    for user, events in accepted.items():
        ordered = sorted(events, key=lambda e: e["ts"])
        serial.upsert_events(
            user,
            [
                {
                    "type": "attempt",
                    "timestamp": e["ts"],
                    "catalog_id": cid,
                    "item_id": e["item"],
                    "topic_id": e["topic"],
                    "score": e["score"],
                }
                for e in ordered
            ],
        )
    return serial


@pytest.mark.slow
def test_eight_threads_mixing_every_call_do_not_hang_and_match_a_serial_replay(
    make_engine: Callable[..., Engine],
) -> None:
    engine = make_engine(seed=3)
    cid = _course(engine)
    accepted = _mixed_workload(engine, cid, calls=400)
    assert sum(len(v) for v in accepted.values()) > 100
    serial = _serial_replay(cid, accepted)
    for user in accepted:
        got = engine.learner_view(user, cid)
        want = serial.learner_view(user, cid)
        np.testing.assert_allclose(got.p_correct, want.p_correct, rtol=1e-9, atol=1e-12, err_msg=user)
        np.testing.assert_array_equal(got.attempts, want.attempts, err_msg=user)
        assert engine.user_status(user, cid, [{}]) == serial.user_status(user, cid, [{}])


# -- defect 2 and the process test: several processes on one fresh SQLite file ------------
def _process_worker(path: str, k: int, cid: str, barrier: Any, out: Any) -> None:
    try:
        engine = Engine.open(path, seed=7)  # the same seed in every process, as the docs show
        barrier.wait(timeout=60)
        contexts = []
        accepted = []
        for j in range(4):
            user = f"p{k}-u{j}"
            context = engine.create_session(
                {"user_id": user, "catalog_id": cid, "mode": {"type": "learn"}, "filter": {}}
            )
            contexts.append(context)
            events: list[dict[str, Any]] = []
            for n in range(6):
                step = engine.adaptive_step(context, events)
                accepted.extend([(user, e["timestamp"]) for e in events])
                rec = step.recommendation
                assert rec is not None
                events = [
                    {
                        "type": "attempt",
                        "timestamp": _stamp(k * 10**6 + j * 1000 + n),
                        "score": 1.0,
                        "recommendation_context": rec.recommendation_context,
                    }
                ]
            engine.adaptive_step(context, events)
            accepted.extend([(user, e["timestamp"]) for e in events])
        out.put(("ok", k, contexts, accepted))
        engine.close()
    except BaseException as exc:
        out.put(("error", k, repr(exc), []))


def _verify_worker(path: str, contexts: list[str], out: Any) -> None:
    try:
        engine = Engine.open(path, seed=7)
        for context in contexts:
            engine.session(context)  # raises ContextError when the context does not verify
        out.put(("ok", len(contexts)))
        engine.close()
    except BaseException as exc:
        out.put(("error", repr(exc)))


def test_four_processes_on_one_fresh_sqlite_file_share_secret_sessions_and_events(tmp_path: Path) -> None:
    path = str(tmp_path / "fresh.db")
    setup = Engine.open(tmp_path / "content.db")  # content prepared in another file first
    cid = _course(setup)
    items = [i.model_dump(mode="json", exclude_none=True) for i in setup.item_database()]
    catalog = setup.catalog(cid).model_dump(mode="json", exclude_none=True)
    setup.close()

    ctx = _fresh_processes()
    # content is written by the first process to open the file, concurrently with the others
    barrier = ctx.Barrier(4)
    out = ctx.Queue()
    first = Engine.open(path, seed=7)
    first.upsert_items(items)
    first.upsert_catalog(catalog)
    first.close()
    import os

    os.remove(path)  # start again from a fresh file: the secret is created by the race
    for suffix in ("-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    seeder = Engine.open(path, secret=b"x" * 32)  # content only; the stored secret is not created by it
    seeder.upsert_items(items)
    seeder.upsert_catalog(catalog)
    seeder.close()

    procs = [ctx.Process(target=_process_worker, args=(path, k, cid, barrier, out)) for k in range(4)]
    for p in procs:
        p.start()
    results = [out.get(timeout=180) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    failures = [r for r in results if r[0] != "ok"]
    assert not failures, failures
    contexts = [c for r in results for c in r[2]]
    accepted = [a for r in results for a in r[3]]
    assert len(set(contexts)) == len(contexts) == 16

    # every context verifies in every process (each a fresh engine on the file)
    checks = [ctx.Process(target=_verify_worker, args=(path, contexts, out)) for _ in range(2)]
    for p in checks:
        p.start()
    verdicts = [out.get(timeout=120) for _ in checks]
    for p in checks:
        p.join(timeout=60)
    assert verdicts == [("ok", 16), ("ok", 16)]

    # no event lost or duplicated: exactly the accepted events are stored
    engine = Engine.open(path, seed=7)
    stored = sorted((k[0], k[3]) for k, _ in engine.store.scan("events", "default"))
    assert stored == sorted(accepted)
    assert len(stored) == 16 * 6
    for r in results:
        for context in r[2]:
            assert engine.session(context).recommendation_count == 7
    engine.close()


# -- defect 8: session ids never repeat across restarts and processes ----------------------
def test_session_ids_do_not_repeat_across_restarts_with_the_same_seed(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    first = Engine.open(path, seed=7)
    cid = _course(first)
    spec = {"catalog_id": cid, "mode": {"type": "learn"}, "filter": {}}
    a = first.create_session({"user_id": "alice"} | spec)
    first.close()
    second = Engine.open(path, seed=7)
    b = second.create_session({"user_id": "bob"} | spec)
    assert a != b
    assert second.session(a).spec.user_id == "alice"
    assert second.session(b).spec.user_id == "bob"
    ids = {second.session(second.create_session({"user_id": f"u{k}"} | spec)).session_id for k in range(50)}
    assert len(ids) == 50
    second.close()


def test_the_same_seed_still_gives_the_same_recommendations() -> None:
    def play() -> list[str]:
        engine = Engine(seed=11)
        cid = _course(engine)
        context = engine.create_session({"user_id": "u", "catalog_id": cid, "mode": {"type": "learn"}, "filter": {}})
        picks, events = [], []
        for n in range(10):
            step = engine.adaptive_step(context, events)
            assert step.recommendation is not None
            picks.append(step.recommendation.item_id)
            events = [
                {
                    "type": "attempt",
                    "timestamp": _stamp(n),
                    "score": float(n % 3 == 0),
                    "recommendation_context": step.recommendation.recommendation_context,
                }
            ]
        return picks

    assert play() == play()


# -- defect 4: the session filter limit counts distinct items ------------------------------
def test_session_filter_limit_counts_distinct_items_not_topic_positions() -> None:
    engine = Engine()
    n = 5001
    engine.upsert_items([{"item_id": f"q{k}", "display_name": "Q", "scorable": True} for k in range(n)])
    refs = [{"item_id": f"q{k}"} for k in range(n)]
    engine.upsert_catalog(
        {
            "catalog_id": "c",
            "display_name": "C",
            "topics": [
                {"topic_id": "a", "display_name": "A", "item_refs": refs},
                {"topic_id": "b", "display_name": "B", "item_refs": refs},
            ],
        }
    )
    context = engine.create_session({"user_id": "u", "catalog_id": "c", "mode": {"type": "learn"}, "filter": {}})
    assert engine.adaptive_step(context).recommendation is not None
    # above the limit, the message states the true number of distinct items
    engine.upsert_items([{"item_id": f"r{k}", "display_name": "R", "scorable": True} for k in range(5000)])
    refs2 = [{"item_id": f"r{k}"} for k in range(5000)]
    engine.upsert_catalog(
        {
            "catalog_id": "d",
            "display_name": "D",
            "topics": [
                {"topic_id": "a", "display_name": "A", "item_refs": refs},
                {"topic_id": "b", "display_name": "B", "item_refs": refs + refs2},
            ],
        }
    )
    with pytest.raises(ValidationError, match="matches 10001 items"):
        engine.create_session({"user_id": "u", "catalog_id": "d", "mode": {"type": "learn"}, "filter": {}})


# -- defect 6: events sharing a timestamp are applied in posting order ----------------------
@pytest.mark.parametrize("store_kind", ["memory", "sqlite", "postgres"])  # PostgreSQL too
def test_events_sharing_a_timestamp_are_applied_in_posting_order(make_engine: Callable[..., Engine]) -> None:
    engine = make_engine(seed=1)
    cid = _course(engine)
    index = engine.catalog_index(cid)
    topic = index.topic_ids[index.item_topic[0]]
    first, second = index.item_ids[1], index.item_ids[0]  # posted against id order
    stamp = _stamp(100)

    def post(e: Engine, user: str, order: list[tuple[str, float]]) -> None:
        e.upsert_events(
            user,
            [
                {"type": "attempt", "timestamp": stamp, "catalog_id": cid, "item_id": i, "topic_id": topic, "score": s}
                for i, s in order
            ],
        )

    post(engine, "a", [(first, 1.0), (second, 0.0)])
    post(engine, "b", [(second, 0.0), (first, 1.0)])
    # the last answer posted decides which item counts as the latest failure
    view_a, view_b = engine.learner_view("a", cid), engine.learner_view("b", cid)
    assert view_a.last_failed == index.position(second, topic)
    assert view_b.last_failed is None
    # the same, when the state is rebuilt from the store (another engine on the same data)
    engine.calibrate(cid)  # a content change: states are replayed from the stored history
    assert engine.learner_view("a", cid).last_failed == index.position(second, topic)
    assert engine.learner_view("b", cid).last_failed is None


# -- defect 14: an unknown learner costs nothing to keep ------------------------------------
def test_status_reads_of_unknown_learners_do_not_grow_memory() -> None:
    engine = Engine()
    _course(engine, n_chapters=10, topics_per_chapter=10, items_per_topic=100)  # 10,000 items
    cid = engine.catalog_ids()[0]
    engine.user_status("warm-up", cid, [{}])
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for k in range(300):
        engine.user_status(f"guess-{k}", cid, [{}])
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert grown < 2_000_000, f"{grown / 1e6:.1f} MB kept for 300 unknown learners"


def test_the_learner_cache_is_bounded_by_bytes() -> None:
    engine = Engine(learner_cache_bytes=5_000_000)
    cid = _course(engine, n_chapters=10, topics_per_chapter=10, items_per_topic=100)  # ~0.55 MB a state
    index = engine.catalog_index(cid)
    topic = index.topic_ids[index.item_topic[0]]
    for k in range(40):
        engine.upsert_events(
            f"u{k}",
            [
                {
                    "type": "attempt",
                    "timestamp": _stamp(k),
                    "catalog_id": cid,
                    "item_id": index.item_ids[0],
                    "topic_id": topic,
                    "score": 1.0,
                }
            ],
        )
        engine.user_status(f"u{k}", cid, [{}])
    assert engine.learner_cache_nbytes() <= 5_000_000
    # evicted learners are rebuilt from the store, unchanged
    assert engine.user_status("u0", cid, [{}])[0].last_interaction_timestamp == _stamp(0)


# -- defect 15: one late event does not stall the other learners ----------------------------
class _LockSpy:
    """Notes, per thread, the spied locks it holds and every acquisition that had to wait for another thread."""

    def __init__(self) -> None:
        self.held: dict[str, list[str]] = {}
        self.taken: dict[str, list[str]] = {}
        self.waited: list[tuple[str, str]] = []  # (thread, lock)

    def wrap(self, lock: Any, name: str) -> _SpiedLock:
        return _SpiedLock(lock, name, self)


class _SpiedLock:
    """A lock (or re-entrant lock) whose acquisitions are noted by a :class:`_LockSpy`."""

    def __init__(self, lock: Any, name: str, spy: _LockSpy) -> None:
        self._lock, self._name, self._spy = lock, name, spy

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        me = threading.current_thread().name
        if not self._lock.acquire(False):  # held by another thread: this acquisition waits
            self._spy.waited.append((me, self._name))
            if not self._lock.acquire(blocking, timeout):
                return False
        self._spy.held.setdefault(me, []).append(self._name)
        self._spy.taken.setdefault(me, []).append(self._name)
        return True

    def release(self) -> None:
        held = self._spy.held[threading.current_thread().name]
        del held[len(held) - 1 - held[::-1].index(self._name)]
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


@pytest.mark.slow
def test_a_late_event_replays_one_learner_without_blocking_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = Engine(seed=1)
    cid = _course(engine)
    index = engine.catalog_index(cid)
    pairs = [(i, index.topic_ids[index.item_topic[p]]) for p, i in enumerate(index.item_ids)]
    heavy = [
        {
            "type": "attempt",
            "timestamp": _stamp(10 * n),
            "catalog_id": cid,
            "item_id": pairs[n % len(pairs)][0],
            "topic_id": pairs[n % len(pairs)][1],
            "score": float(n % 2),
        }
        for n in range(20_000)  # more than MAX_CHECKPOINTS * CHECKPOINT_EVERY: the checkpoints are thinned
    ]
    for at in range(0, len(heavy), 1000):
        engine.upsert_events("heavy", heavy[at : at + 1000])
    engine.user_status("heavy", cid, [{}])
    light = engine.create_session({"user_id": "light", "catalog_id": cid, "mode": {"type": "learn"}, "filter": {}})
    engine.adaptive_step(light)

    # every lock a step can wait for is spied: the learners' locks, the store's; the gate is checked apart
    spy = _LockSpy()
    stripes = engine._learners._locks._locks
    stripes[:] = [spy.wrap(lock, f"learner lock {n}") for n, lock in enumerate(stripes)]
    monkeypatch.setattr(engine.store, "_lock", spy.wrap(engine.store._lock, "store lock"))
    own = {
        name: f"learner lock {engine._learners._locks._stripe(('default', name, cid))}" for name in ("heavy", "light")
    }
    assert own["heavy"] != own["light"]  # (two learners on one stripe would share a lock by design)

    # a late event for the heavy learner: its next read replays part of its history; the replay
    # is held (in its first chunk, or before its run made at once returns) until the light learner's step is over
    late = dict(heavy[-500], timestamp=_stamp(10 * (len(heavy) - 500) + 5))
    engine.upsert_events("heavy", [late])
    replaying, release = threading.Event(), threading.Event()
    replayed: list[int] = []
    update_many = LearnerModel.update_many

    in_columns: list[bool] = []

    def held_back(model: LearnerModel, state: Any, events: Any) -> Any:
        events = list(events)
        if threading.current_thread().name == "heavy" and not in_columns:
            replayed.append(len(events))
            replaying.set()
            assert release.wait(60), "the light learner's step did not end"
        return update_many(model, state, events)

    update_columns = LearnerModel.update_columns

    def held_back_columns(model: LearnerModel, state: Any, columns: Any) -> Any:
        # a long run goes as columns (and through update_many only without the compiled loop)
        if threading.current_thread().name == "heavy":
            replayed.append(len(columns))
            replaying.set()
            assert release.wait(60), "the light learner's step did not end"
        in_columns.append(True)
        try:
            return update_columns(model, state, columns)
        finally:
            in_columns.pop()

    update_stops = LearnerModel.update_stops

    def held_back_stops(model: LearnerModel, state: Any, columns: Any, stops: Any) -> Any:
        # a long run goes at once through the compiled loop (in chunks when that cannot take it)
        made = update_stops(model, state, columns, stops)
        if made is not None and threading.current_thread().name == "heavy":
            replayed.append(len(columns))
            replaying.set()
            assert release.wait(60), "the light learner's step did not end"
        return made

    monkeypatch.setattr(LearnerModel, "update_many", held_back)
    monkeypatch.setattr(LearnerModel, "update_columns", held_back_columns)
    monkeypatch.setattr(LearnerModel, "update_stops", held_back_stops)
    errors = []

    def run(name: str, fn: Callable[[], object]) -> threading.Thread:
        def target() -> None:
            try:
                fn()
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        return thread

    reader = run("heavy", lambda: engine.user_status("heavy", cid, [{}]))
    try:
        assert replaying.wait(60), "the late event's read did not replay"
        # mid-replay, the reader holds its own learner's lock and nothing another learner needs
        assert spy.held["heavy"] == [own["heavy"]]
        assert engine._gate._owner is None  # the gate is held shared only
        stepper = run("light", lambda: engine.adaptive_step(light))
        # it runs to its end while the replay is held: a wait of it on a lock can only be on one the
        # reader holds (and fails at once); the deadline bounds a hang on a lock not spied
        deadline = time.monotonic() + 60
        while stepper.is_alive() and not spy.waited and time.monotonic() < deadline:
            stepper.join(0.01)
        assert spy.waited == [], "the light learner's step waited on a lock the replay holds"
        assert not stepper.is_alive(), "the light learner's step did not end while the replay was held"
    finally:
        release.set()
        reader.join(60)
    assert not reader.is_alive() and not errors, errors
    assert replayed  # the step above ran while the replay was held in its first chunk
    assert own["light"] in spy.taken["light"] and "store lock" in spy.taken["light"]  # (the spies saw the step)
    # the replay starts from a checkpoint near the late event, not from the first event: it applies
    # the events from there on (the 500 after the late one and the checkpoint's spacing), not 20,000
    print(sum(replayed))
    assert 500 < sum(replayed) < 5_000, f"the late event's read replayed {sum(replayed)} events"

    # and the replayed state equals a full rebuild
    fresh = Engine(seed=1)
    _course(fresh)
    ordered = sorted([*heavy, late], key=lambda e: e["timestamp"])
    for at in range(0, len(ordered), 1000):
        fresh.upsert_events("heavy", ordered[at : at + 1000])
    np.testing.assert_allclose(engine.learner_view("heavy", cid).p_correct, fresh.learner_view("heavy", cid).p_correct)


# -- a signed context whose payload lacks a field is the documented 400, not a KeyError ----------
def test_a_signed_context_without_its_fields_is_a_400(make_engine: Callable[..., Engine]) -> None:
    engine = make_engine(seed=1)
    cid = _course(engine)
    api = V2Api(engine)
    bad_session = engine._sessions._signer.sign("default", "s", {"x": 1})
    body = json.dumps({"session_context": bad_session, "events": []}).encode()
    response = api.handle("POST", "/v2/adaptive-engine", body=body)
    assert response.status == 400 and "malformed context" in response.body["error"]["message"]
    context = engine.create_session({"user_id": "u", "catalog_id": cid, "mode": {"type": "learn"}, "filter": {}})
    bad_rec = engine._sessions._signer.sign("default", "r", {"s": 1})
    body = json.dumps(
        {
            "session_context": context,
            "events": [{"type": "attempt", "timestamp": _stamp(1), "score": 1.0, "recommendation_context": bad_rec}],
        }
    ).encode()
    response = api.handle("POST", "/v2/adaptive-engine", body=body)
    assert response.status == 400 and "recommendation_context: malformed context" in response.body["error"]["message"]


# -- one session stepped from two processes in turn: the same steps as from one ----------------
def _stepping_worker(path: str, conn: Any) -> None:
    engine = Engine.open(path, seed=7)
    try:
        while True:
            message = conn.recv()
            if message is None:
                break
            context, events = message
            try:
                step = engine.adaptive_step(context, events)
                conn.send(("ok", step.model_dump(mode="json")))
            except BaseException as exc:  # reported to the test, which fails on it
                conn.send(("error", repr(exc)))
    finally:
        engine.close()


def _session_script(
    path: str, cid: str, step: Callable[[str, list[dict[str, Any]]], dict[str, Any]], mode: str
) -> list[Any]:
    """24 steps of one session of ``mode`` (answers from a seeded generator); after step 8 and step 16 a
    third connection posts an event of the same learner outside the session, one of them earlier
    than the learner's latest. Returns what each step answered, without the opaque contexts."""
    engine = Engine.open(path, seed=7)
    context = engine.create_session({"user_id": "shared", "catalog_id": cid, "mode": {"type": mode}, "filter": {}})
    draw = random.Random(5)
    events: list[dict[str, Any]] = []
    seen = []
    for n in range(24):
        answer = step(context, events)
        rec = answer["recommendation"]
        seen.append(
            (
                None if rec is None else (rec["item_id"], rec["topic_id"], rec["reason"]),
                answer["user_status"],
                {k: v for k, v in answer["session_status"].items() if k != "duration_ms"},  # (the wall clock's)
            )
        )
        if n in (8, 16):
            other = Engine.open(path, seed=7)  # another connection: the steppers must see its write
            item = engine.item_database()[n]
            when = _stamp(n * 60 - (3000 if n == 16 else -5))
            late = {"type": "attempt", "item_id": item.item_id, "catalog_id": cid, "timestamp": when, "score": 0.0}
            other.upsert_events("shared", [late])
            other.close()
        events = []
        if rec is not None:
            events = [
                {
                    "type": "attempt",
                    "timestamp": _stamp(n * 60 + 30),
                    "score": float(draw.random() < 0.6),
                    "recommendation_context": rec["recommendation_context"],
                }
            ]
    engine.close()
    return seen


@pytest.mark.parametrize("mode", ["learn", "review", "assess"])
def test_a_session_stepped_by_two_processes_in_turn_answers_as_one_process_does(tmp_path: Path, mode: str) -> None:
    # each process keeps learner states, session states and (on SQLite) rows it knows: every
    # step must still start from what the other process and a third connection wrote
    paths = [str(tmp_path / "shared.db"), str(tmp_path / "alone.db")]
    for path in paths:
        engine = Engine.open(path, seed=7)
        cid = _course(engine)
        engine.close()

    ctx = _fresh_processes()
    pipes, procs = [], []
    for _ in range(2):
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_stepping_worker, args=(paths[0], child), daemon=True)
        proc.start()
        pipes.append(parent)
        procs.append(proc)
    turn = iter(range(10**6))

    def in_turn(context: str, events: list[dict[str, Any]]) -> dict[str, Any]:
        pipe = pipes[next(turn) % 2]
        pipe.send((context, events))
        assert pipe.poll(120), "a stepping process did not answer"
        status, answer = pipe.recv()
        assert status == "ok", answer
        return answer

    try:
        shared = _session_script(paths[0], cid, in_turn, mode)
    finally:
        for pipe in pipes:
            pipe.send(None)
        for proc in procs:
            proc.join(timeout=60)

    alone_engine = Engine.open(paths[1], seed=7)
    try:
        alone = _session_script(
            paths[1], cid, lambda c, e: alone_engine.adaptive_step(c, e).model_dump(mode="json"), mode
        )
    finally:
        alone_engine.close()
    assert len(shared) == 24
    assert sum(rec is not None for rec, _, _ in shared) >= (24 if mode == "learn" else 3)
    assert shared == alone

"""The engine's gate: shared entries run together, an exclusive one alone, and nobody waits forever."""

from __future__ import annotations

import threading

from learnloop.engine.locks import Gate


def test_an_exclusive_entry_waits_for_the_shared_holders_and_runs_once_they_leave() -> None:
    gate = Gate()
    counted = gate.enter_shared()
    entered = threading.Event()

    def exclusive() -> None:
        with gate.exclusive():
            entered.set()

    thread = threading.Thread(target=exclusive)
    thread.start()
    assert not entered.wait(0.2)  # the shared holder is still inside
    gate.exit_shared(counted)
    assert entered.wait(60)
    thread.join(60)
    assert not thread.is_alive()


def test_a_shared_entry_waits_behind_a_waiting_exclusive_one() -> None:
    gate = Gate()
    counted = gate.enter_shared()
    order: list[str] = []
    exclusive_waits = threading.Event()

    def exclusive() -> None:
        exclusive_waits.set()
        with gate.exclusive():
            order.append("exclusive")

    def shared() -> None:
        with gate.shared():
            order.append("shared")

    first = threading.Thread(target=exclusive)
    first.start()
    assert exclusive_waits.wait(60)
    while not gate._waiting:  # the exclusive entry is waiting
        threading.Event().wait(0.01)
    second = threading.Thread(target=shared)
    second.start()
    second.join(0.2)
    assert second.is_alive() and order == []
    gate.exit_shared(counted)
    first.join(60)
    second.join(60)
    assert order == ["exclusive", "shared"]


def test_threads_mixing_shared_and_exclusive_entries_never_overlap_an_exclusive_one() -> None:
    gate = Gate()
    guard = threading.Lock()
    state = {"shared": 0, "exclusive": 0, "overlaps": 0}

    def shared_worker() -> None:
        for _ in range(300):
            with gate.shared():
                with guard:
                    state["shared"] += 1
                    state["overlaps"] += state["exclusive"]
                with guard:
                    state["shared"] -= 1

    def exclusive_worker() -> None:
        for _ in range(50):
            with gate.exclusive():
                with guard:
                    state["exclusive"] += 1
                    state["overlaps"] += state["shared"]
                with gate.shared():  # re-entered by the owner
                    pass
                with guard:
                    state["exclusive"] -= 1

    threads = [threading.Thread(target=shared_worker) for _ in range(4)]
    threads += [threading.Thread(target=exclusive_worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads)
    assert state == {"shared": 0, "exclusive": 0, "overlaps": 0}

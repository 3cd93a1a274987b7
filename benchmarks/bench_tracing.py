"""Timings of the tracing models (plain script; prints figures).

    .venv/bin/python benchmarks/bench_tracing.py

* online ability update (one event, scalar path) and a full learner-state
  update (copy-on-write state of a 10,000-item catalog);
* P(correct) over 10,000 items (raw IRT and through the learner model);
* item calibration (Rasch and 2PL, 500 learners x 100 items, and 5,000 x 200 sparse);
* BKT fit at 100k and 1M interactions (10 skills, 20 attempts each).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import statistics
import time
from collections.abc import Callable

import numpy as np

from learnloop.sim import generate_bkt, generate_irt
from learnloop.tracing import (
    BKT,
    Event,
    ItemParams,
    LearnerModel,
    Sequences,
    TopicStructure,
    calibrate,
    p_correct,
    update_ability,
)


def best_of(fn: Callable[[], object], *, number: int, repeat: int = 5) -> float:
    """Best mean seconds per call over ``repeat`` batches of ``number`` calls."""
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t) / number)
    return min(times)


def median_of(fn: Callable[[], object], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"{'measure':<58} {'time':>12}")
    t = best_of(lambda: update_ability(0.1, 0.7, b=0.3, score=1.0), number=100_000)
    print(f"{'online ability update (one event)':<58} {t * 1e6:>9.2f} us")

    n_items, n_leaves = 10_000, 180
    parent = np.r_[np.full(20, -1), np.repeat(np.arange(20), 9)]
    prereq = [(t, t + 1) for t in range(20, 199)]
    topics = TopicStructure.from_arrays(parent, prereq)
    items = ItemParams.from_catalog(
        item_topic=rng.integers(20, 20 + n_leaves, n_items),
        difficulty=rng.uniform(0.2, 0.8, n_items),
        scorable=np.ones(n_items, bool),
        is_theory=np.zeros(n_items, bool),
    )
    model = LearnerModel(topics, items)
    state = model.new_state()
    for k in range(200):
        state = model.update(state, Event(item=k, kind="attempt", score=float(k % 3 > 0), timestamp=float(k)))
    event = Event(item=5, kind="attempt", score=1.0, timestamp=1e6)
    t = best_of(lambda: model.update(state, event), number=2_000)
    print(f"{'learner state update (10k items, 200 topics)':<58} {t * 1e6:>9.2f} us")
    batch = [Event(item=k, kind="attempt", score=1.0, timestamp=1e6 + k) for k in range(50)]
    t = best_of(lambda: model.update_many(state, batch), number=200) / len(batch)
    print(f"{'learner state update, per event in a batch of 50':<58} {t * 1e6:>9.2f} us")

    b = items.b
    t = best_of(lambda: p_correct(0.3, b), number=2_000)
    print(f"{'P(correct) over 10,000 items (IRT)':<58} {t * 1e6:>9.2f} us")
    t = best_of(lambda: model.predict(state), number=500)
    print(f"{'P(correct) over 10,000 items (learner model, beliefs)':<58} {t * 1e6:>9.2f} us")
    mask = rng.random(n_items) < 0.5
    p = model.predict(state)
    t = best_of(lambda: model.status(state, mask, p_correct=p), number=500)
    print(f"{'status over a 5,000-item filter':<58} {t * 1e6:>9.2f} us")

    for persons, n, model_name, density in (
        (500, 100, "rasch", 1.0),
        (500, 100, "2pl", 1.0),
        (5_000, 200, "rasch", 0.2),
        (5_000, 200, "2pl", 0.2),
    ):
        data = generate_irt(persons, n, model=model_name, density=density, seed=1)
        t = median_of(lambda d=data, m=model_name: calibrate(d.person, d.item, d.score, model=m))  # type: ignore[misc]
        fit = calibrate(data.person, data.item, data.score, model=model_name)  # type: ignore[arg-type]
        corr = float(np.corrcoef(fit.b, data.b)[0, 1])
        rmse = float(np.sqrt(np.mean((fit.theta - data.theta) ** 2)))
        label = f"calibration {model_name} {persons}x{n} ({data.score.size:,} events)"
        print(f"{label:<58} {t * 1e3:>9.1f} ms   b corr {corr:.3f}, theta RMSE {rmse:.3f}")

    for n_students in (500, 5_000):
        data = generate_bkt(n_students, 10, 20, seed=2)

        def fit(d=data) -> None:  # type: ignore[no-untyped-def]
            BKT(seed=0).fit(Sequences.from_events(d.skill, d.student, d.correct, n_skills=10))

        t = median_of(fit)
        label = f"BKT fit, {data.correct.size:,} interactions, 10 skills, 5 restarts"
        print(f"{label:<58} {t * 1e3:>9.1f} ms")


if __name__ == "__main__":
    main()

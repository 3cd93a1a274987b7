"""The policy contract as a check a user runs on a policy of their own.

:func:`check_policy` is what ``Engine(policies={"learn": MyPolicy()})`` relies
on, checked over random learners and masks: for a custom policy, run it once in
your suite. The test suite runs it on every built-in policy.

>>> from learnloop.recommend import LearnPolicy
>>> check_policy(LearnPolicy(), max_examples=5)
"""

from __future__ import annotations

import inspect
from datetime import UTC, datetime, timedelta
from functools import cache

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from learnloop.content import Catalog, Item
from learnloop.engine import Engine
from learnloop.events import format_timestamp
from learnloop.recommend import Pick, Policy
from learnloop.sim import sample_course

__all__ = ["check_policy"]

_T0 = datetime(2025, 1, 1, tzinfo=UTC)


@cache
def _course() -> tuple[tuple[Item, ...], Catalog]:
    items, catalog = sample_course(n_chapters=2, topics_per_chapter=2, items_per_topic=4)
    return tuple(items), catalog


def _problem(pick: Pick | None, eligible: np.ndarray, n_items: int, passes: bool = False) -> str | None:
    """What is wrong with ``pick`` for the mask ``eligible``, or None (``passes``: the policy
    may pick nothing while positions are eligible)."""
    if not eligible.any():
        return None if pick is None else f"picked {pick!r} although no position is eligible"
    if pick is None and passes:
        return None
    if pick is None:
        return f"picked nothing from {int(eligible.sum())} eligible position(s)"
    if not isinstance(pick, Pick):
        return f"returned {type(pick).__name__}, not a Pick"
    if not isinstance(pick.position, int | np.integer) or not 0 <= int(pick.position) < n_items:
        return f"picked position {pick.position!r}, not a position of the catalog (0..{n_items - 1})"
    if not eligible[int(pick.position)]:
        return f"picked position {pick.position}, which is not eligible"
    if not (isinstance(pick.keyword, str) and pick.keyword and isinstance(pick.description, str) and pick.description):
        return f"gave no reason: keyword {pick.keyword!r}, description {pick.description!r}"
    return None


def check_policy(policy: Policy, *, max_examples: int = 40, shrink: bool = True) -> None:
    """Check that ``policy`` honours the contract of :class:`~learnloop.recommend.Policy`.

    Over learners with random answer histories, random eligibility masks,
    previous positions and assessed sets, on a small sample course:

    - ``select`` has the signature of :meth:`Policy.select`;
    - the position picked is a position of the catalog that is eligible, with a
      non-empty reason keyword and description; ``None`` exactly when nothing is
      eligible (an empty mask gives ``None``, a one-position mask gives that
      position), except that a policy whose ``passes`` is true (review: nothing
      due) may also answer ``None`` with positions eligible;
    - it changes neither the mask nor the assessed set it is given;
    - it depends only on its inputs: the same inputs and a generator seeded
      alike give the same pick.

    Raises ``AssertionError`` naming the broken rule and, through hypothesis,
    the smallest example that breaks it (with ``shrink=False``, the first one
    found, which is quicker); returns ``None`` when all hold.
    """
    expected = inspect.signature(Policy.select)
    actual = inspect.signature(type(policy).select)
    if [(p.name, p.kind) for p in actual.parameters.values()] != [
        (p.name, p.kind) for p in expected.parameters.values()
    ]:
        raise AssertionError(f"{type(policy).__name__}.select{actual} does not have the signature select{expected}")

    items, catalog = _course()
    engine = Engine(seed=0)
    engine.upsert_items(list(items))
    engine.upsert_catalog(catalog)
    index = engine.catalog_index(catalog.catalog_id)
    n = index.n_items
    answers = st.lists(st.tuples(st.integers(0, n - 1), st.sampled_from([0.0, 0.5, 1.0])), max_size=20)
    masks = st.lists(st.booleans(), min_size=n, max_size=n)
    name = type(policy).__name__

    @settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        report_multiple_bugs=False,
        phases=list(Phase) if shrink else [Phase.explicit, Phase.reuse, Phase.generate],
    )
    @given(
        history=answers,
        eligible=masks,
        previous=st.none() | st.integers(0, n - 1),
        administered=st.none() | masks,
        seed=st.integers(0, 2**32 - 1),
        single=st.integers(0, n - 1),
    )
    def run(
        history: list[tuple[int, float]],
        eligible: list[bool],
        previous: int | None,
        administered: list[bool] | None,
        seed: int,
        single: int,
    ) -> None:
        user_id = f"u{len(history)}-{seed}"
        engine.upsert_events(
            user_id,
            [
                {
                    "type": "attempt",
                    "timestamp": format_timestamp(_T0 + timedelta(minutes=k)),
                    "catalog_id": catalog.catalog_id,
                    "item_id": index.item_ids[p],
                    "topic_id": index.topic_ids[index.item_topic[p]],
                    "score": s,
                }
                for k, (p, s) in enumerate(history)
            ],
        )
        view = engine.learner_view(user_id, catalog.catalog_id)
        mask = np.asarray(eligible, dtype=bool)
        given_set = None if administered is None else np.asarray(administered, dtype=bool)
        mask_before = mask.copy()
        set_before = None if given_set is None else given_set.copy()

        def select(m: np.ndarray) -> Pick | None:
            return policy.select(view, m, previous=previous, rng=np.random.default_rng(seed), administered=given_set)

        pick = select(mask)
        assert np.array_equal(mask, mask_before), f"{name}.select changed the eligibility mask it was given"
        assert set_before is None or given_set is None or np.array_equal(given_set, set_before), (
            f"{name}.select changed the assessed set it was given"
        )
        passes = bool(getattr(policy, "passes", False))
        problem = _problem(pick, mask, n, passes)
        assert problem is None, f"{name}.select {problem}"
        again = select(mask)
        assert again == pick, f"{name}.select gave {pick!r}, then {again!r} for the same inputs and seed"
        empty = np.zeros(n, dtype=bool)
        problem = _problem(select(empty), empty, n)
        assert problem is None, f"{name}.select {problem}"
        one = np.zeros(n, dtype=bool)
        one[single] = True
        problem = _problem(select(one), one, n, passes)
        assert problem is None, f"{name}.select {problem} (only position {single} is eligible)"

    run()

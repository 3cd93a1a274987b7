"""Public hypothesis strategies and invariant checks for property-based tests of code built on learnloop.

Needs `hypothesis <https://hypothesis.readthedocs.io>`_ installed; learnloop
itself does not depend on it (``import learnloop`` never loads this package).

- content: :func:`identifiers`, :func:`items`, :func:`item_databases`,
  :func:`catalogs`, :func:`content` (an item database and a valid catalog over
  it), :func:`filters` (see :mod:`learnloop.testing.strategies`);
- activity: :func:`answers` (a learner's answers inside a session),
  :func:`events` (event streams outside sessions), :func:`scores`
  (see :mod:`learnloop.testing.events`);
- learners: :func:`learners` draws a :class:`LearnerSpec`, which builds a
  :class:`~learnloop.sim.SimulatedLearner` with a known ground truth on a
  catalog (see :mod:`learnloop.testing.learners`);
- sessions: :func:`session_specs`, :func:`matching_filters` (filters that
  match at least one item), :func:`stopping_conditions`, :func:`constraints`
  (see :mod:`learnloop.testing.sessions`);
- checks: :func:`play_session` drives a session and records it,
  :func:`assert_session_invariants` checks what must hold in every session
  (see :mod:`learnloop.testing.checks`);
- policies: :func:`check_policy` checks that a policy (one of your own for
  ``Engine(policies=...)``) honours the contract of
  :class:`~learnloop.recommend.Policy` (see :mod:`learnloop.testing.policies`);
- stateful: :class:`SessionMachine`, a hypothesis state machine that
  interleaves session calls (create, answer, skip, view theory, step, status)
  on one engine and checks each against the pure session step; run it as is or
  subclass it (see :mod:`learnloop.testing.machine`).

A property test of recommendations, as it would sit in a user's own suite:

>>> from hypothesis import given, settings, strategies as st
>>> from learnloop import Engine
>>> from learnloop.testing import (assert_session_invariants, content, learners, play_session,
...                                session_specs)
>>> @st.composite
... def scenarios(draw):
...     items, catalog = draw(content())
...     return items, catalog, draw(session_specs(catalog, items))
>>> @settings(max_examples=10, deadline=None)
... @given(scenarios(), learners())
... def test_sessions_keep_their_invariants(scenario, learner):
...     items, catalog, spec = scenario
...     engine = Engine(seed=0)
...     engine.upsert_items(items)
...     engine.upsert_catalog(catalog)
...     assert_session_invariants(play_session(engine, spec, learner=learner, steps=8))
>>> test_sessions_keep_their_invariants()
"""

try:
    import hypothesis  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "learnloop.testing needs hypothesis: pip install hypothesis (or pip install 'learnloop[dev]')"
    ) from exc

from learnloop.testing.checks import (
    REASON_KEYWORDS,
    SessionRun,
    assert_session_invariants,
    play_session,
    session_violations,
)
from learnloop.testing.events import Answer, answers, events, scores
from learnloop.testing.learners import LearnerSpec, learners
from learnloop.testing.machine import SessionMachine
from learnloop.testing.policies import check_policy
from learnloop.testing.sessions import (
    MODES,
    constraints,
    matching_filters,
    session_specs,
    stopping_conditions,
)
from learnloop.testing.strategies import (
    CONTENT_TYPES,
    FILTER_FIELDS,
    catalogs,
    content,
    filters,
    identifiers,
    item_databases,
    items,
)

__all__ = [
    "Answer",
    "CONTENT_TYPES",
    "FILTER_FIELDS",
    "LearnerSpec",
    "MODES",
    "REASON_KEYWORDS",
    "SessionMachine",
    "SessionRun",
    "answers",
    "assert_session_invariants",
    "catalogs",
    "check_policy",
    "constraints",
    "content",
    "events",
    "filters",
    "identifiers",
    "item_databases",
    "items",
    "learners",
    "matching_filters",
    "play_session",
    "scores",
    "session_specs",
    "session_violations",
    "stopping_conditions",
]

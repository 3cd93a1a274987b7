"""hypothesis strategies for learner activity: answers inside sessions, event streams outside.

Two shapes of activity exist. Inside an adaptive session an event answers a
recommendation, so it is only complete once the recommendation (and its
``recommendation_context``) is known: :func:`answers` draws a script of
:class:`Answer` objects, which :func:`~learnloop.testing.play_session` turns
into events one step at a time. Outside a session, :func:`events` draws a
ready list of valid ``attempt`` / ``skip`` / ``view_theory`` events over a
catalog for :meth:`Engine.upsert_events <learnloop.engine.Engine.upsert_events>`.

>>> from hypothesis import Phase, find, settings
>>> first_found = settings(phases=[Phase.generate], database=None, max_examples=1000)   # any such example, unshrunk
>>> script = find(answers(min_size=3), lambda a: {x.kind for x in a} == {"attempt", "skip"}, settings=first_found)
>>> len(script) >= 3, sorted({a.kind for a in script})
(True, ['attempt', 'skip'])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from hypothesis import strategies as st

from learnloop.content import Catalog, Item
from learnloop.events import AttemptEvent, SkipEvent, ViewTheoryEvent, format_timestamp

__all__ = ["Answer", "answers", "events", "scores"]

#: Where drawn event streams start when no ``start`` is given.
DEFAULT_START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)

EventKind = Literal["attempt", "skip", "view_theory"]


@dataclass(frozen=True)
class Answer:
    """What a learner does with one recommendation.

    ``kind`` is ``"attempt"``, ``"skip"`` or ``"view_theory"``; ``score`` is the
    attempt's score; ``fraction_completed`` the share of a theory item read
    (``None``: all of it); ``delay_ms`` how long after the previous event (or
    the session's start) the event happens, at least 1 ms so that no two events
    of a session share a timestamp.

    >>> Answer("attempt", score=1.0, time_spent_ms=5000).event("ctx", at=DEFAULT_START)
    {'type': 'attempt', 'timestamp': '2025-01-06T09:00:00.000Z', 'recommendation_context': 'ctx', 'score': 1.0, 'time_spent_ms': 5000}
    """

    kind: EventKind
    score: float = 1.0
    fraction_completed: float | None = None
    time_spent_ms: int | None = None
    delay_ms: int = 30_000

    def __post_init__(self) -> None:
        problems = []
        if self.kind not in ("attempt", "skip", "view_theory"):
            problems.append(f"kind must be attempt, skip or view_theory, got {self.kind!r}")
        if not 0.0 <= self.score <= 1.0:
            problems.append(f"score must be in [0, 1], got {self.score}")
        if self.fraction_completed is not None and not 0.0 <= self.fraction_completed <= 1.0:
            problems.append(f"fraction_completed must be in [0, 1], got {self.fraction_completed}")
        if self.time_spent_ms is not None and self.time_spent_ms < 0:
            problems.append(f"time_spent_ms must be non-negative, got {self.time_spent_ms}")
        if self.delay_ms < 1:
            problems.append(f"delay_ms must be at least 1, got {self.delay_ms}")
        if problems:
            raise ValueError("; ".join(problems))

    def event(self, recommendation_context: str, *, at: datetime) -> dict[str, Any]:
        """The adaptive-engine event answering the recommendation ``recommendation_context`` at ``at``.

        An attempt always carries its score, so it is valid on scorable and
        non-scorable items alike.
        """
        out: dict[str, Any] = {
            "type": self.kind,
            "timestamp": format_timestamp(at),
            "recommendation_context": recommendation_context,
        }
        if self.kind == "attempt":
            out["score"] = self.score
        if self.kind == "view_theory" and self.fraction_completed is not None:
            out["fraction_completed"] = self.fraction_completed
        if self.kind != "skip" and self.time_spent_ms is not None:
            out["time_spent_ms"] = self.time_spent_ms
        return out


def scores(*, partial: bool = True) -> st.SearchStrategy[float]:
    """Attempt scores: 0 or 1, and with ``partial`` also partial credit in (0, 1).

    >>> from hypothesis import find
    >>> find(scores(), lambda s: 0.0 < s < 1.0) > 0.0
    True
    """
    binary = st.sampled_from((0.0, 1.0))
    if not partial:
        return binary
    return binary | st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@st.composite
def _answer(draw: st.DrawFn, kinds: Sequence[EventKind], partial: bool, max_delay_ms: int) -> Answer:
    kind = draw(st.sampled_from(kinds))
    return Answer(
        kind=kind,
        score=draw(scores(partial=partial)),
        fraction_completed=draw(st.none() | st.floats(min_value=0.0, max_value=1.0)) if kind == "view_theory" else None,
        time_spent_ms=draw(st.none() | st.integers(min_value=0, max_value=600_000)),
        delay_ms=draw(st.integers(min_value=1, max_value=max_delay_ms)),
    )


def answers(
    *,
    min_size: int = 0,
    max_size: int = 12,
    kinds: Sequence[EventKind] = ("attempt", "attempt", "skip", "view_theory"),
    partial: bool = True,
    max_delay_ms: int = 3_600_000,
) -> st.SearchStrategy[list[Answer]]:
    """A script of answers to successive recommendations (attempts twice as likely by default).

    >>> from hypothesis import Phase, find, settings
    >>> first_found = settings(phases=[Phase.generate], database=None, max_examples=1000)   # any such example, unshrunk
    >>> len(find(answers(kinds=("attempt",)), lambda a: len(a) == 4, settings=first_found))
    4
    """
    if not kinds:
        raise ValueError("answers() needs at least one event kind")
    return st.lists(_answer(tuple(kinds), partial, max_delay_ms), min_size=min_size, max_size=max_size)


@st.composite
def events(
    draw: st.DrawFn,
    catalog: Catalog,
    items: Sequence[Item] | Mapping[str, Item],
    *,
    min_size: int = 0,
    max_size: int = 12,
    start: datetime = DEFAULT_START,
    duplicates: bool = False,
) -> list[AttemptEvent | SkipEvent | ViewTheoryEvent]:
    """Valid events outside a session, on items of ``catalog``, in time order.

    Each event names an item the catalog holds and, sometimes, the topic it
    sits in; an attempt on a scorable item carries a score. Timestamps
    increase strictly, so every event is new; with ``duplicates`` some events
    repeat the (item, timestamp) key of an earlier one, which replaces it.

    >>> from hypothesis import Phase, find, settings
    >>> from learnloop.testing import content
    >>> first_found = settings(phases=[Phase.generate], database=None, max_examples=1000)   # any such example, unshrunk
    >>> db, cat = find(content(), lambda drawn: True, settings=first_found)
    >>> stream = find(events(cat, db), lambda e: len(e) == 2, settings=first_found)
    >>> stream[0].catalog_id == cat.catalog_id, stream[0].timestamp < stream[1].timestamp
    (True, True)
    """
    pool = dict(items) if isinstance(items, Mapping) else {i.item_id: i for i in items}
    refs = [(t.topic_id, r.item_id) for t in catalog.topics for r in t.item_refs or () if r.item_id in pool]
    if not refs:
        raise ValueError(f"catalog '{catalog.catalog_id}' refers to none of the items given")
    n = draw(st.integers(min_value=min_size, max_value=max_size))
    moment = start
    out: list[AttemptEvent | SkipEvent | ViewTheoryEvent] = []
    for _ in range(n):
        if duplicates and out and draw(st.integers(min_value=0, max_value=3)) == 0:
            earlier = draw(st.sampled_from(out))
            topic_id, item_id, stamp = earlier.topic_id, earlier.item_id, earlier.timestamp
        else:
            moment = moment + timedelta(milliseconds=draw(st.integers(min_value=1, max_value=86_400_000)))
            topic_id, item_id = draw(st.sampled_from(refs))
            topic_id = topic_id if draw(st.booleans()) else None
            stamp = moment
        item = pool[item_id]
        kind = draw(st.sampled_from(("attempt", "attempt", "skip", "view_theory")))
        common: dict[str, Any] = {
            "item_id": item_id,
            "topic_id": topic_id,
            "catalog_id": catalog.catalog_id,
            "timestamp": stamp,
            "type": kind,
        }
        spent = draw(st.none() | st.integers(min_value=0, max_value=600_000))
        if kind == "attempt":
            score = draw(scores()) if item.scorable else draw(st.none() | scores())
            out.append(AttemptEvent(**common, score=score, time_spent_ms=spent))
        elif kind == "skip":
            out.append(SkipEvent(**common))
        else:
            fraction = draw(st.none() | st.floats(min_value=0.0, max_value=1.0))
            out.append(ViewTheoryEvent(**common, time_spent_ms=spent, fraction_completed=fraction))
    return out

"""Posted events: validated one by one, or a call's plain events as columns.

:func:`plain_events` and :func:`context_events` validate events into their
pydantic models, the reference for what is accepted and for the error messages.

:meth:`EventBatch.read` takes a call's plain events (dicts) as columns, one list
or numpy array per field, without a model object per event: pydantic-core
validates the fields into plain dicts, and the timestamps are checked and
converted as whole columns when they are in the canonical form (the engine's
own output, see :func:`~learnloop.events.format_timestamp`). It accepts exactly
what :func:`plain_events` accepts, with the same values; for anything it is not
sure of (a problem anywhere, a timestamp near the edges of the supported range)
it answers None, and the caller takes the per-event path, which says what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import reduce
from itertools import repeat
from operator import getitem, itemgetter, or_
from typing import Annotated, Any, NotRequired, get_args

import numpy as np
import pydantic
from pydantic import ConfigDict, Field, TypeAdapter, with_config
from typing_extensions import TypedDict

from learnloop._types import IntArray
from learnloop._validation import describe_validation_error
from learnloop.content import CatalogIndex
from learnloop.errors import ValidationError
from learnloop.events import (
    AttemptEvent,
    ContextAttemptEvent,
    ContextEvent,
    ContextSkipEvent,
    ContextViewTheoryEvent,
    Interaction,
    PlainEvent,
    SkipEvent,
    Timestamp,
    ViewTheoryEvent,
    format_timestamp,
)

__all__ = [
    "ContextEvents",
    "EventBatch",
    "PlainEvents",
    "canonical_ms",
    "context_events",
    "kind_problem",
    "plain_events",
]

#: the events ``Engine.upsert_events`` takes: models, or mappings of their fields
PlainEvents = Iterable[AttemptEvent | SkipEvent | ViewTheoryEvent | Mapping[str, Any]]
#: the events ``Engine.adaptive_step`` takes (each names its recommendation context)
ContextEvents = Iterable[ContextAttemptEvent | ContextSkipEvent | ContextViewTheoryEvent | Mapping[str, Any]]

_PLAIN_EVENTS: TypeAdapter[list[Any]] = TypeAdapter(list[PlainEvent])
_CONTEXT_EVENTS: TypeAdapter[list[Any]] = TypeAdapter(list[ContextEvent])


def _validated(adapter: TypeAdapter[list[Any]], kinds: tuple[type, ...], events: Iterable[Any]) -> list[Any]:
    """Events as models: models pass through, the rest is validated in one go."""
    given = list(events)
    if all(isinstance(e, kinds) for e in given):
        return given
    try:
        return adapter.validate_python([e.model_dump() if isinstance(e, pydantic.BaseModel) else e for e in given])
    except pydantic.ValidationError as exc:
        raise ValidationError([p.replace("'", "'events", 1) for p in describe_validation_error(exc)]) from None


def plain_events(events: Iterable[Any]) -> list[AttemptEvent | SkipEvent | ViewTheoryEvent]:
    """Plain events as models; raises :class:`~learnloop.errors.ValidationError` listing every problem."""
    return _validated(_PLAIN_EVENTS, (AttemptEvent, SkipEvent, ViewTheoryEvent), events)


def context_events(events: Iterable[Any]) -> list[ContextAttemptEvent | ContextSkipEvent | ContextViewTheoryEvent]:
    """Events in a session's context as models (see :func:`plain_events`)."""
    return _validated(_CONTEXT_EVENTS, (ContextAttemptEvent, ContextSkipEvent, ContextViewTheoryEvent), events)


def kind_problem(kind: str, index: CatalogIndex, position: int, item_id: str) -> str | None:
    """Why an event of ``kind`` does not fit the item at ``position`` of ``index`` (None when it does).

    An ``attempt`` on a theory item that is not scorable, or a ``view_theory`` on a scorable
    item that is not theory, changes neither progress nor proficiency: the façades refuse
    them (the v1 contract's rule: ``response_submit`` needs an exercise, ``theory_viewed`` a
    theory asset). A ``skip`` fits every item, and so does every kind a scorable theory item
    or an exercise that is not scorable.
    """
    theory, scorable = bool(index.is_theory[position]), bool(index.scorable[position])
    if kind == "attempt" and theory and not scorable:
        return f"item '{item_id}' is a theory item; attempt needs an exercise, post view_theory for it"
    if kind == "view_theory" and scorable and not theory:
        return f"item '{item_id}' is an exercise; view_theory needs a theory item, post attempt for it"
    return None


def _misfits(index: CatalogIndex) -> tuple[frozenset[str], frozenset[str]]:
    """The items an attempt does not fit, and those a view_theory does not fit (see :func:`kind_problem`)."""
    theory_only = index.is_theory & ~index.scorable
    exercises = index.scorable & ~index.is_theory
    return (
        frozenset(index.item_ids[p] for p in np.flatnonzero(theory_only).tolist()),
        frozenset(index.item_ids[p] for p in np.flatnonzero(exercises).tolist()),
    )


# -- the columns --------------------------------------------------------------------------
# The plain events' fields as the models have them, into dicts: the timestamp is checked below.
_FORBID = ConfigDict(extra="forbid")


def _plain_fields(model: type[pydantic.BaseModel]) -> Any:
    """A TypedDict of ``model``'s fields with their types and constraints (the timestamp taken
    as it is, to be checked apart), the optional ones not required: derived from the model, so
    that a field added to it is read here too."""
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        kind: Any = Any if name == "timestamp" else info.annotation
        if info.metadata and name != "timestamp":
            kind = getitem(Annotated, (kind, *info.metadata))
        fields[name] = kind if info.is_required() else getitem(NotRequired, kind)
    return with_config(_FORBID)(TypedDict(f"_{model.__name__}Fields", fields))  # type: ignore[operator]


_MODELS: tuple[type[pydantic.BaseModel], ...] = (AttemptEvent, SkipEvent, ViewTheoryEvent)
#: the plain events as dicts of their fields, told apart by their type
_FIELDS: TypeAdapter[list[Any]] = TypeAdapter(
    list[getitem(Annotated, (reduce(or_, map(_plain_fields, _MODELS)), Field(discriminator="type")))]  # type: ignore[misc, arg-type]
)
_TIMESTAMP: TypeAdapter[datetime] = TypeAdapter(Timestamp)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: canonical stamps between these (milliseconds since the epoch) are taken as whole columns; the
#: others one by one, as the models take them (the range check of parse_timestamp's safe span)
_LOW_MS = int((datetime(2, 1, 1, tzinfo=UTC) - _EPOCH) / timedelta(milliseconds=1))
_HIGH_MS = int((datetime(9999, 12, 1, tzinfo=UTC) - _EPOCH) / timedelta(milliseconds=1))


#: the canonical stamp's digits (by their offsets) and separators, and what its fields may be
_DIGITS = np.array([0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22])
_SEPARATORS = np.frombuffer(b"--T::.Z", dtype=np.uint8)
_AT = np.array([4, 7, 10, 13, 16, 19, 23])
_MONTH_DAYS = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])


def canonical_ms(raw: list[Any]) -> IntArray | None:
    """Milliseconds since the epoch of timestamps all in the canonical form (None otherwise,
    or when one falls outside the safe span): checked and read as a table of bytes."""
    if set(map(type, raw)) != {str} or set(map(len, raw)) != {24}:
        return None
    try:
        data = "".join(raw).encode("ascii")
    except UnicodeEncodeError:
        return None
    table = np.frombuffer(data, dtype=np.uint8).reshape(len(raw), 24)
    digits = table[:, _DIGITS] - np.uint8(48)  # wraps below '0': a byte that is no digit exceeds 9
    if (digits > 9).any() or (table[:, _AT] != _SEPARATORS).any():
        return None
    d = digits.astype(np.int64)
    year = d[:, 0] * 1000 + d[:, 1] * 100 + d[:, 2] * 10 + d[:, 3]
    month, day = d[:, 4] * 10 + d[:, 5], d[:, 6] * 10 + d[:, 7]
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0)) & (month == 2)
    if (
        (month < 1).any()
        or (month > 12).any()
        or (day < 1).any()
        or (day > _MONTH_DAYS[np.minimum(month, 12)] + leap).any()
        or (d[:, 8] * 10 + d[:, 9] > 23).any()
        or (d[:, 10] > 5).any()
        or (d[:, 12] > 5).any()
    ):
        return None
    # a valid date and time of day: numpy reads it as written (without the 'Z')
    ms = np.ascontiguousarray(table[:, :23]).view("S23").ravel().astype("datetime64[ms]").astype(np.int64)
    if int(ms.min()) < _LOW_MS or int(ms.max()) > _HIGH_MS:
        return None
    return ms


#: per kind: the fields an event must have, and those it may have (the models')
_NAMES = {
    get_args(model.model_fields["type"].annotation)[0]: (
        frozenset(name for name, info in model.model_fields.items() if info.is_required()),
        frozenset(name for name, info in model.model_fields.items() if not info.is_required()),
    )
    for model in _MODELS
}
#: identifiers, each followed by a newline (which no identifier holds)
_IDENTIFIERS = re.compile(r"(?:[a-zA-Z0-9_\-:]{1,128}\n)*")


#: the columns of :class:`EventBatch` read from the events' fields (the timestamps aside)
_COLUMNS = {
    "kinds": "type",
    "catalogs": "catalog_id",
    "items": "item_id",
    "topics": "topic_id",
    "scores": "score",
    "times": "time_spent_ms",
    "fractions": "fraction_completed",
}
_NONE = type(None)


def _columns(rows: Sequence[dict[str, Any]]) -> dict[str, list[Any]]:
    get = dict.get
    return {column: list(map(get, rows, repeat(name))) for column, name in _COLUMNS.items()}


#: the column of each field name (the timestamps aside)
_COLUMN_OF = {name: column for column, name in _COLUMNS.items()}


def _names_valid(
    given: Sequence[dict[str, Any]], columns: dict[str, list[Any]], types: dict[str, set[type]], stamps: list[Any]
) -> bool:
    """Whether each event has the fields its kind must have and no other (``types``: those of each
    column's values, ``stamps``: the timestamps, None where absent; False: not sure)."""
    kinds = columns["kinds"]
    spec = _NAMES.get(kinds[0])
    if spec is not None and kinds.count(kinds[0]) == len(kinds):
        # one kind: the events hold as many fields as their kind's fields with a value hold, when
        # every field they hold is one of those (a field set to None is left to the check below)
        n = len(given)
        present = [n - stamps.count(None)]
        for name in spec[0] | spec[1]:
            if name != "timestamp":
                column = _COLUMN_OF[name]
                present.append(n - columns[column].count(None) if _NONE in types[column] else n)
        if (
            present[0] == n
            and sum(map(len, given)) == sum(present)
            and all(_NONE not in types[_COLUMN_OF[name]] for name in spec[0] - {"timestamp"})
        ):
            return True
    for kind, names in set(zip(kinds, map(tuple, given), strict=True)):
        spec = _NAMES.get(kind)
        if spec is None or not spec[0].issubset(names) or not spec[0].union(spec[1]).issuperset(names):
            return False
    return True


def _plainly_valid(given: Sequence[dict[str, Any]], columns: dict[str, list[Any]], stamps: list[Any]) -> bool:
    """Whether the events (read into ``columns``, and ``stamps`` their timestamps) are valid on their
    face, fields of the plain types the models keep as they are (strings, floats, ints), with these
    very values: what the models would make of them, their timestamps aside (read after). False
    leaves it to pydantic-core."""
    types = {name: set(map(type, column)) for name, column in columns.items()}
    if types["kinds"] != {str} or not _names_valid(given, columns, types, stamps):
        return False
    if types["items"] != {str} or types["catalogs"] != {str} or not types["topics"] <= {str, _NONE}:
        return False
    ids = {*columns["items"], *columns["catalogs"], *columns["topics"]}
    ids.discard(None)
    if not _IDENTIFIERS.fullmatch("\n".join(ids) + "\n"):
        return False
    for name in ("scores", "fractions", "times"):
        values, kinds = columns[name], types[name]
        if _NONE in kinds:
            kinds = kinds - {_NONE}
            values = [v for v in values if v is not None]
        if not kinds:
            continue
        if name == "times":
            if kinds != {int} or min(values) < 0 or max(values) > 2**53 - 1:
                return False
        elif kinds != {float} or not ((array := np.array(values)) >= 0.0).all() or not (array <= 1.0).all():
            return False
    return True


def _first_topics(index: CatalogIndex) -> dict[str, str]:
    """The topic of each item's first position in the catalog (see :meth:`CatalogIndex.position`)."""
    return {item: index.topic_ids[index.item_topic[found[0]]] for item, found in index.item_positions.items()}


def _ms(moment: datetime) -> int:
    """Milliseconds since the epoch of the instant's canonical stamp (microseconds dropped)."""
    return (moment - _EPOCH) // timedelta(milliseconds=1)


@dataclass(frozen=True, slots=True)
class EventBatch:
    """A call's plain events as columns, in posting order (see the module's docstring).

    ``ms`` holds each timestamp's canonical stamp in milliseconds since the epoch;
    ``moments`` the datetimes as the models have them, when they were read one by one.
    """

    kinds: list[str]
    catalogs: list[str]
    items: list[str]
    topics: list[str | None]
    stamps: list[str]
    ms: IntArray
    scores: list[float | None]
    times: list[int | None]
    fractions: list[float | None]
    moments: list[datetime] | None = None

    def __len__(self) -> int:
        return len(self.kinds)

    @classmethod
    def read(cls, given: Sequence[Any]) -> EventBatch | None:
        """The events as columns; None when they are not all dicts or not all valid."""
        if set(map(type, given)) != {dict}:
            return None
        columns = _columns(given)
        raw: list[Any] = list(map(dict.get, given, repeat("timestamp")))
        if not _plainly_valid(given, columns, raw):
            try:
                rows = _FIELDS.validate_python(given)
            except pydantic.ValidationError:
                return None
            columns = _columns(rows)
            raw = list(map(itemgetter("timestamp"), rows))
        ms = canonical_ms(raw)
        moments = None
        if ms is None:
            try:
                moments = [_TIMESTAMP.validate_python(value) for value in raw]
            except pydantic.ValidationError:
                return None
            raw = [format_timestamp(moment) for moment in moments]
            ms = np.array([_ms(moment) for moment in moments], dtype=np.int64)
        return cls(**columns, stamps=raw, ms=ms, moments=moments)

    def locate(self, index_of: Callable[[str], CatalogIndex | None], *, strict_kinds: bool = False) -> list[str] | None:
        """Each event's topic in its catalog (``index_of`` gives a catalog's index, None when
        unknown); None when an event has no place (an unknown catalog, item or topic), is an
        attempt on a scorable item without a score or, with ``strict_kinds``, is of a type
        that does not fit its item (see :func:`kind_problem`)."""
        topics: list[str] = [""] * len(self)
        catalogs = self.catalogs
        # without topics given or attempts without a score, each item's first place is all there is to know
        by_item = self.topics.count(None) == len(self) and not self.scores.count(None)
        for catalog in dict.fromkeys(catalogs):
            index = index_of(catalog)
            if index is None:
                return None
            rows: Sequence[int] = range(len(self))
            if len(catalogs) != catalogs.count(catalog):
                rows = [k for k, c in enumerate(catalogs) if c == catalog]
            if strict_kinds and self._misfit(index, rows):
                return None
            if by_item:
                first = index.derived("first_topics", _first_topics)
                found = list(map(first.get, self.items if len(rows) == len(self) else [self.items[k] for k in rows]))
                if None in found:
                    return None
                named: list[str] = found  # type: ignore[assignment]
            else:
                named_or_none = self._places(index, rows)
                if named_or_none is None:
                    return None
                named = named_or_none
            if len(rows) == len(self):
                return named
            for k, name in zip(rows, named, strict=True):
                topics[k] = name
        return topics

    def _misfit(self, index: CatalogIndex, rows: Sequence[int]) -> bool:
        """Whether an event of ``rows`` is of a type its item does not take (see :func:`kind_problem`)."""
        kinds, items = self.kinds, self.items
        if "attempt" not in kinds and "view_theory" not in kinds:
            return False
        theory_only, exercises = index.derived("event_kind_misfits", _misfits)
        attempted = {items[k] for k in rows if kinds[k] == "attempt"}
        viewed = {items[k] for k in rows if kinds[k] == "view_theory"}
        return not attempted.isdisjoint(theory_only) or not viewed.isdisjoint(exercises)

    def _places(self, index: CatalogIndex, rows: Sequence[int]) -> list[str] | None:
        """The topics of ``rows`` (events of the catalog of ``index``), or None (see :meth:`locate`)."""
        position = index.position
        found = [position(self.items[k], self.topics[k]) for k in rows]
        if None in found:
            return None
        positions = np.asarray(found, dtype=np.intp)
        if self.scores.count(None):
            unscored = np.array([self.kinds[k] == "attempt" and self.scores[k] is None for k in rows], dtype=bool)
            if unscored.any() and index.scorable[positions[unscored]].any():
                return None
        return list(map(index.topic_ids.__getitem__, index.item_topic[positions].tolist()))

    def epochs(self) -> np.ndarray:
        """Each event's time in epoch seconds (as :attr:`Interaction.epoch <learnloop.events.Interaction>`)."""
        return self.ms / 1000.0

    def moment(self, row: int) -> datetime:
        if self.moments is not None:
            return self.moments[row]
        return _EPOCH + timedelta(milliseconds=int(self.ms[row]))

    def doc(self, row: int, *, user_id: str, topic_id: str) -> dict[str, Any]:
        """The stored document of an event (as :meth:`Interaction.to_doc <learnloop.events.Interaction.to_doc>`)."""
        doc: dict[str, Any] = {
            "kind": self.kinds[row],
            "user_id": user_id,
            "catalog_id": self.catalogs[row],
            "item_id": self.items[row],
            "topic_id": topic_id,
            "timestamp": self.stamps[row],
        }
        for name, column in (
            ("score", self.scores),
            ("time_spent_ms", self.times),
            ("fraction_completed", self.fractions),
        ):
            if column[row] is not None:
                doc[name] = column[row]
        return doc

    def interaction(self, row: int, *, user_id: str, topic_id: str) -> Interaction:
        """The event as an interaction (as :meth:`Interaction.from_event <learnloop.events.Interaction.from_event>`)."""
        return Interaction._made(
            self.kinds[row],  # type: ignore[arg-type]
            user_id,
            self.catalogs[row],
            self.items[row],
            topic_id,
            self.moment(row),
            self.scores[row],
            self.times[row],
            self.fractions[row],
            None,
            True,
            self.stamps[row],
        )

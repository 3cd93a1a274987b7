"""A log of learners' responses as flat numpy arrays, and what the engine makes of it."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

import numpy as np

from learnloop._types import BoolArray, FloatArray, IntArray
from learnloop.content import Catalog, Item
from learnloop.events import format_timestamp

__all__ = ["ResponseLog", "align", "identifiers"]

_NOT_ALLOWED = re.compile(r"[^a-zA-Z0-9_\-:]")


def identifiers(raw: Sequence[str], prefix: str) -> tuple[str, ...]:
    """Contract identifiers for raw ids: characters outside ``[a-zA-Z0-9_-:]`` become ``_``,
    at most 128 characters, ``prefix`` in front, made unique (a clash gets ``-2``, ``-3``, ...).

    >>> identifiers(["12", "a b", "a_b"], "q")
    ('q12', 'qa_b', 'qa_b-2')
    """
    out: list[str] = []
    seen: set[str] = set()
    for value in raw:
        base = (prefix + _NOT_ALLOWED.sub("_", str(value)))[:120] or prefix
        name, k = base, 1
        while name in seen:
            k += 1
            name = f"{base}-{k}"
        seen.add(name)
        out.append(name)
    return tuple(out)


@dataclass(frozen=True, eq=False)
class ResponseLog:
    """Responses of learners to items, one row per response, as flat arrays.

    The rows of one learner are contiguous and in the order given (time order);
    ``time`` is epoch seconds, strictly increasing within a learner (made up,
    one minute apart, when the data has no time: ``timed`` is then False).
    Items belong to skills (none, one or several) through the CSR pair
    ``skill_ptr``/``skill_idx``: the skills of item ``i`` are
    ``skill_idx[skill_ptr[i]:skill_ptr[i + 1]]``. An answer to an item with
    several skills is one response, never a row per skill (which would let a
    model see an answer before predicting it).
    """

    learner: IntArray
    item: IntArray
    correct: FloatArray
    time: FloatArray
    learner_ids: tuple[str, ...]
    item_ids: tuple[str, ...]
    skill_ids: tuple[str, ...]
    skill_ptr: IntArray
    skill_idx: IntArray
    timed: bool = False

    def __post_init__(self) -> None:
        n = self.learner.size
        if not self.item.size == self.correct.size == self.time.size == n:
            raise ValueError("learner, item, correct and time must have one entry per response")
        if self.skill_ptr.size != len(self.item_ids) + 1:
            raise ValueError("skill_ptr must have one entry per item, plus one")
        if n and not _contiguous(self.learner):
            raise ValueError("the responses of each learner must be contiguous")

    # -- sizes -----------------------------------------------------------------------
    @property
    def n_responses(self) -> int:
        return int(self.learner.size)

    @property
    def n_learners(self) -> int:
        return len(self.learner_ids)

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    @property
    def n_skills(self) -> int:
        return len(self.skill_ids)

    def __repr__(self) -> str:
        present = np.unique(self.learner).size
        return (
            f"ResponseLog({self.n_responses} responses of {present} learners, {self.n_items} items, "
            f"{self.n_skills} skills, {'timed' if self.timed else 'ordered'})"
        )

    # -- derived arrays ------------------------------------------------------------------
    @cached_property
    def first(self) -> BoolArray:
        """True on each learner's first response."""
        out = np.ones(self.n_responses, dtype=bool)
        out[1:] = self.learner[1:] != self.learner[:-1]
        return out

    @cached_property
    def item_skill(self) -> IntArray:
        """Each item's first skill (-1: none)."""
        has = np.diff(self.skill_ptr) > 0
        out = np.full(self.n_items, -1, dtype=np.intp)
        out[has] = self.skill_idx[self.skill_ptr[:-1][has]]
        return out

    def response_skills(self) -> tuple[IntArray, IntArray]:
        """``(row, skill)`` pairs: each response paired with each skill of its item (rows in order)."""
        counts = np.diff(self.skill_ptr)[self.item]
        rows = np.repeat(np.arange(self.n_responses), counts)
        starts = np.repeat(self.skill_ptr[self.item] - np.cumsum(counts) + counts, counts)
        return rows, self.skill_idx[starts + np.arange(rows.size)]

    # -- subsets and splits ------------------------------------------------------------------
    def select(self, learners: Sequence[int] | IntArray) -> ResponseLog:
        """The responses of the given learner indices (vocabularies kept)."""
        keep = np.isin(self.learner, np.asarray(learners, dtype=np.intp))
        return replace(
            self, learner=self.learner[keep], item=self.item[keep], correct=self.correct[keep], time=self.time[keep]
        )

    def present_learners(self) -> IntArray:
        """Indices of the learners with at least one response."""
        return np.unique(self.learner)

    def split(self, test_size: float = 0.2, *, seed: int = 0) -> tuple[ResponseLog, ResponseLog]:
        """``(train, test)`` by learner: a learner's responses are all on one side."""
        if not 0.0 < test_size < 1.0:
            raise ValueError(f"test_size must lie in (0, 1), got {test_size}")
        learners = np.random.default_rng(seed).permutation(self.present_learners())
        cut = int(round(test_size * learners.size))
        return self.select(learners[cut:]), self.select(learners[:cut])

    def folds(self, k: int = 5, *, seed: int = 0) -> list[tuple[ResponseLog, ResponseLog]]:
        """``k`` ``(train, validation)`` pairs by learner, each learner validated once."""
        if k < 2:
            raise ValueError(f"k must be at least 2, got {k}")
        learners = np.random.default_rng(seed).permutation(self.present_learners())
        parts = np.array_split(learners, k)
        return [(self.select(np.concatenate(parts[:j] + parts[j + 1 :])), self.select(parts[j])) for j in range(k)]

    # -- into the engine ---------------------------------------------------------------
    @cached_property
    def catalog_item_ids(self) -> tuple[str, ...]:
        """The items' ids as contract identifiers (``q`` + the id, cleaned)."""
        return identifiers(self.item_ids, "q")

    @cached_property
    def catalog_topic_ids(self) -> tuple[str, ...]:
        """The skills' ids as contract identifiers (``s`` + the id, cleaned)."""
        return identifiers(self.skill_ids, "s")

    @cached_property
    def catalog_learner_ids(self) -> tuple[str, ...]:
        return identifiers(self.learner_ids, "u")

    def catalog(self, catalog_id: str = "log", display_name: str | None = None) -> tuple[list[Item], Catalog]:
        """Items (scorable, no preset difficulty) and a catalog with one topic per skill.

        An item with several skills is listed in each of its skills' topics; items
        without a skill go to a topic ``unassigned``.
        """
        items = [
            Item(item_id=i, display_name=raw, scorable=True) for i, raw in zip(self.catalog_item_ids, self.item_ids)
        ]
        members: list[list[dict[str, str]]] = [[] for _ in range(self.n_skills)]
        loose: list[dict[str, str]] = []
        for i, item_id in enumerate(self.catalog_item_ids):
            skills = self.skill_idx[self.skill_ptr[i] : self.skill_ptr[i + 1]]
            for s in skills.tolist():
                members[s].append({"item_id": item_id})
            if not skills.size:
                loose.append({"item_id": item_id})
        topics: list[dict[str, Any]] = [
            {"topic_id": t, "display_name": raw, "item_refs": refs}
            for t, raw, refs in zip(self.catalog_topic_ids, self.skill_ids, members)
            if refs
        ]
        if loose:
            topics.append({"topic_id": "unassigned", "display_name": "Items without a skill", "item_refs": loose})
        catalog = Catalog.model_validate(
            {"catalog_id": catalog_id, "display_name": display_name or catalog_id, "topics": topics}
        )
        return items, catalog

    def events(self, catalog_id: str = "log") -> Iterator[tuple[str, list[dict[str, Any]]]]:
        """Per learner (in order of first response): ``(user_id, attempt events)`` for
        :meth:`learnloop.Engine.upsert_events`, each answer on its item's first skill's topic."""
        item_ids = self.catalog_item_ids
        topic_of = [self.catalog_topic_ids[s] if s >= 0 else "unassigned" for s in self.item_skill.tolist()]
        bounds = np.flatnonzero(np.r_[self.first, True])
        for start, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            user = self.catalog_learner_ids[int(self.learner[start])]
            yield (
                user,
                [
                    {
                        "type": "attempt",
                        "item_id": item_ids[i],
                        "catalog_id": catalog_id,
                        "topic_id": topic_of[i],
                        "timestamp": format_timestamp(datetime.fromtimestamp(t, UTC)),
                        "score": c,
                    }
                    for i, t, c in zip(
                        self.item[start:stop].tolist(),
                        self.time[start:stop].tolist(),
                        self.correct[start:stop].tolist(),
                    )
                ],
            )


def _contiguous(learner: IntArray) -> bool:
    """Each value occupies one run."""
    starts = learner[np.r_[True, learner[1:] != learner[:-1]]]
    return bool(np.unique(starts).size == starts.size)


def align(*logs: ResponseLog) -> tuple[ResponseLog, ...]:
    """The logs on one vocabulary of learners, items and skills (the union, by id, in
    order of first appearance), so that a model fitted on one reads the others.

    An item's skills are the union of its skills in every log.
    """
    learner_index: dict[str, int] = {}
    item_index: dict[str, int] = {}
    skill_index: dict[str, int] = {}
    item_skills: dict[int, list[int]] = {}
    for log in logs:
        for name in log.learner_ids:
            learner_index.setdefault(name, len(learner_index))
        skill_map = [skill_index.setdefault(s, len(skill_index)) for s in log.skill_ids]
        for i, name in enumerate(log.item_ids):
            at = item_index.setdefault(name, len(item_index))
            known = item_skills.setdefault(at, [])
            for s in log.skill_idx[log.skill_ptr[i] : log.skill_ptr[i + 1]].tolist():
                if skill_map[s] not in known:
                    known.append(skill_map[s])
    ptr = np.zeros(len(item_index) + 1, dtype=np.intp)
    np.cumsum([len(item_skills[i]) for i in range(len(item_index))], out=ptr[1:])
    idx = np.asarray([s for i in range(len(item_index)) for s in item_skills[i]], dtype=np.intp)
    out = []
    for log in logs:
        learners = np.asarray([learner_index[n] for n in log.learner_ids], dtype=np.intp)
        items = np.asarray([item_index[n] for n in log.item_ids], dtype=np.intp)
        out.append(
            replace(
                log,
                learner=learners[log.learner] if log.n_responses else log.learner,
                item=items[log.item] if log.n_responses else log.item,
                learner_ids=tuple(learner_index),
                item_ids=tuple(item_index),
                skill_ids=tuple(skill_index),
                skill_ptr=ptr,
                skill_idx=idx,
            )
        )
    return tuple(out)

"""A compiled catalog with its learner model: what the repository gives the learners and sessions.

The learner model is built from the compiled catalog, the catalog's stored
calibration and its learner options; the fingerprint tells a learner state made
under one model from a state made under another.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from learnloop.content import CatalogIndex
from learnloop.events import Interaction
from learnloop.recommend.view import catalog_topics
from learnloop.tracing import Event, ItemParams, LearnerModel
from learnloop.tracing.retention import Forgetting

__all__ = ["CatalogModel", "cold_items"]

_T = TypeVar("_T")


def cold_items(index: CatalogIndex) -> ItemParams:
    """The catalog's items with their cold-start difficulties (made once per compiled catalog, read-only:
    every model of the catalog shares them)."""
    return index.derived("catalog_model.cold_items", _cold_items)


def _cold_items(index: CatalogIndex) -> ItemParams:
    """The catalog's items with their cold-start difficulties (made once per compiled catalog, read-only:
    every model of the catalog shares them)."""
    items = ItemParams.from_catalog(
        item_topic=index.item_topic, difficulty=index.difficulty, scorable=index.scorable, is_theory=index.is_theory
    )
    for array in (items.topic, items.b, items.a, items.scorable, items.is_theory):
        array.flags.writeable = False
    return items


def _catalog_digest(index: CatalogIndex) -> Any:
    """The fingerprint's hash over the catalog's structure (made once per compiled catalog; each model
    adds its items' parameters and options to a copy)."""
    digest = hashlib.blake2b(digest_size=12)
    digest.update("\x1f".join(index.topic_ids).encode())
    digest.update("\x1f".join(index.item_ids).encode())
    for arr in (index.topic_parent, index.prerequisite_edges, index.item_topic):
        digest.update(np.ascontiguousarray(arr).tobytes())
    return digest


@dataclass(frozen=True, eq=False)
class CatalogModel:
    """A compiled catalog with its learner model and a fingerprint of both."""

    index: CatalogIndex
    model: LearnerModel
    fingerprint: str
    #: review's threshold: an item met is due when its predicted recall is below it
    desired_retention: float = 0.9
    #: the forgetting term stored with the catalog's settings (``Engine.fit``), None without one: the
    #: model's memory runs on its clock, and predictions at a time carry it (:meth:`Learners.recalled`)
    forgetting: Forgetting | None = None
    _derived: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def build(
        cls,
        index: CatalogIndex,
        *,
        calibration: Mapping[str, Mapping[str, float]] | None = None,
        item_arrays: tuple[np.ndarray, np.ndarray] | None = None,
        desired_retention: float = 0.9,
        forgetting: Forgetting | None = None,
        **model_options: Any,
    ) -> CatalogModel:
        """``calibration`` maps item ids to calibrated ``{"b": ..., "a": ...}``;
        items without one keep their cold-start difficulty. ``item_arrays``: instead, the ``b``
        and ``a`` of every catalog position, as arrays (what a fit over many settings passes, so
        that no setting pays a lookup per item). ``desired_retention`` is kept
        beside the model (it is not part of the fingerprint: learner states do not depend on it),
        and so is ``forgetting`` (its clock enters the fingerprint as the ``memory_model`` option)."""
        topics = catalog_topics(index)
        items = cold_items(index)
        if item_arrays is not None:
            b, a = item_arrays
            if b.shape != items.b.shape or a.shape != items.a.shape:
                raise ValueError(f"item_arrays must hold {items.b.size} values each")
            items = items.with_calibration(b, a)
        elif calibration:
            b = items.b.copy()
            a = items.a.copy()
            # one gather and one write for all the items (a write per item costs as much as the catalog)
            looked_up = [(index.item_positions.get(item_id), params) for item_id, params in calibration.items()]
            found = [(positions, params) for positions, params in looked_up if positions is not None]
            if found:
                counts = [positions.size for positions, _ in found]
                at = np.concatenate([positions for positions, _ in found])
                b[at] = np.repeat([params["b"] for _, params in found], counts)
                a[at] = np.repeat([params.get("a", 1.0) for _, params in found], counts)
            items = items.with_calibration(b, a)
        digest = index.derived("catalog_model.fingerprint", _catalog_digest).copy()
        for arr in (items.b, items.a):
            digest.update(np.ascontiguousarray(arr).tobytes())
        digest.update(repr(sorted(model_options.items())).encode())
        model = LearnerModel(topics, items, **model_options)
        return cls(index, model, digest.hexdigest(), desired_retention, forgetting)

    def derived(self, name: str, make: Callable[[CatalogModel], _T]) -> _T:
        """A value derived from this catalog model, made once and kept with it (as
        :meth:`CatalogIndex.derived <learnloop.content.CatalogIndex.derived>` does for the index)."""
        found: _T | None = self._derived.get(name)
        if found is None:
            found = self._derived.setdefault(name, make(self))
        return found

    def to_event(self, interaction: Interaction) -> Event | None:
        """The tracing event of a stored interaction (None when its item left the catalog)."""
        position = self.index.position(interaction.item_id, interaction.topic_id)
        if position is None:
            position = self.index.position(interaction.item_id)
            if position is None:
                return None
        return Event(
            item=position,
            kind=interaction.kind,
            timestamp=interaction.epoch,
            score=interaction.score,
            time_spent_ms=interaction.time_spent_ms or 0,
            fraction_completed=interaction.fraction_completed,
            practice=interaction.practice,
        )

"""The content repository: items, annotations, catalogs and their compiled forms.

Part of the :class:`~learnloop.engine.Engine` (which owns one and takes the
locks); every write validates first, then applies all of it in one store
transaction. Compiled catalogs, learner models and filter masks are cached
until the application's content version changes, and a compiled catalog is
kept when the writes since touched none of its items (see
:mod:`learnloop.engine.repository.changes`).
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel

from learnloop._lru import LRUCache
from learnloop._types import BoolArray
from learnloop._validation import parse
from learnloop.content import (
    Catalog,
    CatalogIndex,
    Filter,
    Item,
    ItemAnnotation,
    compile_catalog,
    compile_filter,
    validate_catalog,
)
from learnloop.engine import records
from learnloop.engine.options import LearnerOptions
from learnloop.engine.repository.catalog_model import CatalogModel
from learnloop.engine.repository.changes import logged, touched, untouched
from learnloop.errors import LimitExceededError, NotFoundError, ValidationError
from learnloop.limits import Limits
from learnloop.store import Store
from learnloop.tracing.echo import Echo
from learnloop.tracing.retention import Forgetting

__all__ = ["ContentRepository"]

DEFAULT_APP = "default"


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude_none=True)


def _filter_key(flt: Filter | None) -> str:
    return "" if flt is None else json.dumps(flt.model_dump(exclude_none=True), sort_keys=True)


#: filter keys remembered by the filter's identity (a filter is a frozen model: its key never changes)
_FILTER_KEYS = 1024
#: bytes of the compiled catalogs kept, and of their learner models (the catalogs used last are kept)
INDEX_CACHE_BYTES = 256 * 2**20
MODEL_CACHE_BYTES = 64 * 2**20
#: catalogs whose stored answer echo is kept
_ECHOES = 64


def _index_nbytes(index: CatalogIndex) -> int:
    """About the bytes a compiled catalog holds (measured: ~1 KB an item, ~2 KB a topic, its
    arrays, graphs and maps together)."""
    return 1000 * index.n_items + 2500 * len(index.topic_ids) + 4096


def _model_nbytes(index: CatalogIndex) -> int:
    """About the bytes of a catalog's learner model beside its compiled catalog."""
    return 150 * index.n_items + 800 * len(index.topic_ids) + 4096


class _Referred:
    """The item ids a catalog refers to: those of its compiled index, and those it refers to that
    the item database did not hold (usually none)."""

    __slots__ = ("_missing", "_positions")

    def __init__(self, index: CatalogIndex, ids: set[str]) -> None:
        self._positions = index.item_positions
        self._missing = frozenset(ids.difference(self._positions))

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._positions or item_id in self._missing


class ContentRepository:
    """Items, annotations and catalogs of every application in one store, with their caches."""

    def __init__(self, store: Store, limits: Limits, learner_options: LearnerOptions) -> None:
        self.store = store
        self.limits = limits
        self.learner_options = learner_options
        self._cache_lock = threading.Lock()  # taken to read and then write a cache entry (before the caches' own)
        # (app, catalog_id) -> (content version, compiled index, the items it refers to); the compiled
        # forms of the catalogs used last, within a bound in bytes (compiled again when next used; one
        # catalog larger than the bound is kept alone)
        self._indexes: LRUCache[tuple[str, str], tuple[int, CatalogIndex, _Referred]] = LRUCache(
            max_bytes=INDEX_CACHE_BYTES, sizeof=lambda entry: min(_index_nbytes(entry[1]), self._indexes.max_bytes or 0)
        )
        self._models: LRUCache[tuple[str, str], tuple[Any, int, CatalogModel]] = LRUCache(
            max_bytes=MODEL_CACHE_BYTES,
            sizeof=lambda entry: min(_model_nbytes(entry[2].index), self._models.max_bytes or 0),
        )
        self._masks: LRUCache[tuple[str, str, str, str], BoolArray] = LRUCache(max_items=1024)
        # id(filter) -> (the filter, its key in _masks)
        self._filter_keys: dict[int, tuple[Filter, str]] = {}
        # (app, catalog_id) -> (the catalog model it was read for, the stored answer echo and forgetting term or None)
        self._echoes: LRUCache[tuple[str, str], tuple[CatalogModel, Echo | None, Forgetting | None]] = LRUCache(
            max_items=_ECHOES
        )

    def clear_caches(self) -> None:
        """Drop every compiled form (after a rolled-back transaction)."""
        with self._cache_lock:
            self._indexes.clear()
            self._models.clear()
            self._masks.clear()
            self._echoes.clear()

    # -- content version: compiled catalogs are cached until content changes ---
    def version(self, app: str) -> int:
        return records.content_version(self.store, app)

    def bump_version(self, app: str, names: Iterable[str] | None = None) -> None:
        """A content write: the next content version, listed as touching ``names`` only (see
        :func:`~learnloop.engine.repository.changes.touched`; None: anything)."""
        version = self.version(app) + 1
        changed = logged(records.content_changes(self.store, app), version, names)
        records.put_content_version(self.store, app, version, changed)

    # -- items -------------------------------------------------------------------
    @staticmethod
    def _items(items: Iterable[Item | Mapping[str, Any]]) -> list[Item]:
        parsed = [parse(Item, item, where=f"items[{k}]") for k, item in enumerate(items)]
        counts: dict[str, int] = {}
        for item in parsed:
            counts[item.item_id] = counts.get(item.item_id, 0) + 1
        dups = [f"item '{k}' appears {n} times in one upload" for k, n in counts.items() if n > 1]
        if dups:
            raise ValidationError(dups)
        return parsed

    def upsert_items(self, items: Iterable[Item | Mapping[str, Any]], *, app: str = DEFAULT_APP) -> None:
        parsed = self._items(items)
        with self.store.atomic():
            # (the ids of one upload are distinct)
            new = len(parsed) - len(self._existing(app, [i.item_id for i in parsed]))
            total = records.count_items(self.store, app) + new
            if total > self.limits.max_items:
                raise LimitExceededError("items in the item database", total, self.limits.max_items)
            records.put_items(self.store, app, [(i.item_id, _dump(i)) for i in parsed])
            self.bump_version(app, touched(items=[i.item_id for i in parsed]))

    def replace_item_database(self, items: Iterable[Item | Mapping[str, Any]], *, app: str = DEFAULT_APP) -> None:
        parsed = self._items(items)
        if len(parsed) > self.limits.max_items:
            raise LimitExceededError("items in the item database", len(parsed), self.limits.max_items)
        keep = {i.item_id for i in parsed}
        with self.store.atomic():
            stale = [i for i in records.item_ids(self.store, app) if i not in keep]
            records.delete_items(self.store, app, stale)
            records.put_items(self.store, app, [(i.item_id, _dump(i)) for i in parsed])
            self.bump_version(app, touched(items=[*stale, *keep]))

    def delete_items(self, item_ids: Iterable[str], *, app: str = DEFAULT_APP) -> list[str]:
        with self.store.atomic():
            deleted = records.delete_items(self.store, app, dict.fromkeys(item_ids))
            if deleted:
                self.bump_version(app, touched(items=deleted))
        return deleted

    def _existing(self, app: str, item_ids: Iterable[str]) -> set[str]:
        """Which of ``item_ids`` the item database holds (read by key: the cost follows the ids
        asked about, not the size of the database)."""
        return set(records.items_by_id(self.store, app, item_ids))

    def item_database(self, *, app: str = DEFAULT_APP) -> list[Item]:
        return [Item.model_validate(doc) for _, doc in records.scan_items(self.store, app)]

    def get_items(self, item_ids: Iterable[str], *, app: str = DEFAULT_APP) -> dict[str, Item]:
        found = records.items_by_id(self.store, app, item_ids)
        return {item_id: Item.model_validate(doc) for item_id, doc in found.items()}

    # -- annotations --------------------------------------------------------------
    def upsert_annotations(
        self, annotations: Iterable[ItemAnnotation | Mapping[str, Any]], *, app: str = DEFAULT_APP
    ) -> None:
        parsed = [parse(ItemAnnotation, a, where=f"item_annotations[{k}]") for k, a in enumerate(annotations)]
        with self.store.atomic():
            records.put_annotations(self.store, app, [(a.item_id, _dump(a)) for a in parsed])

    def annotations(self, *, app: str = DEFAULT_APP) -> dict[str, ItemAnnotation]:
        return {k[0]: ItemAnnotation.model_validate(d) for k, d in records.scan_annotations(self.store, app)}

    # -- catalogs -----------------------------------------------------------------
    def upsert_catalog(self, catalog: Catalog | Mapping[str, Any], *, app: str = DEFAULT_APP) -> None:
        cat = parse(Catalog, catalog)
        limits = self.limits
        if len(cat.topics) > limits.max_topics_per_catalog:
            raise LimitExceededError(
                "topics per catalog", len(cat.topics), limits.max_topics_per_catalog, cat.catalog_id
            )
        if cat.item_ref_count > limits.max_topic_item_refs:
            raise LimitExceededError(
                "topic item refs per catalog", cat.item_ref_count, limits.max_topic_item_refs, cat.catalog_id
            )
        with self.store.atomic():
            known = self._existing(app, {ref.item_id for topic in cat.topics for ref in topic.item_refs or ()})
            problems = validate_catalog(cat, known)
            if problems:
                raise ValidationError([f"catalog '{cat.catalog_id}': {p}" for p in problems])
            exists = records.catalog(self.store, app, cat.catalog_id) is not None
            if not exists and records.count_catalogs(self.store, app) >= limits.max_catalogs:
                raise LimitExceededError("catalogs", records.count_catalogs(self.store, app) + 1, limits.max_catalogs)
            records.put_catalog(self.store, app, cat.catalog_id, _dump(cat))
            self.bump_version(app, touched(catalogs=[cat.catalog_id]))

    def catalog(self, catalog_id: str, *, app: str = DEFAULT_APP) -> Catalog:
        doc = records.catalog(self.store, app, catalog_id)
        if doc is None:
            raise NotFoundError("catalog", catalog_id)
        return Catalog.model_validate(doc)

    def catalog_ids(self, *, app: str = DEFAULT_APP) -> list[str]:
        return records.catalog_ids(self.store, app)

    def delete_catalog(self, catalog_id: str, *, app: str = DEFAULT_APP) -> None:
        with self.store.atomic():
            if not records.delete_catalog(self.store, app, catalog_id):
                raise NotFoundError("catalog", catalog_id)
            self.bump_version(app, touched(catalogs=[catalog_id]))

    def catalog_index(self, catalog_id: str, *, app: str = DEFAULT_APP) -> CatalogIndex:
        return self._index(catalog_id, app, self.version(app))

    def _index(self, catalog_id: str, app: str, version: int) -> CatalogIndex:
        """The compiled catalog as of content ``version`` (read by the caller, first)."""
        cached = self._indexes.get((app, catalog_id))
        if cached is not None and cached[0] == version:
            return cached[1]
        if cached is not None and cached[0] < version:
            changes = records.content_changes(self.store, app)
            if untouched(changes, cached[0], version, catalog_id, cached[2]):
                # the writes since touched neither the catalog nor its items: it is current
                index, referred = cached[1], cached[2]
                self._keep(app, catalog_id, version, index, referred)
                return index
        # compiled outside the lock: the version was read first, so the content is at least as new
        cat = self.catalog(catalog_id, app=app)
        ids = {ref.item_id for t in cat.topics for ref in t.item_refs or ()}
        index = compile_catalog(cat, self.get_items(ids, app=app))
        self._keep(app, catalog_id, version, index, _Referred(index, ids))
        return index

    def _keep(self, app: str, catalog_id: str, version: int, index: CatalogIndex, referred: _Referred) -> None:
        with self._cache_lock:
            current = self._indexes.get((app, catalog_id))
            if current is None or current[0] <= version:
                self._indexes.put((app, catalog_id), (version, index, referred))

    def filter_mask(
        self, catalog_id: str, flt: Filter | Mapping[str, Any] | None, *, app: str = DEFAULT_APP
    ) -> BoolArray:
        parsed = None if flt is None else parse(Filter, flt, where="filter")
        return compile_filter(self.catalog_index(catalog_id, app=app), parsed)

    def catalog_model(self, catalog_id: str, *, app: str = "default") -> CatalogModel:
        version = self.version(app)
        index = self._index(catalog_id, app, version)
        cached = self._models.get((app, catalog_id))
        if cached is not None and cached[0] is index:  # (a write touching the catalog compiles it again)
            return cached[2]
        stored = records.calibration(self.store, app, catalog_id)
        calibration = None if stored is None else stored["items"]
        rates = None if stored is None else stored.get("topics")  # per-topic learning rates and novelty
        learner_options = self.learner_options_for(catalog_id, app=app)
        options = learner_options.with_topic_rates(index.topic_ids, rates)
        forgotten = None if stored is None else stored.get("forgetting")  # Engine.fit's memory model
        term = None if forgotten is None else Forgetting.from_doc(forgotten, index.topic_ids)
        if term is not None:
            options["memory_model"] = term.memory_model()
        retention = learner_options.desired_retention
        model = CatalogModel.build(
            index, calibration=calibration, desired_retention=retention, forgetting=term, **options
        )
        self._models.put((app, catalog_id), (index, version, model))
        return model

    def trusted_model(self, catalog_id: str, *, app: str = "default") -> tuple[CatalogModel, int] | None:
        """The catalog's model as compiled in this process, and the content version it was last
        found current at, without reading the version again (None when none is cached). The
        caller checks that version inside the transaction that writes what it computed with it
        (``records.content_version_row``)."""
        indexed = self._indexes.get((app, catalog_id))
        cached = self._models.get((app, catalog_id))
        if indexed is None or cached is None or cached[0] is not indexed[1]:
            return None
        return cached[2], indexed[0]

    def echo_for(self, catalog_id: str, *, app: str = "default") -> tuple[CatalogModel, Echo | None]:
        """The catalog's model and the answer echo stored with its calibration
        (``Engine.calibrate(..., echo=True)``), None without one."""
        model, echo, _ = self.terms_for(catalog_id, app=app)
        return model, echo

    def terms_for(
        self, catalog_id: str, *, app: str = "default"
    ) -> tuple[CatalogModel, Echo | None, Forgetting | None]:
        """The catalog's model and the prediction terms stored with its calibration: the answer echo
        (``Engine.calibrate(..., echo=True)``, ``Engine.fit``) and the forgetting term (``Engine.fit``),
        each None without one."""
        model = self.catalog_model(catalog_id, app=app)
        cached = self._echoes.get((app, catalog_id))
        if cached is not None and cached[0] is model:
            return cached
        found = records.calibration(self.store, app, catalog_id)
        stored = None if found is None else found.get("echo")
        echo = None if stored is None else Echo.from_doc(stored, model.index.topic_ids)
        term = model.forgetting  # (read with the model's settings, from the same document)
        self._echoes.put((app, catalog_id), (model, echo, term))
        return model, echo, term

    def learner_options_for(self, catalog_id: str, *, app: str = DEFAULT_APP) -> LearnerOptions:
        """The engine's learner options with the catalog's stored settings applied."""
        stored = records.learner_options(self.store, app, catalog_id)
        if stored is None:
            return self.learner_options
        return dataclasses.replace(self.learner_options, **stored)

    def set_learner_options(
        self, catalog_id: str, options: LearnerOptions | Mapping[str, Any] | None, *, app: str = DEFAULT_APP
    ) -> None:
        if options is None:
            with self.store.atomic():
                records.delete_learner_options(self.store, app, catalog_id)
                self.bump_version(app, touched(catalogs=[catalog_id]))
            return
        parsed = LearnerOptions.of(options)
        if parsed.memory_model is not None:
            raise ValidationError("a memory_model is set on the engine, not stored with a catalog")
        stored = {f.name: getattr(parsed, f.name) for f in dataclasses.fields(parsed) if f.name != "memory_model"}
        if stored["prerequisite_gating"] is None:  # not fitted: stored as before the setting existed
            del stored["prerequisite_gating"]
        try:
            CatalogModel.build(self.catalog_index(catalog_id, app=app), **parsed.as_kwargs())
        except ValueError as exc:  # the learner model's own checks (ranges, combinations)
            raise ValidationError(f"learner options: {exc}") from None
        with self.store.atomic():
            records.put_learner_options(self.store, app, catalog_id, stored)
            self.bump_version(app, touched(catalogs=[catalog_id]))

    def put_fit(
        self, catalog_id: str, options: LearnerOptions, calibration: Mapping[str, Any], *, app: str = DEFAULT_APP
    ) -> None:
        """Store a fitted catalog's learner options and calibration (items, per-topic rates, answer echo,
        forgetting term) in one transaction: every process on the store moves to them at once."""
        stored = {f.name: getattr(options, f.name) for f in dataclasses.fields(options) if f.name != "memory_model"}
        with self.store.atomic():
            records.put_learner_options(self.store, app, catalog_id, stored)
            records.put_calibration(self.store, app, catalog_id, dict(calibration))
            self.bump_version(app, touched(catalogs=[catalog_id]))

    def _filter_key(self, flt: Filter | None) -> str:
        """:func:`_filter_key`, remembered for the filter object (a session passes the same one each step)."""
        if flt is None:
            return ""
        found = self._filter_keys.get(id(flt))
        if found is None or found[0] is not flt:
            found = (flt, _filter_key(flt))
            if len(self._filter_keys) >= _FILTER_KEYS:
                self._filter_keys.clear()
            self._filter_keys[id(flt)] = found
        return found[1]

    def mask(self, app: str, model: CatalogModel, flt: Filter | None) -> BoolArray:
        key = (app, model.index.catalog_id, model.fingerprint, self._filter_key(flt))
        mask = self._masks.get(key)
        if mask is None:
            mask = compile_filter(model.index, flt)
            mask.setflags(write=False)
            self._masks.put(key, mask)
        return mask

    # -- documents: what a façade keeps beside the content, by namespace -----------------------
    @staticmethod
    def _namespace(namespace: str) -> str:
        if not isinstance(namespace, str) or not namespace:
            raise ValidationError(f"a document namespace is a non-empty string, got {namespace!r}")
        return namespace

    def documents(self, namespace: str, ids: Iterable[str], *, app: str = DEFAULT_APP) -> dict[str, dict[str, Any]]:
        ns = self._namespace(namespace)
        return records.documents(self.store, app, ns, ids)

    def scan_documents(
        self, namespace: str, *, app: str = DEFAULT_APP, order: Literal["key", "seq"] = "key"
    ) -> list[tuple[str, dict[str, Any]]]:
        ns = self._namespace(namespace)
        return records.scan_documents(self.store, app, ns, order)

    def put_documents(
        self, namespace: str, documents: Iterable[tuple[str, Mapping[str, Any]]], *, app: str = DEFAULT_APP
    ) -> None:
        ns = self._namespace(namespace)
        records.put_documents(self.store, app, ns, documents)

    def delete_documents(self, namespace: str, ids: Iterable[str], *, app: str = DEFAULT_APP) -> list[str]:
        ns = self._namespace(namespace)
        return records.delete_documents(self.store, app, ns, ids)

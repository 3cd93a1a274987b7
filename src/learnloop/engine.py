"""The :class:`Engine`: learnloop's one core, with a typed Python API.

The façades (:mod:`learnloop.api`) translate HTTP contracts onto these
methods; notebooks and services may call them directly. Every method takes
the owning application as ``app`` (one application never sees another's
data); every write validates everything first and then applies all of it in
one store transaction, or nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from os import PathLike
from typing import Any, Literal


from learnloop._learning import LearningMixin
from learnloop._locks import Gate, LearnerLocks, shared
from learnloop._types import BoolArray, Clock
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
from learnloop.errors import LimitExceededError, NotFoundError, ValidationError
from learnloop.limits import Limits
from learnloop.recommend import Policy
from learnloop.store import MemoryStore, SQLiteStore, Store

__all__ = ["Engine"]

DEFAULT_APP = "default"


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _dump(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude_none=True)


class Engine(LearningMixin):
    """An adaptive learning engine over one store.

    >>> engine = Engine(seed=7)
    >>> engine.upsert_items([{"item_id": "q1", "display_name": "Q1", "scorable": True}])
    >>> engine.upsert_catalog({"catalog_id": "c", "display_name": "C",
    ...     "topics": [{"topic_id": "t", "display_name": "T", "item_refs": [{"item_id": "q1"}]}]})
    >>> engine.catalog_ids()
    ['c']
    """

    def __init__(
        self,
        *,
        seed: int | None = None,
        clock: Clock | None = None,
        store: Store | None = None,
        limits: Limits | None = None,
        secret: bytes | None = None,
        policies: Mapping[str, Policy] | None = None,
        learner_options: Mapping[str, Any] | None = None,
        learner_cache_bytes: int | None = None,
    ) -> None:
        self.seed = seed
        self.clock: Clock = clock or _utc_now
        self.store: Store = store if store is not None else MemoryStore()
        self.limits = limits or Limits()
        self._gate = Gate()
        self._learner_locks = LearnerLocks()
        self._cache_lock = threading.Lock()  # a leaf: guards the content caches only
        # (app, catalog_id) -> (content version, compiled index)
        self._indexes: dict[tuple[str, str], tuple[int, CatalogIndex]] = {}
        self._init_learning(secret, policies, learner_options, learner_cache_bytes)

    @classmethod
    def open(
        cls,
        path: str | PathLike[str],
        *,
        seed: int | None = None,
        clock: Clock | None = None,
        limits: Limits | None = None,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        secret: bytes | None = None,
        policies: Mapping[str, Policy] | None = None,
        learner_options: Mapping[str, Any] | None = None,
        learner_cache_bytes: int | None = None,
    ) -> Engine:
        """An engine on the SQLite file at ``path`` (created when absent).

        Contexts stay valid across restarts: without ``secret``, the signing
        secret is generated once and kept in the file.
        """
        return cls(
            seed=seed,
            clock=clock,
            store=SQLiteStore(path, synchronous=synchronous),
            limits=limits,
            secret=secret,
            policies=policies,
            learner_options=learner_options,
            learner_cache_bytes=learner_cache_bytes,
        )

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """Group several engine calls into one transaction: all of their writes, or none.

        The block runs alone: other threads' engine calls wait until it ends
        (the engine's gate is held exclusively, then the store's transaction
        is opened), and it may call any engine method. When the block raises, the in-process caches (compiled catalogs,
        learner states) are dropped too, since they may reflect undone writes.

        >>> engine = Engine()
        >>> try:
        ...     with engine.atomic():
        ...         engine.upsert_items([{"item_id": "q1", "display_name": "Q1", "scorable": True}])
        ...         raise RuntimeError("undo")
        ... except RuntimeError:
        ...     pass
        >>> engine.item_database()
        []
        """
        with self._gate.exclusive():
            try:
                with self.store.atomic():
                    yield
            except BaseException:
                with self._cache_lock:
                    self._indexes.clear()
                    self._models.clear()
                self._tracker.forget()
                raise

    # -- content version: compiled catalogs are cached until content changes ---
    def _content_version(self, app: str) -> int:
        doc = self.store.get("meta", app, ("content_version",))
        return 0 if doc is None else int(doc["v"])  # type: ignore[index]

    def _bump_content_version(self, app: str) -> None:
        self.store.put_many("meta", app, [(("content_version",), {"v": self._content_version(app) + 1})])

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

    @shared
    def upsert_items(self, items: Iterable[Item | Mapping[str, Any]], *, app: str = DEFAULT_APP) -> None:
        """Insert or update items of ``app``'s item database (all or none)."""
        parsed = self._items(items)
        with self.store.atomic():
            existing = {k[0] for k in self.store.keys("items", app)}
            total = len(existing) + sum(1 for i in parsed if i.item_id not in existing)
            if total > self.limits.max_items:
                raise LimitExceededError("items in the item database", total, self.limits.max_items)
            self.store.put_many("items", app, [((i.item_id,), _dump(i)) for i in parsed])
            self._bump_content_version(app)

    @shared
    def replace_item_database(
        self, items: Iterable[Item | Mapping[str, Any]], *, app: str = DEFAULT_APP
    ) -> None:
        """Make ``app``'s item database exactly ``items``: items not included are removed."""
        parsed = self._items(items)
        if len(parsed) > self.limits.max_items:
            raise LimitExceededError("items in the item database", len(parsed), self.limits.max_items)
        keep = {i.item_id for i in parsed}
        with self.store.atomic():
            stale = [k for k in self.store.keys("items", app) if k[0] not in keep]
            self.store.delete_many("items", app, stale)
            self.store.put_many("items", app, [((i.item_id,), _dump(i)) for i in parsed])
            self._bump_content_version(app)

    @shared
    def delete_items(self, item_ids: Iterable[str], *, app: str = DEFAULT_APP) -> list[str]:
        """Delete items (absent ids are ignored); returns the ids actually deleted.

        Catalogs that still reference a deleted item keep the reference as
        stored, but the item leaves their item order: it is never recommended.
        """
        with self.store.atomic():
            deleted = self.store.delete_many("items", app, [(i,) for i in dict.fromkeys(item_ids)])
            if deleted:
                self._bump_content_version(app)
        return [k[0] for k in deleted]

    @shared
    def item_database(self, *, app: str = DEFAULT_APP) -> list[Item]:
        """Every item of ``app``, ordered by id."""
        return [Item.model_validate(doc) for _, doc in self.store.scan("items", app)]

    @shared
    def get_items(self, item_ids: Iterable[str], *, app: str = DEFAULT_APP) -> dict[str, Item]:
        found = self.store.get_many("items", app, [(i,) for i in item_ids])
        return {k[0]: Item.model_validate(doc) for k, doc in found.items()}

    # -- annotations --------------------------------------------------------------
    @shared
    def upsert_annotations(
        self, annotations: Iterable[ItemAnnotation | Mapping[str, Any]], *, app: str = DEFAULT_APP
    ) -> None:
        """Store item annotations (kept apart from the items, used offline only)."""
        parsed = [parse(ItemAnnotation, a, where=f"item_annotations[{k}]") for k, a in enumerate(annotations)]
        with self.store.atomic():
            self.store.put_many("annotations", app, [((a.item_id,), _dump(a)) for a in parsed])

    @shared
    def annotations(self, *, app: str = DEFAULT_APP) -> dict[str, ItemAnnotation]:
        return {k[0]: ItemAnnotation.model_validate(d) for k, d in self.store.scan("annotations", app)}

    # -- catalogs -----------------------------------------------------------------
    @shared
    def upsert_catalog(self, catalog: Catalog | Mapping[str, Any], *, app: str = DEFAULT_APP) -> None:
        """Create or replace a catalog after checking every rule (all problems reported at once)."""
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
            known = {k[0] for k in self.store.keys("items", app)}
            problems = validate_catalog(cat, known)
            if problems:
                raise ValidationError([f"catalog '{cat.catalog_id}': {p}" for p in problems])
            exists = self.store.get("catalogs", app, (cat.catalog_id,)) is not None
            if not exists and self.store.count("catalogs", app) >= limits.max_catalogs:
                raise LimitExceededError("catalogs", self.store.count("catalogs", app) + 1, limits.max_catalogs)
            self.store.put_many("catalogs", app, [((cat.catalog_id,), _dump(cat))])
            self._bump_content_version(app)

    @shared
    def catalog(self, catalog_id: str, *, app: str = DEFAULT_APP) -> Catalog:
        doc = self.store.get("catalogs", app, (catalog_id,))
        if doc is None:
            raise NotFoundError("catalog", catalog_id)
        return Catalog.model_validate(doc)

    @shared
    def catalog_ids(self, *, app: str = DEFAULT_APP) -> list[str]:
        return [k[0] for k in self.store.keys("catalogs", app)]

    @shared
    def delete_catalog(self, catalog_id: str, *, app: str = DEFAULT_APP) -> None:
        with self.store.atomic():
            if not self.store.delete_many("catalogs", app, [(catalog_id,)]):
                raise NotFoundError("catalog", catalog_id)
            self._bump_content_version(app)

    @shared
    def catalog_index(self, catalog_id: str, *, app: str = DEFAULT_APP) -> CatalogIndex:
        """The compiled catalog (cached until ``app``'s content changes)."""
        version = self._content_version(app)
        with self._cache_lock:
            cached = self._indexes.get((app, catalog_id))
        if cached is not None and cached[0] == version:
            return cached[1]
        # compiled outside the lock: the version was read first, so the content is at least as new
        cat = self.catalog(catalog_id, app=app)
        ids = {ref.item_id for t in cat.topics for ref in t.item_refs or ()}
        index = compile_catalog(cat, self.get_items(ids, app=app))
        with self._cache_lock:
            current = self._indexes.get((app, catalog_id))
            if current is None or current[0] <= version:
                self._indexes[(app, catalog_id)] = (version, index)
        return index

    @shared
    def filter_mask(
        self, catalog_id: str, flt: Filter | Mapping[str, Any] | None, *, app: str = DEFAULT_APP
    ) -> BoolArray:
        """The boolean mask of a filter over the catalog's item order."""
        parsed = None if flt is None else parse(Filter, flt, where="filter")
        return compile_filter(self.catalog_index(catalog_id, app=app), parsed)

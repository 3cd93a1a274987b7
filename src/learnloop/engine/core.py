"""The :class:`Engine`: learnloop's one core, with a typed Python API.

The façades (:mod:`learnloop.api`) translate HTTP contracts onto these
methods; notebooks and services may call them directly. Every method takes
the owning application as ``app`` (one application never sees another's
data); every write validates everything first and then applies all of it in
one store transaction, or nothing.

It owns three parts and runs their calls inside its gate (:mod:`learnloop.engine.locks`):
the content repository (items, catalogs, compiled forms), the learners (events,
states, status, calibration) and the sessions (signed contexts, the adaptive step).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from os import PathLike
from typing import Any, Literal, Unpack

from learnloop._types import BoolArray, Clock
from learnloop.content import Catalog, CatalogIndex, Filter, Item, ItemAnnotation
from learnloop.engine.fitting.calibration import Calibration
from learnloop.engine.fitting.fitting import FitOptions, FitResult, Fitting
from learnloop.engine.learners.batch import ContextEvents, PlainEvents
from learnloop.engine.learners.learners import Learners
from learnloop.engine.learners.tracker import DEFAULT_CACHE_BYTES
from learnloop.engine.locks import Gate, shared
from learnloop.engine.options import LearnerOptions
from learnloop.engine.records import open_store
from learnloop.engine.repository.catalog_model import CatalogModel
from learnloop.engine.repository.repository import DEFAULT_APP, ContentRepository
from learnloop.engine.sessions.sessions import Sessions
from learnloop.limits import Limits
from learnloop.recommend import (
    AdaptiveStep,
    DueItem,
    LearnerView,
    Policy,
    SessionSpec,
    SessionState,
    Suggestion,
    UserStatus,
    policy_for,
)
from learnloop.store import MemoryStore, Store
from learnloop.tracing import Status

__all__ = ["Engine"]


def _utc_now() -> datetime:
    return datetime.now(UTC)


class Engine:
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
        learner_options: LearnerOptions | Mapping[str, Any] | None = None,
        learner_cache_bytes: int | None = None,
    ) -> None:
        self.seed = seed
        self.store: Store = store if store is not None else MemoryStore()
        self.limits = limits or Limits()
        self.learner_options = LearnerOptions.of(learner_options)
        self.policies: dict[str, Policy] = {m: policy_for(m) for m in ("learn", "review", "assess")}
        if policies:
            self.policies.update(policies)
        self._gate = Gate()
        clock = clock or _utc_now
        cache_bytes = DEFAULT_CACHE_BYTES if learner_cache_bytes is None else learner_cache_bytes
        self._content = ContentRepository(self.store, self.limits, self.learner_options)
        self._learners = Learners(self.store, self._content, self.limits, clock, cache_bytes=cache_bytes)
        self._calibration = Calibration(self.store, self._content)
        self._fitting = Fitting(self.store, self._content)
        self._sessions = Sessions(
            self.store,
            self._content,
            self._learners,
            self.limits,
            clock,
            seed=seed,
            secret=secret,
            policies=self.policies,
        )
        self.clock = clock

    @property
    def clock(self) -> Clock:
        """The engine's clock (session durations, recall); may be replaced at any time."""
        return self._clock

    @clock.setter
    def clock(self, clock: Clock) -> None:
        self._clock = clock
        self._learners.clock = clock
        self._sessions.clock = clock

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
        learner_options: LearnerOptions | Mapping[str, Any] | None = None,
        learner_cache_bytes: int | None = None,
    ) -> Engine:
        """An engine on the SQLite file at ``path`` (created when absent; also
        written as a URL, ``sqlite:///relative/path.db`` or
        ``sqlite:////absolute/path.db``), or on the PostgreSQL database at a
        ``postgresql://`` (or ``postgres://``) URL, which needs the ``postgres``
        extra; its tables are created on first use.

        Contexts stay valid across restarts: without ``secret``, the signing
        secret is generated once and kept in the store.
        """
        store = open_store(path, synchronous)
        return cls(
            seed=seed,
            clock=clock,
            store=store,
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

        The block runs alone (the gate held exclusively, then the store's transaction opened) and may
        call any engine method; when it raises, the caches that may reflect undone writes are dropped.

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
                self._content.clear_caches()
                self._learners.forget()
                raise

    def learner_cache_nbytes(self) -> int:
        """Bytes held by the in-process cache of learner states (bounded by ``learner_cache_bytes``)."""
        return self._learners.learner_cache_nbytes()

    # -- content ------------------------------------------------------------------
    @shared
    def upsert_items(self, items: Iterable[Item | Mapping[str, Any]], *, app: str = DEFAULT_APP) -> None:
        """Insert or update items of ``app``'s item database (all or none)."""
        return self._content.upsert_items(items, app=app)

    @shared
    def replace_item_database(self, items: Iterable[Item | Mapping[str, Any]], *, app: str = DEFAULT_APP) -> None:
        """Make ``app``'s item database exactly ``items``: items not included are removed."""
        return self._content.replace_item_database(items, app=app)

    @shared
    def delete_items(self, item_ids: Iterable[str], *, app: str = DEFAULT_APP) -> list[str]:
        """Delete items (absent ids are ignored); returns the ids actually deleted.

        Catalogs that still reference a deleted item keep the reference as
        stored, but the item leaves their item order: it is never recommended.
        """
        return self._content.delete_items(item_ids, app=app)

    @shared
    def item_database(self, *, app: str = DEFAULT_APP) -> list[Item]:
        """Every item of ``app``, ordered by id."""
        return self._content.item_database(app=app)

    @shared
    def get_items(self, item_ids: Iterable[str], *, app: str = DEFAULT_APP) -> dict[str, Item]:
        return self._content.get_items(item_ids, app=app)

    @shared
    def upsert_annotations(
        self, annotations: Iterable[ItemAnnotation | Mapping[str, Any]], *, app: str = DEFAULT_APP
    ) -> None:
        """Store item annotations (kept apart from the items, used offline only)."""
        return self._content.upsert_annotations(annotations, app=app)

    @shared
    def annotations(self, *, app: str = DEFAULT_APP) -> dict[str, ItemAnnotation]:
        return self._content.annotations(app=app)

    @shared
    def upsert_catalog(self, catalog: Catalog | Mapping[str, Any], *, app: str = DEFAULT_APP) -> None:
        """Create or replace a catalog after checking every rule (all problems reported at once)."""
        return self._content.upsert_catalog(catalog, app=app)

    @shared
    def catalog(self, catalog_id: str, *, app: str = DEFAULT_APP) -> Catalog:
        return self._content.catalog(catalog_id, app=app)

    @shared
    def catalog_ids(self, *, app: str = DEFAULT_APP) -> list[str]:
        return self._content.catalog_ids(app=app)

    @shared
    def delete_catalog(self, catalog_id: str, *, app: str = DEFAULT_APP) -> None:
        return self._content.delete_catalog(catalog_id, app=app)

    @shared
    def catalog_index(self, catalog_id: str, *, app: str = DEFAULT_APP) -> CatalogIndex:
        """The compiled catalog (cached until ``app``'s content changes)."""
        return self._content.catalog_index(catalog_id, app=app)

    @shared
    def filter_mask(
        self, catalog_id: str, flt: Filter | Mapping[str, Any] | None, *, app: str = DEFAULT_APP
    ) -> BoolArray:
        """The boolean mask of a filter over the catalog's item order."""
        return self._content.filter_mask(catalog_id, flt, app=app)

    @shared
    def catalog_model(self, catalog_id: str, *, app: str = "default") -> CatalogModel:
        """The compiled catalog with its learner model (cached until content changes)."""
        return self._content.catalog_model(catalog_id, app=app)

    @shared
    def documents(self, namespace: str, ids: Iterable[str], *, app: str = DEFAULT_APP) -> dict[str, dict[str, Any]]:
        """The stored documents of ``namespace`` among ``ids`` (absent ones left out), by id.

        Documents are what a façade keeps beside the content (the v1 façade keeps
        its asset, view and user documents in the namespaces ``v1.assets``,
        ``v1.views`` and ``v1.users``); they are written in the caller's
        transaction (``engine.atomic()``) with the content they describe.
        """
        return self._content.documents(namespace, ids, app=app)

    @shared
    def scan_documents(
        self, namespace: str, *, app: str = DEFAULT_APP, order: Literal["key", "seq"] = "key"
    ) -> list[tuple[str, dict[str, Any]]]:
        """Every document of ``namespace`` as ``(id, document)``, by id or by last write (``order="seq"``)."""
        return self._content.scan_documents(namespace, app=app, order=order)

    @shared
    def put_documents(
        self, namespace: str, documents: Iterable[tuple[str, Mapping[str, Any]]], *, app: str = DEFAULT_APP
    ) -> None:
        """Store ``(id, document)`` pairs in ``namespace`` (JSON-able mappings), all or none."""
        return self._content.put_documents(namespace, documents, app=app)

    @shared
    def delete_documents(self, namespace: str, ids: Iterable[str], *, app: str = DEFAULT_APP) -> list[str]:
        """Delete documents of ``namespace``; returns the ids that existed."""
        return self._content.delete_documents(namespace, ids, app=app)

    # -- learners -----------------------------------------------------------------
    @shared
    def upsert_events(
        self, user_id: str, events: PlainEvents, *, app: str = "default", strict_kinds: bool = False
    ) -> int:
        """Store events outside a session (all or none); returns how many were new.

        ``strict_kinds`` (the v2 façade's call) refuses an event whose type does not fit its
        item: an ``attempt`` on non-scorable theory, a ``view_theory`` on a scorable exercise.
        """
        return self._learners.upsert_events(user_id, events, app=app, strict_kinds=strict_kinds)

    @shared
    def user_status(
        self: Engine,
        user_id: str,
        catalog_id: str,
        filters: Sequence[Filter | Mapping[str, Any] | None],
        *,
        app: str = "default",
    ) -> list[UserStatus]:
        """The v2 status of a learner over each filter, in the order given."""
        return self._learners.user_status(user_id, catalog_id, filters, app=app)

    @shared
    def status_v1(
        self, user_id: str, catalog_id: str, masks: Sequence[BoolArray], *, app: str = "default"
    ) -> list[Status]:
        """The learner's status over each boolean mask of the catalog's item order.

        Every figure of :class:`~learnloop.tracing.Status`, for the v1 dialect
        (``skill_level``, ``display_skill``, ``progress``). ``display_skill`` is
        not smoothed with an earlier value: it is ``skill_level * sqrt(progress)``,
        so that reading a status never changes it.
        """
        return self._learners.status_v1(user_id, catalog_id, masks, app=app)

    @shared
    def known_events(
        self, keys: Iterable[tuple[str, str, str, str]], *, app: str = "default"
    ) -> set[tuple[str, str, str, str]]:
        """Which ``(user_id, catalog_id, item_id, timestamp)`` event keys are stored.

        Timestamps may be any ISO 8601 form; the keys returned carry the
        canonical one (:func:`~learnloop.events.format_timestamp`).
        """
        return self._learners.known_events(keys, app=app)

    @shared
    def ability(
        self, user_id: str, catalog_id: str, topic_id: str | None = None, *, app: str = "default"
    ) -> tuple[float, float]:
        """The posterior mean and standard deviation of a learner's ability (logits) on a
        topic, or overall when ``topic_id`` is None."""
        return self._learners.ability(user_id, catalog_id, topic_id, app=app)

    @shared
    def predict(
        self,
        user_id: str,
        catalog_id: str,
        item_ids: Sequence[str],
        *,
        topic_id: str | None = None,
        app: str = "default",
    ) -> dict[str, float]:
        """A learner's predicted P(correct) on each of ``item_ids`` now, by item id.

        Only the given items are computed (not the whole catalog). An item listed
        in several topics is predicted in ``topic_id`` when given, else in its
        first topic. A learner without events gets the model's prior, integrated over its
        uncertainty (docs/models.md, "Cold start"). Raises :class:`~learnloop.errors.ValidationError`
        naming every item not in the catalog (or topic), else every item that is not scorable,
        :class:`~learnloop.errors.NotFoundError` for an unknown catalog or topic. An answer echo
        stored by ``calibrate(..., echo=True)`` is applied from the latest event when it is an answer.
        """
        return self._learners.predict(user_id, catalog_id, item_ids, topic_id=topic_id, app=app)

    @shared
    def due(
        self, user_id: str, catalog_id: str, *, at: datetime | str | None = None, app: str = "default"
    ) -> list[DueItem]:
        """The items the learner has answered, with the predicted recall at ``at`` (None: now) and
        when each falls below the catalog's desired retention: the due ones first, lowest recall
        first (review mode's order), then the others soonest first (docs/sessions.md, "Review")."""
        return self._learners.due(user_id, catalog_id, at=at, app=app)

    @shared
    def learner_view(self, user_id: str, catalog_id: str, *, app: str = "default") -> LearnerView:
        """What the policies see of a learner now (for notebooks and tests)."""
        return self._learners.learner_view(user_id, catalog_id, app=app)

    @shared
    def event_log(self, catalog_id: str, *, app: str = "default") -> dict[str, list[Any]]:
        """The catalog's scored attempts as columns (``user_id``, ``item_id``, ``topic_id``,
        ``score``, ``timestamp`` in epoch seconds), by learner and then in time order
        (events at one instant in posting order): what a model is fitted on, e.g.
        ``learnloop.datasets.from_columns(engine.event_log(cid), learner="user_id",
        item="item_id", skill="topic_id", correct="score", time="timestamp")``."""
        return self._calibration.event_log(catalog_id, app=app)

    @shared
    def learner_options_for(self, catalog_id: str, *, app: str = "default") -> LearnerOptions:
        """The learner-model settings a catalog's sessions use: the engine's ``learner_options``
        with the catalog's stored settings (:meth:`set_learner_options`) applied."""
        return self._content.learner_options_for(catalog_id, app=app)

    @shared
    def set_learner_options(
        self, catalog_id: str, options: LearnerOptions | Mapping[str, Any] | None, *, app: str = "default"
    ) -> None:
        """Store learner-model settings for one catalog (e.g. chosen by
        :func:`learnloop.evaluate.fit_engine`); every later session, status and prediction on
        the catalog uses them, in every process on the store. ``None`` removes them."""
        self._content.set_learner_options(catalog_id, options, app=app)

    @shared
    def calibrate(
        self: Engine,
        catalog_id: str,
        *,
        model: str = "rasch",
        exclude_users: Iterable[str] = (),
        min_responses: int = 1,
        progress: bool = False,
        ability_sd: float | None = 1.0,
        refine: str | None = None,
        topic_rates: bool = False,
        echo: bool = False,
        app: str = "default",
    ) -> dict[str, dict[str, float]]:
        """Calibrate item difficulty (and discrimination, 2PL) from the event log and store it;
        returns ``{item_id: {"b": ..., "a": ..., "n": responses}}`` (the options: ``Calibration.calibrate``,
        ``docs/models.md``)."""
        return self._calibration.calibrate(
            catalog_id,
            model=model,
            exclude_users=exclude_users,
            min_responses=min_responses,
            progress=progress,
            ability_sd=ability_sd,
            refine=refine,
            topic_rates=topic_rates,
            echo=echo,
            app=app,
        )

    @shared
    def fit(self, catalog_id: str, **options: Unpack[FitOptions]) -> FitResult:
        """Fit the catalog's learner model to its own event log and store it if it predicts the
        held-out learners better than the settings in use (``docs/fitting.md``; the options and their
        defaults: :class:`FitOptions`). Safe while the engine serves; Ctrl-C or ``stop`` changes nothing."""
        return self._fitting.fit(catalog_id, **options)

    # -- sessions -----------------------------------------------------------------
    @shared
    def next_items(
        self: Engine,
        user_id: str,
        catalog_id: str,
        *,
        mode: str = "learn",
        filter: Filter | Mapping[str, Any] | None = None,
        mask: BoolArray | None = None,
        limit: int = 1,
        app: str = "default",
    ) -> list[Suggestion]:
        """A sequence of ``limit`` items for a learner outside a session.

        No item repeats while the filter has items not yet in the sequence, then it
        starts over (review: the items due, each once). ``mask`` (a boolean array
        over the catalog's item order) may replace ``filter``.
        """
        return self._sessions.next_items(user_id, catalog_id, mode=mode, filter=filter, mask=mask, limit=limit, app=app)

    @shared
    def create_session(self, spec: SessionSpec | Mapping[str, Any], *, app: str = "default") -> str:
        """Create an adaptive session; returns its opaque, signed ``session_context``."""
        return self._sessions.create_session(spec, app=app)

    @shared
    def session(self, session_context: str, *, app: str = "default") -> SessionState:
        """The stored state of the session a context names."""
        return self._sessions.session(session_context, app=app)

    @shared
    def adaptive_step(
        self, session_context: str, events: ContextEvents = (), *, app: str = "default", strict_kinds: bool = False
    ) -> AdaptiveStep:
        """Ingest the events, update the learner, recommend the next item, report the status.

        When no eligible item is left (the filter matches nothing, or the
        constraints exclude everything) the recommendation is ``None``. ``strict_kinds``: as in
        :meth:`upsert_events`.
        """
        return self._sessions.adaptive_step(session_context, events, app=app, strict_kinds=strict_kinds)

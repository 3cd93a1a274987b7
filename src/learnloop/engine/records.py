"""Every table and meta key the engine reads or writes, with their key layouts: the engine's vocabulary over a :class:`~learnloop.store.Store`.

The parts call these functions; no other module of the engine names a table or a
meta key. The store itself is generic (named tables of documents, see
:data:`learnloop.store.TABLES`); this module says which documents the engine keeps
where:

========================  ==========================================  ==========================
table                     key                                         document
========================  ==========================================  ==========================
``items``                 item id                                     an :class:`~learnloop.content.Item`
``annotations``           item id                                     an :class:`~learnloop.content.ItemAnnotation`
``catalogs``              catalog id                                  a :class:`~learnloop.content.Catalog`
``documents``             namespace, id                               a façade's own document
``events``                user, catalog, item, timestamp              an :class:`~learnloop.events.Interaction`
``learners``              user, catalog                               a learner's revision
``sessions``              user, session id (and ``<id>.<block>``)     a session (and its assessed items' blocks)
``sessions``              session id, ``""``                          ``{"user_id": user}``: the session's user
``meta``                  ``content_version``                         ``{"v": n}``
``meta``                  ``content_changes``                         what the last content writes touched
``meta``                  ``calibration:<catalog>``                   a catalog's calibration
``meta``                  ``learner_options:<catalog>``               a catalog's learner options
``meta`` (app ``""``)     ``context_secret``                          the context-signing secret
========================  ==========================================  ==========================
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Iterator, Mapping, Sequence
from os import PathLike
from typing import Any, Literal

from learnloop.store import SQLiteStore, Store
from learnloop.store.base import Doc, Key, json_doc

__all__ = [
    "CHANGES_KEY",
    "Learner",
    "Row",
    "block_key",
    "calibration",
    "catalog",
    "catalog_ids",
    "content_changes",
    "content_version",
    "content_version_row",
    "context_secret",
    "count_catalogs",
    "count_items",
    "delete_catalog",
    "delete_documents",
    "delete_items",
    "delete_learner_options",
    "documents",
    "event_docs",
    "event_fields",
    "event_fields_by_key",
    "events",
    "events_of",
    "item_ids",
    "items_by_id",
    "learner_options",
    "open_store",
    "put_annotations",
    "put_calibration",
    "put_catalog",
    "put_content_version",
    "put_documents",
    "put_events",
    "put_items",
    "put_learner_options",
    "put_revisions",
    "put_session",
    "revision",
    "revision_row",
    "revisions",
    "scan_annotations",
    "scan_documents",
    "scan_items",
    "session",
    "session_blocks",
    "session_row",
    "session_user",
]

Learner = tuple[str, str]
#: a row of a table: ``(table, application, key)``
Row = tuple[str, str, Key]
#: the key of the changes document in the ``meta`` table
CHANGES_KEY: Key = ("content_changes",)
_VERSION_KEY: Key = ("content_version",)
_SECRET_KEY: Key = ("context_secret",)


def open_store(path: str | PathLike[str], synchronous: Literal["NORMAL", "FULL"] = "NORMAL") -> Store:
    """The store at ``path``: a SQLite file (or ``sqlite:///`` URL), or a PostgreSQL database at a
    ``postgresql://`` (or ``postgres://``) URL (see :meth:`Engine.open <learnloop.engine.Engine.open>`)."""
    if isinstance(path, str) and path.startswith(("postgresql://", "postgres://")):
        if synchronous != "NORMAL":
            raise ValueError("synchronous= applies to SQLite files; PostgreSQL's durability is the server's")
        from learnloop.store.postgres import PostgresStore  # psycopg is an optional extra

        return PostgresStore(path)
    if isinstance(path, str) and path[:7].lower() == "sqlite:":
        if not path[7:].startswith("///") or len(path) < 11:
            raise ValueError(f"a SQLite URL is sqlite:///relative/path.db or sqlite:////absolute/path.db: {path!r}")
        return SQLiteStore(path[10:], synchronous=synchronous)
    return SQLiteStore(path, synchronous=synchronous)


# -- items, annotations, catalogs ------------------------------------------------------------
def scan_items(store: Store, app: str) -> Iterator[tuple[Key, Doc]]:
    """Every item document, by id."""
    return store.scan("items", app)


def items_by_id(store: Store, app: str, item_ids: Iterable[str]) -> dict[str, Doc]:
    """The stored item documents among ``item_ids`` (read by key), by id."""
    return {k[0]: doc for k, doc in store.get_many("items", app, [(i,) for i in item_ids]).items()}


def item_ids(store: Store, app: str) -> list[str]:
    return [k[0] for k in store.keys("items", app)]


def count_items(store: Store, app: str) -> int:
    return store.count("items", app)


def put_items(store: Store, app: str, docs: Iterable[tuple[str, Doc]]) -> None:
    store.put_many("items", app, [((item_id,), doc) for item_id, doc in docs])


def delete_items(store: Store, app: str, item_ids: Iterable[str]) -> list[str]:
    """Delete the items (absent ids ignored); the ids deleted."""
    return [k[0] for k in store.delete_many("items", app, [(i,) for i in item_ids])]


def scan_annotations(store: Store, app: str) -> Iterator[tuple[Key, Doc]]:
    return store.scan("annotations", app)


def put_annotations(store: Store, app: str, docs: Iterable[tuple[str, Doc]]) -> None:
    store.put_many("annotations", app, [((item_id,), doc) for item_id, doc in docs])


def catalog(store: Store, app: str, catalog_id: str) -> Doc | None:
    return store.get("catalogs", app, (catalog_id,))


def catalog_ids(store: Store, app: str) -> list[str]:
    return [k[0] for k in store.keys("catalogs", app)]


def count_catalogs(store: Store, app: str) -> int:
    return store.count("catalogs", app)


def put_catalog(store: Store, app: str, catalog_id: str, doc: Doc) -> None:
    store.put_many("catalogs", app, [((catalog_id,), doc)])


def delete_catalog(store: Store, app: str, catalog_id: str) -> bool:
    """Delete a catalog; whether it existed."""
    return bool(store.delete_many("catalogs", app, [(catalog_id,)]))


# -- a façade's documents, by namespace -------------------------------------------------------
def documents(store: Store, app: str, namespace: str, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    found = store.get_many("documents", app, [(namespace, i) for i in ids])
    return {k[1]: dict(json_doc(doc)) for k, doc in found.items()}


def scan_documents(
    store: Store, app: str, namespace: str, order: Literal["key", "seq"] = "key"
) -> list[tuple[str, dict[str, Any]]]:
    return [(k[1], dict(json_doc(doc))) for k, doc in store.scan("documents", app, (namespace,), order=order)]


def put_documents(store: Store, app: str, namespace: str, docs: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
    store.put_many("documents", app, [((namespace, i), doc) for i, doc in docs])


def delete_documents(store: Store, app: str, namespace: str, ids: Iterable[str]) -> list[str]:
    return [k[1] for k in store.delete_many("documents", app, [(namespace, i) for i in ids])]


# -- meta: the content version and what each content write touched ----------------------------
def content_version(store: Store, app: str) -> int:
    doc = store.get("meta", app, _VERSION_KEY)
    return 0 if doc is None else int(json_doc(doc)["v"])


def content_version_row(app: str) -> Row:
    """Where :func:`content_version` reads (for ``store.atomic(reads=...)``)."""
    return ("meta", app, _VERSION_KEY)


def content_changes(store: Store, app: str) -> Any:
    """The changes document (see :mod:`learnloop.engine.repository.changes`; None when absent)."""
    doc = store.get("meta", app, CHANGES_KEY)
    return None if doc is None else json_doc(doc)


def put_content_version(store: Store, app: str, version: int, changes: Doc) -> None:
    store.put_many("meta", app, [(_VERSION_KEY, {"v": version}), (CHANGES_KEY, changes)])


# -- meta: per catalog ------------------------------------------------------------------------
def calibration(store: Store, app: str, catalog_id: str) -> dict[str, Any] | None:
    """The catalog's stored calibration (``{"items", "model", "refine"}``, and ``"topics"``, ``"echo"``)."""
    doc = store.get("meta", app, (f"calibration:{catalog_id}",))
    return None if doc is None else dict(json_doc(doc))


def put_calibration(store: Store, app: str, catalog_id: str, doc: Doc) -> None:
    store.put_many("meta", app, [((f"calibration:{catalog_id}",), doc)])


def learner_options(store: Store, app: str, catalog_id: str) -> dict[str, Any] | None:
    """The catalog's stored learner options (overrides of the engine's), None when absent."""
    doc = store.get("meta", app, (f"learner_options:{catalog_id}",))
    return None if doc is None else dict(json_doc(doc)["options"])


def put_learner_options(store: Store, app: str, catalog_id: str, options: Mapping[str, Any]) -> None:
    store.put_many("meta", app, [((f"learner_options:{catalog_id}",), {"options": dict(options)})])


def delete_learner_options(store: Store, app: str, catalog_id: str) -> None:
    store.delete_many("meta", app, [(f"learner_options:{catalog_id}",)])


# -- meta: the context-signing secret, shared by every application ----------------------------
def context_secret(store: Store) -> bytes:
    """The store's context-signing secret, created once for every process on the store.

    Read, created when absent and read back in one transaction (an immediate one on
    SQLite), so two processes opening a fresh store at once end up with the same secret.
    """
    with store.atomic():
        doc = store.get("meta", "", _SECRET_KEY)
        if doc is None:
            store.put_many("meta", "", [(_SECRET_KEY, {"hex": secrets.token_hex(32)})])
            doc = store.get("meta", "", _SECRET_KEY)
    return bytes.fromhex(json_doc(doc)["hex"])


# -- events and learners' revisions -------------------------------------------------------------
def events(store: Store, app: str, order: Literal["key", "seq"] = "key") -> Iterator[tuple[Key, Doc]]:
    """Every stored event of ``app``, keyed ``(user, catalog, item, timestamp)``."""
    return store.scan("events", app, order=order)


def events_of(store: Store, app: str, learner: Learner, last_after: str | None = None) -> Iterator[tuple[Key, Doc]]:
    """A learner's stored events in write order (with ``last_after``: those later than that stamp)."""
    return store.scan("events", app, learner, order="seq", last_after=last_after)


def event_fields(
    store: Store, app: str, learner: Learner, last_after: str | None = None
) -> tuple[list[Key], dict[str, list[Any]]]:
    """:func:`events_of` as columns: the keys, and per field name each event's value (None where it
    has none), read at once by the stores that can (``scan_fields``), else document by document."""
    scan_fields = getattr(store, "scan_fields", None)
    if scan_fields is not None:
        found: tuple[list[Key], dict[str, list[Any]]] = scan_fields("events", app, learner, last_after=last_after)
        return found
    keys: list[Key] = []
    fields: dict[str, list[Any]] = {}
    for n, (key, doc) in enumerate(events_of(store, app, learner, last_after)):
        keys.append(key)
        for name, value in doc.items() if isinstance(doc, dict) else ():
            fields.setdefault(name, [None] * n).append(value)
        for column in fields.values():
            if len(column) == n:
                column.append(None)
    return keys, fields


def event_fields_by_key(
    store: Store, app: str, learner: Learner, names: Sequence[str], last_after: str | None = None
) -> tuple[dict[str, list[Any]], Any]:
    """The fields ``names``, ``item_id`` and ``timestamp`` of a learner's events: in key order with
    their sequence numbers (a numpy array: their write order) from the stores that read so at once
    (``event_fields``), else in write order with None (:func:`event_fields`)."""
    reader = getattr(store, "event_fields", None)
    found = None if reader is None else reader(app, learner, names, last_after=last_after)
    if found is not None:
        return found  # type: ignore[no-any-return]
    return event_fields(store, app, learner, last_after)[1], None


def event_docs(store: Store, app: str, keys: Iterable[Key]) -> dict[Key, Doc]:
    """The stored events among ``keys`` ``(user, catalog, item, timestamp)``."""
    return store.get_many("events", app, keys)


def put_events(store: Store, app: str, rows: Iterable[tuple[Key, Doc]]) -> None:
    store.put_many("events", app, rows)


def revision(store: Store, app: str, learner: Learner) -> Doc | None:
    """A learner's revision document (see :mod:`learnloop.engine.learners.revisions`)."""
    return store.get("learners", app, learner)


def revision_row(app: str, learner: Learner) -> Row:
    """Where :func:`revision` reads (for ``store.atomic(reads=...)``)."""
    return ("learners", app, learner)


def revisions(store: Store, app: str, learners: Iterable[Learner]) -> dict[Key, Doc]:
    return store.get_many("learners", app, learners)


def put_revisions(store: Store, app: str, docs: Iterable[tuple[Learner, Doc]]) -> None:
    store.put_many("learners", app, docs)


# -- sessions -----------------------------------------------------------------------------------
def block_key(user_id: str, session_id: str, block: int) -> Key:
    """The key of a block of a session's assessed items (see :mod:`learnloop.engine.sessions.documents`)."""
    return (user_id, f"{session_id}.{block}")


def session(store: Store, app: str, user_id: str, session_id: str) -> Doc | None:
    """A session document, keyed under its user (the learner's data travel together: Citus co-location)."""
    return store.get("sessions", app, (user_id, session_id))


def session_row(app: str, user_id: str, session_id: str) -> Row:
    """Where :func:`session` reads (for ``store.atomic(reads=...)``)."""
    return ("sessions", app, (user_id, session_id))


def session_user(store: Store, app: str, session_id: str) -> str | None:
    """The user of a session (a context names the session only): one read by key; None when
    the session is not stored."""
    doc = store.get("sessions", app, (session_id, ""))
    return None if doc is None else str(json_doc(doc)["user_id"])


def session_blocks(store: Store, app: str, keys: Iterable[Key]) -> dict[Key, Doc]:
    return store.get_many("sessions", app, keys)


def put_session(
    store: Store,
    app: str,
    user_id: str,
    session_id: str,
    doc: Doc,
    blocks: Iterable[tuple[Key, Doc]] = (),
    *,
    new: bool = False,
) -> None:
    """Write a session document with the block rows of its assessed items (in one call); a
    ``new`` session with the row naming its user."""
    rows: list[tuple[Key, Doc]] = [((user_id, session_id), doc), *blocks]
    if new:
        rows.append(((session_id, ""), {"user_id": user_id}))
    store.put_many("sessions", app, rows)

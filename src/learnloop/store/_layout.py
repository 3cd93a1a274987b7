"""The key layout of the ``sessions`` table, and the migration of stores written before it.

A session is keyed ``(user, session id)`` and the blocks of its assessed items
``(user, "<session id>.<block>")``, so that a learner's sessions share the first key part
(the distribution column on Citus) with their events and revisions; a row
``(session id, "")`` -> ``{"user_id": user}`` names each session's user, for a context
(which names the session only) to be resolved by one read by key. Stores written before
(schema version 1) keyed sessions by their id alone; :func:`rekeyed_sessions` gives their
rows in the new layout. The stores run it when they open, under their writers' lock, and
record the version in the ``meta`` table (application ``""``, key ``schema_version``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from learnloop.store.base import decode_doc, encode_doc

__all__ = ["SCHEMA_VERSION", "VERSION_KEY", "rekeyed_sessions", "version_doc"]

#: the layout this version writes
SCHEMA_VERSION = 2
#: the key of the layout's version in the ``meta`` table, application ``""``
VERSION_KEY = "schema_version"


def version_doc() -> bytes:
    return encode_doc({"v": SCHEMA_VERSION})


def rekeyed_sessions(rows: Iterable[tuple[str, str, bytes]]) -> list[tuple[str, str, str, bytes]]:
    """Rows ``(app, session key, encoded document)`` of a one-part-key ``sessions`` table as
    rows ``(app, k1, k2, encoded document)`` of the two-part layout: each session under its
    user, with the row ``(session id, "")`` that names its user, and each block under its
    session's user (a block whose session is gone goes under the user ``""``)."""
    users: dict[tuple[str, str], str] = {}
    sessions: list[tuple[str, str, bytes]] = []
    blocks: list[tuple[str, str, bytes]] = []
    for app, key, blob in rows:
        doc = decode_doc(blob)
        spec = doc.get("spec") if isinstance(doc, Mapping) else None
        user = spec.get("user_id") if isinstance(spec, Mapping) else None
        if isinstance(user, str):
            users[(app, key)] = user
            sessions.append((app, key, blob))
        else:
            blocks.append((app, key, blob))
    out: list[tuple[str, str, str, bytes]] = []
    for app, key, blob in sessions:
        user = users[(app, key)]
        out.append((app, user, key, blob))
        out.append((app, key, "", encode_doc({"user_id": user})))
    for app, key, blob in blocks:
        out.append((app, users.get((app, key.rpartition(".")[0]), ""), key, blob))
    return out

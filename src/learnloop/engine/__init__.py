"""The engine: :class:`Engine`, learnloop's one core, and the types of its public signatures.

Code outside this package imports this door only (an import contract checks it);
the parts behind it (``repository/``, ``learners/``, ``sessions/``) are the engine's own.
"""

from __future__ import annotations

from learnloop.engine.core import Engine
from learnloop.engine.learners.batch import ContextEvents, PlainEvents
from learnloop.engine.options import LearnerOptions
from learnloop.engine.repository.catalog_model import CatalogModel
from learnloop.recommend.results import DueItem

__all__ = ["CatalogModel", "ContextEvents", "DueItem", "Engine", "LearnerOptions", "PlainEvents"]

# the public classes say where they are imported from
for _class in (CatalogModel, Engine, LearnerOptions):
    _class.__module__ = "learnloop.engine"
del _class

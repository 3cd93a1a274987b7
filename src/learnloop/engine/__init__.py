"""The engine: :class:`Engine`, learnloop's one core, and the types of its public signatures.

Code outside this package imports this door only (an import contract checks it);
the parts behind it (``repository/``, ``learners/``, ``sessions/``) are the engine's own.
"""

from __future__ import annotations

from learnloop.engine.core import Engine
from learnloop.engine.fitting.fitting import FitOptions, FitRecipe, FitResult
from learnloop.engine.fitting.model import LogModel
from learnloop.engine.fitting.responses import EventColumns, Responses
from learnloop.engine.fitting.search import Search, search_options
from learnloop.engine.learners.batch import ContextEvents, PlainEvents
from learnloop.engine.options import LearnerOptions
from learnloop.engine.repository.catalog_model import CatalogModel
from learnloop.recommend.results import DueItem

__all__ = [
    "CatalogModel",
    "ContextEvents",
    "DueItem",
    "Engine",
    "EventColumns",
    "FitOptions",
    "FitRecipe",
    "FitResult",
    "LearnerOptions",
    "LogModel",
    "PlainEvents",
    "Responses",
    "Search",
    "search_options",
]

# the public classes say where they are imported from
for _class in (CatalogModel, Engine, EventColumns, FitRecipe, FitResult, LearnerOptions, LogModel, Search):
    _class.__module__ = "learnloop.engine"
del _class

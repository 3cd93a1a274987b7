"""The engine: :class:`Engine`, learnloop's one core, and the parts it is made of.

Code outside this package imports this door only; the parts (``repository``,
``learners``, ``sessions``) are the engine's own.
"""

from __future__ import annotations

from learnloop.engine.core import Engine

__all__ = ["Engine"]

Engine.__module__ = "learnloop.engine"

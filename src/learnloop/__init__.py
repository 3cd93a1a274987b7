"""learnloop: an embeddable, in-process adaptive learning engine."""

from __future__ import annotations

from learnloop.engine import Engine
from learnloop.limits import Limits

__version__ = "0.1.0"

__all__ = ["Engine", "Limits", "__version__"]

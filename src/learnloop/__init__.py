"""learnloop: an embeddable, in-process adaptive learning engine."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]

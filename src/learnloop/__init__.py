"""learnloop: an embeddable, in-process adaptive learning engine.

The package door is lazy: ``from learnloop import Engine`` loads the learning
core on first use, so ``import learnloop.voice`` (the pronunciation scorer)
loads neither the engine nor scipy.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["Engine", "Limits", "__version__"]

if TYPE_CHECKING:
    from learnloop.engine import Engine
    from learnloop.limits import Limits

_LAZY = {"Engine": "learnloop.engine", "Limits": "learnloop.limits"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'learnloop' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])

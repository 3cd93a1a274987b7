"""Lazy access to matplotlib, with an install hint when it is missing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["axes", "pyplot"]

HINT = "learnloop.plot needs matplotlib: pip install 'learnloop[plot]'"


def pyplot() -> Any:
    """``matplotlib.pyplot``, imported on first use."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(HINT) from exc
    return plt


def axes(ax: Axes | None, *, figsize: tuple[float, float]) -> Axes:
    """``ax``, or the axes of a new pyplot figure (so that notebooks show it)."""
    if ax is not None:
        return ax
    _, new = pyplot().subplots(figsize=figsize)
    return new  # type: ignore[no-any-return]

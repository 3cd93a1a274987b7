"""The calls a function makes, for tests that check how much work a call does rather than how long it takes."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any


def calls(fn: Callable[[], object]) -> list[str]:
    """The functions (Python and built-in) that ``fn()`` calls, in order, at every depth."""
    seen: list[str] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            seen.append(frame.f_code.co_name)
        elif event == "c_call":
            seen.append(arg.__name__)

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen[1:-1]  # (without fn itself and the call that ends the profile)

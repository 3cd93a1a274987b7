"""Type aliases shared across learnloop."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

import numpy as np
import numpy.typing as npt
from pydantic import StringConstraints

__all__ = ["BoolArray", "Clock", "FloatArray", "IDENTIFIER_PATTERN", "Identifier", "IntArray"]

#: The identifier rule of the v2 contract: every id and tag.
IDENTIFIER_PATTERN = r"^[a-zA-Z0-9_\-:]{1,128}$"

Identifier = Annotated[str, StringConstraints(pattern=IDENTIFIER_PATTERN)]

#: A zero-argument callable returning an aware UTC datetime.
Clock = Callable[[], datetime]

FloatArray = npt.NDArray[np.float64]
#: integer arrays of any width (positions and topic indices are int32 or int64)
IntArray = npt.NDArray[np.signedinteger[Any]]
BoolArray = npt.NDArray[np.bool_]

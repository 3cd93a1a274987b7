"""The learnloop error hierarchy.

Every error raised on purpose by learnloop derives from :class:`LearnloopError`
and from the built-in exception that best describes it, so callers may catch
either::

    Exception
     └── LearnloopError
          ├── ValidationError (ValueError)      bad input; lists every problem at once
          │    └── LimitExceededError           a documented size limit was hit
          ├── NotFoundError (KeyError)          an id that does not exist
          ├── AuthenticationError (PermissionError)
          └── ContextError (ValueError)         a forged, foreign or stale context string

The façades translate these into the documented HTTP error bodies.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "AuthenticationError",
    "ContextError",
    "LearnloopError",
    "LimitExceededError",
    "NotFoundError",
    "ValidationError",
]


class LearnloopError(Exception):
    """Base class of every error learnloop raises on purpose."""


class ValidationError(LearnloopError, ValueError):
    """Input that breaks one or more rules; ``problems`` lists all of them.

    >>> err = ValidationError(["topic 'a': unknown item 'x'", "topic 'b': two parents"])
    >>> str(err)
    "2 problems: topic 'a': unknown item 'x'; topic 'b': two parents"
    """

    def __init__(self, problems: str | Iterable[str]) -> None:
        self.problems: tuple[str, ...] = (problems,) if isinstance(problems, str) else tuple(problems)
        if not self.problems:
            raise ValueError("ValidationError needs at least one problem")
        super().__init__(self._summary())

    def _summary(self) -> str:
        if len(self.problems) == 1:
            return self.problems[0]
        return f"{len(self.problems)} problems: " + "; ".join(self.problems)

    def __str__(self) -> str:
        return self._summary()


class LimitExceededError(ValidationError):
    """A documented size limit was exceeded; ``limit`` names it."""

    def __init__(self, limit: str, value: int, maximum: int, what: str = "") -> None:
        self.limit = limit
        self.value = value
        self.maximum = maximum
        detail = f" ({what})" if what else ""
        super().__init__(f"limit '{limit}' exceeded{detail}: {value} > {maximum}")


class NotFoundError(LearnloopError, KeyError):
    """A referenced resource does not exist."""

    def __init__(self, kind: str, key: str) -> None:
        self.kind = kind
        self.key = key
        super().__init__(f"{kind} '{key}' not found")

    def __str__(self) -> str:
        return f"{self.kind} '{self.key}' not found"


class AuthenticationError(LearnloopError, PermissionError):
    """Missing, wrong or expired credentials."""


class ContextError(LearnloopError, ValueError):
    """A session or recommendation context that is forged, foreign or stale."""

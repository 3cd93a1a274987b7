"""One bounded, thread-safe LRU cache for the engine's in-process caches."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["LRUCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRUCache(Generic[K, V]):
    """Least recently used entries go first, once the cache holds more than ``max_items``
    entries or more than ``max_bytes`` by ``sizeof``.

    Its lock is a leaf: held for dictionary work only, never while anything
    else is called (``sizeof`` is called outside it).

    >>> cache = LRUCache[str, int](max_items=2)
    >>> cache.put("a", 1); cache.put("b", 2); _ = cache.get("a"); cache.put("c", 3)
    >>> cache.get("b") is None, cache.get("a"), len(cache)
    (True, 1, 2)
    """

    def __init__(
        self,
        *,
        max_items: int | None = None,
        max_bytes: int | None = None,
        sizeof: Callable[[V], int] | None = None,
    ) -> None:
        if max_bytes is not None and sizeof is None:
            raise ValueError("max_bytes needs sizeof")
        self.max_items = max_items
        self.max_bytes = max_bytes
        self._sizeof = sizeof
        self._data: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._nbytes = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            found = self._data.get(key)
            if found is None:
                return None
            self._data.move_to_end(key)
            return found[0]

    def put(self, key: K, value: V) -> None:
        size = self._sizeof(value) if self._sizeof is not None else 0
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._nbytes -= old[1]
            if self.max_bytes is not None and size > self.max_bytes:
                return  # larger than the whole cache: not kept
            self._data[key] = (value, size)
            self._nbytes += size
            while self._data and (
                (self.max_items is not None and len(self._data) > self.max_items)
                or (self.max_bytes is not None and self._nbytes > self.max_bytes)
            ):
                _, (_, evicted) = self._data.popitem(last=False)
                self._nbytes -= evicted

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._nbytes = 0

    @property
    def nbytes(self) -> int:
        """Total ``sizeof`` of the entries held."""
        with self._lock:
            return self._nbytes

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

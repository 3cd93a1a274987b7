"""A fitted model's item calibration: the ``{item_id: {"b": ..., "a": ...}}`` mapping, kept as arrays too.

:class:`ItemCalibration` is what :class:`learnloop.engine.fitting.model.LogModel` fits: a read-only
dict (what the catalog stores and the API shows) that also holds the items' ids and parameters as
arrays, and remembers where each item sits in a compiled catalog. A search scores dozens of settings
with one fold's calibration; with the positions kept, a setting's model is built from a gather over
arrays (:meth:`CatalogModel.build` with ``item_arrays``), not from a look-up per item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

import numpy as np

from learnloop.content import CatalogIndex
from learnloop.engine.repository.catalog_model import cold_items

__all__ = ["ItemCalibration"]


class ItemCalibration(dict[str, dict[str, float]]):
    """``{item_id: {"b": b, "a": a}}`` of the items ``ids`` (read-only), with ``b`` and ``a`` as arrays."""

    def __init__(self, ids: Sequence[str], b: np.ndarray, a: np.ndarray) -> None:
        b = np.array(b, dtype=np.float64)
        a = np.array(a, dtype=np.float64)
        if not len(ids) == b.size == a.size:
            raise ValueError(f"ids, b and a differ in length: {len(ids)}, {b.size}, {a.size}")
        super().__init__({item: {"b": vb, "a": va} for item, vb, va in zip(ids, b.tolist(), a.tolist(), strict=True)})
        self.ids = tuple(ids)
        b.flags.writeable = False
        a.flags.writeable = False
        self.b, self.a = b, a
        # the positions of the items on a compiled catalog, by (catalog, naming): a few at most
        self._on: dict[tuple[int, int], tuple[CatalogIndex, Mapping[str, str], np.ndarray, np.ndarray]] = {}

    def arrays_on(self, index: CatalogIndex, names: Mapping[str, str]) -> tuple[np.ndarray, np.ndarray]:
        """``b`` and ``a`` of every position of ``index``: these items' (named there ``names[item_id]``;
        an item at several positions at each), the others at their cold-start values."""
        key = (id(index), id(names))
        hit = self._on.get(key)
        if hit is None or hit[0] is not index or hit[1] is not names:
            at: list[np.ndarray] = []
            rows: list[int] = []
            counts: list[int] = []
            for row, item in enumerate(self.ids):
                name = names.get(item)
                positions = None if name is None else index.item_positions.get(name)
                if positions is not None:
                    at.append(positions)
                    rows.append(row)
                    counts.append(positions.size)
            where = np.concatenate(at) if at else np.zeros(0, dtype=np.intp)
            source = np.repeat(np.asarray(rows, dtype=np.intp), counts)
            if len(self._on) >= 4:
                self._on.clear()
            hit = self._on[key] = (index, names, where, source)
        _, _, where, source = hit
        cold = cold_items(index)
        b, a = cold.b.copy(), cold.a.copy()
        b[where] = self.b[source]
        a[where] = self.a[source]
        return b, a

    def __reduce__(self) -> tuple[type[ItemCalibration], tuple[tuple[str, ...], np.ndarray, np.ndarray]]:
        """Copied and pickled from its arrays (a dict's way would write item by item)."""
        return (type(self), (self.ids, self.b, self.a))

    def _read_only(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("an ItemCalibration is read-only: make a new one (or a dict of it)")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = __ior__ = _read_only

"""Public hypothesis strategies for property-based tests of code built on learnloop.

Needs `hypothesis <https://hypothesis.readthedocs.io>`_ installed; learnloop
itself does not depend on it. See :mod:`learnloop.testing.strategies`.

>>> from hypothesis import given, settings
>>> from learnloop.content import compile_catalog, compile_filter
>>> from learnloop.testing import content, filters
>>> @settings(max_examples=10, deadline=None)
... @given(content().flatmap(lambda drawn: filters(drawn[1], drawn[0]).map(lambda f: (*drawn, f))))
... def test_filter_selects_part_of_the_item_order(drawn):
...     items, catalog, flt = drawn
...     index = compile_catalog(catalog, {i.item_id: i for i in items})
...     assert compile_filter(index, flt).shape == (index.n_items,)
>>> test_filter_selects_part_of_the_item_order()
"""

from learnloop.testing.strategies import (
    CONTENT_TYPES,
    FILTER_FIELDS,
    catalogs,
    content,
    filters,
    identifiers,
    item_databases,
    items,
)

__all__ = [
    "CONTENT_TYPES",
    "FILTER_FIELDS",
    "catalogs",
    "content",
    "filters",
    "identifiers",
    "item_databases",
    "items",
]

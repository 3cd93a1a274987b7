"""Content: items, the item database, catalogs as topic graphs, and filters."""

from learnloop.content.catalog import (
    Catalog,
    CatalogIndex,
    Topic,
    TopicItemRef,
    TopicRef,
    compile_catalog,
    validate_catalog,
)
from learnloop.content.filter import Filter, compile_filter
from learnloop.content.item import (
    Item,
    ItemAnnotation,
    ItemDatabaseAnnotation,
    ItemList,
    TheoryItemRef,
)

__all__ = [
    "Catalog",
    "CatalogIndex",
    "Filter",
    "Item",
    "ItemAnnotation",
    "ItemDatabaseAnnotation",
    "ItemList",
    "TheoryItemRef",
    "Topic",
    "TopicItemRef",
    "TopicRef",
    "compile_catalog",
    "compile_filter",
    "validate_catalog",
]

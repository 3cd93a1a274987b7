"""Filters: subsets of a catalog's items, compiled to boolean masks over its item order.

Every condition is optional; a present condition must not be an empty list.
Inclusions intersect (an item must satisfy each inclusion given), then each
exclusion removes what it matches, so an exclusion can remove a sub-topic of an
included topic.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from learnloop._types import BoolArray, Identifier
from learnloop.content.catalog import CatalogIndex
from learnloop.errors import ValidationError

__all__ = ["Filter", "compile_filter"]

_NonEmpty = Field(default=None, min_length=1)


class Filter(BaseModel):
    """A selection of a catalog's items by topic, tag, content type and item id."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    include_topic_ids: tuple[Identifier, ...] | None = _NonEmpty
    include_tags: tuple[Identifier, ...] | None = _NonEmpty
    include_content_types: tuple[str, ...] | None = _NonEmpty
    include_item_ids: tuple[Identifier, ...] | None = _NonEmpty
    exclude_topic_ids: tuple[Identifier, ...] | None = _NonEmpty
    exclude_tags: tuple[Identifier, ...] | None = _NonEmpty
    exclude_content_types: tuple[str, ...] | None = _NonEmpty
    exclude_item_ids: tuple[Identifier, ...] | None = _NonEmpty


def compile_filter(index: CatalogIndex, flt: Filter | None) -> BoolArray:
    """The boolean mask of ``flt`` over ``index``'s item order (all True for no filter).

    Unknown topic ids are an error (a likely typo); unknown tags, content types
    and item ids simply match nothing.

    >>> from learnloop.content.catalog import Catalog, Topic, TopicItemRef, TopicRef, compile_catalog
    >>> from learnloop.content.item import Item
    >>> items = {"x": Item(item_id="x", display_name="x", scorable=True, tags=["hard"]),
    ...          "y": Item(item_id="y", display_name="y", scorable=True)}
    >>> cat = Catalog(catalog_id="c", display_name="C", topics=[
    ...     Topic(topic_id="t", display_name="T", item_refs=[TopicItemRef(item_id="x"), TopicItemRef(item_id="y")])])
    >>> compile_filter(compile_catalog(cat, items), Filter(include_topic_ids=["t"], exclude_tags=["hard"])).tolist()
    [False, True]
    """
    n = index.n_items
    mask = np.ones(n, dtype=bool)
    if flt is None:
        return mask
    unknown = [t for t in (flt.include_topic_ids or ()) + (flt.exclude_topic_ids or ()) if t not in index.topic_index]
    if unknown:
        raise ValidationError(
            [f"filter: unknown topic '{t}' in catalog '{index.catalog_id}'" for t in dict.fromkeys(unknown)]
        )
    if flt.include_topic_ids is not None:
        mask &= index.subtree_mask(flt.include_topic_ids)
    if flt.include_tags is not None:
        mask &= index.tag_mask(flt.include_tags)
    if flt.include_content_types is not None:
        mask &= index.content_type_mask(flt.include_content_types)
    if flt.include_item_ids is not None:
        mask &= index.item_mask(flt.include_item_ids)
    if flt.exclude_topic_ids is not None:
        mask &= ~index.subtree_mask(flt.exclude_topic_ids)
    if flt.exclude_tags is not None:
        mask &= ~index.tag_mask(flt.exclude_tags)
    if flt.exclude_content_types is not None:
        mask &= ~index.content_type_mask(flt.exclude_content_types)
    if flt.exclude_item_ids is not None:
        mask &= ~index.item_mask(flt.exclude_item_ids)
    return mask

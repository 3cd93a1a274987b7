"""Items (exercises and theory), their annotations, and item lists.

These are the v2 contract shapes; the v1 façade translates its assets into them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from learnloop._types import Identifier

__all__ = ["Item", "ItemAnnotation", "ItemDatabaseAnnotation", "ItemList", "TheoryItemRef"]

_CLOSED = ConfigDict(extra="forbid", frozen=True)


class TheoryItemRef(BaseModel):
    """A link from an exercise to a theory item that explains it."""

    model_config = _CLOSED

    item_id: Identifier


class Item(BaseModel):
    """An exercise or theory item of an application's item database.

    ``difficulty`` is the cold-start probability that an average learner
    without prior knowledge fails the item (easy 0.33, medium 0.5, hard 0.66).

    >>> Item(item_id="q1", display_name="Question 1", scorable=True, difficulty=0.5).difficulty
    0.5
    """

    model_config = _CLOSED

    item_id: Identifier
    display_name: str
    scorable: bool
    difficulty: float | None = Field(default=None, ge=0.0, le=1.0)
    theory_item_refs: tuple[TheoryItemRef, ...] | None = None
    content_type: str | None = None
    tags: tuple[Identifier, ...] | None = None

    @property
    def is_theory(self) -> bool:
        """True when the item's content type is ``theory``."""
        return self.content_type == "theory"


class ItemList(BaseModel):
    """The upload shape of items and of the whole item database."""

    model_config = _CLOSED

    items: tuple[Item, ...]


class ItemAnnotation(BaseModel):
    """Free text about an item, kept apart from the hot path (offline modelling only)."""

    model_config = _CLOSED

    item_id: Identifier
    text_plain: str | None = None
    catalog_id: Identifier | None = None


class ItemDatabaseAnnotation(BaseModel):
    """The upload shape of annotations; ``catalog_id`` is accepted as the published example carries it."""

    model_config = _CLOSED

    item_annotations: tuple[ItemAnnotation, ...]
    catalog_id: Identifier | None = None

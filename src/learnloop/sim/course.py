"""A sample course: chapters of topics with prerequisites, exercises and theory.

Used by the demo, the notebooks, the benchmarks and the tests.

>>> items, catalog = sample_course(n_chapters=2, topics_per_chapter=2, items_per_topic=3)
>>> len(items), len(catalog.topics)
(16, 6)
"""

from __future__ import annotations

import numpy as np

from learnloop.content import Catalog, Item, TheoryItemRef, Topic, TopicItemRef, TopicRef

__all__ = ["sample_course"]


def sample_course(
    *,
    n_chapters: int = 4,
    topics_per_chapter: int = 3,
    items_per_topic: int = 8,
    with_theory: bool = True,
    catalog_id: str = "sample-course",
    seed: int = 0,
) -> tuple[list[Item], Catalog]:
    """Items and a catalog: chapter ``c`` has topics ``c.1 .. c.k``; each topic
    needs the previous topic of its chapter, and the first topic of a chapter
    needs the last topic of the previous chapter. Difficulty rises within a
    chapter and from chapter to chapter, with seeded noise. Each topic opens
    with a theory item that its exercises link to.
    """
    rng = np.random.default_rng(seed)
    items: list[Item] = []
    topics: list[Topic] = []
    chapters: list[Topic] = []
    previous: str | None = None
    n_levels = max(1, n_chapters * topics_per_chapter - 1)
    level = 0
    for c in range(1, n_chapters + 1):
        children = []
        for k in range(1, topics_per_chapter + 1):
            topic_id = f"ch{c}-t{k}"
            base = 0.25 + 0.45 * level / n_levels
            level += 1
            refs = []
            theory_id = f"{topic_id}-theory"
            if with_theory:
                items.append(
                    Item(item_id=theory_id, display_name=f"Theory of {topic_id}", scorable=False, content_type="theory")
                )
                refs.append(TopicItemRef(item_id=theory_id))
            for i in range(1, items_per_topic + 1):
                d = float(np.clip(base + rng.normal(0.0, 0.08), 0.05, 0.95))
                item_id = f"{topic_id}-q{i}"
                items.append(
                    Item(
                        item_id=item_id,
                        display_name=f"Exercise {i} of {topic_id}",
                        scorable=True,
                        difficulty=round(d, 3),
                        content_type="mcq",
                        tags=("hard",) if d > 0.6 else ("core",),
                        theory_item_refs=((TheoryItemRef(item_id=theory_id),) if with_theory else None),
                    )
                )
                refs.append(TopicItemRef(item_id=item_id))
            prerequisites = (TopicRef(topic_id=previous),) if previous is not None else None
            topics.append(
                Topic(
                    topic_id=topic_id,
                    display_name=f"Topic {k} of chapter {c}",
                    item_refs=tuple(refs),
                    prerequisite_topic_refs=prerequisites,
                )
            )
            children.append(TopicRef(topic_id=topic_id))
            previous = topic_id
        chapters.append(Topic(topic_id=f"ch{c}", display_name=f"Chapter {c}", child_topic_refs=tuple(children)))
    catalog = Catalog(catalog_id=catalog_id, display_name="Sample course", topics=(*chapters, *topics))
    return items, catalog

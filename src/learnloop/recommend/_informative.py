"""The most informative positions of an assessment pool, read through each topic's best.

:class:`~learnloop.recommend.policies.AssessPolicy` draws among the ``k`` most
informative items of its pool. Over a large catalog, sorting out those from
every position is most of a step; :func:`most_informative` finds them among
the topics whose best item could be one of them: the ``k + 1`` largest topic
maxima bound the ``k + 1``-th largest item from below, so every item at least
as informative lies in a topic whose maximum reaches that bound. The result
is the one of the full computation whenever the ``k + 1`` largest values are
all different; otherwise (ties, whose order the full computation settles) it
is None and the caller computes over every position.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from learnloop._types import BoolArray, FloatArray, IntArray
from learnloop.content import CatalogIndex
from learnloop.recommend.view import LearnerView, topic_runs

__all__ = ["MIN_POOL", "FilledTopics", "filled_topics", "most_informative"]

#: below this many eligible positions the full computation is as quick
MIN_POOL = 512


@dataclass(frozen=True, eq=False)
class FilledTopics:
    """The topics owning items (``topics``) and where each one's run starts (``starts``)."""

    topics: IntArray
    starts: IntArray


def filled_topics(index: CatalogIndex) -> FilledTopics:
    """The :class:`FilledTopics` of a catalog (made once, kept on the index)."""

    def make(ix: CatalogIndex) -> FilledTopics:
        runs = topic_runs(ix)
        topics = np.flatnonzero(runs.counts > 0).astype(np.intp)
        starts = runs.ptr[topics].astype(np.intp)
        for array in (topics, starts):
            array.setflags(write=False)
        return FilledTopics(topics, starts)

    return index.derived("recommend.filled_topics", make)


def most_informative(view: LearnerView, pool: BoolArray, k: int) -> tuple[IntArray, FloatArray] | None:
    """The ``k`` positions of ``pool`` of largest :attr:`~LearnerView.information`, largest first,
    and their information; None when the ``k + 1`` largest are not all different, when fewer
    than ``k + 1`` topics hold positions of ``pool``, or when the catalog's items do not run
    topic by topic (the caller then computes over every position)."""
    index = view.index
    if k < 1 or not topic_runs(index).identity:
        return None
    filled = filled_topics(index)
    n_topics = filled.topics.size
    if n_topics <= k + 1:
        return None
    info = view.information
    topic_max = np.maximum.reduceat(np.where(pool, info, -np.inf), filled.starts)
    if np.isnan(topic_max).any():
        return None
    bound = np.partition(topic_max, n_topics - k - 1)[n_topics - k - 1]
    if bound == -np.inf:  # fewer than k + 1 topics hold positions of the pool
        return None
    positions = topic_runs(index).positions(filled.topics[topic_max >= bound])
    positions = positions[pool[positions]]
    values = info[positions]
    top = np.argpartition(-values, k)[: k + 1]
    top = top[np.argsort(-values[top], kind="stable")]
    ranked = values[top]
    if not (ranked[:-1] > ranked[1:]).all():  # ties: their order is the full computation's
        return None
    return positions[top[:k]], ranked[:k]

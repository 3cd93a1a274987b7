"""Prerequisite gating: how much of an answer's practice gain reaches its topic, given its prerequisites.

With ``prerequisite_gating`` γ > 0 the practice gain of an answer on topic ``t`` is scaled by its
*readiness*

    r(t) = exp(γ · mean over p in requires(t) of log σ(m_p − b̄_p)),

the geometric mean of the prerequisites' predicted success at their mean difficulty, raised to γ:
``requires(t)`` are the topics to master before ``t`` (its prerequisites and its ancestors'), ``m_p``
the mean of the ability belief of ``p`` before the answer (the nested hierarchy's own or borrowed
belief, the additive hierarchy's sum along the chain; novelty and momentum left out), ``b̄_p`` the mean
difficulty of the scorable items in ``p``'s subtree (0 without any). γ = 0, or a topic without
requirements, gives r = 1: the model without gating. Every path of the model (the update of
:mod:`learnloop.tracing._apply`, :func:`learnloop.tracing.replay.trace` and the learners side by side
of :mod:`learnloop.tracing._replay_many`) calls :func:`readiness`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._types import FloatArray

if TYPE_CHECKING:
    from .structure import ItemParams, TopicStructure

__all__ = ["GatingTables", "readiness"]


def readiness(gating: float, margins: FloatArray, weights: FloatArray) -> FloatArray:
    """``exp(gating * sum(weights * log σ(margins), axis=-1))``: the readiness of answers whose
    requirements' margins ``m_p − b̄_p`` are along the last axis, each weighing ``weights`` (1 / the
    number of requirements; 0 for padding)."""
    return np.exp(gating * np.sum(weights * -np.logaddexp(0.0, -margins), axis=-1))  # type: ignore[no-any-return]


class GatingTables:
    """Each topic's requirements (padded with ``pad``), their weights and their mean difficulties."""

    def __init__(self, topics: TopicStructure, items: ItemParams, pad: int) -> None:
        n = topics.n_topics
        total = np.zeros(n + 1)
        count = np.zeros(n + 1)
        scorable = np.asarray(items.scorable, dtype=bool)
        # every scorable item counts for each topic up its chain (the overall node's column is dropped)
        for t in range(n):
            on_topic = scorable & (items.topic == t)
            chain = topics.chain(t)
            total[chain] += float(items.b[on_topic].sum())
            count[chain] += float(np.count_nonzero(on_topic))
        mean_b = np.where(count > 0, total / np.maximum(count, 1.0), 0.0)[:n]
        self.requires = [topics.requires(t).tolist() for t in range(n)]
        width = max((len(r) for r in self.requires), default=0)
        self.node = np.full((n, max(width, 1)), pad, dtype=np.intp)
        self.weight = np.zeros((n, max(width, 1)))
        self.mean_b = np.zeros((n, max(width, 1)))
        for t, req in enumerate(self.requires):
            if req:
                self.node[t, : len(req)] = req
                self.weight[t, : len(req)] = 1.0 / len(req)
                self.mean_b[t, : len(req)] = mean_b[req]
        self.topic_b = mean_b

"""The review's weakest covered item, read through each topic's least likely success.

:class:`~learnloop.recommend.policies.ReviewPolicy` scores each covered exercise
``1 - p * r`` (``p`` its predicted success, ``r`` its topic's recall), less
``0.001`` per attempt, and serves the first of the highest score. Within a topic
the recall is one number, so among the items never attempted the score falls
as ``p`` rises (rounding keeps the order, if not strictly): the topic's best
score is that of its smallest ``p``. :func:`weakest_covered` compares those
per-topic bests with the scores of the items attempted (a few) and scans only
the first topic reaching the highest score for its first item there, instead
of scoring every covered position.
"""

from __future__ import annotations

import numpy as np

from learnloop._types import BoolArray, FloatArray
from learnloop.recommend._informative import filled_topics
from learnloop.recommend.candidates import Candidates
from learnloop.recommend.view import LearnerView, topic_runs

__all__ = ["MIN_COVERED", "weakest_covered"]

#: below this many positions in the catalog, scoring every covered position is as quick
MIN_COVERED = 512


def weakest_covered(
    view: LearnerView, candidates: Candidates, covered_topic: BoolArray, topic_recall: FloatArray
) -> tuple[int, float, float] | None:
    """The first covered position of highest score, its topic's recall and its predicted success.

    Covered: the candidate exercises (``candidates``, less the dropped position) of
    the topics ``covered_topic``; ``topic_recall`` has no NaN. None when it cannot
    say as cheaply (no learner state, items not running topic by topic, a NaN, a
    negative recall): the caller then scores every covered position.
    """
    index = view.index
    state = view.state
    runs = topic_runs(index)
    if state is None or not runs.identity or (topic_recall < 0.0).any():
        return None
    p = view.p_correct
    filled = filled_topics(index)
    # the items attempted are scored one by one; the others through their topic's smallest p
    attempted = state.met_attempts > 0
    tried = state.touched[attempted]
    lowest = np.where(candidates.figures.exercise_mask, p, np.inf)
    lowest[tried] = np.inf
    if candidates.dropped is not None:
        lowest[candidates.dropped] = np.inf
    smallest = np.full(index.n_topics, np.inf)
    smallest[filled.topics] = np.minimum.reduceat(lowest, filled.starts)
    if np.isnan(smallest).any():
        return None
    has_open = covered_topic & (smallest < np.inf)
    open_best = np.full(index.n_topics, -np.inf)
    open_best[has_open] = 1.0 - smallest[has_open] * topic_recall[has_open]
    # the attempted items that are covered, with their scores
    tried_topic = index.item_topic[tried]
    keep = covered_topic[tried_topic] & candidates.figures.exercise_mask[tried]
    if candidates.dropped is not None:
        keep &= tried != candidates.dropped
    tried, tried_topic = tried[keep], tried_topic[keep]
    tried_score = 1.0 - p[tried] * topic_recall[tried_topic]
    tried_score = tried_score - 0.001 * state.met_attempts[attempted][keep].astype(np.int64)
    if np.isnan(tried_score).any():
        return None
    top = max(float(open_best.max()), float(tried_score.max()) if tried_score.size else -np.inf)
    if top == -np.inf:
        return None
    position = index.n_items
    if tried_score.size:
        hits = tried[tried_score == top]
        if hits.size:
            position = int(hits.min())
    reaching = np.flatnonzero(open_best == top)
    if reaching.size:
        topic = int(reaching[0])
        lo, hi = int(runs.ptr[topic]), int(runs.ptr[topic + 1])
        run = lowest[lo:hi]
        open_at = np.flatnonzero(run < np.inf)  # (the topic's covered items never attempted)
        scores = 1.0 - run[open_at] * topic_recall[topic]
        first = lo + int(open_at[np.argmax(scores == top)])
        position = min(position, first)
    topic = int(index.item_topic[position])
    return position, float(topic_recall[topic]), float(p[position])

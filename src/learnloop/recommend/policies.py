"""The three modes as policies over one learner view.

Each policy takes the learner view, the boolean mask of eligible positions
(session filter, constraints and content already applied), the previously
recommended position and a seeded generator, and returns a :class:`Pick`:
the position, a reason keyword of the contract, and a description in words.

- :class:`LearnPolicy` moves through the topics in catalog order, never into a
  topic whose prerequisites are not mastered while a ready topic remains,
  serving items of a desirable difficulty, re-inserting theory or an easier
  item after a failure, re-inserting forgotten topics, and exploring a little;
  in a catalog whose fitted learner model says prerequisites do not gate
  learning, it spreads practice across the open topics instead.
- :class:`ReviewPolicy` serves the items the learner has answered whose predicted
  recall is below the desired retention, the lowest recall first; nothing else.
- :class:`AssessPolicy` is computerized adaptive testing: maximum Fisher
  information with randomesque exposure control, no item twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from learnloop._types import BoolArray, IntArray
from learnloop.recommend.candidates import Candidates, mask_topics, without
from learnloop.recommend.due import due_order, moment_text
from learnloop.recommend.view import (
    LearnerView,
    catalog_topics,
    exercise_positions,
    per_position,
    ready_topics,
)

__all__ = ["AssessPolicy", "LearnPolicy", "Pick", "Policy", "ReviewPolicy", "policy_for"]


@dataclass(frozen=True, slots=True)
class Pick:
    position: int
    keyword: str
    description: str


def _closest(view: LearnerView, positions: IntArray, target: float) -> int:
    """Among ``positions`` (in catalog order), the item whose predicted success is nearest
    ``target`` (fewer attempts first on ties, then catalog order)."""
    distance = np.abs(view.p_correct[positions] - target)
    where, attempts = view.attempted_at(positions)  # (+ 0.02 * min(attempts, 5) at every position)
    distance[where] = distance[where] + 0.02 * np.minimum(attempts, 5)
    return int(positions[distance.argmin()])


def _topic_name(view: LearnerView, position: int) -> str:
    return view.index.topic_ids[view.index.item_topic[position]]  # type: ignore[no-any-return]


class Policy:
    """Base class of every policy; one signature for all of them.

    ``select(view, eligible, *, previous, rng, administered=None) -> Pick | None``:
    the position picked must lie in ``eligible`` (a boolean mask over the
    catalog's positions), ``None`` when ``eligible`` is empty, and otherwise only
    for a policy whose ``passes`` is true (review, with nothing due).
    ``previous`` is the position recommended last (or None), ``rng`` the
    seeded generator of this step, ``administered`` the positions already
    given in this assessment (a policy may ignore it).
    """

    name = "policy"
    #: whether the policy may pass (answer None) while positions are eligible: review does when
    #: nothing is due
    passes: ClassVar[bool] = False

    def select(
        self,
        view: LearnerView,
        eligible: BoolArray,
        *,
        previous: int | None,
        rng: np.random.Generator,
        administered: BoolArray | None = None,
    ) -> Pick | None:
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class LearnPolicy(Policy):
    """Guided progression at a desirable difficulty.

    ``target_success`` is the predicted success aimed at when choosing an item;
    a topic is mastered at ``mastery_threshold`` predicted success after at least
    ``min_attempts`` attempts, or after ``streak`` well-answered items in a row;
    a mastered topic whose predicted recall drops below ``retention_threshold``
    is re-inserted; ``exploration`` is the probability of a random ready item;
    with ``theory_first`` a topic opens with the theory items the catalog places
    before its first exercise; theory is also served when an exercise linked to
    it is failed.

    Where the catalog's fitted ``prerequisite_gating`` (the learner model's
    setting, ``view.prerequisite_gating``) is below ``spread_below``,
    prerequisites do not hold learning back, so the order of topics does not
    matter but the spread of practice does (each attempt on a topic teaches less
    than the one before): the next topic is then the open (not mastered) topic
    with the fewest attempts, catalog order breaking ties, ready or not. A
    catalog without a fitted gating (None) keeps the progression. With a
    fitted gating γ of at least ``spread_below`` the progression moves on from a
    topic once the topics needing it would learn at ``ready_share`` of their
    full rate by the fitted model, i.e. at predicted success
    ``ready_share ** (1 / γ)`` when that is below ``mastery_threshold``
    (:meth:`threshold_for`).
    """

    name = "learn"
    target_success: float = 0.7
    mastery_threshold: float = 0.8
    min_attempts: int = 4
    streak: int = 0
    retention_threshold: float = 0.7
    exploration: float = 0.05
    theory_first: bool = True
    spread_below: float = 0.75
    ready_share: float = 0.7

    def threshold_for(self, gating: float | None) -> float:
        """The predicted success at which a topic counts as mastered under a catalog's fitted gating.

        >>> LearnPolicy().threshold_for(None), LearnPolicy().threshold_for(1.0), LearnPolicy().threshold_for(4.0)
        (0.8, 0.7, 0.8)
        """
        if gating is None or gating < self.spread_below:
            return self.mastery_threshold
        return min(self.mastery_threshold, float(self.ready_share ** (1.0 / gating)))

    def select(
        self,
        view: LearnerView,
        eligible: BoolArray,
        *,
        previous: int | None,
        rng: np.random.Generator,
        administered: BoolArray | None = None,
    ) -> Pick | None:
        index = view.index
        # topic by topic: which topics are ready and open, and how many candidates each holds
        candidates = Candidates(index, eligible, previous)
        if not candidates.total:
            return None
        gating = view.prerequisite_gating
        threshold = self.threshold_for(gating)
        mastered = view.mastered(threshold=threshold, min_attempts=self.min_attempts, streak=self.streak)
        ready_topic = ready_topics(index, mastered)
        n_ready = int(candidates.count @ ready_topic)

        # a little seeded exploration among ready content
        if n_ready > 1 and rng.random() < self.exploration:
            ready = candidates.mask() & per_position(index, ready_topic)
            position = int(rng.choice(np.flatnonzero(ready)))
            return Pick(
                position,
                "exploration",
                f"exploring: a random ready item of topic '{_topic_name(view, position)}' "
                f"(predicted success {view.p_correct[position]:.2f})",
            )

        # after a failure: the linked theory, else an easier item of the same topic
        failed = view.last_failed
        if failed is not None:
            pick = self._after_failure(view, candidates, failed)
            if pick is not None:
                return pick

        # re-insert a mastered topic that is being forgotten
        pick = self._retention(view, candidates, mastered)
        if pick is not None:
            return pick

        open_topic = (candidates.count > 0) & ~mastered
        if gating is not None and gating < self.spread_below and open_topic.any():
            # prerequisites do not gate learning: the open topic practised least
            practised = view.topic_attempts
            topic = int(np.lexsort((candidates.first, np.where(open_topic, practised, np.inf)))[0])
            why = (
                f"prerequisites do not gate learning in this catalog (fitted gating {gating:.2g}): "
                f"practice spread across topics, this one has the fewest attempts ({practised[topic]:.0f})"
            )
            return self._in_topic(
                view, candidates.in_topic(topic), topic, ready_is_known=True, needs=np.empty(0, dtype=np.intp), why=why
            )

        # the open topic (not mastered, ready if any is) holding the first open candidate
        if n_ready:
            open_topic &= ready_topic
        topic = int(np.where(open_topic, candidates.first, index.n_items).argmin())
        if open_topic[topic]:
            in_topic = candidates.in_topic(topic)
            needs = catalog_topics(index).requires(topic)
            return self._in_topic(view, in_topic, topic, ready_is_known=n_ready > 0, needs=needs)
        # every reachable topic is mastered: practise the weakest
        pool = candidates.mask()
        if n_ready:
            pool = pool & per_position(index, ready_topic)
        positions = np.flatnonzero(pool)
        weakest = view.p_correct[positions]  # (+ 0.01 per attempt)
        where, attempts = view.attempted_at(positions)
        weakest[where] = weakest[where] + 0.01 * attempts
        position = int(positions[np.argmin(weakest)])
        return Pick(
            position,
            "predicted_knowledge_gap",
            f"all reachable topics are mastered; practising the weakest item of topic "
            f"'{_topic_name(view, position)}' (predicted success {view.p_correct[position]:.2f})",
        )

    def _in_topic(
        self,
        view: LearnerView,
        in_topic: IntArray,
        topic: int,
        *,
        ready_is_known: bool,
        needs: np.ndarray,
        why: str | None = None,
    ) -> Pick:
        """The pick among ``in_topic``, the candidate positions of ``topic`` (in catalog order)."""
        index = view.index
        name = index.topic_ids[topic]
        exercises = in_topic[exercise_positions(index)[in_topic]]
        has_exercises = exercises.size > 0
        if self.theory_first and view.topic_attempts[topic] == 0:
            # theory the catalog places before the topic's first exercise opens the topic
            first_exercise = exercises[0] if has_exercises else index.n_items
            leading = in_topic[(in_topic < first_exercise) & index.is_theory[in_topic]]
            unread = leading[(view.viewed_at(leading) < 1.0) & (view.attempts_at(leading) == 0)]
            if unread.size:
                opening = f"starting topic '{name}' with its theory"
                return Pick(int(unread[0]), "content_progression", opening if why is None else f"{opening} ({why})")
        pool = exercises if has_exercises else in_topic
        position = _closest(view, pool, self.target_success)
        if why is None and not ready_is_known:
            why = "no topic with mastered prerequisites is left in the filter"
        elif why is None and len(needs):
            why = "prerequisites " + ", ".join(f"'{index.topic_ids[t]}'" for t in needs) + " mastered"
        elif why is None:
            why = "next topic in catalog order"
        return Pick(
            position,
            "content_progression",
            f"topic '{name}' ({why}); predicted success {view.p_correct[position]:.2f} "
            f"near the target {self.target_success:.2f}",
        )

    def _after_failure(self, view: LearnerView, candidates: Candidates, failed: int) -> Pick | None:
        index = view.index
        failed_id = index.item_ids[failed]
        for theory_id in index.theory_refs.get(failed_id, ()):
            positions = index.item_positions.get(theory_id)
            if positions is None:
                continue
            viewed = view.viewed_at(positions)
            open_theory = [int(p) for p, v in zip(positions, viewed, strict=True) if int(p) in candidates and v < 1.0]
            if open_theory:
                return Pick(
                    open_theory[0],
                    "observed_knowledge_gap",
                    f"item '{failed_id}' was answered incorrectly; its theory '{theory_id}' explains it",
                )
        topic = int(index.item_topic[failed])
        in_topic = candidates.in_topic(topic)
        in_topic = in_topic[exercise_positions(index)[in_topic] & (in_topic != failed)]
        if not in_topic.size:
            return None
        easier = in_topic[view.p_correct[in_topic] >= view.p_correct[failed]]
        pool = easier if len(easier) else in_topic
        position = int(pool[np.abs(view.p_correct[pool] - self.target_success).argmin()])
        return Pick(
            position,
            "observed_knowledge_gap",
            f"item '{failed_id}' was answered incorrectly; practising topic "
            f"'{index.topic_ids[topic]}' again at predicted success {view.p_correct[position]:.2f}",
        )

    def _retention(self, view: LearnerView, candidates: Candidates, mastered: BoolArray) -> Pick | None:
        index = view.index
        # (counts and arg-extremes below: a fraction of the cost of any(), min() and max() on small arrays)
        if not np.count_nonzero(mastered):  # (the recall is not read)
            return None
        due = mastered & (view.recall < self.retention_threshold)  # (NaN, never practised: not due)
        if not np.count_nonzero(due):  # no topic is due: no item is
            return None
        due &= candidates.exercises > 0
        topics = due.nonzero()[0]
        if not topics.size:
            return None
        recall = view.recall[topics]
        worst = recall[recall.argmin()]  # (recall.min(): no NaN among due topics)
        positions = candidates.in_topics(topics[recall == worst])
        positions = positions[exercise_positions(index)[positions]]
        position = int(positions[view.p_correct[positions].argmax()])
        return Pick(
            position,
            "knowledge_retention",
            f"topic '{_topic_name(view, position)}' was mastered but its predicted recall has fallen "
            f"to {worst:.2f} (below {self.retention_threshold:.2f})",
        )


@dataclass(frozen=True, kw_only=True)
class ReviewPolicy(Policy):
    """What the learner has met and is forgetting: the most overdue item first.

    Only items the learner has answered are served (:mod:`learnloop.recommend.due`); one is
    due when its predicted recall is below ``desired_retention`` (None: the catalog's, 0.9
    unless set in its learner options). The due item of lowest recall comes first; with
    nothing due the pick is None (the engine then says when the next item falls due).
    """

    name = "review"
    passes = True
    desired_retention: float | None = None

    def __post_init__(self) -> None:
        if self.desired_retention is not None and not 0.0 < self.desired_retention < 1.0:
            raise ValueError(f"desired_retention must lie in (0, 1), got {self.desired_retention}")

    def select(
        self,
        view: LearnerView,
        eligible: BoolArray,
        *,
        previous: int | None,
        rng: np.random.Generator,
        administered: BoolArray | None = None,
    ) -> Pick | None:
        if not eligible.any():
            return None
        order = due_order(view, eligible, self.desired_retention)
        k = 0
        if order.n_due > 1 and previous is not None and int(order.positions[0]) == previous:
            k = 1  # (not the same item twice in a row while another is due)
        if k >= order.n_due:
            return None
        position = int(order.positions[k])
        recall, when = float(order.recall[k]), float(order.due_at[k])
        since = f"due since {moment_text(when)} " if np.isfinite(when) else "due "
        return Pick(
            position,
            "knowledge_retention",
            f"{since}(predicted recall {recall:.2f} < {order.retention:.2f}); "
            f"topic '{_topic_name(view, position)}', answered before",
        )


@dataclass(frozen=True, kw_only=True)
class AssessPolicy(Policy):
    """Maximum information with randomesque exposure control.

    The item is drawn at random among the ``top_k`` most informative items
    whose information is within ``tolerance`` (relative) of the best, so that
    exposure is spread without giving up measurement precision.
    """

    name = "assess"
    top_k: int = 5
    tolerance: float = 0.02

    def select(
        self,
        view: LearnerView,
        eligible: BoolArray,
        *,
        previous: int | None,
        rng: np.random.Generator,
        administered: BoolArray | None = None,
    ) -> Pick | None:
        if not eligible.any():
            return None
        pool = mask_topics(view.index, eligible).scorable_mask
        if administered is not None:
            rest = pool & ~administered
            if rest.any():
                pool = rest
        if not pool.any():
            pool = eligible
        pool = without(pool, previous)
        positions = np.flatnonzero(pool)
        info = view.information_at(positions)
        k = min(self.top_k, len(positions))
        best = np.argpartition(-info, k - 1)[:k] if k < len(positions) else np.arange(len(positions))
        best = best[np.argsort(-info[best], kind="stable")]
        near = best[info[best] >= info[best[0]] * (1.0 - self.tolerance)]
        chosen = near[rng.integers(near.size)]
        position = int(positions[chosen])
        return Pick(
            position,
            "assessment",
            f"item of maximum information ({float(info[chosen]):.3f}; predicted success "
            f"{view.p_correct[position]:.2f}), drawn among the {near.size} most informative",
        )


def policy_for(mode: str) -> Policy:
    """The default policy of a mode name."""
    if mode == "learn":
        return LearnPolicy()
    if mode == "review":
        return ReviewPolicy()
    if mode == "assess":
        return AssessPolicy()
    raise ValueError(f"unknown mode '{mode}'")

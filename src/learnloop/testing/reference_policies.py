"""The policies' selection as a full computation over every position: the reference of the fast path.

:class:`ReferenceLearnPolicy`, :class:`ReferenceReviewPolicy` and
:class:`ReferenceAssessPolicy` select exactly as the policies of
:mod:`learnloop.recommend.policies` did before their selection was read topic by
topic: every figure is a mask over all positions, and mastery is computed over
every topic by :func:`reference_mastered` (topic figures summed item by item,
:func:`reference_topic_figures`). Property tests check that the
policies pick exactly what these pick (position, reason, description, and the
draws of the generator); they are not meant for production use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from learnloop._types import BoolArray, FloatArray
from learnloop.recommend.due import moment_text
from learnloop.recommend.policies import AssessPolicy, LearnPolicy, Pick, ReviewPolicy
from learnloop.recommend.view import (
    LearnerView,
    catalog_topics,
    exercise_positions,
    in_topic_of,
    per_position,
    ready_topics,
    subtree_totals,
    topic_exercises,
    topic_runs,
)
from learnloop.tracing.predictions import topic_sums

__all__ = [
    "ReferenceAssessPolicy",
    "ReferenceLearnPolicy",
    "ReferenceReviewPolicy",
    "reference_mastered",
    "reference_topic_figures",
]


def _first(mask: BoolArray) -> int:
    return int(np.argmax(mask))


def _without(mask: BoolArray, position: int | None) -> BoolArray:
    """``mask`` without ``position``, unless that would leave nothing."""
    if position is None or not mask[position] or np.count_nonzero(mask) <= 1:
        return mask
    out = mask.copy()
    out[position] = False
    return out


def _closest(view: LearnerView, mask: BoolArray, target: float) -> int:
    """Among ``mask``, the item whose predicted success is nearest ``target``
    (fewer attempts first on ties, then catalog order)."""
    positions = np.flatnonzero(mask)
    distance = np.abs(view.p_correct[positions] - target) + 0.02 * np.minimum(view.attempts_at(positions), 5)
    return int(positions[np.argmin(distance)])


def _topic_name(view: LearnerView, position: int) -> str:
    return view.index.topic_ids[view.index.item_topic[position]]  # type: ignore[no-any-return]


@dataclass(frozen=True, kw_only=True)
class ReferenceLearnPolicy(LearnPolicy):
    """LearnPolicy's selection over every position."""

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
        index = view.index
        candidates = _without(eligible, previous)
        mastered = reference_mastered(
            view,
            threshold=self.threshold_for(view.prerequisite_gating),
            min_attempts=self.min_attempts,
            streak=self.streak,
        )
        requires = catalog_topics(index).requires
        ready_topic = ready_topics(index, mastered)
        ready = candidates & per_position(index, ready_topic)
        n_ready = int(np.count_nonzero(ready))

        # a little seeded exploration among ready content
        if n_ready > 1 and rng.random() < self.exploration:
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
            pick = self._full_after_failure(view, candidates, failed)
            if pick is not None:
                return pick

        # re-insert a mastered topic that is being forgotten
        pick = self._full_retention(view, candidates, mastered)
        if pick is not None:
            return pick

        gating = view.prerequisite_gating
        spread_pool = candidates & per_position(index, ~mastered)
        if gating is not None and gating < self.spread_below and spread_pool.any():
            # prerequisites do not gate learning: the open topic practised least, then the first one
            attempts = reference_topic_figures(view)[0]
            positions = np.flatnonzero(spread_pool)
            topic = int(index.item_topic[positions[np.lexsort((positions, attempts[index.item_topic[positions]]))[0]]])
            why = (
                f"prerequisites do not gate learning in this catalog (fitted gating {gating:.2g}): "
                f"practice spread across topics, this one has the fewest attempts ({attempts[topic]:.0f})"
            )
            in_topic = in_topic_of(index, topic, candidates)
            return self._full_in_topic(view, in_topic, topic, ready_is_known=True, needs=np.empty(0), why=why)

        pool = ready if n_ready else candidates
        open_pool = pool & per_position(index, ~mastered)
        position = _first(open_pool)
        if open_pool[position]:  # (the first open position: there is one)
            topic = int(index.item_topic[position])
            in_topic = in_topic_of(index, topic, open_pool)
            return self._full_in_topic(view, in_topic, topic, ready_is_known=n_ready > 0, needs=requires(topic))
        # every reachable topic is mastered: practise the weakest
        positions = np.flatnonzero(pool)
        position = int(positions[np.argmin(view.p_correct[positions] + 0.01 * view.attempts_at(positions))])
        return Pick(
            position,
            "predicted_knowledge_gap",
            f"all reachable topics are mastered; practising the weakest item of topic "
            f"'{_topic_name(view, position)}' (predicted success {view.p_correct[position]:.2f})",
        )

    def _full_in_topic(
        self,
        view: LearnerView,
        in_topic: BoolArray,
        topic: int,
        *,
        ready_is_known: bool,
        needs: np.ndarray,
        why: str | None = None,
    ) -> Pick:
        index = view.index
        name = index.topic_ids[topic]
        exercises = in_topic & exercise_positions(index)
        first = _first(exercises)
        has_exercises = bool(exercises[first])
        if self.theory_first and reference_topic_figures(view)[0, topic] == 0:
            # theory the catalog places before the topic's first exercise opens the topic
            first_exercise = first if has_exercises else index.n_items
            leading = np.flatnonzero(in_topic[:first_exercise] & index.is_theory[:first_exercise])
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

    def _full_after_failure(self, view: LearnerView, candidates: BoolArray, failed: int) -> Pick | None:
        index = view.index
        failed_id = index.item_ids[failed]
        for theory_id in index.theory_refs.get(failed_id, ()):
            positions = index.item_positions.get(theory_id)
            if positions is None:
                continue
            viewed = view.viewed_at(positions)
            open_theory = [int(p) for p, v in zip(positions, viewed, strict=True) if candidates[p] and v < 1.0]
            if open_theory:
                return Pick(
                    open_theory[0],
                    "observed_knowledge_gap",
                    f"item '{failed_id}' was answered incorrectly; its theory '{theory_id}' explains it",
                )
        topic = int(index.item_topic[failed])
        same_topic = in_topic_of(index, topic, candidates) & exercise_positions(index)
        same_topic[failed] = False
        in_topic = np.flatnonzero(same_topic)
        if not in_topic.size:
            return None
        easier = in_topic[view.p_correct[in_topic] >= view.p_correct[failed]]
        pool = easier if len(easier) else in_topic
        position = int(pool[np.argmin(np.abs(view.p_correct[pool] - self.target_success))])
        return Pick(
            position,
            "observed_knowledge_gap",
            f"item '{failed_id}' was answered incorrectly; practising topic "
            f"'{index.topic_ids[topic]}' again at predicted success {view.p_correct[position]:.2f}",
        )

    def _full_retention(self, view: LearnerView, candidates: BoolArray, mastered: BoolArray) -> Pick | None:
        index = view.index
        with np.errstate(invalid="ignore"):
            due = mastered & (view.recall < self.retention_threshold)
        if not due.any():  # no topic is due: no item is
            return None
        due_items = candidates & per_position(index, due) & exercise_positions(index)
        if not due_items.any():
            return None
        positions = np.flatnonzero(due_items)
        topic_recall = view.recall[index.item_topic[positions]]
        worst = topic_recall.min()
        pool = positions[topic_recall == worst]
        position = int(pool[np.argmax(view.p_correct[pool])])
        return Pick(
            position,
            "knowledge_retention",
            f"topic '{_topic_name(view, position)}' was mastered but its predicted recall has fallen "
            f"to {worst:.2f} (below {self.retention_threshold:.2f})",
        )


@dataclass(frozen=True, kw_only=True)
class ReferenceReviewPolicy(ReviewPolicy):
    """ReviewPolicy's selection over every position, sorted one item at a time."""

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
        index = view.index
        retention = view.desired_retention if self.desired_retention is None else self.desired_retention
        last_seen = view.last_seen
        due_at = view.due_at(retention)
        due = []
        for position in range(index.n_items):
            if not (eligible[position] and index.scorable[position] and view.attempts[position] > 0):
                continue
            recall = float(view.recall[index.item_topic[position]])
            if recall < retention:
                seen = -np.inf if last_seen is None or np.isnan(last_seen[position]) else float(last_seen[position])
                due.append((recall, seen, position))
        due.sort()
        if len(due) > 1 and due[0][2] == previous:
            due = due[1:]
        if not due:
            return None
        recall, _, position = due[0]
        when = np.nan if due_at is None else float(due_at[index.item_topic[position]])
        since = f"due since {moment_text(when)} " if np.isfinite(when) else "due "
        return Pick(
            position,
            "knowledge_retention",
            f"{since}(predicted recall {recall:.2f} < {retention:.2f}); "
            f"topic '{_topic_name(view, position)}', answered before",
        )


@dataclass(frozen=True, kw_only=True)
class ReferenceAssessPolicy(AssessPolicy):
    """AssessPolicy's selection over every position."""

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
        index = view.index
        pool = eligible & index.scorable
        if administered is not None and (pool & ~administered).any():
            pool = pool & ~administered
        if not pool.any():
            pool = eligible
        pool = _without(pool, previous)
        positions = np.flatnonzero(pool)
        info = view.information_at(positions)
        k = min(self.top_k, len(positions))
        best = np.argpartition(-info, k - 1)[:k] if k < len(positions) else np.arange(len(positions))
        best = best[np.argsort(-info[best], kind="stable")]
        near = best[info[best] >= info[best[0]] * (1.0 - self.tolerance)]
        position = int(positions[near[rng.integers(near.size)]])
        return Pick(
            position,
            "assessment",
            f"item of maximum information ({float(view.information_at(position)):.3f}; predicted success "
            f"{view.p_correct[position]:.2f}), drawn among the {near.size} most informative",
        )


def reference_topic_figures(view: LearnerView) -> FloatArray:
    """Subtree sums of attempts, of scorable predicted success and of items not yet done, as rows."""
    index = view.index
    runs = topic_runs(index)
    n_topics = index.n_topics
    own = np.empty((3, n_topics))
    state = view.state
    if state is not None:
        topic = index.item_topic[state.touched]
        attempts, done = state.met_attempts, (state.met_attempts > 0) | (state.met_fraction >= 1.0)
    else:
        topic = index.item_topic
        attempts, done = view.attempts.astype(np.float64), (view.attempts > 0) | (view.viewed >= 1.0)
    own[0] = np.bincount(topic, weights=attempts, minlength=n_topics)
    own[2] = runs.counts - np.bincount(topic, weights=done, minlength=n_topics)
    own[1] = topic_sums(runs, view.p_correct, index.scorable)
    return subtree_totals(index, own)


def reference_mastered(view: LearnerView, *, threshold: float, min_attempts: int, streak: int = 0) -> BoolArray:
    """:meth:`LearnerView.mastered` as a computation over every topic's figures."""
    index = view.index
    figures = reference_topic_figures(view)
    count = topic_exercises(index).scorable_count
    with np.errstate(invalid="ignore", divide="ignore"):
        skill = np.where(count > 0, figures[1] / np.maximum(count, 1.0), np.nan)
    all_done = figures[2] == 0
    with np.errstate(invalid="ignore"):
        by_skill = (skill >= threshold) & (figures[0] >= min_attempts)
    mastered = np.where(np.isnan(skill), all_done, by_skill | view.streaks(length=streak))
    structure = topic_exercises(index)
    if structure.leaf_owner.size:
        unmet = np.bincount(
            structure.leaf_owner,
            weights=(~mastered[structure.leaf_topic]).astype(np.float64),
            minlength=index.n_topics,
        )
        has_leaves = np.bincount(structure.leaf_owner, minlength=index.n_topics) > 0
        mastered |= has_leaves & (unmet == 0)
    return mastered  # type: ignore[no-any-return]

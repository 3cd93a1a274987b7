r"""One learner's state in one catalog, and the model that updates and reads it.

:class:`LearnerState` joins, for a (user, catalog):

* **mastery**: a Gaussian belief (mean, variance, amount of evidence) about the
  ability on every topic and on a virtual *overall* node (index ``T``);
* **forgetting**: an FSRS-style memory (stability, difficulty, last review,
  reviews) per topic;
* **bookkeeping** per item position: attempts, skips, last score, largest
  theory fraction viewed, time spent, last timestamp, and a signature of the
  last event (to ignore exact duplicates).

:class:`LearnerModel` speaks the verb pair ``update(state, event) -> state``
(a new state; the input is never changed) and ``predict(state, items) ->
P(correct)``. The topic graph enters in two ways:

* *Hierarchical prior.* A topic without evidence of its own borrows the belief
  of its nearest ancestor with evidence (finally the overall node, whose prior
  is N(0, ``prior_var``)), widened by ``topic_var`` per level. A learner new to
  a topic therefore starts from what is known of the parent topic and of the
  learner overall.
* *Propagation.* An answer on topic ``t`` updates ``t`` with full weight, each
  ancestor and the overall node with ``parent_weight``, and each topic that
  has ``t`` as a prerequisite with ``prerequisite_weight`` (a tempered
  likelihood, see :func:`~learnloop.tracing.update_ability`).

Learning is modelled as a random walk: before each update the variance grows
by ``drift``, and after an answer the topic's mean moves by ``practice_gain``
logits (``failure_gain`` after a wrong answer when set, as PFA separates the
two; a fractional score mixes them) (0 by default: set it to the expected gain per attempt of your
learners, e.g. from the learning curves of past cohorts). The gain does not
apply to an event marked ``practice=False`` (an assessment answer without
feedback); the drift does, so the belief can still follow a learner who is
changing.

A topic the learner has not met yet (no evidence on its node) can be taken to
be ``novelty`` logits harder than the belief says: the prediction on it and
the first answer on it see each item's difficulty raised by ``novelty``, and
from that answer on the topic counts as met (0 by default; on logs where the
first answer on a skill is right less often than the learner's later ones,
e.g. tutors that give hints after a wrong answer, it is positive). The two gains
and the novelty are one value, or one per topic (:mod:`learnloop.tracing.rates` fits them).

With ``prerequisite_gating`` γ > 0 an answer's practice gain reaches its topic
scaled by the topic's readiness, the geometric mean of its prerequisites'
predicted success at their mean difficulty raised to γ
(:mod:`learnloop.tracing._gating`); None (not fitted) or 0 is no gating.

Each update is O(depth + successors), independent of the history length.
Exact duplicates (same item and timestamp and content as that item's last
event) change nothing; anything else that re-uses an event key (an overwrite,
or a late duplicate of an older event) is handled by :meth:`LearnerModel.replay`,
which de-duplicates by (item, timestamp), keeping the latest version.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Sequence
from functools import cached_property
from typing import Any

import numpy as np

from ._apply import Rows, apply_event, merged
from ._columns import EventColumns, apply_columns, apply_run
from ._gating import GatingTables
from ._rates import per_topic
from ._types import ArrayLike, BoolArray, FloatArray, IntArray
from .forgetting import MemoryModel, as_epoch_seconds, recall_probability
from .irt import expected_p_correct
from .predictions import Predictions, TopicRuns, topic_sums
from .state import (
    ATT,
    FRAC,
    LAST,
    MEMORY_BLANK,
    STAB,
    TIME,
    TS,
    LearnerState,
    empty_state,
    frozen_array,
    with_blank_rows,
)
from .status import Status, display_skill, item_credit
from .structure import Event, ItemParams, TopicStructure

__all__ = ["COLUMNS_RUN", "EventColumns", "LearnerModel", "LearnerState", "Status"]

_KIND_CODE = {"attempt": 1, "skip": 2, "view_theory": 3}
#: runs at least this long go through :func:`apply_columns` (shorter ones: event by event)
COLUMNS_RUN = 64


class LearnerModel:
    """Updates and reads :class:`LearnerState` for one catalog (see the module docstring).

    >>> topics = TopicStructure.from_arrays([-1, 0, 0])
    >>> items = ItemParams.from_catalog(item_topic=[1, 1, 2], difficulty=[0.5, 0.5, 0.5],
    ...                                 scorable=[True, True, True], is_theory=[False] * 3)
    >>> model = LearnerModel(topics, items)
    >>> s0 = model.new_state()
    >>> s1 = model.update(s0, Event(item=0, kind="attempt", score=1.0, timestamp=0.0))
    >>> p0, p1 = model.predict(s0), model.predict(s1)
    >>> bool(p1[1] > p0[1]) and bool(p1[2] > p0[2]) and bool(p1[1] > p1[2])
    True
    """

    def __init__(
        self,
        topics: TopicStructure,
        items: ItemParams,
        *,
        prior_var: float = 1.0,
        topic_var: float = 0.3,
        parent_weight: float = 1.0,
        prerequisite_weight: float = 0.2,
        drift: float = 0.01,
        practice_gain: ArrayLike = 0.0,
        failure_gain: ArrayLike | None = None,
        hierarchy: str = "nested",
        momentum_decay: float = 0.0,
        momentum_var: float = 0.0,
        novelty: ArrayLike = 0.0,
        skip_score: float | None = None,
        memory_model: MemoryModel | None = None,
        prerequisite_gating: float | None = None,
    ) -> None:
        problems = []
        if int(items.topic.max(initial=-1)) >= topics.n_topics:
            problems.append(f"items refer to topic {int(items.topic.max())} of {topics.n_topics}")
        if prior_var <= 0 or topic_var < 0 or drift < 0:
            problems.append("prior_var must be positive, topic_var and drift non-negative")
        if not (0.0 <= parent_weight <= 1.0 and 0.0 <= prerequisite_weight <= 1.0):
            problems.append("parent_weight and prerequisite_weight must lie in [0, 1]")
        if skip_score is not None and not 0.0 <= skip_score <= 1.0:
            problems.append(f"skip_score must lie in [0, 1], got {skip_score}")
        if hierarchy not in ("nested", "additive"):
            problems.append(f"hierarchy must be 'nested' or 'additive', got {hierarchy!r}")
        if not (0.0 <= momentum_decay < 1.0 and momentum_var >= 0.0):
            problems.append("momentum_decay must lie in [0, 1) and momentum_var be non-negative")
        if momentum_var > 0.0 and hierarchy != "additive":
            problems.append("a momentum (momentum_var > 0) needs the additive hierarchy")
        if prerequisite_gating is not None and not prerequisite_gating >= 0.0:
            problems.append(f"prerequisite_gating must be non-negative, got {prerequisite_gating}")
        if problems:
            raise ValueError("; ".join(problems))
        self.hierarchy = hierarchy
        self.momentum_decay = momentum_decay
        self.momentum_var = momentum_var
        self.topics = topics
        self.items = items
        self.prior_var = prior_var
        self.topic_var = topic_var
        self.parent_weight = parent_weight
        self.prerequisite_weight = prerequisite_weight
        self.drift = drift
        self._set_rates(practice_gain, practice_gain if failure_gain is None else failure_gain, novelty)
        self.skip_score = skip_score
        self.memory_model = memory_model if memory_model is not None else MemoryModel()
        # plain Python copies for the scalar path
        self._b = items.b.tolist()
        self._a = items.a.tolist()
        self._item_topic = items.topic.tolist()
        self._scorable = items.scorable.tolist()
        self._is_theory = items.is_theory.tolist()
        self._chains = [topics.chain(t).tolist() for t in range(topics.n_topics)]
        self._succ = [topics.successors(t).tolist() for t in range(topics.n_topics)]
        self.runs = TopicRuns.of(items.topic, topics.n_topics)
        # for the beliefs: where each chain reaches the overall node, and the widening per level
        self._at_overall = topics.chains == topics.n_topics
        self._topic_range = np.arange(topics.n_topics)
        self._spread = topic_var * np.arange(topics.chains.shape[1])
        self._never_reviewed = np.full(topics.n_topics, np.nan)
        for shared in (self._at_overall, self._topic_range, self._spread, self._never_reviewed):
            shared.setflags(write=False)
        self.n_scorable = int(np.count_nonzero(items.scorable))
        self._plans: dict[int, tuple[list[int], list[tuple[int, float]]]] = {}  # per topic, see tracing._apply
        self._weights: dict[int, tuple[np.ndarray, tuple[int, bool, BoolArray, int]]] = {}
        # None: not fitted (no gating; learn mode keeps its progression), see tracing._gating
        self.prerequisite_gating = prerequisite_gating
        self._gating = float(prerequisite_gating or 0.0)
        self._gating_tables = GatingTables(topics, items, topics.n_topics + 1) if self._gating > 0.0 else None

    def _set_rates(self, practice_gain: ArrayLike, failure_gain: ArrayLike, novelty: ArrayLike) -> None:
        """The per-topic settings (:mod:`learnloop.tracing.rates`): as given, and one float per topic."""
        n = self.topics.n_topics
        self.practice_gain, self._gain = per_topic(practice_gain, n, "practice_gain")
        self.failure_gain, self._fail = per_topic(failure_gain, n, "failure_gain")
        self.novelty, self._nov = per_topic(novelty, n, "novelty")
        self._has_novelty = any(self._nov)

    def with_rates(self, *, practice_gain: ArrayLike, failure_gain: ArrayLike, novelty: ArrayLike) -> LearnerModel:
        """The same model with other learning rates and novelty (one value, or one per topic)."""
        model = copy.copy(self)
        model._weights = {}
        model.__dict__.pop("kernel_tables", None)
        model._set_rates(practice_gain, failure_gain, novelty)
        return model

    def new_state(self) -> LearnerState:
        """The state of a learner without any interaction."""
        # in the additive hierarchy, topics hold deviations from their parents: N(0, topic_var)
        topic_var = max(self.topic_var, 1e-6) if self.hierarchy == "additive" else None
        return empty_state(self.topics.n_topics, self.items.n_items, self.prior_var, topic_var)

    # -- update ----------------------------------------------------------------

    @staticmethod
    def signature(event: Event) -> int:
        """A deterministic hash of an event's content (not its key)."""
        return hash(
            (
                _KIND_CODE.get(event.kind, 0),
                -1.0 if event.score is None else float(event.score),
                int(event.time_spent_ms or 0),
                -1.0 if event.fraction_completed is None else float(event.fraction_completed),
            )
        )

    def update(self, state: LearnerState, event: Event) -> LearnerState:
        """The state after ``event`` (a new object; ``state`` is unchanged)."""
        return self.update_many(state, (event,))

    def update_many(self, state: LearnerState, events: Iterable[Event]) -> LearnerState:
        """Apply events in the given order; the rows copied are only those of the topics and
        items the learner met (and the new ones), not the whole catalog."""
        events = list(events)
        n = state.n_items
        positions = [e.item for e in events if isinstance(e.item, (int, np.integer)) and 0 <= e.item < n]
        touched, rows, sig, slots = with_blank_rows(state, positions)
        item_rows = {p: rows[s].tolist() for p, s in slots.items()}
        sigs = {p: int(sig[s]) for p, s in slots.items()}
        overall = state.n_topics
        ability = Rows(
            state.ability_topics, state.ability_rows, state.ability_blank.tolist(), overall, state.overall_row.tolist()
        )
        memory = Rows(state.memory_topics, state.memory_rows, MEMORY_BLANK, nan_equal=True)
        before = state.momentum.tolist()
        momentum = [*before]
        n_events = state.n_events
        for event in events:
            if apply_event(self, ability, memory, item_rows, sigs, event, momentum):
                n_events += 1
        for p, s in slots.items():
            rows[s] = item_rows[p]
            sig[s] = sigs[p]
        ability_topics, ability_rows = merged(ability)
        memory_topics, memory_rows = merged(memory)
        overall_row = state.overall_row
        if overall in ability:
            overall_row = np.array(ability[overall])
            overall_row.flags.writeable = False
        touched.flags.writeable = False
        rows.flags.writeable = False
        sig.flags.writeable = False
        return LearnerState._made(
            ability_topics,
            ability_rows,
            state.ability_blank,
            overall_row,
            memory_topics,
            memory_rows,
            overall,
            touched,
            rows,
            sig,
            n,
            n_events,
            state.momentum if momentum == before else frozen_array(np.array(momentum, dtype=np.float64)),
        )

    def update_columns(self, state: LearnerState, columns: EventColumns) -> LearnerState:
        """:meth:`update_many` of events given as columns: a long run through the compiled loop
        when numba is installed (extra ``fast``; equal up to float rounding, see
        :mod:`learnloop.tracing._columns`), otherwise event by event."""
        if len(columns) >= COLUMNS_RUN:
            made = apply_columns(self, state, columns)
            if made is not None:
                return made
        return self.update_many(state, columns.events())

    def update_stops(
        self, state: LearnerState, columns: EventColumns, stops: Sequence[int]
    ) -> list[LearnerState] | None:
        """The states after the events of ``columns`` up to each of ``stops`` (increasing, the last one
        all), made in one call of the compiled loop; None when :meth:`update_columns` must take them."""
        return apply_run(self, state, columns, stops)

    @cached_property
    def kernel_tables(self) -> tuple[np.ndarray, ...]:
        """The model's settings as the arrays the compiled loop reads (see :mod:`learnloop.tracing._kernel`)."""
        succ_ptr = np.r_[0, np.cumsum([len(s) for s in self._succ])].astype(np.intp)
        succ_idx = np.array([n for s in self._succ for n in s], dtype=np.intp)
        memory = self.memory_model
        settings = [self.parent_weight, self.prerequisite_weight, self.drift, self.topic_var]
        settings += [float(self.hierarchy == "additive"), self.momentum_decay, self.momentum_decay**2]
        settings += [self.momentum_var]
        fsrs = [*memory.weights, memory.lapse_below, memory.good_from, memory.time_scale, math.exp(memory.weights[8])]
        return (
            np.ascontiguousarray(self.topics.chains, dtype=np.intp),
            (self.topics.depth + 2).astype(np.intp),
            succ_ptr,
            succ_idx,
            np.array(self._gain, dtype=np.float64),
            np.array(self._fail, dtype=np.float64),
            np.array(self._nov, dtype=np.float64),
            np.array(settings, dtype=np.float64),
            np.array(fsrs, dtype=np.float64),
        )

    def replay(self, events: Iterable[Event], state: LearnerState | None = None) -> LearnerState:
        """Rebuild a state from a history: de-duplicated by (item, timestamp), the
        latest version of a key winning, then applied in time order."""
        latest: dict[tuple[int, float], Event] = {}
        for event in events:
            latest[(event.item, as_epoch_seconds(event.timestamp))] = event
        ordered = sorted(latest.items(), key=lambda kv: kv[0][1])
        return self.update_many(state if state is not None else self.new_state(), (e for _, e in ordered))

    def _validate(self, event: Event) -> list[str]:
        problems = []
        if not 0 <= event.item < len(self._b):
            problems.append(f"item position {event.item} out of range 0..{len(self._b) - 1}")
        if event.kind not in _KIND_CODE:
            problems.append(f"unknown event kind {event.kind!r}")
        if event.score is not None and not 0.0 <= event.score <= 1.0:
            problems.append(f"score must lie in [0, 1], got {event.score}")
        if event.fraction_completed is not None and not 0.0 <= event.fraction_completed <= 1.0:
            problems.append(f"fraction_completed must lie in [0, 1], got {event.fraction_completed}")
        if event.topic is not None and not 0 <= event.topic < len(self._chains):
            problems.append(f"topic index {event.topic} out of range")
        return problems

    # -- read ------------------------------------------------------------------

    def topic_beliefs(self, state: LearnerState) -> tuple[FloatArray, FloatArray]:
        """Effective ability (mean, sd) per topic (T,), the hierarchical prior applied."""
        chains = self.topics.chains
        if self.hierarchy == "additive":  # the ability on a topic is the sum along its chain
            on_chain = np.arange(chains.shape[1])[None, :] < (self.topics.depth + 2)[:, None]
            table = state.ability
            rows = table[chains]
            mean = (rows[:, :, 0] * on_chain).sum(axis=1)
            var = (rows[:, :, 1] * on_chain).sum(axis=1)
            if self.momentum_var > 0.0:  # the short-lived component, decayed to the next answer
                mean = mean + self.momentum_decay * state.momentum[0]
                var = var + self.momentum_decay**2 * state.momentum[1] + self.momentum_var
            if self._has_novelty:
                mean = mean - self.novelty * (table[:-1, 2] <= 0.0)
            return mean, np.sqrt(var)
        table = state.ability
        informed = table[chains, 2] > 0.0
        informed |= self._at_overall  # the overall node is always usable (padding repeats it: its first column wins)
        level = informed.argmax(axis=1)
        node = chains[self._topic_range, level]
        mean = table[node, 0]
        var = table[node, 1] + self._spread[level]
        if self._has_novelty:
            mean = mean - self.novelty * (table[:-1, 2] <= 0.0)
        return mean, np.sqrt(var)

    def overall(self, state: LearnerState) -> tuple[float, float]:
        """The learner's overall ability (mean, sd)."""
        return float(state.overall_row[0]), math.sqrt(float(state.overall_row[1]))

    def predict(self, state: LearnerState, items: ArrayLike | None = None) -> FloatArray:
        """P(correct) per item position (all, or the given positions / boolean mask),
        averaged over the ability belief of each item's topic."""
        mean, sd = self.topic_beliefs(state)
        idx = slice(None) if items is None else np.asarray(items)
        topic = self.items.topic[idx]
        return expected_p_correct(mean[topic], sd[topic] ** 2, self.items.b[idx], self.items.a[idx])

    def predictions(self, state: LearnerState, previous: Predictions | None = None) -> Predictions:
        """:meth:`predict` of every item as :class:`~learnloop.tracing.predictions.Predictions`;
        given the predictions of an earlier state, only the topics whose belief changed are
        computed again (the result is the same)."""
        mean, sd = self.topic_beliefs(state)
        if previous is not None and previous.items is self.items:
            return previous.advance(mean, sd)
        return Predictions.compute(self.items, self.runs, mean, sd)

    def recall(self, state: LearnerState, at: float | Any) -> FloatArray:
        """Predicted recall probability per topic at time ``at`` (NaN: never reviewed)."""
        now = as_epoch_seconds(at)
        # NaN: what the formula gives for a topic never reviewed
        out = self._never_reviewed.copy() if state.n_topics == self.topics.n_topics else np.full(state.n_topics, np.nan)
        rows = state.memory_rows
        elapsed = (now - rows[:, LAST]) / 86400.0 * self.memory_model.time_scale
        out[state.memory_topics] = recall_probability(rows[:, STAB], elapsed)
        return out

    def due_at(self, state: LearnerState, retention: float) -> FloatArray:
        """When each topic's predicted recall falls below ``retention`` (epoch seconds; NaN: never
        reviewed): the last review plus :meth:`MemoryModel.interval_days` of its stability. The
        one place, with :meth:`recall`, where the memory model's clock is read for scheduling."""
        out = self._never_reviewed.copy() if state.n_topics == self.topics.n_topics else np.full(state.n_topics, np.nan)
        rows = state.memory_rows
        days = self.memory_model.interval_days(rows[:, STAB], retention)
        out[state.memory_topics] = rows[:, LAST] + days * 86400.0
        return out

    def status(
        self,
        state: LearnerState,
        mask: ArrayLike,
        *,
        p_correct: FloatArray | None = None,
        previous_display: float | None = None,
        predictions: Predictions | None = None,
    ) -> Status:
        """All status figures over the items selected by a boolean ``mask``.

        The figures of :mod:`learnloop.tracing.status` (``proficiency``,
        ``progress``, ``skill_level``, ``display_skill``): this is the one status
        computation of the engine, for the v1 and v2 dialects alike. The
        predicted success is summed topic by topic (:func:`topic_sums`), so that
        :class:`Predictions` carried from an earlier state give the same figure;
        progress, time and the last interaction are read off the items met.
        """
        m = np.asarray(mask, dtype=bool)
        if predictions is not None:
            p = predictions.p
        else:
            p = self.predict(state) if p_correct is None else p_correct
        n, whole, scorable, n_scorable = self._mask_counts(m)
        prof = None
        if n_scorable:
            sums = predictions.sums(scorable) if predictions is not None else topic_sums(self.runs, p, scorable)
            prof = float(sums.sum()) / n_scorable
        # progress, time and the last interaction come from the items met only
        if whole:
            met, rows = state.touched, state.rows
        else:
            in_mask = m[state.touched]
            met, rows = state.touched[in_mask], state.rows[in_mask]
        prog = self._credit_sum(met, rows) / n if n else 0.0
        if prof is not None:
            skill = prof
        else:
            skill = float(np.dot(p, m)) / n if n else 0.0
        # (the value at argmax is max(): a NaN is the first NaN either way; argmax() is far cheaper here)
        last = float(rows[rows[:, TS].argmax(), TS]) if rows.shape[0] else -np.inf
        return Status(
            proficiency=prof,
            progress=prog,
            time_spent_ms=int(rows[:, TIME].sum()),
            last_interaction_timestamp=None if last == -np.inf else last,
            skill_level=skill,
            display_skill=(
                min(max(skill, 0.0), 1.0) * math.sqrt(min(max(prog, 0.0), 1.0))  # display_skill() on scalars
                if previous_display is None
                else float(display_skill(skill, prog, previous=previous_display))
            ),
        )

    def _mask_counts(self, mask: BoolArray) -> tuple[int, bool, BoolArray, int]:
        """The items of ``mask``, whether it is the whole catalog, ``mask`` and scorable and
        that count; kept for a read-only mask (the same array for the same mask)."""
        found = None if mask.flags.writeable else self._weights.get(id(mask))
        if found is not None and found[0] is mask:
            return found[1]
        if mask.all():  # the whole catalog: the scorable items themselves
            counts = (int(mask.size), True, self.items.scorable, self.n_scorable)
        else:
            w = mask & self.items.scorable
            w.setflags(write=False)
            counts = (int(np.count_nonzero(mask)), False, w, int(np.count_nonzero(w)))
        if not mask.flags.writeable:
            if len(self._weights) >= 64:
                self._weights.clear()
            self._weights[id(mask)] = (mask, counts)
        return counts

    @cached_property
    def _has_theory(self) -> bool:
        """Whether any item of the catalog is theory."""
        return bool(self.items.is_theory.any())

    def _credit_sum(self, met: IntArray, rows: FloatArray) -> float:
        """The summed progress credit of the items met ``met`` (their ``rows``)."""
        attempted = rows[:, ATT] > 0
        theory = self.items.is_theory[met] if self._has_theory else None
        if theory is None or not np.count_nonzero(theory):  # a credit of 0 or 1 per item: the sum is a count
            return float(np.count_nonzero(attempted))
        return float(item_credit(rows[:, ATT], rows[:, FRAC], theory).sum())

    def credit(self, state: LearnerState) -> FloatArray:
        """Per-item progress credit in [0, 1]."""
        return item_credit(state.attempts, state.max_fraction, self.items.is_theory)

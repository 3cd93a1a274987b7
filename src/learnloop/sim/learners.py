r"""Simulated learners with a known ground truth, for tests, benchmarks and notebooks.

A :class:`SimulatedLearner` works in one catalog (the same arrays tracing uses:
``topic_parent``, ``prerequisites``, per-item topic, ``b``, ``a``). Its truth:

* **ability per topic**: overall ability ~ N(0, ``ability_sd``); each topic
  adds N(0, ``topic_sd``) to its parent's ability (root topics to the overall);
* **learning with practice**: every attempt on a topic adds
  ``learn_rate * (max_gain - gain)`` to the topic's learned gain (in logits);
  a theory view adds ``theory_rate`` times as much, weighted by the fraction
  viewed;
* **forgetting**: the learned gain decays with half-life ``half_life_days``
  (base ability is not forgotten);
* **prerequisites**: a topic's ability is lowered by ``prerequisite_penalty``
  times the mean shortfall of its prerequisites below ``mastery_level`` (one
  value, or one per topic); with
  ``prerequisite_gating`` > 0 they also gate learning, as in knowledge space
  theory: practice on a topic teaches ``exp(-gating * shortfall)`` times as much
  for each prerequisite whose ability falls short of ``mastery_level`` (0 turns
  gating off: then the order in which topics are practised does not matter);
* **slip and guess**: P(correct) = guess + (1 - guess - slip) sigmoid(a (theta - b)).

Every random draw comes from the learner's private generator, so the same
seed gives the same learner and the same answers.

>>> learner = SimulatedLearner(topic_parent=[-1, 0], item_topic=[1, 1], b=[0.0, 1.0], seed=4)
>>> score = learner.respond(0, at=0.0)
>>> score in (0.0, 1.0), int(learner.attempts[1])
(True, 1)
"""

from __future__ import annotations

import math
from datetime import datetime

import numpy as np
import numpy.typing as npt

from learnloop.tracing.forgetting import as_epoch_seconds
from learnloop.tracing.structure import Event

__all__ = ["SimulatedLearner"]

_DAY = 86400.0


class SimulatedLearner:
    """One simulated learner (see the module docstring)."""

    def __init__(
        self,
        *,
        topic_parent: npt.ArrayLike,
        item_topic: npt.ArrayLike,
        b: npt.ArrayLike,
        a: npt.ArrayLike | None = None,
        prerequisites: npt.ArrayLike = (),
        seed: int = 0,
        ability_sd: float = 1.0,
        topic_sd: float = 0.5,
        learn_rate: float = 0.1,
        max_gain: float = 2.0,
        theory_rate: float = 0.5,
        half_life_days: float = 14.0,
        prerequisite_penalty: float = 0.5,
        prerequisite_gating: float = 0.0,
        mastery_level: npt.ArrayLike = 0.0,
        guess: float = 0.1,
        slip: float = 0.05,
        fractional: bool = False,
    ) -> None:
        if not (0.0 <= guess < 1.0 and 0.0 <= slip < 1.0 and guess + slip < 1.0):
            raise ValueError(f"need 0 <= guess, slip and guess + slip < 1, got {guess}, {slip}")
        self._rng = np.random.default_rng(seed)
        parent = np.asarray(topic_parent, dtype=np.intp).ravel()
        self.topic_parent = parent
        self.item_topic = np.asarray(item_topic, dtype=np.intp).ravel()
        self.b = np.asarray(b, dtype=np.float64).ravel()
        self.a = np.ones_like(self.b) if a is None else np.asarray(a, dtype=np.float64).ravel()
        pre = np.asarray(prerequisites, dtype=np.intp).reshape(-1, 2)
        self.prerequisites_of: list[list[int]] = [[] for _ in range(parent.size)]
        for p, t in pre.tolist():
            self.prerequisites_of[t].append(p)
        self.learn_rate, self.max_gain, self.theory_rate = learn_rate, max_gain, theory_rate
        self.half_life_days = half_life_days
        self.prerequisite_penalty = prerequisite_penalty
        self.mastery_level = np.broadcast_to(np.asarray(mastery_level, dtype=np.float64), parent.shape).copy()
        if prerequisite_gating < 0:
            raise ValueError(f"prerequisite_gating must be non-negative, got {prerequisite_gating}")
        self.prerequisite_gating = prerequisite_gating
        self.guess, self.slip, self.fractional = guess, slip, fractional
        self.overall = float(self._rng.normal(0.0, ability_sd))
        base = np.empty(parent.size)
        offsets = self._rng.normal(0.0, topic_sd, parent.size)
        for t in self._topological(parent):
            base[t] = (self.overall if parent[t] < 0 else base[parent[t]]) + offsets[t]
        self.base_ability = base
        self.gain = np.zeros(parent.size)
        self.gain_time = np.zeros(parent.size)
        self.attempts = np.zeros(parent.size, dtype=np.intp)

    @staticmethod
    def _topological(parent: npt.NDArray[np.intp]) -> list[int]:
        order: list[int] = []
        seen = np.zeros(parent.size, dtype=bool)
        for t in range(parent.size):
            stack = []
            node = t
            while node >= 0 and not seen[node]:
                stack.append(node)
                node = int(parent[node])
            for n in reversed(stack):
                seen[n] = True
                order.append(n)
        return order

    # -- truth -----------------------------------------------------------------

    def _gain_at(self, topic: int, now: float) -> float:
        elapsed = max(0.0, now - self.gain_time[topic]) / _DAY
        return float(self.gain[topic]) * 0.5 ** (elapsed / self.half_life_days)  # type: ignore[no-any-return]

    def ability(self, topic: int, at: datetime | float) -> float:
        """True ability on ``topic`` at time ``at`` (learning, forgetting, prerequisites)."""
        now = as_epoch_seconds(at)
        theta = float(self.base_ability[topic]) + self._gain_at(topic, now)
        pres = self.prerequisites_of[topic]
        if pres:
            shortfall = sum(max(0.0, float(self.mastery_level[p]) - self.ability(p, now)) for p in pres) / len(pres)
            theta -= self.prerequisite_penalty * shortfall
        return theta

    def p_correct(self, item: int, at: datetime | float) -> float:
        """True probability of answering ``item`` correctly at time ``at``."""
        theta = self.ability(int(self.item_topic[item]), at)
        z = float(self.a[item]) * (theta - float(self.b[item]))
        core = 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))
        return self.guess + (1.0 - self.guess - self.slip) * core

    def readiness(self, topic: int, at: datetime | float) -> float:
        """How much practice on ``topic`` teaches now (1: every prerequisite is mastered)."""
        if self.prerequisite_gating == 0.0 or not self.prerequisites_of[topic]:
            return 1.0
        now = as_epoch_seconds(at)
        shortfall = sum(
            max(0.0, float(self.mastery_level[p]) - self.ability(p, now)) for p in self.prerequisites_of[topic]
        )
        return math.exp(-self.prerequisite_gating * shortfall)

    def _practise(self, topic: int, now: float, amount: float) -> None:
        amount *= self.readiness(topic, now)
        g = self._gain_at(topic, now)
        self.gain[topic] = g + amount * self.learn_rate * (self.max_gain - g)
        self.gain_time[topic] = now

    # -- actions ---------------------------------------------------------------

    def respond(self, item: int, at: datetime | float, *, feedback: bool = True) -> float:
        """Answer ``item`` at time ``at``: a score in [0, 1].

        With ``feedback`` (practice) the learner learns from the attempt;
        without it (a test item whose result is not shown) it does not.
        """
        now = as_epoch_seconds(at)
        p = self.p_correct(item, now)
        if self.fractional:
            score = float(np.clip(p + self._rng.normal(0.0, 0.15), 0.0, 1.0))
        else:
            score = float(self._rng.random() < p)
        topic = int(self.item_topic[item])
        self.attempts[topic] += 1
        if feedback:
            self._practise(topic, now, 1.0)
        return score

    def view_theory(self, item: int, at: datetime | float, fraction: float = 1.0) -> None:
        """Read a theory item of the item's topic; learning is ``theory_rate * fraction``."""
        self._practise(int(self.item_topic[item]), as_epoch_seconds(at), self.theory_rate * fraction)

    def attempt_event(self, item: int, at: datetime | float, *, time_spent_ms: int = 30_000) -> Event:
        """Answer ``item`` and return the event tracing expects."""
        return Event(item=item, kind="attempt", score=self.respond(item, at), timestamp=at, time_spent_ms=time_spent_ms)

"""Typed settings of the engine's learner model."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from learnloop.errors import ValidationError

__all__ = ["LearnerOptions"]


@dataclass(frozen=True, kw_only=True)
class LearnerOptions:
    """Settings of the learner model (see :class:`~learnloop.tracing.LearnerModel`).

    The engine's defaults differ from the model's in two places: learners
    improve with practice, so each answer outside an assessment moves the
    topic's ability by ``practice_gain`` logits, and the belief widens by
    ``drift`` before each update. Answers in an assess session count as
    evidence only.

    >>> LearnerOptions.of({"drift": 0.05}).drift
    0.05
    >>> LearnerOptions.of({"drfit": 0.05})
    Traceback (most recent call last):
    ...
    learnloop.errors.ValidationError: unknown learner option 'drfit' (known: desired_retention, drift, failure_gain, hierarchy, memory_model, momentum_decay, momentum_var, novelty, parent_weight, practice_gain, prerequisite_gating, prerequisite_weight, prior_var, skip_score, topic_var)
    """

    prior_var: float = 1.0
    topic_var: float = 0.3
    parent_weight: float = 1.0
    prerequisite_weight: float = 0.2
    drift: float = 0.02
    practice_gain: float = 0.1
    failure_gain: float | None = None
    hierarchy: str = "nested"
    momentum_decay: float = 0.0
    momentum_var: float = 0.0
    novelty: float = 0.0
    skip_score: float | None = None
    memory_model: Any = None
    #: how much unmastered prerequisites hold back learning (:mod:`learnloop.tracing._gating`; 0: not at
    #: all); None: not fitted, the model does not gate and learn mode keeps its progression
    prerequisite_gating: float | None = None
    #: the predicted recall below which review serves an item (not a setting of the learner model)
    desired_retention: float = 0.9

    #: the settings that are not the learner model's (left out of :meth:`as_kwargs`)
    NOT_MODEL: ClassVar[tuple[str, ...]] = ("desired_retention",)

    #: the settings that may hold one value per topic (see :meth:`with_topic_rates`)
    TOPIC_RATES: ClassVar[tuple[str, ...]] = ("practice_gain", "failure_gain", "novelty")

    @classmethod
    def of(cls, options: LearnerOptions | Mapping[str, Any] | None) -> LearnerOptions:
        """Options from a mapping of overrides (unknown names are an error at once)."""
        if options is None:
            return cls()
        if isinstance(options, LearnerOptions):
            return options
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValidationError(
                [f"unknown learner option '{name}' (known: {', '.join(sorted(known))})" for name in unknown]
            )
        return cls(**options)

    def __post_init__(self) -> None:
        retention = self.desired_retention
        if not (isinstance(retention, int | float) and 0.0 < retention < 1.0):
            raise ValidationError(f"desired_retention must be a number in (0, 1), got {retention!r}")

    def as_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of :class:`~learnloop.tracing.LearnerModel` that differ from its defaults
        or that the engine sets (``None`` values left out)."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in self.NOT_MODEL}
        return {k: v for k, v in values.items() if v is not None}

    def with_topic_rates(
        self, topic_ids: Sequence[str], rates: Mapping[str, Mapping[str, float]] | None
    ) -> dict[str, Any]:
        """The learner model's keyword arguments (:meth:`as_kwargs`) with the values of ``rates``
        (``{topic_id: {"practice_gain": ..., "failure_gain": ..., "novelty": ...}}``) put in
        per topic, as tuples over ``topic_ids`` (the model's topics, in order); a topic without
        values of its own keeps the options'.

        >>> kwargs = LearnerOptions().with_topic_rates(["a", "b"], {"b": {"practice_gain": 0.3, "failure_gain": 0.0}})
        >>> kwargs["practice_gain"], kwargs["failure_gain"], kwargs["novelty"]
        ((0.1, 0.3), (0.1, 0.0), (0.0, 0.0))
        """
        kwargs = self.as_kwargs()
        if not rates:
            return kwargs
        shared = {
            "practice_gain": self.practice_gain,
            "failure_gain": self.practice_gain if self.failure_gain is None else self.failure_gain,
            "novelty": self.novelty,
        }
        for name, value in shared.items():
            kwargs[name] = tuple(float(rates[t].get(name, value)) if t in rates else float(value) for t in topic_ids)
        return kwargs

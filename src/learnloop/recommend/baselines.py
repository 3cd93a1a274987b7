"""Baseline policies to compare the adaptive modes against.

- :class:`RandomPolicy`: a uniformly random eligible item (never the previous one).
- :class:`FixedOrderPolicy`: the catalog's item order, each item once, then
  again from the start; the order a static course would follow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from learnloop._types import BoolArray
from learnloop.recommend.candidates import without
from learnloop.recommend.policies import Pick, Policy
from learnloop.recommend.view import LearnerView

__all__ = ["FixedOrderPolicy", "RandomPolicy"]


@dataclass(frozen=True)
class RandomPolicy(Policy):
    name = "random"

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
        pool = np.flatnonzero(without(eligible, previous))
        position = int(rng.choice(pool))
        return Pick(position, "exploration", "baseline: a random eligible item")


@dataclass(frozen=True)
class FixedOrderPolicy(Policy):
    name = "fixed-order"

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
        done = (view.attempts > 0) | (view.viewed >= 1.0)
        fresh = eligible & ~done
        if fresh.any():
            position = int(np.flatnonzero(fresh)[0])
        else:
            positions = np.flatnonzero(eligible)
            later = positions[positions > (previous if previous is not None else -1)]
            position = int(later[0] if later.size else positions[0])
        return Pick(position, "content_progression", "baseline: the next item in catalog order")

"""hypothesis strategies for simulated learners with a known ground truth.

A :class:`~learnloop.sim.SimulatedLearner` lives in one catalog (it needs the
catalog's topic graph and item difficulties), while hypothesis draws a
learner before it knows the catalog. So :func:`learners` draws a
:class:`LearnerSpec`, a seed and the learner's traits, and
:meth:`LearnerSpec.build` makes the learner for a compiled catalog:

>>> from hypothesis import given, settings
>>> from learnloop.content import compile_catalog
>>> from learnloop.testing import content
>>> @settings(max_examples=5, deadline=None)
... @given(content(), learners())
... def test_a_learner_answers_in_range(drawn, spec):
...     items, catalog = drawn
...     index = compile_catalog(catalog, {i.item_id: i for i in items})
...     learner = spec.build(index)
...     assert all(0.0 <= learner.p_correct(p, at=0.0) <= 1.0 for p in range(index.n_items))
>>> test_a_learner_answers_in_range()
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from hypothesis import strategies as st

from learnloop.content import CatalogIndex
from learnloop.sim import SimulatedLearner, learner_for

__all__ = ["LearnerSpec", "learners"]


@dataclass(frozen=True)
class LearnerSpec:
    """A seed and the traits of a :class:`~learnloop.sim.SimulatedLearner`.

    The fields are the learner's keyword arguments (see
    :mod:`learnloop.sim.learners`); ``mastery_margin`` is passed to
    :func:`~learnloop.sim.learner_for`.

    >>> spec = LearnerSpec(seed=3, guess=0.2)
    >>> spec.options()["guess"], spec.seed
    (0.2, 3)
    """

    seed: int = 0
    ability_sd: float = 1.0
    topic_sd: float = 0.5
    learn_rate: float = 0.1
    half_life_days: float = 14.0
    prerequisite_gating: float = 0.0
    mastery_margin: float | None = None
    guess: float = 0.1
    slip: float = 0.05
    fractional: bool = False

    def options(self) -> dict[str, object]:
        """The keyword arguments for :func:`~learnloop.sim.learner_for`, without the seed."""
        out = asdict(self)
        del out["seed"]
        return out

    def build(self, index: CatalogIndex) -> SimulatedLearner:
        """A fresh learner on ``index`` (the same spec always gives the same learner)."""
        return learner_for(index, seed=self.seed, **self.options())  # type: ignore[arg-type]


@st.composite
def learners(
    draw: st.DrawFn,
    *,
    seeds: st.SearchStrategy[int] | None = None,
    fractional: bool | None = None,
) -> LearnerSpec:
    """A :class:`LearnerSpec`: a seed and plausible traits.

    Traits range over weak and strong learners, slow and fast learning,
    quick and slow forgetting, guessing and slipping, with or without
    prerequisite gating. ``fractional`` fixes whether the learner answers with
    partial credit (drawn when ``None``).

    >>> from hypothesis import find
    >>> find(learners(), lambda spec: spec.guess > 0.2).guess
    0.25
    """
    seed = draw(seeds if seeds is not None else st.integers(min_value=0, max_value=2**32 - 1))
    guess = draw(st.sampled_from((0.0, 0.1, 0.25)))
    slip = draw(st.sampled_from((0.0, 0.05, 0.15)))
    gating = draw(st.sampled_from((0.0, 0.0, 1.0)))
    return LearnerSpec(
        seed=seed,
        ability_sd=draw(st.sampled_from((0.5, 1.0, 1.5))),
        topic_sd=draw(st.sampled_from((0.0, 0.5))),
        learn_rate=draw(st.sampled_from((0.0, 0.05, 0.1, 0.3))),
        half_life_days=draw(st.sampled_from((1.0, 14.0, 90.0))),
        prerequisite_gating=gating,
        mastery_margin=draw(st.sampled_from((None, 0.5))) if gating else None,
        guess=guess,
        slip=slip,
        fractional=draw(st.booleans()) if fractional is None else fractional,
    )

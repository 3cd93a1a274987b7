"""learnloop.testing.check_policy: every built-in policy passes it, and it catches each broken rule."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

import learnloop.recommend as recommend
import learnloop.recommend.baselines as baselines
from learnloop.recommend import LearnerView, LearnPolicy, Pick, Policy
from learnloop.testing import check_policy


def _built_in_policies() -> list[Policy]:
    """Every concrete policy class reachable through the public packages, built with its defaults."""
    found = []
    for module in (recommend, baselines):
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) and issubclass(value, Policy) and value is not Policy:
                found.append(value())
    return found


def test_the_built_in_policies_are_found() -> None:
    names = {type(p).__name__ for p in _built_in_policies()}
    assert names == {"LearnPolicy", "ReviewPolicy", "AssessPolicy", "RandomPolicy", "FixedOrderPolicy"}


@pytest.mark.parametrize("policy", _built_in_policies(), ids=lambda p: type(p).__name__)
def test_every_built_in_policy_honours_the_contract(policy: Policy) -> None:
    check_policy(policy, max_examples=25)


_CALLS: list[None] = []


@dataclasses.dataclass(frozen=True)
class _Broken(Policy):
    """The learn policy with one rule broken, chosen by ``how``."""

    how: str = ""

    def select(
        self,
        view: LearnerView,
        eligible: np.ndarray,
        *,
        previous: int | None,
        rng: np.random.Generator,
        administered: np.ndarray | None = None,
    ) -> Pick | None:
        if self.how == "outside" and eligible.any() and not eligible.all():
            return Pick(int(np.flatnonzero(~eligible)[0]), "x", "an ineligible item")
        if self.how == "nothing" and eligible.sum() == 1:
            return None
        if self.how == "mutates" and eligible.sum() > 1:
            eligible[np.flatnonzero(eligible)[0]] = False
            return LearnPolicy().select(view, eligible, previous=previous, rng=rng, administered=administered)
        if self.how == "reasonless" and eligible.any():
            return Pick(int(np.flatnonzero(eligible)[0]), "", "")
        if self.how == "stateful" and eligible.sum() > 1:
            _CALLS.append(None)  # a pick that depends on how often it was called, not on its inputs
            return Pick(int(np.flatnonzero(eligible)[len(_CALLS) % 2]), "turn", "every other eligible item")
        return LearnPolicy().select(view, eligible, previous=previous, rng=rng, administered=administered)


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("outside", "not eligible"),
        ("nothing", r"picked nothing from 1 eligible position\(s\)"),
        ("mutates", "changed the eligibility mask"),
        ("reasonless", "gave no reason"),
        ("stateful", "for the same inputs and seed"),
    ],
)
def test_a_broken_rule_is_reported(how: str, message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        check_policy(_Broken(how), max_examples=60, shrink=False)


def test_a_select_with_another_signature_is_reported() -> None:
    class Positional(Policy):
        def select(self, view, eligible, previous, rng, administered=None):  # type: ignore[no-untyped-def, override]
            return None

    with pytest.raises(AssertionError, match="does not have the signature"):
        check_policy(Positional())

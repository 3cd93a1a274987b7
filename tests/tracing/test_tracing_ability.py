"""Online ability update: golden values, properties, latency."""

from __future__ import annotations

import math

import pytest
from calltrace import calls as _calls
from hypothesis import given
from hypothesis import strategies as st

from learnloop.tracing import update_ability


def test_golden_rasch_update_correct_answer() -> None:
    # prior N(0, 1), item b = 0, a = 1, score 1:
    # p0 = sigmoid(0) = 0.5; m' = 0 + (1 - 0.5) / (1/1 + 0.5 * 0.5) = 0.5 / 1.25 = 0.4
    # p1 = sigmoid(0.4) = 0.598687660; p1 (1 - p1) = 0.240260746; v' = 1 / 1.240260746 = 0.806282069
    m, v = update_ability(0.0, 1.0, b=0.0, score=1.0)
    assert m == pytest.approx(0.4, abs=1e-12)
    assert v == pytest.approx(0.8062820688581241, abs=1e-12)


def test_golden_2pl_partial_credit_update() -> None:
    # prior N(0.5, 0.5), item b = 1, a = 2, score 0.25:
    # p0 = sigmoid(2 * (0.5 - 1)) = sigmoid(-1) = 0.268941421; p0 (1 - p0) = 0.196611933
    # m' = 0.5 + 2 (0.25 - 0.268941421) / (2 + 4 * 0.196611933) = 0.5 - 0.037882843 / 2.786447733 = 0.486404610
    # p1 = sigmoid(2 * (0.486404610 - 1)) = sigmoid(-1.027190779) = 0.263629093
    # v' = 1 / (2 + 4 * 0.263629093 * 0.736370907) = 1 / (2 + 4 * 0.194128794) = 1 / 2.776515176 = 0.360163708
    m, v = update_ability(0.5, 0.5, b=1.0, a=2.0, score=0.25)
    assert m == pytest.approx(0.486404610, abs=1e-9)
    assert v == pytest.approx(0.360163708, abs=1e-9)


@given(
    mean=st.floats(-8, 8),
    var=st.floats(1e-4, 25),
    b=st.floats(-6, 6),
    a=st.floats(0.2, 4),
    score=st.floats(0, 1),
    weight=st.floats(0, 1),
)
def test_update_is_finite_and_shrinks_variance(
    mean: float, var: float, b: float, a: float, score: float, weight: float
) -> None:
    m, v = update_ability(mean, var, b=b, score=score, a=a, weight=weight)
    assert math.isfinite(m) and math.isfinite(v)
    assert 0 < v <= var * (1 + 1e-12)
    # the mean moves towards the evidence: up after a score above the expected one, down below
    p = 1 / (1 + math.exp(-a * (mean - b)))
    assert (m - mean) * (score - p) >= -1e-12


@pytest.mark.parametrize("score", [0.0, 0.4, 1.0, 7.0])
def test_update_is_a_few_float_operations(score: float) -> None:
    # the online update is the scalar path of every event: two sigmoids of plain floats, nothing more
    # (its time per call is in benchmarks/bench_tracing.py)
    assert _calls(lambda: update_ability(0.1, 0.7, b=0.3, score=score, a=1.5, weight=0.5, drift=0.01)) == [
        "update_ability",
        "_sigmoid",
        "exp",
        "_sigmoid",
        "exp",
    ]
    m, v = update_ability(0.1, 0.7, b=0.3, score=score)
    assert type(m) is float and type(v) is float

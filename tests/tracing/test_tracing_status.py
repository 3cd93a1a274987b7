"""Status figures over filters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from learnloop.tracing import display_skill, item_credit, proficiency, progress, skill_level

P = np.array([0.9, 0.5, 0.7, 0.2, 0.4])
SCORABLE = np.array([True, True, True, False, False])
THEORY = np.array([False, False, False, True, True])
ATTEMPTS = np.array([2, 0, 1, 0, 0])
FRACTION = np.array([0.0, 0.0, 0.0, 0.5, 1.0])


def test_proficiency_is_mean_over_scorable_filter_items() -> None:
    assert proficiency(P, SCORABLE, [True, True, False, True, True]) == pytest.approx(0.7)
    assert proficiency(P, SCORABLE, [False, False, False, True, True]) is None


def test_progress_counts_attempts_and_theory_fractions() -> None:
    np.testing.assert_allclose(item_credit(ATTEMPTS, FRACTION, THEORY), [1, 0, 1, 0.5, 1])
    assert progress(ATTEMPTS, FRACTION, THEORY, np.ones(5, bool)) == pytest.approx(3.5 / 5)
    assert progress(ATTEMPTS, FRACTION, THEORY, np.zeros(5, bool)) == 0.0


def test_skill_level_falls_back_to_all_items_and_empty() -> None:
    assert skill_level(P, SCORABLE, [False, False, False, True, True]) == pytest.approx(0.3)
    assert skill_level(P, SCORABLE, np.zeros(5, bool)) == 0.0


def test_many_filters_at_once() -> None:
    masks = np.array([[True] * 5, [False, False, False, True, True]])
    prof = proficiency(P, SCORABLE, masks)
    assert isinstance(prof, np.ndarray) and prof[0] == pytest.approx(0.7) and np.isnan(prof[1])
    np.testing.assert_allclose(progress(ATTEMPTS, FRACTION, THEORY, masks), [0.7, 0.75])
    np.testing.assert_allclose(skill_level(P, SCORABLE, masks), [0.7, 0.3])


@given(skill=st.floats(0, 1), prog=st.floats(0, 1), delta=st.floats(-1, 1))
def test_display_skill_is_bounded_and_steadier(skill: float, prog: float, delta: float) -> None:
    shown = display_skill(skill, prog)
    assert 0.0 <= shown <= skill + 1e-12
    other = min(1.0, max(0.0, skill + delta))
    assert abs(display_skill(other, prog) - shown) <= abs(other - skill) + 1e-12


def test_display_skill_smoothing_and_validation() -> None:
    assert display_skill(0.8, 1.0, previous=0.5, smoothing=0.5) == pytest.approx(0.65)
    with pytest.raises(ValueError, match="smoothing"):
        display_skill(0.5, 0.5, smoothing=0.0)

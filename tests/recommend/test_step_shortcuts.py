"""Shortcuts of the adaptive step give what the long way gives.

The step's generator is made from 32-bit words instead of a tuple of integers
(the same generator).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from learnloop._sessions import seeded_rng

_VALUES = st.one_of(
    st.sampled_from([0, 1, 2**32 - 1, 2**32, 2**64 - 1, 2**64]),
    st.integers(min_value=0, max_value=2**140),
)


@given(st.lists(_VALUES, min_size=1, max_size=5))
def test_seeded_rng_is_default_rng_of_the_same_values(values: list[int]) -> None:
    fast, plain = seeded_rng(*values), np.random.default_rng(tuple(values))
    assert fast.bit_generator.state == plain.bit_generator.state
    assert fast.random(3).tolist() == plain.random(3).tolist()


def test_seeded_rng_of_values_that_are_not_plain_non_negative_ints_takes_the_ordinary_path() -> None:
    assert seeded_rng(np.int64(7), 3).bit_generator.state == np.random.default_rng((7, 3)).bit_generator.state
    assert seeded_rng(True, 3).bit_generator.state == np.random.default_rng((True, 3)).bit_generator.state
    try:
        seeded_rng(-1, 3)
    except ValueError as exc:
        assert "negative" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("a negative seed is refused, as default_rng refuses it")

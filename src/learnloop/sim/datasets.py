"""Generators of response data with known ground truth, for recovery checks and benchmarks.

* :func:`generate_irt` - a persons x items matrix of (optionally fractional)
  scores drawn from a Rasch or 2PL model with known abilities and item
  parameters.
* :func:`generate_bkt` - answer sequences drawn from BKT with known parameters
  per skill.

Both take ``seed`` and draw from a private :class:`numpy.random.Generator`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from learnloop.tracing.bkt import Sequences

__all__ = ["BKTData", "IRTData", "generate_bkt", "generate_irt"]


@dataclass(frozen=True)
class IRTData:
    """Responses in event-log form (``person``, ``item``, ``score``) with the truth."""

    person: npt.NDArray[np.intp]
    item: npt.NDArray[np.intp]
    score: npt.NDArray[np.float64]
    theta: npt.NDArray[np.float64]
    b: npt.NDArray[np.float64]
    a: npt.NDArray[np.float64]

    @property
    def n_persons(self) -> int:
        """Number of simulated persons."""
        return int(self.theta.size)

    @property
    def n_items(self) -> int:
        """Number of simulated items."""
        return int(self.b.size)


def generate_irt(
    n_persons: int = 500,
    n_items: int = 100,
    *,
    model: str = "rasch",
    density: float = 1.0,
    fractional: float = 0.0,
    b_sd: float = 1.0,
    seed: int = 0,
) -> IRTData:
    """Draw abilities ~ N(0, 1), difficulties ~ N(0, b_sd) and (2PL) log a ~ N(0, 0.3).

    ``density`` is the share of (person, item) pairs observed; ``fractional``
    the share of responses whose score is a partial credit (the probability of
    a correct answer plus noise, clipped to [0, 1]) instead of 0/1.

    >>> d = generate_irt(20, 10, seed=3)
    >>> d.score.shape, sorted(set(d.score.tolist()))
    ((200,), [0.0, 1.0])
    """
    if model not in ("rasch", "2pl"):
        raise ValueError(f"model must be 'rasch' or '2pl', got {model!r}")
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, n_persons)
    b = rng.normal(0.0, b_sd, n_items)
    a = np.exp(rng.normal(0.0, 0.3, n_items)) if model == "2pl" else np.ones(n_items)
    person, item = np.divmod(np.arange(n_persons * n_items), n_items)
    if density < 1.0:
        keep = rng.random(person.size) < density
        person, item = person[keep], item[keep]
    p = 1.0 / (1.0 + np.exp(-a[item] * (theta[person] - b[item])))
    score = (rng.random(p.size) < p).astype(np.float64)
    if fractional > 0.0:
        part = rng.random(p.size) < fractional
        score[part] = np.clip(p[part] + rng.normal(0.0, 0.1, int(part.sum())), 0.0, 1.0)
    return IRTData(person=person.astype(np.intp), item=item.astype(np.intp), score=score, theta=theta, b=b, a=a)


@dataclass(frozen=True)
class BKTData:
    """Answers in event-log form (time ordered) with the true parameters and states."""

    skill: npt.NDArray[np.intp]
    student: npt.NDArray[np.intp]
    correct: npt.NDArray[np.int8]
    known: npt.NDArray[np.bool_]
    true_params: npt.NDArray[np.float64]

    def sequences(self, mask: npt.NDArray[np.bool_] | None = None) -> Sequences:
        """The events (or those selected by ``mask``) grouped into sequences."""
        if mask is None:
            return Sequences.from_events(self.skill, self.student, self.correct, n_skills=self.true_params.shape[0])
        return Sequences.from_events(
            self.skill[mask], self.student[mask], self.correct[mask], n_skills=self.true_params.shape[0]
        )


def generate_bkt(
    n_students: int = 1000,
    n_skills: int = 10,
    seq_len: int = 20,
    *,
    params: npt.ArrayLike | None = None,
    seed: int = 0,
) -> BKTData:
    """Every student answers ``seq_len`` items of every skill.

    Without ``params`` each skill draws prior ~ U(0.1, 0.6), learn ~ U(0.05, 0.3),
    guess ~ U(0.05, 0.3), slip ~ U(0.05, 0.2), forget = 0. ``params`` may give a
    ``(n_skills, 5)`` (or ``(n_skills, 4)``) array instead. Events come out
    in time order, the skills of a student interleaved round-robin.

    >>> d = generate_bkt(10, 2, 5, seed=0)
    >>> d.correct.size, d.true_params.shape
    (100, (2, 5))
    """
    rng = np.random.default_rng(seed)
    if params is None:
        true = np.column_stack(
            [
                rng.uniform(0.1, 0.6, n_skills),
                rng.uniform(0.05, 0.3, n_skills),
                rng.uniform(0.05, 0.3, n_skills),
                rng.uniform(0.05, 0.2, n_skills),
                np.zeros(n_skills),
            ]
        )
    else:
        given = np.asarray(params, dtype=np.float64)
        true = np.zeros((n_skills, 5))
        true[:, : given.shape[1]] = given
    prior, learn, guess, slip, forget = (true[:, j][None, :] for j in range(5))
    known = rng.random((n_students, n_skills)) < prior
    correct = np.empty((seq_len, n_students, n_skills), dtype=np.int8)
    states = np.empty((seq_len, n_students, n_skills), dtype=bool)
    for t in range(seq_len):
        u = rng.random((n_students, n_skills))
        correct[t] = np.where(known, u >= slip, u < guess)
        states[t] = known
        move = rng.random((n_students, n_skills))
        known = np.where(known, move >= forget, move < learn)
    t_idx, st_idx, sk_idx = np.meshgrid(np.arange(seq_len), np.arange(n_students), np.arange(n_skills), indexing="ij")
    return BKTData(
        skill=sk_idx.ravel().astype(np.intp),
        student=st_idx.ravel().astype(np.intp),
        correct=correct.ravel(),
        known=states.ravel(),
        true_params=true,
    )

"""learnloop.sim: simulated learners and data sets with known ground truth."""

from __future__ import annotations

from .course import sample_course
from .datasets import BKTData, IRTData, generate_bkt, generate_irt
from .learners import SimulatedLearner
from .runner import SessionTrace, SimClock, learner_for, run_session, true_proficiency

__all__ = [
    "BKTData",
    "IRTData",
    "SessionTrace",
    "SimClock",
    "SimulatedLearner",
    "generate_bkt",
    "generate_irt",
    "learner_for",
    "run_session",
    "sample_course",
    "true_proficiency",
]

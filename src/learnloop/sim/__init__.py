"""learnloop.sim: simulated learners and data sets with known ground truth."""

from __future__ import annotations

from .datasets import BKTData, IRTData, generate_bkt, generate_irt
from .learners import SimulatedLearner

__all__ = ["BKTData", "IRTData", "SimulatedLearner", "generate_bkt", "generate_irt"]

"""learnloop.tracing: what a learner knows.

IRT ability (Rasch/2PL) with an online Bayesian update, item calibration from
the event log, BKT, an FSRS-style forgetting model (and its term in the prediction, fitted to a log's gaps), the v1/v2 status figures,
and :class:`LearnerModel`, which joins them over a catalog's topic graph.
Everything works on numpy arrays indexed by a catalog's item positions and
topic indices; nothing here knows of HTTP or storage. See ``docs/models.md``.
"""

from __future__ import annotations

from .ability import update_ability
from .bkt import BKT, BKTParams, Sequences, bkt_p_correct, bkt_step, predict_sequences
from .calibration import Calibration, calibrate
from .forgetting import (
    DAY_SECONDS,
    FSRS_WEIGHTS,
    Memory,
    MemoryModel,
    as_epoch_seconds,
    recall_probability,
)
from .irt import (
    B_LIMIT,
    AbilityEstimate,
    b_to_difficulty,
    difficulty_to_b,
    estimate_ability,
    expected_p_correct,
    fisher_information,
    p_correct,
)
from .learner import LearnerModel, LearnerState, Status
from .metrics import auc, expected_calibration_error, log_loss
from .retention import Forgetting, memory_trace
from .status import display_skill, item_credit, proficiency, progress, skill_level
from .structure import Event, EventKind, ItemParams, TopicStructure

__all__ = [
    "AbilityEstimate",
    "BKT",
    "BKTParams",
    "B_LIMIT",
    "Calibration",
    "DAY_SECONDS",
    "Event",
    "EventKind",
    "FSRS_WEIGHTS",
    "Forgetting",
    "ItemParams",
    "LearnerModel",
    "LearnerState",
    "Memory",
    "MemoryModel",
    "Sequences",
    "Status",
    "TopicStructure",
    "as_epoch_seconds",
    "auc",
    "b_to_difficulty",
    "bkt_p_correct",
    "bkt_step",
    "calibrate",
    "difficulty_to_b",
    "display_skill",
    "estimate_ability",
    "expected_calibration_error",
    "expected_p_correct",
    "fisher_information",
    "item_credit",
    "log_loss",
    "memory_trace",
    "p_correct",
    "predict_sequences",
    "proficiency",
    "progress",
    "recall_probability",
    "skill_level",
    "update_ability",
]

"""What the engine does next: sessions, the learn / review / assess policies, reasons."""

from learnloop.recommend.context import ContextSigner
from learnloop.recommend.policies import AssessPolicy, LearnPolicy, Pick, Policy, ReviewPolicy, policy_for
from learnloop.recommend.results import (
    AdaptiveStep,
    DueItem,
    NothingDue,
    Reason,
    Recommendation,
    Suggestion,
    UserStatus,
)
from learnloop.recommend.session import (
    Mode,
    SessionConstraint,
    SessionSpec,
    SessionState,
    SessionStatus,
    StoppingConditions,
)
from learnloop.recommend.view import LearnerView

__all__ = [
    "AdaptiveStep",
    "AssessPolicy",
    "ContextSigner",
    "DueItem",
    "LearnPolicy",
    "LearnerView",
    "Mode",
    "NothingDue",
    "Pick",
    "Policy",
    "Reason",
    "Recommendation",
    "ReviewPolicy",
    "SessionConstraint",
    "SessionSpec",
    "SessionState",
    "SessionStatus",
    "StoppingConditions",
    "Suggestion",
    "UserStatus",
    "policy_for",
]

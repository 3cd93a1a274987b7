"""What the engine answers: recommendations, user status and the adaptive step."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from learnloop.recommend.session import SessionStatus

__all__ = ["AdaptiveStep", "Reason", "Recommendation", "Suggestion", "UserStatus"]

_CLOSED = ConfigDict(extra="forbid", frozen=True)


class Reason(BaseModel):
    model_config = _CLOSED
    keyword: str
    description: str


class Recommendation(BaseModel):
    model_config = _CLOSED
    item_id: str
    topic_id: str
    recommendation_context: str
    reason: Reason


class Suggestion(BaseModel):
    """One item of a recommended sequence outside a session."""

    model_config = _CLOSED
    item_id: str
    topic_id: str
    reason: Reason


class UserStatus(BaseModel):
    """v2 user status over a filter."""

    model_config = _CLOSED
    progress: float
    proficiency: float | None
    time_spent_ms: int
    last_interaction_timestamp: str | None


class AdaptiveStep(BaseModel):
    """One adaptive-engine answer; ``recommendation`` is None when no eligible item is left."""

    model_config = _CLOSED
    recommendation: Recommendation | None
    user_status: UserStatus
    session_status: SessionStatus

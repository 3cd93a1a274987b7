"""What the engine answers: recommendations, user status and the adaptive step."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from learnloop.recommend.session import SessionStatus

__all__ = ["AdaptiveStep", "DueItem", "NothingDue", "Reason", "Recommendation", "Suggestion", "UserStatus"]

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


class NothingDue(BaseModel):
    """Why a review session recommends nothing: nothing it may serve is due. ``next_due_at``
    (UTC, milliseconds) is when the next item met falls below the desired retention, with
    that item and its topic; all three null when no item in the filter was met."""

    model_config = _CLOSED
    reason: Reason
    next_due_at: str | None
    next_item_id: str | None
    next_topic_id: str | None


class AdaptiveStep(BaseModel):
    """One adaptive-engine answer; ``recommendation`` is None when no eligible item is left,
    or, in review, when nothing is due (then ``nothing_due`` says why and when)."""

    model_config = _CLOSED
    recommendation: Recommendation | None
    user_status: UserStatus
    session_status: SessionStatus
    nothing_due: NothingDue | None = None

    @model_serializer(mode="wrap")
    def _without_absent_nothing_due(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """``nothing_due`` is dumped only when set (the contract's three fields otherwise)."""
        out: dict[str, Any] = handler(self)
        if out.get("nothing_due", 0) is None:
            del out["nothing_due"]
        return out


@dataclass(frozen=True, slots=True)
class DueItem:
    """One item a learner has met, as review sees it (:meth:`Engine.due <learnloop.engine.Engine.due>`):
    its predicted recall at the time asked, when it falls (or fell) below the catalog's desired
    retention, and whether it is due then (``overdue``: recall below the retention)."""

    item_id: str
    topic_id: str
    recall: float
    due_at: datetime
    overdue: bool

"""What review serves: the items a learner has met, in the order they are due.

An item is *met* when the learner has answered it (a scorable item with at least one
attempt); theory read and items never answered are not. The memory model keeps one memory
per topic (every answer on a topic reviews it, see ``docs/models.md``), so an item's
predicted recall is its topic's, and it is *due* when that recall is below the catalog's
desired retention. :func:`due_order` ranks the items met: the due ones first, lowest
recall first (the most overdue), then the others by the time their recall falls below
the retention, soonest first; ties go to the item answered longest ago, then to catalog
order. Review mode recommends the head of this order over the session's eligible items,
and :meth:`Engine.due <learnloop.engine.Engine.due>` lists it over the whole catalog, so
the two agree by construction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from learnloop._types import BoolArray, FloatArray, IntArray
from learnloop.events import format_timestamp
from learnloop.recommend.results import DueItem, NothingDue, Reason
from learnloop.recommend.view import LearnerView

__all__ = ["DueOrder", "due_items", "due_order", "moment_text", "nothing_due"]


@dataclass(frozen=True, eq=False)
class DueOrder:
    """The items met among some positions, in review order: ``positions``, with the predicted
    recall of each (``recall``) and the time it falls below ``retention`` (``due_at``, epoch
    seconds, NaN when not known); the first ``n_due`` are due now."""

    positions: IntArray
    recall: FloatArray
    due_at: FloatArray
    n_due: int
    retention: float


def _met(view: LearnerView, mask: BoolArray) -> tuple[IntArray, FloatArray]:
    """The positions of ``mask`` answered at least once (scorable items only), in catalog order,
    and when each was last met (epoch seconds; NaN when not known)."""
    index = view.index
    state = view.state
    if state is not None:
        touched = state.touched
        keep = (state.met_attempts > 0) & index.scorable[touched] & mask[touched]
        return touched[keep].astype(np.intp), np.asarray(state.met_timestamp[keep], dtype=np.float64)
    positions = np.flatnonzero((view.attempts > 0) & index.scorable & mask)
    seen = view.last_seen
    return positions, (np.full(positions.size, np.nan) if seen is None else seen[positions])


def due_order(view: LearnerView, mask: BoolArray, retention: float | None = None) -> DueOrder:
    """The items met among ``mask``, in review order (see the module docstring); ``retention``
    defaults to the view's desired retention."""
    retention = view.desired_retention if retention is None else retention
    positions, seen = _met(view, mask)
    topic = view.index.item_topic[positions]
    recall = np.asarray(view.recall[topic], dtype=np.float64)
    due_topic = view.due_at(retention)
    due_at = np.full(positions.size, np.nan) if due_topic is None else np.asarray(due_topic[topic], dtype=np.float64)
    due = recall < retention  # (NaN recall: never reviewed, not due)
    last = np.nan_to_num(seen, nan=-np.inf)
    now_keys = np.lexsort((positions, last, recall))
    later_key = np.where(np.isnan(due_at), np.inf, due_at) if due_topic is not None else -recall
    later_keys = np.lexsort((positions, last, later_key))
    order = np.concatenate((now_keys[due[now_keys]], later_keys[~due[later_keys]]))
    return DueOrder(positions[order], recall[order], due_at[order], int(np.count_nonzero(due)), float(retention))


def moment_text(epoch: float) -> str:
    """An instant in UTC to the second (``2026-11-21T10:00:00Z``); beyond year 9999, ``after 9999``."""
    try:
        return datetime.fromtimestamp(math.floor(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, ValueError, OSError):
        return "after 9999" if epoch > 0 else "before 0001"


def _moment(epoch: float) -> datetime:
    try:
        return datetime.fromtimestamp(epoch, UTC)
    except (OverflowError, ValueError, OSError):
        return datetime.max.replace(tzinfo=UTC) if epoch > 0 else datetime.min.replace(tzinfo=UTC)


def due_items(view: LearnerView, order: DueOrder, limit: int | None = None) -> list[DueItem]:
    """The records of ``order`` (what :meth:`Engine.due` answers); with ``limit``, of its first ``limit``."""
    index = view.index
    out = []
    for k, position in enumerate(order.positions[:limit].tolist()):
        when = float(order.due_at[k])
        out.append(
            DueItem(
                item_id=index.item_ids[position],
                topic_id=index.topic_ids[index.item_topic[position]],
                recall=float(order.recall[k]),
                due_at=_moment(when),
                overdue=k < order.n_due,
            )
        )
    return out


def nothing_due(
    records: Sequence[DueItem], retention: float, *, met: int | None = None, n_due: int | None = None
) -> NothingDue:
    """Why review recommends nothing, from the records of the items met where it looked (in
    review order, :func:`due_items`): when the next of them falls due, and which it is. Given
    how many items were ``met`` and how many of them are due (``n_due``), the head record alone
    is enough."""
    if not records:
        return NothingDue(
            reason=Reason(
                keyword="nothing_due",
                description="nothing to review: no item in the filter was answered yet (review serves items met before)",
            ),
            next_due_at=None,
            next_item_id=None,
            next_topic_id=None,
        )
    head = records[0]  # (the most overdue, else the soonest due)
    n_due = sum(r.overdue for r in records) if n_due is None else n_due
    if n_due:  # (due items the step may not serve: the session's constraints exclude them)
        text = f"{n_due} items are due but the session's constraints exclude them"
    else:
        text = f"nothing due: the {len(records) if met is None else met} items met are recalled at {retention:.2f} or above"
    finite = datetime.min.replace(tzinfo=UTC) < head.due_at < datetime.max.replace(tzinfo=UTC)
    if finite:
        text += f"; next review '{head.item_id}' (topic '{head.topic_id}') at {moment_text(head.due_at.timestamp())}"
    return NothingDue(
        reason=Reason(keyword="nothing_due", description=text),
        next_due_at=format_timestamp(head.due_at) if finite else None,
        next_item_id=head.item_id,
        next_topic_id=head.topic_id,
    )

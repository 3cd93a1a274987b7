"""The session step as a pure function: what to recommend next, and the session after it.

:func:`session_step` takes everything a step depends on (the session so far,
the learner view, the masks of the session filter and of the constraints, the
policy and the step's generator) and returns the pick with the session as it
will be after the recommendation. It reads and writes nothing else, so the
engine's ``adaptive_step`` and ``next_items``, notebooks and property tests run
exactly the same logic.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from learnloop._types import BoolArray
from learnloop.recommend.policies import Pick, Policy
from learnloop.recommend.session import SessionState
from learnloop.recommend.view import LearnerView

__all__ = ["administered_positions", "eligible_positions", "session_step"]


def eligible_positions(session: SessionState, mask: BoolArray, constraint_masks: Sequence[BoolArray]) -> BoolArray:
    """Positions of ``mask`` still allowed by the session's constraints.

    A constraint ``max_recommendations`` of value v allows floor(v)
    recommendations of its filter's items over the whole session. Read-only
    masks (the engine's) give a read-only result, the same object for the same
    masks: ``mask`` itself while no constraint is used up.
    """
    constraints = session.spec.constraints or ()
    if not constraints and not constraint_masks:
        return mask if not mask.flags.writeable else mask.copy()
    if len(constraint_masks) != len(constraints):
        raise ValueError(f"{len(constraints)} constraints but {len(constraint_masks)} masks")
    used_up = [
        cmask
        for constraint, cmask, used in zip(constraints, constraint_masks, session.constraint_counts, strict=True)
        if used + 1 > math.floor(constraint.value)
    ]
    fixed = not mask.flags.writeable and not any(cmask.flags.writeable for cmask in used_up)
    if not used_up:
        return mask if fixed else mask.copy()
    key = (id(mask), *map(id, used_up))
    found = _ELIGIBLE.get(key) if fixed else None
    if found is not None and found[0] is mask and all(a is b for a, b in zip(found[1], used_up, strict=True)):
        return found[2]
    eligible = mask.copy()
    for cmask in used_up:
        eligible &= ~cmask
    if fixed:
        eligible.setflags(write=False)
        with _ELIGIBLE_LOCK:  # (the masks are held with it, so their ids are not reused meanwhile)
            _ELIGIBLE[key] = (mask, tuple(used_up), eligible)
            while len(_ELIGIBLE) > _ELIGIBLE_KEPT:
                _ELIGIBLE.pop(next(iter(_ELIGIBLE)))
    return eligible


#: the eligible positions of recent read-only masks with constraints used up, by the masks' ids
_ELIGIBLE: dict[tuple[int, ...], tuple[BoolArray, tuple[BoolArray, ...], BoolArray]] = {}
_ELIGIBLE_LOCK = threading.Lock()
_ELIGIBLE_KEPT = 64


def administered_positions(session: SessionState, view: LearnerView) -> BoolArray:
    """Positions of the items already given in this session's assessment."""
    return view.index.item_mask(session.assessed)


def session_step(
    session: SessionState,
    view: LearnerView,
    mask: BoolArray,
    constraint_masks: Sequence[BoolArray],
    policy: Policy,
    rng: np.random.Generator,
    *,
    exclude: BoolArray | None = None,
    administered: BoolArray | None = None,
) -> tuple[Pick | None, SessionState]:
    """The next pick of ``policy`` and the session after recommending it.

    ``exclude`` removes positions from the choice while others remain
    (``next_items`` uses it so that a sequence does not repeat an item).
    ``administered`` defaults to the items this session has assessed.
    With nothing eligible the pick is None and the session is unchanged.
    """
    index = view.index
    eligible = eligible_positions(session, mask, constraint_masks)
    if exclude is not None:
        rest = eligible & ~exclude
        if rest.any():
            eligible = rest
    previous = None
    if session.last_item is not None:
        previous = index.position(session.last_item, session.last_topic)
    if administered is None:
        administered = administered_positions(session, view)
    pick = policy.select(view, eligible, previous=previous, rng=rng, administered=administered)
    if pick is None:
        return None, session
    if not eligible[pick.position]:
        raise ValueError(f"policy {policy.name!r} picked position {pick.position}, which is not eligible")
    counts = tuple(
        used + int(bool(cmask[pick.position]))
        for used, cmask in zip(session.constraint_counts, constraint_masks, strict=True)
    )
    return pick, replace(
        session,
        recommendation_count=session.recommendation_count + 1,
        constraint_counts=counts,
        last_item=index.item_ids[pick.position],
        last_topic=index.topic_ids[index.item_topic[pick.position]],
    )

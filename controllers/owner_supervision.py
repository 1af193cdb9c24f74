"""The arm owner's supervision rules as pure functions: feedback age and tracking error
against the commanded history, and the refusal reason of a lease status.

``ArmOwner`` reads its state under its locks and asks these; nothing here takes a lock or
changes state. Every comparison is written so that a NaN trips it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from rob_twin.controllers.lease import LeaseStatus
from rob_twin.controllers.mailbox import RejectReason
from rob_twin.controllers.owner_config import OwnerConfig
from rob_twin.controllers.owner_types import FaultKind


def feedback_fault(
    c: OwnerConfig,
    now: float,
    started_s: float,
    fb: tuple[np.ndarray, float] | None,
    history: Sequence[tuple[float, np.ndarray]],
) -> tuple[FaultKind, str] | None:
    """The feedback fault at ``now`` [s], or None.

    c: the owner's configuration; started_s: when the commanded state was (re)seeded [s];
    fb: the latest observation (positions [rad], stamp [s]) or None; history: (stamp [s],
    commanded positions [rad]) oldest first, never empty. STALE_FEEDBACK when feedback is
    required and none came within ``feedback_timeout_s`` of the start, or the latest is older
    than that or from the future beyond ``feedback_future_tolerance_s``; TRACKING_ERROR when a
    joint lies more than ``tracking_error_rad`` from the commanded position at the stamp."""
    if fb is None:
        if c.require_feedback and not now - started_s <= c.feedback_timeout_s:
            return (
                FaultKind.STALE_FEEDBACK,
                f"no feedback for {now - started_s:.4f} s > {c.feedback_timeout_s} s",
            )
        return None
    pos, stamp = fb
    age = now - stamp
    if c.require_feedback and not -c.feedback_future_tolerance_s <= age <= c.feedback_timeout_s:
        if age < 0:  # only a clock that ran backwards gets here (stamps are checked on entry)
            return FaultKind.STALE_FEEDBACK, (
                f"feedback stamp {age:.4f} s in the future "
                f"(tolerance {c.feedback_future_tolerance_s} s)"
            )
        return FaultKind.STALE_FEEDBACK, f"feedback age {age:.4f} s > {c.feedback_timeout_s} s"
    ref = history[0][1]
    for s, q in reversed(history):
        if s <= stamp:
            ref = q
            break
    # plain floats, one per joint; the largest error, first joint on a tie (like argmax)
    err = [abs(x - y) for x, y in zip(pos.tolist(), ref.tolist(), strict=True)]
    worst = max(err)
    if not worst <= c.tracking_error_rad:  # NaN-safe
        j = err.index(worst)
        return (
            FaultKind.TRACKING_ERROR,
            f"joint {j + 1}: tracking error {worst:.4f} rad > {c.tracking_error_rad} rad",
        )
    return None


_LEASE_REASONS = {
    LeaseStatus.VALID: None,
    LeaseStatus.MISSING: RejectReason.LEASE_MISSING,
    LeaseStatus.UNKNOWN: RejectReason.LEASE_UNKNOWN,
    LeaseStatus.EXPIRED: RejectReason.LEASE_EXPIRED,
}


def lease_reject_reason(st: LeaseStatus) -> RejectReason | None:
    """Why a target carrying a lease of status ``st`` is refused (None: a valid lease)."""
    return _LEASE_REASONS[st]

"""One latest-target slot with exact accounting.

``offer`` replaces the pending target (never queues), ``take`` empties the slot. The
generation and sequence checks run under the same lock as the slot, so a target
validated against generation g can never land after ``close``/``open(g + 1)``.

Accounting identity (always true, read atomically with ``counts()``)::

    submitted == accepted + rejected
    accepted  == replaced + taken + discarded + pending
"""

from __future__ import annotations

import enum
import threading
from collections import Counter
from dataclasses import dataclass, field

from rob_twin.controllers.errors import TargetRefusedError, TargetTypeError
from rob_twin.controllers.target import ArmTarget, as_integer


class RejectReason(enum.Enum):
    STALE_SEQUENCE = "stale_sequence"  # sequence <= last accepted in this generation (replay)
    FOREIGN_GENERATION = "foreign_generation"
    CLOSED = "closed"  # owner stopped or faulted: no targets until reset
    WRONG_ARM = "wrong_arm"
    LEASE_MISSING = "lease_missing"
    LEASE_UNKNOWN = "lease_unknown"
    LEASE_EXPIRED = "lease_expired"
    OUT_OF_BOUNDS = "out_of_bounds"  # a joint outside the configured position bounds
    VELOCITY_LIMIT = (
        "velocity_limit"  # target velocity beyond the owner's limit (or bound to pass it)
    )
    ACCELERATION_LIMIT = "acceleration_limit"  # target acceleration beyond the owner's limit
    NOT_EXECUTABLE = "not_executable"  # any other target state the trajectory generator refuses


@dataclass(frozen=True)
class OfferResult:
    """accepted, or ``reason`` plus ``error`` (a ``TargetRefusedError`` whose message names
    the value and the valid range); ``replaced``: an older pending target was overwritten."""

    accepted: bool
    reason: RejectReason | None = None
    replaced: bool = False
    error: TargetRefusedError | None = field(default=None, compare=False)

    def raise_if_refused(self) -> None:
        """Raise ``error`` when the target was refused (for callers that want exceptions)."""
        if not self.accepted:
            raise self.error or TargetRefusedError(self.reason, "target", None, "see reason")


@dataclass(frozen=True, kw_only=True)
class MailboxCounts:
    submitted: int
    accepted: int
    rejected: int
    replaced: int
    taken: int
    discarded: int
    pending: int
    rejected_by_reason: dict = field(default_factory=dict)

    @property
    def balanced(self) -> bool:
        return (
            self.submitted == self.accepted + self.rejected
            and self.accepted == self.replaced + self.taken + self.discarded + self.pending
            and self.rejected == sum(self.rejected_by_reason.values())
            and self.pending in (0, 1)
        )


class LatestTargetMailbox:
    def __init__(self, generation: int = 1):
        self._lock = threading.Lock()
        self._slot: ArmTarget | None = None
        self._generation = as_integer(generation, "generation")
        self._last_sequence: int | None = None
        self._open = True
        self._n = Counter()
        self._reasons: Counter = Counter()

    # ------------------------------------------------------------------ producer side
    def offer(
        self, target: ArmTarget, precheck: RejectReason | TargetRefusedError | None = None
    ) -> OfferResult:
        """Put ``target`` in the slot unless rejected; ``precheck`` is a refusal found by the
        caller (a reason, or the error that explains it). TargetTypeError (nothing counted)
        when ``target`` is not an ArmTarget."""
        if not isinstance(target, ArmTarget):
            raise TargetTypeError("target", target, "an ArmTarget")
        with self._lock:
            self._n["submitted"] += 1
            error = precheck if isinstance(precheck, TargetRefusedError) else None
            reason = precheck.reason if error is not None else precheck
            if reason is None:
                if not self._open:
                    reason = RejectReason.CLOSED
                    error = TargetRefusedError(
                        reason,
                        "mailbox",
                        "closed",
                        "an open mailbox (the owner is stopped or faulted: reset first)",
                    )
                elif target.generation != self._generation:
                    reason = RejectReason.FOREIGN_GENERATION
                    error = TargetRefusedError(
                        reason,
                        "generation",
                        target.generation,
                        f"the current generation {self._generation}",
                    )
                elif self._last_sequence is not None and target.sequence <= self._last_sequence:
                    reason = RejectReason.STALE_SEQUENCE
                    error = TargetRefusedError(
                        reason,
                        "sequence",
                        target.sequence,
                        f"> {self._last_sequence} (the last accepted in "
                        f"generation {self._generation})",
                    )
            if reason is not None:
                self._n["rejected"] += 1
                self._reasons[reason.value] += 1
                if error is None:
                    error = TargetRefusedError(reason, "target", target.sequence, "see reason")
                return OfferResult(False, reason, error=error)
            self._n["accepted"] += 1
            self._last_sequence = target.sequence
            replaced = self._slot is not None
            if replaced:
                self._n["replaced"] += 1
            self._slot = target
            return OfferResult(True, None, replaced)

    # ------------------------------------------------------------------ owner side
    def take(self) -> ArmTarget | None:
        with self._lock:
            t, self._slot = self._slot, None
            if t is not None:
                self._n["taken"] += 1
            return t

    def close(self) -> int:
        """Stop accepting and discard the pending target; return how many were discarded (0/1)."""
        with self._lock:
            self._open = False
            return self._discard_locked()

    def discard(self) -> int:
        with self._lock:
            return self._discard_locked()

    def open(self, generation: int) -> None:
        """Accept targets of ``generation`` again; sequence tracking restarts."""
        generation = as_integer(generation, "generation")
        with self._lock:
            self._discard_locked()
            self._generation = generation
            self._last_sequence = None
            self._open = True

    def _discard_locked(self) -> int:
        if self._slot is None:
            return 0
        self._slot = None
        self._n["discarded"] += 1
        return 1

    @property
    def generation(self) -> int:
        with self._lock:
            return self._generation

    def counts(self) -> MailboxCounts:
        with self._lock:
            n = self._n
            return MailboxCounts(
                submitted=n["submitted"],
                accepted=n["accepted"],
                rejected=n["rejected"],
                replaced=n["replaced"],
                taken=n["taken"],
                discarded=n["discarded"],
                pending=0 if self._slot is None else 1,
                rejected_by_reason=dict(self._reasons),
            )

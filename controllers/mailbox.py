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

from controllers.target import ArmTarget


class RejectReason(enum.Enum):
    STALE_SEQUENCE = "stale_sequence"  # sequence <= last accepted in this generation (replay)
    FOREIGN_GENERATION = "foreign_generation"
    CLOSED = "closed"  # owner stopped or faulted: no targets until reset
    WRONG_ARM = "wrong_arm"
    LEASE_MISSING = "lease_missing"
    LEASE_UNKNOWN = "lease_unknown"
    LEASE_EXPIRED = "lease_expired"
    OUT_OF_BOUNDS = "out_of_bounds"  # a joint outside the configured position bounds


@dataclass(frozen=True)
class OfferResult:
    accepted: bool
    reason: RejectReason | None = None
    replaced: bool = False  # an older pending target was overwritten


@dataclass(frozen=True)
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
        self._generation = generation
        self._last_sequence: int | None = None
        self._open = True
        self._n = Counter()
        self._reasons: Counter = Counter()

    # ------------------------------------------------------------------ producer side
    def offer(self, target: ArmTarget, precheck: RejectReason | None = None) -> OfferResult:
        """Put ``target`` in the slot unless rejected; ``precheck`` is a reason found by the caller."""
        with self._lock:
            self._n["submitted"] += 1
            reason = precheck
            if reason is None:
                if not self._open:
                    reason = RejectReason.CLOSED
                elif target.generation != self._generation:
                    reason = RejectReason.FOREIGN_GENERATION
                elif self._last_sequence is not None and target.sequence <= self._last_sequence:
                    reason = RejectReason.STALE_SEQUENCE
            if reason is not None:
                self._n["rejected"] += 1
                self._reasons[reason.value] += 1
                return OfferResult(False, reason)
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
                n["submitted"], n["accepted"], n["rejected"], n["replaced"], n["taken"],
                n["discarded"], 0 if self._slot is None else 1, dict(self._reasons),
            )

"""Host-validated, time-limited authority over one arm.

The host (the owner's side) issues a ``Lease``; a target is only accepted while the
lease it carries is the current one and has not expired on the owner's clock. The
client never decides validity: expiry is judged by the host clock alone. Revoking
(release, loss of authority) invalidates every outstanding lease at once.
"""

from __future__ import annotations

import enum
import itertools
import threading
from dataclasses import dataclass

from rob_twin.controllers.checks import finite_real
from rob_twin.controllers.clock import Clock
from rob_twin.controllers.errors import OwnerConfigError


@dataclass(frozen=True)
class Lease:
    """Authority token: ``token`` is unique per grant; ``expires_s`` on the host clock [s]."""

    token: int
    holder: str
    expires_s: float


class LeaseStatus(enum.Enum):
    VALID = "valid"
    MISSING = "missing"  # no lease carried
    UNKNOWN = "unknown"  # not the current lease (revoked, superseded, forged)
    EXPIRED = "expired"


class LeaseAuthority:
    """Issues and validates leases against an injected clock; one current lease at a time."""

    def __init__(self, clock: Clock, default_duration_s: float = 0.5):
        if not callable(getattr(clock, "now", None)):
            raise OwnerConfigError("clock", clock, "an object with now() -> float [s]")
        self._clock = clock
        self._default = _duration("default_duration_s", default_duration_s)
        self._tokens = itertools.count(1)
        self._current: Lease | None = None
        self._lock = threading.Lock()

    def grant(self, holder: str, duration_s: float | None = None) -> Lease:
        """Issue a new lease to ``holder`` valid for ``duration_s`` [s]; supersedes the old one.

        OwnerConfigError (nothing changes) for a holder that is not a str or a duration that
        is not a finite number > 0 s (an infinite lease would never lapse)."""
        if not isinstance(holder, str):
            raise OwnerConfigError("holder", holder, "a str naming the lease holder")
        d = self._default if duration_s is None else _duration("duration_s", duration_s)
        with self._lock:
            self._current = Lease(next(self._tokens), holder, self._clock.now() + d)
            return self._current

    def renew(self, lease: Lease, duration_s: float | None = None) -> Lease | None:
        """Extend the current lease (same token); None if ``lease`` is not current or expired.

        The duration is validated like ``grant``'s (a NaN expiry would never lapse)."""
        d = self._default if duration_s is None else _duration("duration_s", duration_s)
        with self._lock:
            if self._status_locked(lease) is not LeaseStatus.VALID:
                return None
            self._current = Lease(lease.token, lease.holder, self._clock.now() + d)
            return self._current

    def revoke(self) -> None:
        """Invalidate every outstanding lease (release / loss of authority)."""
        with self._lock:
            self._current = None

    def status(self, lease: Lease | None) -> LeaseStatus:
        with self._lock:
            return self._status_locked(lease)

    def _status_locked(self, lease: Lease | None) -> LeaseStatus:
        if lease is None:
            return LeaseStatus.MISSING
        cur = self._current
        if cur is None or not isinstance(lease, Lease) or cur.token != lease.token:
            return LeaseStatus.UNKNOWN
        if not self._clock.now() < cur.expires_s:  # NaN-safe: an unreadable clock expires it
            return LeaseStatus.EXPIRED
        return LeaseStatus.VALID


def _duration(field: str, value: object) -> float:
    """A lease duration [s]: a finite real number > 0 (not a bool, not a str)."""
    d = finite_real(value, field, "a finite number > 0 s", OwnerConfigError)
    if not d > 0.0:
        raise OwnerConfigError(field, value, "a finite number > 0 s")
    return d

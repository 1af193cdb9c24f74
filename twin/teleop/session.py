"""Who may drive: one operator lease with a short TTL, renewed by the operator's frames.

Any client that connects while the lease is held (and not expired) is a watcher. When the
operator falls silent for ``ttl_s`` the lease lapses and the next client that asks for it
gets it. Time is the server's monotonic clock [s], injected for tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class OperatorLease:
    """The single operator lease (one thread: the server's)."""

    def __init__(self, ttl_s: float = 0.5, now: Callable[[], float] = time.monotonic):
        if not ttl_s > 0:
            raise ValueError(f"operator lease ttl_s must be > 0 s, got {ttl_s!r}")
        self.ttl_s = float(ttl_s)
        self._now = now
        self._holder: str | None = None
        self._expires_s = -float("inf")

    def holder(self) -> str | None:
        """The client holding a live lease, or None."""
        if self._holder is not None and self._now() >= self._expires_s:
            self._holder = None
        return self._holder

    def claim(self, client: str) -> bool:
        """Take the lease if it is free, lapsed or already ``client``'s; True when held."""
        cur = self.holder()
        if cur is not None and cur != client:
            return False
        self._holder, self._expires_s = client, self._now() + self.ttl_s
        return True

    def renew(self, client: str) -> bool:
        """Extend ``client``'s live lease; False when ``client`` does not hold it."""
        if self.holder() != client:
            return False
        self._expires_s = self._now() + self.ttl_s
        return True

    def release(self, client: str) -> None:
        if self._holder == client:
            self._holder = None

"""What the teleop server thread has finished, for other threads to wait on.

The server thread reports each inbound websocket message it has handled (the highest
input ``seq`` per session among them) and each staleness poll it has run. A test or a
benchmark waits on these ("the server has handled seq 40 of session s") instead of
sleeping and hoping the server kept up; the server never waits on it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from rob_twin.models.errors import RobTwinError


class ProgressTimeout(RobTwinError, TimeoutError):
    """The server did not reach the awaited point in time (it is stalled or the message was
    lost)."""

    def __init__(self, what: str, reached: str, timeout_s: float):
        super().__init__(
            f"teleop server did not reach {what} within {timeout_s} s (reached {reached})"
        )


class ServerProgress:
    """Counters written by the server thread only, read and awaited from any thread."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._seq: dict[str, int] = {}
        self.messages_handled = 0  # inbound websocket messages handled, dropped ones included
        self.polls = 0  # staleness polls run
        self.closed: list[str] = []  # client ids whose connection the server has finished with

    # ------------------------------------------------------------------ server thread
    def message_handled(self, session: str | None = None, seq: int | None = None) -> None:
        with self._cond:
            self.messages_handled += 1
            if session is not None and seq is not None and seq > self._seq.get(session, -1):
                self._seq[session] = seq
            self._cond.notify_all()

    def client_closed(self, client: str) -> None:
        with self._cond:
            self.closed.append(client)
            self._cond.notify_all()

    def poll_done(self) -> None:
        with self._cond:
            self.polls += 1
            self._cond.notify_all()

    # ------------------------------------------------------------------ any thread
    def wait_closed(self, client: str, timeout_s: float = 10.0) -> None:
        """Until the server has finished with ``client`` (socket closed, operator role released)."""
        self.wait_for(lambda: client in self.closed, f"the close of {client}", timeout_s)

    def highest_seq(self, session: str) -> int | None:
        with self._cond:
            return self._seq.get(session)

    def wait_for(self, predicate: Callable[[], bool], what: str, timeout_s: float) -> None:
        """Block until ``predicate()`` (called under the lock) holds; ``ProgressTimeout`` after
        ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ProgressTimeout(
                        what,
                        f"{self.messages_handled} messages, {self.polls} polls, seqs {self._seq}",
                        timeout_s,
                    )
                self._cond.wait(left)

    def wait_input(self, session: str, seq: int, timeout_s: float = 10.0) -> None:
        """Until an input frame of ``session`` with seq >= ``seq`` was handled (on one socket:
        every frame sent before it was handled too)."""
        self.wait_for(
            lambda: self._seq.get(session, -1) >= seq,
            f"seq {seq} of session {session!r}",
            timeout_s,
        )

    def wait_polls(self, count: int, timeout_s: float = 10.0) -> int:
        """Until ``count`` more polls than now have run; returns the poll count reached."""
        with self._cond:
            target = self.polls + count
        self.wait_for(lambda: self.polls >= target, f"{target} polls", timeout_s)
        return target

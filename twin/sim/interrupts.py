"""Ctrl-C and SIGTERM as a polite request to stop, so a run can write what it did.

Inside ``stop_requests()`` the first SIGINT or SIGTERM only records itself; the run polls
``StopRequest.reason`` between frames, stops, finishes its video and writes a summary
marked ``interrupted``. A SIGINT while a stop is already pending raises KeyboardInterrupt
at once (a second Ctrl-C: the usual way out of a stuck program). Outside the main thread
signals cannot be caught: the request then never fires and the process keeps the default
behaviour.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# exit status of a process ended by a signal, as shells report it (128 + signal number)
EXIT_CODES = {"SIGINT": 128 + signal.SIGINT, "SIGTERM": 128 + signal.SIGTERM}


class StopRequest:
    """Which signal asked the run to stop (``reason``: ``"SIGINT"``, ``"SIGTERM"``), or None."""

    def __init__(self) -> None:
        self.reason: str | None = None

    def __call__(self) -> str | None:
        return self.reason


@contextmanager
def stop_requests(
    signals: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM),
) -> Iterator[StopRequest]:
    """Catch ``signals`` for the duration of the block; restore the old handlers after."""
    request = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return

    def handler(signum: int, frame) -> None:
        name = signal.Signals(signum).name
        if request.reason is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        request.reason = request.reason or name

    previous = {s: signal.signal(s, handler) for s in signals}
    try:
        yield request
    finally:
        for s, old in previous.items():
            signal.signal(s, old)

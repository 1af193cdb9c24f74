"""When rob-twin's own simulated bank fell behind the wall clock, as a mirror sees it.

A mirror compares each drive reply with its twin at the reply's bus time. A real arm's
physics never lags, but ``rob-twin bank``'s does when its machine is loaded: its drives take
the host's commands later than their bus time and its replies report an arm that stands
where it stood some milliseconds ago (``status.lag_s``, ``docs/BANK_PROTOCOL.md``). The
difference that shows then is the simulated bank's, not evidence against the arm, so a
mirror beside a bank leaves those samples out of its alarm statistic and counts them.

``BankLagWatch`` turns the bank's ``status`` answers (``observe``: the answer's arrival
[s, Unix: the bank's bus clock], ``lag_s`` and ``max_lag_s`` [s]) and the polls that got none
(``unanswered``) into a timeline of bus time; ``state_at(stamp)`` says what is known of
the bank at a frame's bus stamp:

- ``LAGGED``: between two answers the bank lagged more than ``threshold_s`` (either answer
  showed it, or ``max_lag_s`` rose past it in between: a peak the polls fell between). The
  interval excluded runs from the earlier answer less the lag seen (the bank's replies
  then already showed an arm that far behind) to the later answer plus ``settle_s`` (the
  drives took commands at the wrong times and need a moment to agree with the twin again);
- ``CLEAR``: covered by answers and not lagged;
- ``UNKNOWN``: the control port did not answer for more than ``max_gap_s``, so nothing is
  known (never read as "no lag": ``LagGate`` judges such samples and counts them apart);
- ``PENDING``: after the latest answer (ask again once the next arrives).

Threshold ``LAG_THRESHOLD_S`` (5 ms): well above the bank's pacing jitter (its physics runs
in chunks of 2 ms and its lag stays under 1 ms on an idle machine: ``bench mirror`` shows
0.0-0.3 ms), and a lag this size moves a joint of ROB's host wave (up to about 0.5 rad/s)
by at most 2.5 mrad: half the RMS alarm's least threshold (``AlarmConfig.min_rad``, 5 mrad)
even if it lasted the whole window. ``SETTLE_S`` (0.2 s): about ten time constants of
the simulated drives' position loop after the lag cleared.

``LagGate`` holds compared samples until the watch knows their time (``release``), at most
``max_wait_s`` of bus time; a sample still pending then is released ``UNKNOWN``. So the
windowed RMS alarm beside a bank comes up to one poll period (plus the answer's round trip)
later than without one. ``BankLagPoller`` asks the bank's control port for ``status`` every
``poll_s`` in a thread of its own and feeds a watch. Light: no mujoco.
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from rob_twin.twin.bus.mirror_alarm import MirrorInputError

LAG_THRESHOLD_S = 0.005  # a bank lag beyond this is the twin's artifact [s] (module doc)
SETTLE_S = 0.2  # excluded after a lag cleared [s, bus time]
POLL_S = 0.05  # how often the poller asks for status [s, wall]
CONTROL_TIMEOUT_S = 0.5  # one status request's limit [s, wall]
MAX_GAP_S = 0.5  # no answer this long between two answers: unknown [s]
MAX_WAIT_S = 0.5  # how long a sample waits for the watch [s, bus time]

LAGGED, CLEAR, UNKNOWN, PENDING = "lagged", "clear", "unknown", "pending"


def _seconds(name: str, value: object, lo: float, hi: float) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or not lo <= value <= hi:  # type: ignore[operator]
        raise MirrorInputError(name, value, f"seconds in [{lo:g}, {hi:g}]")
    return float(value)  # type: ignore[arg-type]


class _Intervals:
    """Disjoint closed intervals [s], sorted; ``add`` merges overlapping ones."""

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []

    def add(self, a: float, b: float) -> None:
        i = bisect.bisect_left(self.ends, a)  # the first interval that ends at or after a
        j = bisect.bisect_right(self.starts, b)  # past the last that starts at or before b
        if i < j:
            a, b = min(a, self.starts[i]), max(b, self.ends[j - 1])
        self.starts[i:j], self.ends[i:j] = [a], [b]

    def __contains__(self, t: float) -> bool:
        i = bisect.bisect_right(self.starts, t) - 1
        return i >= 0 and t <= self.ends[i]

    def length(self, t0: float, t1: float) -> float:
        """How much of [t0, t1] the intervals cover [s]."""
        pairs = zip(self.starts, self.ends, strict=True)
        return sum(max(0.0, min(b, t1) - max(a, t0)) for a, b in pairs)


@dataclass(frozen=True)
class _Answer:
    at_s: float  # arrival [s, bus time]
    lag_s: float
    max_lag_s: float


class BankLagWatch:
    """The bank's lag over bus time, from its ``status`` answers (module doc); thread-safe.

    threshold_s: a lag beyond this excludes [s]; settle_s: excluded after it [s]; max_gap_s:
    a silence of the control port longer than this between answers is ``UNKNOWN`` [s]."""

    def __init__(
        self,
        threshold_s: float = LAG_THRESHOLD_S,
        settle_s: float = SETTLE_S,
        max_gap_s: float = MAX_GAP_S,
    ):
        self.threshold_s = _seconds("bank_lag_threshold_s", threshold_s, 1e-4, 10.0)
        self.settle_s = _seconds("bank_lag_settle_s", settle_s, 0.0, 10.0)
        self.max_gap_s = _seconds("bank_lag_max_gap_s", max_gap_s, 0.01, 60.0)
        self._lock = threading.Lock()
        self._excluded = _Intervals()
        self._unknown = _Intervals()
        self._last: _Answer | None = None
        self._silent = False  # a poll failed since the last answer
        self.answers = 0
        self.unanswered_polls = 0
        self.answering: bool | None = None  # None until the first poll
        self.last_error: str | None = None
        self.unanswered_since_s: float | None = None  # bus time of the first failure in a row
        self.lag_s: float | None = None  # the latest answer's [s]
        self.max_lag_seen_s = 0.0  # the largest lag_s or max_lag_s answered [s]

    @property
    def known_until_s(self) -> float:
        """Bus time [s] up to which the watch has answers (-inf before the first)."""
        with self._lock:
            return self._last.at_s if self._last else -math.inf

    def observe(self, at_s: float, lag_s: float, max_lag_s: float) -> None:
        """A ``status`` answer that arrived at bus time ``at_s`` [s]: the bank's lag then
        and its largest since it started [s]. Answers come in time order."""
        for name, v in (("at_s", at_s), ("lag_s", lag_s), ("max_lag_s", max_lag_s)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise MirrorInputError(f"bank status {name}", v, "a finite number [s]")
        new = _Answer(float(at_s), float(lag_s), float(max_lag_s))
        thr = self.threshold_s
        with self._lock:
            prev = self._last
            if prev is not None and new.at_s < prev.at_s:
                raise MirrorInputError(
                    "bank status at_s", at_s, f"at or after the previous answer ({prev.at_s})"
                )
            if prev is None:  # the first: what it shows now, nothing of before
                if new.lag_s > thr:
                    self._excluded.add(new.at_s - new.lag_s, new.at_s + self.settle_s)
            else:
                # a new peak since the previous answer (a different bank: any max it has)
                peak = new.max_lag_s if new.max_lag_s != prev.max_lag_s else 0.0
                worst = max(prev.lag_s, new.lag_s, peak)
                if worst > thr:
                    self._excluded.add(prev.at_s - worst, new.at_s + self.settle_s)
                elif self._silent and new.at_s - prev.at_s > self.max_gap_s:
                    self._unknown.add(prev.at_s, new.at_s)
            self._last = new
            self._silent = False
            self.answers += 1
            self.answering = True
            self.unanswered_since_s = None
            self.lag_s = new.lag_s
            self.max_lag_seen_s = max(self.max_lag_seen_s, new.lag_s, new.max_lag_s)

    def unanswered(self, at_s: float, error: str) -> None:
        """A poll at bus time ``at_s`` [s] that got no answer (``error``: why)."""
        with self._lock:
            self._silent = True
            self.unanswered_polls += 1
            self.answering = False
            self.last_error = error
            if self.unanswered_since_s is None:
                self.unanswered_since_s = float(at_s)

    def state_at(self, stamp_s: float) -> str:
        """What is known of the bank at bus time ``stamp_s`` [s] (module doc)."""
        with self._lock:
            if stamp_s in self._excluded:
                return LAGGED
            if stamp_s in self._unknown:
                return UNKNOWN
            if self._last is not None and stamp_s <= self._last.at_s:
                return CLEAR
            return PENDING

    def excluded_s(self, t0: float, t1: float) -> float:
        """Bus time within [t0, t1] excluded for the bank's lag [s]."""
        with self._lock:
            return self._excluded.length(t0, t1)

    def unknown_s(self, t0: float, t1: float) -> float:
        """Bus time within [t0, t1] the control port was silent for [s]."""
        with self._lock:
            return self._unknown.length(t0, t1)

    def report(self) -> dict:
        """The watch's settings and what it saw (JSON-ready)."""
        with self._lock:
            return {
                "threshold_s": self.threshold_s,
                "settle_s": self.settle_s,
                "max_gap_s": self.max_gap_s,
                "answers": self.answers,
                "unanswered_polls": self.unanswered_polls,
                "control_answering": self.answering,
                "control_unanswered_since_s": self.unanswered_since_s,
                "control_last_error": self.last_error,
                "lag_s_now": self.lag_s,
                "max_lag_seen_s": round(self.max_lag_seen_s, 6),
                "excluded_intervals": len(self._excluded.starts),
            }


T = TypeVar("T")


class LagGate(Generic[T]):
    """Samples held until ``watch`` knows the bank's lag at their bus time (module doc).

    ``push(stamp_s, item)``; ``release(newest_s)`` returns ``(item, state)`` for each sample
    known by now, in order (``LAGGED``: leave it out; ``CLEAR``: judge it; ``UNKNOWN``:
    judge it, nothing being known), a sample older than ``max_wait_s`` [s] before
    ``newest_s`` (or every one, ``final``) released ``UNKNOWN`` if still pending."""

    def __init__(self, watch: BankLagWatch, max_wait_s: float = MAX_WAIT_S):
        self.watch = watch
        self.max_wait_s = _seconds("bank_lag_max_wait_s", max_wait_s, 0.0, 60.0)
        self._held: deque[tuple[float, T]] = deque()
        self.excluded = 0  # samples left out for the bank's lag
        self.unknown = 0  # samples judged without knowing the bank's lag
        self.first_s: float | None = None  # the first and last bus time released [s]
        self.last_s: float | None = None

    def __len__(self) -> int:
        return len(self._held)

    def push(self, stamp_s: float, item: T) -> None:
        self._held.append((float(stamp_s), item))

    def release(self, newest_s: float, final: bool = False) -> list[tuple[T, str]]:
        out: list[tuple[T, str]] = []
        held = self._held
        while held:
            stamp, item = held[0]
            state = self.watch.state_at(stamp)
            if state == PENDING:
                if not (final or newest_s - stamp > self.max_wait_s):
                    break
                state = UNKNOWN
            held.popleft()
            if state == LAGGED:
                self.excluded += 1
            elif state == UNKNOWN:
                self.unknown += 1
            self.first_s = stamp if self.first_s is None else min(self.first_s, stamp)
            self.last_s = stamp if self.last_s is None else max(self.last_s, stamp)
            out.append((item, state))
        return out

    def report(self, start_s: float) -> dict:
        """The watch's report with this gate's counts; times from bus time ``start_s`` [s]
        (the twin's start) to the last sample released."""
        end = self.last_s if self.last_s is not None else start_s
        return {
            "observable": True,
            **self.watch.report(),
            "excluded_for_bank_lag_s": round(self.watch.excluded_s(start_s, end), 4),
            "excluded_samples": self.excluded,
            "lag_unknown_s": round(self.watch.unknown_s(start_s, end), 4),
            "judged_without_lag_knowledge_samples": self.unknown,
            "held_samples": len(self._held),
            "max_wait_s": self.max_wait_s,
        }


def not_observable(reason: str) -> dict:
    """The summary's ``bank_lag`` where no bank control port was given."""
    return {"observable": False, "reason": reason, "excluded_for_bank_lag_s": None}


class BankLagPoller:
    """Asks a bank's control port (``host``:``port``) for ``status`` every ``poll_s`` [s] in
    a daemon thread and feeds ``watch``; ``clock`` gives bus time [s] (Unix on a bank).
    ``check()`` polls once and raises ``MirrorInputError`` when the port does not answer
    like a bank (exit 2 in ``rob-twin mirror``)."""

    def __init__(
        self,
        port: int,
        watch: BankLagWatch,
        host: str,
        poll_s: float = POLL_S,
        timeout_s: float = CONTROL_TIMEOUT_S,
        clock: Callable[[], float] = time.time,
    ):
        self.port, self.host, self.watch, self.clock = port, host, watch, clock
        self.poll_s = _seconds("bank_lag_poll_s", poll_s, 0.005, 10.0)
        self.timeout_s = _seconds("bank_lag_timeout_s", timeout_s, 0.01, 60.0)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll_once(self) -> bool:
        """One ``status`` request; True when answered (the watch is fed either way)."""
        from rob_twin.twin.bus.bank_control import control

        try:
            reply = control(self.port, {"cmd": "status"}, self.host, self.timeout_s)
            at = self.clock()
            self.watch.observe(at, reply["lag_s"], reply["max_lag_s"])
        except (OSError, ValueError, KeyError, TypeError) as err:  # typed errors: ValueError
            self.watch.unanswered(self.clock(), f"{type(err).__name__}: {err}")
            return False
        return True

    def check(self) -> None:
        if not self.poll_once():
            raise MirrorInputError(
                "bank_control_port",
                self.port,
                f"the control port of a running rob-twin bank on {self.host} (its banner or "
                f"ready file names it; leave it out on a real bus): {self.watch.last_error}",
            )

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.wait(self.poll_s):
                self.poll_once()

        self._thread = threading.Thread(target=loop, name="mirror-bank-lag", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout_s + 1.0)

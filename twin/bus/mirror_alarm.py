"""The mirror's alarm statistics, per joint (``rob_twin.twin.bus.mirror``'s module doc).

``AlarmConfig`` says how a joint alarms: ``max`` (one frame whose real - twin difference is
beyond the tolerance) or ``rms`` (the RMS of the difference over a sliding window of bus
time beyond ``max(factor * floor, min_rad)``, ``floor`` being the joint's RMS over the first
``floor_s`` of bus time: the jitter floor measured at start-up). ``JointWatch`` keeps one
joint's window and floor. Light (no mujoco): the CLI reads the defaults from here.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from rob_twin.models.errors import InvalidValueError


class MirrorInputError(InvalidValueError):
    """A mirror setting or start state out of its valid range (names value and range)."""

    subject = "mirror"


ALARM_KINDS = ("rms", "max")
CLI_ALARM = "rms"  # rob-twin mirror's alarm (the library's default stays "max")


@dataclass(frozen=True)
class AlarmConfig:
    """How a mirror decides that a joint has left the twin (module doc).

    kind: ``"max"`` (one frame beyond the tolerance) or ``"rms"`` (the windowed RMS beyond
    ``max(factor * floor, min_rad)``, and one frame beyond the tolerance); window_s: the
    sliding window [s, bus time]; factor: times the start-up floor; floor_s: how long after
    the twin's start the floor is measured [s, bus time]; min_rad: the least RMS threshold
    [rad] (a floor measured at rest is the feedback's quantum, far below any motion's
    jitter)."""

    kind: str = "max"
    window_s: float = 1.0
    factor: float = 3.0
    floor_s: float = 2.0
    min_rad: float = 0.005

    def __post_init__(self) -> None:
        if self.kind not in ALARM_KINDS:
            raise MirrorInputError("alarm", self.kind, f"one of {ALARM_KINDS}")
        limits = {
            "window_s": (0.0, 60.0),
            "factor": (1.0, 1000.0),
            "floor_s": (0.0, 600.0),
            "min_rad": (0.0, math.pi),
        }
        for name, (lo, hi) in limits.items():
            v = getattr(self, name)
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and lo < v <= hi
            if not ok or not math.isfinite(v):
                raise MirrorInputError(name, v, f"a number in ({lo:g}, {hi:g}]")

    def record(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def default_alarm() -> AlarmConfig:
    """The library's alarm: ``max`` (one frame beyond the tolerance), as it always was."""
    return AlarmConfig()


class JointWatch:
    """One joint's windowed RMS of real - twin and its start-up floor (``AlarmConfig``).

    ``add(stamp, diff)`` takes each compared frame; ``rms`` is the RMS over the last
    ``window_s`` [s] of bus time; ``floor`` the RMS over bus time before ``floor_end_s``
    (None until then); ``threshold`` ``max(factor * floor, min_rad)`` once known."""

    def __init__(self, config: AlarmConfig, floor_end_s: float):
        self.config = config
        self.floor_end_s = floor_end_s
        self._window: deque[tuple[float, float]] = deque()
        self._sum = 0.0
        self._floor_sum, self._floor_n = 0.0, 0
        self.floor: float | None = None
        self.rms = 0.0
        self.max_rms = 0.0  # the largest windowed RMS once the floor was known

    @property
    def threshold(self) -> float | None:
        if self.floor is None:
            return None
        return max(self.config.factor * self.floor, self.config.min_rad)

    def add(self, stamp_s: float, diff: float) -> bool:
        """Take one frame's difference [rad]; True when the windowed RMS is beyond the
        threshold (never before the floor is known)."""
        d2 = diff * diff
        if stamp_s < self.floor_end_s:
            self._floor_sum += d2
            self._floor_n += 1
        elif self.floor is None:
            self.floor = math.sqrt(self._floor_sum / self._floor_n) if self._floor_n else 0.0
        w = self._window
        w.append((stamp_s, d2))
        self._sum += d2
        while w and w[0][0] <= stamp_s - self.config.window_s:
            self._sum -= w.popleft()[1]
        if not w:  # never: the frame just added is in its own window
            self._sum = 0.0
        self.rms = math.sqrt(max(self._sum, 0.0) / len(w))
        if self.floor is None:
            return False
        self.max_rms = max(self.max_rms, self.rms)
        return self.rms > self.threshold

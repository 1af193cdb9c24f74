"""The rehearsal's target paths around home (simulated; rad)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from rob_twin.models import dimensions as D

HOME = np.array(D.HOME_ARM_POSE)


def wave_source(k: int) -> Callable[[float], np.ndarray]:
    """A smooth per-joint target path around home (0.25 rad, 0.3-0.5 Hz): arm ``k``."""
    freq = 0.3 + 0.03 * np.arange(7)
    phase = 0.7 * np.arange(7) + k
    gain = np.array([1, 1, 1, -1, 1, 0.5, 1])
    start = 0.25 * np.sin(phase) * gain  # subtracted: the path starts at HOME
    omega = 2 * math.pi * freq

    def source(t: float) -> np.ndarray:
        return HOME + 0.25 * np.sin(omega * t + phase) * gain - start

    return source

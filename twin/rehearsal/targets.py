"""The rehearsal's target paths around home (simulated; rad)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from rob_twin.models import dimensions as D

HOME = np.array(D.HOME_ARM_POSE)


def toward_far_bound(
    home: np.ndarray, lower: np.ndarray, upper: np.ndarray, move: np.ndarray
) -> np.ndarray:
    """``move`` [rad] with each joint's sign pointing from ``home`` toward its farther bound."""
    up = (np.asarray(upper) - home) >= (home - np.asarray(lower))
    return np.where(up, np.abs(move), -np.abs(move))


def wave_source(
    k: int,
    home: np.ndarray = HOME,
    lower: np.ndarray | None = None,
    upper: np.ndarray | None = None,
    amplitude: float = 0.25,
) -> Callable[[float], np.ndarray]:
    """A smooth per-joint target path around ``home`` (``amplitude`` [rad], 0.3-0.5 Hz): arm
    ``k``; one
    per joint of ``home`` (seven: ROB; an arm of n joints takes the first n joints' paths).

    With ``lower``/``upper`` [rad] each joint swings toward its farther bound and the path is
    clipped into them (a robot whose home sits near a joint bound, as OpenArm's J2 does,
    where the near side leads into its pedestal); without them (ROB) it is the unclipped wave."""
    home = np.asarray(home, float)
    n = home.size
    freq = 0.3 + 0.03 * np.arange(n)
    phase = 0.7 * np.arange(n) + k
    gain = np.array([1, 1, 1, -1, 1, 0.5, 1])[:n]
    if lower is not None:
        # the path's excursion from home is 0.25 (sin - sin(phase)) * gain: its larger side
        # (the negative one where sin(phase) > 0) goes toward the farther bound
        larger_side_up = np.sin(phase) <= 0
        gain = np.where(larger_side_up, 1, -1) * toward_far_bound(home, lower, upper, gain)
    start = amplitude * np.sin(phase) * gain  # subtracted: the path starts at HOME
    omega = 2 * math.pi * freq

    def source(t: float) -> np.ndarray:
        q = home + amplitude * np.sin(omega * t + phase) * gain - start
        return q if lower is None else np.clip(q, lower, upper)

    return source

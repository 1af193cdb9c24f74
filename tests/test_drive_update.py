"""The simulated drive's per-step update matches its plain formula bit for bit.

``SimulatedDrive.update`` is written for speed (locals, conditional clamps); this test
keeps the readable formula beside it and drives both through the same random command,
position and timing sequences, including timeouts, a zero lag, clamped integrals and
non-finite positions. Any difference in a single bit fails: runs must stay identical
for a seed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from rob_twin.twin.drives.amber_drive import DriveConfig, SimulatedDrive


class _Reference:
    """The drive's update as the formula reads (rate limit, lag, clamped integral)."""

    def __init__(self, config: DriveConfig, q0: float):
        self.c = config
        self.command_rad = self.ramped = self.setpoint_rad = q0
        self.integral = 0.0
        self.last_command_s = 0.0
        self.timed_out = False

    def update(self, now: float, dt: float, position_rad: float) -> float:
        c = self.c
        self.timed_out = now - self.last_command_s > c.command_timeout_s
        goal = self.ramped if self.timed_out else self.command_rad
        step = c.max_velocity_rad_s * dt
        self.ramped += min(max(goal - self.ramped, -step), step)
        if c.lag_s > 0:
            self.setpoint_rad += (self.ramped - self.setpoint_rad) * (dt / (c.lag_s + dt))
        else:
            self.setpoint_rad = self.ramped
        lim = c.integral_limit_rad
        self.integral += c.integral_gain * (self.setpoint_rad - position_rad) * dt
        self.integral = min(max(self.integral, -lim), lim)
        return self.setpoint_rad + self.integral


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (
        a == b and math.copysign(1, a) == math.copysign(1, b)
    )


CONFIGS = [
    DriveConfig(),
    DriveConfig(lag_s=0.0),
    DriveConfig(max_velocity_rad_s=0.5, integral_gain=200.0, integral_limit_rad=0.01),
    DriveConfig(integral_limit_rad=0.0, command_timeout_s=0.003),
]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("seed", range(4))
def test_update_matches_the_formula_bit_for_bit(config, seed):
    rng = np.random.default_rng(seed)
    q0 = float(rng.uniform(-1, 1))
    drv, ref = SimulatedDrive(1, config, q0), _Reference(config, q0)
    now, dt = 0.0, 0.001
    q = q0
    for k in range(3000):
        now = k * dt
        if rng.random() < 0.2:  # a command: sometimes far away, sometimes a hair off
            target = float(rng.choice([rng.uniform(-3, 3), q + rng.normal(0, 1e-6)]))
            drv.command_rad = ref.command_rad = target
            drv.last_command_s = ref.last_command_s = now
        if rng.random() < 0.01:
            q = float(rng.choice([math.nan, math.inf, -math.inf]))
        elif not math.isfinite(q) or rng.random() < 0.5:
            q = float(rng.uniform(-3, 3))
        out, want = drv.update(now, dt, q), ref.update(now, dt, q)
        assert _same(out, want), (k, out, want)
        assert drv.timed_out == ref.timed_out
        assert _same(drv.setpoint_rad, ref.setpoint_rad)
        if not math.isfinite(want):  # a NaN/inf position poisons the integral: start over
            drv.hold_at(q0)
            ref.command_rad = ref.ramped = ref.setpoint_rad = q0
            ref.integral = 0.0
            q = q0

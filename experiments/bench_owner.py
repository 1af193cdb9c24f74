"""Benchmark ``owner``: ArmOwner tick time per arm next to a bare Ruckig update (same run)."""

from __future__ import annotations

import time

import numpy as np
from rob_twin.controllers.clock import SimClock
from rob_twin.controllers.owner import ArmOwner
from rob_twin.controllers.owner_config import OwnerConfig
from rob_twin.controllers.target import ArmTarget
from rob_twin.experiments.owner_rig import NullPublisher
from rob_twin.experiments.registry import benchmark
from rob_twin.models.names import Arm
from ruckig import InputParameter, OutputParameter, Ruckig


def _targets(n: int, k: int) -> np.ndarray:
    t = k / 60.0
    return 0.3 + 0.2 * np.sin(2 * np.pi * 0.1 * t + np.arange(n))


def _stats(us: np.ndarray) -> dict:
    return {
        "median_us": float(np.median(us)),
        "p99_us": float(np.percentile(us, 99)),
        "n": int(us.size),
    }


@benchmark("owner")
def run(n_ticks: int = 4000) -> dict:
    out = {
        "hardware_io": False,
        "period_s": 0.005,
        "retarget_every_ticks": 3,
        "target_median_us": 15.0,
    }
    for arm in Arm:
        clock = SimClock()
        owner = ArmOwner(
            arm, NullPublisher(), clock, np.full(7, 0.3), OwnerConfig(require_feedback=False)
        )
        lease = owner.grant_lease("bench", 1e9)
        us = []
        for k in range(n_ticks):
            if k % 3 == 0:
                target = ArmTarget(
                    arm=arm,
                    positions_rad=_targets(7, k),
                    sequence=k + 1,
                    generation=owner.generation,
                    lease=lease,
                )
                owner.submit(target)
            us.append(owner.tick().compute_s * 1e6)
            clock.advance(0.005)
        out[f"owner_tick_{arm.value}"] = _stats(np.array(us[10:]))
    otg, inp, res = Ruckig(7, 0.005), InputParameter(7), OutputParameter(7)
    inp.current_position = [0.3] * 7
    inp.max_velocity, inp.max_acceleration, inp.max_jerk = [0.3] * 7, [0.6] * 7, [2.0] * 7
    us = []
    for k in range(n_ticks):
        if k % 3 == 0:
            inp.target_position = _targets(7, k).tolist()
        t0 = time.perf_counter()
        otg.update(inp, res)
        res.pass_to_input(inp)
        us.append((time.perf_counter() - t0) * 1e6)
    out["bare_ruckig_update"] = _stats(np.array(us[10:]))
    return out

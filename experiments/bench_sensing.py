"""Benchmark: the lidars, their merge, the merged scan's error, and the dm_env environment.

- Lidar revolution cost: CPU time of one unit's revolution (all its ``mj_multiRay`` slice
  calls plus the scan's assembly), median over the revolutions of a 3 s run; and, as the
  floor, the cost of casting a whole revolution in a single call from one pose.
- Merge cost: ``rob_twin.twin.base.scan_merge.merge`` on recorded pairs, median.
- Merged-scan error vs ground truth, base still and backing at 0.5 m/s (median, p99):
  ``rob_twin.experiments.exp_scan_merge.merge_run``.
- Environment steps per second (20 Hz control, random policy, scan on / off) vs the bare
  closed loop (the same owners, codec and bus, targets at 20 Hz, no env, no sensors).
All CPU times are this thread's (``time.thread_time``); simulated, hardware_io false.
"""

from __future__ import annotations

import time

import mujoco
import numpy as np
from rob_twin.experiments.exp_scan_merge import merge_run
from rob_twin.experiments.registry import benchmark
from rob_twin.models.names import Arm
from rob_twin.twin.base.lidar import LidarPair
from rob_twin.twin.base.scan_merge import merge, mounts_from_model
from rob_twin.twin.base.tread_drive import place_base
from rob_twin.twin.env import EnvConfig, RobEnv
from rob_twin.twin.sim.closed_loop import ClosedLoop
from rob_twin.twin.sim.twin import Twin

SECONDS = 3.0
ENV_STEPS = 100


def _revolution_costs() -> dict:
    twin = Twin()
    place_base(twin, -1.2, 0.4, 0.3)
    pair = LidarPair(twin)
    out = {}
    for unit in pair.units.values():
        per_rev: dict[int, float] = {}

        def timed(fn, unit=unit, per_rev=per_rev):
            def wrapper(*args):
                c0 = time.thread_time()
                fn(*args)
                key = len(unit.scans) + len(unit._pending)
                per_rev[key] = per_rev.get(key, 0.0) + time.thread_time() - c0

            return wrapper

        unit._cast = timed(unit._cast)
        unit._finish = timed(unit._finish)
        out[unit.config.unit] = per_rev
    twin.run_for(SECONDS)
    figures = {}
    for name, unit in pair.units.items():
        costs = [c for k, c in sorted(out[name].items())][1:-1]  # whole revolutions only
        n = unit.config.beams
        d = twin.data
        site = unit.site
        dirs = (unit._dirs_local @ d.site_xmat[site].reshape(3, 3).T).reshape(-1)
        gid, dist = np.zeros(n, np.int32), np.zeros(n)
        c0 = time.thread_time()
        for _ in range(50):
            mujoco.mj_multiRay(
                twin.model, d, d.site_xpos[site], dirs, None, True, -1, gid, dist, None, n, 13.0
            )
        one_call = (time.thread_time() - c0) / 50
        figures[name] = {
            "revolution_cost_median_ms": 1000 * float(np.median(costs)),
            "calls_per_revolution": unit.calls / max(1, len(unit.scans)),
            "beams": n,
            "one_call_per_revolution_ms": 1000 * one_call,
        }
    merges = []
    mounts = mounts_from_model(twin.model)
    front, back = pair.units["front"].scans, pair.units["back"].scans
    for a, b in zip(front, back, strict=False):
        c0 = time.thread_time()
        for _ in range(20):
            merge(a, b, mounts)
        merges.append((time.thread_time() - c0) / 20)
    figures["merge_cost_median_ms"] = 1000 * float(np.median(merges))
    return figures


def _env_rate(sensors: tuple[str, ...]) -> float:
    env = RobEnv(
        EnvConfig(control_rate_hz=20.0, time_limit_s=ENV_STEPS / 20.0 + 1.0, sensors=sensors)
    )
    spec = env.action_spec()
    rng = np.random.default_rng(0)
    ts = env.reset()
    home = np.concatenate(
        [ts.observation["commanded/right"], ts.observation["commanded/left"], [0.0, 0.0]]
    )
    span = (spec.maximum - spec.minimum) * 0.1
    actions = [
        np.clip(home + rng.uniform(-span, span), spec.minimum, spec.maximum)
        for _ in range(ENV_STEPS)
    ]
    c0 = time.thread_time()
    for a in actions:
        env.step(a)
    rate = ENV_STEPS / (time.thread_time() - c0)
    env.close()
    return rate


def _bare_loop_rate() -> float:
    """Control periods per CPU second of the closed loop alone, arm targets at 20 Hz."""
    rng = np.random.default_rng(0)
    with ClosedLoop() as loop:
        home = {arm: loop.commanded(arm) for arm in Arm}
        c0 = time.thread_time()
        for _ in range(ENV_STEPS):
            for arm in Arm:
                loop.command(arm, home[arm] + rng.uniform(-0.1, 0.1, 7))
            loop.twin.step(50)
        return ENV_STEPS / (time.thread_time() - c0)


@benchmark("sensing")
def run() -> dict:
    lidar = _revolution_costs()
    errors = {
        name: merge_run(speed, SECONDS)["figures"]
        for name, speed in (("still", 0.0), ("0.5 m/s", 0.5))
    }
    bare = _bare_loop_rate()
    env_full = _env_rate(("feedback", "commanded", "modes", "base", "scan"))
    env_no_scan = _env_rate(("feedback", "commanded", "modes", "base"))
    return {
        "lidar": lidar,
        "merged_scan_error": {
            k: {
                f: v[f]
                for f in (
                    "angular_error_median_rad",
                    "angular_error_p99_rad",
                    "range_error_median_m",
                    "range_error_p99_m",
                    "robot_hits_seen",
                    "robot_hits_kept",
                )
            }
            for k, v in errors.items()
        },
        "env_steps_per_cpu_s": {
            "with_scan": env_full,
            "without_scan": env_no_scan,
            "bare_closed_loop_periods": bare,
            "env_cost_vs_bare": bare / env_full,
        },
        "control_rate_hz": 20.0,
        "method": "CPU time of this thread; one env step = 50 physics steps (20 Hz)",
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))

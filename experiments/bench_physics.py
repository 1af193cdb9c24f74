"""Benchmark: simulated-time/wall-time ratio of the headless twin vs bare mj_step."""

from __future__ import annotations

import time

import mujoco
from rob_twin.experiments.registry import benchmark
from rob_twin.twin.scenario.run import demo_scenario, run_scenario


@benchmark("physics")
def run() -> dict:
    sc = demo_scenario()
    result = run_scenario(sc, record=False, progress=False)
    from rob_twin.models.loading import load_scene

    m = load_scene()
    d = mujoco.MjData(m)
    steps = int(round(sc.duration / m.opt.timestep))
    t0 = time.perf_counter()
    for _ in range(steps):
        mujoco.mj_step(m, d)
    bare = time.perf_counter() - t0
    twin_ratio = result.simulated_s / result.wall_s
    bare_ratio = sc.duration / bare
    return {
        "simulated_s": result.simulated_s,
        "twin_headless_sim_per_wall": round(twin_ratio, 2),
        "bare_mj_step_sim_per_wall": round(bare_ratio, 2),
        "twin_cost_vs_bare": round(bare_ratio / twin_ratio, 2),
    }

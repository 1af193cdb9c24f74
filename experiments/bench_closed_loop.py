"""Benchmark: real-time factor of the closed loop with both arms streaming vs bare mj_step.

Both measured in the same run on the same model, interleaved in rounds so machine
noise hits both alike; the figure of merit is the cost ratio (aim: <= 2.5x). Times are
this thread's CPU time (``time.thread_time``): on a shared 2-core machine wall time
swings +-30 % between rounds, CPU time much less. Wall-time ratios are reported too.
"""

from __future__ import annotations

import time

import mujoco
import numpy as np
from rob_twin.experiments.registry import benchmark
from rob_twin.models.names import Arm
from rob_twin.twin.rehearsal import wave_source
from rob_twin.twin.sim.closed_loop import ClosedLoop

SECONDS = 3.0
ROUNDS = 9


def _closed_loop_rtf(seconds: float) -> tuple[float, float, dict]:
    with ClosedLoop() as loop:
        for k, arm in enumerate(Arm):
            loop.stream_targets(arm, wave_source(k), 60.0)
        loop.run_for(0.2)  # warm-up: first plans, first feedback
        c0, t0 = time.thread_time(), time.perf_counter()
        loop.run_for(seconds)
        cpu, wall = time.thread_time() - c0, time.perf_counter() - t0
        figs = {
            a.value: {
                "published": loop.drivers[a].owner.stats.published,
                "fault": loop.drivers[a].owner.fault and loop.drivers[a].owner.fault.value,
            }
            for a in Arm
        }
    return seconds / cpu, seconds / wall, figs


def _bare_rtf(seconds: float) -> tuple[float, float]:
    with ClosedLoop() as loop:  # the same model and state, stepped with nothing else
        m, d = loop.twin.model, loop.twin.data
        steps = int(round(seconds / m.opt.timestep))
        c0, t0 = time.thread_time(), time.perf_counter()
        for _ in range(steps):
            mujoco.mj_step(m, d)
        return seconds / (time.thread_time() - c0), seconds / (time.perf_counter() - t0)


@benchmark("closed_loop")
def run() -> dict:
    loop_rtf, bare_rtf, loop_wall, bare_wall, figs = [], [], [], [], {}
    for _ in range(ROUNDS):
        r, w, figs = _closed_loop_rtf(SECONDS)
        loop_rtf.append(r)
        loop_wall.append(w)
        rb, wb = _bare_rtf(SECONDS)
        bare_rtf.append(rb)
        bare_wall.append(wb)
    lo, bare = float(np.median(loop_rtf)), float(np.median(bare_rtf))
    return {
        "what": "simulated seconds per wall second; both arms streaming 60 Hz targets through "
        "owners (200 Hz), codec, python-can virtual buses and the motor bank (1 kHz "
        "physics, 20 Hz feedback)",
        "rounds": ROUNDS,
        "simulated_s_per_round": SECONDS,
        "closed_loop_rtf_median": round(lo, 2),
        "bare_mj_step_rtf_median": round(bare, 2),
        "closed_loop_cost_vs_bare": round(bare / lo, 2),
        "target_cost_vs_bare": 2.5,
        "clock": "thread CPU time",
        "closed_loop_rtf_all": [round(x, 2) for x in loop_rtf],
        "bare_mj_step_rtf_all": [round(x, 2) for x in bare_rtf],
        "wall_clock_cost_vs_bare_median": round(
            float(np.median(bare_wall)) / float(np.median(loop_wall)), 2
        ),
        "owners": figs,
    }

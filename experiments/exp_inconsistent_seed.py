"""The inconsistent-seed experiment: ruckig's sampled vs exact J6 minimum.

Simulated (hardware_io false).
"""

from __future__ import annotations

import math

import ruckig
from rob_twin.controllers.extremum import segment_extrema, segments_from_trajectory
from rob_twin.experiments.output import markdown_table, write_experiment
from rob_twin.experiments.registry import experiment
from ruckig import InputParameter, OutputParameter, Result, Ruckig, Trajectory

J6_START, J6_TARGET = 0.34, 1.05
SEED_TABLE = {(0.2, 0.0): 0.340000, (0.0, -40.0): -5.262596, (0.0, 0.0): 0.340000}


@experiment("inconsistent-seed")
def inconsistent_seed(seed: int = 0) -> dict:
    """J6 +0.34 -> +1.05 rad, 5,400 deg/s, 90,000 deg/s^2, 5,000 deg/s^3, three initial states."""
    vmax, amax, jmax = (math.radians(x) for x in (5400.0, 90000.0, 5000.0))
    cases = []
    for (v0, a0), seed_min in SEED_TABLE.items():
        inp = InputParameter(1)
        inp.current_position, inp.current_velocity, inp.current_acceleration = (
            [J6_START],
            [v0],
            [a0],
        )
        inp.target_position = [J6_TARGET]
        inp.max_velocity, inp.max_acceleration, inp.max_jerk = [vmax], [amax], [jmax]
        traj = Trajectory(1)
        Ruckig(1).calculate(inp, traj)
        ext = segment_extrema(segments_from_trajectory(traj)[0])
        otg, out = Ruckig(1, 0.005), OutputParameter(1)
        sampled = [J6_START]
        while otg.update(inp, out) == Result.Working:
            sampled.append(out.new_position[0])
            out.pass_to_input(inp)
        sampled.append(out.new_position[0])
        cases.append(
            {
                "v0": v0,
                "a0": a0,
                "min_position_seed_0_9_2": seed_min,
                "min_position_sampled": round(min(sampled), 6),
                "min_position_exact": round(ext.p_min, 6),
                "t_min_exact_s": round(ext.t_p_min, 6),
                "ruckig_position_extrema_min": round(traj.position_extrema[0].min, 6),
                "duration_s": round(traj.duration, 6),
                "samples": len(sampled),
            }
        )
    result = {
        "experiment": "inconsistent-seed",
        "ruckig": ruckig.__version__,
        "loop_period_s": 0.005,
        "cases": cases,
        "note": "sampled = 5 ms Ruckig update loop; "
        "exact = extremum checker over the profile's jerk "
        "segments; the seed's figures come from ruckig 0.9.2.",
    }
    return write_experiment("inconsistent-seed", result, markdown_table(cases))

"""The extremum experiment: the exact extremum checker vs dense sampling.

Simulated (hardware_io false).
"""

from __future__ import annotations

import numpy as np
from rob_twin.controllers.extremum import segment_extrema, segments_from_trajectory
from rob_twin.experiments.output import markdown_table, write_experiment
from rob_twin.experiments.registry import experiment
from ruckig import InputParameter, Ruckig, Trajectory


@experiment("extremum")
def extremum(seed: int = 0, n_traj: int = 250, n_samples: int = 301) -> dict:
    """Exact checker vs dense sampling on random 7-joint Ruckig trajectories (brakes, tails)."""
    from rob_twin.controllers.extremum import JerkSegment, state_at
    from ruckig import Synchronization

    rng = np.random.default_rng(seed)
    obs = 0
    worst_state = 0.0  # |checker state - ruckig at_time| over all observations
    enclosed = True  # every sampled p, v, a lies inside the exact extrema
    ruckig_extrema_misses = 0  # joints where trajectory.position_extrema is narrower than exact
    ruckig_worst = 0.0
    braked = unequal = 0
    for k in range(n_traj):
        inp = InputParameter(7)
        if k % 2:
            inp.synchronization = Synchronization.No
        inp.current_position = rng.uniform(-1, 1, 7).tolist()
        inp.current_velocity = rng.uniform(-0.6, 0.6, 7).tolist()
        inp.current_acceleration = rng.uniform(-1.2, 1.2, 7).tolist()
        inp.target_position = rng.uniform(-1, 1, 7).tolist()
        inp.target_velocity = rng.uniform(-0.1, 0.1, 7).tolist()
        inp.max_velocity, inp.max_acceleration, inp.max_jerk = [0.3] * 7, [0.6] * 7, [2.0] * 7
        traj = Trajectory(7)
        Ruckig(7).calculate(inp, traj)
        segs = segments_from_trajectory(traj)
        ext = [segment_extrema(s) for s in segs]
        braked += sum(pr.brake.duration > 0 for pr in traj.profiles[0])
        unequal += sum(
            abs(sum(pr.t) + pr.brake.duration - traj.duration) > 1e-9 for pr in traj.profiles[0]
        )
        for t in np.linspace(0.0, traj.duration, n_samples):
            p, v, a = traj.at_time(t)
            for d in range(7):
                q = state_at(segs[d], t)
                worst_state = max(worst_state, abs(q[0] - p[d]), abs(q[1] - v[d]), abs(q[2] - a[d]))
                e = ext[d]
                enclosed &= (
                    e.p_min - 1e-12 <= p[d] <= e.p_max + 1e-12
                    and e.v_min - 1e-12 <= v[d] <= e.v_max + 1e-12
                    and e.a_min - 1e-12 <= a[d] <= e.a_max + 1e-12
                )
                obs += 1
        for d, pe in enumerate(traj.position_extrema):
            gap = max(pe.min - ext[d].p_min, ext[d].p_max - pe.max)
            if gap > 1e-9:
                ruckig_extrema_misses += 1
                ruckig_worst = max(ruckig_worst, gap)
    zj_segments = [JerkSegment(1.0, 0.0, 1.0, -2.0, 0.0)]
    zj = segment_extrema(zj_segments)
    zj_endpoint_max = max(state_at(zj_segments, 0.0)[0], state_at(zj_segments, 1.0)[0])
    result = {
        "experiment": "extremum",
        "seed": seed,
        "trajectories": n_traj,
        "joint_state_observations": obs,
        "seed_observations": 526750,
        "max_state_mismatch": worst_state,
        "samples_enclosed": bool(enclosed),
        "joints_with_brake_phase": braked,
        "joints_with_unequal_tail": unequal,
        "ruckig_position_extrema_narrower_joints": ruckig_extrema_misses,
        "ruckig_position_extrema_worst_gap_rad": ruckig_worst,
        "zero_jerk_case": {
            "v0": 1.0,
            "a0": -2.0,
            "j": 0.0,
            "duration_s": 1.0,
            "p_max_exact": zj.p_max,
            "t_p_max_s": zj.t_p_max,
            "endpoint_max": zj_endpoint_max,
        },
    }
    rows = [{k: v for k, v in result.items() if not isinstance(v, dict)}]
    return write_experiment("extremum", result, markdown_table(rows))

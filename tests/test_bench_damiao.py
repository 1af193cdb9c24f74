"""``python -m rob_twin.experiments.bench damiao`` on a fresh clone: every part of the benchmark
runs, shortened, on each robot it names (it crashed with OwnerConfigError when the holding
part put ROB's home, J2 -1.22 rad, on OpenArm, whose J2 range is -0.17..3.32 rad)."""

from __future__ import annotations

import numpy as np
from rob_twin.experiments import bench_damiao as B
from rob_twin.models.names import Arm
from rob_twin.models.robot_model import arm_joint_ranges, load_robot_model


def test_holding_poses_are_openarms_own_and_inside_its_ranges():
    model = load_robot_model(B.ROBOT)
    lo, hi = np.array(arm_joint_ranges(B.ROBOT, Arm.RIGHT)).T
    poses = B.poses(model)
    assert np.allclose(poses["home"], [0.0, 0.0, 0.0, 1.570796, 0.0, 0.0, 0.0])
    for name, q in poses.items():
        assert np.all((lo <= q) & (q <= hi)), (name, q)


def test_the_benchmark_runs_shortened_on_every_robot_it_names(tmp_path):
    assert set(B.TRACKING_ROBOTS.values()) == {"rob", "openarm"}
    res = B.run(
        samples=20, hold_s=0.05, demo_s=0.05, loop_s=0.02, rounds=1, plot_path=tmp_path / "h.png"
    )
    assert (tmp_path / "h.png").is_file()
    hold = res["holding_error_three_poses"]
    for name in ("home", "forward_reach", "elbow_out"):
        on = hold[name]["with_compensation"]
        assert on["owner_fault"] is None and on["max_error_rad"] < 0.01, (name, on)
    for key in B.TRACKING_ROBOTS:
        t = res["wave_tracking_both_families"][key]
        assert t["owner_fault"] is None and t["samples_published"] > 0, (key, t)
    assert res["closed_loop_cost"]["rounds"] == 1
    assert res["host_cost_per_arm_per_tick"]["samples"] == 20

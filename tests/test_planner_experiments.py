"""The crossing and study experiments: keys, a proven trap, zero group collisions."""

from __future__ import annotations

import json

import pytest
from rob_twin.experiments import exp_crossing, exp_study, output
from rob_twin.experiments.crossing_goals import rob_crossing_goals, rob_crossing_start


@pytest.fixture
def out_dir(tmp_path, monkeypatch):
    for mod in (output, exp_crossing, exp_study):
        monkeypatch.setattr(mod, "OUT_DIR", tmp_path)
    return tmp_path


def test_crossing_is_a_proven_trap_and_the_group_plan_is_clean(out_dir):
    r = exp_crossing.run(seed=0, n_seeds=2)
    for key in (
        "separate_colliding_frames",
        "separate_frames",
        "group_colliding_states",
        "group_judged_states",
        "group_samples",
        "min_clearance_m",
        "max_detour_m",
        "max_bend_from_separate_m",
    ):
        assert key in r
    assert r["hardware_io"] is False
    assert r["separate_colliding_frames"] > 0  # the trap is real ...
    # ... and strong (the frozen pair: 91 of 182 frames, the group bends a hand 9.6 cm)
    assert r["separate_colliding_frames"] >= 0.3 * r["separate_frames"]
    assert r["max_bend_from_separate_m"] >= 0.05
    assert r["group_colliding_states"] == 0 and r["group_samples"] > 100
    # coal judges at least twice as densely as the planner checks (sample + one sub-step)
    assert r["group_judged_states"] >= 4 * (r["group_samples"] - 1)
    assert r["min_clearance_m"] >= 0.005 and r["group_coal_min_clearance_m"] >= 0.005 - 1e-4
    dist = r["seed_distribution"]  # the seed-dependent figures as a distribution, seed 0 in it
    assert dist["n_seeds"] == 2 and dist["per_seed"][0]["seed"] == 0
    assert dist["per_seed"][0]["max_bend_from_separate_m"] == pytest.approx(
        r["max_bend_from_separate_m"], abs=1e-4
    )
    bend = dist["summary"]["max_bend_from_separate_m"]
    assert bend["min"] <= bend["median"] <= bend["max"]
    # between the samples too: seed 003's envelope certifies separation, never above a sample
    cert = r["certificate"]
    assert (
        cert["certified"] and 0.005 <= cert["continuous_lower_bound_m"] <= r["true_min_clearance_m"]
    )
    assert r["certified_over_true"] >= 0.8
    assert (out_dir / "experiments" / "crossing" / "tcp_paths.png").stat().st_size > 1000
    json.loads((out_dir / "experiments" / "crossing" / "result.json").read_text())


def test_crossing_goals_are_shared_and_swap_sides():
    from rob_twin.planners.kinematics import ArmKinematics

    start, goal = rob_crossing_start(), rob_crossing_goals()
    y = {
        (w, a): ArmKinematics(a).tcp_pose(d[a]).translation[1]
        for w, d in (("s", start), ("g", goal))
        for a in ("right", "left")
    }
    assert y["s", "right"] < y["s", "left"] and y["g", "right"] > y["g", "left"]


def test_study_small(out_dir):
    r = exp_study.run(seed=1, n_pairs=3)
    for key in (
        "success_rate",
        "plan_time_ms_median",
        "plan_time_ms_p95",
        "min_clearance_m",
        "colliding_retimed_before_repair",
        "colliding_samples_after_repair",
    ):
        assert key in r
    assert r["pairs"] == 3 and r["colliding_samples_after_repair"] == 0
    assert r["hardware_io"] is False
    assert 0.005 <= r["certified_min_m"] <= r["true_min_m"]  # certified vs true (coal) minimum

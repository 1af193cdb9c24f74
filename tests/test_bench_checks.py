"""bench planner-checks: mj_collision calls counted by planner stage, the counter removed
afterwards, and the previous shortcut settings differ from the defaults only in the shortcut."""

from __future__ import annotations

import mujoco
from rob_twin.experiments.bench_checks import count_set, previous_shortcut
from rob_twin.experiments.bench_stages import _hard_requests
from rob_twin.experiments.hard_problems import groups
from rob_twin.planners import refine, timing
from rob_twin.planners.group_config import default_config


def test_counts_add_up_by_stage_and_the_counter_is_removed():
    real_collision, real_stage = mujoco.mj_collision, timing.StageTimer.stage
    real_check = refine.final_check
    out = count_set(groups()["stand"], _hard_requests("stand")[:2])
    assert mujoco.mj_collision is real_collision and timing.StageTimer.stage is real_stage
    assert refine.final_check is real_check
    calls = out["mj_collision_calls_per_plan"]
    assert out["success"] == 2 and out["path_duration_s_median"] > 0
    assert {"search", "check", "certify"} <= set(calls)
    stages = sum(v["sum"] for k, v in calls.items() if k != "total")
    assert calls["total"]["sum"] == stages > 0
    assert calls["search"]["sum"] > 0  # the hard problems' straight motion collides
    # every measurement but each path's last one chose its successor; a near pair sets some
    # on the stand (its hands pass close), the pairs beyond the horizon most
    sources = out["next_measurement_set_by"]
    chosen = sources["pairs_beyond_horizon"] + sources["a_near_pair"]
    assert 0 < chosen < calls["check"]["sum"]
    assert 0.5 < sources["share_beyond_horizon"] < 1.0


def test_settings_previous_shortcut_change_only_the_shortcut():
    now = default_config()
    old = previous_shortcut(now)
    assert old.search.shortcut_min_gain == 0.02 and not old.search.shortcut_drop_first
    assert now.search.shortcut_min_gain == 0.1 and now.search.shortcut_drop_first
    assert old.search.edge_step_rad == now.search.edge_step_rad
    assert old.collision == now.collision and old.certificate == now.certificate

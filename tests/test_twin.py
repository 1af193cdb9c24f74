"""Twin core: scheduler rates, determinism, thread ownership, scenarios, CLI, rendering."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
from rob_twin.cli.main import main
from rob_twin.models import dimensions as D
from rob_twin.models.names import Arm
from rob_twin.twin.scenario.run import Scenario, ScenarioError, run_scenario
from rob_twin.twin.sim.scheduler import Scheduler, SchedulerError
from rob_twin.twin.sim.twin import ThreadOwnershipError, Twin, TwinConfig


def test_scheduler_runs_each_task_at_its_own_rate():
    s = Scheduler(0.001)
    calls = {"a": 0, "b": 0}
    s.add("a", 200.0, lambda t: calls.__setitem__("a", calls["a"] + 1))
    s.add("b", 20.0, lambda t: calls.__setitem__("b", calls["b"] + 1))
    for _ in range(1000):
        s.run_due()
        s.step_count += 1
    assert calls == {"a": 200, "b": 20}


@pytest.mark.parametrize("rate", [0.0, -5.0, 300.0, 2000.0])
def test_scheduler_rejects_rates_that_do_not_divide_physics(rate):
    with pytest.raises(SchedulerError, match="Hz"):
        Scheduler(0.001).add("x", rate, lambda t: None)


def _noisy_run(seed: int) -> np.ndarray:
    twin = Twin(TwinConfig(seed=seed, control_noise=0.05))
    twin.run_for(0.3)
    return np.concatenate([twin.data.qpos, twin.data.qvel])


def test_same_seed_gives_bitwise_identical_state_and_other_seed_differs():
    a, b, c = _noisy_run(1), _noisy_run(1), _noisy_run(2)
    assert a.tobytes() == b.tobytes()
    assert a.tobytes() != c.tobytes()


def test_step_from_a_foreign_thread_is_refused():
    twin = Twin()
    errors = []

    def worker():
        try:
            twin.step()
        except ThreadOwnershipError as err:
            errors.append(err)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert len(errors) == 1


def test_bad_arm_target_is_rejected_and_state_unchanged():
    twin = Twin()
    before = twin.data.ctrl.copy()
    with pytest.raises(ValueError, match="7 finite"):
        twin.set_arm_targets(Arm.RIGHT, np.array([0.0, np.nan, 0, 0, 0, 0, 0]))
    assert np.array_equal(before, twin.data.ctrl)


def test_scenario_moves_the_arm_toward_its_keyframe(tmp_path):
    q = [0.3, -0.8, 0.0, 1.2, 0.0, 0.0, 0.0]
    sc = Scenario.from_dict(
        {"name": "reach", "duration": 3.0, "keyframes": [{"t": 0.8, "arm": "right", "q": q}]}
    )
    result = run_scenario(sc, out_dir=tmp_path, record=False, progress=False)
    assert np.max(np.abs(result.measured["right"][-1] - q)) < 0.05
    assert result.video is None and "disabled" in result.video_skipped_reason


@pytest.mark.parametrize(
    "raw, match",
    [
        ({"duration": -1}, "duration"),
        ({}, "duration"),
        (
            {"duration": 1, "keyframes": [{"t": 0, "arm": "right", "q": [1]}]},
            r"one finite joint angle \[rad\] per joint of the robot's arm",
        ),
    ],
)
def test_malformed_scenarios_raise_typed_errors(raw, match):
    with pytest.raises(ScenarioError, match=match):
        Scenario.from_dict(raw)


def test_unknown_arm_in_scenario_lists_valid_names():
    with pytest.raises(
        ScenarioError, match=r"keyframes\[0\]\.arm: Input should be 'right' or 'left'"
    ):
        Scenario.from_dict({"duration": 1, "keyframes": [{"t": 0, "arm": "middle", "q": [0] * 7}]})


def test_cli_run_writes_summary_with_evidence_boundary(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"name": "tiny", "duration": 0.2}))
    assert main(["run", str(path), "--out", str(tmp_path), "--no-video"]) == 0
    summary = json.loads((tmp_path / "tiny" / "summary.json").read_text())
    assert summary["hardware_io"] is False and summary["simulated_s"] == pytest.approx(0.2)
    assert (tmp_path / "tiny" / "joints.png").stat().st_size > 1000


def test_cli_run_logs_can_traffic(tmp_path):
    import can

    path = tmp_path / "s.json"
    path.write_text(json.dumps({"name": "logged", "duration": 0.1}))
    assert main(["run", str(path), "--out", str(tmp_path), "--no-video", "--can-log"]) == 0
    logs = sorted((tmp_path / "logged" / "can").glob("*.log"))
    assert [p.name.split("@")[0] for p in logs] == ["CAN10", "CAN11"]
    frames = list(can.LogReader(str(logs[0])))
    assert sum(f.arbitration_id == 0x11 for f in frames) == 20  # 0.1 s of 200 Hz samples


def test_cli_run_missing_file_exits_2(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.json")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_view_without_display_says_so_and_exits_with_error(monkeypatch, capsys):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert main(["view"]) == 3
    assert "no display" in capsys.readouterr().err


def test_experiment_unknown_name_lists_valid(capsys):
    assert main(["experiment", "no-such-thing"]) == 2
    assert "unknown experiment" in capsys.readouterr().err


def test_headless_render_smoke(tmp_path):
    from rob_twin.twin.render.video import RenderUnavailable, VideoRecorder

    twin = Twin()
    try:
        rec = VideoRecorder(twin.model, "overview", width=160, height=120)
    except RenderUnavailable as err:
        pytest.skip(f"no GL here: {err}")
    frame = rec.capture(twin.data)
    rec.close()
    assert frame.shape == (120, 160, 3) and frame.std() > 5  # not a blank image


def test_scenario_runs_through_owners_codec_and_bus(tmp_path):
    q = (np.array(D.HOME_ARM_POSE) + 0.2).tolist()
    sc = Scenario.from_dict(
        {
            "name": "faulty",
            "duration": 0.8,
            "keyframes": [{"t": 0.5, "arm": "right", "q": q}, {"t": 0.5, "arm": "left", "q": q}],
            "faults": [{"kind": "partial_batch", "arm": "left", "at": 0.3, "accept_frames": 2}],
        }
    )
    result = run_scenario(sc, record=False, progress=False)
    right, left = result.pipeline["right"], result.pipeline["left"]
    assert right["owner_fault"] is None and right["moving_retargets"] > 10
    assert right["frames_sent"] == 7 * right["samples_published"] == right["drive_command_frames"]
    assert left["owner_fault"] == "partial_output"
    assert left["bus"].startswith("CAN11@") and right["bus"].startswith("CAN10@")


def test_malformed_scenario_faults_are_rejected():
    with pytest.raises(ScenarioError, match="faults.*valid: drop"):
        Scenario.from_dict({"duration": 1, "faults": [{"kind": "meteor"}]})
    with pytest.raises(ScenarioError, match="faults: must be a JSON list"):
        Scenario.from_dict({"duration": 1, "faults": {"kind": "drop"}})


def test_example_scenarios_load_and_the_fault_example_behaves_as_documented():
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "experiments" / "scenarios"
    scenarios = {
        p.stem: Scenario.load(p)
        for p in sorted(folder.glob("*.json"))
        if not p.name.endswith(".schema.json")
    }
    assert set(scenarios) >= {"wave", "bus_faults"}
    result = run_scenario(scenarios["bus_faults"], record=False, progress=False)
    right, left = result.pipeline["right"], result.pipeline["left"]
    assert right["owner_fault"] is None and right["owner_mode"] == "tracking"  # rode through
    assert right["drive_command_frames"] < right["frames_sent"]  # frames were dropped
    assert left["owner_fault"] == "partial_output"


def test_scenario_plans_run_through_armgroup_and_the_executor():
    from pathlib import Path

    sc = Scenario.load(
        Path(__file__).resolve().parents[1] / "experiments" / "scenarios" / "crossing_plan.json"
    )
    result = run_scenario(sc, record=False, progress=False)
    assert [p["status"] for p in result.plans] == ["success", "success"]
    assert [p["outcome"] for p in result.plans] == ["completed", "completed"]
    assert all(
        p["start_skew_s"] == 0.0 and p["plan_min_clearance_m"] >= 0.005 for p in result.plans
    )
    assert all(f["owner_fault"] is None for f in result.pipeline.values())


@pytest.mark.parametrize(
    "plans, match",
    [
        (
            [{"t": 0.5, "goals": {"right": [0.0] * 6}}],
            r"6 joint angles for the right arm of robot 'rob', which has 7 joints",
        ),
        ([{"t": 0.5}], r"plans\[0\]: give exactly one of goals .* or plan"),
        (
            [{"t": -1.0, "goals": {"left": [0.5] * 7}}],
            r"plans\[0\]\.t: Input should be greater than or equal to 0",
        ),
        ([{"t": 0.5, "goals": {"right": list(D.HOME_ARM_POSE)}}], "also has keyframes"),
        ([{"t": 1.0, "goals": {"left": list(D.HOME_ARM_POSE)}}], "before the end of the run"),
        ({"t": 0.5}, "plans: must be a JSON list"),
    ],
)
def test_malformed_scenario_plans_are_rejected(plans, match):
    raw = {
        "duration": 1,
        "plans": plans,
        "keyframes": [{"t": 0.5, "arm": "right", "q": list(D.HOME_ARM_POSE)}],
    }
    with pytest.raises(ScenarioError, match=match):
        Scenario.from_dict(raw)


def test_a_plan_goal_outside_the_limits_is_refused_at_load():
    with pytest.raises(
        ScenarioError,
        match=r"plans\[0\]\.goals\.left\[0\]: joint j1 = 9\.0 rad is "
        r"outside the left arm's limits \[-1\.396, 3\.491\] rad",
    ):
        Scenario.from_dict(
            {
                "name": "bad_goal",
                "duration": 0.3,
                "plans": [{"t": 0.1, "goals": {"left": [9.0] * 7}}],
            }
        )

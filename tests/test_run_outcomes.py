"""Run summaries say what was refused and what failed; a run exits non-zero for anything
its scenario did not declare in ``expect``."""

from __future__ import annotations

import json

import numpy as np
from rob_twin.cli.main import main
from rob_twin.models import dimensions as D
from rob_twin.models.names import Arm
from rob_twin.twin.sim.closed_loop import ClosedLoop

HOME = list(D.HOME_ARM_POSE)
REACH = (np.array(HOME) + 0.2).tolist()
# ArmGroup finds this right-arm goal in collision with ROB's own body (seeded search, home start)
COLLIDING_GOAL = [-0.789, 0.595, 0.462, 1.503, -0.365, 0.781, 1.511]


def _run(tmp_path, capsys, scenario: dict) -> tuple[int, dict]:
    path = tmp_path / f"{scenario['name']}.json"
    path.write_text(json.dumps(scenario))
    code = main(["run", str(path), "--out", str(tmp_path / "out"), "--no-video", "--json"])
    return code, json.loads(capsys.readouterr().out)


def _latching(**extra) -> dict:
    """The LEFT bus accepts only 2 frames of a sample at 0.1 s: its owner latches
    PARTIAL_OUTPUT and refuses every later target (mailbox closed)."""
    return {
        "name": "latch",
        "duration": 0.3,
        "keyframes": [
            {"t": 0.25, "arm": "left", "q": REACH},
            {"t": 0.25, "arm": "right", "q": REACH},
        ],
        "faults": [{"kind": "partial_batch", "arm": "left", "at": 0.1, "accept_frames": 2}],
        **extra,
    }


def test_refused_targets_are_counted_per_arm_and_reason_and_fail_the_run(tmp_path, capsys):
    code, summary = _run(tmp_path, capsys, _latching())
    assert code == 1 and summary["exit_code"] == 1 and summary["passed"] is False
    refused = summary["refused_targets"]
    assert refused["right"] == {} and refused["left"]["closed"] > 10  # ~100 Hz stream after 0.1 s
    assert any(
        "left arm: the owner refused" in p and "(closed)" in p for p in summary["unexpected"]
    )
    assert any("latched fault partial_output" in p for p in summary["unexpected"])
    on_disk = json.loads((tmp_path / "out" / "latch" / "summary.json").read_text())
    assert on_disk["refused_targets"] == refused and on_disk["status"] == "completed"
    assert "Unexpected (the run fails)" in (tmp_path / "out" / "latch" / "summary.md").read_text()


def test_declared_refusals_and_faults_pass(tmp_path, capsys):
    expect = {"refused_targets": {"left": ["closed"]}, "owner_faults": {"left": ["partial_output"]}}
    code, summary = _run(tmp_path, capsys, _latching(expect=expect))
    assert code == 0 and summary["passed"] is True and summary["unexpected"] == []
    assert summary["expect"]["refused_targets"] == {"left": ["closed"]}


def test_declaring_another_reason_does_not_excuse_this_one(tmp_path, capsys):
    expect = {
        "refused_targets": {"left": ["lease_expired"]},
        "owner_faults": {"left": ["partial_output"]},
    }
    code, summary = _run(tmp_path, capsys, _latching(expect=expect))
    assert code == 1 and len(summary["unexpected"]) == 1 and "(closed)" in summary["unexpected"][0]


def test_a_failed_plan_step_fails_the_run_unless_expected(tmp_path, capsys):
    scenario = {
        "name": "collide",
        "duration": 0.1,
        "plans": [{"t": 0.02, "goals": {"right": COLLIDING_GOAL}}],
    }
    code, summary = _run(tmp_path, capsys, scenario)
    assert code == 1 and summary["failed_plan_steps"] == 1
    assert summary["plans"][0]["status"] == "goal_in_collision"
    assert "1 plan step(s) failed" in summary["unexpected"][0]
    code, summary = _run(tmp_path, capsys, {**scenario, "expect": {"failed_plans": 1}})
    assert code == 0 and summary["passed"] is True


def test_a_clean_run_passes_with_nothing_refused(tmp_path, capsys):
    code, summary = _run(
        tmp_path,
        capsys,
        {"name": "clean", "duration": 0.2, "keyframes": [{"t": 0.15, "arm": "right", "q": REACH}]},
    )
    assert code == 0 and summary["passed"] is True
    assert (
        summary["refused_targets"] == {"right": {}, "left": {}}
        and summary["failed_plan_steps"] == 0
    )


def test_a_stream_whose_target_raises_a_typed_error_counts_it_and_goes_on():
    with ClosedLoop() as loop:
        bad = np.array(HOME)
        bad[2] = np.nan
        loop.stream_targets(Arm.RIGHT, lambda t: bad, 100.0)
        loop.run_for(0.05)
        ((reason, count),) = loop.refused[Arm.RIGHT].items()
        assert count == 5 and "Error" in reason  # the typed error's class names the reason
        assert loop.drivers[Arm.RIGHT].owner.fault is None


def test_a_blend_between_keyframes_on_a_joint_limit_never_leaves_the_limit():
    from rob_twin.twin.scenario.run import Keyframe, blended_target

    lo = np.array([s.lower for s in D.ARM_JOINTS])
    start = np.array(HOME)  # j7 of the home pose sits on its lower limit
    frames = [
        Keyframe(1.5, Arm.RIGHT, start + np.array([0.25, 0.35, 0.0, -0.6, 0.0, 0.3, 0.0])),
        Keyframe(3.0, Arm.RIGHT, np.array(HOME)),
    ]
    targets = np.array([blended_target(frames, t, start) for t in np.linspace(0.0, 3.5, 3501)])
    assert np.all(targets >= lo) and targets[:, 6].min() == lo[6]


def test_the_demo_refuses_no_target(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--no-video", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["refused_targets"] == {"right": {}, "left": {}} and summary["passed"] is True
    # the demo's contrast: the separately planned arms touch, the group plan does not
    crossing = summary["crossing"]
    assert crossing["separate_colliding_frames"] > 0
    assert crossing["separate_colliding_frames"] <= crossing["separate_frames"]
    assert crossing["group_colliding_samples"] == 0 and crossing["group_samples"] > 100
    assert crossing["group_outcome"] == "completed" and crossing["start_skew_s"] is not None
    assert summary["plans"][0]["outcome"] == "completed"
    assert "crossing (simulated)" in (tmp_path / "demo" / "summary.md").read_text()

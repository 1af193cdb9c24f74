"""OpenArm's crossing demo (``rob-twin demo --robot openarm``): its crossing pair is robot data
(the ``[demo]`` table of ``models/openarm/robot.toml``, validated when it loads); the two arms
planned alone and replayed together collide for a clear stretch, and the same pair planned by
ArmGroup and executed through owners, codecs and buses has no colliding sample (coal)."""

from __future__ import annotations

import json

import mujoco
import numpy as np
import pytest
from rob_twin.cli.main import main
from rob_twin.models import poses
from rob_twin.models.names import tcp_site
from rob_twin.models.robot import robot_of
from rob_twin.models.robot_description import RobotFileError, load_robot_file, resolve_robot
from rob_twin.models.robot_model import load_robot_model
from rob_twin.twin.scenario import crossing_demo as cd

OPENARM_TOML = resolve_robot("openarm").path
MIN_CONTACT_FRAMES = 50  # 76 of 191 when the pair was found (planner seed 0)
RIGHT_START = "right = [0.6461, 0.4298, -0.9568, 1.3884, 0.4727, 0.1282, 0.3164]"


def test_openarm_pair_loads_from_its_robot_file_inside_the_joint_ranges():
    robot = robot_of("openarm")
    start, goals = cd.crossing_pair(robot)
    demo = robot.description.file.demo
    assert start == {a: tuple(q) for a, q in demo.crossing_start_rad.items()}
    assert goals == {a: tuple(q) for a, q in demo.crossing_goals_rad.items()}
    for pose in (start, goals):
        for arm, q in pose.items():
            lo, hi = np.array(robot.joint_ranges(arm)).T
            assert len(q) == robot.joint_count(arm) and np.all((lo <= q) & (q <= hi))
    # the hands swap sides in front of the chest: the right TCP starts right of the left one
    # (y smaller) and ends left of it
    model = robot.model()
    data = mujoco.MjData(model)
    y = []
    for pose in (start, goals):
        data.qpos[:] = cd.pair_start_qpos(model, pose)
        mujoco.mj_kinematics(model, data)
        y.append({a: data.site(tcp_site(a)).xpos[1] for a in pose})
        assert all(data.site(tcp_site(a)).xpos[0] > 0.2 for a in pose)  # in front
    assert y[0]["right"] + 0.1 < y[0]["left"] and y[1]["right"] > y[1]["left"] + 0.1
    rob = robot_of("rob")
    assert cd.crossing_pair(rob) == (poses.CROSSING_START, poses.CROSSING_GOALS)
    assert cd.demo_camera(robot) == cd.demo_camera(rob) == "auto"


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (
            (RIGHT_START, RIGHT_START.replace("0.6461", "9.0")),
            r"demo\.crossing_start_rad\.right\[0\]",
        ),
        ((RIGHT_START, RIGHT_START.replace(", 0.3164]", "]")), r"demo\.crossing_start_rad\.right"),
        ((RIGHT_START, RIGHT_START.replace("0.6461", "nan")), r"finite"),
        (("[demo.crossing_goals_rad]", "[demo.crossing_goal_rad]"), r"demo"),
    ],
    ids=["outside_range", "one_short", "not_finite", "misspelt"],
)
def test_a_bad_demo_pair_is_a_typed_error_naming_the_field(tmp_path, change, match):
    text = OPENARM_TOML.read_text(encoding="utf-8")
    assert text.count(change[0]) == 1
    bad = tmp_path / "robot.toml"
    bad.write_text(text.replace(*change), encoding="utf-8")
    with pytest.raises(RobotFileError, match=match):
        load_robot_model(load_robot_file(bad))


def _longest_run(frames) -> int:
    best = run = 0
    for i in range(max(frames, default=-1) + 1):
        run = run + 1 if i in frames else 0
        best = max(best, run)
    return best


def test_openarm_demo_collides_apart_and_not_together(tmp_path, capsys):
    contrast = cd.separate_contrast(robot=robot_of("openarm"))
    assert contrast.colliding_frames > MIN_CONTACT_FRAMES
    assert _longest_run(contrast.contact) >= 0.3 * contrast.rate_hz  # a clear stretch on video

    code = main(["demo", "--robot", "openarm", "--no-video", "--json", "--out", str(tmp_path)])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["exit_code"] == 0, summary.get("unexpected")
    assert summary["scenario"] == "demo_openarm" and summary["passed"] is True
    crossing = summary["crossing"]
    assert crossing["separate_colliding_frames"] == contrast.colliding_frames
    assert crossing["separate_frames"] == len(contrast.states)
    assert crossing["group_colliding_samples"] == 0 and crossing["group_samples"] > 0
    assert crossing["group_outcome"] == "completed"
    assert crossing["group_min_clearance_m"] >= cd.GROUP_MARGIN_M
    assert crossing["group_duration_s"] + cd.PLAN_AT_S < 4.6  # the film shows its end

"""Every command gets its robot from the robot file: generated robots nobody tuned for
(``rob_twin.experiments.robot_factory``) run, demo, rehearse and plan as themselves, and a command a
robot cannot serve is refused up front (exit 2) naming the missing capability.

The regression these hold: ``run``, ``demo`` and ``rehearse`` with an ``amber`` or ``ideal``
robot file used to build ROB's loop and report ROB's run under the user's robot's name."""

from __future__ import annotations

import json

import numpy as np
import pytest
from rob_twin.cli.main import main
from rob_twin.experiments import robot_factory as F
from rob_twin.models.robot import (
    AMBER_DRIVES,
    CAN_DRIVES,
    CARTESIAN_KINEMATICS,
    SEVEN_JOINT_ARMS,
    TRACKED_BASE,
    MissingCapabilityError,
    robot_of,
)


@pytest.fixture(scope="module")
def amber(tmp_path_factory):
    return F.generate_robot(tmp_path_factory.mktemp("amber"), 3, family="amber")


@pytest.fixture(scope="module")
def damiao(tmp_path_factory):
    return F.generate_robot(tmp_path_factory.mktemp("damiao"), 8, family="damiao")


@pytest.fixture(scope="module")
def ideal5(tmp_path_factory):
    return F.generate_robot(tmp_path_factory.mktemp("ideal"), 2, family="ideal", joints=5)


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_capabilities_come_from_the_file_and_the_model(amber, damiao, ideal5):
    assert robot_of("rob").capabilities == {
        CAN_DRIVES,
        AMBER_DRIVES,
        SEVEN_JOINT_ARMS,
        TRACKED_BASE,
        CARTESIAN_KINEMATICS,
    }
    cart = CARTESIAN_KINEMATICS  # every robot: arms of 5-7 joints (their own MuJoCo model)
    assert robot_of("openarm").capabilities == {CAN_DRIVES, SEVEN_JOINT_ARMS, cart}
    assert robot_of(amber.robot_file).capabilities == {
        CAN_DRIVES,
        AMBER_DRIVES,
        SEVEN_JOINT_ARMS,
        cart,
    }
    assert robot_of(damiao.robot_file).capabilities == {CAN_DRIVES, SEVEN_JOINT_ARMS, cart}
    five = robot_of(ideal5.robot_file)
    assert five.capabilities == {cart}
    assert five.joint_count("right") == 5 and five.joints("left")[-1] == "left/j5"
    with pytest.raises(MissingCapabilityError) as err:
        five.require(CAN_DRIVES, "rob-twin rehearse")
    assert "'can_drives'" in str(err.value) and str(ideal5.robot_file) in str(err.value)


def test_robot_identity_names_the_model_that_runs(amber):
    a, rob = robot_of(amber.robot_file), robot_of("rob")
    assert a.identity()["name"] == a.name != rob.name
    assert a.identity()["file"] == str(amber.robot_file) and rob.identity()["file"] == "rob"
    assert len(a.model_hash) == 16 and a.model_hash != rob.model_hash
    assert robot_of(amber.robot_file) is a  # resolved once per file


@pytest.mark.parametrize("which", ["amber", "damiao"])
def test_run_reports_the_robot_that_ran_on_its_own_buses(which, request, tmp_path, capsys):
    gen = request.getfixturevalue(which)
    robot = robot_of(gen.robot_file)
    frames = []
    for arm in ("right", "left"):
        home = robot.home(arm)
        lo, hi = np.array(robot.joint_ranges(arm)).T
        reach = np.clip(home + 0.15, lo, hi)
        frames += [
            {"t": 0.5, "arm": arm, "q": reach.tolist()},
            {"t": 1.0, "arm": arm, "q": list(home)},
        ]
    scenario = tmp_path / "reach.json"
    scenario.write_text(json.dumps({"duration": 1.4, "keyframes": frames}))
    argv = ["run", str(scenario), "--robot", str(gen.robot_file), "--no-video", "--json"]
    code = main([*argv, "--out", str(tmp_path / "out")])
    summary = _json(capsys)
    assert code == 0, summary.get("unexpected")
    assert summary["robot"] == robot.identity()
    for arm in ("right", "left"):
        assert summary["pipeline"][arm]["bus"].split("@")[0] == robot.channel(arm)
        assert summary["pipeline"][arm]["owner_fault"] is None
        assert summary["max_abs_tracking_error_rad"][arm] < 0.15
    md = (tmp_path / "out" / "reach" / "summary.md").read_text()
    assert robot.name in md and robot.model_hash in md


def test_demo_runs_the_users_robot_not_rob(amber, tmp_path, capsys):
    argv = ["demo", "--robot", str(amber.robot_file), "--no-video", "--json"]
    code = main([*argv, "--out", str(tmp_path)])
    summary = _json(capsys)
    assert code == 0, summary.get("unexpected")
    assert summary["scenario"] == f"demo_{robot_of(amber.robot_file).name}"
    assert summary["robot"] == robot_of(amber.robot_file).identity()
    assert "crossing" not in summary  # no crossing pair in its file or model: it waves


def test_rehearse_gates_the_users_robot_and_says_what_it_cannot_run(amber, tmp_path, capsys):
    argv = ["rehearse", "--robot", str(amber.robot_file), "--json", "--gate", "stopping"]
    code = main([*argv, "--out", str(tmp_path)])
    report = _json(capsys)
    assert code == 0, report
    assert report["robot_model"] == robot_of(amber.robot_file).identity()
    assert report["base_config"]["robot"] == str(amber.robot_file)
    # the held_object gate runs on it (its own arm kinematics): this robot's right arm
    # cannot lift its TCP 10 cm at its home orientation, so the first carry is refused,
    # named, and the next carry the planner allows is run and judged
    argv = ["rehearse", "--robot", str(amber.robot_file), "--gate", "held_object", "--json"]
    code = main([*argv, "--out", str(tmp_path / "held")])
    report = _json(capsys)
    (gate,) = [g for g in report["gates"] if g["name"] == "held_object"]
    assert gate["carries_refused"][0].startswith("carry [0.05, 0.0, 0.1] m not planned"), gate
    assert gate["carry_m"] is not None and gate["carry_s"] > 0.0
    assert code == (0 if gate["passed"] else 1) and report["passed"] is gate["passed"]


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--no-video"],
        ["rehearse"],
        ["run", "experiments/scenarios/wave.json", "--no-video"],
    ],
    ids=["demo", "rehearse", "run"],
)
def test_commands_an_ideal_robot_cannot_serve_exit_2_naming_the_capability(
    argv, ideal5, tmp_path, capsys
):
    code = main([*argv, "--robot", str(ideal5.robot_file), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2
    assert "can_drives" in err or "joint" in err  # run: wave.json's 7-joint poses are refused
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").rglob("summary.json"))


def test_run_check_accepts_a_carry_on_openarm_its_own_kinematics_plan(tmp_path, capsys):
    carry = json.loads(open("experiments/scenarios/carry_box.json").read())
    carry.pop("$schema", None)
    path = tmp_path / "carry.json"
    path.write_text(json.dumps(carry))
    code = main(["run", str(path), "--check", "--robot", "openarm"])
    out = capsys.readouterr().out
    assert code == 0 and "valid scenario 'carry_box' for robot 'openarm'" in out


def test_plan_follows_a_five_joint_robot(ideal5, tmp_path, capsys):
    robot = robot_of(ideal5.robot_file)
    goals = {
        arm: {
            "joints": np.clip(robot.home(arm) + 0.2, *np.array(robot.joint_ranges(arm)).T).tolist()
        }
        for arm in ("right", "left")
    }
    path = tmp_path / "goals.json"
    path.write_text(json.dumps({"start": {"keyframe": "home"}, "goals": goals, "seed": 0}))
    out = tmp_path / "plan.json"
    code = main(["plan", str(path), "--robot", str(ideal5.robot_file), "--out", str(out), "--json"])
    reply = _json(capsys)
    assert code == 0, reply
    assert reply["robot"]["name"] == robot.name
    plan = json.loads(out.read_text())
    assert plan["robot"] == robot.identity()
    assert main(["certify", str(out), "--json"]) == 0  # the model: the robot the plan names
    assert _json(capsys)["model"] == str(ideal5.robot_file)
    assert plan["arms"]["right"] == list(robot.joints("right"))
    assert len(plan["q_rad"]["right"][0]) == 5


def test_a_study_plans_a_five_joint_robot(ideal5, tmp_path, capsys):
    spec = tmp_path / "study.toml"
    spec.write_text(
        f'name = "gen5"\nmodel = "{ideal5.robot_file}"\nstart = "home"\n'
        'arms = ["right", "left"]\nmargins_m = [0.005]\ncount = 4\nseed = 0\n'
        '[goals]\nkind = "gaussian"\nsigma_rad = 0.6\nmin_clearance_m = 0.01\n'
    )
    code = main(["study", str(spec), "--out", str(tmp_path / "out"), "--workers", "1"])
    capsys.readouterr()
    assert code == 0
    rows = (tmp_path / "out" / "rows.csv").read_text().splitlines()
    assert len(rows) == 1 + 4 and sum("success" in r for r in rows[1:]) >= 3


def test_a_recording_of_a_users_robot_replays_on_that_robot(amber, tmp_path, capsys):
    robot = robot_of(amber.robot_file)
    sc = tmp_path / "hold.json"
    home = {arm: list(robot.home(arm)) for arm in ("right", "left")}
    frames = [{"t": 0.5, "arm": arm, "q": q} for arm, q in home.items()]
    sc.write_text(json.dumps({"duration": 1.0, "keyframes": frames}))
    rec = tmp_path / "bus.log"
    argv = ["run", str(sc), "--robot", str(amber.robot_file), "--no-video", "--bus", "off"]
    assert main([*argv, "--record-can", str(rec), "--out", str(tmp_path / "o")]) == 0
    capsys.readouterr()
    argv = ["replay", str(rec), "--robot", str(amber.robot_file), "--json"]
    code = main([*argv, "--out", str(tmp_path / "r")])
    reply = _json(capsys)
    assert code == 0 and reply["agrees"], reply.get("notes")
    assert reply["robot"] == robot.identity()
    assert main(["replay", str(rec), "--robot", "openarm", "--out", str(tmp_path / "x")]) == 2
    assert "recorded on robot" in capsys.readouterr().err  # never replayed on another robot
    assert main(["replay", str(rec), "--out", str(tmp_path / "y")]) == 2  # not on ROB either
    assert f"--robot {amber.robot_file}" in capsys.readouterr().err


def test_experiment_robot_option_goes_only_where_an_experiment_takes_robots(capsys):
    assert main(["experiment", "codec", "--robot", "openarm"]) == 2
    err = capsys.readouterr().err
    assert "takes none" in err and "cross-arm-latency" in err and "held-skew" in err

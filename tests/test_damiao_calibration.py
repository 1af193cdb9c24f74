"""OpenArm's published joint friction in the twin, and calibration on Damiao drives: the
friction model and its stability cap, the robot file's ``[drives.friction]``, bit-exact
replays of Damiao recordings, a fit of a dataset written by LeRobot's own writer, and the
CLI taking a Damiao calibration."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import mujoco
import numpy as np
import pytest
from rob_twin.models.names import Arm
from rob_twin.models.robot import robot_of
from rob_twin.models.robot_description import RobotFileError, load_robot_file
from rob_twin.twin.calibration.drive_noise import ASSUMED_DRIVE_NOISE
from rob_twin.twin.drives.joint_friction import (
    OPENARM_PUBLISHED,
    FrictionError,
    FrictionOnJoints,
    JointFriction,
    friction_split,
)

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests/data/lerobot_v3_openarm"
OPENARM = robot_of("openarm")


def test_published_form_and_values():
    j4 = OPENARM_PUBLISHED[3]
    assert (j4.fo_nm, j4.fv_nm_s_per_rad, j4.fc_nm, j4.k_s_per_rad) == (
        -0.058,
        0.813,
        0.166,
        130.038,
    )
    w = 0.05
    assert j4.torque(w) == pytest.approx(-0.058 + 0.813 * w + 0.166 * math.tanh(130.038 * w))
    # the robot file carries the same values for the seven arm joints, with its source
    assert OPENARM.joint_friction == OPENARM_PUBLISHED[:7]
    assert "follower.yaml" in OPENARM.friction_source


def test_friction_opposes_motion_and_never_reverses_it():
    f = (JointFriction(0.1, 0.5, 2.0, 500.0),)
    for w in (-1.0, -1e-3, 0.0, 2e-4, 1.0):  # split, it is still -tau_f(w) at w
        damping, explicit = friction_split(f, np.array([w]))
        assert explicit[0] - damping[0] * w == pytest.approx(-f[0].torque(w), abs=1e-12)
    # a stiff Coulomb term (Fc k = 1000 N m s/rad) on a light wrist joint, no gravity: the
    # joint slows to rest, never swinging back (explicit, it would reverse every 1 ms step)
    model = OPENARM.model()
    model.opt.gravity[:] = 0.0
    data = mujoco.MjData(model)
    dof = int(model.jnt_dofadr[model.joint("right/j6").id])
    joints = FrictionOnJoints(model, [dof], (JointFriction(0.0, 0.0, 2.0, 500.0),))
    data.qvel[dof] = 0.05
    speeds = []
    for _ in range(30):
        joints.apply(data)
        mujoco.mj_step(model, data)
        speeds.append(float(data.qvel[dof]))
    assert all(v >= -1e-9 for v in speeds) and speeds[-1] < 1e-3
    assert all(b <= a + 1e-9 for a, b in zip(speeds, speeds[1:], strict=False))


def test_friction_values_are_bounded():
    with pytest.raises(FrictionError, match="fc_nm"):
        JointFriction(fc_nm=-1.0)
    with pytest.raises(FrictionError, match="k_s_per_rad"):
        JointFriction(k_s_per_rad=float("nan"))


def test_joints_carry_it_in_place_of_the_mjcf_damping():
    model = OPENARM.model()
    data = mujoco.MjData(model)
    dofs = [model.jnt_dofadr[model.joint(n).id] for n in OPENARM.joints("right")]
    assert model.dof_damping[dofs].min() > 0  # the published MJCF's own values
    joints = FrictionOnJoints(model, dofs, OPENARM.joint_friction)
    assert not model.dof_frictionloss[dofs].any()
    # at rest the damping is the identified slope Fv + Fc k, not the MJCF's
    slope = [f.fv_nm_s_per_rad + f.fc_nm * f.k_s_per_rad for f in OPENARM.joint_friction]
    assert model.dof_damping[dofs] == pytest.approx(slope)
    data.qvel[dofs] = 0.5
    joints.apply(data)
    mujoco.mj_forward(model, data)
    # the joint's whole friction at 0.5 rad/s is the published torque, against the motion
    total = data.qfrc_passive[dofs] + data.qfrc_applied[dofs]
    assert total == pytest.approx([-f.torque(0.5) for f in OPENARM.joint_friction])
    assert np.all(total < 0)


def _robot_file(tmp_path: Path, friction: str, family: str = "damiao") -> Path:
    text = (ROOT / "models/openarm/robot.toml").read_text()
    start = text.index("[drives.friction]")
    end = text.index("[arms.right]")
    text = text[:start] + friction + "\n" + text[end:]
    text = text.replace('"$schema" = "../robot.schema.json"', "")
    text = text.replace('mjcf = "{share}', 'mjcf = "{share}')
    if family != "damiao":
        text = text.replace('family = "damiao"', f'family = "{family}"')
    path = tmp_path / "robot.toml"
    path.write_text(text)
    return path


def test_robot_file_friction_is_checked(tmp_path):
    six = "\n".join(
        [
            "[drives.friction]",
            'source = "test"',
            "fo_nm = [0, 0, 0, 0, 0, 0]",
            "fv_nm_s_per_rad = [0, 0, 0, 0, 0, 0]",
            "fc_nm = [0, 0, 0, 0, 0, 0]",
            "k_s_per_rad = [1, 1, 1, 1, 1, 1]",
        ]
    )
    with pytest.raises(RobotFileError, match="drives.friction.fo_nm"):
        load_robot_file(_robot_file(tmp_path, six))
    huge = six.replace("[0, 0, 0, 0, 0, 0]", "[0, 0, 0, 0, 0, 0, 0]").replace(
        "k_s_per_rad = [1, 1, 1, 1, 1, 1]", "k_s_per_rad = [1, 1, 1, 1, 1, 1, 1e9]"
    )
    with pytest.raises(RobotFileError, match="k_s_per_rad"):
        load_robot_file(_robot_file(tmp_path, huge))


def test_openarm_loop_runs_with_the_published_friction():
    from rob_twin.twin.sim.loops import loop_config, make_closed_loop

    loop = make_closed_loop(loop_config(OPENARM, "a test"))
    try:
        assert [f.frictions for f in loop.bank.friction] == [OPENARM_PUBLISHED[:7]] * 2
        m = loop.twin.model
        arm_dofs = [m.jnt_dofadr[m.joint(n).id] for a in Arm for n in OPENARM.joints(a)]
        assert not m.dof_frictionloss[arm_dofs].any()
        loop.run_for(0.5)
        for arm in Arm:  # holds home against the friction offsets (Fo up to 0.088 N m)
            err = loop.twin.arm_positions(arm) - OPENARM.home(arm)
            assert np.abs(err).max() < 0.01
    finally:
        loop.close()


@pytest.fixture(scope="module")
def damiao_recording(tmp_path_factory):
    from rob_twin.twin.calibration.synthetic import record_hidden

    hidden = {"right/j2/friction_fc": 0.45, "left/j3/armature": 0.2, "right/j1/kp_scale": 0.85}
    path = tmp_path_factory.mktemp("dm") / "excite.log"
    record_hidden(path, hidden, 1.5, robot=OPENARM)
    return path, hidden


def test_damiao_replay_is_bit_exact_with_the_hidden_values(damiao_recording):
    from rob_twin.twin.bus.replay import read_recording, replay

    path, hidden = damiao_recording
    rec = read_recording(path)
    exact = replay(rec, robot=OPENARM, parameters=hidden)
    assert exact.feedback_frames > 1000 and exact.feedback_mismatches == 0
    nominal = replay(rec, robot=OPENARM)
    assert nominal.feedback_mismatches > 100  # the hidden values show in the feedback


def test_a_lerobot_dataset_fits_to_its_hidden_friction():
    """The fixture was written by LeRobot 0.6.1's own dataset writer from a twin carrying
    ``hidden.json`` (its README): a fit of its first 2 s finds both values."""
    from rob_twin.twin.calibration.dataset import read_input
    from rob_twin.twin.calibration.fit import default_config, fit

    hidden = json.loads((FIXTURE / "hidden.json").read_text())
    rec = read_input(FIXTURE, OPENARM)
    result = fit(
        [rec],
        sorted(hidden),
        # the bank answers with the state of its last physics step: 1 ms (README)
        start={"right/feedback_delay_s": 0.001, "left/feedback_delay_s": 0.001},
        config=replace(default_config(), seconds=2.0),
        robot=OPENARM,
    )
    assert not result.misfit
    for name, truth in hidden.items():
        assert result.values[name] == pytest.approx(truth, rel=0.05)
        assert abs(result.values[name] - truth) <= result.intervals[name]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rob_twin.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_cli_calibrates_openarm_and_refuses_another_familys_file(tmp_path, damiao_recording):
    path, _ = damiao_recording
    out = tmp_path / "cal.json"
    done = _cli(
        "calibrate",
        "--robot",
        "openarm",
        str(path),
        "--fit",
        "right/j2/friction_fc",
        "--seconds",
        "1",
        "--replay-noise",
        "auto",
        "--accept-misfit",
        "--quiet",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["robot"]["name"] == "openarm"
    # its torque count hides the drive noise: replayed with the assumed level, said so
    assert doc["fit"]["drive_noise_estimate"]["measured"] is False
    assert doc["fit"]["replay_noise_rad"] == ASSUMED_DRIVE_NOISE["damiao"]
    assert "0.020 N m on each motor torque (assumed: not measurable" in done.stdout
    assert doc["parameters"]["right/j2/friction_fc"]["value"] == pytest.approx(0.45, rel=0.1)
    # the same file names a parameter ROB's Amber drives do not have: refused on ROB
    rob = _cli("run", "experiments/scenarios/wave.json", "--calibration", str(out), cwd=ROOT)
    assert rob.returncode == 2 and "Traceback" not in rob.stderr
    # an Amber kind in a file for OpenArm is refused naming it
    doc["parameters"] = {"right/j2/lag_s": {"value": 0.01}}
    bad = tmp_path / "amber.json"
    bad.write_text(json.dumps(doc))
    refused = _cli(
        "compare", "--robot", "openarm", str(path), "--calibration", str(bad), cwd=tmp_path
    )
    assert refused.returncode == 2 and "right/j2/lag_s" in refused.stderr


def test_mirror_and_bank_take_an_openarm_calibration(tmp_path):
    """``mirror --calibration`` on OpenArm: the file's friction reaches the mirror's drives
    (the live bank's), its armature the mirror's model."""
    from rob_twin.cli.mirror import _parameters
    from rob_twin.twin.bus.mirror import _DamiaoDrives
    from rob_twin.twin.calibration.calibration_file import calibration_document, save_calibration
    from rob_twin.twin.sim.twin import Twin, TwinConfig

    values = {"right/j2/friction_fc": {"value": 0.5}, "left/j3/armature": {"value": 0.3}}
    good = save_calibration(
        tmp_path / "openarm.json",
        calibration_document("lab", OPENARM.model(), values, [], {}, []),
    )
    params = _parameters(str(good), OPENARM)
    assert params.name.startswith("lab (")
    dof = params.model.jnt_dofadr[params.model.joint("left/j3").id]
    assert params.model.dof_armature[dof] == 0.3
    twin = Twin(TwinConfig(), model=params.model)
    drives = _DamiaoDrives(OPENARM, twin, tuple(Arm), params.values)
    try:
        right = next(f for f in drives.bank.friction if f.dofs[0] == _dof(twin, "right/j1"))
        assert right.frictions[1].fc_nm == 0.5  # the file's, not the published 0.306
        assert right.frictions[0] == OPENARM_PUBLISHED[0]  # the rest as published
    finally:
        drives.close()


def _dof(twin, joint: str) -> int:
    return int(twin.model.jnt_dofadr[twin.model.joint(joint).id])


def test_a_damiao_loop_with_transport_delays_brings_its_drives_up(tmp_path):
    """With a calibration's delays in the loop a register read waits the round trip: the
    bring-up takes simulated time instead of finding no reply (before: the delayed arm's
    drives were never enabled and it hung limp), and the replay matches the recording."""
    from rob_twin.twin.calibration.predict import predict
    from rob_twin.twin.calibration.synthetic import record_hidden

    hidden = {"left/command_delay_s": 0.005, "left/feedback_delay_s": 0.002}
    path = record_hidden(tmp_path / "delayed.log", hidden, 1.5, robot=OPENARM)
    prediction = predict(path, hidden, robot=OPENARM)
    left = prediction.tracks[(Arm.LEFT, 2)]
    assert np.ptp(left.position_rec) > 0.02  # the delayed arm moves
    worst = max(np.abs(tr.position_error).max() for tr in prediction.tracks.values())
    assert worst < 0.002, worst


def test_friction_on_a_model_integrating_damping_explicitly_is_refused(tmp_path):
    from rob_twin.models.robot_model import load_robot_model

    share = Path(OPENARM.description.mjcf_path)
    scene = tmp_path / "scene.xml"  # OpenArm's scene with the RK4 integrator
    scene.write_text(f'<mujoco><include file="{share}"/><option integrator="RK4"/></mujoco>')
    text = (ROOT / "models/openarm/robot.toml").read_text()
    text = text.replace('"$schema" = "../robot.schema.json"\n', "")
    start = text.index("mjcf = ")
    text = text[:start] + f'mjcf = "{scene}"' + text[text.index("\n", start) :]
    robot_file = tmp_path / "robot.toml"
    robot_file.write_text(text)
    with pytest.raises(RobotFileError, match="drives.friction"):
        load_robot_model(load_robot_file(robot_file))


def test_friction_calibrates_on_a_generated_robot_with_implicitfast(tmp_path):
    """A generated Damiao robot (implicitfast integrator, no friction in its file) takes a
    hidden friction: recorded and replayed bit-exact (before: refused as 'not Euler')."""
    from rob_twin.experiments.robot_factory import generate_robot
    from rob_twin.twin.bus.replay import read_recording, replay
    from rob_twin.twin.calibration.synthetic import record_hidden

    robot = robot_of(str(generate_robot(tmp_path, 8, family="damiao").robot_file))
    assert robot.joint_friction is None and int(robot.model().opt.integrator) == 3
    hidden = {"left/j3/friction_fv": 0.4, "left/j3/friction_fc": 0.2}
    path = record_hidden(tmp_path / "gen.log", hidden, 0.8, robot=robot)
    result = replay(read_recording(path), robot=robot, parameters=hidden)
    assert result.feedback_frames > 1000 and result.feedback_mismatches == 0
    assert replay(read_recording(path), robot=robot).feedback_mismatches > 0


def test_a_friction_k_narrower_than_the_speed_count_is_held_and_named(damiao_recording):
    """OpenArm's J5 / J6 tanh transitions (1 / k 6.6 / 4.1 mrad/s) are narrower than one
    count of a DM4310's reported speed (14.7 mrad/s): the fit holds k and says why; J1-J4
    and J7 (DM8009 22.0, DM4340 4.9 mrad/s against 35 / 34 / 7.7 / 127 mrad/s) are fitted."""
    from rob_twin.twin.calibration.fit import default_config, fit, unresolved_transitions
    from rob_twin.twin.calibration.parameters import nominal_parameters

    nominal = nominal_parameters(OPENARM.model(), OPENARM)
    names = [f"right/j{j}/friction_k" for j in range(1, 8)]
    held = unresolved_transitions(names, nominal, OPENARM)
    assert sorted(held) == ["right/j5/friction_k", "right/j6/friction_k"]
    assert "14.7 mrad/s" in held["right/j6/friction_k"]
    # a k ten times smaller widens the transition past the count: fitted again
    wider = {n: v / 10.0 for n, v in nominal.items() if n in names}
    assert unresolved_transitions(names, wider, OPENARM) == {}
    assert unresolved_transitions(["right/j2/armature"], {}, robot_of("rob")) == {}

    path, _ = damiao_recording
    result = fit(
        [path],
        ["right/j6/friction_k"],
        config=replace(default_config(), seconds=0.5),
        robot=OPENARM,
    )
    assert result.not_identifiable == ["right/j6/friction_k"]
    assert result.values["right/j6/friction_k"] == nominal["right/j6/friction_k"]
    assert result.interval_bounds["right/j6/friction_k"] is None
    assert any("one count of the drive's reported speed" in n for n in result.notes)


def test_excite_writes_a_certified_openarm_excitation_off_its_torso(tmp_path, capsys):
    """From OpenArm's home the default window ran its elbows into the torso (refused at
    every --fraction down to 0.1): the window is narrowed to each joint's clear span and
    certifies at the default fraction. A Damiao drive has no setpoint lag: the summary
    gives no lag figures (a zero lag divided the corner frequency by zero)."""
    from rob_twin.cli.main import main

    out_dir = tmp_path / "excite"
    code = main(["excite", "--robot", "openarm", "--seconds", "6", "--json", "--out", str(out_dir)])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["ok"], out
    assert 0 < out["clear_span_share"] <= 1 and out["fraction"] == 0.3
    assert out["certified"] and out["certified_min_m"] >= 0.005
    assert (out_dir / "excite_plan.json").exists()
    entries = out["excitation"]["parameters"]
    assert entries and not any("drive_lag_corner_hz" in e for e in entries)

"""Damiao arms of five and six joints: the drive family takes any joint count its robot file
gives (one drive, one MIT frame and one owner joint per arm joint), Amber stays seven (its
codec's).

Generated robots (``rob_twin.experiments.robot_factory``, a motor per joint sized to hold
the arm) with 5- and 6-joint arms hold home with nothing commanded, run a small scenario
(keyframes and a planned step), rehearse, and plan a goal pair that ``certify`` accepts; the
owner and transport of a 6-joint arm send one frame per joint and no seventh. Simulated
figures only (hardware_io: false)."""

from __future__ import annotations

import itertools
import json

import can
import numpy as np
import pytest
from rob_twin.cli.main import main
from rob_twin.controllers.clock import SimClock
from rob_twin.controllers.damiao_codec import Scaling, Status, decode_mit, encode_state
from rob_twin.controllers.damiao_driver import DamiaoArmDriver
from rob_twin.controllers.damiao_errors import DamiaoTransportError
from rob_twin.controllers.damiao_transport import DamiaoTransportConfig, motor_gains
from rob_twin.controllers.errors import (
    OwnerConfigError,
    TargetShapeError,
    TransportConfigError,
)
from rob_twin.controllers.owner_config import OwnerConfig
from rob_twin.controllers.target import ArmTarget
from rob_twin.controllers.trajectory import MultiArmTrajectory, TrajectoryError
from rob_twin.experiments import robot_factory as F
from rob_twin.models.damiao_motors import DM4310, DM4340, DM8009
from rob_twin.models.loading import keyframe_arm_q
from rob_twin.models.names import Arm
from rob_twin.models.robot import (
    CAN_DRIVES,
    CARTESIAN_KINEMATICS,
    SEVEN_JOINT_ARMS,
    robot_of,
)
from rob_twin.models.robot_description import RobotFileError, load_robot_file
from rob_twin.twin.bus.timing import parse_bus_spec
from rob_twin.twin.bus.wire import open_virtual
from rob_twin.twin.drives.damiao_bank import default_damiao_configs
from rob_twin.twin.sim.faults import FaultSpec, FaultSpecError
from rob_twin.twin.sim.loops import loop_config, make_closed_loop

# (seed, joints per arm, mounting): the 6-joint robot's box between the hands fits, so its
# rehearsal runs every gate; a 5-joint arm cannot hold a hand's full pose through a carry
CASES = {5: (8, "facing"), 6: (6, "side_by_side")}
HOLD_BOUND_RAD = 0.02  # tests/test_damiao_hold.py's bound: largest drift over HOLD_S
HOLD_S = 2.0
SIX = (DM8009, DM8009, DM4340, DM4340, DM4310, DM4310)
_CH = itertools.count()


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """joints -> GeneratedRobot (damiao), each generated once."""
    out = {}
    for n, (seed, mounting) in CASES.items():
        folder = tmp_path_factory.mktemp(f"damiao{n}")
        out[n] = F.generate_robot(folder, seed, family="damiao", joints=n, mounting=mounting)
    return out


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


# ------------------------------------------------------------------ robot files


@pytest.mark.parametrize("n", sorted(CASES))
def test_a_damiao_robot_file_takes_five_or_six_joints_with_a_motor_each(made, n, tmp_path):
    gen = made[n]
    robot = robot_of(gen.robot_file)
    assert robot.family == "damiao" and len(gen.motors) == n
    assert robot.joint_count("right") == robot.joint_count("left") == len(robot.motors) == n
    assert robot.capabilities == {CAN_DRIVES, CARTESIAN_KINEMATICS}  # not SEVEN_JOINT_ARMS
    loop_config(robot, "this test")  # no capability missing
    # one motor per joint: a list of another length names the field and the count
    text = gen.robot_file.read_text(encoding="utf-8")
    motors = ", ".join(f'"{m}"' for m in gen.motors)
    bad = tmp_path / "robot.toml"
    bad.write_text(
        text.replace(f"motors = [{motors}]", f'motors = [{motors}, "DM4310"]').replace(
            'mjcf = "scene.xml"', f'mjcf = "{gen.mjcf_file}"'
        ),
        encoding="utf-8",
    )
    with pytest.raises(RobotFileError, match=rf"drives\.motors.*{n} motor types"):
        load_robot_file(bad)


def test_amber_stays_seven_joints_its_codec_names_it(tmp_path):
    gen = F.generate_robot(tmp_path, 2, family="ideal", joints=6)
    text = gen.robot_file.read_text(encoding="utf-8").replace(
        'family = "ideal"', 'family = "amber"'
    )
    gen.robot_file.write_text(text, encoding="utf-8")
    with pytest.raises(RobotFileError, match=r"7 joints for drive family 'amber'"):
        load_robot_file(gen.robot_file)
    with pytest.raises(ValueError, match=r"joints=6 for family 'amber'"):
        F.generate_robot(tmp_path / "a", 2, family="amber", joints=6)
    assert SEVEN_JOINT_ARMS in robot_of("rob").capabilities


def test_a_fault_on_a_joint_the_arm_lacks_is_refused_naming_the_range(made):
    robot = robot_of(made[6].robot_file)
    with pytest.raises(FaultSpecError, match=r"joint 7 .* valid: 1\.\.6"):
        loop_config(robot, "x", faults=(FaultSpec("stall", "right", joints=(7,)),))
    spec = FaultSpec("partial_batch", "left", params={"accept_frames": 6})
    with pytest.raises(FaultSpecError, match=r"accept_frames 6 .* valid: 0\.\.5"):
        loop_config(robot, "x", faults=(spec,))


# ------------------------------------------------------------------ holding


@pytest.mark.parametrize("n", sorted(CASES))
def test_home_holds_with_nothing_commanded(made, n):
    robot = robot_of(made[n].robot_file)
    cfg = loop_config(robot, "this test", bus_timing=parse_bus_spec(robot.bus_spec))
    with make_closed_loop(cfg) as lp:
        assert all(r.passed for r in lp.bring_up.values())
        for arm in Arm:
            assert lp.drivers[arm].owner.joints == lp.drivers[arm].transport.joints == n
            assert [d.esc_id for d in lp.bank.drives_of(arm).drives] == list(range(1, n + 1))
        home = {a: keyframe_arm_q(lp.twin.model, a) for a in Arm}
        sent0 = lp.drivers[Arm.RIGHT].transport.counters.frames_sent
        worst = 0.0
        for _ in range(int(round(HOLD_S / 0.02))):
            lp.run_for(0.02)
            worst = max(worst, *(float(np.abs(lp.measured(a) - home[a]).max()) for a in Arm))
        samples = lp.drivers[Arm.RIGHT].owner.stats.published
        frames = lp.drivers[Arm.RIGHT].transport.counters.frames_sent - sent0
        faults = {a.value: lp.drivers[a].owner.fault for a in Arm}
    assert worst < HOLD_BOUND_RAD and not any(faults.values()), (worst, faults)
    assert samples > 0 and frames == n * samples  # one MIT frame per joint, no seventh


# ------------------------------------------------------------------ commands


def _scenario(path, robot) -> None:
    """The right arm through two keyframes, the left arm a planned step."""
    frames, goals = [], {}
    for arm in ("right", "left"):
        home = robot.home(arm)
        lo, hi = np.array(robot.joint_ranges(arm)).T
        if arm == "right":
            away = np.clip(home + 0.15, lo + 0.05, hi - 0.05)
            frames += [
                {"t": 0.3, "arm": arm, "q": away.tolist()},
                {"t": 0.8, "arm": arm, "q": home.tolist()},
            ]
        else:
            goals[arm] = np.clip(home - 0.1, lo + 0.05, hi - 0.05).tolist()
    doc = {"duration": 2.0, "keyframes": frames, "plans": [{"t": 0.2, "goals": goals}]}
    path.write_text(json.dumps(doc), encoding="utf-8")


@pytest.mark.parametrize("n", sorted(CASES))
def test_run_executes_keyframes_and_a_plan_and_names_the_robot(made, n, tmp_path, capsys):
    gen = made[n]
    robot = robot_of(gen.robot_file)
    scenario = tmp_path / "small.json"
    _scenario(scenario, robot)
    argv = ["run", str(scenario), "--robot", str(gen.robot_file), "--no-video", "--json"]
    code = main([*argv, "--out", str(tmp_path / "out")])
    summary = _json(capsys)
    assert code == 0, summary.get("unexpected")
    assert summary["robot"] == robot.identity() and summary["robot"]["name"] == robot.name
    assert [p["outcome"] for p in summary["plans"]] == ["completed"]
    for arm in ("right", "left"):
        assert summary["pipeline"][arm]["owner_fault"] is None
        assert summary["max_abs_tracking_error_rad"][arm] < 0.15


@pytest.mark.parametrize("n", sorted(CASES))
def test_rehearse_passes_and_names_the_robot(made, n, tmp_path, capsys):
    gen = made[n]
    robot = robot_of(gen.robot_file)
    argv = ["rehearse", "--robot", str(gen.robot_file), "--json", "--out", str(tmp_path)]
    gates = ["register_agreement", "enable_sequence", "units_and_references", "held_object"]
    if n == 6:  # every gate on one robot; on the other the Damiao ones and the carry
        argv += [f"--gate={g}" for g in gates]
    code = main(argv)
    report = _json(capsys)
    assert code == 0 and report["passed"], [
        (g["name"], g.get("detail")) for g in report["gates"] if not g["passed"]
    ]
    assert report["robot_model"] == robot.identity() and robot.name in json.dumps(report)
    if n == 5:  # a 5-joint arm cannot hold a hand's full pose: the carry is not run
        assert "held_object" not in [g["name"] for g in report["gates"]]
        assert "5-joint arms" in report["gates_not_run"]["held_object"]
    else:  # six joints hold a hand's pose: both hands carry the box
        names = [g["name"] for g in report["gates"]]
        assert names == gates and "gates_not_run" not in report
        units = report["gates"][names.index("units_and_references")]
        assert {r["joint"] for r in units["joints"] if "joint" in r} == set(range(1, n + 1))


@pytest.mark.parametrize("n", sorted(CASES))
def test_plan_writes_a_plan_that_certify_accepts(made, n, tmp_path, capsys):
    gen = made[n]
    robot = robot_of(gen.robot_file)
    goals = {}
    for arm in ("right", "left"):
        lo, hi = np.array(robot.joint_ranges(arm)).T
        goals[arm] = {"joints": np.clip(robot.home(arm) - 0.1, lo + 0.05, hi - 0.05).tolist()}
    path = tmp_path / "goals.json"
    path.write_text(json.dumps({"start": {"keyframe": "home"}, "goals": goals, "seed": 0}))
    plan = tmp_path / "plan.json"
    argv = ["plan", str(path), "--robot", str(gen.robot_file), "--out", str(plan), "--json"]
    code = main(argv)
    reply = _json(capsys)
    assert code == 0 and plan.is_file(), reply
    doc = json.loads(plan.read_text(encoding="utf-8"))
    assert robot.name in json.dumps(doc)
    code = main(["certify", str(plan), "--model", str(gen.robot_file), "--json"])
    verdict = _json(capsys)
    assert code == 0, verdict


# ------------------------------------------------------------------ owner and transport


def test_six_joint_owner_and_transport_send_a_frame_per_joint_and_no_seventh():
    ch = f"damiao-joints-{next(_CH)}"
    host, drives = open_virtual(ch), open_virtual(ch)
    clock = SimClock()
    owner = OwnerConfig(period_s=0.002, require_feedback=False).with_bounds((-1.0,) * 6, (1.0,) * 6)
    tcfg = DamiaoTransportConfig(arm=Arm.RIGHT, channel=ch, motors=SIX, require_enable=False)
    assert owner.joints == tcfg.joints == 6 and owner.max_velocity == (0.3,) * 6
    assert tcfg.esc_ids == tuple(range(1, 7))
    assert tcfg.mst_ids == tuple(range(0x11, 0x17))
    assert (tcfg.kp, tcfg.kd) == motor_gains(SIX)
    assert tcfg.kp == (70.0, 70.0, 70.0, 70.0, 10.0, 10.0)  # per motor: OpenArm's first of each
    try:
        drv = DamiaoArmDriver.create_damiao(Arm.RIGHT, clock, np.zeros(6), owner, tcfg, bus=host)
        lease = drv.owner.grant_lease("test", 10.0)
        target = ArmTarget(Arm.RIGHT, np.full(6, 0.1), 1, drv.owner.generation, lease, joints=6)
        assert drv.owner.submit(target).accepted
        for _ in range(10):
            clock.advance(0.002)
            assert drv.tick().published
        frames = []
        while (msg := drives.recv(timeout=0)) is not None:
            frames.append(msg)
        assert [f.arbitration_id for f in frames] == list(range(1, 7)) * 10  # no 0x07
        p = drv.owner.commanded_state()[0]  # the last sample: one MIT frame per joint
        for f, m, q in zip(frames[-6:], SIX, p, strict=True):
            step = Scaling.of(m).step("q")
            assert abs(decode_mit(bytes(f.data), Scaling.of(m)).q_rad - q) <= step
        # each drive answers on its MST id: six joints of feedback, ages, statuses
        for j, m in enumerate(SIX, start=1):
            data = encode_state(j, Status.ENABLED, 0.01 * j, 0.0, 0.0, 30, 30, Scaling.of(m))
            drives.send(can.Message(arbitration_id=0x10 + j, data=data, is_extended_id=False))
        drv.transport.poll_feedback()
        assert np.allclose(drv.measured_positions(), 0.01 * np.arange(1, 7), atol=1e-3)
        assert drv.transport.statuses() == (Status.ENABLED,) * 6 and not drv.drive_fault()
        assert drv.transport.feedback_ages().shape == (6,)
        # a target for a seven-joint arm is refused naming the owner's six
        seven = ArmTarget(Arm.RIGHT, np.zeros(7), 2, drv.owner.generation, lease)
        with pytest.raises(TargetShapeError, match=r"\(6,\)"):
            drv.owner.submit(seven)
        drv.close()
    finally:
        host.shutdown()
        drives.shutdown()


def test_joint_counts_that_disagree_are_typed_errors_naming_value_and_range():
    with pytest.raises(OwnerConfigError, match=r"max_velocity.*6 per-joint values"):
        OwnerConfig(max_velocity=(0.3,) * 7, position_lower=(-1.0,) * 6, position_upper=(1.0,) * 6)
    uneven = OwnerConfig(max_jerk=(2.0,) * 6 + (3.0,))
    with pytest.raises(OwnerConfigError, match=r"max_jerk.*same on every joint"):
        uneven.with_bounds((-1.0,) * 6, (1.0,) * 6)
    with pytest.raises(TransportConfigError, match=r"joints.*7 \(the owner config"):
        DamiaoArmDriver.create_damiao(
            Arm.RIGHT,
            SimClock(),
            np.zeros(6),
            OwnerConfig(),  # seven joints
            DamiaoTransportConfig(motors=SIX),
        )
    with pytest.raises(DamiaoTransportError, match=r"kp needs 6 values"):
        DamiaoTransportConfig(motors=SIX, kp=(10.0,) * 7)
    with pytest.raises(DamiaoTransportError, match=r"valid: 1\.\.15"):
        DamiaoTransportConfig(motors=())
    configs = default_damiao_configs(motors=SIX)
    assert [(c.esc_id, c.mst_id) for c in configs] == [(j, 0x10 + j) for j in range(1, 7)]
    t = np.array([0.0, 0.1])
    q = np.zeros((2, 6))
    traj = MultiArmTrajectory.from_arrays({Arm.RIGHT: (t, q, q, q)}, {Arm.RIGHT: 6})
    assert traj.sample(Arm.RIGHT, 0.05)[0].shape == (6,)
    with pytest.raises(TrajectoryError, match=r"q shape.*\(2, 7\)"):
        MultiArmTrajectory.from_arrays({Arm.RIGHT: (t, q, q, q)})  # seven unless told

"""The OpenArm-class robot in the twin: the model variant, the Damiao bank on MuJoCo,
and the same owners holding and moving the arms with gravity compensation."""

from __future__ import annotations

import can
import mujoco
import numpy as np
import pytest
from rob_twin.controllers.damiao_codec import (
    MitCommand,
    Scaling,
    SpecialCommand,
    encode_mit,
    special_frame,
)
from rob_twin.models.damiao_motors import OPENARM_ARM_MOTORS
from rob_twin.models.names import Arm, arm_actuator, arm_joints
from rob_twin.models.robot_description import RobotFileError
from rob_twin.models.robot_model import load_robot_model
from rob_twin.twin.bus.wire import open_virtual
from rob_twin.twin.drives.damiao_bank import DamiaoBank
from rob_twin.twin.sim.closed_loop import ClosedLoopConfig
from rob_twin.twin.sim.damiao_loop import DamiaoClosedLoop, DamiaoOptions, openarm_config
from rob_twin.twin.sim.loops import make_closed_loop
from rob_twin.twin.sim.twin import Twin, TwinConfig


@pytest.fixture(scope="module")
def openarm_model():
    return load_robot_model("openarm")


def test_openarm_model_has_torque_motors_with_the_damiao_peaks(openarm_model):
    m = openarm_model
    for arm in Arm:
        for j, motor in enumerate(OPENARM_ARM_MOTORS, start=1):
            a = m.actuator(arm_actuator(arm, j))
            assert a.gaintype[0] == mujoco.mjtGain.mjGAIN_FIXED and a.gainprm[0] == 1.0
            assert a.biastype[0] == mujoco.mjtBias.mjBIAS_NONE
            assert tuple(a.forcerange) == (-motor.peak_torque_nm, motor.peak_torque_nm)
        for name in arm_joints(arm):
            assert m.joint(name).id >= 0  # the same names as ROB's model
    assert m.actuator("right/gripper").biastype[0] == mujoco.mjtBias.mjBIAS_AFFINE  # still a servo


def test_bank_survives_garbage_and_answers_addressed_frames(openarm_model):
    twin = Twin(TwinConfig(), model=openarm_model)
    ch = "damiao-bank-garbage"
    bank = DamiaoBank(twin.model, twin.data, {ch: Arm.RIGHT})
    host = open_virtual(ch)
    try:
        junk = [
            (0x01, b""),
            (0x01, b"\x00" * 9),
            (0x7FF, b"\x01"),
            (0x7FF, bytes(8)),
            (0x123, bytes(8)),
            (0x03, bytes(8)),
        ]
        for arb, data in junk:
            host.send(can.Message(arbitration_id=arb, data=data, is_extended_id=False))
        host.send(can.Message(arbitration_id=0x02, data=bytes(8), is_extended_id=True))
        host.send(
            can.Message(
                arbitration_id=0x05, data=special_frame(SpecialCommand.ENABLE), is_extended_id=False
            )
        )
        bank.service(0.0, 0.001)
        replies = []
        while (m := host.recv(timeout=0)) is not None:
            replies.append(m.arbitration_id)
        # the disabled drive 3 answers its MIT frame, drive 5 its enable; nothing else does
        assert replies == [0x13, 0x15]
        ad = bank.drives_of(Arm.RIGHT)
        assert ad.drives[4].enabled and ad.counters.not_for_us == 4
        assert ad.drives[0].counters.ignored == 2  # the two frames of the wrong length
        assert np.all(twin.data.ctrl[ad.actuators] == 0.0)  # disabled: no torque
    finally:
        host.shutdown()
        bank.close()


def test_enabled_drive_applies_its_impedance_torque(openarm_model):
    twin = Twin(TwinConfig(), model=openarm_model)
    ch = "damiao-bank-torque"
    bank = DamiaoBank(twin.model, twin.data, {ch: Arm.LEFT})
    host = open_virtual(ch)
    try:
        ad = bank.drives_of(Arm.LEFT)
        q = twin.data.qpos[ad.qpos].copy()
        host.send(
            can.Message(
                arbitration_id=0x06, data=special_frame(SpecialCommand.ENABLE), is_extended_id=False
            )
        )
        cmd = MitCommand(float(q[5]) + 0.1, 0.0, 20.0, 0.0, 0.5)
        host.send(
            can.Message(
                arbitration_id=0x06,
                is_extended_id=False,
                data=encode_mit(cmd, Scaling.of(OPENARM_ARM_MOTORS[5])),
            )
        )
        bank.service(0.0, 0.001)
        assert twin.data.ctrl[ad.actuators[5]] == pytest.approx(20 * 0.1 + 0.5, abs=0.05)
    finally:
        host.shutdown()
        bank.close()


def test_config_refuses_an_unknown_robot_naming_the_shipped_ones():
    with pytest.raises(RobotFileError, match=r"robot='baxter'.*\['openarm', 'rob'\]"):
        ClosedLoopConfig(robot="baxter")


def test_openarm_loop_brings_up_holds_and_moves():
    with make_closed_loop(openarm_config()) as lp:
        assert isinstance(lp, DamiaoClosedLoop)
        assert all(r.passed for r in lp.bring_up.values())
        q0 = {a: lp.measured(a) for a in Arm}
        lp.run_for(0.5)
        for a in Arm:
            assert np.abs(lp.measured(a) - q0[a]).max() < 0.005  # holds under gravity
            assert np.abs(lp.feedback(a) - lp.measured(a)).max() < 4e-4  # one q step
        owner = lp.drivers[Arm.RIGHT].owner
        assert owner.stats.published == pytest.approx(0.5 * 500, abs=2)  # 500 Hz
        assert lp.gravity[Arm.RIGHT].calls >= owner.stats.published
        goal = q0[Arm.RIGHT] + np.array([0.3, 0.3, 0.3, 0.3, 0.3, 0.2, 0.3])
        assert lp.command(Arm.RIGHT, goal).accepted
        lp.run_for(2.0)
        assert owner.fault is None
        assert np.abs(lp.measured(Arm.RIGHT) - goal).max() < 0.01


def test_without_compensation_the_arm_sags():
    opts = DamiaoOptions(gravity_compensation=False)
    with make_closed_loop(openarm_config(damiao=opts)) as lp:
        q0 = lp.measured(Arm.RIGHT)
        lp.run_for(0.5)
        sag = np.abs(lp.measured(Arm.RIGHT) - q0).max()
    assert sag > 0.02  # kp alone leaves a steady-state error of tau_g / kp


def test_bank_never_crashes_on_random_traffic(openarm_model):
    twin = Twin(TwinConfig(), model=openarm_model)
    ch = "damiao-bank-random"
    bank = DamiaoBank(twin.model, twin.data, {ch: Arm.RIGHT})
    host = open_virtual(ch)
    rng = np.random.default_rng(7)
    ids = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x7FF, 0x11, 0x100]
    try:
        for k in range(600):
            n = int(rng.choice([0, 3, 7, 8, 8, 8, 8]))
            data = bytes(rng.integers(0, 256, n, dtype=np.uint8))
            if n == 8 and k % 5 == 0:  # aim some at real registers and special commands
                data = (
                    bytes(
                        (
                            int(rng.integers(1, 8)),
                            0,
                            int(rng.choice([0x33, 0x55, 0xCC, 0xAA])),
                            int(rng.choice([7, 8, 9, 10, 21, 22, 23, 99])),
                        )
                    )
                    + data[4:]
                )
            if n == 8 and k % 7 == 0:
                data = b"\xff" * 7 + bytes((int(rng.integers(0xFB, 0xFF)),))
            host.send(
                can.Message(arbitration_id=int(rng.choice(ids)), data=data, is_extended_id=False)
            )
            bank.service(k * 0.001, 0.001)
            mujoco.mj_step(twin.model, twin.data)
        ad = bank.drives_of(Arm.RIGHT)
        assert np.all(np.isfinite(twin.data.qpos))
        peaks = np.array([m.peak_torque_nm for m in OPENARM_ARM_MOTORS])
        assert np.all(np.abs(twin.data.ctrl[ad.actuators]) <= peaks)
        assert ad.counters.frames_in == 600 and ad.counters.replies > 0
    finally:
        host.shutdown()
        bank.close()


def test_scenario_field_robot_picks_the_openarm_loop():
    from rob_twin.twin.scenario.run import Scenario, ScenarioError, scenario_loop

    with pytest.raises(
        ScenarioError,
        match=r"robot: unusable robot; valid: one of \['openarm', 'rob'\] or the path of an "
        r"existing robot \.toml file \(got 'baxter'\)",
    ):
        Scenario.from_dict({"duration": 1.0, "robot": "baxter"})
    with pytest.raises(ScenarioError, match=r"initial\.torso/yaw: unknown joint"):
        Scenario.from_dict({"duration": 1.0, "robot": "openarm", "initial": {"torso/yaw": 0.1}})
    sc = Scenario.from_dict({"duration": 1.0, "robot": "openarm", "initial": {"right/j4": 1.2}})
    lp = scenario_loop(sc)
    try:
        assert isinstance(lp, DamiaoClosedLoop) and all(r.passed for r in lp.bring_up.values())
        assert lp.twin.model.actuator("left/j3_servo").biastype[0] == mujoco.mjtBias.mjBIAS_NONE
    finally:
        lp.close()
    assert Scenario.from_dict({"duration": 1.0}).robot == "rob"


def test_bad_damiao_options_are_a_typed_error():
    from rob_twin.models.errors import RobTwinError

    with pytest.raises(RobTwinError, match="DamiaoOptions"):
        make_closed_loop(openarm_config(damiao="fast"))


def test_openarm_brings_up_and_streams_on_a_timed_1m_bus():
    # before: bring-up sent 56 register frames at once into the host's 10-frame queue
    # (drive_error), then every drive's replies shared one 3-frame bank queue, so 4 of 7
    # replies per sample were refused and the owners latched stale_feedback
    from rob_twin.twin.bus.timing import parse_bus_spec

    with make_closed_loop(openarm_config(bus_timing=parse_bus_spec("1M"))) as lp:
        assert all(r.passed for r in lp.bring_up.values()), {
            a.value: r.reason for a, r in lp.bring_up.items()
        }
        lp.run_for(0.3)
        assert all(lp.drivers[a].owner.fault is None for a in Arm)
        report = lp.bus_timing.report()
        assert all(b["queue_refusals"].get("bank", 0) == 0 for b in report.values()), report
        assert all(
            max(lp.drivers[a].transport.feedback_ages()) < 0.01 for a in Arm
        )  # every drive answers each sample

"""A Damiao robot whose home is not gravity-free holds it from the first tick.

The robot: OpenArm's robot file with both arms stretched out sideways (J2 = +-pi/2, J4 = 0:
11.7 Nm of gravity on J2, inside the DM8009's 40 Nm). Before: on the CLI's default bus (timed,
1 Mbit/s) the enable sequence ran 0.108 s of physics with the drives disabled; the arms fell
0.136 rad, the owners (still at home) latched tracking_error at their first feedback, stopped
publishing, the drives' CAN watchdog tripped and the arms fell 1.57 rad. On an instant bus
every drive gave zero torque in the first physics step (no command until the owner's first
sample reached it)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from rob_twin.controllers.clock import SimClock
from rob_twin.controllers.damiao_codec import Scaling, decode_mit
from rob_twin.controllers.damiao_driver import DamiaoArmDriver
from rob_twin.controllers.damiao_transport import DamiaoTransport, DamiaoTransportConfig
from rob_twin.controllers.owner_config import OwnerConfig
from rob_twin.controllers.owner_types import FaultKind
from rob_twin.models.damiao_motors import DM4340, OPENARM_ARM_MOTORS
from rob_twin.models.loading import keyframe_arm_q
from rob_twin.models.names import Arm
from rob_twin.models.robot_description import resolve_robot
from rob_twin.models.robot_model import load_robot_model
from rob_twin.twin.bus.timing import parse_bus_spec
from rob_twin.twin.bus.wire import open_virtual
from rob_twin.twin.drives.gravity import ModelGravity
from rob_twin.twin.sim.damiao_loop import DamiaoOptions, openarm_config
from rob_twin.twin.sim.loops import make_closed_loop
from test_damiao_transport import Responder

HOME = {
    "right": [0.0, 1.5708, 0.0, 0.0, 0.0, 0.0, 0.0],
    "left": [0.0, -1.5708, 0.0, 0.0, 0.0, 0.0, 0.0],
}
HOLD_BOUND_RAD = 0.02  # largest joint drift from home over 2 s with nothing commanded
HOLD_S = 2.0


def _robot_file(folder: Path, motors: list[str] | None = None) -> str:
    """OpenArm's robot file with the outstretched home (and ``motors``), its MJCF absolute."""
    text = Path(resolve_robot("openarm").path).read_text(encoding="utf-8")
    text = re.sub(r'(?m)^"\$schema".*\n', "", text)
    text = re.sub(r"(?m)^name = .*$", 'name = "outstretched"', text)
    text = re.sub(r"(?m)^mjcf = .*$", f'mjcf = "{resolve_robot("openarm").mjcf_path}"', text)
    for side in ("right", "left"):
        head, sep, tail = text.partition(f"[arms.{side}]")
        tail = re.sub(r"home_rad = \[[^\]]*\]", f"home_rad = {HOME[side]}", tail, count=1)
        text = head + sep + tail
    if motors is not None:
        text = re.sub(r"(?m)^motors = .*$", f"motors = {motors}", text)
    path = folder / "outstretched.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def robot(tmp_path_factory) -> str:
    return _robot_file(tmp_path_factory.mktemp("robot"))


def _drift(lp, seconds: float) -> float:
    """Largest joint deviation [rad] from each arm's home keyframe over ``seconds``."""
    home = {a: keyframe_arm_q(lp.twin.model, a) for a in Arm}
    worst = 0.0
    for _ in range(int(round(seconds / 0.01))):
        lp.run_for(0.01)
        worst = max(worst, *(float(np.abs(lp.measured(a) - home[a]).max()) for a in Arm))
    return worst


def test_the_home_is_not_gravity_free_but_within_the_motors(robot):
    m = load_robot_model(robot)
    for arm in Arm:
        q = keyframe_arm_q(m, arm)
        assert np.allclose(q, HOME[arm.value])
        tau = ModelGravity(m, arm)(q)
        assert 10.0 < abs(tau[1]) < OPENARM_ARM_MOTORS[1].peak_torque_nm


@pytest.mark.parametrize("bus", ["1M", "off"])
def test_outstretched_home_holds_for_2_s_with_nothing_commanded(robot, bus):
    cfg = openarm_config(robot=robot, bus_timing=parse_bus_spec(bus))
    with make_closed_loop(cfg) as lp:
        assert all(r.passed and r.hold_rad is not None for r in lp.bring_up.values())
        home = {a: keyframe_arm_q(lp.twin.model, a) for a in Arm}
        for a in Arm:  # nothing moved during the enable sequence (0.108 s on the timed bus)
            assert np.abs(lp.measured(a) - home[a]).max() < 1e-9
        drift = _drift(lp, HOLD_S)
        faults = {a.value: lp.drivers[a].owner.fault for a in Arm}
    # measured: 0.0008 rad on both buses (before: 1.60 rad and tracking_error on "1M")
    assert drift < HOLD_BOUND_RAD and not any(faults.values()), (drift, faults)


def test_without_the_hold_and_the_support_the_timed_bring_up_drops_the_arms(robot):
    """The behaviour before (both switched off): the fall this file guards against."""
    opts = DamiaoOptions(hold_on_enable=False, support_during_bring_up=False)
    cfg = openarm_config(robot=robot, bus_timing=parse_bus_spec("1M"), damiao=opts)
    with make_closed_loop(cfg) as lp:
        sag = abs(lp.measured(Arm.RIGHT)[1] - HOME["right"][1])
        lp.run_for(0.05)
        fault = lp.drivers[Arm.RIGHT].owner.fault
    assert sag > 0.1 and fault is FaultKind.TRACKING_ERROR, (sag, fault)


def test_each_drive_holds_home_with_its_gravity_from_its_enable(robot):
    """Instant bus: after bring-up, before any owner tick, every drive already has a command
    at home with the model's gravity as tau_ff (before: no command, zero torque)."""
    with make_closed_loop(openarm_config(robot=robot)) as lp:
        assert lp.time == 0.0
        for arm in Arm:
            tau = ModelGravity(lp.twin.model, arm)(keyframe_arm_q(lp.twin.model, arm))
            for k, drv in enumerate(lp.bank.drives_of(arm).drives):
                s = Scaling.of(drv.config.motor)
                assert drv.enabled and drv.command is not None
                assert abs(drv.command.q_rad - HOME[arm.value][k]) <= s.step("q")
                assert drv.command.dq_rad_s == pytest.approx(0.0, abs=s.step("dq"))
                assert abs(drv.command.tau_nm - tau[k]) <= s.step("tau")


def test_the_loop_takes_the_robot_files_motors(tmp_path):
    motors = ["DM8009", "DM8009", "DM4340", "DM4340", "DM4340", "DM4340", "DM4340"]
    path = _robot_file(tmp_path, motors)
    with make_closed_loop(openarm_config(robot=path)) as lp:
        for arm in Arm:
            drives = lp.bank.drives_of(arm).drives
            assert [d.config.motor.model for d in drives] == motors
            assert lp.drivers[arm].transport.config.motors[6] is DM4340
            assert lp.twin.model.actuator_ctrlrange[lp.bank.drives_of(arm).actuators[6], 1] == 27.0
        assert all(r.passed for r in lp.bring_up.values())


def test_transport_hold_frames_follow_each_enable_and_a_torque_overrun_is_not_sent():
    clock_t = [0.0]
    resp = Responder("damiao-hold-test")
    bus = open_virtual("damiao-hold-test")
    try:
        q = np.array([0.1, 0.2, 0.0, 0.5, 0.0, 0.0, 0.0])
        resp.q[:] = q
        tau = np.array([1.0, 12.0, -0.5, 3.0, 0.2, -0.1, 0.0])
        tr = DamiaoTransport(
            DamiaoTransportConfig(arm=Arm.RIGHT, channel="damiao-hold-test"),
            bus=bus,
            clock=lambda: clock_t[0],
            gravity=lambda _q: tau,
        )
        rep = tr.bring_up(resp.serve, hold_rad=q)
        assert rep.passed and rep.hold_rad == tuple(q) and not rep.hold_error
        for k, d in enumerate(resp.drives):
            s = Scaling.of(d.config.motor)
            assert d.enabled and abs(d.command.tau_nm - tau[k]) <= s.step("tau")
        mit = [m for m in resp.seen if m.arbitration_id in range(1, 8)]
        # per drive: its ENABLE (FF..FC) then at once its hold frame
        for j in range(1, 8):
            frames = [bytes(m.data) for m in mit if m.arbitration_id == j]
            assert frames[0] == bytes([0xFF] * 7 + [0xFC]) and len(frames) == 2
            s = Scaling.of(OPENARM_ARM_MOTORS[j - 1])
            assert abs(decode_mit(frames[1], s).q_rad - q[j - 1]) <= s.step("q")
        # a feed-forward past J2's 40 Nm: no hold frame, the drives enabled without a command
        # (the owner's first sample is refused the same way and latches torque_limit)
        resp2 = Responder("damiao-hold-test-2")
        bus2 = open_virtual("damiao-hold-test-2")
        heavy = tau.copy()
        heavy[1] = 45.0
        drv = DamiaoArmDriver.create_damiao(
            Arm.RIGHT,
            SimClock(),
            np.zeros(7),
            OwnerConfig(period_s=0.002, require_feedback=False),
            DamiaoTransportConfig(arm=Arm.RIGHT, channel="damiao-hold-test-2"),
            bus=bus2,
            gravity=lambda _q: heavy,
        )
        rep2 = drv.bring_up(resp2.serve)
        assert rep2.passed and rep2.hold_rad is None and "not clipped" in rep2.hold_error
        assert all(d.enabled and d.command is None for d in resp2.drives)
        assert drv.tick().fault is FaultKind.TORQUE_LIMIT
        bus2.shutdown()
        resp2.close()
    finally:
        bus.shutdown()
        resp.close()

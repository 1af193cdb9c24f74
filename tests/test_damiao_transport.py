"""The Damiao transport and the owner path: coherent (p, v) plus gain table plus gravity
feed-forward on the wire, torque over the limit latches, the enable sequence catches a
register disagreement, drive errors latch. Drives are simulated in-process (no mujoco)."""

from __future__ import annotations

import itertools

import can
import numpy as np
import pytest
from rob_twin.controllers.clock import SimClock
from rob_twin.controllers.damiao_codec import Register, Scaling, SpecialCommand, Status, decode_mit
from rob_twin.controllers.damiao_driver import DamiaoArmDriver
from rob_twin.controllers.damiao_transport import DamiaoTransport, DamiaoTransportConfig
from rob_twin.controllers.owner import ArmOwner
from rob_twin.controllers.owner_config import OwnerConfig
from rob_twin.controllers.owner_types import FaultKind, Mode
from rob_twin.controllers.publish import PublishOutcome
from rob_twin.controllers.target import ArmTarget
from rob_twin.models.damiao_motors import ESC_IDS, OPENARM_ARM_MOTORS, OPENARM_KD, OPENARM_KP
from rob_twin.models.names import Arm
from rob_twin.twin.bus.wire import open_virtual
from rob_twin.twin.drives.damiao_bank import default_damiao_configs
from rob_twin.twin.drives.damiao_drive import DamiaoDrive

_CH = itertools.count()


class Responder:
    """Seven simulated drives answering on a virtual bus; joints sit at ``q``."""

    def __init__(self, channel: str, timeout_counts: int = 0):
        self.bus = open_virtual(channel)
        self.drives = [
            DamiaoDrive(j, c) for j, c in enumerate(default_damiao_configs(timeout_counts), start=1)
        ]
        self.q = np.zeros(7)
        self.seen: list[can.Message] = []

    def serve(self, now: float = 0.0) -> None:
        while (msg := self.bus.recv(timeout=0)) is not None:
            self.seen.append(msg)
            data = bytes(msg.data)
            for d in self.drives:
                if msg.arbitration_id == 0x7FF:
                    if len(data) < 2 or (data[0] | data[1] << 8) != d.esc_id:
                        continue
                elif msg.arbitration_id != d.esc_id:
                    continue
                r = d.on_frame(msg.arbitration_id, data, now, float(self.q[d.joint - 1]), 0.0)
                if r is not None:
                    self.bus.send(can.Message(arbitration_id=r[0], data=r[1], is_extended_id=False))

    def close(self) -> None:
        self.bus.shutdown()


@pytest.fixture
def rig():
    ch = f"damiao-test-{next(_CH)}"
    clock = SimClock()
    resp = Responder(ch)
    bus = open_virtual(ch)
    yield ch, clock, resp, bus
    bus.shutdown()
    resp.close()


def _right_driver(
    rig, owner: OwnerConfig | None = None, bus: can.BusABC | None = None, **transport
) -> DamiaoArmDriver:
    """The right arm's driver on the rig's channel (its bus unless ``bus``), starting with
    joint 4 at 0.5 rad; ``transport``: DamiaoTransportConfig fields."""
    ch, clock, _, rig_bus = rig
    return DamiaoArmDriver.create_damiao(
        Arm.RIGHT,
        clock,
        np.zeros(7) + [0, 0, 0, 0.5, 0, 0, 0],
        owner or OwnerConfig(period_s=0.002, require_feedback=False),
        DamiaoTransportConfig(arm=Arm.RIGHT, channel=ch, **transport),
        bus=rig_bus if bus is None else bus,
    )


def gravity_const(tau):
    return lambda q: np.array(tau, dtype=float)


def test_publish_state_sends_sample_gains_and_feedforward(rig):
    ch, clock, resp, bus = rig
    tau = [10.0, -20.0, 5.0, 1.0, 0.5, -0.5, 0.1]
    tr = DamiaoTransport(
        DamiaoTransportConfig(arm=Arm.RIGHT, channel=ch, require_enable=False),
        bus=bus,
        clock=clock.now,
        gravity=gravity_const(tau),
    )
    p = np.array([0.1, -0.2, 0.3, 1.0, 0.0, 0.2, -0.3])
    v = np.array([0.5, -0.5, 0.1, 0.0, 1.0, -1.0, 0.2])
    rep = tr.publish_state(p, v, np.zeros(7))
    assert rep.outcome is PublishOutcome.ACCEPTED and rep.accepted_joints == tuple(range(1, 8))
    frames = [resp.bus.recv(timeout=0) for _ in range(7)]
    assert [f.arbitration_id for f in frames] == list(ESC_IDS)
    for k, f in enumerate(frames):
        s = Scaling.of(OPENARM_ARM_MOTORS[k])
        c = decode_mit(bytes(f.data), s)
        assert 0 <= p[k] - c.q_rad < s.step("q") + 1e-12
        assert 0 <= v[k] - c.dq_rad_s < s.step("dq") + 1e-12
        assert 0 <= OPENARM_KP[k] - c.kp < s.step("kp") + 1e-12
        assert 0 <= OPENARM_KD[k] - c.kd < s.step("kd") + 1e-12
        assert 0 <= tau[k] - c.tau_nm < s.step("tau") + 1e-12


@pytest.mark.parametrize(
    "bad", [[0, 0, 0, 0, 7.5, 0, 0], [41.0, 0, 0, 0, 0, 0, 0], [0, 0, float("nan"), 0, 0, 0, 0]]
)
def test_feedforward_over_the_motor_limit_latches_never_clipped(rig, bad):
    ch, clock, resp, bus = rig
    tr = DamiaoTransport(
        DamiaoTransportConfig(arm=Arm.RIGHT, channel=ch, require_enable=False),
        bus=bus,
        clock=clock.now,
        gravity=gravity_const(bad),
    )
    owner = ArmOwner(
        Arm.RIGHT,
        tr,
        clock,
        np.zeros(7) + [0, 0, 0, 0.5, 0, 0, 0],
        OwnerConfig(period_s=0.002, require_feedback=False),
    )
    rep = owner.tick()
    assert rep.fault is FaultKind.TORQUE_LIMIT and owner.mode is Mode.FAULTED
    assert "outside the motor's limit" in owner.fault_reason
    assert resp.bus.recv(timeout=0) is None  # not one frame went out
    assert tr.counters.torque_refusals == 1


def test_out_of_range_sample_is_refused_without_a_frame(rig):
    ch, clock, resp, bus = rig
    tr = DamiaoTransport(
        DamiaoTransportConfig(arm=Arm.RIGHT, channel=ch, require_enable=False),
        bus=bus,
        clock=clock.now,
    )
    rep = tr.publish_state(np.zeros(7), np.array([0, 0, 11.0, 0, 0, 0, 0]), np.zeros(7))
    assert rep.outcome is PublishOutcome.REFUSED and "joint 3" in rep.reason and not rep.fault_kind
    assert resp.bus.recv(timeout=0) is None


def test_owner_publishes_the_coherent_ruckig_velocity(rig):
    ch, clock, resp, bus = rig
    tr = DamiaoTransport(
        DamiaoTransportConfig(arm=Arm.RIGHT, channel=ch, require_enable=False),
        bus=bus,
        clock=clock.now,
    )
    q0 = np.array([0, 0, 0, 0.5, 0, 0, 0.0])
    owner = ArmOwner(Arm.RIGHT, tr, clock, q0, OwnerConfig(period_s=0.002, require_feedback=False))
    lease = owner.grant_lease("test", 10.0)
    target = ArmTarget(
        arm=Arm.RIGHT, positions_rad=q0 + 0.2, sequence=1, generation=owner.generation, lease=lease
    )
    assert owner.submit(target).accepted
    for _ in range(150):
        clock.advance(0.002)
        owner.tick()
    frames = []
    while (m := resp.bus.recv(timeout=0)) is not None:
        frames.append(m)
    last = frames[-7:]
    _, v, _ = owner.commanded_state()
    for k, f in enumerate(last):
        s = Scaling.of(OPENARM_ARM_MOTORS[k])
        assert 0 <= v[k] - decode_mit(bytes(f.data), s).dq_rad_s < s.step("dq") + 1e-12
    assert v.max() > 0.05  # it was moving: the velocity field is the commanded one


def test_bring_up_agrees_enables_and_writes_the_timeout(rig):
    ch, clock, resp, bus = rig
    tr = DamiaoTransport(
        DamiaoTransportConfig(arm=Arm.RIGHT, channel=ch, timeout_s=0.1), bus=bus, clock=clock.now
    )
    rep = tr.bring_up(resp.serve)
    assert rep.passed, rep.reason
    assert all(d.enabled for d in resp.drives)
    assert all(d.registers[Register.TIMEOUT] == 2000 for d in resp.drives)
    assert rep.registers[3]["VMAX"] == 10.0 and rep.statuses == {j: 1 for j in range(1, 8)}


def test_bring_up_catches_a_register_disagreement_and_enables_nothing(rig):
    ch, clock, resp, bus = rig
    resp.drives[2].set_register(Register.VMAX, 8.0)  # an old DM4340 firmware table
    tr = DamiaoTransport(DamiaoTransportConfig(arm=Arm.RIGHT, channel=ch), bus=bus, clock=clock.now)
    rep = tr.bring_up(resp.serve)
    assert not rep.passed and rep.mismatches == ["joint 3 VMAX: drive 8.0, host 10.0"]
    assert not any(d.enabled for d in resp.drives)


def test_bring_up_reports_missing_replies(rig):
    ch, clock, resp, bus = rig
    tr = DamiaoTransport(DamiaoTransportConfig(arm=Arm.RIGHT, channel=ch), bus=bus, clock=clock.now)
    rep = tr.bring_up(lambda: None)  # nobody answers
    assert not rep.passed and "joint 1 PMAX" in rep.missing


def test_driver_latches_drive_error_from_the_status_nibble(rig):
    ch, clock, resp, bus = rig
    drv = _right_driver(rig, OwnerConfig(period_s=0.002, feedback_timeout_s=0.05))
    resp.q[3] = 0.5  # where the owner starts
    assert drv.bring_up(resp.serve).passed
    for _ in range(5):
        clock.advance(0.002)
        assert drv.tick().fault is None
        resp.serve(clock.now())
    resp.drives[4].supply_v = 10.0
    resp.drives[4].torque(0.0, 0.0, clock.now())  # the drive notices the low supply
    for _ in range(3):
        clock.advance(0.002)
        rep = drv.tick()
        resp.serve(clock.now())
    assert rep.fault is FaultKind.DRIVE_ERROR and "joint 5 UNDER_VOLTAGE" in drv.owner.fault_reason


def test_foreign_frame_on_our_esc_ids_latches_foreign_writer(rig):
    ch, clock, resp, bus = rig
    drv = _right_driver(rig, require_enable=False)
    other = open_virtual(ch)
    other.send(can.Message(arbitration_id=0x02, data=bytes(8), is_extended_id=False))
    clock.advance(0.002)
    assert drv.tick().fault is FaultKind.FOREIGN_WRITER
    other.shutdown()


def test_enable_command_helpers(rig):
    ch, clock, resp, bus = rig
    tr = DamiaoTransport(DamiaoTransportConfig(arm=Arm.RIGHT, channel=ch), bus=bus, clock=clock.now)
    tr.send_special(SpecialCommand.ENABLE, (2, 4))
    resp.serve()
    tr.poll_feedback()
    assert [d.enabled for d in resp.drives] == [False, True, False, True, False, False, False]
    assert tr.latest_feedback[2].status == Status.ENABLED


def test_bad_config_is_a_typed_error():
    from rob_twin.controllers.damiao_errors import DamiaoTransportError

    with pytest.raises(DamiaoTransportError, match="kp"):
        DamiaoTransportConfig(kp=(600.0,) * 7)
    with pytest.raises(DamiaoTransportError, match="needs 7"):
        DamiaoTransportConfig(kd=(1.0,) * 6)


def test_streaming_before_the_enable_sequence_latches(rig):
    ch, clock, resp, bus = rig
    drv = _right_driver(rig)
    rep = drv.tick()
    assert rep.fault is FaultKind.DRIVE_ERROR and "not enabled" in drv.owner.fault_reason
    assert resp.bus.recv(timeout=0) is None


def test_host_api_refuses_unknown_joints(rig):
    from rob_twin.controllers.damiao_errors import UnknownMotorIdError

    ch, clock, resp, bus = rig
    tr = DamiaoTransport(DamiaoTransportConfig(arm=Arm.RIGHT, channel=ch), bus=bus, clock=clock.now)
    with pytest.raises(UnknownMotorIdError, match="1..7"):
        tr.request_register(8, Register.PMAX)
    with pytest.raises(UnknownMotorIdError):
        tr.send_special(SpecialCommand.ENABLE, (0,))
    assert resp.bus.recv(timeout=0) is None


def test_bring_up_on_a_refusing_bus_fails_without_raising(rig):
    ch, clock, resp, bus = rig

    class BusOff(can.BusABC):
        def __init__(self):
            super().__init__(channel="off")

        def send(self, msg, timeout=None):
            raise can.CanOperationError("bus-off")

        def _recv_internal(self, timeout):
            return None, False

    off = BusOff()
    drv = _right_driver(rig, bus=off)
    rep = drv.bring_up(lambda: None)
    assert not rep.passed and "CanOperationError" in rep.reason
    assert drv.owner.fault is FaultKind.DRIVE_ERROR and drv.measured_velocities() is None
    off.shutdown()

"""The simulated motor bank and the closed loop: owners -> codec -> CAN -> drives -> MuJoCo."""

from __future__ import annotations

import can
import mujoco
import numpy as np
import pytest
from rob_twin.controllers.codec import RAD_PER_COUNT, decode_feedback
from rob_twin.controllers.owner_types import FaultKind as OwnerFault
from rob_twin.controllers.owner_types import Mode
from rob_twin.models import dimensions as D
from rob_twin.models.names import BUS_MAPPING, Arm, tcp_site
from rob_twin.twin.bus.wire import open_virtual
from rob_twin.twin.drives.amber_drive import STATUS_ENABLED, STATUS_TIMEOUT, DriveConfigError
from rob_twin.twin.scenario.schema import parse_fault
from rob_twin.twin.sim.closed_loop import ClosedLoop, ClosedLoopConfig
from rob_twin.twin.sim.faults import FaultSpec, FaultSpecError

HOME = np.array(D.HOME_ARM_POSE)
MOVE = np.array([0.3, 0.25, 0.2, -0.3, 0.2, 0.2, 0.2])
R, L = Arm.RIGHT, Arm.LEFT


@pytest.fixture
def loop():
    lp = ClosedLoop()
    yield lp
    lp.close()


def _tcp_y_in_torso(lp: ClosedLoop, arm: Arm) -> float:
    """TCP position along the torso's left (+y) axis [m]: negative = ROB's right side."""
    d = lp.twin.data
    site = d.site(tcp_site(arm)).xpos
    torso = d.body("torso")
    return float((torso.xmat.reshape(3, 3).T @ (site - torso.xpos))[1])


def test_bus_channels_follow_robs_mapping(loop):
    assert loop.channels[R].startswith(BUS_MAPPING[R].channel + "@")  # CAN10
    assert loop.channels[L].startswith(BUS_MAPPING[L].channel + "@")  # CAN11
    assert loop.bank.wiring() == {loop.channels[R]: "right", loop.channels[L]: "left"}


def test_command_to_right_moves_the_arm_on_robs_right_side(loop):
    loop.run_for(1.0)  # the drives' integral action takes out the gravity sag
    left_before = loop.measured(L)
    assert loop.command(R, HOME + MOVE).accepted
    loop.run_for(1.5)
    assert np.max(np.abs(loop.measured(R) - (HOME + MOVE))) < 0.05
    assert np.max(np.abs(loop.measured(L) - left_before)) < 1e-3
    assert _tcp_y_in_torso(loop, R) < -0.1 < 0.1 < _tcp_y_in_torso(loop, L)


def test_swapped_wiring_moves_the_other_arm():
    with ClosedLoop(ClosedLoopConfig(swap_wiring=True)) as lp:
        lp.run_for(0.2)
        right_before = lp.measured(R)
        lp.command(R, HOME + MOVE)
        lp.run_for(1.0)
        # the RIGHT owner's frames reach the LEFT arm's drives: the wrong arm moves
        assert np.max(np.abs(lp.measured(R) - right_before)) < 0.05
        assert np.max(np.abs(lp.measured(L) - HOME)) > 0.15


def test_drive_decodes_golden_frames_independently_of_the_encoder(loop):
    """Frames written by hand (seed 001 vectors), not by our encoder, reach the servo."""
    loop.owner_ticking[R] = False  # a bare bus: only our hand-made frames
    bus = open_virtual(loop.channels[R])
    try:
        one_deg_up = HOME + 0  # joint 6: 0x0080 = +128 counts = +1 deg, joint 7: 0xFF7F = -1 deg
        bus.send(
            can.Message(arbitration_id=0x16, data=bytes.fromhex("400080"), is_extended_id=False)
        )
        bus.send(
            can.Message(arbitration_id=0x17, data=bytes.fromhex("40FF7F"), is_extended_id=False)
        )
        bus.send(can.Message(arbitration_id=0x15, data=bytes.fromhex("41"), is_extended_id=False))
        loop.run_for(0.002)
        drives = loop.bank.drives_of(R)
        assert drives.drives[5].command_rad == pytest.approx(np.radians(1.0), abs=1e-12)
        assert drives.drives[6].command_rad == pytest.approx(-np.radians(1.0), abs=1e-12)
        assert drives.counters.malformed_frames == 1
        assert drives.drives[4].command_rad == pytest.approx(one_deg_up[4])
        loop.run_for(0.5)
        # the servo has settled the 1 deg step to the codec's resolution after 0.5 s (measured
        # 0.84 count short, the same for every seed: the sim is deterministic)
        assert loop.measured(R)[5] == pytest.approx(np.radians(1.0), abs=RAD_PER_COUNT)
    finally:
        bus.shutdown()


@pytest.mark.parametrize("rate_hz", [20.0, 200.0])
def test_feedback_rate_and_content(rate_hz):
    with ClosedLoop(ClosedLoopConfig(feedback_rate_hz=rate_hz)) as lp:
        lp.run_for(1.0)
        ad = lp.bank.drives_of(R)
        assert ad.counters.feedback_frames == pytest.approx(rate_hz * 7, abs=7)
        fb = lp.drivers[R].transport.latest_feedback
        q = lp.measured(R)
        tau = lp.twin.data.actuator_force[ad.actuators]
        # feedback = the angle at the frame's sample time, truncated to counts (< 1 count),
        # plus the motion since that sample: the settling arm moves < 1e-3 rad/s at t = 1 s and
        # a 20 Hz frame is <= 50 ms old, < 0.4 count (measured worst 1.004 counts, joint 3)
        for j in range(1, 8):
            assert abs(fb[j].position_rad - q[j - 1]) <= 1.4 * RAD_PER_COUNT
            assert fb[j].status & STATUS_ENABLED
        # current = torque * amps_per_nm (ASSUMED torque constant), quantized to 1/256
        cur = np.array([fb[j].current for j in range(1, 8)])
        k = np.array([d.config.amps_per_nm for d in ad.drives])
        assert np.max(np.abs(cur - tau * k)) < 0.05  # torque moved a little since the frame


def test_feedback_rate_above_200_hz_is_rejected():
    with pytest.raises(ValueError, match=r"feedback_rate_hz=.* is invalid; valid: \(0, 200\] Hz"):
        ClosedLoopConfig(feedback_rate_hz=500.0)


def test_drive_side_timeout_holds_the_arm_after_owner_loss(loop):
    loop.run_for(0.2)
    loop.command(R, HOME + MOVE)
    loop.run_for(0.3)  # moving
    loop.owner_ticking[R] = False  # the owner process dies mid-motion
    t_loss, q_loss = loop.time, loop.measured(R)
    ad = loop.bank.drives_of(R)
    assert loop.run_until(lambda: all(d.timed_out for d in ad.drives), 0.5)
    assert loop.time - t_loss <= ad.drives[0].config.command_timeout_s + 0.002
    loop.run_for(1.0)
    travel = np.abs(loop.measured(R) - q_loss)
    assert travel.max() < 0.1  # held near where commands stopped, not at the far target
    frame = decode_feedback(0x91, ad.drives[0].feedback_frame(loop.measured(R)[0], 0.0).data)
    assert frame.status & STATUS_TIMEOUT


# fault, kwargs, expected owner fault (None: keeps tracking)
FAULT_MATRIX = [
    ("drop", {"params": {"probability": 0.3}}, None),
    ("delay", {"params": {"delay_s": 0.02, "jitter_s": 0.01}}, None),
    ("bus_off", {}, OwnerFault.BLOCKED_BRAKING_PATH),
    ("partial_batch", {"params": {"accept_frames": 3}}, OwnerFault.PARTIAL_OUTPUT),
    ("uncertain_write", {}, OwnerFault.UNCERTAIN_OUTPUT),
    ("second_writer", {}, OwnerFault.FOREIGN_WRITER),
    ("feedback_freeze", {"joints": (3,)}, OwnerFault.STALE_FEEDBACK),
    ("stall", {"joints": (4,)}, OwnerFault.TRACKING_ERROR),
    ("encoder_offset", {"joints": (2,), "params": {"offset_rad": 0.3}}, OwnerFault.TRACKING_ERROR),
    ("wrong_sign", {"joints": (5,)}, OwnerFault.TRACKING_ERROR),
    ("power_loss", {}, OwnerFault.STALE_FEEDBACK),
]


@pytest.mark.parametrize("kind,kw,expected", FAULT_MATRIX, ids=[f[0] for f in FAULT_MATRIX])
def test_fault_injection_matrix(kind, kw, expected):
    spec = FaultSpec(kind, "right", at=0.5, **kw)
    with ClosedLoop(ClosedLoopConfig(faults=(spec,))) as lp:
        lp.run_for(0.2)
        lp.command(R, HOME + 2 * MOVE)  # still moving when the fault comes at 0.5 s
        lp.command(L, HOME + 2 * MOVE)
        lp.run_for(1.5)
        owner = lp.drivers[R].owner
        assert owner.fault is expected, owner.fault_reason
        assert lp.drivers[L].owner.fault is None  # the other arm is untouched
        t = lp.drivers[R].transport.counters
        if expected is None:
            assert owner.mode is Mode.TRACKING
            assert np.max(np.abs(lp.measured(R) - (HOME + 2 * MOVE))) < 0.05
        else:
            # latched: nothing more reaches the bus, not even a retry
            samples = t.samples
            lp.run_for(0.3)
            assert t.samples == samples


def test_runs_are_deterministic_for_a_seed():
    def run():
        spec = FaultSpec("drop", "left", at=0.3, duration=0.5, params={"probability": 0.5})
        with ClosedLoop(ClosedLoopConfig(seed=7, faults=(spec,))) as lp:
            lp.command(R, HOME + MOVE)
            lp.command(L, HOME - MOVE * 0.5)
            lp.run_for(1.0)
            return lp.twin.data.qpos.copy(), lp.wires[L].dropped

    (q1, d1), (q2, d2) = run(), run()
    assert d1 == d2 > 0
    assert np.array_equal(q1, q2)


def test_bus_traffic_is_logged_with_python_can_loggers(tmp_path):
    with ClosedLoop(ClosedLoopConfig(log_dir=tmp_path)) as lp:
        lp.command(R, HOME + MOVE)
        lp.run_for(0.3)
        ch = lp.channels[R]
        ad = lp.bank.drives_of(R)
        sent_cmd, sent_fb = ad.counters.command_frames, ad.counters.feedback_frames
    path = tmp_path / f"{ch}.log"
    frames = list(can.LogReader(str(path)))
    cmd = [f for f in frames if 0x11 <= f.arbitration_id <= 0x17]
    fb = [f for f in frames if 0x91 <= f.arbitration_id <= 0x97]
    assert (len(cmd), len(fb)) == (sent_cmd, sent_fb)
    assert cmd[0].data[0] == 0x40
    # simulated timestamps: the first command frame goes out at the first owner tick
    assert cmd[0].timestamp == pytest.approx(0.0, abs=0.006)


def test_stall_jams_the_joint_in_the_model_and_releases_it(loop):
    m, d = loop.twin.model, loop.twin.data
    dof = loop.bank.drives_of(R).dof[3]
    j = int(m.dof_jntid[dof])
    qadr = int(m.jnt_qposadr[j])
    before = (m.jnt_range[j].copy(), int(m.jnt_limited[j]), m.jnt_solref[j].copy())
    loop.faults.add(FaultSpec("stall", "right", at=0.0, duration=0.2, joints=(4,)))
    loop.run_for(0.01)
    jammed_at = float(d.qpos[qadr])
    assert tuple(m.jnt_range[j]) == pytest.approx((jammed_at, jammed_at), abs=1e-3)
    loop.command(R, loop.twin.arm_positions(R) + 0.3)  # push against the jam
    loop.run_for(0.15)
    assert abs(float(d.qpos[qadr]) - jammed_at) < 2e-3  # held, not crept
    loop.run_for(0.1)  # the jam ended: the model's own range, flag and solref are back
    assert np.array_equal(m.jnt_range[j], before[0]) and int(m.jnt_limited[j]) == before[1]
    assert np.array_equal(m.jnt_solref[j], before[2])


def test_bad_fault_specs_are_rejected_with_the_valid_values():
    with pytest.raises(FaultSpecError, match="valid: drop, delay, bus_off"):
        parse_fault({"kind": "gremlins"})
    with pytest.raises(FaultSpecError, match=r"probability must be in \[0, 1\]"):
        FaultSpec("drop", "right", params={"probability": 2})
    with pytest.raises(FaultSpecError, match="valid: \\['accept_frames'\\]"):
        FaultSpec("partial_batch", "right", params={"frames": 2})
    with pytest.raises(FaultSpecError, match="joint 9"):
        FaultSpec("stall", "right", joints=(9,))
    with pytest.raises(
        FaultSpecError, match=r"faults\[0\]\.arm: Input should be 'right' or 'left'"
    ):
        parse_fault({"kind": "stall", "arm": "middle"})
    with pytest.raises(DriveConfigError, match="sign must be"):
        from rob_twin.twin.drives.amber_drive import DriveConfig

        DriveConfig(sign=0)


def test_drive_limits_clamp_commands(loop):
    ad = loop.bank.drives_of(R)
    drv = ad.drives[3]  # J4: 0 .. 2.443 rad
    drv.on_command(int(round(np.degrees(-0.5) * 128)), loop.time)
    assert drv.command_rad == 0.0 and drv.clamped
    assert (
        mujoco.mj_name2id(loop.twin.model, mujoco.mjtObj.mjOBJ_ACTUATOR, "right/j4_servo")
        == ad.actuators[3]
    )


def test_realtime_mode_runs_the_same_wiring_paced_by_the_wall_clock(loop):
    import time

    frames = []
    t0 = time.perf_counter()
    loop.run_realtime(0.2, lambda: frames.append(loop.time) is None)
    wall = time.perf_counter() - t0
    assert loop.time == pytest.approx(0.2, abs=0.011) and wall >= 0.19  # never ahead of real time
    assert loop.last_report[R].published and loop.drivers[R].feedback_forwarded > 0
    n = len(frames)
    loop.run_realtime(1.0, lambda: len(frames) < n + 3 and frames.append(loop.time) is None)
    assert len(frames) == n + 3  # on_frame returning False ends the run


def test_clearing_the_faults_lifts_a_jam_in_force(loop):
    """A stall cleared while in force (the bank's clear_faults) is released at the next
    service: the bank applies the empty schedule once more instead of leaving it jammed."""
    m = loop.twin.model
    dof = loop.bank.drives_of(R).dof[3]
    j = int(m.dof_jntid[dof])
    own = m.jnt_range[j].copy()
    loop.faults.add(FaultSpec("stall", "right", at=0.0, joints=(4,)))  # no end
    loop.run_for(0.01)
    assert not np.array_equal(m.jnt_range[j], own)
    loop.faults.clear()
    loop.run_for(0.01)
    assert np.array_equal(m.jnt_range[j], own)

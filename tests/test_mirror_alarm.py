"""The mirror's alarm statistics: a windowed RMS against the jitter floor
measured at start-up tells a moderate misfit from jitter, where the per-frame maximum cannot.

Offline and bounded: a reference twin (the "real arm", default drives) holds still for a
second, then waves; the mirror's twin, fed its frames, measures its floor at rest. Jitter
only (one reply in ten stamped up to 15 ms late: a moving joint's difference reaches
10-15 mrad in that frame, as under load) raises the ``max`` alarm at 10 mrad but not the
``rms`` alarm; a misfit (every drive's lag 10 ms in the mirror's twin against 2 ms: an RMS
of about 6 mrad) raises the ``rms`` alarm within a second of the motion's start.
"""

from __future__ import annotations

import math
from dataclasses import replace

import can
import numpy as np
import pytest
from rob_twin.controllers.codec import encode_sample
from rob_twin.models.names import Arm
from rob_twin.twin.bus.mirror import MirrorInputError, MirrorTwin, TwinParameters
from rob_twin.twin.bus.mirror_alarm import AlarmConfig, JointWatch
from rob_twin.twin.bus.wire import open_virtual
from rob_twin.twin.drives.amber_bank import MotorBank, default_drive_configs
from rob_twin.twin.drives.amber_drive import DRIVE_FRAME
from rob_twin.twin.sim.twin import Twin

REST_S, WAVE_S = 1.0, 3.0
RMS = AlarmConfig(kind="rms", window_s=1.0, factor=3.0, floor_s=REST_S, min_rad=0.005)
MISFIT = TwinParameters(
    name="drive lag 10 ms",
    drive_configs=tuple(replace(c, lag_s=0.010) for c in default_drive_configs()),
)


def _reference():
    """The 'real arm' (right, default drives, settled 1 s): at rest for REST_S, then a wave
    of commands every 5 ms for WAVE_S; feedback every 10 ms. (start pose, start stamp,
    frames in order, the wave's first stamp)."""
    twin = Twin()
    dt = twin.scheduler.dt
    bank = MotorBank(twin.model, twin.data, {"CAN10@alarmref": Arm.RIGHT}, now=twin.time)
    host = open_virtual("CAN10@alarmref")
    twin.scheduler.add("bus", 1.0 / dt, lambda now: bank.service(now, dt))
    twin.run_for(1.0)
    start = twin.arm_positions(Arm.RIGHT)
    t0 = twin.time
    frames = []
    shape = np.array([1, 1, 1, -1, 1, 0.5, 1]) * 0.2
    for k in range(int(round((REST_S + WAVE_S) / 0.005))):
        t = twin.time
        if k % 2 == 0:
            bank.emit_feedback(t)
            while (m := host.recv(timeout=0)) is not None:
                frames.append(m)
        q = start + shape * np.sin(2 * math.pi * 0.8 * max(0.0, t - t0 - REST_S))
        for fr in encode_sample(q, DRIVE_FRAME):
            msg = can.Message(
                timestamp=t, arbitration_id=fr.arbitration_id, data=fr.data, is_extended_id=False
            )
            host.send(msg)
            frames.append(msg)
        twin.step(int(round(0.005 / dt)))
    bank.close()
    host.shutdown()
    return start, t0, frames, t0 + REST_S


@pytest.fixture(scope="module")
def reference():
    return _reference()


def _late_replies(frames, seed: int = 1):
    """One reply in ten stamped U(0, 15 ms) late (a loaded machine's jitter)."""
    rng = np.random.default_rng(seed)
    out = []
    for m in frames:
        if m.arbitration_id >= 0x80 and rng.random() < 0.1:
            m = can.Message(
                timestamp=m.timestamp + rng.uniform(0.0, 0.015),
                arbitration_id=m.arbitration_id,
                data=m.data,
                is_extended_id=False,
            )
        out.append(m)
    return out


def _mirror(reference, alarm, parameters=None, frames=None, tolerance=0.05) -> dict:
    start, t0, recorded, _ = reference
    mirror = MirrorTwin({"right": start}, t0, tolerance, parameters, alarm=alarm)
    try:
        for msg in frames if frames is not None else recorded:
            mirror.handle(Arm.RIGHT, msg)
    finally:
        mirror.close()
    return mirror.summary()


def test_jitter_alone_raises_the_max_alarm_but_not_the_windowed_rms(reference):
    jittery = _late_replies(reference[2])
    by_max = _mirror(reference, AlarmConfig(kind="max"), frames=jittery, tolerance=0.01)
    right = by_max["arms"]["right"]
    assert max(right["max_abs_diff_rad"]) > 0.01  # one late frame: beyond 10 mrad
    assert by_max["alarms"], "the per-frame maximum takes jitter for a divergence"
    by_rms = _mirror(reference, RMS, frames=jittery)
    right = by_rms["arms"]["right"]
    assert by_rms["alarms"] == [], by_rms["alarms"]
    assert by_rms["alarm"]["kind"] == "rms"
    # the floor was measured at rest: the feedback's quantum, so the least threshold rules
    assert max(right["floor_rms_rad"]) < 0.001
    assert right["rms_threshold_rad"] == [RMS.min_rad] * 7
    assert max(right["max_window_rms_rad"]) < RMS.min_rad


def test_a_moderate_misfit_raises_the_rms_alarm_within_a_second_of_motion(reference):
    s = _mirror(reference, RMS, MISFIT)
    right = s["arms"]["right"]
    assert 0.004 < max(right["rms_diff_rad"]) < 0.008  # a moderate misfit: RMS about 6 mrad
    assert max(right["max_abs_diff_rad"]) < 0.05  # never beyond the gross tolerance
    assert s["alarms"], right
    wave = reference[3]
    for a in s["alarms"]:
        assert a["statistic"] == "rms" and a["rms_rad"] > a["tolerance_rad"] >= RMS.min_rad
        assert a["window_s"] == RMS.window_s and a["floor_rad"] < 0.001
        assert wave < a["stamp_s"] < wave + 1.0, (a, wave)  # bounded: within 1 s of motion
    joints = [a["joint"] for a in s["alarms"]]
    assert len(joints) == len(set(joints))  # latched: once per joint


def test_the_same_parameters_without_jitter_stay_at_the_quantum(reference):
    s = _mirror(reference, RMS)
    assert s["alarms"] == []
    assert max(s["arms"]["right"]["max_window_rms_rad"]) < 0.001


def test_a_gross_frame_alarms_at_once_under_the_rms_alarm(reference):
    start, t0, frames, wave = reference
    slow = TwinParameters(
        name="lag 0.3 s",
        drive_configs=tuple(replace(c, lag_s=0.3) for c in default_drive_configs()),
    )
    s = _mirror(reference, replace(RMS, floor_s=10.0), slow, tolerance=0.02)
    assert s["alarms"] and all(a["statistic"] == "max" for a in s["alarms"])  # no floor yet
    assert all(abs(a["diff_rad"]) > 0.02 for a in s["alarms"])


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("kind", "cusum"),
        ("window_s", 0.0),
        ("window_s", math.nan),
        ("factor", 0.5),
        ("floor_s", -1.0),
        ("min_rad", math.inf),
    ],
)
def test_a_bad_alarm_setting_is_a_typed_error_naming_it(field, value):
    with pytest.raises(MirrorInputError) as err:
        AlarmConfig(**{field: value})
    assert err.value.field in (field, "alarm")


def test_the_joint_watch_keeps_a_sliding_window_and_the_start_up_floor():
    w = JointWatch(
        AlarmConfig(kind="rms", window_s=1.0, factor=2.0, floor_s=1.0, min_rad=0.001), 1.0
    )
    for k in range(100):  # floor: 0.002 rad for the first second
        assert not w.add(k * 0.01, 0.002 if k % 2 else -0.002)
    assert w.floor is None
    assert not w.add(1.0, 0.002)
    assert w.floor == pytest.approx(0.002) and w.threshold == pytest.approx(0.004)
    fired = [w.add(1.0 + k * 0.01, 0.006) for k in range(1, 101)]
    # RMS over the last second: sqrt((n * 0.006^2 + (100 - n) * 0.002^2) / 100) > 0.004
    # from n = 38 frames of 6 mrad on (the 38th: index 37)
    assert 36 <= fired.index(True) <= 39
    assert w.rms == pytest.approx(0.006)  # the window holds only the last second


# ---------------------------------------------------------------------- Damiao (OpenArm)
def _damiao_reference(seconds: float = 4.0):
    """OpenArm's right arm on the bank's own Damiao drives (the 'real arm'): enabled, held
    by MIT frames every 5 ms at its start pose for REST_S, then a wave of every joint; each
    frame's reply as the drive sends it. (start, start stamp, frames, protocol)."""
    from rob_twin.controllers.damiao_codec import (
        MitCommand,
        SpecialCommand,
        encode_mit,
        special_frame,
    )
    from rob_twin.models.robot import robot_of
    from rob_twin.twin.bus.mirror import bus_protocol
    from rob_twin.twin.drives.damiao_live import LiveDamiaoBank
    from rob_twin.twin.sim.twin import TwinConfig

    robot = robot_of("openarm")
    twin = Twin(TwinConfig(), model=robot.model())
    dt = twin.scheduler.dt
    bank = LiveDamiaoBank(robot, twin.model, twin.data, {"can0@alarmref": Arm.RIGHT}, now=0.0)
    twin.scheduler.add("bus", 1.0 / dt, lambda now: bank.service(now, dt))
    proto = bus_protocol(robot)
    start, t0, frames = twin.arm_positions(Arm.RIGHT).copy(), twin.time, []

    def send(msg: can.Message) -> None:
        msg.timestamp = twin.time
        frames.append(msg)
        for reply in bank.respond("can0@alarmref", msg):
            reply.timestamp = twin.time
            frames.append(reply)

    enable = special_frame(SpecialCommand.ENABLE)
    for esc in proto.esc_ids:
        send(can.Message(arbitration_id=esc, data=enable, is_extended_id=False))
    for _ in range(int(round(seconds / 0.005))):
        wave = 0.15 * math.sin(2 * math.pi * 0.6 * max(0.0, twin.time - t0 - REST_S))
        for j, esc in enumerate(proto.esc_ids):
            mit = MitCommand(float(start[j]) + wave, 0.0, 80.0, 2.0, 0.0)
            send(
                can.Message(
                    arbitration_id=esc,
                    data=encode_mit(mit, proto.scalings[j]),
                    is_extended_id=False,
                )
            )
        twin.step(int(round(0.005 / dt)))
    bank.close()
    return start, t0, frames, proto


def _offset_replies(frames, proto, t_from: float, joint: int, offset_rad: float):
    """The replies of ``joint`` from bus time ``t_from`` on report ``offset_rad`` more."""
    from rob_twin.controllers.damiao_codec import decode_state, encode_state

    mst, esc, scaling = 0x10 + joint, proto.esc_ids[joint - 1], proto.scalings[joint - 1]
    out = []
    for f in frames:
        if f.arbitration_id == mst and f.timestamp >= t_from and len(f.data) == 8:
            st = decode_state(bytes(f.data), scaling)
            data = encode_state(
                esc, st.status, st.q_rad + offset_rad, st.dq_rad_s, st.tau_nm,
                st.t_mos_c, st.t_rotor_c, scaling,
            )  # fmt: skip
            f = can.Message(
                timestamp=f.timestamp, arbitration_id=mst, data=data, is_extended_id=False
            )
        out.append(f)
    return out


def test_a_damiao_mirror_alarms_on_a_moderate_offset_and_not_without():
    from rob_twin.models.robot import robot_of

    start, t0, frames, proto = _damiao_reference()
    onset = t0 + 2.0

    def mirror(fed) -> dict:
        m = MirrorTwin(
            {"right": start},
            t0,
            0.05,
            TwinParameters(model=robot_of("openarm").model()),
            settle_s=0.0,
            protocol=proto,
            alarm=RMS,
        )
        try:
            for f in fed:
                m.handle(Arm.RIGHT, f)
        finally:
            m.close()
        return m.summary()

    same = mirror(frames)
    assert same["family"] == "damiao" and same["alarms"] == [], same["alarms"]
    assert max(same["arms"]["right"]["max_window_rms_rad"]) < 0.002
    off = mirror(_offset_replies(frames, proto, onset, joint=2, offset_rad=0.008))
    assert [(a["joint"], a["statistic"]) for a in off["alarms"]] == [(2, "rms")], off["alarms"]
    assert onset < off["alarms"][0]["stamp_s"] < onset + RMS.window_s  # bounded latency
    assert max(off["arms"]["right"]["max_abs_diff_rad"]) < 0.05  # no frame beyond the gross


# ---------------------------------------------------------------------- CLI
def test_the_cli_takes_the_alarm_settings_and_refuses_bad_ones(capsys):
    import json

    from rob_twin.cli.main import main

    for bad in (["--window-s", "0"], ["--alarm-factor", "0.5"], ["--alarm-min-rad", "nan"]):
        code = main(["mirror", *bad, "--port", "1", "--seconds", "1", "--json"])
        out = json.loads(capsys.readouterr().out)
        assert code == 2 and out["exit_code"] == 2 and out["error"], (bad, out)
    assert main(["mirror", "--alarm", "cusum"]) == 2
    capsys.readouterr()
    try:
        main(["mirror", "--help"])
    except SystemExit:
        pass
    text = " ".join(capsys.readouterr().out.split())
    for words in ("--alarm {rms,max}", "--window-s", "--floor-s", "--alarm-factor", "jitter floor"):
        assert words in text, words

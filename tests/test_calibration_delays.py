"""A calibration's transport delays act where they act: in the running
twin (``run``/``rehearse``/... ``--calibration``: the closed loop), in a recording made
through it (so a fit finds them again), and in the mirror's twin.

A calibration with an 11 ms command delay on the right arm: the right arm's motion is the
uncalibrated motion 11 ms later to the physics step, for the same commands; the left arm's
is unchanged. A 6 ms feedback delay on the left arm: the host hears each reply 6 ms after the
drive sent it. A recording of that run replays at the feedback's quantum with the
calibration's delays and is off by mrad without them; a mirror given the delays follows it at
the quantum too.
"""

from __future__ import annotations

import math

import can
import numpy as np
import pytest
from rob_twin.models.loading import load_scene
from rob_twin.models.names import Arm
from rob_twin.models.robot import robot_of
from rob_twin.planners.certificate_geometry import model_hash
from rob_twin.twin.bus.mirror import MirrorTwin, TwinParameters
from rob_twin.twin.bus.recording import TrafficRecorder
from rob_twin.twin.bus.transport_delay import TransportDelayBus, TransportDelayError
from rob_twin.twin.bus.wire import open_virtual
from rob_twin.twin.calibration.apply import calibrated_delays
from rob_twin.twin.calibration.calibration_file import Calibration
from rob_twin.twin.sim.closed_loop import ClosedLoopConfig
from rob_twin.twin.sim.loops import make_closed_loop

DELAYS = {"right/command_delay_s": 0.011, "left/feedback_delay_s": 0.006}
SECONDS = 3.0


def _calibration(values: dict) -> Calibration:
    return Calibration("delays", dict(values), model_hash(load_scene()))


def _wave(loop, arm: Arm):
    home = loop.measured(arm).copy()
    shape = np.array([1, 1, 1, -1, 1, 0.5, 1]) * 0.15

    def source(t: float) -> np.ndarray:
        return home + shape * math.sin(2 * math.pi * 0.7 * t) * min(1.0, t)

    return source


def _run(values: dict | None, record=None) -> dict:
    """Both arms waving for SECONDS; per physics step the commanded and measured positions of
    each arm and the host's decoded feedback of the left arm."""
    cal = _calibration(values) if values is not None else None
    loop = make_closed_loop(ClosedLoopConfig(calibration=cal, feedback_rate_hz=100.0))
    for arm in Arm:
        loop.stream_targets(arm, _wave(loop, arm), 100.0)
    out = {"t": [], "delays": loop.transport_delays, "delayed": dict(loop.delayed)}
    for arm in Arm:
        out[f"cmd_{arm.value}"], out[f"q_{arm.value}"] = [], []

    def probe(now: float) -> None:
        out["t"].append(now)
        for arm in Arm:
            out[f"cmd_{arm.value}"].append(loop.commanded(arm).copy())
            out[f"q_{arm.value}"].append(loop.measured(arm).copy())

    loop.twin.scheduler.add("probe", 1000.0, probe)
    recorder = TrafficRecorder(loop, record) if record is not None else None
    try:
        loop.run_for(SECONDS)
    finally:
        if recorder is not None:
            recorder.close()
        loop.close()
    return {k: np.array(v) if isinstance(v, list) else v for k, v in out.items()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    path = tmp_path_factory.mktemp("delays") / "delayed.log"
    return _run(None), _run(DELAYS, record=path), path


def _best_shift(a: np.ndarray, b: np.ndarray, shifts=range(0, 25)) -> tuple[int, float]:
    """The shift k [steps] with b[t + k] closest to a[t] (after the first second), and that
    largest difference [rad]."""
    lo, hi = 1000, len(a) - max(shifts)
    errs = {k: float(np.abs(a[lo:hi] - b[lo + k : hi + k]).max()) for k in shifts}
    k = min(errs, key=errs.get)
    return k, errs[k]


def test_a_command_delay_makes_the_arm_answer_that_much_later(runs):
    plain, delayed, _ = runs
    assert plain["delays"] == {Arm.RIGHT: (0.0, 0.0), Arm.LEFT: (0.0, 0.0)}
    assert plain["delayed"] == {}  # no calibration: the loop is wired as ever
    assert delayed["delays"][Arm.RIGHT] == (0.011, 0.0)
    # the host commanded the same (the owners' trajectories do not depend on the delay)
    np.testing.assert_array_equal(plain["cmd_right"], delayed["cmd_right"])
    # the right arm's motion is the uncalibrated one 11 steps (11 ms) later, exactly
    k, err = _best_shift(plain["q_right"], delayed["q_right"])
    assert k == 11 and err < 1e-4, (k, err)
    # the measured response lags the commanded by 11 ms more than uncalibrated
    k_plain, _ = _best_shift(plain["cmd_right"], plain["q_right"], range(0, 60))
    k_delayed, _ = _best_shift(delayed["cmd_right"], delayed["q_right"], range(0, 60))
    assert k_delayed - k_plain == pytest.approx(11, abs=1)
    # a feedback delay does not move the arm: the left arm's motion is unchanged
    k, err = _best_shift(plain["q_left"], delayed["q_left"])
    assert k == 0 and err < 1e-3, (k, err)


def test_a_recording_through_the_delayed_loop_is_stamped_as_the_host_sees_it(runs):
    from rob_twin.twin.calibration.predict import predict

    _, _, path = runs

    def worst_rms(params: dict) -> dict:
        p = predict(path, params)
        out = {}
        for (arm, _j), tr in p.tracks.items():
            rms = float(np.sqrt(np.mean((tr.position_rec - tr.position_pred) ** 2)))
            out[arm] = max(out.get(arm, 0.0), rms)
        return out

    frames = list(can.LogReader(str(path)))
    stamps = [f.timestamp for f in frames]
    assert stamps == sorted(stamps)  # written in stamp order
    # the left arm's replies (100 Hz, sent at whole 10 ms steps) reach the host 6 ms later
    left = [
        f.timestamp for f in frames if f.arbitration_id >= 0x91 and str(f.channel).endswith("11")
    ]
    phases = {round((t * 1000) % 10) % 10 for t in left}
    assert phases == {6}, phases
    with_delays = worst_rms(DELAYS)
    without = worst_rms({})
    quantum = math.radians(1 / 128)
    for arm in Arm:
        assert with_delays[arm] < quantum, with_delays  # the replay agrees with the run
        assert without[arm] > 5 * with_delays[arm], (without, with_delays)


def test_a_mirror_given_the_delays_follows_the_delayed_run(runs):
    _, _, path = runs
    frames = list(can.LogReader(str(path)))
    rob = robot_of("rob")
    start = {a.value: list(rob.home(a)) for a in Arm}
    rms = {}
    for name, delays in (("with", calibrated_delays(_calibration(DELAYS))), ("without", None)):
        mirror = MirrorTwin(start, 0.0, 0.05, TwinParameters(delays=delays), settle_s=0.0)
        try:
            for f in frames:
                f.is_extended_id = False
                mirror.handle(Arm.RIGHT if str(f.channel).endswith("10") else Arm.LEFT, f)
        finally:
            mirror.close()
        s = mirror.summary()
        rms[name] = {a: max(v["rms_diff_rad"]) for a, v in s["arms"].items()}
        if name == "with":
            assert s["transport_delays_s"] == {"right": [0.011, 0.0], "left": [0.0, 0.006]}
            assert s["late_frames"] == 0
    for arm in ("right", "left"):
        assert rms["with"][arm] < 0.0002, rms
        assert rms["without"][arm] > 5 * rms["with"][arm], rms


def test_the_delay_bus_holds_commands_and_replies_in_order():
    now = [0.0]
    host = open_virtual("CANdly@t")
    drive = open_virtual("CANdly@t")
    bus = TransportDelayBus(host, 0.005, 0.003, lambda: now[0])
    try:
        for k in range(3):
            bus.send(can.Message(arbitration_id=0x11 + k, data=b"\x00", is_extended_id=False))
        assert bus.held == 3 and drive.recv(timeout=0) is None
        now[0] = 0.004
        assert bus.pump(now[0]) == 0
        now[0] = 0.005
        assert bus.pump(now[0]) == 3 and bus.held == 0
        got = [drive.recv(timeout=0).arbitration_id for _ in range(3)]
        assert got == [0x11, 0x12, 0x13]
        drive.send(
            can.Message(timestamp=0.005, arbitration_id=0x91, data=b"\x00", is_extended_id=False)
        )
        assert bus.recv(timeout=0) is None  # sent at 5 ms: at the host at 8 ms
        now[0] = 0.008
        reply = bus.recv(timeout=1.0)
        assert reply is not None and reply.arbitration_id == 0x91
        assert reply.timestamp == pytest.approx(0.008)
    finally:
        bus.shutdown()
        drive.shutdown()
    inner = open_virtual("CANdly@u")
    try:
        with pytest.raises(TransportDelayError, match="command_delay_s"):
            TransportDelayBus(inner, -0.001, 0.0, lambda: 0.0)
    finally:
        inner.shutdown()


def test_a_calibration_file_gives_the_mirror_its_delays(tmp_path):
    from rob_twin.cli.mirror import _parameters
    from rob_twin.twin.calibration.calibration_file import calibration_document, save_calibration

    params = {n: {"value": v, "fitted": True} for n, v in DELAYS.items()}
    path = save_calibration(
        tmp_path / "delays.json", calibration_document("delays", load_scene(), params, [], {}, [])
    )
    twin = _parameters(str(path), robot_of("rob"))
    assert twin.delays == {Arm.RIGHT: (0.011, 0.0), Arm.LEFT: (0.0, 0.006)}

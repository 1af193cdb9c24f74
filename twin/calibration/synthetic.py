"""Recordings the twin makes of itself with hidden parameters: the ground truth a fit is
tested and benchmarked against (simulated; a real robot's recording replaces them).

``record_hidden(path, hidden, seconds)`` runs both arms through a multi-sine excitation
(``excitation_source``) on a twin whose model and drives carry ``hidden`` (parameter names
of ``rob_twin.twin.calibration.parameters``), records the bus like ``run --record-can``
(host commands stamped when the host sends them, drive feedback when the host receives
it), with the hidden transport delays acting in the loop itself, as a calibration's do
(``rob_twin.twin.bus.transport_delay``): each arm's host frames reach its drives
``command_delay_s`` after the host sent them, its feedback reaches the host
``feedback_delay_s`` after the drives sent it. A loop without transport delays of its own
falls back to restamping a ``.log`` recorded without them (``_shift_log``), which cannot
place the host's first frames, sent before the drives' clock starts: they are left out, and
a replay then applies the first commands later than the recording's drives had, a step no
parameter explains when a hidden zero offset makes the first command move the arm. ``robot`` (a
``rob_twin.models.robot.Robot`` with Amber drives; None: the default robot, ROB): whose
twin records, around its home pose, on its channels.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import can
import numpy as np
from rob_twin.models.errors import InvalidValueError
from rob_twin.models.names import FEEDBACK_IDS, Arm
from rob_twin.models.robot import CAN_DRIVES, Robot, robot_of
from rob_twin.planners.certificate_geometry import model_hash
from rob_twin.twin.bus.recording import TrafficRecorder, bus_number, sidecar_path
from rob_twin.twin.calibration.calibration_file import Calibration
from rob_twin.twin.calibration.parameters import apply_to_model, delays
from rob_twin.twin.drives.amber_robot import robot_channels
from rob_twin.twin.sim.loops import loop_config, make_closed_loop
from rob_twin.twin.sim.twin import Twin, TwinConfig

EXCITATION_HZ = (0.23, 0.61, 1.37)  # three incommensurate tones per joint
# a seeded excitation's tones [Hz]: tone i of every joint drawn log-uniformly from band i,
# at least SEEDED_GAP_HZ from the unseeded tone i (no faster than it: the highest band ends
# at 1.37 Hz, so the motion asks no more acceleration of the owners than the unseeded one)
SEEDED_BANDS_HZ = ((0.13, 0.33), (0.38, 0.84), (0.90, 1.37))
SEEDED_GAP_HZ = 0.03
# a seeded excitation with more acceleration: the top tone 1.4-2.2 Hz (qdd grows with f^2:
# about 2.2x the default band's at its centre). Simulated, 4 s recordings with drive noise:
# ROB's right J2 armature (calibration benchmark draw 0), 5.2-17.7 % off with
# the default bands over three noise seeds, 0.3-1.5 % with these; over the benchmark's
# eight draws it recovered no more of them and covered fewer truths (bench_calibration)
FAST_BANDS_HZ = ((0.13, 0.33), (0.38, 0.84), (1.40, 2.20))
DRIVE_NOISE_RAD = 1e-3  # record_hidden(noise=True): servo-target noise std [rad] per 1 ms step


def _seeded_waves(
    seed: int, k: int, n: int, bands: tuple[tuple[float, float], ...] = SEEDED_BANDS_HZ
) -> tuple[np.ndarray, np.ndarray]:
    """(tones [Hz], phases [rad]), each (3, n): arm ``k``'s seeded excitation, joint by
    joint (see ``excitation_source``), tone i from ``bands[i]``."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InvalidValueError("excitation seed", seed, "None or an integer >= 0")
    rng = np.random.default_rng([int(seed), k, 0x5EED])
    ok = len(bands) == len(EXCITATION_HZ) and all(
        0.0 < lo < hi <= 10.0
        and (lo < EXCITATION_HZ[i] - SEEDED_GAP_HZ or hi > EXCITATION_HZ[i] + SEEDED_GAP_HZ)
        for i, (lo, hi) in enumerate(bands)
    )
    if not ok:
        raise InvalidValueError(
            "excitation bands",
            bands,
            f"three (low, high) [Hz], 0 < low < high <= 10, each reaching more than "
            f"{SEEDED_GAP_HZ} Hz beyond its unseeded tone {EXCITATION_HZ}",
        )
    tones = np.empty((len(bands), n))
    for i, (lo, hi) in enumerate(bands):
        for j in range(n):
            f = EXCITATION_HZ[i]
            while abs(f - EXCITATION_HZ[i]) < SEEDED_GAP_HZ:
                f = float(np.exp(rng.uniform(np.log(lo), np.log(hi))))
            tones[i, j] = f
    phases = rng.uniform(0.0, 2.0 * math.pi, size=tones.shape)
    return tones, phases


def excitation_source(
    k: int,
    amplitude_rad: float = 0.2,
    robot: Robot | None = None,
    seed: int | None = None,
    bands: tuple[tuple[float, float], ...] = SEEDED_BANDS_HZ,
    offset_rad: np.ndarray | None = None,
) -> Callable[[float], np.ndarray]:
    """Arm ``k``'s joint targets [rad] around ``robot``'s home (None: the default robot)
    plus ``offset_rad`` (None: none; each joint's shift of the motion's centre [rad], faded
    in with it: ``excitation_clearance.clear_excitation`` moves a centre off the body):
    three sines per joint with phases that differ by joint and arm, faded in over the first
    second so the motion starts at rest, and held inside the arm's joint ranges (a joint
    whose home is at a limit, ROB's J7 at -1.571 rad, moves on one side of it; a target
    beyond a range would be refused whole, and an arm whose every target is refused does
    not move: ROB's left arm did not, its J7 below its limit 95 % of the time).

    ``seed`` None: the tones ``EXCITATION_HZ`` [Hz] shared by every joint, phases fixed by
    joint and arm (the waveform the tests and baselines were made with). An integer >= 0:
    each joint's three tones drawn from ``SEEDED_BANDS_HZ`` (each at least
    ``SEEDED_GAP_HZ`` from the unseeded tone) and its phases uniform in [0, 2 pi), from
    ``(seed, k)``: another motion, the same for the same seed (a validation recording
    takes a seed its fit recording did not). ``bands``: the seeded tones' bands [Hz]
    (``FAST_BANDS_HZ``: more acceleration, for an armature the default leaves to the
    drive noise). InvalidValueError for any other seed or bands."""
    robot = robot_of(robot)
    arm = list(Arm)[k]
    home = robot.home(arm)
    lower, upper = (np.array(b, float) for b in zip(*robot.joint_ranges(arm), strict=True))
    joints = np.arange(len(home))
    if seed is None:
        tones = EXCITATION_HZ
        phases = [0.9 * joints + 1.7 * k + 0.5 * i for i in range(len(EXCITATION_HZ))]
    else:
        tones, phases = _seeded_waves(seed, k, len(home), bands)
    weights = (0.6, 0.3, 0.15)
    offset = None if offset_rad is None else np.asarray(offset_rad, float)

    def source(t: float) -> np.ndarray:
        fade = min(1.0, t) ** 2
        wave = sum(
            w * (np.sin(2 * math.pi * f * t + p) - np.sin(p))
            for w, f, p in zip(weights, tones, phases, strict=True)
        )
        target = home + fade * amplitude_rad * wave  # this order: the baselines' waveform
        if offset is not None:
            target = target + fade * offset
        return np.clip(target, lower, upper)

    return source


def _shift_log(path: Path, hidden: dict[str, float], robot: Robot) -> None:
    """Move each arm's frames in the ``.log`` at ``path`` (on ``robot``'s channels) by its
    hidden delays: the fallback for a closed loop without transport delays of its own."""
    shift = {}
    channels = robot_channels(robot)
    for arm, (cmd, fb) in delays(hidden).items():
        shift[bus_number(channels[arm.value])] = (cmd, fb)
    frames = list(can.CanutilsLogReader(path))
    out = []
    for m in frames:
        cmd, fb = shift.get(int("".join(c for c in str(m.channel) if c.isdigit())), (0.0, 0.0))
        late = fb if m.arbitration_id in FEEDBACK_IDS else -cmd
        out.append((m.timestamp + late, m))
    out.sort(key=lambda pair: pair[0])
    # host frames the delay moves before the run's start (the first milliseconds of holding
    # commands at rest) are left out: a recording cannot start before its twin
    out = [(t, m) for t, m in out if t >= 0.0]
    with can.CanutilsLogWriter(path) as writer:
        for t, m in out:
            m.timestamp = t
            writer.on_message_received(m)
    # the stamps are still simulated time: the sidecar says where the first one now is
    side = sidecar_path(path)
    if side.is_file():
        meta = json.loads(side.read_text())
        for key in ("first_frame_sim_s", "first_timestamp_s"):
            if key in meta:
                meta[key] = out[0][0]
        if "frames" in meta:
            meta["frames"] = len(out)
        side.write_text(json.dumps(meta))


def drive_noise_std(noise: bool | float) -> float:
    """The servo-target noise std [rad] that ``record_hidden``'s ``noise`` asks for."""
    if noise is True:
        return DRIVE_NOISE_RAD
    if noise is False:
        return 0.0
    if not isinstance(noise, (int, float)) or not math.isfinite(noise) or noise < 0:
        raise InvalidValueError("noise", noise, "True, False or a finite std >= 0 rad")
    return float(noise)


def record_hidden(
    path: Path | str,
    hidden: dict[str, float],
    seconds: float,
    seed: int = 0,
    feedback_rate_hz: float = 100.0,
    amplitude_rad: float = 0.2,
    source: Callable[[int], Callable[[float], np.ndarray]] | None = None,
    robot: Robot | None = None,
    excitation_seed: int | None = None,
    noise: bool | float = False,
) -> Path:
    """Record ``seconds`` [s] of both arms' excitation on ``robot``'s twin (None: the default
    robot) with ``hidden`` parameters into ``path`` (any recording format; ``.log`` only
    with hidden delays on a loop without transport delays of its own);
    ``source(k)`` gives arm k's targets [rad] over time instead (default:
    ``excitation_source(k, amplitude_rad, robot, excitation_seed)``: None, the unseeded
    waveform). ``noise``: drive noise, white noise of ``DRIVE_NOISE_RAD`` [rad] std (True)
    or of the given std [rad] added to every servo target at every physics step
    (``TwinConfig.control_noise``), drawn from ``seed``; False or 0 (default): none, and
    the recording is the same whatever ``seed``. The feedback is always quantised as the
    drives report it (a count of 1/128 deg, truncated). InvalidValueError for a noise
    that is not a finite std >= 0."""
    robot = robot_of(robot)
    robot.require(CAN_DRIVES, "a synthetic recording (hidden drive parameters)")
    path = Path(path)
    model = apply_to_model(robot.model(), hidden)
    transport = {n: v for n, v in hidden.items() if n.endswith("_delay_s")}
    # the loop takes the drives' hidden values (Amber: lag, gains, zeros; Damiao: friction,
    # gain factors, zeros) and the transport delays from a calibration holding every hidden
    # value, as a calibrated run does (the model, with the hidden model values, is given)
    config = loop_config(
        robot,
        "a synthetic recording",
        seed=seed,
        feedback_rate_hz=feedback_rate_hz,
        calibration=Calibration("hidden values", dict(hidden), model_hash(robot.model()))
        if hidden
        else None,
    )
    twin_config = TwinConfig(seed=seed, control_noise=drive_noise_std(noise))
    loop = make_closed_loop(config, twin=Twin(twin_config, model=model))
    for k, arm in enumerate(Arm):
        targets = (
            source(k)
            if source is not None
            else excitation_source(k, amplitude_rad, robot, excitation_seed)
        )
        loop.stream_targets(arm, targets, 100.0)
    # a loop whose transport delays act (ClosedLoop.delayed) is recorded as the host sees
    # its bus; one without them is restamped afterwards (.log only; see the module docstring)
    restamp = any(transport.values()) and not getattr(loop, "delayed", None)
    if restamp and path.suffix.lower() != ".log":
        loop.close()
        raise ValueError(f"hidden delays need a .log recording here, got {path.suffix}")
    recorder = TrafficRecorder(loop, path)
    try:
        loop.run_for(seconds)
    finally:
        recorder.close()
        loop.close()
    if restamp:
        _shift_log(path, hidden, robot)
    return path

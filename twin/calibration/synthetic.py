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
from rob_twin.models.names import FEEDBACK_IDS, Arm
from rob_twin.models.robot import AMBER_DRIVES, Robot, robot_of
from rob_twin.planners.certificate_geometry import model_hash
from rob_twin.twin.bus.recording import TrafficRecorder, bus_number, sidecar_path
from rob_twin.twin.calibration.calibration_file import Calibration
from rob_twin.twin.calibration.parameters import apply_to_model, delays, drive_configs
from rob_twin.twin.drives.amber_robot import robot_channels
from rob_twin.twin.sim.loops import loop_config, make_closed_loop
from rob_twin.twin.sim.twin import Twin, TwinConfig

EXCITATION_HZ = (0.23, 0.61, 1.37)  # three incommensurate tones per joint


def excitation_source(
    k: int, amplitude_rad: float = 0.2, robot: Robot | None = None
) -> Callable[[float], np.ndarray]:
    """Arm ``k``'s joint targets [rad] around ``robot``'s home (None: the default robot):
    three sines per joint with phases that differ by joint and arm, faded in over the first
    second so the motion starts at rest, and held inside the arm's joint ranges (a joint
    whose home is at a limit, ROB's J7 at -1.571 rad, moves on one side of it; a target
    beyond a range would be refused whole, and an arm whose every target is refused does
    not move: ROB's left arm did not, its J7 below its limit 95 % of the time)."""
    robot = robot_of(robot)
    arm = list(Arm)[k]
    home = robot.home(arm)
    lower, upper = (np.array(b, float) for b in zip(*robot.joint_ranges(arm), strict=True))
    joints = np.arange(len(home))
    phases = [0.9 * joints + 1.7 * k + 0.5 * i for i in range(len(EXCITATION_HZ))]
    weights = (0.6, 0.3, 0.15)

    def source(t: float) -> np.ndarray:
        fade = min(1.0, t) ** 2
        wave = sum(
            w * (np.sin(2 * math.pi * f * t + p) - np.sin(p))
            for w, f, p in zip(weights, EXCITATION_HZ, phases, strict=True)
        )
        return np.clip(home + fade * amplitude_rad * wave, lower, upper)

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


def record_hidden(
    path: Path | str,
    hidden: dict[str, float],
    seconds: float,
    seed: int = 0,
    feedback_rate_hz: float = 100.0,
    amplitude_rad: float = 0.2,
    source: Callable[[int], Callable[[float], np.ndarray]] | None = None,
    robot: Robot | None = None,
) -> Path:
    """Record ``seconds`` [s] of both arms' excitation on ``robot``'s twin (None: the default
    robot) with ``hidden`` parameters into ``path`` (any recording format; ``.log`` only
    with hidden delays on a loop without transport delays of its own);
    ``source(k)`` gives arm k's targets [rad] over time instead (default:
    ``excitation_source``)."""
    robot = robot_of(robot)
    robot.require(AMBER_DRIVES, "a synthetic recording (hidden Amber drive parameters)")
    path = Path(path)
    model = apply_to_model(robot.model(), hidden)
    transport = {n: v for n, v in hidden.items() if n.endswith("_delay_s")}
    config = loop_config(
        robot,
        "a synthetic recording",
        seed=seed,
        feedback_rate_hz=feedback_rate_hz,
        drives=drive_configs(hidden, robot),
        # the loop takes transport delays from a calibration (its model and drives are
        # given here): one holding only the hidden delays
        calibration=Calibration("hidden transport delays", transport, model_hash(robot.model()))
        if any(transport.values())
        else None,
    )
    loop = make_closed_loop(config, twin=Twin(TwinConfig(seed=seed), model=model))
    for k, arm in enumerate(Arm):
        targets = source(k) if source is not None else excitation_source(k, amplitude_rad, robot)
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

"""Headless scenarios: duration, seed, initial state, scripted arm targets, faults, cameras.

A scenario file is UTF-8 JSON (schema: ``experiments/scenarios/scenario.schema.json``)::

    {"$schema": "./scenario.schema.json",
     "name": "wave", "duration": 4.0, "seed": 1,
     "initial": {"torso/yaw": 0.2},
     "keyframes": [{"t": 0.0, "arm": "right", "q": [7 radians]}, ...],
     "faults": [{"kind": "drop", "arm": "left", "at": 1.0, "probability": 0.2}],
     "plans": [{"t": 2.0, "goals": {"right": [7 rad], "left": [7 rad]}}],
     "cameras": ["overview"], "fps": 30, "frame_size": [640, 480], "robot": "rob",
     "base": [{"t": 0.5, "v": -0.3}, {"t": 3.0, "v": 0.0, "omega": 0.0}],
     "quality": "auto",
     "expect": {"refused_targets": {"left": ["closed"]}, "failed_plans": 0,
                "owner_faults": {"left": ["partial_output"]}}}

It is validated as a whole before anything runs (``rob_twin.twin.scenario.schema``): unknown
keys, wrong types, non-finite numbers and joint values outside the model's limits are
refused with the field path, the value and the valid range. ``name`` (default: the
file's stem) is the run folder's name under ``--out``.

Every run goes through the whole pipeline (``rob_twin.twin.sim.closed_loop``): between keyframes
of one arm a smooth (cosine) blend is streamed at ``target_rate_hz`` as targets to that arm's
owner, which plans within its limits and publishes over CAN to the motor bank. Fault kinds are
those of ``rob_twin.twin.sim.faults``. ``plans`` are ArmGroup plans executed in sync through the
owners (``rob_twin.twin.scenario.plan_steps``); an arm is driven by keyframes or by plans, not
both. ``base`` steps drive ROB's tracked base (``rob_twin.twin.scenario.base_steps``: forward
speed ``v`` [m/s] and yaw rate ``omega`` [rad/s] from time ``t``; both lidars run and the merged
scans are written next to the summary). ``robot`` picks the robot and its drive family:
``"rob"`` (default, Amber position drives) or ``"openarm"`` (Damiao MIT drives with gravity
compensation, ``rob_twin.twin.sim.damiao_loop``). ``quality`` is the video's render quality
(``rob_twin.twin.render.quality``: ``fast``, ``full``, or ``auto``, fast on a software GL
renderer).
The run counts the targets each owner refused (per reason), the plan steps that failed and
the owner faults that latched; ``expect`` declares which of those the scenario means to
provoke (``rob_twin.twin.scenario.verdict``). Recorded output lands in ``out/<name>/``.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np
from rob_twin.models.loading import joint_qpos_index
from rob_twin.models.names import DEFAULT_ROBOT, Arm
from rob_twin.models.robot import (
    CAN_DRIVES,
    CARTESIAN_KINEMATICS,
    SEVEN_JOINT_ARMS,
    TRACKED_BASE,
    Robot,
    robot_of,
)
from rob_twin.twin.bus.recording import TrafficRecorder
from rob_twin.twin.bus.timing import BusTimingConfig
from rob_twin.twin.calibration.apply import check_robot
from rob_twin.twin.render.video import RenderUnavailable, VideoRecorder
from rob_twin.twin.scenario.base_steps import BaseScript, BaseStep
from rob_twin.twin.scenario.held_steps import (
    CarryStep,
    GraspStep,
    HeldScript,
    HeldSpec,
    held_spec_of,
)
from rob_twin.twin.scenario.plan_steps import PlanRunner, PlanStep, plan_step_of
from rob_twin.twin.scenario.schema import (
    LOG_RATE_HZ,
    NAME_PATTERN,
    Expect,
    ScenarioError,
    ScenarioFile,
    short_repr,
    validate_scenario,
)
from rob_twin.twin.sim.closed_loop import ClosedLoop
from rob_twin.twin.sim.faults import FaultSpec
from rob_twin.twin.sim.loops import loop_config, make_closed_loop
from rob_twin.twin.sim.twin import Twin, TwinConfig

MAX_FILE_BYTES = 64 * 2**20  # a scenario file larger than this is refused before it is read


@dataclass
class Keyframe:
    t: float
    arm: Arm
    q: np.ndarray


@dataclass
class Scenario:
    """A validated scenario (``from_dict``/``load`` check it with
    ``rob_twin.twin.scenario.schema``)."""

    name: str
    duration: float
    seed: int = 0
    initial: dict[str, float] = field(default_factory=dict)
    keyframes: list[Keyframe] = field(default_factory=list)
    cameras: list[str] = field(default_factory=list)
    fps: int = 30
    frame_size: tuple[int, int] = (640, 480)
    target_rate_hz: float = 100.0
    faults: list[FaultSpec] = field(default_factory=list)
    plans: list[PlanStep] = field(default_factory=list)
    expect: Expect = field(default_factory=Expect)
    robot: str = DEFAULT_ROBOT  # a shipped robot's name or a robot file's path
    base: list[BaseStep] = field(default_factory=list)  # tracked-base drive steps
    quality: str = "auto"
    held: HeldSpec | None = None  # the held box (held_steps)
    grasps: list[GraspStep] = field(default_factory=list)
    carries: list[CarryStep] = field(default_factory=list)

    @classmethod
    def from_dict(cls, raw: object, source: str = "scenario") -> Scenario:
        """Validate ``raw`` (decoded JSON) and build the scenario; ScenarioError lists
        every problem with its field path, the bad value and what is valid."""
        return cls.from_model(validate_scenario(raw, source))

    @classmethod
    def from_model(cls, m: ScenarioFile) -> Scenario:
        frames = [Keyframe(k.t, Arm(k.arm), np.array(k.q, float)) for k in m.keyframes]
        return cls(
            name=m.name,
            duration=m.duration,
            seed=m.seed,
            initial=dict(m.initial),
            keyframes=sorted(frames, key=lambda k: k.t),
            cameras=list(m.cameras),
            fps=m.fps,
            frame_size=(m.frame_size[0], m.frame_size[1]),
            target_rate_hz=m.target_rate_hz,
            faults=[FaultSpec.from_model(f) for f in m.faults],
            plans=[plan_step_of(p) for p in m.plans],
            expect=m.expect,
            robot=m.robot,
            quality=m.quality,
            base=sorted((BaseStep(b.t, b.v, b.omega) for b in m.base), key=lambda b: b.t),
            held=held_spec_of(m.held_object) if m.held_object is not None else None,
            grasps=[GraspStep(g.t, g.action, tuple(g.hands)) for g in m.grasps],
            carries=[CarryStep(c.t, tuple(c.translate), c.skew_ms) for c in m.carries],
        )

    @classmethod
    def load(cls, path: Path | str, robot: Robot | str | None = None) -> Scenario:
        """Read and validate a scenario file (UTF-8 JSON). A file without a ``name`` is
        named after itself (its stem, when that is a valid folder name). ``robot`` overrides
        the file's ``robot`` before validation (poses are checked against that robot)."""
        raw = read_scenario_json(path)
        p = Path(path)
        if isinstance(raw, dict) and "name" not in raw and _plain_name(p.stem):
            raw = {**raw, "name": p.stem}
        if robot is not None and isinstance(raw, dict):
            raw = {**raw, "robot": robot.spec if isinstance(robot, Robot) else robot}
        return cls.from_dict(raw, source=f"scenario file {str(path)!r}")


def _plain_name(text: str) -> bool:
    import re

    return re.fullmatch(NAME_PATTERN, text) is not None


class _DuplicateKey(Exception):
    def __init__(self, key: str, first: object, second: object):
        self.key, self.first, self.second = key, first, second


def _object_without_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    obj: dict = {}
    for key, value in pairs:
        if key in obj:
            raise _DuplicateKey(key, obj[key], value)
        obj[key] = value
    return obj


def read_scenario_json(path: Path | str) -> object:
    """The decoded JSON of a scenario file; ScenarioError if it cannot be read as such."""
    p, where = Path(path), f"scenario file {str(path)!r}"
    try:
        if p.is_dir():
            raise ScenarioError(f"{where} is a directory; give the path of a .json file")
        with p.open("rb") as f:  # bounded read: a pipe or /dev/zero cannot make it hang
            data = f.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise ScenarioError(f"{where} does not exist") from None
    except OSError as err:
        raise ScenarioError(f"{where} cannot be read: {err.strerror or err}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ScenarioError(
            f"{where} is larger than {MAX_FILE_BYTES} bytes, the most a scenario file may hold"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ScenarioError(
            f"{where} is not UTF-8 text (byte 0x{data[err.start]:02x} at offset "
            f"{err.start}); scenario files are UTF-8 JSON"
        ) from None
    try:
        return json.loads(text, object_pairs_hook=_object_without_duplicate_keys)
    except _DuplicateKey as err:
        raise ScenarioError(
            f"{where} has the key {err.key!r} twice in one object "
            f"(values {short_repr(err.first)} and {short_repr(err.second)}); "
            "JSON readers would silently keep one"
        ) from None
    except json.JSONDecodeError as err:
        raise ScenarioError(
            f"{where} is not valid JSON: {err.msg} at line {err.lineno} column {err.colno}"
        ) from None
    except RecursionError:
        raise ScenarioError(
            f"{where} is nested too deeply (more than about "
            f"{sys.getrecursionlimit()} levels) to be a scenario"
        ) from None


def blended_target(frames: list[Keyframe], t: float, start: np.ndarray) -> np.ndarray:
    """Servo target at time ``t`` [s]: cosine blend between the surrounding keyframes.

    The blend stays between its two keyframes joint by joint, rounding included, so a
    keyframe on a joint limit never yields a target a hair outside it."""
    prev_t, prev_q = 0.0, start
    for k in frames:
        if t < k.t:
            span = k.t - prev_t
            s = 1.0 if span <= 0 else (t - prev_t) / span
            w = 0.5 - 0.5 * math.cos(math.pi * s)
            return np.clip(
                prev_q + w * (k.q - prev_q), np.minimum(prev_q, k.q), np.maximum(prev_q, k.q)
            )
        prev_t, prev_q = k.t, k.q
    return prev_q


DEMO_REACH = np.array([0.25, 0.35, 0.0, -0.6, 0.0, 0.3, 0.0])  # from home [rad]
DEMO_WAVE = np.array([-0.5, -0.2, 0.6, -0.2, 0.6, -0.3, 0.8])  # from home [rad]
DEMO_BOUND_MARGIN_RAD = 0.05


def _demo_move(home, lo, hi, move: np.ndarray, scale: float) -> np.ndarray:
    """``home + move`` where every joint stays inside [lo, hi]; else each joint ``scale`` x
    the move's size toward its farther bound, kept ``DEMO_BOUND_MARGIN_RAD`` inside the range
    (``toward_far_bound``) [rad]."""
    from rob_twin.twin.rehearsal.targets import toward_far_bound

    if move.size == home.size and np.all((home + move >= lo) & (home + move <= hi)):
        return home + move
    lo, hi = lo + DEMO_BOUND_MARGIN_RAD, hi - DEMO_BOUND_MARGIN_RAD
    size = np.resize(move, home.size)
    return np.clip(home + scale * toward_far_bound(home, lo, hi, size), lo, hi)


def _demo_poses(robot: Robot, arm: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(home, reach, wave) of ``arm`` [rad]: the robot's home and the demo's two moves from it
    (``_demo_move``: as they are where the joint ranges allow; the wave at half size toward
    the farther bounds where they do not)."""
    home = robot.home(arm)
    lo, hi = np.array(robot.joint_ranges(arm)).T
    return home, _demo_move(home, lo, hi, DEMO_REACH, 1.0), _demo_move(home, lo, hi, DEMO_WAVE, 0.5)


DEMO_PLANNED_MARGIN = (1.15, 1.0)  # the planned demo runs (sum of its plans) x 1.15 + 1.0 s
DEMO_FIT_SCALES = (1.0, 0.75, 0.5, 0.25)  # a demo goal in collision is tried nearer home


def planned_demo(
    robot: Robot, moves: list[tuple[np.ndarray, np.ndarray]]
) -> tuple[list[tuple[np.ndarray, np.ndarray]], float]:
    """The planned demo's moves (right, left joint goals [rad]) fitted to ``robot``, and how
    long the run must last [s]. A goal pair closer than the planner's margin to a collision (a
    wave into the other arm on a robot whose arms face each other) is drawn toward home
    (``DEMO_FIT_SCALES`` of its excursion) until it is free; the moves are then planned one
    after another from home as the run will plan them (``plan_steps.planning_config``, seed
    0), their durations summed with ``DEMO_PLANNED_MARGIN`` (the run's plans start from the
    owners' commanded state). A move with no free scale, or that does not plan, is kept as it
    is and adds nothing to the duration: the run plans it and reports the failure."""
    from rob_twin.planners.group import ArmGroup
    from rob_twin.twin.scenario.plan_steps import planning_config

    config = planning_config()
    group = ArmGroup(robot.model(), robot.group_arms(), config)
    home = {arm: robot.home(arm) for arm in ("right", "left")}
    margin = config.collision.margin_m
    fitted = []
    for right, left in moves:
        for scale in DEMO_FIT_SCALES:
            goal = {
                arm: home[arm] + scale * (q - home[arm])
                for arm, q in (("right", right), ("left", left))
            }
            if group.clearance(goal).is_free(margin):
                right, left = goal["right"], goal["left"]
                break
        fitted.append((right, left))
    start, total = home, 0.0
    for right, left in fitted:
        goals = {"right": right, "left": left}
        result = group.plan(goals, seed=0, start=start)
        if result.ok:
            total += result.plan.duration_s
            start = goals
    scale, extra = DEMO_PLANNED_MARGIN
    return fitted, round(total * scale + extra, 1)


def demo_scenario(robot: Robot | str | None = None, planned: bool = False) -> Scenario:
    """The robot moves both arms: reach, wave, return home (ROB at the table: toward the
    can); validated like a scenario file. ``robot``: anything ``robot_of`` takes (None: the
    default robot). ``planned``: each move planned for both arms together by ArmGroup (arm
    against arm and world at every retimed sample; goals fitted by ``planned_demo``), as
    ``rob-twin demo`` runs it on a robot with no crossing pair; else keyframes, straight
    joint-space lines that on a robot whose arms face each other can run one arm's hand into
    the other's shoulder."""
    robot = robot_of(robot)
    poses = {arm: _demo_poses(robot, arm) for arm in ("right", "left")}
    moves = []  # (t, right pose, left pose): the arms mirror each other's reach and wave
    for t, k in ((1.5, 1), (3.0, 2), (4.5, 1), (6.0, 0)):
        right, left = poses["right"][k], poses["left"][{1: 2, 2: 1, 0: 0}[k]]
        moves.append((t, right, left))
    raw = {
        "name": "demo" if robot.spec == DEFAULT_ROBOT else f"demo_{robot.name}",
        "duration": 6.5,
        "seed": 0,
        "cameras": ["overview"],
        "fps": 30,
        "robot": robot.spec,
    }
    if planned:
        fitted, raw["duration"] = planned_demo(robot, [(r, lf) for _, r, lf in moves])
        raw["plans"] = [
            {"t": round(0.3 + 0.1 * i, 3), "goals": {"right": r.tolist(), "left": lf.tolist()}}
            for i, (r, lf) in enumerate(fitted)
        ]
    else:
        raw["keyframes"] = [
            {"t": t, "arm": arm, "q": q.tolist()}
            for arm, col in (("right", 1), ("left", 2))
            for t, *pair in moves
            for q in (pair[col - 1],)
        ]
    return Scenario.from_dict(raw, source="the demo scenario")


StopCheck = Callable[[], str | None]
"""Polled between video frames; returns why the run must stop (``"SIGINT"``), else None."""


@dataclass
class RunResult:
    """What a run did (simulated). ``status``: ``completed`` or ``interrupted`` (then
    ``stopped_by`` says why and every figure covers the part that ran);
    ``refused_targets``: per arm, refused target count per reason."""

    scenario: str
    simulated_s: float
    wall_s: float
    physics_wall_s: float
    render_wall_s: float
    frames: int
    video: str | None
    video_skipped_reason: str | None
    times: np.ndarray
    commanded: dict[str, np.ndarray]
    measured: dict[str, np.ndarray]
    pipeline: dict = field(default_factory=dict)
    plans: list[dict] = field(default_factory=list)
    status: str = "completed"
    stopped_by: str | None = None
    refused_targets: dict[str, dict[str, int]] = field(default_factory=dict)
    base: dict = field(default_factory=dict)
    bus: dict | None = None  # per-bus timing figures (None: bus timing off)
    bus_latencies_s: dict = field(default_factory=dict)  # per bus, raw latencies for the plot
    calibration: dict | str = "uncalibrated"  # the calibration's label (calibration_label)
    held: dict = field(default_factory=dict)  # the held box's figures and verdict (held_steps)
    robot: dict = field(default_factory=dict)  # Robot.identity() of the robot that ran


def scenario_robot(sc: Scenario) -> Robot:
    """The robot ``sc`` runs on, checked for what the scenario needs (owners, codecs and
    drives over CAN; seven-joint arms for the Amber codec; a tracked base for ``base``
    steps; Cartesian kinematics for carries); MissingCapabilityError (exit 2) before
    anything runs."""
    robot = robot_of(sc.robot)
    what = f"scenario {sc.name!r}"
    robot.require(CAN_DRIVES, f"{what} (it runs owners, codecs and drives over CAN)")
    if robot.family == "amber":
        robot.require(SEVEN_JOINT_ARMS, f"{what} (the Amber codec drives seven joints per arm)")
    if sc.base:
        robot.require(TRACKED_BASE, f"{what}'s base steps")
    if sc.carries:
        robot.require(CARTESIAN_KINEMATICS, f"{what}'s carries (lockstep Cartesian plans)")
    return robot


def scenario_loop(
    sc: Scenario,
    can_log_dir: Path | str | None = None,
    bus_timing: BusTimingConfig | None = None,
    calibration=None,
) -> ClosedLoop:
    """The closed loop of ``sc``: its seed, initial joint values and faults; with
    ``bus_timing`` every frame goes through a simulated CAN bus (``rob_twin.twin.bus.timing``);
    with ``calibration`` (``rob_twin.twin.calibration``) the model and drives take its
    parameters (ROB only: CalibrationError for the OpenArm-class robot)."""
    robot = scenario_robot(sc)
    check_robot(robot, calibration)
    if sc.held is not None and calibration is not None:
        raise ScenarioError(
            "held_object with a calibration: the held-box scene is built from the assumed "
            "model only; valid: run it without --calibration"
        )
    config = loop_config(
        robot,
        f"scenario {sc.name!r} (it runs owners, codecs and drives)",
        seed=sc.seed,
        faults=tuple(sc.faults),
        log_dir=can_log_dir,
        bus_timing=bus_timing,
        calibration=calibration,
    )
    if sc.held is not None:
        from rob_twin.twin.sim.held_object import held_scene

        model = held_scene(robot.spec, sc.held.box)
    elif calibration is not None:
        from rob_twin.twin.calibration.apply import calibrated_model

        model = calibrated_model(calibration, robot.model())
    else:
        model = robot.model()
    twin = Twin(TwinConfig(seed=sc.seed), model=model)
    for joint, value in sc.initial.items():
        twin.data.qpos[joint_qpos_index(twin.model, joint)] = value
    mujoco.mj_forward(twin.model, twin.data)
    return make_closed_loop(config, twin=twin)


def _open_recorder(
    sc: Scenario, twin: Twin, out_dir: Path | None, record: bool
) -> tuple[VideoRecorder | None, str | None]:
    if not record:
        return None, "recording disabled"
    if not sc.cameras:
        return None, "scenario lists no camera to record"
    if out_dir is None:
        return None, "no output folder to write the video to"
    try:
        return VideoRecorder(
            twin.model,
            sc.cameras[0],
            fps=sc.fps,
            width=sc.frame_size[0],
            height=sc.frame_size[1],
            path=out_dir / f"{sc.name}.mp4",
            quality=sc.quality,
        ), None
    except (RenderUnavailable, OSError, RuntimeError) as err:  # no GL, no ffmpeg, no disk
        return None, f"{type(err).__name__}: {err}"


def run_scenario(
    sc: Scenario,
    out_dir: Path | None = None,
    record: bool = True,
    progress: bool = True,
    can_log_dir: Path | str | None = None,
    should_stop: StopCheck | None = None,
    on_progress: Callable[[dict], None] | None = None,
    progress_every_s: float = 1.0,
    bus_timing: BusTimingConfig | None = None,
    traffic_path: Path | str | None = None,
    prelude: Callable[[VideoRecorder], None] | None = None,
    captions: Callable[[float, PlanRunner | None], list[str]] | None = None,
    on_planner: Callable[[PlanRunner], None] | None = None,
    calibration=None,
) -> RunResult:
    """Run ``sc`` headless through owners, codec, buses and drives.

    Its first camera is streamed, frame by frame as rendered, to ``out_dir/<name>.mp4``
    (fragmented MP4: a killed run leaves a playable file) when GL works; with
    ``can_log_dir`` every bus's traffic is written there (python-can canutils ``.log``
    files, simulated timestamps). ``should_stop`` is polled after every video frame's
    worth of physics: a reason ends the run early with status ``interrupted``.
    ``on_progress`` gets ``{"simulated_s", "frames"}`` every ``progress_every_s`` wall
    seconds. ``bus_timing``: play every frame through a simulated CAN bus (figures in
    ``RunResult.bus``); ``traffic_path``: record all bus traffic there
    (``rob_twin.twin.bus.recording``:
    .log, .asc, .blf, .mf4, with a sidecar for ``rob-twin replay``). ``prelude`` gets the
    recorder before the physics starts (to film what comes first); ``captions(now,
    planner)`` gives the lines burned into each frame (default: the scenario's own,
    ``rob_twin.twin.scenario.run_captions``); ``on_planner`` gets the scenario's
    PlanRunner once it exists; ``calibration``: the twin takes its model and drive
    parameters (``RunResult.calibration`` records its label, or "uncalibrated")."""
    loop = scenario_loop(sc, can_log_dir, bus_timing, calibration)
    traffic = TrafficRecorder(loop, traffic_path) if traffic_path is not None else None
    twin = loop.twin
    start = {arm: twin.arm_positions(arm) for arm in Arm}
    by_arm = {arm: [k for k in sc.keyframes if k.arm is arm] for arm in Arm}
    log_t: list[float] = []
    log_cmd: dict[Arm, list] = {arm: [] for arm in Arm}
    log_meas: dict[Arm, list] = {arm: [] for arm in Arm}

    for arm in Arm:
        if by_arm[arm]:
            loop.stream_targets(
                arm,
                lambda now, arm=arm: blended_target(by_arm[arm], now, start[arm]),
                sc.target_rate_hz,
            )

    def log(now: float) -> None:
        log_t.append(now)
        for arm in Arm:
            log_cmd[arm].append(loop.commanded(arm))
            log_meas[arm].append(twin.arm_positions(arm))

    twin.scheduler.add("log", LOG_RATE_HZ, log)
    held = HeldScript(loop, sc.held, sc.grasps, sc.carries) if sc.held is not None else None
    if captions is None and record:  # the scenario's own captions (run_captions)
        from rob_twin.twin.scenario.run_captions import scenario_captions

        captions = scenario_captions(
            sc,
            lambda: _latched_faults(loop),
            held.caption if held is not None else None,
            positions=twin.arm_positions,  # keyframes reached: measured, not time passed
            start_s=twin.time,  # OpenArm on a timed bus: its drives' bring-up came first
        )
    planner = None
    base = BaseScript(loop, sc.base) if sc.base else None
    recorder, reason = None, None
    steps_per_frame = max(1, round(1.0 / (sc.fps * twin.scheduler.dt)))
    total = int(round(sc.duration / twin.scheduler.dt))
    t0 = last_report = time.perf_counter()
    physics_s = render_s = 0.0
    done, stopped_by = 0, None
    try:
        planner = PlanRunner(loop, sc.plans) if sc.plans else None
        if planner is not None and on_planner is not None:
            on_planner(planner)
        recorder, reason = _open_recorder(sc, twin, out_dir, record)
        if recorder is not None and prelude is not None:
            t2 = time.perf_counter()
            prelude(recorder)
            render_s += time.perf_counter() - t2
        while done < total:
            if should_stop is not None and (stopped_by := should_stop()) is not None:
                break
            n = min(steps_per_frame, total - done)
            t1 = time.perf_counter()
            twin.step(n)
            physics_s += time.perf_counter() - t1
            done += n
            if recorder is not None:
                t2 = time.perf_counter()
                try:
                    recorder.capture(twin.data, captions(twin.time, planner) if captions else None)
                except OSError as err:  # the encoder died: keep simulating, say why
                    reason = f"video encoder failed after {recorder.frames} frames: {err}"
                    recorder.close()
                    recorder = None
                render_s += time.perf_counter() - t2
            now = time.perf_counter()
            if on_progress is not None and now - last_report >= progress_every_s:
                last_report = now
                on_progress(
                    {
                        "simulated_s": round(done * twin.scheduler.dt, 6),
                        "frames": recorder.frames if recorder is not None else 0,
                    }
                )
            if progress and (done % (steps_per_frame * 30) == 0 or done == total):
                print(
                    f"\r[{sc.name}] {done * twin.scheduler.dt:5.2f}/{sc.duration:.2f} s simulated",
                    end="",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        if progress:
            print(file=sys.stderr)
        frames = recorder.frames if recorder is not None else 0
        video = str(recorder.path) if recorder is not None and recorder.frames else None
        if recorder is not None:
            recorder.close()
        if planner is not None:
            planner.close("the run was interrupted" if stopped_by else "the scenario ended")
        pipeline = _pipeline_figures(loop)
        bus = loop.bus_report()
        latencies = loop.bus_timing.latencies() if loop.bus_timing is not None else {}
        if traffic is not None:
            traffic.close()
        loop.close()
    return RunResult(
        scenario=sc.name,
        simulated_s=done * twin.scheduler.dt,
        wall_s=time.perf_counter() - t0,
        physics_wall_s=physics_s,
        render_wall_s=render_s,
        frames=frames,
        video=video,
        video_skipped_reason=reason,
        times=np.array(log_t),
        commanded={
            a.value: np.array(v).reshape(-1, loop.robot.joint_count(a)) for a, v in log_cmd.items()
        },
        measured={
            a.value: np.array(v).reshape(-1, loop.robot.joint_count(a)) for a, v in log_meas.items()
        },
        pipeline=pipeline,
        plans=planner.results if planner is not None else [],
        status="completed" if stopped_by is None else "interrupted",
        stopped_by=stopped_by,
        refused_targets={a.value: dict(sorted(c.items())) for a, c in loop.refused.items()},
        base=base.summary(out_dir) if base is not None else {},
        bus=bus,
        bus_latencies_s=latencies,
        calibration=calibration.label() if calibration is not None else "uncalibrated",
        held=held.summary(out_dir) if held is not None else {},
        robot=loop.robot.identity(),
    )


def _latched_faults(loop: ClosedLoop) -> dict[str, str]:
    """{arm: latched owner fault} of the arms whose owner has latched one."""
    return {
        arm.value: drv.owner.fault.value
        for arm, drv in loop.drivers.items()
        if drv.owner.fault is not None
    }


def _pipeline_figures(loop: ClosedLoop) -> dict:
    """Per arm: what the owner and the bus did during the run (simulated)."""
    out = {}
    for arm, drv in loop.drivers.items():
        o, t = drv.owner, drv.transport.counters
        ad = loop.bank.drives_of(arm)
        out[arm.value] = {
            "owner_mode": o.mode.value,
            "owner_fault": o.fault.value if o.fault else None,
            "fault_reason": o.fault_reason,
            "faults_latched": [kind.value for kind, _ in o.stats.faults],
            "samples_published": o.stats.published,
            "plans": o.stats.plans,
            "moving_retargets": o.stats.moving_retargets,
            "frames_sent": t.frames_sent,
            "feedback_frames_received": t.feedback_frames,
            "drive_command_frames": ad.counters.command_frames,
            "bus": loop.channels[arm],
        }
    return out

"""Headless scenarios: duration, seed, initial state, scripted arm targets, faults, cameras.

A scenario file is JSON::

    {"name": "wave", "duration": 4.0, "seed": 1,
     "initial": {"torso/yaw": 0.2},
     "keyframes": [{"t": 0.0, "arm": "right", "q": [7 radians]}, ...],
     "faults": [{"kind": "drop", "arm": "left", "at": 1.0, "probability": 0.2}],
     "plans": [{"t": 2.0, "goals": {"right": [7 rad], "left": [7 rad]}}],
     "cameras": ["overview"], "fps": 30}

Every run goes through the whole pipeline (``twin.closed_loop``): between keyframes of
one arm a smooth (cosine) blend is streamed at ``target_rate_hz`` as targets to that
arm's owner, which plans within its limits and publishes over CAN to the motor bank.
Fault kinds are those of ``twin.faults``. ``plans`` are ArmGroup plans executed in sync
through the owners (``twin.scenario_plans``); an arm is driven by keyframes or by plans,
not both. Recorded output lands in ``out/<name>/``.
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from controllers.errors import RobTwinError
from controllers.names import Arm
from models import dimensions as D
from models.loading import joint_qpos_index

from .closed_loop import ClosedLoop, ClosedLoopConfig
from .faults import FaultSpec, FaultSpecError
from .scenario_plans import PlanRunner, PlanStep
from .twin import Twin, TwinConfig
from .video import RenderUnavailable, VideoRecorder


class ScenarioError(RobTwinError, ValueError):
    """A malformed scenario file; the message names the field and what is valid."""


@dataclass
class Keyframe:
    t: float
    arm: Arm
    q: np.ndarray


@dataclass
class Scenario:
    name: str
    duration: float
    seed: int = 0
    initial: dict[str, float] = field(default_factory=dict)
    keyframes: list[Keyframe] = field(default_factory=list)
    cameras: list[str] = field(default_factory=list)
    fps: int = 30
    target_rate_hz: float = 100.0
    faults: list[FaultSpec] = field(default_factory=list)
    plans: list[PlanStep] = field(default_factory=list)

    @classmethod
    def from_dict(cls, raw: dict) -> Scenario:
        try:
            duration = float(raw["duration"])
        except (KeyError, TypeError, ValueError):
            raise ScenarioError(f"'duration' must be a number of seconds > 0, got {raw.get('duration')!r}") from None
        if not (duration > 0 and math.isfinite(duration)):
            raise ScenarioError(f"'duration' must be > 0 s, got {duration!r}")
        frames = []
        for i, k in enumerate(raw.get("keyframes", [])):
            q = np.asarray(k.get("q", []), float)
            if q.shape != (7,) or not np.all(np.isfinite(q)):
                raise ScenarioError(f"keyframes[{i}].q must be 7 finite radians, got {k.get('q')!r}")
            frames.append(Keyframe(float(k["t"]), Arm.parse(k["arm"]), q))
        return cls(
            name=str(raw.get("name", "scenario")),
            duration=duration,
            seed=int(raw.get("seed", 0)),
            initial={str(k): float(v) for k, v in raw.get("initial", {}).items()},
            keyframes=sorted(frames, key=lambda k: k.t),
            cameras=list(raw.get("cameras", [])),
            fps=int(raw.get("fps", 30)),
            target_rate_hz=float(raw.get("target_rate_hz", 100.0)),
            faults=_faults(raw.get("faults", [])),
            plans=_plans(raw.get("plans", []), {k.arm for k in frames}),
        )

    @classmethod
    def load(cls, path: Path | str) -> Scenario:
        try:
            raw = json.loads(Path(path).read_text())
        except FileNotFoundError:
            raise ScenarioError(f"scenario file {str(path)!r} does not exist") from None
        except json.JSONDecodeError as err:
            raise ScenarioError(f"scenario file {str(path)!r} is not valid JSON: {err}") from None
        return cls.from_dict(raw)


def _faults(raw) -> list[FaultSpec]:
    if not isinstance(raw, list):
        raise ScenarioError(f"'faults' must be a list of fault objects, got {raw!r}")
    try:
        return [FaultSpec.from_dict(f) for f in raw]
    except (FaultSpecError, AttributeError, TypeError) as err:
        raise ScenarioError(f"'faults': {err}") from None


def _plans(raw, keyframed: set[Arm]) -> list[PlanStep]:
    if not isinstance(raw, list):
        raise ScenarioError(f"'plans' must be a list of plan steps, got {raw!r}")
    steps = []
    for i, p in enumerate(raw):
        try:
            t = float(p["t"])
            goals = {Arm.parse(a): np.asarray(q, float) for a, q in dict(p["goals"]).items()}
            seed = int(p.get("seed", 0))
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ScenarioError(
                f"plans[{i}] must be {{'t': s, 'goals': {{arm: 7 radians}}, 'seed': int}}, got {p!r}"
            ) from None
        if not (math.isfinite(t) and t >= 0) or not goals:
            raise ScenarioError(f"plans[{i}] needs a time >= 0 s and at least one goal, got {p!r}")
        for arm, q in goals.items():
            if q.shape != (7,) or not np.all(np.isfinite(q)):
                raise ScenarioError(f"plans[{i}].goals.{arm.value} must be 7 finite radians, got {q!r}")
            if arm in keyframed:
                raise ScenarioError(
                    f"plans[{i}]: the {arm.value} arm also has keyframes; an arm follows one or the other")
        steps.append(PlanStep(t, goals, seed))
    return steps


def blended_target(frames: list[Keyframe], t: float, start: np.ndarray) -> np.ndarray:
    """Servo target at time ``t`` [s]: cosine blend between the surrounding keyframes."""
    prev_t, prev_q = 0.0, start
    for k in frames:
        if t < k.t:
            span = k.t - prev_t
            s = 1.0 if span <= 0 else (t - prev_t) / span
            w = 0.5 - 0.5 * math.cos(math.pi * s)
            return (1 - w) * prev_q + w * k.q
        prev_t, prev_q = k.t, k.q
    return prev_q


def demo_scenario() -> Scenario:
    """ROB at the table moves both arms: reach toward the can, wave, return home."""
    home = np.array(D.HOME_ARM_POSE)
    reach = home + np.array([0.25, 0.35, 0.0, -0.6, 0.0, 0.3, 0.0])
    wave = home + np.array([-0.5, -0.2, 0.6, -0.2, 0.6, -0.3, 0.8])
    frames = []
    for arm, a, b in ((Arm.RIGHT, reach, wave), (Arm.LEFT, wave, reach)):
        frames += [Keyframe(1.5, arm, a), Keyframe(3.0, arm, b), Keyframe(4.5, arm, a), Keyframe(6.0, arm, home)]
    return Scenario("demo", duration=6.5, seed=0, keyframes=frames, cameras=["overview"], fps=30)


@dataclass
class RunResult:
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


def scenario_loop(sc: Scenario, can_log_dir: Path | str | None = None) -> ClosedLoop:
    """The closed loop of ``sc``: its seed, initial joint values and faults."""
    twin = Twin(TwinConfig(seed=sc.seed))
    for joint, value in sc.initial.items():
        twin.data.qpos[joint_qpos_index(twin.model, joint)] = value
    mujoco.mj_forward(twin.model, twin.data)
    return ClosedLoop(ClosedLoopConfig(seed=sc.seed, faults=tuple(sc.faults), log_dir=can_log_dir),
                      twin=twin)


def run_scenario(sc: Scenario, out_dir: Path | None = None, record: bool = True, progress: bool = True,
                 can_log_dir: Path | str | None = None) -> RunResult:
    """Run ``sc`` headless through owners, codec, buses and drives; record its first camera
    to ``out_dir/<name>.mp4`` when GL works; with ``can_log_dir`` write every bus's traffic
    there (python-can canutils ``.log`` files, simulated timestamps)."""
    loop = scenario_loop(sc, can_log_dir)
    twin = loop.twin
    start = {arm: twin.arm_positions(arm) for arm in Arm}
    by_arm = {arm: [k for k in sc.keyframes if k.arm is arm] for arm in Arm}
    log_t: list[float] = []
    log_cmd: dict[Arm, list] = {arm: [] for arm in Arm}
    log_meas: dict[Arm, list] = {arm: [] for arm in Arm}

    for arm in Arm:
        if by_arm[arm]:
            loop.stream_targets(arm, lambda now, arm=arm: blended_target(by_arm[arm], now, start[arm]),
                                sc.target_rate_hz)

    def log(now: float) -> None:
        log_t.append(now)
        for arm in Arm:
            log_cmd[arm].append(loop.commanded(arm))
            log_meas[arm].append(twin.arm_positions(arm))

    twin.scheduler.add("log", 50.0, log)
    planner = PlanRunner(loop, sc.plans) if sc.plans else None

    recorder, reason = None, None
    if record and sc.cameras:
        try:
            recorder = VideoRecorder(twin.model, sc.cameras[0], fps=sc.fps)
        except RenderUnavailable as err:
            reason = str(err)
    elif record:
        reason = "scenario lists no camera to record"
    else:
        reason = "recording disabled"

    steps_per_frame = max(1, round(1.0 / (sc.fps * twin.scheduler.dt)))
    total = int(round(sc.duration / twin.scheduler.dt))
    t0 = time.perf_counter()
    physics_s = render_s = 0.0
    done = 0
    while done < total:
        n = min(steps_per_frame, total - done)
        t1 = time.perf_counter()
        twin.step(n)
        physics_s += time.perf_counter() - t1
        done += n
        if recorder is not None:
            t2 = time.perf_counter()
            recorder.capture(twin.data)
            render_s += time.perf_counter() - t2
        if progress and (done % (steps_per_frame * 30) == 0 or done == total):
            print(f"\r[{sc.name}] {done * twin.scheduler.dt:5.2f}/{sc.duration:.2f} s simulated", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    video = None
    if recorder is not None:
        if out_dir is not None:
            video = str(recorder.write(out_dir / f"{sc.name}.mp4"))
        recorder.close()
    if planner is not None:
        planner.close()
    pipeline = _pipeline_figures(loop)
    loop.close()
    return RunResult(
        scenario=sc.name,
        simulated_s=total * twin.scheduler.dt,
        wall_s=time.perf_counter() - t0,
        physics_wall_s=physics_s,
        render_wall_s=render_s,
        frames=len(recorder.frames) if recorder is not None else 0,
        video=video,
        video_skipped_reason=reason,
        times=np.array(log_t),
        commanded={a.value: np.array(v) for a, v in log_cmd.items()},
        measured={a.value: np.array(v) for a, v in log_meas.items()},
        pipeline=pipeline,
        plans=planner.results if planner is not None else [],
    )


def _pipeline_figures(loop: ClosedLoop) -> dict:
    """Per arm: what the owner and the bus did during the run (simulated)."""
    out = {}
    for arm, drv in loop.drivers.items():
        o, t = drv.owner, drv.transport.counters
        ad = loop.bank.drives_of(arm)
        out[arm.value] = {
            "owner_mode": o.mode.value, "owner_fault": o.fault.value if o.fault else None,
            "fault_reason": o.fault_reason, "samples_published": o.stats.published,
            "plans": o.stats.plans, "moving_retargets": o.stats.moving_retargets,
            "frames_sent": t.frames_sent, "feedback_frames_received": t.feedback_frames,
            "drive_command_frames": ad.counters.command_frames, "bus": loop.channels[arm],
        }
    return out

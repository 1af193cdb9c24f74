"""The demo: a robot plans both arms together through its crossing pair and executes in sync.

The crossing pair (``crossing_pair``): the robot file's ``[demo]`` table (OpenArm's, found by
``python -m rob_twin.experiments.crossing_goals``), else ROB's (``rob_twin.models.poses``,
whose start is the model's ``crossing_start`` keyframe); a robot with neither waves instead
(``rob_twin.twin.scenario.run.demo_scenario``).

First, for contrast, the two arms planned *separately* (each alone, the other arm ignored)
are replayed together from one start stamp: a kinematic replay of the plans, rendered,
not executed, with the frames where the arms touch marked in red. Then the same goals
are planned by ArmGroup (both arms checked against each other at every sample) and the
plan runs through the owners, the codec, the simulated buses and drives, in sync. The
captions say what is happening, the plan's clearance and the measured start skew; the
summary gains the contrast figures (separate: colliding frames, group: colliding
samples, both judged by coal on a fresh model copy). Simulated: ``hardware_io: false``.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
from rob_twin.models import poses
from rob_twin.models.loading import CROSSING_START_KEY, apply_keyframe, arm_qpos_indices
from rob_twin.models.names import DEFAULT_ROBOT, group_arms
from rob_twin.models.robot import Robot, robot_of
from rob_twin.planners.geom_pairs import GeomPairTable
from rob_twin.planners.oracle import CoalOracle, judge_states
from rob_twin.planners.separate import separate_plans, sync_states
from rob_twin.twin.render.framing import AUTO_CAMERA
from rob_twin.twin.render.highlight import colliding_geoms
from rob_twin.twin.render.video import VideoRecorder
from rob_twin.twin.scenario.plan_steps import PlanRunner
from rob_twin.twin.scenario.run import Scenario

ARMS = group_arms()
GROUP_MARGIN_M = 0.005  # the planner's margin; a group sample closer than this counts
JUDGE_TOLERANCE_M = 1e-4
PLAN_AT_S = 0.3  # simulated time [s] the group plan starts at
TAIL_S = 0.6  # simulated time [s] filmed after the plan's end
TITLE_FRAMES = 12  # frames holding the start pose before the separate replay
DEMO_FRAME_SIZE = (1280, 720)  # [px] width, height: the flagship video, 16:9
DEMO_FPS = 30  # [frames/s]


ArmPoses = dict[str, tuple[float, ...]]  # {"right": q, "left": q} [rad]


def crossing_pair(robot: Robot | str | None = None) -> tuple[ArmPoses, ArmPoses] | None:
    """(start, goals) of ``robot``'s crossing pair [rad]: its robot file's ``[demo]`` table;
    else, where the model has the ``crossing_start`` keyframe, ROB's pair
    (``rob_twin.models.poses``, which the keyframe is written from); else None (no crossing
    demo: the robot waves)."""
    robot = robot_of(robot)
    demo = robot.description.file.demo
    if demo is not None:
        return (
            {a: tuple(q) for a, q in demo.crossing_start_rad.items()},
            {a: tuple(q) for a, q in demo.crossing_goals_rad.items()},
        )
    if robot.has_keyframe(CROSSING_START_KEY):
        return poses.CROSSING_START, poses.CROSSING_GOALS
    return None


def _pair(robot: Robot) -> tuple[ArmPoses, ArmPoses]:
    pair = crossing_pair(robot)
    if pair is None:
        raise ValueError(
            f"robot {robot.name!r} has no crossing pair (valid: a robot file with a [demo] "
            "table, or a model with the 'crossing_start' keyframe)"
        )
    return pair


def pair_start_qpos(model: mujoco.MjModel, start: ArmPoses) -> np.ndarray:
    """Full qpos of ``model``: ``qpos0`` with each arm at ``start[arm]`` [rad] (where the
    separate replay starts; the twin starts the same way, from the scenario's ``initial``)."""
    data = mujoco.MjData(model)
    for arm, q in start.items():
        data.qpos[arm_qpos_indices(model, arm)] = q
    return data.qpos.copy()


def demo_camera(robot: Robot | str | None = None) -> str:
    """The camera the demo films from: ``auto`` for every robot (``rob_twin.twin.render.framing``:
    framed from the arms' geometry, from the robot's front, with an inset from above that
    shows which arm passes in front). A named camera of the model (ROB's ``front``) looked
    over the table, whose near corner filled the foreground."""
    return AUTO_CAMERA


def crossing_demo_scenario(duration_s: float = 4.6, robot: Robot | str | None = None) -> Scenario:
    """The robot at its crossing start; at ``PLAN_AT_S`` both arms planned together to the
    crossing goals (``crossing_pair``; ROB's seeded plan lasts 2.66 s simulated and
    OpenArm's 3.6 s, from ``rob-twin demo --json``: ``crossing.group_duration_s``, so 4.6 s
    shows its end); filmed by ``demo_camera`` (the hands cross in front of the chest) at
    ``DEMO_FRAME_SIZE`` and ``DEMO_FPS``, render quality picked for the machine. ``robot``: a
    robot with a crossing pair (None: the default robot)."""
    robot = robot_of(robot)
    start, goals = _pair(robot)
    initial = {f"{arm}/j{i + 1}": q for arm, pose in start.items() for i, q in enumerate(pose)}
    return Scenario.from_dict(
        {
            "name": "demo" if robot.spec == DEFAULT_ROBOT else f"demo_{robot.name}",
            "robot": robot.spec,
            "duration": duration_s,
            "seed": 0,
            "initial": initial,
            "plans": [
                {
                    "t": PLAN_AT_S,
                    "goals": {a: list(q) for a, q in goals.items()},
                    "seed": 0,
                }
            ],
            "cameras": [demo_camera(robot)],
            "fps": DEMO_FPS,
            "frame_size": list(DEMO_FRAME_SIZE),
            "quality": "auto",
        },
        source="the demo scenario",
    )


def judge(
    states: np.ndarray, threshold_m: float, robot: Robot | str | None = None
) -> list[tuple[int, str, float]]:
    """(index, pair, distance [m]) of the states closer than ``threshold_m``, by coal on
    a fresh copy of ``robot``'s model (nothing shared with the planner's models)."""
    m = robot_of(robot).model()
    return judge_states(CoalOracle(m), GeomPairTable(m, ARMS), states, threshold_m)


@dataclass
class Contrast:
    """The separately planned motion run in sync: its states (125 Hz), the frames in
    contact (coal distance < 0) and the closest pair's distance [m] there."""

    states: np.ndarray
    rate_hz: float
    contact: dict[int, float]
    robot: Robot | None = None  # whose model the states are of (None: the default robot)

    @property
    def colliding_frames(self) -> int:
        return len(self.contact)


def separate_contrast(seed: int = 0, robot: Robot | str | None = None) -> Contrast:
    """Each arm of ``robot`` planned alone from its crossing start to its crossing goals
    (``crossing_pair``), then replayed together and judged (None: the default robot)."""
    robot = robot_of(robot)
    start_q, goals_q = _pair(robot)
    model = robot.model()
    if robot.description.file.demo is None:  # ROB: the keyframe written from its start
        data = mujoco.MjData(model)
        apply_keyframe(model, data, CROSSING_START_KEY)
        start = data.qpos.copy()
    else:
        start = pair_start_qpos(model, start_q)
    goals = {a: np.array(q) for a, q in goals_q.items()}
    plans = separate_plans(model, start, goals, seed)
    states = sync_states(model, start, plans)
    hits = judge(states, 0.0, robot)
    return Contrast(
        states=states,
        rate_hz=float(next(iter(plans.values())).rate_hz),
        contact={i: d for i, _, d in hits},
        robot=robot,
    )


def film_contrast(recorder: VideoRecorder, contrast: Contrast) -> int:
    """Replay ``contrast`` kinematically at the recorder's frame rate (a scratch MjData:
    the twin's state is untouched), captioned, the overlapping links drawn red; returns the
    frames filmed."""
    model = recorder.model
    data = mujoco.MjData(model)
    recorder.frame_over(contrast.states)  # one still camera for the replay and the group run
    every = max(1, round(contrast.rate_hz / recorder.fps))
    n, total = 0, len(contrast.states)
    head = "1/2  Each arm planned ALONE, the other arm ignored"
    tally = f"replayed together: {contrast.colliding_frames} of {total} samples in contact"
    data.qpos[:] = contrast.states[0]
    mujoco.mj_forward(model, data)
    for _ in range(TITLE_FRAMES):
        recorder.capture(data, [head, tally, "(a replay of the two plans, not sent to the owners)"])
        n += 1
    for i in range(0, total, every):
        data.qpos[:] = contrast.states[i]
        mujoco.mj_forward(model, data)
        hit = [j for j in range(i, min(i + every, total)) if j in contrast.contact]
        third = (
            f"!CONTACT: arms overlap by {-1000 * contrast.contact[hit[0]]:.1f} mm"
            if hit
            else "no contact in this frame"
        )
        red = colliding_geoms(model, data) if hit else frozenset()  # the links in contact
        recorder.capture(
            data, [head, f"{tally}   t = {i / contrast.rate_hz:4.2f} s", third], highlight=red
        )
        n += 1
    return n


def group_captions(
    now: float, planner: PlanRunner | None, contrast: Contrast | None = None
) -> list[str]:
    """The captions of the executed group plan at simulated time ``now`` [s]; once it
    completed, ``contrast``'s tally is recalled beside it."""
    head = "2/2  ArmGroup: both arms planned TOGETHER, run in sync"
    if planner is None:
        return [head]
    st = planner.status(now)
    last = st.get("last")
    if st["state"] == "executing":
        return [
            head,
            f"through owners, CAN and drives: {100 * st['progress']:3.0f} %   t = {now:4.2f} s",
            f"plan clearance {1000 * (st['clearance_m'] or 0):.1f} mm (margin "
            f"{1000 * GROUP_MARGIN_M:.0f} mm), start skew measured at the end",
        ]
    if last is not None:
        if last.get("outcome") == "completed":
            return [
                head,
                f"{last.get('outcome')}: plan clearance never below "
                f"{1000 * last['plan_min_clearance_m']:.1f} mm",
                f"start skew {1000 * (last.get('start_skew_s') or 0):.2f} ms, max deviation "
                f"{last.get('max_deviation_rad', 0):.4f} rad",
            ] + (
                [
                    f"(planned alone: {contrast.colliding_frames} of {len(contrast.states)} "
                    "samples in contact)"
                ]
                if contrast is not None
                else []
            )
        return [
            head,
            f"!plan step: {last.get('status')} {last.get('outcome', '')}: {last.get('reason', '')}"[
                :90
            ],
        ]
    return [
        head,
        f"planning at t = {PLAN_AT_S:.1f} s   t = {now:4.2f} s",
        "every 125 Hz sample checked arm against arm and world",
    ]


def demo_figures(contrast: Contrast, planner: PlanRunner | None) -> dict:
    """The summary's ``crossing`` section: the separate plans' colliding frames and the
    executed group plan's colliding samples (coal, fresh model copy)."""
    out: dict = {
        "separate_colliding_frames": contrast.colliding_frames,
        "separate_frames": int(len(contrast.states)),
        "separate_judge": "coal on a fresh model copy, contact (distance < 0)",
        "separate_deepest_overlap_m": round(-min(contrast.contact.values()), 5)
        if contrast.contact
        else 0.0,
    }
    if planner is None or not planner.executed:
        return {
            **out,
            "group_colliding_samples": None,
            "group_samples": 0,
            "group_note": "no group plan was executed",
        }
    _, plan = planner.executed[0]
    states = planner.group.full_qpos(plan)
    hits = judge(states, GROUP_MARGIN_M - JUDGE_TOLERANCE_M, contrast.robot)
    row = planner.results[0] if planner.results else {}
    return {
        **out,
        "group_colliding_samples": len(hits),
        "group_samples": int(plan.t.size),
        "group_judge": (
            f"coal on a fresh model copy, distance < {GROUP_MARGIN_M - JUDGE_TOLERANCE_M} m"
        ),
        "group_min_clearance_m": round(float(plan.min_clearance.distance_m), 5),
        "group_duration_s": round(plan.duration_s, 3),
        "group_outcome": row.get("outcome"),
        "start_skew_s": row.get("start_skew_s"),
    }

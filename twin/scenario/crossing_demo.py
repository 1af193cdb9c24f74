"""The demo: ROB plans both arms together through the crossing pair and executes in sync.

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
from rob_twin.models.loading import CROSSING_START_KEY, apply_keyframe
from rob_twin.models.names import DEFAULT_ROBOT, group_arms
from rob_twin.models.robot import Robot, robot_of
from rob_twin.planners.geom_pairs import GeomPairTable
from rob_twin.planners.oracle import CoalOracle, judge_states
from rob_twin.planners.separate import separate_plans, sync_states
from rob_twin.twin.render.highlight import colliding_geoms
from rob_twin.twin.render.video import VideoRecorder
from rob_twin.twin.scenario.plan_steps import PlanRunner
from rob_twin.twin.scenario.run import Scenario

ARMS = group_arms()
GROUP_MARGIN_M = 0.005  # the planner's margin; a group sample closer than this counts
JUDGE_TOLERANCE_M = 1e-4
PLAN_AT_S = 0.3  # simulated time [s] the group plan starts at
TAIL_S = 0.6  # simulated time [s] filmed after the plan's end
TITLE_FRAMES = 8  # frames holding the start pose before the separate replay


def crossing_demo_scenario(duration_s: float = 4.6, robot: Robot | str | None = None) -> Scenario:
    """ROB at the crossing start; at ``PLAN_AT_S`` both arms planned together to the
    crossing goals (``rob_twin.models.poses``; the seeded plan lasts 2.64 s simulated, from
    ``rob-twin demo --json``: ``crossing.group_duration_s``, so 4.6 s shows its end with time
    to spare); filmed from the front camera (the hands cross in front of the chest), 480x360
    at 20 frames/s, render quality picked for the machine. ``robot``: a robot whose model has
    the ``crossing_start`` keyframe (None: the default robot)."""
    robot = robot_of(robot)
    initial = {
        f"{arm}/j{i + 1}": q
        for arm, pose in poses.CROSSING_START.items()
        for i, q in enumerate(pose)
    }
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
                    "goals": {a: list(q) for a, q in poses.CROSSING_GOALS.items()},
                    "seed": 0,
                }
            ],
            "cameras": ["front"],
            "fps": 20,
            "frame_size": [480, 360],
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
    """Each arm of ``robot`` planned alone from ``crossing_start`` to the crossing goals, then
    replayed together and judged (None: the default robot)."""
    robot = robot_of(robot)
    model = robot.model()
    data = mujoco.MjData(model)
    apply_keyframe(model, data, CROSSING_START_KEY)
    start = data.qpos.copy()
    goals = {a: np.array(q) for a, q in poses.CROSSING_GOALS.items()}
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

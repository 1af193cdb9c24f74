"""Gate motions that stay clear of the robot itself (simulated; rad).

The gates move both arms at once: a far move toward each joint's farther bound
(``gates._start_moving``) and a retargeting wave around home (``targets.wave_source``). On
ROB and OpenArm those motions are free; on a robot whose arms face each other, a straight
joint-space line can run one hand into the other arm, and the gate then measures a
collision instead of what it gates. Here each motion is checked before it is commanded:
sampled densely along its path, both arms together, with the planner's exact clearance
(``planners.ArmGroup.clearance``, every collidable pair of the robot), and scaled toward
home (``SCALES``) until every sample is free. A motion already free is left exactly as it
was, so gates on ROB and OpenArm are unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import mujoco
import numpy as np
from rob_twin.models.loading import apply_home
from rob_twin.models.names import Arm
from rob_twin.models.robot import Robot
from rob_twin.planners.group import ArmGroup
from rob_twin.planners.group_config import default_config

SCALES = (1.0, 0.5, 0.25, 0.125)  # of the motion's excursion from home, largest first
LINE_SAMPLES = 24  # samples along a straight move
WAVE_STEP_S = 0.02  # a wave is sampled this often over the gate's duration [s]
FREE_M = 0.0  # a sample is free when no pair is closer than this [m]

__all__ = ["free_joint_move", "free_line_scale", "free_wave_scale"]


_GROUPS: dict[str, ArmGroup] = {}  # model hash -> the group (one per model and process)


def _group(robot: Robot) -> ArmGroup:
    """The planner's group on ``robot``'s model at its home keyframe (one per model)."""
    if robot.model_hash in _GROUPS:
        return _GROUPS[robot.model_hash]
    model = robot.model()
    data = mujoco.MjData(model)
    apply_home(model, data)
    group = ArmGroup(model, robot.group_arms(), default_config())
    group.set_qpos(data.qpos.copy())
    _GROUPS[robot.model_hash] = group
    return group


def _free(robot: Robot, states: list[dict[str, np.ndarray]]) -> bool:
    """Every state (arm -> joint angles [rad]) free; a target beyond a joint's range (ROB's
    wave around J7 at its limit) is judged where the joint stops, at the range."""
    group = _group(robot)
    limits = {arm: group.joint_limits(arm) for arm in group.arm_names}
    return all(
        group.clearance({a: np.clip(q, *limits[a]) for a, q in state.items()}).distance_m >= FREE_M
        for state in states
    )


# (right, left) scales of a straight move, first free one wins: the right arm's move is kept
# whole longest (the gates judge the right arm: a stalled joint must still move far enough to
# trip the tracking check), the left arm drawn in, then left at home
LINE_SCALES = (
    (1.0, 1.0), (1.0, 0.5), (1.0, 0.25), (1.0, 0.0),
    (0.5, 0.5), (0.5, 0.0), (0.25, 0.25), (0.25, 0.0), (0.125, 0.0),
)  # fmt: skip


def free_line_scale(
    robot: Robot,
    lines: Mapping[Arm, tuple[np.ndarray, np.ndarray]],
) -> dict[Arm, float]:
    """Per arm, the scale of its straight move from ``start`` to ``start + scale (goal -
    start)`` (``lines``: arm -> (start, goal) [rad]): the first of ``LINE_SCALES`` at which
    both arms moving together are free at every sample; the last one when none is."""
    fractions = np.linspace(0.0, 1.0, LINE_SAMPLES)
    for pair in LINE_SCALES:
        scales = {arm: pair[0] if arm is Arm.RIGHT else pair[1] for arm in lines}
        states = [
            {a.value: s + f * scales[a] * (g - s) for a, (s, g) in lines.items()} for f in fractions
        ]
        if _free(robot, states):
            return scales
    return scales


def free_wave_scale(
    robot: Robot,
    make_sources: Callable[[float], Mapping[Arm, Callable[[float], np.ndarray]]],
    duration_s: float,
) -> float:
    """The largest of ``SCALES`` at which the waves ``make_sources(scale)`` (arm -> path of
    time [s] -> joint angles [rad]) keep both arms free at every ``WAVE_STEP_S`` over
    ``duration_s``; the smallest scale when none does."""
    times = np.arange(0.0, duration_s + 1e-9, WAVE_STEP_S)
    for scale in SCALES:
        sources = make_sources(scale)
        states = [{a.value: src(float(t)) for a, src in sources.items()} for t in times]
        if _free(robot, states):
            return scale
    return SCALES[-1]


def free_joint_move(
    robot: Robot,
    arm: Arm,
    joint: int,
    home: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    size_rad: float,
) -> np.ndarray:
    """``home`` with joint ``joint`` (1-based) of ``arm`` moved ``size_rad`` toward its farther
    bound, else toward the nearer one, else half as far, ..., kept inside [``lower``,
    ``upper``]: the first such move free at every sample with the other arm at home (the move
    toward the farther bound at the smallest size when none is)."""
    k = joint - 1
    far = 1.0 if upper[k] - home[k] >= home[k] - lower[k] else -1.0
    fractions = np.linspace(0.0, 1.0, LINE_SAMPLES)
    for scale in SCALES:
        for side in (far, -far):
            goal = home.copy()
            goal[k] = np.clip(home[k] + side * scale * size_rad, lower[k], upper[k])
            if _free(robot, [{arm.value: home + f * (goal - home)} for f in fractions]):
                return goal
    goal = home.copy()
    goal[k] = np.clip(home[k] + far * SCALES[-1] * size_rad, lower[k], upper[k])
    return goal

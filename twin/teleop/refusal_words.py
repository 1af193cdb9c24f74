"""Plain words for what the operator sees: why a hand's target was refused, and which two
parts of the robot (or the room) are closest.

The page shows these sentences as they are; the solver's own text (tolerances, attempts,
status names) stays in ``FilterResult.detail`` for logs and the counters panel. A sentence
says what the operator asked, why the arm cannot do it, and what the arm does instead.
Lengths are in metres [m] or millimetres [mm] as written, angles in radians [rad].
"""

from __future__ import annotations

import re

import numpy as np
from rob_twin.planners.ik import IKResult, IKStatus

HOLDS = "the arm holds its last pose"


def geom_words(name: str) -> str:
    """A geom's name in words: ``right/link2_geom`` -> "the right arm's link 2",
    ``torso/shell`` -> "the torso", ``table/leg0`` -> "the table's leg 0", ``floor`` ->
    "the floor"."""
    owner, _, part = name.rpartition("/")
    part = re.sub(r"_geom$", "", part)
    part = re.sub(r"(?<=[a-z])(\d+)$", r" \1", part).replace("_", " ").strip()
    if owner in ("right", "left"):
        return f"the {owner} arm's {part}"
    if not owner:
        return f"the {part}"
    if part in ("shell", "body", "chassis", ""):
        return f"the {owner}"
    if owner == "room" and part.startswith("wall "):  # room/wall_north -> the north wall
        return f"the {part[5:]} wall"
    return f"the {owner}'s {part}"


def pair_words(name1: str, name2: str) -> str:
    """Two geoms in words, an arm's part first: "the right arm's link 2 and the torso"."""
    a, b = geom_words(name1), geom_words(name2)
    if " arm's " in b and " arm's " not in a:
        a, b = b, a
    return f"{a} and {b}"


def _xyz(p: np.ndarray) -> str:
    return f"({p[0]:.2f}, {p[1]:.2f}, {p[2]:.2f}) m"


def ik_refusal(
    arm: str,
    asked_m: np.ndarray,
    now_m: np.ndarray,
    shoulder_m: np.ndarray,
    reach_m: float,
    result: IKResult,
    step_bound_rad: float,
) -> str:
    """Why the ``arm`` hand's target at ``asked_m`` (base frame [m]) was refused by the IK,
    with the TCP now at ``now_m`` [m], the shoulder (first joint) at ``shoulder_m`` [m], the
    arm's reach ``reach_m`` [m] and the continuity bound ``step_bound_rad`` [rad]."""
    ahead_mm = float(np.linalg.norm(asked_m - now_m)) * 1000.0
    asked = f"your {arm} hand asks for {_xyz(asked_m)}, {ahead_mm:.0f} mm from where the hand is"
    from_shoulder = float(np.linalg.norm(asked_m - shoulder_m))
    if result.status is IKStatus.UNREACHABLE or from_shoulder > reach_m:
        return (
            f"target out of reach: {asked}, {from_shoulder:.2f} m from the shoulder, and the arm "
            f"reaches {reach_m:.2f} m; {HOLDS}. Bring your hand back towards the robot."
        )
    if result.status is IKStatus.JOINT_JUMP:
        return (
            f"target refused: {asked}, but getting there would swing a joint by more than "
            f"{step_bound_rad:g} rad at once (near a singularity or a joint limit); {HOLDS}. "
            "Move back a little, or approach the pose another way."
        )
    miss_mm = result.best_position_error_m * 1000.0
    return (
        f"target out of reach: {asked}, but the arm cannot put the hand there in that "
        f"orientation within its joint limits (closest: {miss_mm:.0f} mm off); {HOLDS}. "
        "Turn or move your hand back towards where the arm is."
    )

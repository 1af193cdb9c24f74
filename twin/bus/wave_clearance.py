"""Whether ``rob-twin host``'s wave can be followed from where the arms are.

The wave moves every joint up to 0.3 rad from the arm's start pose, and a Damiao bank's
arms start limp, wherever they fell: on a generated robot the wrists lie a millimetre above
the floor, on OpenArm an arm hangs a centimetre from the torso. The wave from there drives
a link into the floor or the body; the bank's physics stops it there, and the owner latches
``tracking_error`` a second or two into the run.

``first_wave_contact`` samples the wave's targets every ``step_s`` over the run, all
driven arms together, on the robot's own MuJoCo model (its collision filter: the contacts
the bank's physics makes) and finds the first sample where a geom pair lies more than
``tolerance_m`` deeper inside each other than at the start pose (a pair already touching
there, such as a gripper's fingers, may stay as it is), and how deep that pair gets.
Geoms of arms the host does not drive are left out: where those arms are is not known.
Units: metres, radians, seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import mujoco
import numpy as np
from rob_twin.planners.geom_pairs import subtree_bodies

WAVE_CHECK_STEP_S = 0.02  # the wave moves a joint at most ~9 mrad in this time
CONTACT_TOLERANCE_M = 0.002  # deeper than this beyond the start pose: a collision


@dataclass(frozen=True)
class WaveContact:
    """Where the wave runs into something: ``moving``, a geom the wave moves, and ``other``
    (each ``geom NAME (body NAME)``); when the pair first lies ``tolerance_m`` deeper than
    at the start (``first_s`` [s] since streaming began) and how deep it gets within the
    run (``depth_m`` [m] at ``deepest_s`` [s])."""

    moving: str
    other: str
    first_s: float
    depth_m: float
    deepest_s: float

    def describe(self) -> str:
        return (
            f"from t={self.first_s:.2f} s {self.moving} goes into {self.other}, "
            f"{1000 * self.depth_m:.0f} mm deep at t={self.deepest_s:.2f} s"
        )


def first_wave_contact(
    model: mujoco.MjModel,
    joints: dict[str, tuple[str, ...]],
    sources: dict[str, Callable[[float], np.ndarray]],
    seconds: float,
    step_s: float = WAVE_CHECK_STEP_S,
    tolerance_m: float = CONTACT_TOLERANCE_M,
) -> WaveContact | None:
    """The wave's first collision (module doc), or None when it stays clear.

    joints: {arm: canonical joint names}; sources: {arm: targets [rad] at t [s]} of the
    driven arms; seconds: run length [s]."""
    data = mujoco.MjData(model)
    addr = {a: [model.jnt_qposadr[model.joint(j).id] for j in names] for a, names in joints.items()}
    driven = _arm_bodies(model, [joints[a][0] for a in sources])
    ignored = _arm_bodies(model, [names[0] for a, names in joints.items() if a not in sources])

    def depths(t: float) -> dict[tuple[int, int], float]:
        for a, src in sources.items():
            data.qpos[addr[a]] = src(t)
        mujoco.mj_kinematics(model, data)
        mujoco.mj_collision(model, data)
        out: dict[tuple[int, int], float] = {}
        for c in data.contact[: data.ncon]:
            g = (int(c.geom1), int(c.geom2))
            if int(model.geom_bodyid[g[0]]) not in driven:
                g = (g[1], g[0])  # the geom the wave moves first
            bodies = {int(model.geom_bodyid[x]) for x in g}
            if bodies & ignored or not bodies & driven:
                continue
            out[g] = max(out.get(g, 0.0), -float(c.dist))
        return out

    at_start = depths(0.0)
    hit: tuple[int, int] | None = None
    first_s = deepest_s = depth_m = 0.0
    for t in np.arange(step_s, seconds + step_s / 2, step_s):
        now = depths(float(t))
        if hit is None:
            over = [g for g, d in now.items() if d > at_start.get(g, 0.0) + tolerance_m]
            if not over:
                continue
            hit, first_s = max(over, key=lambda g: now[g]), float(t)
        if now.get(hit, 0.0) > depth_m:
            depth_m, deepest_s = now[hit], float(t)
    if hit is None:
        return None
    return WaveContact(
        _geom_name(model, hit[0]), _geom_name(model, hit[1]), first_s, depth_m, deepest_s
    )


def _arm_bodies(model: mujoco.MjModel, first_joints: list[str]) -> set[int]:
    """The bodies each joint in ``first_joints`` moves (its body and every body below)."""
    out: set[int] = set()
    for j in first_joints:
        out |= subtree_bodies(model, int(model.jnt_bodyid[model.joint(j).id]))
    return out


def _geom_name(model: mujoco.MjModel, g: int) -> str:
    """``geom (body)``; an unnamed geom by its index."""
    body = model.body(int(model.geom_bodyid[g])).name
    return f"geom {model.geom(g).name or g} (body {body})"

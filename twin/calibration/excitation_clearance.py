"""Keeping a synthetic excitation off the robot's body: where its motion is centred, and
how far it swings.

``synthetic.excitation_source`` swings every joint up to about 0.2 rad around the robot's
home. On ROB that stays clear; on OpenArm v2, whose home hangs each elbow 30 mm from the
torso with its shoulder roll 0.17 rad above its limit, link 4 rubs the torso 20-40 % of
every 4 s recording (simulated, seeds 6400-6407, noiseless). A recording that rubs is a
recording of contact, not of the drives: which samples touch depends on the parameters, so
a fit's cost jumps as a parameter moves (OpenArm right J1 viscous friction: the position
RMS jumped 0.23 -> 0.44 mrad between 0.99x and 0.985x its true value, every right-arm joint
at once) and the contact's friction reads as joint friction (70 % high, an interval that
excluded the truth).

``closest_approach`` finds the worst intrusion of an excitation into ``CLEARANCE_M``: over
the recording, sampled every ``CHECK_STEP_S``, both arms moving together, every pair the
robot's physics collides (its own collision filter: the contacts a recording makes). A pair
already closer at the home pose (a gripper's fingers touching) may not come
``HOME_TOLERANCE_M`` closer than there. Targets, not the arms' motion: the clearance holds
the servos' lag.

``clear_excitation`` first moves the motion's centre: while the excitation intrudes, the
one joint shift of ``SHIFT_STEP_RAD`` (either sign, any joint of the arm that intrudes)
that most raises the intruding pair's distance at its worst instant, up to
``MAX_SHIFT_RAD`` per joint. What no shift clears, a smaller amplitude
(``AMPLITUDE_LADDER``) does. An excitation already clear is left as it is (ROB's seeded
excitations: all of seeds 6100-6107 and 6400-6407 over 60 s). Units: metres, radians,
seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import mujoco
import numpy as np
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import Arm
from rob_twin.models.robot import Robot
from rob_twin.planners.geom_pairs import joint_qpos_addresses, subtree_bodies
from rob_twin.twin.calibration.contact_pairs import pair_distances, pair_name

CLEARANCE_M = 0.002
CHECK_STEP_S = 0.02  # a 1.4 Hz, 0.2 rad tone moves a joint at most ~35 mrad in this time
HOME_TOLERANCE_M = 0.001
SHIFT_STEP_RAD = 0.05
MAX_SHIFT_RAD = 0.4
AMPLITUDE_LADDER = (1.0, 0.85, 0.7, 0.55, 0.4, 0.3, 0.2, 0.1)

# (amplitude [rad], {arm index: centre offset per joint [rad]}) -> {arm index: targets [rad]
# at t [s]}
Sources = dict[int, Callable[[float], np.ndarray]]
SourcesOf = Callable[[float, dict[int, np.ndarray]], Sources]


class NoClearExcitationError(RobTwinError, RuntimeError):
    """No centre shift or amplitude of the ladder keeps the excitation clear."""


@dataclass(frozen=True)
class Intrusion:
    """The worst intrusion into the clearance: the pair's distance [m] at ``t_s`` [s]
    (``geoms``: their ids; ``names``: "a vs b") and by how much it is short of its allowance
    [m] (> 0)."""

    distance_m: float
    short_m: float
    t_s: float
    geoms: tuple[int, int]
    names: str


class _Scene:
    """The robot's model with every geom's margin at least ``CLEARANCE_M`` (so its
    collision reports every pair within it) and the joints of each arm."""

    def __init__(self, robot: Robot):
        self.model = robot.model()
        self.model.geom_margin[:] = np.maximum(self.model.geom_margin, CLEARANCE_M)
        self.data = mujoco.MjData(self.model)
        if robot.has_keyframe("home"):  # the rest of the robot (a torso, a base) at its start
            self.data.qpos[:] = self.model.key("home").qpos
        m = self.model
        self.addr = {k: joint_qpos_addresses(m, robot.joints(arm)) for k, arm in enumerate(Arm)}
        self.bodies = {
            k: subtree_bodies(m, int(m.jnt_bodyid[m.joint(robot.joints(arm)[0]).id]))
            for k, arm in enumerate(Arm)
        }

    def pose(self, sources: Sources, t: float) -> None:
        for k, src in sources.items():
            self.data.qpos[self.addr[k]] = src(t)
        mujoco.mj_kinematics(self.model, self.data)

    def distances(self) -> dict[tuple[int, int], float]:
        return pair_distances(self.model, self.data)

    def pair_distance(self, g: tuple[int, int]) -> float:
        return float(mujoco.mj_geomDistance(self.model, self.data, g[0], g[1], 1.0, None))


def closest_approach(
    robot: Robot, sources: Sources, seconds: float, scene: _Scene | None = None
) -> Intrusion | None:
    """The worst intrusion of ``sources`` (arm index -> targets [rad] at t [s]) into
    ``CLEARANCE_M`` over ``seconds`` [s], or None when every pair keeps its allowance
    (``scene``: one of ``robot`` to reuse)."""
    scene = scene or _Scene(robot)
    scene.pose(sources, 0.0)
    home = scene.distances()
    worst: Intrusion | None = None
    for t in np.arange(CHECK_STEP_S, seconds + CHECK_STEP_S / 2, CHECK_STEP_S):
        scene.pose(sources, float(t))
        for g, d in scene.distances().items():
            short = min(CLEARANCE_M, home.get(g, np.inf) - HOME_TOLERANCE_M) - d
            if short > 0 and (worst is None or short > worst.short_m):
                worst = Intrusion(d, short, float(t), g, pair_name(scene.model, g))
    return worst


def clear_excitation(
    robot: Robot, sources_of: SourcesOf, amplitude_rad: float, seconds: float
) -> tuple[float, dict[int, np.ndarray]]:
    """(amplitude [rad], centre offset per arm index [rad]) of an excitation
    ``sources_of(amplitude, offsets)`` of both arms that stays clear over ``seconds`` [s]
    (module docstring); the asked ``amplitude_rad`` and zero offsets when it already does.
    NoClearExcitationError when nothing clears it."""
    scene = _Scene(robot)
    offsets = {k: np.zeros(len(scene.addr[k])) for k in scene.addr}
    for factor in AMPLITUDE_LADDER:
        amplitude = factor * amplitude_rad
        hit = closest_approach(robot, sources_of(amplitude, offsets), seconds, scene)
        while hit is not None and _shift_centre(scene, sources_of, amplitude, offsets, hit):
            hit = closest_approach(robot, sources_of(amplitude, offsets), seconds, scene)
        if hit is None:
            return amplitude, offsets
    raise NoClearExcitationError(
        f"{robot.name}'s excitation comes within {hit.distance_m * 1000:.1f} mm "
        f"({hit.names} at t={hit.t_s:.2f} s) at every centre shift and amplitude down to "
        f"{AMPLITUDE_LADDER[-1] * amplitude_rad:.3f} rad (clearance {CLEARANCE_M * 1000:g} mm)"
    )


def _shift_centre(
    scene: _Scene,
    sources_of: SourcesOf,
    amplitude: float,
    offsets: dict[int, np.ndarray],
    hit: Intrusion,
) -> bool:
    """Apply the best single joint shift for ``hit`` to ``offsets``; False when none raises
    the pair's distance at its worst instant (or every joint is at ``MAX_SHIFT_RAD``)."""
    m = scene.model
    arms = [
        k
        for k, bodies in scene.bodies.items()
        if {int(m.geom_bodyid[g]) for g in hit.geoms} & bodies
    ]
    best, best_gain = None, 0.0
    for k in arms:
        for j in range(offsets[k].size):
            for sign in (1.0, -1.0):
                trial = offsets[k].copy()
                trial[j] += sign * SHIFT_STEP_RAD
                if abs(trial[j]) > MAX_SHIFT_RAD + 1e-12:
                    continue
                scene.pose(sources_of(amplitude, offsets | {k: trial}), hit.t_s)
                gain = scene.pair_distance(hit.geoms) - hit.distance_m
                if gain > best_gain:
                    best, best_gain = (k, j, sign), gain
    if best is None:
        return False
    k, j, sign = best
    offsets[k][j] += sign * SHIFT_STEP_RAD
    return True

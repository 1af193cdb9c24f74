"""Seeded dual-arm robots nobody has seen: an MJCF scene and its robot file (``robot.toml``).

``generate_robot(folder, seed)`` writes ``scene.xml`` and ``robot.toml`` into ``folder`` and
returns a ``GeneratedRobot`` that says what it made. Everything follows from the seed
(``numpy.random.default_rng``); the same seed (and the same overrides) writes byte-identical
files. What varies:

* drive family ``ideal`` (5, 6 or 7 joints per arm, file kp / kv), ``amber`` (7 joints,
  position servos in the MJCF that the file names, CAN wiring) or ``damiao`` (7 joints when
  drawn, 5 or 6 too when asked for: a motor per joint sized to hold the arm against
  gravity, CAN wiring);
* link lengths (0.08-0.30 m), capsule radii, masses (a few kg per arm), joint armature,
  hinge axes (x, y or z, either sign) and joint ranges (always holding home and zero);
* mounting: ``facing`` (bases 0.5-0.9 m apart along y, each pointing at the other) or
  ``side_by_side`` (bases 0.3-0.6 m apart, both pointing along +x), each arm on a capsule
  pedestal welded to the world, over a floor plane;
* the MJCF's own names (``R_shoulder_pan`` / ``arm_r_joint3`` styles, never the twin's
  canonical ``right/j1``), so ``rob_twin.models.robot_model``'s renaming is exercised;
* the TCP as an MJCF site (``tcp_site``) or as ``tcp_body`` + ``tcp_offset_m``;
* whether the MJCF has position servos, and whether the file names them.

Fixed on purpose (each for a reason):

* joint 1 turns about the vertical (+z or -z): link 1 sits on its pedestal, a body welded to
  the world, and the planner never checks an arm's first link against that parent
  (``rob_twin.planners.geom_pairs.ADJACENT_WORLD_PARENT``); a pan joint keeps the gap
  between them constant, so nothing unchecked can ever touch;
* joint 2 (shoulder) and the elbow are pitch joints (about y): links run along x or z in
  their bodies, so y is across every link and the arm can fold; the other axes are drawn;
* at most one box geom per arm, on link 1 and inside a ball of ``BOX_REACH_M`` about the
  (fixed) joint-1 anchor: the two boxes can never come within ``separation - 2 BOX_REACH_M``
  (> 0) of each other. MuJoCo 3.17's box-box collider misses contacts (a separate, known
  problem), so no two box geoms may ever be able to touch; their contype / conaffinity
  (2 / 1) say so too, so the planner never checks that pair. Pedestals are capsules, not
  cylinders, and boxes at least 4 cm thick: no checked pair uses a collider the planner
  lists as weak (``rob_twin.planners.geom_pairs.weak_pairs``).

The home pose of both arms is checked on the canonical model the robot file loads into:
every collidable pair at least ``HOME_CLEARANCE_M`` apart (MuJoCo's own collision filter with
every geom and body margin set to it: no contact closer), each arm's TCP Jacobian well
conditioned
(``MIN_POSITION_SV``, ``MIN_FULL_SV``). A draw that fails is redrawn from the next sub-seed
(``default_rng([seed, attempt])``), deterministically; ``GeneratedRobot.rejected`` says why
each earlier draw was refused.

Units: metres, radians, kilograms, seconds, newton metres.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import mujoco
import numpy as np
from rob_twin.models.damiao_motors import MOTORS
from rob_twin.models.loading import HOME_KEY
from rob_twin.models.names import JOINTS_PER_ARM, Arm, arm_joint, tcp_site
from rob_twin.models.robot_description import MIN_IDEAL_JOINTS, load_robot_file
from rob_twin.models.robot_model import compile_quietly, robot_spec

FAMILIES = ("ideal", "amber", "damiao")
MOUNTINGS = ("facing", "side_by_side")
CAN_JOINTS = 7  # what a drawn amber or damiao robot has (the Amber codec drives seven)
IDEAL_JOINTS = (MIN_IDEAL_JOINTS, 6, 7)
# joints per arm each family takes (``joints=``); a draw takes IDEAL_JOINTS for ideal and
# CAN_JOINTS otherwise, so a seed's drawn robot stays what it was before damiao took 5 and 6
FAMILY_JOINTS = {"ideal": IDEAL_JOINTS, "amber": (CAN_JOINTS,), "damiao": IDEAL_JOINTS}
SIDES = (Arm.RIGHT, Arm.LEFT)

TIMESTEP_S = 0.002
# Amber owners tick at 200 Hz, Damiao's at 500 Hz: the physics step must divide their period
# (rob_twin.twin.sim.loops.loop_config refuses a robot file whose step does not)
FAMILY_TIMESTEP_S = {"amber": 0.001}
GRAVITY = 9.81  # [m/s^2]
LINK_LENGTH_M = (0.08, 0.30)
FIRST_LINK_M = (0.08, 0.15)  # the column on the pedestal
RADIUS_M = (0.02, 0.035)  # capsule radius, tapering to the tip (links two apart: >= 1 cm at
# zero, 0.08 - 2 x 0.035, as every link runs along +x or +z: no reference-pose exemptions)
LINEAR_DENSITY = (2.0, 3.5)  # [kg/m] of the first links, tapering to half at the tip
ARMATURE = (0.02, 0.08)  # [kg m^2] drawn, raised where the servo needs it
DAMPING = (0.05, 0.3)  # joint damping [Nm s/rad]
RANGE_HALF_RAD = (2.0, 2.7)  # each limit this far from zero (< pi - FOLD_MARGIN_RAD) ...
FOLD_MARGIN_RAD = 0.4  # ... or this short of the angle that folds a link back on its parent
HOME_INSIDE_RAD = 0.2  # home at least this far inside every joint range
HOME_RAD = 1.0  # home angles uniform in [-1, 1] ...
ELBOW_RAD = (0.7, 1.4)  # ... but the elbow bent this much (clipped into its range)
PEDESTAL_HEIGHT_M = (0.35, 0.8)
PEDESTAL_RADIUS_M = 0.06
PEDESTAL_GAP_M = 0.03  # between the pedestal's top cap and link 1's lowest point
SEPARATION_M = {"facing": (0.5, 0.9), "side_by_side": (0.3, 0.6)}
BOX_HALF_M = (0.02, 0.035)  # >= 2 cm: a box under 4 cm thick is weak against capsules
BOX_REACH_M = 0.14  # every box point stays this close to its joint-1 anchor

SERVO_SAG_RAD = 0.004  # ideal / amber: kp so gravity sags a joint at most this much
MIN_KP = 2000.0  # [Nm/rad]
KV_PER_KP = 0.02  # [s]: kv / kp, the tracking lag [rad] at 1 rad/s
OMEGA_DT = 0.5  # sqrt(kp / armature) * timestep at most this (explicit in kp: < 2 diverges)
MOTOR_MARGIN = 1.5  # damiao: peak torque >= this x the joint's worst gravity torque
# (seed, family, joints per arm, mounting): twelve robots that together cover every family,
# joint count, mounting, TCP kind and actuator kind (tests/test_generated_robots.py checks
# the coverage); the tests and the robots benchmark both use them. The damiao 5- and 6-joint
# robots are tests/test_damiao_joint_counts.py's
COVERING_CASES = (
    (2, "ideal", 5, "facing"),
    (0, "ideal", 5, "side_by_side"),
    (3, "ideal", 6, "facing"),
    (0, "ideal", 6, "side_by_side"),
    (1, "ideal", 7, "facing"),
    (1, "ideal", 7, "side_by_side"),
    (3, "amber", 7, "facing"),
    (4, "amber", 7, "side_by_side"),
    (8, "damiao", 7, "facing"),
    (6, "damiao", 7, "side_by_side"),
    (8, "damiao", 5, "facing"),
    (6, "damiao", 6, "side_by_side"),
)

HOME_CLEARANCE_M = 0.02  # every collidable pair at home at least this far apart
MIN_POSITION_SV = 0.03  # [m/rad] smallest singular value of the TCP position Jacobian
MIN_FULL_SV = 0.01  # of the full Jacobian, rotation rows times JACOBIAN_LENGTH_M
JACOBIAN_LENGTH_M = 0.2
MAX_ATTEMPTS = 200

ROLES = (
    "shoulder_pan",
    "shoulder_lift",
    "upper_roll",
    "elbow",
    "forearm_roll",
    "wrist_pitch",
    "wrist_roll",
)
AXES = {"x": (1, 0, 0), "y": (0, 1, 0), "z": (0, 0, 1)}


class GenerationError(RuntimeError):
    """No clean draw within ``MAX_ATTEMPTS`` sub-seeds."""


@dataclass(frozen=True)
class Link:
    """One arm link: a capsule from its joint along ``direction`` (``x`` or ``z`` of its body),
    ``length_m`` [m] long; its joint turns about ``axis`` (``+y``, ``-x``, ...)."""

    length_m: float
    direction: str
    axis: str
    radius_m: float
    mass_kg: float
    armature: float  # [kg m^2]
    damping: float  # [Nm s/rad]
    range_rad: tuple[float, float]


@dataclass(frozen=True)
class Draft:
    """Everything one draw decided (internal; ``GeneratedRobot`` is what callers get)."""

    seed: int
    attempt: int
    family: str
    mounting: str
    style: str  # "anatomical" (R_elbow) or "numbered" (arm_r_joint4)
    separation_m: float
    pedestal_m: float
    links: tuple[Link, ...]  # both arms are the same design
    box_half_m: tuple[float, float, float] | None
    tcp: str  # "site" or "body"
    tcp_extra_m: float  # TCP this far beyond the last link's end
    actuators: str  # "named" (file names the MJCF's), "adopted" (file omits), "none"
    kp: float | None
    kv: float | None
    motors: tuple[str, ...] | None
    home: dict[Arm, tuple[float, ...]]
    channels: dict[Arm, str] | None

    @property
    def n(self) -> int:
        return len(self.links)


@dataclass(frozen=True)
class GeneratedRobot:
    """What ``generate_robot`` wrote: ``robot_file`` (load it with ``load_robot_file`` or
    ``load_robot_model``) and ``mjcf_file``; the ``seed`` and the sub-seed ``attempt`` that
    was clean (``rejected``: why each earlier one was not); the drawn family, mounting,
    joints per arm, base separation [m], TCP kind (``site`` / ``body``), actuator kind
    (``named`` / ``adopted`` / ``none``), the MJCF's joint names per arm, home [rad] per arm,
    arm mass [kg], servo gains (ideal, amber: kp [Nm/rad], kv [Nm s/rad]) and damiao motors."""

    robot_file: Path
    mjcf_file: Path
    seed: int
    attempt: int
    rejected: tuple[str, ...]
    family: str
    mounting: str
    joints_per_arm: int
    separation_m: float
    tcp: str
    actuators: str
    has_boxes: bool
    mjcf_joints: dict[str, tuple[str, ...]]
    home_rad: dict[str, tuple[float, ...]]
    arm_mass_kg: float
    kp: float | None
    kv: float | None
    motors: tuple[str, ...] | None

    @property
    def canonical_joints(self) -> dict[str, list[str]]:
        """``{"right": ["right/j1", ...], "left": [...]}``: the arms as ArmGroup takes them."""
        return {
            a.value: [arm_joint(a, j) for j in range(1, self.joints_per_arm + 1)] for a in SIDES
        }


def generate_robot(
    folder: Path | str,
    seed: int,
    *,
    family: str | None = None,
    joints: int | None = None,
    mounting: str | None = None,
) -> GeneratedRobot:
    """Write ``scene.xml`` and ``robot.toml`` of seeded robot ``seed`` into ``folder`` (made if
    missing; both files overwritten). ``family`` (``FAMILIES``), ``joints`` per arm
    (``FAMILY_JOINTS``: 5-7 for ``ideal`` and ``damiao``, 7 for ``amber``; drawn: 5-7 for
    ``ideal``, 7 otherwise) and ``mounting`` (``MOUNTINGS``) are drawn from the seed unless
    given. GenerationError when no sub-seed gives a clean home within ``MAX_ATTEMPTS``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    family, n, mounting = _top_choices(seed, family, joints, mounting)
    rejected: list[str] = []
    for attempt in range(MAX_ATTEMPTS):
        draft = _draw(np.random.default_rng([seed, attempt]), seed, attempt, family, n, mounting)
        mjcf, toml = folder / "scene.xml", folder / "robot.toml"
        mjcf.write_text(mjcf_text(draft), encoding="utf-8")
        toml.write_text(robot_toml(draft, mjcf.name), encoding="utf-8")
        reason = home_problem(toml)
        if reason is None:
            return _described(draft, toml, mjcf, tuple(rejected))
        rejected.append(f"attempt {attempt}: {reason}")
    raise GenerationError(f"seed {seed}: no clean home in {MAX_ATTEMPTS} draws ({rejected[-3:]})")


# ---------------------------------------------------------------- drawing


def _top_choices(
    seed: int, family: str | None, joints: int | None, mounting: str | None
) -> tuple[str, int, str]:
    """(family, joints per arm, mounting): the given ones checked, the rest drawn from
    ``default_rng(seed)`` (kept across the sub-seeds: a redraw changes geometry only)."""
    rng = np.random.default_rng(seed)
    drawn_family = str(rng.choice(FAMILIES))
    drawn_mounting = str(rng.choice(MOUNTINGS))
    family = family or drawn_family
    if family not in FAMILIES:
        raise ValueError(f"family={family!r}; valid: one of {FAMILIES}")
    drawn = IDEAL_JOINTS if family == "ideal" else (CAN_JOINTS,)
    valid = FAMILY_JOINTS[family]
    n = joints if joints is not None else int(rng.choice(drawn))
    if n not in valid:
        raise ValueError(f"joints={n!r} for family {family!r}; valid: one of {valid}")
    mounting = mounting or drawn_mounting
    if mounting not in MOUNTINGS:
        raise ValueError(f"mounting={mounting!r}; valid: one of {MOUNTINGS}")
    return family, n, mounting


def _r(x: float, digits: int = 4) -> float:
    """``x`` rounded, so files print short and the model holds exactly what was computed."""
    return round(float(x), digits)


def _elbow(n: int) -> int:
    """The elbow's joint number (1-based): 3 of 5, 4 of 6 or 7."""
    return n // 2 + 1


def _draw_links(rng: np.random.Generator, n: int) -> list[Link]:
    """An arm's links (masses, armature and damping before the drive family adjusts them)."""
    density = rng.uniform(*LINEAR_DENSITY)
    links = []
    for j in range(1, n + 1):
        taper = 1.0 - 0.5 * (j - 1) / (n - 1)
        length = _r(rng.uniform(*(FIRST_LINK_M if j == 1 else LINK_LENGTH_M)), 3)
        if j == 1:
            axis = str(rng.choice(["+z", "-z"]))
        elif j in (2, _elbow(n)):
            axis = str(rng.choice(["+y", "-y"]))
        else:
            axis = str(rng.choice(["+x", "-x", "+y", "-y", "+z", "-z"]))
        direction = "z" if j == 1 else str(rng.choice(["x", "z"]))
        fold = _fold_angle(links[-1].direction if links else "z", direction, axis)
        links.append(
            Link(
                length_m=length,
                direction=direction,
                axis=axis,
                radius_m=_r(RADIUS_M[1] - (RADIUS_M[1] - RADIUS_M[0]) * (j - 1) / (n - 1), 4),
                mass_kg=_r(density * taper * length, 3),
                armature=_r(rng.uniform(*ARMATURE), 4),
                damping=_r(rng.uniform(*DAMPING), 3),
                range_rad=_draw_range(rng, fold),
            )
        )
    return links


def _fold_angle(parent: str, child: str, axis: str) -> float | None:
    """The joint angle [rad] in (-pi, pi] at which the child link (direction ``child`` of its
    body) points straight back along its parent (``parent``), or None when the joint cannot
    fold it back (its axis along either link: a roll, or a swing across the parent)."""
    a = np.array(_axis(axis), float)
    p, c = np.array(AXES[parent], float), np.array(AXES[child], float)
    if abs(a @ p) > 0.5 or abs(a @ c) > 0.5:
        return None
    # rotating c (perpendicular to a) by t about a: c cos t + (a x c) sin t; equal to -p at:
    return float(math.atan2(np.cross(a, c) @ -p, c @ -p))


def _draw_range(rng: np.random.Generator, fold: float | None) -> tuple[float, float]:
    """A joint range [rad]: each limit ``RANGE_HALF_RAD`` from zero, pulled in to stop
    ``FOLD_MARGIN_RAD`` short of the fold angle. A range through the fold would let a goal
    sit on the far side of a link folded back onto the one before it: a goal the arm cannot
    reach from home without passing through itself (seed 9 before this rule: a wrist link
    swinging through its forearm, no path after 4000 iterations)."""
    lo, hi = -rng.uniform(*RANGE_HALF_RAD), rng.uniform(*RANGE_HALF_RAD)
    if fold is not None and fold > 0:
        hi = min(hi, fold - FOLD_MARGIN_RAD)
    elif fold is not None and fold < 0:
        lo = max(lo, fold + FOLD_MARGIN_RAD)
    return _r(lo, 3), _r(hi, 3)


def gravity_bounds(links: tuple[Link, ...] | list[Link]) -> list[float]:
    """Per joint, an upper bound [Nm] on its gravity torque over every configuration: each
    link's weight times the longest its centre can be from the joint (link lengths along
    the chain; the capsule's centre is its middle)."""
    out = []
    for j in range(len(links)):
        reach, torque = 0.0, 0.0
        for link in links[j:]:
            torque += link.mass_kg * GRAVITY * (reach + link.length_m / 2)
            reach += link.length_m
        out.append(torque)
    return out


def _servo_gains(links: list[Link]) -> tuple[float, float, list[Link]]:
    """(kp [Nm/rad], kv [Nm s/rad], links with armature raised so sqrt(kp / armature) *
    timestep <= ``OMEGA_DT``: the smallest eigenvalue of the joint-space inertia is at least
    the smallest armature, so no mode of the stiffness outruns the step)."""
    kp = _r(max(MIN_KP, max(gravity_bounds(links)) / SERVO_SAG_RAD), 0)
    kv = _r(KV_PER_KP * kp, 1)
    least = kp * (TIMESTEP_S / OMEGA_DT) ** 2
    raised = [replace(link, armature=_r(max(link.armature, least * 1.001), 4)) for link in links]
    return kp, kv, raised


def _damiao_motors(links: list[Link]) -> tuple[tuple[str, ...], list[Link]]:
    """Per joint the weakest motor whose peak is ``MOTOR_MARGIN`` x the joint's gravity bound;
    where even the strongest is not enough every link is made lighter until it is."""
    strongest = max(m.peak_torque_nm for m in MOTORS.values())
    need = max(gravity_bounds(links)) * MOTOR_MARGIN
    if need > strongest:
        scale = 0.98 * strongest / need
        links = [replace(link, mass_kg=_r(link.mass_kg * scale, 3)) for link in links]
    by_peak = sorted(MOTORS.values(), key=lambda m: m.peak_torque_nm)
    motors = tuple(
        next(m.model for m in by_peak if m.peak_torque_nm >= MOTOR_MARGIN * bound)
        for bound in gravity_bounds(links)
    )
    return motors, links


def _draw_home(rng: np.random.Generator, links: list[Link]) -> tuple[float, ...]:
    """Home [rad]: every joint uniform in [-HOME_RAD, HOME_RAD], the elbow bent
    ``ELBOW_RAD`` either way, each at least ``HOME_INSIDE_RAD`` inside its joint's range."""
    n = len(links)
    q = rng.uniform(-HOME_RAD, HOME_RAD, n)
    q[_elbow(n) - 1] = rng.choice([-1.0, 1.0]) * rng.uniform(*ELBOW_RAD)
    lo = np.array([link.range_rad[0] for link in links]) + HOME_INSIDE_RAD
    hi = np.array([link.range_rad[1] for link in links]) - HOME_INSIDE_RAD
    return tuple(_r(x, 3) for x in np.clip(q, lo, hi))


def _draw(
    rng: np.random.Generator, seed: int, attempt: int, family: str, n: int, mounting: str
) -> Draft:
    links = _draw_links(rng, n)
    kp = kv = motors = None
    if family == "damiao":
        motors, links = _damiao_motors(links)
    else:
        kp, kv, links = _servo_gains(links)
    actuators = "named" if family == "amber" else str(rng.choice(["named", "adopted", "none"]))
    channels = None
    if family != "ideal":
        first = int(rng.integers(0, 20))
        stem = "CAN" if family == "amber" else "can"
        channels = {Arm.RIGHT: f"{stem}{first}", Arm.LEFT: f"{stem}{first + 1}"}
    return Draft(
        seed=seed,
        attempt=attempt,
        family=family,
        mounting=mounting,
        style=str(rng.choice(["anatomical", "numbered"])),
        separation_m=_r(rng.uniform(*SEPARATION_M[mounting]), 3),
        pedestal_m=_r(rng.uniform(*PEDESTAL_HEIGHT_M), 3),
        links=tuple(links),
        box_half_m=tuple(_r(h, 3) for h in rng.uniform(*BOX_HALF_M, 3))
        if rng.random() < 0.5
        else None,
        tcp=str(rng.choice(["site", "body"])),
        tcp_extra_m=_r(rng.uniform(0.02, 0.08), 3),
        actuators=actuators,
        kp=kp,
        kv=kv,
        motors=motors,
        home={a: _draw_home(rng, links) for a in SIDES},
        channels=channels,
    )


# ---------------------------------------------------------------- names


def joint_names(draft: Draft, arm: Arm) -> tuple[str, ...]:
    """The MJCF's joint names of ``arm`` (never the twin's canonical ones)."""
    roles = _roles(draft.n)
    if draft.style == "anatomical":
        return tuple(f"{_side(arm)}_{r}" for r in roles)
    return tuple(f"arm_{_side(arm).lower()}_joint{j}" for j in range(1, draft.n + 1))


def _roles(n: int) -> tuple[str, ...]:
    """Role names of an n-joint arm: the 7-joint list without the rolls it lacks ("elbow" is
    joint ``_elbow(n)``; the other names say nothing about the drawn axes)."""
    drop = {7: (), 6: ("forearm_roll",), 5: ("upper_roll", "forearm_roll")}[n]
    return tuple(r for r in ROLES if r not in drop)


def _side(arm: Arm) -> str:
    return "R" if arm is Arm.RIGHT else "L"


def _names(draft: Draft, arm: Arm) -> dict[str, object]:
    """The MJCF's names of ``arm``: pedestal, link bodies, actuators, TCP site, geoms prefix."""
    s = _side(arm)
    if draft.style == "anatomical":
        bodies = tuple(f"{s}_{r}_link" for r in _roles(draft.n))
        acts = tuple(f"{s}_{r}_pos" for r in _roles(draft.n))
        return {"pedestal": f"{s}_pedestal", "bodies": bodies, "acts": acts, "site": f"{s}_tool"}
    low = s.lower()
    bodies = tuple(f"arm_{low}_link{j}" for j in range(1, draft.n + 1))
    acts = tuple(f"arm_{low}_servo{j}" for j in range(1, draft.n + 1))
    return {"pedestal": f"arm_{low}_base", "bodies": bodies, "acts": acts, "site": f"arm_{low}_ee"}


# ---------------------------------------------------------------- writing


def _v(values) -> str:
    return " ".join(f"{_r(x, 5):g}" for x in values)


def _mount(draft: Draft, arm: Arm) -> tuple[tuple[float, float, float], float]:
    """(pedestal position [m], yaw [rad]) of ``arm``: right at -y, left at +y; facing arms
    point at each other, side-by-side ones along +x."""
    y = draft.separation_m / 2 * (-1.0 if arm is Arm.RIGHT else 1.0)
    if draft.mounting == "facing":
        yaw = math.pi / 2 if arm is Arm.RIGHT else -math.pi / 2
    else:
        yaw = 0.0
    return (0.0, y, 0.0), yaw


def _axis(text: str) -> tuple[int, int, int]:
    sign = -1 if text[0] == "-" else 1
    return tuple(sign * c for c in AXES[text[1]])


def _end(link: Link) -> tuple[float, float, float]:
    return tuple(link.length_m * c for c in AXES[link.direction])


def tcp_offset(draft: Draft) -> tuple[float, float, float]:
    """The TCP in the last link's body [m]: ``tcp_extra_m`` beyond the link's end."""
    last = draft.links[-1]
    return tuple((last.length_m + draft.tcp_extra_m) * c for c in AXES[last.direction])


def _arm_xml(draft: Draft, arm: Arm) -> str:
    names = _names(draft, arm)
    jnames = joint_names(draft, arm)
    pos, yaw = _mount(draft, arm)
    quat = (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))
    h = draft.pedestal_m
    first_z = h + PEDESTAL_RADIUS_M + PEDESTAL_GAP_M + draft.links[0].radius_m
    lines = [
        f'    <body name="{names["pedestal"]}" pos="{_v(pos)}" quat="{_v(quat)}">',
        f'      <geom name="{names["pedestal"]}_column" type="capsule" fromto="0 0 0 0 0 {h:g}"'
        f' size="{PEDESTAL_RADIUS_M:g}" mass="8" rgba=".35 .35 .4 1"/>',
    ]
    indent, where = "      ", (0.0, 0.0, first_z)
    for j, link in enumerate(draft.links):
        body = names["bodies"][j]
        lines.append(f'{indent}<body name="{body}" pos="{_v(where)}">')
        lines.append(
            f'{indent}  <joint name="{jnames[j]}" axis="{_v(_axis(link.axis))}" '
            f'range="{_v(link.range_rad)}" armature="{link.armature:g}" '
            f'damping="{link.damping:g}"/>'
        )
        lines.append(
            f'{indent}  <geom name="{body}_shell" type="capsule" fromto="0 0 0 {_v(_end(link))}"'
            f' size="{link.radius_m:g}" mass="{link.mass_kg:g}" rgba=".8 .5 .2 1"/>'
        )
        if j == 0 and draft.box_half_m is not None:
            lines.append(indent + "  " + _box_xml(draft, body, link))
        if j == draft.n - 1 and draft.tcp == "site":
            lines.append(f'{indent}  <site name="{names["site"]}" pos="{_v(tcp_offset(draft))}"/>')
        indent += "  "
        where = _end(link)
    for j in range(draft.n, -1, -1):
        lines.append(f"{'  ' * (j + 2)}</body>")
    return "\n".join(lines)


def _box_xml(draft: Draft, body: str, link: Link) -> str:
    """Link 1's motor housing: a box centred half-way up the column. Every point of it stays
    within ``BOX_REACH_M`` of the joint-1 anchor (which never moves), and two anchors are
    ``separation_m`` apart, so the two arms' boxes never touch; contype 2 / conaffinity 1
    collide with everything (contype 1 / conaffinity 1) but another box."""
    half = draft.box_half_m
    centre = (0.0, 0.0, link.length_m / 2)
    assert math.dist((0, 0, 0), centre) + math.hypot(*half) <= BOX_REACH_M
    assert 2 * BOX_REACH_M < min(min(v) for v in SEPARATION_M.values())
    return (
        f'<geom name="{body}_housing" type="box" pos="{_v(centre)}" size="{_v(half)}"'
        f' mass="0.2" contype="2" conaffinity="1" rgba=".2 .2 .25 1"/>'
    )


def _actuator_xml(draft: Draft) -> str:
    """Position servos (kp from the draft) on every arm joint, unless the draft has none; a
    damiao robot's are replaced by torque motors when it loads."""
    if draft.actuators == "none":
        return ""
    kp = draft.kp if draft.kp is not None else 100.0
    kv = draft.kv if draft.kv is not None else 10.0
    lines = ["  <actuator>"]
    for arm in SIDES:
        acts = _names(draft, arm)["acts"]
        for j, name in enumerate(joint_names(draft, arm)):
            lo, hi = draft.links[j].range_rad
            lines.append(
                f'    <position name="{acts[j]}" joint="{name}" kp="{kp:g}" kv="{kv:g}"'
                f' ctrlrange="{lo:g} {hi:g}"/>'
            )
    lines.append("  </actuator>")
    return "\n".join(lines) + "\n"


def mjcf_text(draft: Draft) -> str:
    """The MJCF scene of ``draft``: floor, two pedestals, two arms, their servos."""
    arms = "\n".join(_arm_xml(draft, a) for a in SIDES)
    return (
        f'<mujoco model="generated_{draft.seed}">\n'
        f"  <!-- rob_twin.experiments.robot_factory seed {draft.seed} attempt {draft.attempt} -->\n"
        '  <compiler angle="radian" autolimits="true"/>\n'
        f'  <option timestep="{FAMILY_TIMESTEP_S.get(draft.family, TIMESTEP_S):g}" '
        'integrator="implicitfast"/>\n'
        "  <worldbody>\n"
        '    <geom name="ground" type="plane" size="3 3 0.05" rgba=".9 .9 .9 1"/>\n'
        '    <light name="sun" pos="0 0 3" dir="0 0 -1" directional="true"/>\n'
        f"{arms}\n"
        "  </worldbody>\n"
        f"{_actuator_xml(draft)}"
        "</mujoco>\n"
    )


def _list(values) -> str:
    return "[" + ", ".join(f'"{v}"' if isinstance(v, str) else f"{v:g}" for v in values) + "]"


def _arm_toml(draft: Draft, arm: Arm) -> str:
    names = _names(draft, arm)
    lines = [f"[arms.{arm.value}]", f"joints = {_list(joint_names(draft, arm))}"]
    if draft.actuators == "named":
        lines.append(f"actuators = {_list(names['acts'])}")
    if draft.tcp == "site":
        lines.append(f'tcp_site = "{names["site"]}"')
    else:
        lines.append(f'tcp_body = "{names["bodies"][-1]}"')
        lines.append(f"tcp_offset_m = {_list(tcp_offset(draft))}")
    lines.append(f"home_rad = {_list(draft.home[arm])}")
    if draft.channels is not None:
        label = f"gen {arm.value}"
        lines.append(f'can = {{ channel = "{draft.channels[arm]}", vendor_label = "{label}" }}')
    return "\n".join(lines) + "\n"


def robot_toml(draft: Draft, mjcf_name: str) -> str:
    """The robot file of ``draft`` (its MJCF ``mjcf_name`` in the same folder)."""
    drives = [f'family = "{draft.family}"']
    if draft.family == "damiao":
        drives.append(f"motors = {_list(draft.motors)}")
        # 7 MIT frames each way at 500 Hz load classic 1 Mbit/s CAN to 0.945: Damiao arms run
        # on CAN FD, as OpenArm's do (the bus budget gate fails them on classic CAN); five or
        # six joints, fewer frames, on the same bus
        drives.append('bus = "fd:1M/5M"')
    if draft.family == "ideal":
        drives += [f"kp = {draft.kp:.1f}", f"kv = {draft.kv:.1f}"]
    return (
        f"# generated by rob_twin.experiments.robot_factory: seed {draft.seed}, "
        f"attempt {draft.attempt}\n"
        f'name = "gen{draft.seed}-{draft.family}-{draft.n}dof"\n'
        f'summary = "{draft.mounting} arms, {draft.n} joints each, {draft.family} drives"\n'
        f'mjcf = "{mjcf_name}"\n'
        f'model_source = "rob_twin.experiments.robot_factory generate_robot(seed={draft.seed})"\n\n'
        "[drives]\n" + "\n".join(drives) + "\n\n"
        f"{_arm_toml(draft, Arm.RIGHT)}\n{_arm_toml(draft, Arm.LEFT)}"
    )


# ---------------------------------------------------------------- checking


def canonical_model(robot_file: Path) -> mujoco.MjModel:
    """The canonical model ``robot_file`` loads into, built afresh (``load_robot_model``
    caches by path, and a redraw rewrites the same path)."""
    return compile_quietly(robot_spec(load_robot_file(robot_file)))


def home_problem(robot_file: Path) -> str | None:
    """Why home is not a clean pose on ``robot_file``'s canonical model, or None: a
    collidable pair closer than ``HOME_CLEARANCE_M`` (MuJoCo's own filter, every geom and body
    margin set to it, the contacts' ``dist`` below it) or a TCP Jacobian near a singularity."""
    model = canonical_model(robot_file)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key(HOME_KEY).id)
    model.geom_margin[:] = HOME_CLEARANCE_M
    # the midphase prunes with body_margin, derived at compile time: without it pairs inside
    # the new margin go unreported (rob_twin.planners.collision.planning_model does the same)
    model.body_margin[:] = HOME_CLEARANCE_M
    mujoco.mj_forward(model, data)
    near = [c for c in data.contact[: data.ncon] if c.dist < HOME_CLEARANCE_M]
    if near:  # (convex colliders may report pairs a little beyond the margin: dist says)
        pair = (model.geom(near[0].geom1).name, model.geom(near[0].geom2).name)
        return f"{len(near)} pairs within {HOME_CLEARANCE_M} m at home, e.g. {pair}"
    for arm in SIDES:
        position, full = jacobian_singular_values(model, data, arm)
        if position[-1] < MIN_POSITION_SV or full[-1] < MIN_FULL_SV:
            return f"{arm.value} TCP Jacobian near singular ({position[-1]:.3g}, {full[-1]:.3g})"
    return None


def jacobian_singular_values(
    model: mujoco.MjModel, data: mujoco.MjData, arm: Arm | str
) -> tuple[np.ndarray, np.ndarray]:
    """Singular values (descending) of ``arm``'s TCP Jacobian at ``data``'s state: position
    rows only [m/rad], and all six with the rotation rows times ``JACOBIAN_LENGTH_M``."""
    jacp, jacr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
    mujoco.mj_jacSite(model, data, jacp, jacr, model.site(tcp_site(arm)).id)
    dofs = []
    for j in range(1, JOINTS_PER_ARM + 1):
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, arm_joint(arm, j))
        if jid < 0:
            break
        dofs.append(model.jnt_dofadr[jid])
    full = np.vstack([jacp[:, dofs], JACOBIAN_LENGTH_M * jacr[:, dofs]])
    return np.linalg.svd(jacp[:, dofs], compute_uv=False), np.linalg.svd(full, compute_uv=False)


def _described(draft: Draft, toml: Path, mjcf: Path, rejected: tuple[str, ...]) -> GeneratedRobot:
    return GeneratedRobot(
        robot_file=toml,
        mjcf_file=mjcf,
        seed=draft.seed,
        attempt=draft.attempt,
        rejected=rejected,
        family=draft.family,
        mounting=draft.mounting,
        joints_per_arm=draft.n,
        separation_m=draft.separation_m,
        tcp=draft.tcp,
        actuators=draft.actuators,
        has_boxes=draft.box_half_m is not None,
        mjcf_joints={a.value: joint_names(draft, a) for a in SIDES},
        home_rad={a.value: draft.home[a] for a in SIDES},
        arm_mass_kg=_r(sum(link.mass_kg for link in draft.links), 3),
        kp=draft.kp,
        kv=draft.kv,
        motors=draft.motors,
    )


# ALOHA's bimanual ViperX 300 (gym-aloha 0.1.5's MJCF, six joints per arm): a third-party robot
# file written as a user would, for tests and the robots benchmark
VIPERX_JOINTS = ("waist", "shoulder", "elbow", "forearm_roll", "wrist_angle", "wrist_rotate")


def aloha_toml(family: str = "ideal", kp: float = 3000.0, kv: float = 60.0) -> str:
    """The robot file of ALOHA's bimanual ViperX 300 (``{site_packages}/gym_aloha/assets``)."""

    def arm(side: str) -> str:
        joints = ", ".join(f'"vx300s_{side}/{j}"' for j in VIPERX_JOINTS)
        return f"""
[arms.{side}]
joints = [{joints}]
tcp_body = "vx300s_{side}/gripper_link"
tcp_offset_m = [0.15, 0.0, 0.0]
home_rad = [0.0, -0.96, 1.16, 0.0, -0.3, 0.0]
"""

    return f"""
name = "aloha"
mjcf = "{{site_packages}}/gym_aloha/assets/bimanual_viperx_transfer_cube.xml"
[drives]
family = "{family}"
kp = {kp}
kv = {kv}
{arm("right")}{arm("left")}"""

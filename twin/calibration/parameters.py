"""The twin's fittable parameters: their names, nominal values, bounds, and how a set of
values changes the MuJoCo model, the drives and the bus.

Every parameter has one name (``TwinParameters`` maps names to values [SI units]):

- ``{arm}/j{n}/armature`` [kg m^2], ``{arm}/j{n}/damping`` [N m s/rad],
  ``{arm}/j{n}/frictionloss`` [N m]: the joint's entries in the MuJoCo model;
- ``{arm}/j{n}/kp`` [N m/rad]: the drive's position-loop gain (the servo actuator's gain and
  bias), ``{arm}/j{n}/lag_s`` [s]: its setpoint lag, ``{arm}/j{n}/integral_gain`` [1/s]: its
  integral action, ``{arm}/j{n}/amps_per_nm`` [drive units / N m]: its torque constant as the
  feedback reports current, ``{arm}/j{n}/zero_offset_rad`` [rad]: the encoder's zero;
- ``{arm}/command_delay_s`` [s]: transport from the host to the drives,
  ``{arm}/feedback_delay_s`` [s]: from the drives to the host;
- ``{arm}/payload_kg`` [kg]: a mass held at the hand (added to the body of the arm's TCP
  site, ROB's hand, at its centre of mass).

``nominal_parameters(model, robot)`` gives the values the twin assumes today (the model's,
the robot's Amber drives' defaults, no delay, no payload), with bounds; ``apply_to_model``
and ``drive_configs`` turn a set of values into a model copy and per-arm drive
configurations. Any robot with Amber drives and seven-joint arms: the model is the robot's
canonical model (``rob_twin.models.robot.Robot.model()``), the drives its
``amber_drive_configs`` (its joint ranges as their bounds; ROB's equal
``default_drive_configs()``). Names are checked: an unknown one is an ``UnknownNameError``
listing the kinds.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass, replace

import mujoco
import numpy as np
from rob_twin.models.errors import InvalidValueError, UnknownNameError
from rob_twin.models.names import (
    Arm,
    arm_actuator,
    arm_joint,
    hand_body,
    tcp_site,
)
from rob_twin.models.robot import Robot, robot_of
from rob_twin.twin.drives.amber_drive import DriveConfig
from rob_twin.twin.drives.amber_robot import amber_drive_configs

JOINT_MODEL_KINDS = ("armature", "damping", "frictionloss", "kp")
JOINT_DRIVE_KINDS = ("lag_s", "integral_gain", "amps_per_nm", "zero_offset_rad")
# a Damiao drive's joint: the identified friction's four terms (joint_friction), the drive's
# MIT gains as a factor on what the host commands, the encoder's zero
FRICTION_KINDS = ("friction_fo", "friction_fv", "friction_fc", "friction_k")
DAMIAO_DRIVE_KINDS = FRICTION_KINDS + ("kp_scale", "kd_scale", "zero_offset_rad")
AMBER_JOINT_KINDS = JOINT_MODEL_KINDS + JOINT_DRIVE_KINDS
DAMIAO_JOINT_KINDS = ("armature",) + DAMIAO_DRIVE_KINDS
FAMILY_JOINT_KINDS = {"amber": AMBER_JOINT_KINDS, "damiao": DAMIAO_JOINT_KINDS}
JOINT_KINDS = AMBER_JOINT_KINDS + tuple(k for k in DAMIAO_JOINT_KINDS if k not in AMBER_JOINT_KINDS)
ARM_KINDS = ("command_delay_s", "feedback_delay_s", "payload_kg")
UNITS = {
    "friction_fo": "N m",
    "friction_fv": "N m s/rad",
    "friction_fc": "N m",
    "friction_k": "s/rad",
    "kp_scale": "x commanded kp",
    "kd_scale": "x commanded kd",
    "armature": "kg m^2",
    "damping": "N m s/rad",
    "frictionloss": "N m",
    "kp": "N m/rad",
    "lag_s": "s",
    "integral_gain": "1/s",
    "amps_per_nm": "units/N m",
    "zero_offset_rad": "rad",
    "command_delay_s": "s",
    "feedback_delay_s": "s",
    "payload_kg": "kg",
}
_NAME = re.compile(r"^(right|left)/(?:j([1-7])/)?([a-z_]+)$")


class ParameterError(InvalidValueError):
    """A parameter value or bound that is not valid (names the parameter and the range)."""

    subject = "twin parameter"


@dataclass(frozen=True)
class ParameterName:
    """A parsed parameter name: arm, joint (1..7, or None for arm-wide kinds) and kind."""

    arm: Arm
    joint: int | None
    kind: str

    def __str__(self) -> str:
        middle = f"j{self.joint}/" if self.joint is not None else ""
        return f"{self.arm.value}/{middle}{self.kind}"

    @property
    def unit(self) -> str:
        return UNITS[self.kind]


def parse_name(name: str) -> ParameterName:
    """``"right/j2/damping"`` -> ParameterName; UnknownNameError for anything else."""
    m = _NAME.match(name) if isinstance(name, str) else None
    valid = [f"ARM/jN/{k}" for k in JOINT_KINDS] + [f"ARM/{k}" for k in ARM_KINDS]
    if m is None:
        raise UnknownNameError("twin parameter", name, valid)
    arm, joint, kind = m.group(1), m.group(2), m.group(3)
    if (joint is None and kind not in ARM_KINDS) or (joint is not None and kind not in JOINT_KINDS):
        raise UnknownNameError("twin parameter", name, valid)
    return ParameterName(Arm(arm), int(joint) if joint else None, kind)


def check_family(values: dict[str, float], robot: Robot | None = None) -> None:
    """UnknownNameError naming the first name in ``values`` that is not a parameter of
    ``robot`` (None: the default robot): a kind of another drive family, or a joint the arm
    does not have."""
    names = set(all_names(robot=robot))
    for name in values:
        if name not in names:
            parse_name(name)  # an unknown kind is named as such
            raise UnknownNameError(
                f"parameter of robot {robot_of(robot).name!r}",
                name,
                sorted({parse_name(n).kind for n in names}),
            )


def family_kinds(robot: Robot | None = None) -> tuple[str, ...]:
    """The joint parameter kinds of ``robot``'s drive family (None: the default robot);
    MissingCapabilityError for a family without a calibration model (``ideal``)."""
    robot = robot_of(robot)
    if robot.family not in FAMILY_JOINT_KINDS:
        from rob_twin.models.robot import CAN_DRIVES

        robot.require(CAN_DRIVES, "a calibration (fitted drive parameters)")
    return FAMILY_JOINT_KINDS[robot.family]


def all_names(kinds: tuple[str, ...] | None = None, robot: Robot | None = None) -> list[str]:
    """Every parameter name of both arms of ``robot`` (None: the default robot): its drive
    family's kinds, one set per arm joint (of ``kinds`` only, when given)."""
    robot = robot_of(robot)
    joint_kinds = family_kinds(robot)
    out = []
    for arm in Arm:
        for kind in ARM_KINDS:
            if kinds is None or kind in kinds:
                out.append(f"{arm.value}/{kind}")
        for j in range(1, robot.joint_count(arm) + 1):
            for kind in joint_kinds:
                if kinds is None or kind in kinds:
                    out.append(f"{arm.value}/j{j}/{kind}")
    return out


def select(patterns: list[str] | tuple[str, ...], robot: Robot | None = None) -> list[str]:
    """Names of ``robot``'s parameters (None: the default robot) matching any of
    ``patterns``: a kind (``damping``), a full name, or a glob over names
    (``right/j*/armature``, ``*/command_delay_s``). UnknownNameError when a pattern matches
    nothing (a kind of another drive family matches nothing)."""
    import fnmatch

    names = all_names(robot=robot)
    kinds = family_kinds(robot) + ARM_KINDS
    out: list[str] = []
    for pattern in patterns:
        if pattern in kinds:
            hits = all_names((pattern,), robot)
        else:
            hits = fnmatch.filter(names, pattern)
        if not hits:
            raise UnknownNameError("parameter pattern", pattern, list(kinds) + ["ARM/jN/KIND"])
        out.extend(h for h in hits if h not in out)
    return out


@dataclass(frozen=True)
class Bounds:
    """The valid range of one parameter [its unit]."""

    lower: float
    upper: float


def _joint_id(model: mujoco.MjModel, arm: Arm, j: int) -> int:
    return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, arm_joint(arm, j))


def _actuator_id(model: mujoco.MjModel, arm: Arm, j: int) -> int:
    return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, arm_actuator(arm, j))


def _payload_body(model: mujoco.MjModel, arm: Arm) -> int:
    """The body a payload of ``arm`` is added to: its TCP site's (ROB: the hand), else the
    hand body; ParameterError when the model has neither."""
    site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, tcp_site(arm))
    if site >= 0:
        return int(model.site_bodyid[site])
    body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, hand_body(arm))
    if body < 0:
        raise ParameterError(
            f"{arm.value}/payload_kg", "no hand", f"a model with site {tcp_site(arm)!r}"
        )
    return body


def nominal_parameters(model: mujoco.MjModel, robot: Robot | None = None) -> dict[str, float]:
    """The values the twin assumes today for every parameter name of ``robot`` (a
    ``rob_twin.models.robot.Robot``; None: the default robot): ``model``'s (the robot's
    canonical model, or a copy with values applied) and its drives' (Amber: the drive
    configurations; Damiao: the robot file's identified friction, else none, and gains as
    commanded)."""
    robot = robot_of(robot)
    kinds = family_kinds(robot)
    drives = amber_drive_configs(robot) if robot.family == "amber" else None
    friction = robot.joint_friction
    out: dict[str, float] = {}
    for arm in Arm:
        out[f"{arm.value}/command_delay_s"] = 0.0
        out[f"{arm.value}/feedback_delay_s"] = 0.0
        out[f"{arm.value}/payload_kg"] = 0.0
        for j in range(1, robot.joint_count(arm) + 1):
            jid = _joint_id(model, arm, j)
            dof = int(model.jnt_dofadr[jid])
            prefix = f"{arm.value}/j{j}/"
            out[prefix + "armature"] = float(model.dof_armature[dof])
            if drives is not None:
                aid = _actuator_id(model, arm, j)
                out[prefix + "damping"] = float(model.dof_damping[dof])
                out[prefix + "frictionloss"] = float(model.dof_frictionloss[dof])
                out[prefix + "kp"] = float(model.actuator_gainprm[aid, 0])
                cfg = drives[arm][j - 1]
                for kind in JOINT_DRIVE_KINDS:
                    out[prefix + kind] = float(getattr(cfg, kind))
                continue
            drive = _damiao_drive_nominals(friction[j - 1] if friction is not None else None)
            out.update({prefix + kind: v for kind, v in drive.items() if kind in kinds})
    return out


def _damiao_drive_nominals(friction) -> dict[str, float]:
    """A Damiao joint's drive-side kinds as the twin assumes them: its identified friction
    (a ``JointFriction``; None: none), gains as commanded, the encoder's zero at 0."""
    f = friction
    return {
        "friction_fo": f.fo_nm if f else 0.0,
        "friction_fv": f.fv_nm_s_per_rad if f else 0.0,
        "friction_fc": f.fc_nm if f else 0.0,
        "friction_k": f.k_s_per_rad if f else 0.0,
        "kp_scale": 1.0,
        "kd_scale": 1.0,
        "zero_offset_rad": 0.0,
    }


def default_bounds(name: str, nominal: float) -> Bounds:
    """Bounds a fit starts from: x0.1-x10 of a positive nominal (0-10x a typical scale when
    it is 0), delays 0-50 ms, payload 0-5 kg, zero offsets +-0.1 rad."""
    kind = parse_name(name).kind
    if kind in ("command_delay_s", "feedback_delay_s"):
        return Bounds(0.0, 0.05)
    if kind == "payload_kg":
        return Bounds(0.0, 5.0)
    if kind == "zero_offset_rad":
        return Bounds(nominal - 0.1, nominal + 0.1)
    if kind == "friction_fo":
        return Bounds(nominal - 0.5, nominal + 0.5)
    if kind in ("kp_scale", "kd_scale"):
        return Bounds(0.2 * nominal, 5.0 * nominal)
    if kind == "friction_k":
        return Bounds(1.0, 1000.0)
    scale = (
        nominal
        if nominal > 0
        else {
            "armature": 0.1,
            "damping": 5.0,
            "frictionloss": 2.0,
            "friction_fv": 1.0,
            "friction_fc": 1.0,
        }.get(kind, 1.0)
    )
    return Bounds(0.0 if nominal <= 0 else 0.1 * scale, 10.0 * scale)


def check_values(values: dict[str, float]) -> dict[str, float]:
    """``values`` with every name parsed and every value finite and in its kind's physical
    range (>= 0 except zero offsets); ParameterError / UnknownNameError otherwise."""
    out = {}
    for name, value in values.items():
        kind = parse_name(name).kind
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParameterError(name, value, "a finite number")
        value = float(value)
        if not math.isfinite(value):
            raise ParameterError(name, value, "a finite number")
        if kind not in ("zero_offset_rad", "friction_fo") and value < 0:
            raise ParameterError(name, value, f">= 0 {UNITS[kind]}")
        if kind in ("kp", "amps_per_nm", "kp_scale", "kd_scale") and value <= 0:
            raise ParameterError(name, value, f"> 0 {UNITS[kind]}")
        out[name] = value
    return out


def apply_to_model(model: mujoco.MjModel, values: dict[str, float]) -> mujoco.MjModel:
    """A copy of ``model`` with the model-side parameters of ``values`` (armature, damping,
    friction loss, position gain, payload); ``model`` itself is not changed."""
    values = check_values(values)
    out = copy.copy(model)
    for name, value in values.items():
        p = parse_name(name)
        if p.kind == "payload_kg":
            body = _payload_body(out, p.arm)
            base = float(model.body_mass[body])
            out.body_mass[body] = base + value
            # a point mass at the body's centre of mass scales no inertia; keep the body's
            # own inertia (the payload's rotational inertia is not a parameter)
            continue
        if p.kind not in JOINT_MODEL_KINDS:
            continue
        jid = _joint_id(out, p.arm, p.joint)
        dof = int(out.jnt_dofadr[jid])
        if p.kind == "kp":
            aid = _actuator_id(out, p.arm, p.joint)
            out.actuator_gainprm[aid, 0] = value
            out.actuator_biasprm[aid, 1] = -value
        else:
            getattr(out, f"dof_{p.kind}")[dof] = value
    return out


def drive_configs(
    values: dict[str, float], robot: Robot | None = None
) -> dict[Arm, tuple[DriveConfig, ...]]:
    """Each arm's drive configurations with the drive-side parameters of ``values`` (lag,
    integral gain, torque constant, zero offset) over ``robot``'s Amber drives
    (``amber_drive_configs``; None: the default robot)."""
    values = check_values(values)
    base = amber_drive_configs(robot_of(robot))
    out = {}
    for arm in Arm:
        cfgs = []
        for j, cfg in enumerate(base[arm], start=1):
            changes = {
                kind: values[f"{arm.value}/j{j}/{kind}"]
                for kind in JOINT_DRIVE_KINDS
                if f"{arm.value}/j{j}/{kind}" in values
            }
            cfgs.append(replace(cfg, **changes) if changes else cfg)
        out[arm] = tuple(cfgs)
    return out


def delays(values: dict[str, float]) -> dict[Arm, tuple[float, float]]:
    """Each arm's (command delay, feedback delay) [s] in ``values`` (0 when absent)."""
    values = check_values(values)
    return {
        arm: (
            values.get(f"{arm.value}/command_delay_s", 0.0),
            values.get(f"{arm.value}/feedback_delay_s", 0.0),
        )
        for arm in Arm
    }


def as_vector(values: dict[str, float], names: list[str]) -> np.ndarray:
    return np.array([values[n] for n in names], float)


@dataclass(frozen=True)
class DamiaoArmParameters:
    """One arm's Damiao drive-side values, per joint: the identified friction (None: the
    robot has none and ``values`` set none, so the MJCF's damping and friction loss act),
    the factors on the host's MIT gains, and the encoders' zeros [rad]."""

    friction: tuple | None
    kp_scale: tuple[float, ...]
    kd_scale: tuple[float, ...]
    zero_offset_rad: tuple[float, ...]


def damiao_parameters(
    values: dict[str, float], robot: Robot | None = None
) -> dict[Arm, DamiaoArmParameters]:
    """Each arm's Damiao drive-side values: ``robot``'s (its robot file's identified friction,
    gains as commanded, zeros at 0) with those of ``values`` over them. A friction term set in
    ``values`` on a robot without identified friction starts the others from 0."""
    from rob_twin.twin.drives.joint_friction import JointFriction

    robot = robot_of(robot)
    values = check_values(values)
    base = robot.joint_friction
    out = {}
    for arm in Arm:
        n = robot.joint_count(arm)
        nominal = [_damiao_drive_nominals(base[j - 1] if base else None) for j in range(1, n + 1)]

        def per_joint(kind: str, arm=arm, nominal=nominal) -> tuple[float, ...]:
            return tuple(
                float(values.get(f"{arm.value}/j{j}/{kind}", nom[kind]))
                for j, nom in enumerate(nominal, start=1)
            )

        has_friction = robot.joint_friction is not None or any(
            f"{arm.value}/j{j}/{k}" in values for j in range(1, n + 1) for k in FRICTION_KINDS
        )
        friction = (
            tuple(
                JointFriction(*row)
                for row in zip(*(per_joint(k) for k in FRICTION_KINDS), strict=True)
            )
            if has_friction
            else None
        )
        out[arm] = DamiaoArmParameters(
            friction, per_joint("kp_scale"), per_joint("kd_scale"), per_joint("zero_offset_rad")
        )
    return out

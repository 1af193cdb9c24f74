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
    JOINTS_PER_ARM,
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
JOINT_KINDS = JOINT_MODEL_KINDS + JOINT_DRIVE_KINDS
ARM_KINDS = ("command_delay_s", "feedback_delay_s", "payload_kg")
UNITS = {
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


def all_names(kinds: tuple[str, ...] | None = None) -> list[str]:
    """Every parameter name of both arms (of ``kinds`` only, when given)."""
    out = []
    for arm in Arm:
        for kind in ARM_KINDS:
            if kinds is None or kind in kinds:
                out.append(f"{arm.value}/{kind}")
        for j in range(1, JOINTS_PER_ARM + 1):
            for kind in JOINT_KINDS:
                if kinds is None or kind in kinds:
                    out.append(f"{arm.value}/j{j}/{kind}")
    return out


def select(patterns: list[str] | tuple[str, ...]) -> list[str]:
    """Names matching any of ``patterns``: a kind (``damping``), a full name, or a glob over
    names (``right/j*/armature``, ``*/command_delay_s``). UnknownNameError when a pattern
    matches nothing."""
    import fnmatch

    names = all_names()
    out: list[str] = []
    for pattern in patterns:
        if pattern in JOINT_KINDS or pattern in ARM_KINDS:
            hits = all_names((pattern,))
        else:
            hits = fnmatch.filter(names, pattern)
        if not hits:
            raise UnknownNameError(
                "parameter pattern", pattern, list(JOINT_KINDS + ARM_KINDS) + ["ARM/jN/KIND"]
            )
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
    """The values the twin assumes today for every parameter name: ``model``'s (the
    robot's canonical model, or a copy with values applied) and ``robot``'s Amber drives
    (a ``rob_twin.models.robot.Robot``; None: the default robot)."""
    drives = amber_drive_configs(robot_of(robot))
    out: dict[str, float] = {}
    for arm in Arm:
        out[f"{arm.value}/command_delay_s"] = 0.0
        out[f"{arm.value}/feedback_delay_s"] = 0.0
        out[f"{arm.value}/payload_kg"] = 0.0
        for j in range(1, JOINTS_PER_ARM + 1):
            jid, aid = _joint_id(model, arm, j), _actuator_id(model, arm, j)
            dof = int(model.jnt_dofadr[jid])
            prefix = f"{arm.value}/j{j}/"
            out[prefix + "armature"] = float(model.dof_armature[dof])
            out[prefix + "damping"] = float(model.dof_damping[dof])
            out[prefix + "frictionloss"] = float(model.dof_frictionloss[dof])
            out[prefix + "kp"] = float(model.actuator_gainprm[aid, 0])
            cfg = drives[arm][j - 1]
            for kind in JOINT_DRIVE_KINDS:
                out[prefix + kind] = float(getattr(cfg, kind))
    return out


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
    scale = (
        nominal
        if nominal > 0
        else {"armature": 0.1, "damping": 5.0, "frictionloss": 2.0}.get(kind, 1.0)
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
        if kind != "zero_offset_rad" and value < 0:
            raise ParameterError(name, value, f">= 0 {UNITS[kind]}")
        if kind in ("kp", "amps_per_nm") and value <= 0:
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

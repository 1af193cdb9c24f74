"""``Robot``: one robot, resolved once at the edge and passed down.

A command line or API call names a robot (``--robot NAME|PATH``, a scenario's ``"robot"``)
once; ``robot_of`` turns that into a ``Robot``: the validated robot file
(``rob_twin.models.robot_description``), its compiled canonical model
(``rob_twin.models.robot_model``), each arm's joints and ranges, its drive family, its buses
and what it can do. Everything below asks the object, never the name.

What differs between robots is data (the file, the model) or a *capability*: a named thing
a robot's drive family or model provides. A command a robot cannot serve calls
``robot.require(capability, what)``, which raises ``MissingCapabilityError`` (bad input,
exit 2) naming the capability, the robot and the robots' property that would provide it.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import mujoco
import numpy as np
from rob_twin.models import names as N
from rob_twin.models.errors import InvalidValueError
from rob_twin.models.names import Arm
from rob_twin.models.robot_description import RobotDescription, resolve_robot

# Capabilities: what a robot can do, each derived from its file or model (``capabilities``).
CAN_DRIVES = "can_drives"  # drives with a CAN model: owners, codec, bank (amber, damiao)
AMBER_DRIVES = "amber_drives"  # Amber position drives: the socketcand bank, calibration
TRACKED_BASE = "tracked_base"  # a free-floating base with treads (scenario "base" steps)
# both arms have seven joints: what the Amber codec drives (seven frames a sample, ids
# 0x11..0x17); Damiao drives take any joint count (one MIT frame per joint)
SEVEN_JOINT_ARMS = "seven_joint_arms"
CARTESIAN_KINEMATICS = "cartesian_kinematics"  # TCP kinematics of 5-7 joint arms: carries, poses

CAPABILITY_SOURCES: dict[str, str] = {
    CAN_DRIVES: "drives.family 'amber' or 'damiao' (family 'ideal' has no CAN model)",
    AMBER_DRIVES: "drives.family 'amber'",
    TRACKED_BASE: f"a free joint {N.BASE_FREEJOINT!r} and tread geoms in the MJCF",
    SEVEN_JOINT_ARMS: "seven joints per arm (the Amber codec drives seven: a sample is seven "
    "frames on ids 0x11..0x17; drives.family 'damiao' takes 5 to 7)",
    CARTESIAN_KINEMATICS: "arms of 5 to 7 joints with a TCP site, whose TCP kinematics "
    "planners.robot_kinematics.arm_kinematics serves (ROB: its Pinocchio ArmKinematics; any "
    "other robot: planners.mj_kinematics.MjArmKinematics on its own model)",
}


class MissingCapabilityError(InvalidValueError):
    """A command asked a robot for something it cannot do (bad input: exit 2). The message
    names the robot, what was asked, the missing capability and what would provide it."""

    def __init__(self, robot: str, what: str, capability: str):
        super().__init__("robot", robot, f"a robot with {CAPABILITY_SOURCES[capability]}")
        self.capability, self.what = capability, what
        self.args = (
            f"robot {robot} cannot serve {what}: it lacks capability {capability!r} "
            f"(valid: a robot with {CAPABILITY_SOURCES[capability]})",
        )


@dataclass(frozen=True, eq=False)
class Robot:
    """A robot file and everything derived from it; build with ``robot_of``.

    ``model()`` is a fresh copy of the compiled canonical model each call (one MjData per
    thread: callers own what they get)."""

    description: RobotDescription
    _model: mujoco.MjModel = field(repr=False)

    # ------------------------------------------------------------------ identity
    @property
    def name(self) -> str:
        return self.description.name

    @property
    def path(self) -> Path:
        """The robot file [path]."""
        return self.description.path

    @property
    def family(self) -> str:
        """Drive family: ``amber``, ``damiao`` or ``ideal``."""
        return self.description.family

    @property
    def spec(self) -> str:
        """How to name this robot again (a shipped name or the file's path): what a scenario's
        ``"robot"`` and a config's ``robot`` field hold."""
        from rob_twin.models.robot_description import SHIPPED

        for name, path in SHIPPED.items():
            if path.resolve() == self.path:
                return name
        return str(self.path)

    @cached_property
    def model_hash(self) -> str:
        """sha256 of the compiled canonical model's binary (16 hex digits): which model ran."""
        buf = np.zeros(mujoco.mj_sizeModel(self._model), dtype=np.uint8)
        mujoco.mj_saveModel(self._model, None, buf)
        return hashlib.sha256(buf.tobytes()).hexdigest()[:16]

    def identity(self) -> dict:
        """``{"name", "file", "family", "model_hash"}``: what every summary and report records."""
        return {
            "name": self.name,
            "file": self.spec,
            "family": self.family,
            "model_hash": self.model_hash,
        }

    # ------------------------------------------------------------------ model and arms
    def model(self) -> mujoco.MjModel:
        """A fresh copy of the compiled canonical model."""
        return copy.deepcopy(self._model)

    def joints(self, arm: Arm | str) -> tuple[str, ...]:
        """``arm``'s canonical joint names, base to tip (``right/j1`` .. ``right/jN``)."""
        n = len(self.description.arm(arm).joints)
        return tuple(N.arm_joint(arm, j) for j in range(1, n + 1))

    def group_arms(self) -> dict[str, list[str]]:
        """Both arms as an ArmGroup takes them: ``{"right": [joint names], "left": [...]}``,
        each with the robot's own joint count (a fresh dict on every call)."""
        return {arm.value: list(self.joints(arm)) for arm in Arm}

    def joint_count(self, arm: Arm | str) -> int:
        return len(self.description.arm(arm).joints)

    def joint_ranges(self, arm: Arm | str) -> list[tuple[float, float]]:
        """``arm``'s joint ranges [rad], base to tip, from the model."""
        ids = [self._model.joint(j).id for j in self.joints(arm)]
        return [(float(lo), float(hi)) for lo, hi in self._model.jnt_range[ids]]

    def limited_joint_ranges(self) -> dict[str, tuple[float, float]]:
        """Every limited hinge or slide joint of the model by name [rad or m]."""
        one_dof = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
        m = self._model
        return {
            m.joint(j).name: (float(m.jnt_range[j, 0]), float(m.jnt_range[j, 1]))
            for j in range(m.njnt)
            if m.jnt_limited[j] and int(m.jnt_type[j]) in one_dof and m.joint(j).name
        }

    @property
    def timestep_s(self) -> float:
        """The model's physics time step [s]."""
        return float(self._model.opt.timestep)

    def has_keyframe(self, name: str) -> bool:
        return mujoco.mj_name2id(self._model, mujoco.mjtObj.mjOBJ_KEY, name) >= 0

    def home(self, arm: Arm | str) -> np.ndarray:
        """``arm``'s home pose [rad] (the file's ``home_rad``)."""
        return np.array(self.description.arm(arm).home_rad, dtype=float)

    @property
    def motors(self) -> tuple[str, ...]:
        """Damiao motor type per joint (``drives.motors``; empty for other families)."""
        return tuple(self.description.file.drives.motors or ())

    @property
    def joint_friction(self):
        """Each arm joint's identified friction (``drives.friction``, a tuple of
        ``rob_twin.twin.drives.joint_friction.JointFriction``, the same on both arms), or None
        when the file gives none (the MJCF's damping and friction loss act alone)."""
        f = self.description.file.drives.friction
        if f is None:
            return None
        from rob_twin.models.joint_friction import JointFriction

        return tuple(
            JointFriction(*row)
            for row in zip(f.fo_nm, f.fv_nm_s_per_rad, f.fc_nm, f.k_s_per_rad, strict=True)
        )

    @property
    def friction_source(self) -> str | None:
        """Where the robot file's joint friction comes from (None: it gives none)."""
        f = self.description.file.drives.friction
        return f.source if f is not None else None

    @property
    def bus_spec(self) -> str:
        """The arms' bus as the file says, in ``--bus`` syntax (``1M``, ``fd:1M/5M``)."""
        return self.description.file.drives.bus

    def channel(self, arm: Arm | str) -> str | None:
        """The CAN interface of ``arm``'s drives as the file says (None: the file names none)."""
        can = self.description.arm(arm).can
        return can.channel if can is not None else None

    # ------------------------------------------------------------------ capabilities
    @cached_property
    def capabilities(self) -> frozenset[str]:
        caps = set()
        if self.family in ("amber", "damiao"):
            caps.add(CAN_DRIVES)
        if self.family == "amber":
            caps.add(AMBER_DRIVES)
        if all(self.joint_count(a) == N.JOINTS_PER_ARM for a in Arm):
            caps.add(SEVEN_JOINT_ARMS)
        m = self._model
        has = [
            mujoco.mj_name2id(m, kind, name) >= 0
            for kind, name in (
                (mujoco.mjtObj.mjOBJ_JOINT, N.BASE_FREEJOINT),
                (mujoco.mjtObj.mjOBJ_GEOM, N.TREAD_LEFT_GEOM),
                (mujoco.mjtObj.mjOBJ_GEOM, N.TREAD_RIGHT_GEOM),
            )
        ]
        if all(has):
            caps.add(TRACKED_BASE)
        from rob_twin.models.robot_description import MIN_IDEAL_JOINTS

        if all(MIN_IDEAL_JOINTS <= self.joint_count(a) <= N.JOINTS_PER_ARM for a in Arm) and all(
            mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, N.tcp_site(a)) >= 0 for a in Arm
        ):
            caps.add(CARTESIAN_KINEMATICS)
        return frozenset(caps)

    def can(self, capability: str) -> bool:
        if capability not in CAPABILITY_SOURCES:
            raise InvalidValueError("capability", capability, sorted(CAPABILITY_SOURCES))
        return capability in self.capabilities

    def require(self, capability: str, what: str) -> None:
        """MissingCapabilityError unless the robot has ``capability``; ``what``: the command or
        feature that needs it, for the message (e.g. ``"rob-twin rehearse"``)."""
        if not self.can(capability):
            raise MissingCapabilityError(f"{self.name!r} ({self.spec})", what, capability)


_ROBOTS: dict[Path, Robot] = {}


def robot_of(robot: Robot | RobotDescription | str | Path | None = None) -> Robot:
    """The ``Robot`` of a shipped name, a robot file path, a description or a Robot (None:
    ``rob_twin.models.names.DEFAULT_ROBOT``). RobotFileError (exit 2) names what is wrong.
    Built once per file per process (the compiled model is cached; ``model()`` copies it)."""
    if isinstance(robot, Robot):
        return robot
    desc = resolve_robot(N.DEFAULT_ROBOT if robot is None else robot)
    if desc.path not in _ROBOTS:
        from rob_twin.models.robot_model import load_robot_model

        _ROBOTS[desc.path] = Robot(desc, load_robot_model(desc))
    return _ROBOTS[desc.path]

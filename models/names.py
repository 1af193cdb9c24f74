"""The one constants module: every name the project spells, and ROB's physical mapping.

It lives in ``controllers/`` because that is the lowest layer: the hardware-facing
code, the planner and the twin may all import it. It is pure data (no mujoco).

Physical mapping (seed 001, section 4): ROB's RIGHT arm carries the vendor label
L-10 and sits on bus CAN10; its LEFT arm is R-11 on CAN11. Vendor labels are not a
substitute for a measured mapping: the rehearsal checks it joint by joint.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from rob_twin.models.errors import UnknownNameError

JOINTS_PER_ARM = 7


class Arm(enum.StrEnum):
    """ROB's physical arms, named for the robot's own sides.

    A ``StrEnum``: an Arm is the string ``"right"``/``"left"`` wherever an arm name is taken
    (``ArmGroup`` keys, dict lookups, JSON), and ``str(Arm.RIGHT)`` / ``f"{Arm.RIGHT}"`` is
    ``"right"`` (``repr`` still names the member)."""

    RIGHT = "right"
    LEFT = "left"

    @classmethod
    def parse(cls, value: str | Arm) -> Arm:
        """Parse ``"right"``/``"left"`` (any case) or an Arm; raise UnknownNameError otherwise."""
        if isinstance(value, Arm):
            return value
        if not isinstance(value, str):  # a number, None, a bool: never str() it into a name
            raise UnknownNameError("arm", value, [a.value for a in cls])
        try:
            return cls(value.lower())
        except ValueError:
            raise UnknownNameError("arm", value, [a.value for a in cls]) from None


@dataclass(frozen=True)
class BusMapping:
    """Where one physical arm lives on the wire."""

    arm: Arm
    vendor_label: str
    channel: str  # CAN interface name on the robot host, and the virtual channel in the twin


BUS_MAPPING: dict[Arm, BusMapping] = {
    Arm.RIGHT: BusMapping(Arm.RIGHT, "L-10", "CAN10"),
    Arm.LEFT: BusMapping(Arm.LEFT, "R-11", "CAN11"),
}

# CAN identifiers (seed 001, section 3): command 0x10 + j, feedback 0x90 + j, j = 1..7.
COMMAND_ID_BASE = 0x10
FEEDBACK_ID_BASE = 0x90
COMMAND_IDS = tuple(COMMAND_ID_BASE + j for j in range(1, JOINTS_PER_ARM + 1))
FEEDBACK_IDS = tuple(FEEDBACK_ID_BASE + j for j in range(1, JOINTS_PER_ARM + 1))


def arm_joint(arm: Arm | str, j: int) -> str:
    """MuJoCo joint name of joint ``j`` (1..7) of ``arm``: ``right/j1`` .. ``left/j7``."""
    arm = Arm.parse(arm)
    if not 1 <= j <= JOINTS_PER_ARM:
        raise UnknownNameError("joint number", j, [str(i) for i in range(1, JOINTS_PER_ARM + 1)])
    return f"{arm.value}/j{j}"


def arm_joints(arm: Arm | str) -> tuple[str, ...]:
    """The seven joint names of ``arm`` in chain order."""
    return tuple(arm_joint(arm, j) for j in range(1, JOINTS_PER_ARM + 1))


def group_arms() -> dict[str, list[str]]:
    """Both arms as an ArmGroup takes them: ``{"right": [7 joint names], "left": [...]}``
    (a fresh dict on every call)."""
    return {arm.value: list(arm_joints(arm)) for arm in Arm}


def arm_actuator(arm: Arm | str, j: int) -> str:
    """Actuator (position servo) driving joint ``j`` of ``arm``."""
    return arm_joint(arm, j) + "_servo"


def arm_actuators(arm: Arm | str) -> tuple[str, ...]:
    return tuple(arm_actuator(arm, j) for j in range(1, JOINTS_PER_ARM + 1))


def arm_prefix(arm: Arm | str) -> str:
    return Arm.parse(arm).value + "/"


def gripper_joint(arm: Arm | str) -> str:
    """The (driven) finger slide joint of ``arm``'s parallel gripper."""
    return arm_prefix(arm) + "finger_a"


def gripper_follower_joint(arm: Arm | str) -> str:
    return arm_prefix(arm) + "finger_b"


def gripper_actuator(arm: Arm | str) -> str:
    return arm_prefix(arm) + "gripper"


def tcp_site(arm: Arm | str) -> str:
    """Tool centre point site, 0.08 m beyond the hand frame (DESIGN.md reference facts)."""
    return arm_prefix(arm) + "tcp"


def arm_base_body(arm: Arm | str) -> str:
    return arm_prefix(arm) + "mount"


def arm_link_body(arm: Arm | str, j: int) -> str:
    return arm_prefix(arm) + f"link{j}"


def hand_body(arm: Arm | str) -> str:
    return arm_prefix(arm) + "hand"


# Whole-body names.
BASE_BODY = "base"
BASE_FREEJOINT = "base/free"
TREAD_LEFT_GEOM = "base/tread_left"
TREAD_RIGHT_GEOM = "base/tread_right"
TREAD_GEOMS = (TREAD_LEFT_GEOM, TREAD_RIGHT_GEOM)
TORSO_BODY = "torso"
TORSO_JOINT = "torso/yaw"
TORSO_ACTUATOR = "torso/yaw_servo"
HEAD_BODY = "head"
HEAD_PAN_JOINT = "head/pan"
HEAD_TILT_JOINT = "head/tilt"
HEAD_PAN_ACTUATOR = "head/pan_servo"
HEAD_TILT_ACTUATOR = "head/tilt_servo"
HEAD_CAMERA = "head/rgb"
RANGE_SENSOR_SITE = "base/lidar"
RANGE_SENSOR_BEAMS = 36  # a fan of rangefinders, 10 degrees apart, 360 degrees
RANGE_SENSOR_PREFIX = "base/lidar_"
# The driven base's sensors: two 2D lidars (front, back), a gyro, a floor-flow velocimeter.
LIDAR_FRONT_SITE = "base/lidar_front"
LIDAR_BACK_SITE = "base/lidar_back"
LIDAR_SITES = {"front": LIDAR_FRONT_SITE, "back": LIDAR_BACK_SITE}
IMU_SITE = "base/imu"
GYRO_SENSOR = "base/gyro"
FLOW_SITE = "base/flow"
FLOW_SENSOR = "base/flow_velocity"

# Scene names.
TABLE_BODY = "table"
TABLE_TOP_GEOM = "table/top"
CAN_BODY = "can"
CAN_GEOM = "can/body"
FLOOR_GEOM = "floor"
OVERVIEW_CAMERA = "overview"
FRONT_CAMERA = "front"
ROOM_WALL_PREFIX = "room/wall_"
SCENE_CAMERAS = (OVERVIEW_CAMERA, FRONT_CAMERA)


def range_sensor(i: int) -> str:
    return f"{RANGE_SENSOR_PREFIX}{i:02d}"


ALL_ARM_JOINTS = arm_joints(Arm.RIGHT) + arm_joints(Arm.LEFT)

# Robots the twin can run; the drive family follows the robot: Amber position drives (ROB)
# or Damiao MIT drives (OpenArm v2, models/openarm/robot.toml).
# ROB's robot name (models/rob/robot.toml); the benchmarks' frozen problem sets were drawn on it
ROB = "rob"
ROBOTS = (ROB, "openarm")
DEFAULT_ROBOT = ROB  # what --robot and a scenario without "robot" mean

"""Every dimension, mass and limit of the ROB model, in one place, with its provenance.

ROB's real dimensions are not measured yet (DESIGN.md). Each value below says where
it comes from, so calibration can replace it here and regenerate ``models/rob/``
(``python -m rob_twin.models.build``). Units: metres, kilograms, radians, seconds,
newton-metres, unless a name says otherwise.

Provenance tags used below:
- ``OPENARM``: OpenArm v10 reference facts quoted in DESIGN.md (a 7-DOF arm of ROB's class).
- ``SEED``: the ROB seed papers (tracked base, rotating torso, head camera, range sensing).
- ``ASSUMED``: an engineering estimate for a part that has not been measured; chosen to be
  plausible for a robot of this size and to keep the simulation well conditioned.
"""

from __future__ import annotations

from dataclasses import dataclass

from rob_twin.models.names import JOINTS_PER_ARM


@dataclass(frozen=True, kw_only=True)
class DriveSpec:
    """The motor class a group of arm joints shares (speed, torque, servo, rotor)."""

    velocity_limit: float  # motor no-load speed [rad/s]
    effort_limit: float  # peak torque [Nm]
    kp: float  # position-servo stiffness [Nm/rad]
    kv: float  # servo damping [Nm s/rad]
    armature: float  # reflected rotor inertia [kg m^2]
    damping: float  # joint viscous friction [Nm s/rad]


# OPENARM: no-load speeds 16.75 / 5.45 / 20.94 rad/s and peak torques 40 / 27 / 7 Nm for
# J1-2 / J3-4 / J5-7. ASSUMED: servo gains, armature, damping.
SHOULDER_DRIVE = DriveSpec(
    velocity_limit=16.75, effort_limit=40.0, kp=400.0, kv=25.0, armature=0.08, damping=0.5
)  # J1-2
ELBOW_DRIVE = DriveSpec(
    velocity_limit=5.45, effort_limit=27.0, kp=250.0, kv=15.0, armature=0.05, damping=0.4
)  # J3-4
WRIST_DRIVE = DriveSpec(
    velocity_limit=20.94, effort_limit=7.0, kp=60.0, kv=2.5, armature=0.01, damping=0.1
)  # J5-7
DRIVE_GROUPS: dict[str, DriveSpec] = {
    "shoulder": SHOULDER_DRIVE,
    "elbow": ELBOW_DRIVE,
    "wrist": WRIST_DRIVE,
}


def _from_drive(field: str) -> property:
    """A JointSpec attribute read from its drive group (``spec.kp`` is ``spec.drive.kp``)."""
    return property(lambda self: getattr(self.drive, field), doc=f"``drive.{field}``")


@dataclass(frozen=True, kw_only=True)
class JointSpec:
    """One arm joint: origin in the parent link frame [m], axis, limits, drive and link."""

    origin: tuple[float, float, float]
    axis: tuple[float, float, float]
    lower: float  # [rad]
    upper: float  # [rad]
    drive: DriveSpec
    link_mass: float  # mass of the link this joint moves [kg]
    link_radius: float  # collision capsule radius of that link [m]

    @property
    def drive_group(self) -> str:
        """The name of this joint's drive group (a default class of the model)."""
        return next(name for name, d in DRIVE_GROUPS.items() if d is self.drive)

    velocity_limit = _from_drive("velocity_limit")
    effort_limit = _from_drive("effort_limit")
    kp = _from_drive("kp")
    kv = _from_drive("kv")
    armature = _from_drive("armature")
    damping = _from_drive("damping")


# OPENARM: joint origins and axes (DESIGN.md "Reference facts"), position limits [rad].
# ASSUMED: link masses (sum 5.6 kg plus the 0.4 kg hand = 6.0 kg, OPENARM "arm mass about
# 6 kg"), capsule radii.
ARM_JOINTS: tuple[JointSpec, ...] = (
    JointSpec(
        origin=(0.0, 0.0, 0.0625),
        axis=(0, 0, 1),
        lower=-1.396,
        upper=3.491,
        drive=SHOULDER_DRIVE,
        link_mass=1.10,
        link_radius=0.045,
    ),
    JointSpec(
        origin=(-0.0301, 0.0, 0.06),
        axis=(-1, 0, 0),
        lower=-1.745,
        upper=1.745,
        drive=SHOULDER_DRIVE,
        link_mass=1.00,
        link_radius=0.045,
    ),
    JointSpec(
        origin=(0.0301, 0.0, 0.06625),
        axis=(0, 0, 1),
        lower=-1.571,
        upper=1.571,
        drive=ELBOW_DRIVE,
        link_mass=1.00,
        link_radius=0.042,
    ),
    JointSpec(
        origin=(0.0, 0.0315, 0.15375),
        axis=(0, 1, 0),
        lower=0.0,
        upper=2.443,
        drive=ELBOW_DRIVE,
        link_mass=0.90,
        link_radius=0.040,
    ),
    JointSpec(
        origin=(0.0, -0.0315, 0.0955),
        axis=(0, 0, 1),
        lower=-1.571,
        upper=1.571,
        drive=WRIST_DRIVE,
        link_mass=0.70,
        link_radius=0.035,
    ),
    JointSpec(
        origin=(0.0375, 0.0, 0.1205),
        axis=(1, 0, 0),
        lower=-0.785,
        upper=0.785,
        drive=WRIST_DRIVE,
        link_mass=0.50,
        link_radius=0.033,
    ),
    JointSpec(
        origin=(-0.0375, 0.0, 0.0),
        axis=(0, 1, 0),
        lower=-1.571,
        upper=1.571,
        drive=WRIST_DRIVE,
        link_mass=0.40,
        link_radius=0.030,
    ),
)
assert len(ARM_JOINTS) == JOINTS_PER_ARM

# The joint position bounds [rad], J1..J7: the one source the owner's configuration
# (``rob_twin.controllers.owner_config``), the codec (``rob_twin.controllers.codec``), the
# simulated drives and the model all read.
ARM_LOWER_RAD: tuple[float, ...] = tuple(j.lower for j in ARM_JOINTS)
ARM_UPPER_RAD: tuple[float, ...] = tuple(j.upper for j in ARM_JOINTS)

FLANGE_OFFSET = (0.0, 0.0205, 0.0)  # OPENARM: J7 frame -> flange
HAND_OFFSET = (0.0, -0.025, 0.1001)  # OPENARM: flange -> hand frame
TCP_OFFSET_Z = 0.08  # OPENARM: hand frame -> TCP along +z
HAND_MASS = 0.4  # ASSUMED: hand with gripper motor

# Gripper: ASSUMED parallel jaws, 0..40 mm per finger, 20 N peak.
FINGER_TRAVEL = 0.04
FINGER_FORCE = 20.0
FINGER_KP = 500.0
FINGER_MASS = 0.05


@dataclass(frozen=True)
class BodySpec:
    """Whole-body dimensions (ASSUMED unless marked)."""

    # Tracked base (SEED: independent treads). Base frame at floor level, centre of the chassis.
    chassis_half: tuple[float, float, float] = (0.30, 0.20, 0.12)
    chassis_center_z: float = 0.20
    chassis_mass: float = 30.0
    tread_half: tuple[float, float, float] = (0.32, 0.06, 0.07)
    tread_y: float = 0.26
    tread_mass: float = 4.0
    tread_max_speed: float = 0.6  # [m/s] surface speed of a tread
    # Torso (SEED: rotating torso) on a vertical yaw joint on top of the chassis.
    torso_joint_z: float = 0.32
    torso_half: tuple[float, float, float] = (0.11, 0.13, 0.40)
    torso_mass: float = 12.0
    torso_range: tuple[float, float] = (-2.6, 2.6)
    torso_velocity_limit: float = 1.5
    torso_effort_limit: float = 80.0
    torso_kp: float = 800.0
    torso_kv: float = 120.0
    # Arm mounts (DESIGN.md: arms mount on the torso about 0.7 m up, leaving it sideways).
    shoulder_height: float = 0.70  # above the torso joint
    shoulder_y: float = 0.165
    mount_mass: float = 0.3
    # Head (SEED: head with camera) with pan/tilt above the torso.
    neck_height: float = 0.83  # above the torso joint
    head_half: tuple[float, float, float] = (0.07, 0.09, 0.07)
    head_mass: float = 1.5
    pan_range: tuple[float, float] = (-1.57, 1.57)
    tilt_range: tuple[float, float] = (-0.6, 0.9)
    head_velocity_limit: float = 3.0
    head_effort_limit: float = 4.0
    head_kp: float = 20.0
    head_kv: float = 1.0
    camera_fovy_deg: float = 70.0
    # 2D range sensor (SEED: range sensing / RPLidar) on the base: a fan of rangefinders.
    lidar_z: float = 0.26
    lidar_cutoff: float = 8.0  # [m]
    # Two RPLIDAR A1-class 2D lidars (SEED: one at the front, one at the back of the base).
    # ASSUMED mounts: on the deck (chassis top at 0.32 m), optical plane 0.36 m above the
    # floor, 0.28 m ahead of / behind the centre; the back unit faces backwards (yaw pi).
    lidar_front_pos: tuple[float, float, float] = (0.28, 0.0, 0.36)
    lidar_back_pos: tuple[float, float, float] = (-0.28, 0.0, 0.36)
    lidar_front_yaw: float = 0.0
    lidar_back_yaw: float = 3.14159
    # ASSUMED IMU (gyro) on the deck, mounted on its side: its board is rolled +90 deg about
    # the base x axis, so its z axis is the base's -y (the mounting a config must state).
    imu_pos: tuple[float, float, float] = (-0.10, 0.08, 0.30)
    imu_roll: float = 1.5708
    # ASSUMED floor-flow sensor (SEED: optical flow, within about 10 cm of the floor) under
    # the chassis, ahead of the centre: it reads its own velocity over the floor.
    flow_pos: tuple[float, float, float] = (0.22, 0.0, 0.06)


BODY = BodySpec()


@dataclass(frozen=True)
class SceneSpec:
    """The scene: a table with a red can in front of ROB (SEED: the can session)."""

    table_center: tuple[float, float] = (0.78, 0.0)
    table_half: tuple[float, float] = (0.30, 0.55)  # top half-extents x, y
    table_height: float = 0.74  # top surface above the floor
    table_thickness: float = 0.03  # thin: a mesh box, never a primitive box (DESIGN.md)
    leg_radius: float = 0.025
    can_radius: float = 0.033  # a 330 ml can
    can_half_height: float = 0.0615
    can_mass: float = 0.35
    can_xy: tuple[float, float] = (0.62, -0.18)

    # ASSUMED room for the lidars and the odometry runs: walls 1.2 m high, 10 cm thick, inner
    # faces at x = -7 and x = 3 m, y = -3 and y = 3 m (ROB starts at the origin facing +x).
    room_x: tuple[float, float] = (-7.0, 3.0)
    room_y: tuple[float, float] = (-3.0, 3.0)
    wall_height: float = 1.2
    wall_thickness: float = 0.10


SCENE = SceneSpec()

# Simulation options (ASSUMED): 1 kHz physics, implicit-in-velocity integration.
TIMESTEP = 0.001


def arm_reach() -> float:
    """Base-to-TCP length at the zero pose [m] (OPENARM says about 0.74 m)."""
    z = sum(j.origin[2] for j in ARM_JOINTS) + FLANGE_OFFSET[2] + HAND_OFFSET[2] + TCP_OFFSET_Z
    return z


def arm_mass() -> float:
    return sum(j.link_mass for j in ARM_JOINTS) + HAND_MASS + 2 * FINGER_MASS


# ASSUMED home pose: hands in front of the chest above the table, tool pointing forward-down
# (found by least squares on the TCP position; the LEFT arm mirrors the RIGHT, so equal angles).
HOME_ARM_POSE: tuple[float, ...] = (1.196, -1.22, -0.897, 1.576, 0.535, -0.018, -1.571)

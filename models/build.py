"""Generate ``models/rob/rob.xml`` and ``models/rob/scene.xml`` from ``dimensions``.

The committed XML files are build outputs of this module; a test regenerates them and
requires byte equality, so the dimensions module stays the one source of truth.
Run ``python -m models.build`` after changing a dimension.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from controllers import names as N
from controllers.names import Arm

from . import dimensions as D

MODEL_DIR = Path(__file__).resolve().parent / "rob"


def _f(values) -> str:
    return " ".join(f"{float(v):.6g}" for v in np.atleast_1d(values))


def _quat_rx(angle: float) -> str:
    return _f([math.cos(angle / 2), math.sin(angle / 2), 0, 0])


def _quat_rz(angle: float) -> str:
    return _f([math.cos(angle / 2), 0, 0, math.sin(angle / 2)])


def _rod_inertia(mass: float, radius: float, seg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """COM [m] and diagonal inertia [kg m^2] of a solid rod of ``radius`` along ``seg``.

    The off-diagonal terms of the rod's tensor in the link frame are dropped (ASSUMED
    inertias; MuJoCo and Pinocchio read the same diagonal, so they agree exactly).
    """
    length = float(np.linalg.norm(seg))
    u = seg / length if length > 0 else np.array([0.0, 0.0, 1.0])
    i_perp = mass * (3 * radius**2 + length**2) / 12.0
    i_axial = mass * radius**2 / 2.0
    tensor = i_perp * (np.eye(3) - np.outer(u, u)) + i_axial * np.outer(u, u)
    return seg / 2.0, np.diag(tensor).copy()


# The LEFT arm is the RIGHT arm mirrored through ROB's sagittal plane (y -> -y): link
# offsets are mirrored (M o) and revolute axes become -(M a), so equal joint angles give
# mirror-image poses and both arms share one set of joint limits.
_MIRROR = np.diag([1.0, -1.0, 1.0])


def _offset(arm: Arm, v) -> np.ndarray:
    v = np.asarray(v, float)
    return _MIRROR @ v if arm is Arm.LEFT else v


def _axis(arm: Arm, a) -> np.ndarray:
    a = np.asarray(a, float)
    return -(_MIRROR @ a) if arm is Arm.LEFT else a


def _segments(arm: Arm = Arm.RIGHT) -> list[np.ndarray]:
    """Vector from each joint origin to the next one (link k geometry), in link-k frame."""
    nxt = [np.array(j.origin, float) for j in D.ARM_JOINTS[1:]]
    nxt.append(np.array(D.FLANGE_OFFSET) + np.array(D.HAND_OFFSET))
    return [_offset(arm, v) for v in nxt]


def _touching_excludes(arm: Arm) -> list[tuple[str, str]]:
    """Pairs (k, k+2) joined by a link shorter than their radii: their housings touch.

    MuJoCo already filters parent-child contacts; these grandparent pairs are the only
    further excludes, and only where the middle link cannot separate the two housings.
    """
    segs = _segments()
    bodies = [N.arm_base_body(arm)] + [N.arm_link_body(arm, j) for j in range(1, 8)] + [N.hand_body(arm)]
    radii = [D.ARM_JOINTS[0].link_radius] + [j.link_radius for j in D.ARM_JOINTS] + [0.035]
    lengths = [D.ARM_JOINTS[0].origin[2]] + [float(np.linalg.norm(s)) for s in segs]
    pairs = []
    for k in range(len(bodies) - 2):
        if lengths[k + 1] < radii[k] + radii[k + 2] + 0.005:
            pairs.append((bodies[k], bodies[k + 2]))
    return pairs


def _arm_xml(arm: Arm, indent: str) -> str:
    side = -1.0 if arm is Arm.RIGHT else 1.0  # ROB faces +x; its right side is -y
    mount_quat = _quat_rx(math.pi / 2 if arm is Arm.RIGHT else -math.pi / 2)
    segs = _segments(arm)
    b = D.BODY
    lines = [
        f'<body name="{N.arm_base_body(arm)}" pos="0 {_f(side * b.shoulder_y)} {_f(b.shoulder_height)}" quat="{mount_quat}">',
        f'  <inertial pos="0 0 0.03" mass="{_f(b.mount_mass)}" diaginertia="3e-4 3e-4 3e-4"/>',
        f'  <geom name="{N.arm_prefix(arm)}mount_geom" class="arm_link" type="capsule" size="{_f(D.ARM_JOINTS[0].link_radius)}" fromto="0 0 0 0 0 {_f(D.ARM_JOINTS[0].origin[2])}"/>',
    ]
    depth = 1
    for j, (spec, seg) in enumerate(zip(D.ARM_JOINTS, segs, strict=True), start=1):
        pad = "  " * depth
        com, diag = _rod_inertia(spec.link_mass, spec.link_radius, seg)
        lines += [
            f'{pad}<body name="{N.arm_link_body(arm, j)}" pos="{_f(_offset(arm, spec.origin))}">',
            f'{pad}  <joint name="{N.arm_joint(arm, j)}" class="arm_joint" axis="{_f(_axis(arm, spec.axis))}" range="{_f(spec.lower)} {_f(spec.upper)}" '
            f'armature="{_f(spec.armature)}" damping="{_f(spec.damping)}" actuatorfrcrange="{_f(-spec.effort_limit)} {_f(spec.effort_limit)}"/>',
            f'{pad}  <inertial pos="{_f(com)}" mass="{_f(spec.link_mass)}" diaginertia="{_f(diag)}"/>',
            f'{pad}  <geom name="{N.arm_link_body(arm, j)}_geom" class="arm_link" type="capsule" size="{_f(spec.link_radius)}" fromto="0 0 0 {_f(seg)}"/>',
        ]
        depth += 1
    pad = "  " * depth
    hand_pos = _offset(arm, np.array(D.FLANGE_OFFSET) + np.array(D.HAND_OFFSET))
    fz = 0.035  # finger root height in the hand frame [m] (ASSUMED)
    lines += [
        f'{pad}<body name="{N.hand_body(arm)}" pos="{_f(hand_pos)}">',
        f'{pad}  <inertial pos="0 0 0.01" mass="{_f(D.HAND_MASS)}" diaginertia="4e-4 4e-4 3e-4"/>',
        f'{pad}  <geom name="{N.arm_prefix(arm)}palm" class="arm_link" type="capsule" size="0.032" fromto="0 -0.03 0.0 0 0.03 0.0"/>',
        f'{pad}  <site name="{N.tcp_site(arm)}" pos="0 0 {_f(D.TCP_OFFSET_Z)}" size="0.01" rgba="1 0.5 0 1"/>',
    ]
    for finger, sign in ((N.gripper_joint(arm), 1.0), (N.gripper_follower_joint(arm), -1.0)):
        lines += [
            f'{pad}  <body name="{finger}" pos="0 {_f(sign * 0.008)} {_f(fz)}">',
            f'{pad}    <joint name="{finger}" class="finger" axis="0 {_f(sign)} 0"/>',
            f'{pad}    <inertial pos="0 0 0.03" mass="{_f(D.FINGER_MASS)}" diaginertia="2e-5 2e-5 5e-6"/>',
            f'{pad}    <geom name="{finger}_geom" class="finger" type="capsule" size="0.008" fromto="0 0 0 0 0 0.06"/>',
            f'{pad}  </body>',
        ]
    lines.append(f"{pad}</body>")
    for d in range(depth - 1, 0, -1):
        lines.append("  " * d + "</body>")
    lines.append("</body>")
    return "\n".join(indent + ln for ln in lines)


def robot_xml() -> str:
    b = D.BODY
    ch, tr = b.chassis_half, b.tread_half
    lidar_sites = "\n".join(
        f'      <site name="{N.range_sensor(i)}" pos="0 0 {_f(b.lidar_z)}" '
        f'quat="{_f(_lidar_quat(2 * math.pi * i / N.RANGE_SENSOR_BEAMS))}" size="0.005" group="4"/>'
        for i in range(N.RANGE_SENSOR_BEAMS)
    )
    th = b.torso_half
    torso_com_z = th[2]
    torso_diag = [b.torso_mass / 3 * (th[1] ** 2 + th[2] ** 2), b.torso_mass / 3 * (th[0] ** 2 + th[2] ** 2), b.torso_mass / 3 * (th[0] ** 2 + th[1] ** 2)]
    cm = b.chassis_mass + 2 * b.tread_mass
    chassis_diag = [cm / 3 * (ch[1] ** 2 + ch[2] ** 2), cm / 3 * (ch[0] ** 2 + ch[2] ** 2), cm / 3 * (ch[0] ** 2 + ch[1] ** 2)]
    arms = "\n".join(_arm_xml(a, "        ") for a in (Arm.RIGHT, Arm.LEFT))
    excludes = "\n".join(
        f'    <exclude body1="{p}" body2="{q}"/>' for a in (Arm.RIGHT, Arm.LEFT) for p, q in _touching_excludes(a)
    )
    actuators = []
    for a in (Arm.RIGHT, Arm.LEFT):
        for j, spec in enumerate(D.ARM_JOINTS, start=1):
            actuators.append(
                f'    <position name="{N.arm_actuator(a, j)}" joint="{N.arm_joint(a, j)}" kp="{_f(spec.kp)}" kv="{_f(spec.kv)}" '
                f'ctrlrange="{_f(spec.lower)} {_f(spec.upper)}" forcerange="{_f(-spec.effort_limit)} {_f(spec.effort_limit)}"/>'
            )
        actuators.append(
            f'    <position name="{N.gripper_actuator(a)}" joint="{N.gripper_joint(a)}" kp="{_f(D.FINGER_KP)}" kv="5" '
            f'ctrlrange="0 {_f(D.FINGER_TRAVEL)}" forcerange="{_f(-D.FINGER_FORCE)} {_f(D.FINGER_FORCE)}"/>'
        )
    actuators += [
        f'    <position name="{N.TORSO_ACTUATOR}" joint="{N.TORSO_JOINT}" kp="{_f(b.torso_kp)}" kv="{_f(b.torso_kv)}" ctrlrange="{_f(b.torso_range)}" forcerange="{_f(-b.torso_effort_limit)} {_f(b.torso_effort_limit)}"/>',
        f'    <position name="{N.HEAD_PAN_ACTUATOR}" joint="{N.HEAD_PAN_JOINT}" kp="{_f(b.head_kp)}" kv="{_f(b.head_kv)}" ctrlrange="{_f(b.pan_range)}" forcerange="{_f(-b.head_effort_limit)} {_f(b.head_effort_limit)}"/>',
        f'    <position name="{N.HEAD_TILT_ACTUATOR}" joint="{N.HEAD_TILT_JOINT}" kp="{_f(b.head_kp)}" kv="{_f(b.head_kv)}" ctrlrange="{_f(b.tilt_range)}" forcerange="{_f(-b.head_effort_limit)} {_f(b.head_effort_limit)}"/>',
    ]
    equalities = "\n".join(
        f'    <joint joint1="{N.gripper_follower_joint(a)}" joint2="{N.gripper_joint(a)}" polycoef="0 1 0 0 0" solref="0.005 1"/>'
        for a in (Arm.RIGHT, Arm.LEFT)
    )
    sensors = "\n".join(
        f'    <rangefinder name="{N.range_sensor(i)}" site="{N.range_sensor(i)}" cutoff="{_f(b.lidar_cutoff)}"/>'
        for i in range(N.RANGE_SENSOR_BEAMS)
    )
    numerics = [f'    <numeric name="velocity_limit/{N.arm_joint(a, j)}" data="{_f(s.velocity_limit)}"/>' for a in (Arm.RIGHT, Arm.LEFT) for j, s in enumerate(D.ARM_JOINTS, start=1)]
    numerics += [
        f'    <numeric name="velocity_limit/{N.TORSO_JOINT}" data="{_f(b.torso_velocity_limit)}"/>',
        f'    <numeric name="velocity_limit/{N.HEAD_PAN_JOINT}" data="{_f(b.head_velocity_limit)}"/>',
        f'    <numeric name="velocity_limit/{N.HEAD_TILT_JOINT}" data="{_f(b.head_velocity_limit)}"/>',
        f'    <numeric name="tread_max_speed" data="{_f(b.tread_max_speed)}"/>',
    ]
    numerics_xml = "\n".join(numerics)
    neck = b.neck_height
    hh = b.head_half
    return f"""<!-- GENERATED by `python -m models.build` from models/dimensions.py: edit that, not this. -->
<mujoco model="rob">
  <compiler angle="radian" autolimits="true"/>
  <option timestep="{_f(D.TIMESTEP)}" integrator="implicitfast"/>

  <default>
    <default class="arm_joint">
      <joint limited="true"/>
    </default>
    <default class="arm_link">
      <geom rgba="0.75 0.77 0.80 1" condim="3" friction="0.8 0.02 0.001"/>
    </default>
    <default class="finger">
      <joint type="slide" range="0 {_f(D.FINGER_TRAVEL)}" damping="2" armature="0.01" actuatorfrcrange="{_f(-D.FINGER_FORCE)} {_f(D.FINGER_FORCE)}"/>
      <geom rgba="0.2 0.2 0.22 1" condim="4" friction="1.2 0.02 0.001"/>
    </default>
    <default class="body_shell">
      <geom rgba="0.30 0.34 0.40 1"/>
    </default>
  </default>

  <worldbody>
    <body name="{N.BASE_BODY}" pos="0 0 0">
      <freejoint name="{N.BASE_FREEJOINT}"/>
      <inertial pos="0 0 {_f(b.chassis_center_z)}" mass="{_f(cm)}" diaginertia="{_f(chassis_diag)}"/>
      <geom name="base/chassis" class="body_shell" type="box" size="{_f(ch)}" pos="0 0 {_f(b.chassis_center_z)}"/>
      <geom name="{N.TREAD_LEFT_GEOM}" type="box" size="{_f(tr)}" pos="0 {_f(b.tread_y)} {_f(tr[2])}" rgba="0.1 0.1 0.1 1" friction="1.0 0.01 0.001"/>
      <geom name="{N.TREAD_RIGHT_GEOM}" type="box" size="{_f(tr)}" pos="0 {_f(-b.tread_y)} {_f(tr[2])}" rgba="0.1 0.1 0.1 1" friction="1.0 0.01 0.001"/>
      <site name="{N.RANGE_SENSOR_SITE}" pos="0 0 {_f(b.lidar_z)}" size="0.02" rgba="0.1 0.6 0.9 1"/>
{lidar_sites}
      <body name="{N.TORSO_BODY}" pos="0 0 {_f(b.torso_joint_z)}">
        <joint name="{N.TORSO_JOINT}" axis="0 0 1" range="{_f(b.torso_range)}" damping="5" armature="0.2" actuatorfrcrange="{_f(-b.torso_effort_limit)} {_f(b.torso_effort_limit)}"/>
        <inertial pos="0 0 {_f(torso_com_z)}" mass="{_f(b.torso_mass)}" diaginertia="{_f(torso_diag)}"/>
        <geom name="torso/shell" class="body_shell" type="box" size="{_f(th)}" pos="0 0 {_f(th[2])}"/>
        <body name="{N.HEAD_BODY}" pos="0 0 {_f(neck)}">
          <joint name="{N.HEAD_PAN_JOINT}" axis="0 0 1" range="{_f(b.pan_range)}" damping="0.2" armature="0.005" actuatorfrcrange="{_f(-b.head_effort_limit)} {_f(b.head_effort_limit)}"/>
          <inertial pos="0 0 0.05" mass="0.3" diaginertia="3e-4 3e-4 3e-4"/>
          <body name="head/tilt_link" pos="0 0 0.05">
            <joint name="{N.HEAD_TILT_JOINT}" axis="0 1 0" range="{_f(b.tilt_range)}" damping="0.2" armature="0.005" actuatorfrcrange="{_f(-b.head_effort_limit)} {_f(b.head_effort_limit)}"/>
            <inertial pos="0 0 {_f(hh[2])}" mass="{_f(b.head_mass)}" diaginertia="{_f([b.head_mass * 0.005] * 3)}"/>
            <geom name="head/shell" class="body_shell" type="box" size="{_f(hh)}" pos="0 0 {_f(hh[2])}"/>
            <camera name="{N.HEAD_CAMERA}" pos="{_f(hh[0] + 0.001)} 0 {_f(hh[2])}" xyaxes="0 -1 0 0 0 1" fovy="{_f(b.camera_fovy_deg)}"/>
          </body>
        </body>
{arms}
      </body>
    </body>
  </worldbody>

  <contact>
{excludes}
  </contact>

  <equality>
{equalities}
  </equality>

  <actuator>
{chr(10).join(actuators)}
  </actuator>

  <sensor>
{sensors}
  </sensor>

  <custom>
{numerics_xml}
  </custom>
</mujoco>
"""


def _lidar_quat(yaw: float) -> np.ndarray:
    """Quaternion turning a site's +z (the rangefinder axis) to horizontal at ``yaw``."""
    # Ry(+90 deg) maps z to +x; then Rz(yaw) turns it about the vertical.
    qy = np.array([math.cos(math.pi / 4), 0.0, math.sin(math.pi / 4), 0.0])
    qz = np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])
    w1, x1, y1, z1 = qz
    w2, x2, y2, z2 = qy
    return np.array([
        w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
        w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
        w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
    ])


def scene_xml() -> str:
    s = D.SCENE
    hx, hy = s.table_half
    t = s.table_thickness
    top_z = s.table_height - t / 2
    verts = [(x, y, z) for x in (-hx, hx) for y in (-hy, hy) for z in (-t / 2, t / 2)]
    vert_str = "  ".join(_f(v) for v in verts)
    legs = []
    for i, (sx, sy) in enumerate(((1, 1), (1, -1), (-1, 1), (-1, -1))):
        lx, ly = sx * (hx - 0.05), sy * (hy - 0.05)
        legs.append(
            f'      <geom name="{N.TABLE_BODY}/leg{i}" type="cylinder" size="{_f(s.leg_radius)} {_f((s.table_height - t) / 2)}" '
            f'pos="{_f(lx)} {_f(ly)} {_f(-(s.table_height - t) / 2 - t / 2)}" rgba="0.45 0.32 0.2 1"/>'
        )
    cx, cy = s.can_xy
    return f"""<!-- GENERATED by `python -m models.build` from models/dimensions.py: edit that, not this. -->
<mujoco model="rob scene">
  <include file="rob.xml"/>

  <statistic center="0.4 0 0.8" extent="1.6"/>
  <visual>
    <headlight diffuse="0.6 0.6 0.6" ambient="0.3 0.3 0.3" specular="0 0 0"/>
    <global azimuth="150" elevation="-25" offwidth="1280" offheight="720"/>
  </visual>

  <asset>
    <texture type="skybox" builtin="gradient" rgb1="0.3 0.5 0.7" rgb2="0 0 0" width="512" height="3072"/>
    <texture type="2d" name="groundplane" builtin="checker" mark="edge" rgb1="0.2 0.3 0.4" rgb2="0.1 0.2 0.3" markrgb="0.8 0.8 0.8" width="300" height="300"/>
    <material name="groundplane" texture="groundplane" texuniform="true" texrepeat="5 5" reflectance="0.2"/>
    <!-- The table top is thin: a mesh box, never a primitive box (MuJoCo's capsule-box
         collider misses capsules that cross thin boxes; DESIGN.md). -->
    <mesh name="table_top" vertex="{vert_str}"/>
  </asset>

  <worldbody>
    <light pos="0 0 3.5" dir="0 0 -1" directional="true"/>
    <light pos="1.5 -1.5 2.5" dir="-0.5 0.5 -1" diffuse="0.4 0.4 0.4"/>
    <geom name="{N.FLOOR_GEOM}" size="0 0 0.05" type="plane" material="groundplane"/>
    <body name="{N.TABLE_BODY}" pos="{_f(s.table_center)} {_f(top_z)}">
      <geom name="{N.TABLE_TOP_GEOM}" type="mesh" mesh="table_top" rgba="0.62 0.45 0.3 1"/>
{chr(10).join(legs)}
    </body>
    <body name="{N.CAN_BODY}" pos="{_f(cx)} {_f(cy)} {_f(s.table_height + s.can_half_height + 0.001)}">
      <freejoint name="{N.CAN_BODY}/free"/>
      <geom name="{N.CAN_GEOM}" type="cylinder" size="{_f(s.can_radius)} {_f(s.can_half_height)}" mass="{_f(s.can_mass)}" rgba="0.85 0.05 0.05 1" condim="4" friction="1 0.02 0.001"/>
    </body>
    <camera name="{N.OVERVIEW_CAMERA}" pos="2.3 -1.9 1.9" mode="targetbody" target="{N.TORSO_BODY}" fovy="45"/>
    <camera name="{N.FRONT_CAMERA}" pos="2.4 0 1.3" xyaxes="0 1 0 -0.35 0 1" fovy="50"/>
  </worldbody>
</mujoco>
"""


def write(model_dir: Path = MODEL_DIR) -> list[Path]:
    """Write rob.xml and scene.xml into ``model_dir``; return their paths."""
    model_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for name, text in (("rob.xml", robot_xml()), ("scene.xml", scene_xml())):
        path = model_dir / name
        path.write_text(text)
        out.append(path)
    return out


if __name__ == "__main__":
    for p in write():
        print(p)

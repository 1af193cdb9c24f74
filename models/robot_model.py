"""Build the twin's MuJoCo model of any robot a robot file describes (``robot.toml``).

The MJCF is loaded with ``mujoco.MjSpec`` and its arm elements renamed to the twin's canonical
names (``rob_twin.models.names``): joints ``right/j1`` .. ``left/j7``, the body each joint
moves ``right/link1`` .., actuators ``right/j1_servo`` .., the TCP site ``right/tcp``, the
gripper actuator ``right/gripper`` and the joint it drives ``right/finger_a``, wrist cameras
``right/wrist``. Every index helper of
``rob_twin.models.loading`` then works on every robot. The arm actuators become what the drive
family needs:

* ``amber``: the MJCF's position servos stay as they are (ROB's generated model);
* ``damiao``: torque motors limited to each motor's physical peak (``ctrl`` = joint torque
  [Nm]; the impedance law runs in the simulated drive, as on the real motors);
* ``ideal``: position servos with the file's ``kp`` / ``kv`` (robots without a CAN model);
  a joint's own MJCF actuator is adopted when the file names none, and an explicit-Euler
  MJCF is integrated with ``implicitfast`` (the servos' damping implicit, stable on light
  wrists).

Arms have seven joints (``j1`` .. ``j7``); an ``ideal`` robot's may have six (``j1`` ..
``j6``).

A ``home`` keyframe is (re)written from the file's home poses (every other joint at its
``qpos0``), and a floor, a light, an ``overview`` camera and a ``front`` camera are added
where the file asks and the MJCF has none. ROB's file names the canonical names already, so
its model is the generated scene unchanged.
"""

from __future__ import annotations

import contextlib
import copy
import sys
import warnings
from functools import lru_cache

import mujoco
import numpy as np
from rob_twin.models import names as N
from rob_twin.models.damiao_motors import MOTORS
from rob_twin.models.names import Arm
from rob_twin.models.robot_description import (
    MAX_MODEL_BODIES,
    MAX_MODEL_GEOMS,
    RobotDescription,
    RobotFileError,
    resolve_robot,
)

HOME_KEY = "home"
WRIST_CAMERA_SUFFIX = "wrist"


def wrist_camera(arm: Arm | str) -> str:
    return N.arm_prefix(arm) + WRIST_CAMERA_SUFFIX


def _find(spec: mujoco.MjSpec, kind: str, name: str, field: str):
    element = getattr(spec, kind)(name)
    if element is None:
        have = [e.name for e in getattr(spec, kind + "s") if e.name][:40]
        raise RobotFileError(field, name, f"a {kind} of the MJCF (it has {have})")
    return element


def _retarget(spec: mujoco.MjSpec, old: str, new: str) -> None:
    """Point every reference to element ``old`` (by name) at ``new``: MjSpec refers by name."""
    referring = (
        (spec.actuators, ("target",)),
        (spec.equalities, ("name1", "name2")),
        (spec.sensors, ("objname",)),
        (spec.excludes, ("bodyname1", "bodyname2")),
    )
    for elements, fields in referring:
        for element in elements:
            for field in fields:
                if getattr(element, field) == old:
                    setattr(element, field, new)


def _rename(spec: mujoco.MjSpec, element, new: str) -> None:
    old = element.name
    if old != new:
        element.name = new
        _retarget(spec, old, new)


def _adopt_actuators(spec: mujoco.MjSpec, arm: Arm, n: int) -> None:
    """No ``actuators`` in the file: each joint's one MJCF actuator (named or not) becomes the
    canonical one; a joint without any gets a new one; two or more is a RobotFileError."""
    for j in range(1, n + 1):
        joint = N.arm_joint(arm, j)
        acts = [a for a in spec.actuators if a.target == joint]
        if len(acts) > 1:
            raise RobotFileError(
                f"arms.{arm.value}.actuators",
                None,
                f"the actuator of each joint named (joint {joint} has {len(acts)})",
            )
        if acts:
            _rename(spec, acts[0], N.arm_actuator(arm, j))
        else:
            act = spec.add_actuator(name=N.arm_actuator(arm, j), target=joint)
            act.trntype = mujoco.mjtTrn.mjTRN_JOINT


def _rename_arm(spec: mujoco.MjSpec, desc: RobotDescription, arm: Arm) -> None:
    a = desc.arm(arm)
    side = arm.value
    tcp_body = None
    if a.tcp_site is None:  # found by its MJCF name, before the joints' bodies are renamed
        tcp_body = _find(spec, "body", a.tcp_body, f"arms.{side}.tcp_body")
    for j, name in enumerate(a.joints, start=1):
        joint = _find(spec, "joint", name, f"arms.{side}.joints[{j - 1}]")
        body = joint.parent
        _rename(spec, joint, N.arm_joint(arm, j))
        _rename(spec, body, N.arm_link_body(arm, j))
    if a.actuators is not None:
        for j, name in enumerate(a.actuators, start=1):
            act = _find(spec, "actuator", name, f"arms.{side}.actuators[{j - 1}]")
            if act.target != N.arm_joint(arm, j):
                raise RobotFileError(
                    f"arms.{side}.actuators[{j - 1}]",
                    name,
                    f"an actuator of joint {a.joints[j - 1]}",
                )
            _rename(spec, act, N.arm_actuator(arm, j))
    else:
        _adopt_actuators(spec, arm, len(a.joints))
    if tcp_body is None:
        _rename(spec, _find(spec, "site", a.tcp_site, f"arms.{side}.tcp_site"), N.tcp_site(arm))
    elif spec.site(N.tcp_site(arm)) is not None:  # the new site's name is taken
        raise RobotFileError(
            f"arms.{side}.tcp_body",
            a.tcp_body,
            f"tcp_site = {N.tcp_site(arm)!r} instead: the MJCF has a site {N.tcp_site(arm)!r} "
            "already (tcp_body adds one of that name)",
        )
    else:
        tcp_body.add_site(name=N.tcp_site(arm), pos=a.tcp_offset_m, size=[0.01, 0, 0])
    if a.gripper_actuator is not None:
        act = _find(spec, "actuator", a.gripper_actuator, f"arms.{side}.gripper_actuator")
        _rename(spec, act, N.gripper_actuator(arm))
        finger = spec.joint(act.target)  # the joint it drives becomes the gripper joint
        if finger is not None:
            _rename(spec, finger, N.gripper_joint(arm))
    if a.camera is not None:
        _rename(spec, _find(spec, "camera", a.camera, f"arms.{side}.camera"), wrist_camera(arm))


def _drive_actuators(spec: mujoco.MjSpec, desc: RobotDescription, arm: Arm) -> None:
    drives = desc.file.drives
    for j in range(1, len(desc.arm(arm).joints) + 1):
        act = spec.actuator(N.arm_actuator(arm, j))
        joint = spec.joint(N.arm_joint(arm, j))
        if drives.family == "damiao":
            peak = MOTORS[drives.motors[j - 1]].peak_torque_nm
            act.set_to_motor()
            act.ctrllimited = act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
            act.ctrlrange = act.forcerange = [-peak, peak]
        elif drives.family == "ideal":
            act.set_to_position(kp=drives.kp, kv=drives.kv)
            act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
            act.ctrlrange = list(joint.range)
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_FALSE


def _scene(spec: mujoco.MjSpec, desc: RobotDescription) -> None:
    scene = desc.file.scene
    world = spec.worldbody
    if scene.add_floor and spec.geom(N.FLOOR_GEOM) is None:
        world.add_geom(name=N.FLOOR_GEOM, type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05])
    if scene.add_light and not list(spec.lights):
        light = world.add_light(pos=[0, 0, 3], dir=[0, 0, -1])
        light.type = mujoco.mjtLightType.mjLIGHT_DIRECTIONAL
    if spec.camera(N.OVERVIEW_CAMERA) is None:
        _add_camera(world, N.OVERVIEW_CAMERA, scene.overview_camera)
    if scene.front_camera is not None and spec.camera(N.FRONT_CAMERA) is None:
        _add_camera(world, N.FRONT_CAMERA, scene.front_camera)


def _add_camera(world, name: str, where: list[float]) -> None:
    """A camera ``name`` at ``where[:3]`` [m] looking at ``where[3:]`` [m], horizon level."""
    pos, target = np.array(where[:3]), np.array(where[3:])
    forward = target - pos
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    # camera frame: x right, y up, looking along -z
    mat = np.column_stack([right, up, -forward])
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, mat.flatten())
    world.add_camera(name=name, pos=pos.tolist(), quat=quat.tolist())


def _joint_home(model: mujoco.MjModel) -> np.ndarray:
    """qpos0 with every limited hinge or slide joint clipped into its range (ALOHA's fingers
    have qpos0 = 0 outside their range: there they overlap)."""
    qpos = model.qpos0.copy()
    one_dof = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
    for j in range(model.njnt):
        if model.jnt_limited[j] and int(model.jnt_type[j]) in one_dof:
            a = model.jnt_qposadr[j]
            qpos[a] = np.clip(qpos[a], *model.jnt_range[j])
    return qpos


def _hold_servo_targets(model: mujoco.MjModel, qpos: np.ndarray, ctrl: np.ndarray) -> None:
    """ctrl of every joint position servo (kp > 0, bias -kp) := its joint's ``qpos``."""
    for i in range(model.nu):
        kp = model.actuator_gainprm[i, 0]
        if (
            int(model.actuator_trntype[i]) == int(mujoco.mjtTrn.mjTRN_JOINT)
            and int(model.actuator_biastype[i]) == int(mujoco.mjtBias.mjBIAS_AFFINE)
            and kp > 0
            and model.actuator_biasprm[i, 1] == -kp
        ):
            ctrl[i] = qpos[model.jnt_qposadr[model.actuator_trnid[i, 0]]]


def _home_key(spec: mujoco.MjSpec, model: mujoco.MjModel, desc: RobotDescription) -> None:
    """Write keyframe ``home``: qpos0 (clipped into joint ranges) with both arms at the file's
    home, the servos there (``ideal``: every joint position servo holds its joint)."""
    qpos = _joint_home(model)
    ctrl = np.zeros(model.nu)
    if desc.family == "ideal":
        _hold_servo_targets(model, qpos, ctrl)
    for arm in Arm:
        for j, q in enumerate(desc.arm(arm).home_rad, start=1):
            qpos[model.jnt_qposadr[model.joint(N.arm_joint(arm, j)).id]] = q
            if desc.family != "damiao":
                ctrl[model.actuator(N.arm_actuator(arm, j)).id] = q
    for key in list(spec.keys):
        if key.name == HOME_KEY:
            spec.delete(key)
    spec.add_key(name=HOME_KEY, qpos=qpos.tolist(), ctrl=ctrl.tolist())


def _is_rob(desc: RobotDescription) -> bool:
    """The default robot's shipped file (ROB's): its generated scene already has the twin's
    names, servos and keys, so it is loaded as generated."""
    return desc.path == resolve_robot(N.DEFAULT_ROBOT).path


def robot_spec(robot: str | RobotDescription) -> mujoco.MjSpec:
    """The canonical MjSpec of ``robot`` (a shipped name, a robot file path, or a description);
    ROB's generated scene as it is (it is canonical already: not rebuilt)."""
    desc = resolve_robot(robot)
    if _is_rob(desc):
        from rob_twin.models.loading import SCENE_PATH

        return mujoco.MjSpec.from_file(str(SCENE_PATH))
    try:
        spec = _parse_quietly(desc.mjcf_path)
    except ValueError as err:  # MuJoCo's parser: its reason on one line, as compiling's
        text = " ".join(str(err).split())
        raise RobotFileError(
            "mjcf", str(desc.mjcf_path), f"an MJCF MuJoCo loads ({text})"
        ) from None
    for kind, top in (("geoms", MAX_MODEL_GEOMS), ("bodies", MAX_MODEL_BODIES)):
        count = len(getattr(spec, kind))
        if count > top:  # checked before compiling (the planner's tables are geoms x geoms)
            raise RobotFileError(f"mjcf {kind}", count, f"at most {top} {kind} in the model")
    for arm in Arm:
        _rename_arm(spec, desc, arm)
        _drive_actuators(spec, desc, arm)
    if desc.family == "ideal" and spec.option.integrator == mujoco.mjtIntegrator.mjINT_EULER:
        # the servos' damping kv integrated implicitly: explicit Euler diverges at kv / I * dt
        # > 2 (ALOHA's wrist, I = 7e-4 kg m^2, at dt = 2 ms: kv > 0.7 Nm s/rad)
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    _scene(spec, desc)
    for a, b in desc.file.collision.exclude_bodies:
        spec.add_exclude(bodyname1=a, bodyname2=b)
    _home_key(spec, _compile_checked(spec, desc), desc)
    return spec


def _compile_checked(spec: mujoco.MjSpec, desc: RobotDescription) -> mujoco.MjModel:
    """``spec`` compiled; RobotFileError (never MuJoCo's ValueError) when it does not."""
    try:
        return compile_quietly(spec)
    except ValueError as err:
        text = " ".join(str(err).split())
        raise RobotFileError(
            "mjcf", str(desc.mjcf_path), f"an MJCF MuJoCo compiles ({text})"
        ) from None


EMPTY_PREFIX_NOTE = "Attaching a spec with an empty prefix"


@contextlib.contextmanager
def without_empty_prefix_note():
    """MuJoCo's parser without its note that an empty-prefix attach (OpenArm's pedestal scene)
    may not save back to XML (the twin never saves these models), which it would also append
    to ``MUJOCO_LOG.TXT`` in the working folder; every other warning is printed as MuJoCo
    would."""
    previous = mujoco.get_mju_user_warning()

    def warn(text: str) -> None:
        if EMPTY_PREFIX_NOTE not in text:
            print(f"WARNING: {text}", file=sys.stderr)

    mujoco.set_mju_user_warning(warn)
    try:
        yield
    finally:
        mujoco.set_mju_user_warning(previous)


def _parse_quietly(path) -> mujoco.MjSpec:
    with without_empty_prefix_note():
        return mujoco.MjSpec.from_file(str(path))


def load_published_openarm() -> mujoco.MjModel:
    """``openarm-mujoco``'s own pedestal scene, unchanged (what the twin's OpenArm is
    compared with)."""
    import openarm_mujoco.v2 as v2

    with without_empty_prefix_note():
        return mujoco.MjModel.from_xml_path(v2.openarm_pedestal_xml())


def compile_quietly(spec: mujoco.MjSpec) -> mujoco.MjModel:
    """``spec.compile()`` without MuJoCo's note that an empty-prefix attach (OpenArm's pedestal
    scene) may not save back to XML: the twin never saves these models."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=EMPTY_PREFIX_NOTE)
        return spec.compile()


@lru_cache(maxsize=8)
def _compiled(key: str) -> mujoco.MjModel:
    return _compile_checked(robot_spec(key), resolve_robot(key))


def load_robot_model(robot: str | RobotDescription = N.DEFAULT_ROBOT) -> mujoco.MjModel:
    """The compiled canonical model of ``robot`` (a fresh copy each call); RobotFileError if
    the file's ``[demo]`` pair leaves a joint's range."""
    desc = resolve_robot(robot)
    if _is_rob(desc):
        from rob_twin.models.loading import load_scene

        model = load_scene()  # ROB's generated scene is already canonical: not rebuilt
    else:
        model = copy.deepcopy(_compiled(str(desc.path)))
    check_model(model, desc)
    check_demo_pair(model, desc)
    return model


def check_model(model: mujoco.MjModel, desc: RobotDescription) -> None:
    """RobotFileError naming the first of: a non-finite number anywhere in the compiled
    ``model`` (a NaN mass, range, position ...); an arm joint whose range is empty or
    reversed; a ``home_rad`` angle outside its joint's range; ``[drives.friction]`` on a
    model whose integrator is RK4 (which integrates the friction's damping explicitly:
    ``rob_twin.twin.drives.joint_friction``)."""
    if desc.file.drives.friction is not None and int(model.opt.integrator) == int(
        mujoco.mjtIntegrator.mjINT_RK4
    ):
        raise RobotFileError(
            "drives.friction",
            "MJCF <option integrator> RK4",
            "an MJCF with the Euler (the default), implicit or implicitfast integrator for "
            "joint friction",
        )
    for name in dir(model):
        value = getattr(model, name, None) if not name.startswith("_") else None
        if isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.size:
            bad = np.flatnonzero(~np.isfinite(value.ravel()))
            if bad.size:
                raise RobotFileError(
                    "mjcf", f"{name}[{int(bad[0])}] = {value.ravel()[bad[0]]}", "finite numbers"
                )
    for arm in Arm:
        for j, q in enumerate(desc.arm(arm).home_rad, start=1):
            jid = model.joint(N.arm_joint(arm, j)).id
            lo, hi = (float(x) for x in model.jnt_range[jid])
            joint = desc.arm(arm).joints[j - 1]
            if (lo, hi) != (0.0, 0.0) and not lo < hi:  # MuJoCo drops a reversed range
                raise RobotFileError(
                    f"arms.{arm.value}.joints[{j - 1}]", joint, f"a joint whose range has lo < hi "
                    f"(the MJCF's is [{lo:.6g}, {hi:.6g}])",
                )  # fmt: skip
            if model.jnt_limited[jid] and not lo <= q <= hi:
                raise RobotFileError(
                    f"arms.{arm.value}.home_rad[{j - 1}]", q, f"[{lo:.6g}, {hi:.6g}] rad "
                    f"({joint}'s range in the MJCF)",
                )  # fmt: skip


def check_demo_pair(model: mujoco.MjModel, desc: RobotDescription) -> None:
    """RobotFileError naming the first angle of the file's ``[demo]`` crossing pair outside its
    joint's range in ``model`` (the canonical model; the angle counts are checked at load)."""
    if desc.file.demo is None:
        return
    for field in ("crossing_start_rad", "crossing_goals_rad"):
        for side, q in getattr(desc.file.demo, field).items():
            for j, value in enumerate(q, start=1):
                jid = model.joint(N.arm_joint(side, j)).id
                lo, hi = (float(x) for x in model.jnt_range[jid])
                if model.jnt_limited[jid] and not lo <= value <= hi:
                    raise RobotFileError(
                        f"demo.{field}.{side}[{j - 1}]", value, f"[{lo:.4g}, {hi:.4g}] rad"
                    )


def load_model_of(where: str) -> mujoco.MjModel:
    """A model named the way studies and ``certify --model`` name one: a shipped robot
    (``rob``, ``openarm``), a robot file (``*.toml``), or a plain MJCF scene path (ROB's names)."""
    if where in N.ROBOTS or str(where).endswith(".toml"):
        return load_robot_model(where)
    from pathlib import Path

    from rob_twin.models.loading import load_scene
    from rob_twin.models.robot_description import check_mjcf_files

    check_mjcf_files(Path(where))  # bounded before MuJoCo parses it
    try:
        return load_scene(where)
    except ValueError as err:  # MuJoCo's parser and compiler
        text = " ".join(str(err).split())
        raise RobotFileError("model", str(where), f"an MJCF scene MuJoCo loads ({text})") from None


@lru_cache(maxsize=16)
def _ranges(robot_file: str, arm: str) -> tuple[tuple[float, float], ...]:
    m = load_robot_model(robot_file)
    ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in N.arm_joints(arm)]
    return tuple((float(lo), float(hi)) for lo, hi in (m.jnt_range[i] for i in ids if i >= 0))


def arm_joint_ranges(robot: str | RobotDescription, arm: Arm | str) -> list[tuple[float, float]]:
    """``arm``'s joint ranges [rad] in ``robot``'s model (one per joint: five to seven)."""
    return list(_ranges(str(resolve_robot(robot).path), Arm.parse(arm).value))

"""The ROB model: compiles, steps cleanly, names, limits, thin-geometry contacts, Pinocchio
agreement."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
from rob_twin.models import build
from rob_twin.models import dimensions as D
from rob_twin.models import names as N
from rob_twin.models.loading import ROBOT_PATH, SCENE_PATH, load_pinocchio, load_scene
from rob_twin.models.names import Arm

MODELS = Path(__file__).resolve().parents[1] / "models"


def test_committed_xml_is_the_generated_xml():
    assert (build.MODEL_DIR / "rob.xml").read_text() == build.robot_xml()
    assert (build.MODEL_DIR / "scene.xml").read_text() == build.scene_xml()


@pytest.mark.parametrize("path", sorted(MODELS.glob("*/scene.xml")), ids=lambda p: p.parent.name)
def test_every_scene_steps_2s_under_control_noise_without_warnings(path):
    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    rng = np.random.default_rng(7)
    lo, hi = model.actuator_ctrlrange.T
    for i in range(int(2.0 / model.opt.timestep)):
        if i % 10 == 0:
            data.ctrl[:] = np.clip((lo + hi) / 2 + rng.normal(0, 0.1, model.nu) * (hi - lo), lo, hi)
        mujoco.mj_step(model, data)
    assert [int(w.number) for w in data.warning] == [0] * len(data.warning)
    assert np.all(np.isfinite(data.qpos))


@pytest.mark.parametrize(
    "folder",
    sorted(p for p in MODELS.iterdir() if p.is_dir() and p.name != "__pycache__"),
    ids=lambda p: p.name,
)
def test_models_folder_lint(folder):
    """Every model folder has a README and a robot file; a folder whose MJCF lives in it (a
    generated model) also has its CHANGELOG and scene; one whose MJCF comes from a package
    (OpenArm v2) says where in its robot file."""
    from rob_twin.models.robot_description import load_robot_file

    for required in ("README.md", "robot.toml"):
        assert (folder / required).is_file(), f"{folder.name}/ lacks {required}"
    desc = load_robot_file(folder / "robot.toml")
    if desc.mjcf_path.parent == folder:
        for required in ("CHANGELOG.md", "scene.xml"):
            assert (folder / required).is_file(), f"{folder.name}/ lacks {required}"
    else:
        assert desc.file.model_source, f"{folder.name}/robot.toml: no model_source"


def test_every_constant_name_exists_in_the_model():
    m = load_scene()
    kinds = {
        mujoco.mjtObj.mjOBJ_JOINT: list(N.ALL_ARM_JOINTS)
        + [N.gripper_joint(a) for a in Arm]
        + [N.gripper_follower_joint(a) for a in Arm]
        + [N.TORSO_JOINT, N.HEAD_PAN_JOINT, N.HEAD_TILT_JOINT, N.BASE_FREEJOINT],
        mujoco.mjtObj.mjOBJ_ACTUATOR: [N.arm_actuator(a, j) for a in Arm for j in range(1, 8)]
        + [N.gripper_actuator(a) for a in Arm]
        + [N.TORSO_ACTUATOR, N.HEAD_PAN_ACTUATOR, N.HEAD_TILT_ACTUATOR],
        mujoco.mjtObj.mjOBJ_SITE: [N.tcp_site(a) for a in Arm] + [N.RANGE_SENSOR_SITE],
        mujoco.mjtObj.mjOBJ_GEOM: list(N.TREAD_GEOMS)
        + [N.TABLE_TOP_GEOM, N.CAN_GEOM, N.FLOOR_GEOM],
        mujoco.mjtObj.mjOBJ_CAMERA: [N.HEAD_CAMERA, *N.SCENE_CAMERAS],
        mujoco.mjtObj.mjOBJ_BODY: [N.BASE_BODY, N.TORSO_BODY, N.HEAD_BODY, N.TABLE_BODY, N.CAN_BODY]
        + [N.hand_body(a) for a in Arm],
        mujoco.mjtObj.mjOBJ_SENSOR: [N.range_sensor(i) for i in range(N.RANGE_SENSOR_BEAMS)],
    }
    missing = [(k.name, n) for k, ns in kinds.items() for n in ns if mujoco.mj_name2id(m, k, n) < 0]
    assert missing == []


def test_no_zero_or_placeholder_limits():
    """The seeds' vendor models had placeholder or zero speed/effort values; ours has none."""
    m = load_scene()
    for name in N.ALL_ARM_JOINTS:
        j = m.joint(name)
        lo, hi = m.jnt_range[j.id]
        assert j.limited and hi > lo, name
        assert 0 < m.jnt_actfrcrange[j.id][1] <= 100, name
        vmax = m.numeric(f"velocity_limit/{name}").data[0]
        assert 0.5 < vmax < 50, name
        act = m.actuator(N.arm_actuator(name.split("/")[0], int(name[-1])))
        assert act.gainprm[0] > 0 and act.forcerange[1] > 0
    speeds = {s.velocity_limit for s in D.ARM_JOINTS}
    efforts = {s.effort_limit for s in D.ARM_JOINTS}
    assert speeds == {16.75, 5.45, 20.94} and efforts == {40.0, 27.0, 7.0}
    assert abs(D.arm_reach() - 0.74) < 0.01 and abs(D.arm_mass() - 6.0) < 0.2


def test_arms_mirror_and_right_arm_is_on_robots_right():
    m = load_scene()
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    right, left = d.site(N.tcp_site(Arm.RIGHT)).xpos, d.site(N.tcp_site(Arm.LEFT)).xpos
    assert right[1] < -0.5 and left[1] > 0.5  # ROB faces +x: its right is -y
    np.testing.assert_allclose(
        right * [1, -1, 1], left, atol=0.02
    )  # mirrored (mount offsets differ by mm)


def test_home_pose_is_free_of_self_contact():
    from rob_twin.twin.sim.twin import Twin

    twin = Twin()
    robot = {
        twin.model.geom(i).name for i in range(twin.model.ngeom) if twin.model.geom_bodyid[i] != 0
    }
    pairs = [
        (twin.model.geom(c.geom1).name, twin.model.geom(c.geom2).name)
        for c in twin.data.contact[: twin.data.ncon]
    ]
    self_pairs = [
        p
        for p in pairs
        if N.FLOOR_GEOM not in p and p[0] in robot and p[1] in robot and "table" not in p[0] + p[1]
    ]
    assert self_pairs == []


def test_forearm_pushed_through_the_table_top_makes_contact():
    """The table top is thin; a primitive box would miss capsules crossing it (DESIGN.md)."""
    m = load_scene()
    assert m.geom(N.TABLE_TOP_GEOM).type[0] == mujoco.mjtGeom.mjGEOM_MESH
    d = mujoco.MjData(m)
    top = m.geom(N.TABLE_TOP_GEOM).id
    forearm = m.geom(N.arm_link_body(Arm.RIGHT, 5) + "_geom").id
    rng = np.random.default_rng(3)
    hits = 0
    trials = 50
    for _ in range(trials):
        # Place a free-standing copy of the forearm capsule across the slab by moving the geom.
        d.qpos[:] = m.qpos0
        mujoco.mj_kinematics(m, d)
        z = D.SCENE.table_height - D.SCENE.table_thickness / 2
        centre = np.array([0.75 + rng.uniform(-0.15, 0.15), rng.uniform(-0.4, 0.4), z])
        tilt = rng.uniform(-0.6, 0.6)
        axis = np.array([np.sin(tilt), 0.0, np.cos(tilt)])
        mat = np.zeros(9)
        quat = np.zeros(4)
        mujoco.mju_quatZ2Vec(quat, axis)
        mujoco.mju_quat2Mat(mat, quat)
        hits += _distance_at(m, d, forearm, top, centre, mat) < 0
    assert hits == trials


def _distance_at(m, d, g1, g2, pos, mat):
    """Signed distance [m] with geom ``g1`` placed at ``pos``/``mat`` (crossing the slab)."""
    d.geom_xpos[g1] = pos
    d.geom_xmat[g1] = mat
    return mujoco.mj_geomDistance(m, d, g1, g2, 0.1, None)


def test_pinocchio_tcp_agrees_with_mujoco_on_1000_random_configurations():
    import pinocchio as pin

    m = mujoco.MjModel.from_xml_path(str(ROBOT_PATH))
    d = mujoco.MjData(m)
    pm = load_pinocchio()
    pd = pm.createData()
    tcp_frames = {a: pm.getFrameId(N.tcp_site(a)) for a in Arm}
    rng = np.random.default_rng(11)
    worst = 0.0
    for _ in range(1000):
        q = m.qpos0.copy()
        for j in range(m.njnt):
            if m.jnt_type[j] in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
                lo, hi = m.jnt_range[j]
                q[m.jnt_qposadr[j]] = rng.uniform(lo, hi)
        q[:3] = rng.uniform(-1, 1, 3)
        quat = rng.normal(size=4)
        q[3:7] = quat / np.linalg.norm(quat)
        d.qpos[:] = q
        mujoco.mj_kinematics(m, d)
        qp = pin.neutral(pm)
        for jid in range(1, pm.njoints):
            name = pm.names[jid]
            adr = m.jnt_qposadr[m.joint(name).id]
            iq = pm.joints[jid].idx_q
            if pm.joints[jid].nq == 7:
                qp[iq : iq + 3] = q[adr : adr + 3]
                w, x, y, z = q[adr + 3 : adr + 7]
                qp[iq + 3 : iq + 7] = [x, y, z, w]
            else:
                qp[iq] = q[adr]
        pin.framesForwardKinematics(pm, pd, qp)
        for a in Arm:
            worst = max(
                worst,
                float(
                    np.max(np.abs(pd.oMf[tcp_frames[a]].translation - d.site(N.tcp_site(a)).xpos))
                ),
            )
    assert worst < 1e-9, worst


def test_scene_path_exists():
    assert SCENE_PATH.is_file() and ROBOT_PATH.is_file()


def test_keyframes_hold_the_named_poses_and_apply_home_uses_them():
    from rob_twin.models import poses
    from rob_twin.models.loading import apply_home, keyframe_index

    m = load_scene()
    assert [m.key(i).name for i in range(m.nkey)] == list(poses.KEYFRAMES)
    for name, arm_poses in poses.KEYFRAMES.items():
        key = m.key(keyframe_index(m, name))
        for side, q in arm_poses.items():
            idx = [m.jnt_qposadr[m.joint(j).id] for j in N.arm_joints(side)]
            np.testing.assert_array_equal(key.qpos[idx], q)
            np.testing.assert_array_equal(
                key.ctrl[[m.actuator(a).id for a in N.arm_actuators(side)]], q
            )
    d = mujoco.MjData(m)
    apply_home(m, d)
    np.testing.assert_array_equal(d.qpos, m.key("home").qpos)


def test_unknown_keyframe_names_the_valid_ones():
    from rob_twin.models.errors import RobTwinError
    from rob_twin.models.loading import keyframe_index

    with pytest.raises(RobTwinError, match="unknown keyframe 'nap'; valid: home, crossing_start"):
        keyframe_index(load_scene(), "nap")


def test_the_left_arm_is_the_attached_right_arm_mirrored():
    m = load_scene()
    for j in range(1, 8):
        r, left = m.joint(N.arm_joint(Arm.RIGHT, j)), m.joint(N.arm_joint(Arm.LEFT, j))
        np.testing.assert_array_equal(m.jnt_range[r.id], m.jnt_range[left.id])
        np.testing.assert_array_equal(
            m.jnt_axis[left.id], -(np.diag([1, -1, 1]) @ m.jnt_axis[r.id])
        )
        np.testing.assert_array_equal(m.dof_armature[r.dofadr], m.dof_armature[left.dofadr])

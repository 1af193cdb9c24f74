"""Per-arm kinematics vs MuJoCo (FK, Jacobian, gravity, payload) and finite differences."""

from __future__ import annotations

import mujoco
import numpy as np
import pinocchio as pin
import pytest
from rob_twin.models import dimensions as D
from rob_twin.models import names as N
from rob_twin.models.loading import ROBOT_PATH, arm_qpos_indices, joint_qpos_index
from rob_twin.models.names import Arm
from rob_twin.planners.errors import KinematicsInputError, PlannerConfigError
from rob_twin.planners.kinematics import ArmKinematics, Payload

ARMS = list(Arm)


class MjArm:
    """MuJoCo reference for one arm: base at identity, everything else at zero."""

    def __init__(self, arm: Arm, model: mujoco.MjModel | None = None):
        self.m = model or mujoco.MjModel.from_xml_path(str(ROBOT_PATH))
        self.d = mujoco.MjData(self.m)
        self.arm = arm
        self.idx = arm_qpos_indices(self.m, arm)
        self.torso = joint_qpos_index(self.m, N.TORSO_JOINT)
        self.dof = np.array([self.m.jnt_dofadr[self.m.joint(n).id] for n in N.arm_joints(arm)])
        self.site = self.m.site(N.tcp_site(arm)).id

    def set(self, q, torso):
        self.d.qpos[:] = 0.0
        self.d.qpos[3] = 1.0  # free base at identity (w, x, y, z)
        self.d.qpos[self.idx] = q
        self.d.qpos[self.torso] = torso
        self.d.qvel[:] = 0.0
        mujoco.mj_forward(self.m, self.d)

    def jacobian(self):
        jp, jr = np.zeros((3, self.m.nv)), np.zeros((3, self.m.nv))
        mujoco.mj_jacSite(self.m, self.d, jp, jr, self.site)
        return np.vstack([jp, jr])[:, self.dof]


def random_configs(kin: ArmKinematics, n: int, seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        yield rng.uniform(kin.lower, kin.upper), rng.uniform(*kin.torso_range)


@pytest.fixture(scope="module", params=ARMS, ids=lambda a: a.value)
def pair(request):
    return ArmKinematics(request.param), MjArm(request.param)


def test_reduced_model_keeps_torso_and_seven_arm_joints_with_the_dimension_limits(pair):
    kin, ref = pair
    assert list(kin.model.names)[1:] == [N.TORSO_JOINT, *N.arm_joints(kin.arm)]
    np.testing.assert_array_equal(kin.lower, [j.lower for j in D.ARM_JOINTS])
    np.testing.assert_array_equal(kin.upper, [j.upper for j in D.ARM_JOINTS])
    assert kin.torso_range == D.BODY.torso_range
    # Effort limits: dimensions.py, the MJCF actuators and the joints all agree.
    for j, name in enumerate(N.arm_joints(kin.arm)):
        act = ref.m.actuator(N.arm_actuator(kin.arm, j + 1))
        assert act.forcerange[1] == kin.effort_limit[j]
        assert ref.m.jnt_actfrcrange[ref.m.joint(name).id][1] == kin.effort_limit[j]


def test_tcp_pose_matches_mujoco_site_on_random_configurations_with_torso(pair):
    kin, ref = pair
    worst_p = worst_r = 0.0
    for q, torso in random_configs(kin, 200, 1):
        pose = kin.tcp_pose(q, torso)
        ref.set(q, torso)
        worst_p = max(worst_p, float(np.max(np.abs(pose.translation - ref.d.site_xpos[ref.site]))))
        worst_r = max(
            worst_r, float(np.max(np.abs(pose.rotation.ravel() - ref.d.site_xmat[ref.site])))
        )
    assert worst_p < 1e-9 and worst_r < 1e-9, (worst_p, worst_r)


def test_jacobian_matches_mujoco_jac_site(pair):
    kin, ref = pair
    worst = 0.0
    for q, torso in random_configs(kin, 100, 2):
        ref.set(q, torso)
        worst = max(worst, float(np.max(np.abs(kin.tcp_jacobian(q, torso) - ref.jacobian()))))
    assert worst < 1e-9, worst


def test_jacobian_matches_central_finite_differences_including_the_torso_column(pair):
    kin, _ = pair
    h = 1e-6
    for q, torso in random_configs(kin, 20, 3):
        jac = kin.tcp_jacobian(q, torso, with_torso=True)
        x = np.concatenate([[torso], q])
        for i in range(8):
            xp, xm = x.copy(), x.copy()
            xp[i] += h
            xm[i] -= h
            pp, pm = kin.tcp_pose(xp[1:], xp[0]), kin.tcp_pose(xm[1:], xm[0])
            lin = (pp.translation - pm.translation) / (2 * h)
            ang = pin.log3(pp.rotation @ pm.rotation.T) / (2 * h)  # world-frame angular rate
            np.testing.assert_allclose(jac[:3, i], lin, atol=1e-8)
            np.testing.assert_allclose(jac[3:, i], ang, atol=1e-8)
    np.testing.assert_array_equal(kin.tcp_jacobian(q, torso), jac[:, 1:])


def test_gravity_torques_match_mujoco_bias_forces_at_rest(pair):
    kin, ref = pair
    worst = 0.0
    for q, torso in random_configs(kin, 100, 4):
        ref.set(q, torso)
        worst = max(
            worst, float(np.max(np.abs(kin.gravity_torques(q, torso) - ref.d.qfrc_bias[ref.dof])))
        )
    assert worst < 1e-9, worst


@pytest.mark.parametrize("arm", ARMS, ids=lambda a: a.value)
def test_payload_torques_match_mujoco_with_the_mass_added_at_the_tcp(arm):
    payload = Payload(1.7, (0.01, -0.02, 0.03))
    spec = mujoco.MjSpec.from_file(str(ROBOT_PATH))
    tcp = spec.site(N.tcp_site(arm))
    body = spec.body(N.hand_body(arm)).add_body(name="payload", pos=tcp.pos, quat=tcp.quat)
    body.mass, body.ipos, body.inertia = payload.mass_kg, payload.com_m, [1e-9] * 3
    ref = MjArm(arm, spec.compile())
    kin = ArmKinematics(arm)
    worst = 0.0
    for q, torso in random_configs(kin, 50, 5):
        ref.set(q, torso)
        worst = max(
            worst,
            float(
                np.max(np.abs(kin.gravity_torques(q, torso, payload) - ref.d.qfrc_bias[ref.dof]))
            ),
        )
    assert worst < 1e-9, worst
    q = np.array(D.HOME_ARM_POSE)
    assert not np.allclose(kin.gravity_torques(q, 0.0, payload), kin.gravity_torques(q))
    np.testing.assert_array_equal(kin.gravity_torques(q, 0.0, Payload(0.0)), kin.gravity_torques(q))


def test_torso_rotates_the_tcp_about_the_vertical_axis():
    kin = ArmKinematics(Arm.RIGHT)
    q = np.array(D.HOME_ARM_POSE)
    p0, p1 = kin.tcp_pose(q, 0.0).translation, kin.tcp_pose(q, np.pi / 2).translation
    np.testing.assert_allclose(p1, [-p0[1], p0[0], p0[2]], atol=1e-12)


@pytest.mark.parametrize(
    "q, torso, field",
    [
        (np.zeros(6), 0.0, "q shape"),
        (np.zeros((7, 1)), 0.0, "q shape"),
        ([0, 0, np.nan, 0, 0, 0, 0], 0.0, "q="),
        (np.zeros(7), np.inf, "torso="),
    ],
)
def test_bad_inputs_raise_typed_errors_naming_the_value_and_the_valid_range(q, torso, field):
    kin = ArmKinematics(Arm.LEFT)
    with pytest.raises(KinematicsInputError, match="valid:") as err:
        kin.tcp_pose(q, torso)
    assert str(err.value).startswith(field)


def test_payload_validation():
    with pytest.raises(PlannerConfigError, match=r"mass_kg=-1.*>= 0 kg"):
        Payload(-1.0)
    with pytest.raises(PlannerConfigError, match="com_m"):
        Payload(1.0, (0.0, 0.0))

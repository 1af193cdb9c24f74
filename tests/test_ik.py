"""IK: verified solutions only, goal sets, seeded and continuity modes, singular, unreachable."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pinocchio as pin
import pytest
from rob_twin.models import names as N
from rob_twin.models.loading import ROBOT_PATH, arm_qpos_indices, joint_qpos_index
from rob_twin.models.names import Arm
from rob_twin.planners import lm
from rob_twin.planners.errors import KinematicsInputError, PlannerConfigError
from rob_twin.planners.ik import IKConfig, IKSolver, IKStatus, default_config
from rob_twin.planners.kinematics import ArmKinematics

TOL = 1e-6


@pytest.fixture(scope="module", params=list(Arm), ids=lambda a: a.value)
def solver(request):
    return IKSolver(ArmKinematics(request.param))


@pytest.fixture(scope="module")
def mj():
    m = mujoco.MjModel.from_xml_path(str(ROBOT_PATH))
    return m, mujoco.MjData(m)


def mujoco_tcp(mj, arm, q, torso):
    """Independent FK: MuJoCo's site pose, base at identity."""
    m, d = mj
    d.qpos[:] = 0.0
    d.qpos[3] = 1.0
    d.qpos[arm_qpos_indices(m, arm)] = q
    d.qpos[joint_qpos_index(m, N.TORSO_JOINT)] = torso
    mujoco.mj_kinematics(m, d)
    site = m.site(N.tcp_site(arm)).id
    return pin.SE3(d.site_xmat[site].reshape(3, 3).copy(), d.site_xpos[site].copy())


def assert_verified(solver, mj, target, torso, q):
    kin = solver.kin
    assert kin.within_limits(q)
    pose = mujoco_tcp(mj, kin.arm, q, torso)
    assert np.linalg.norm(pose.translation - target.translation) <= TOL
    assert np.linalg.norm(pin.log3(target.rotation.T @ pose.rotation)) <= TOL


def test_random_reachable_poses_with_torso_are_solved_and_verified_by_mujoco(solver, mj):
    kin, rng = solver.kin, np.random.default_rng(10)
    for _ in range(25):
        torso = rng.uniform(*kin.torso_range)
        target = kin.tcp_pose(rng.uniform(kin.lower, kin.upper), torso)
        res = solver.solve(target, torso)
        assert res.ok, res.message
        sol = res.solutions[0]
        assert sol.position_error_m <= TOL and sol.orientation_error_rad <= TOL
        assert_verified(solver, mj, target, torso, res.q)


def test_goal_set_returns_several_distinct_verified_solutions(solver, mj):
    kin = solver.kin
    q_true = np.array([0.4, -0.6, 0.3, 1.2, -0.2, 0.3, 0.5])
    target = kin.tcp_pose(q_true, 0.2)
    res = solver.solve(target, 0.2, n_solutions=4)
    assert res.ok and len(res.solutions) == 4
    for i, a in enumerate(res.solutions):
        assert_verified(solver, mj, target, 0.2, a.q)
        for b in res.solutions[i + 1 :]:
            assert np.max(np.abs(a.q - b.q)) > solver.config.distinct_min_rad


def test_seed_is_tried_first_and_solutions_are_sorted_by_distance_to_it(solver):
    kin = solver.kin
    q_true = np.array([0.8, 0.4, -0.5, 1.0, 0.6, -0.3, 0.2])
    target = kin.tcp_pose(q_true, -0.5)
    res = solver.solve(target, -0.5, seed=q_true + 0.02)
    assert res.ok and res.attempts == 1
    assert res.solutions[0].max_joint_step_rad < 0.05
    many = solver.solve(target, -0.5, seed=q_true, n_solutions=3)
    dist = [np.linalg.norm(s.q - q_true) for s in many.solutions]
    assert dist == sorted(dist) and dist[0] < 1e-6


def test_continuity_tracks_a_smooth_tcp_path_with_small_joint_steps(solver, mj):
    kin = solver.kin
    t = np.linspace(0.0, 1.0, 60)
    q0 = np.array([0.6, -0.4, 0.2, 1.3, 0.1, 0.2, -0.3])
    path = q0 + 0.4 * np.sin(2 * np.pi * t)[:, None] * np.array([1, 0.5, -0.7, 0.6, 1, 0.8, -1])
    torso = 0.3 * t
    q = path[0].copy()
    for i in range(1, len(t)):
        target = kin.tcp_pose(path[i], torso[i])
        res = solver.solve_continuous(target, q, torso[i], max_joint_step=0.1)
        assert res.ok, (i, res.message)
        assert res.solutions[0].max_joint_step_rad <= 0.1
        assert_verified(solver, mj, target, torso[i], res.q)
        q = res.q


def test_continuity_refuses_a_jump_beyond_the_bound_instead_of_returning_it(solver):
    kin = solver.kin
    a = np.array([0.5, -0.8, 0.9, 1.4, -0.6, 0.4, 0.3])
    b = a + np.array([0.6, -0.5, 0.4, -0.6, 0.5, -0.4, 0.6])  # another arm posture
    target = kin.tcp_pose(b, 0.0)
    assert solver.solve(target, 0.0).ok  # reachable: a refusal below is the bound's doing
    res = solver.solve_continuous(target, a, 0.0, max_joint_step=0.05)
    assert not res.ok and res.q is None and res.solutions == ()
    assert res.status is IKStatus.JOINT_JUMP
    assert f"{kin.arm.value}/j4 by 0.6 rad; bound 0.05 rad" in res.message
    loose = solver.solve_continuous(target, a, 0.0, max_joint_step=np.pi)
    assert loose.ok and loose.solutions[0].max_joint_step_rad > 0.05


SINGULAR = {
    "straight_arm_j1_j3_j5_coaxial": [0.3, 0.0, 0.2, 0.0, -0.4, 0.0, 0.5],
    "straight_elbow": [0.5, -0.7, 0.4, 0.0, 0.3, 0.2, -0.6],
    "j1_j3_coaxial": [1.0, 0.0, -0.6, 1.2, 0.4, -0.5, 0.2],
    "wrist_centred": [0.2, 0.5, -0.3, 1.5, 0.0, 0.0, 0.0],
    "all_zero": [0.0] * 7,
}


@pytest.mark.parametrize("name", sorted(SINGULAR))
def test_singular_targets_converge_or_fail_cleanly_never_a_wrong_pose(solver, mj, name):
    kin = solver.kin
    q_sing = np.array(SINGULAR[name])
    target = kin.tcp_pose(q_sing, 0.1)
    res = solver.solve(target, 0.1)
    assert res.ok, res.message  # these poses are reachable: expect convergence
    assert_verified(solver, mj, target, 0.1, res.q)
    # Seeded *at* the singular configuration, towards a nearby pose that needs the
    # singular direction (bend the elbow / tilt the shoulder).
    q_near = np.clip(
        q_sing + np.array([0.05, 0.1, -0.05, 0.15, 0.05, 0.05, 0.05]), kin.lower, kin.upper
    )
    near = kin.tcp_pose(q_near, 0.1)
    res = solver.solve_continuous(near, q_sing, 0.1, max_joint_step=0.4)
    if res.ok:
        assert_verified(solver, mj, near, 0.1, res.q)
        assert res.solutions[0].max_joint_step_rad <= 0.4
    else:
        assert res.status in (IKStatus.JOINT_JUMP, IKStatus.NOT_CONVERGED) and res.q is None
    seeded = solver.solve(near, 0.1, seed=q_sing)
    assert seeded.ok, seeded.message
    assert_verified(solver, mj, near, 0.1, seeded.q)


def test_unreachable_poses_fail_cleanly(solver):
    kin = solver.kin
    far = pin.SE3(np.eye(3), np.array([2.5, 0.0, 1.0]))
    res = solver.solve(far)
    assert res.status is IKStatus.UNREACHABLE and res.q is None and res.attempts == 0
    assert "reaches at most" in res.message
    assert solver.solve_continuous(far, np.zeros(7)).status is IKStatus.UNREACHABLE
    # Within the reach bound but impossible (TCP at the J1 origin, inside the shoulder).
    quick = IKSolver(kin, dataclasses.replace(default_config(), max_attempts=5))
    kin.tcp_pose(np.zeros(7), 0.0)
    j1 = kin.data.oMi[kin.model.getJointId(kin.joint_names[0])].translation.copy()
    res = quick.solve(pin.SE3(np.eye(3), j1), n_solutions=2)
    assert res.status is IKStatus.NOT_CONVERGED and res.solutions == () and res.attempts == 5
    assert res.best_position_error_m > 1e-3 and "best" in res.message


def test_a_local_solve_that_lies_about_convergence_is_never_returned(solver, monkeypatch):
    kin = solver.kin
    target = kin.tcp_pose(np.array([0.4, -0.6, 0.3, 1.2, -0.2, 0.3, 0.5]), 0.0)

    def liar(kin_, torso, goal, q0, s):
        return lm.LocalResult(np.zeros(7), True, 0.0, 0.0, 1)

    monkeypatch.setattr("rob_twin.planners.ik.solve_local", liar)
    res = IKSolver(kin, dataclasses.replace(default_config(), max_attempts=3)).solve(target)
    assert res.status is IKStatus.NOT_CONVERGED and res.q is None
    assert solver.solve_continuous(target, np.zeros(7)).status is IKStatus.NOT_CONVERGED


def test_targets_at_joint_limits_are_solved_inside_the_limits(solver, mj):
    kin = solver.kin
    q = np.where(np.arange(7) % 2 == 0, kin.upper, kin.lower)
    q[3] = 1.0
    target = kin.tcp_pose(q, 0.0)
    res = solver.solve(target, 0.0)
    assert res.ok, res.message
    assert_verified(solver, mj, target, 0.0, res.q)


def test_same_rng_seed_gives_the_same_solution(solver):
    kin = solver.kin
    target = kin.tcp_pose(np.array([0.1, 0.3, -0.2, 0.9, 0.4, -0.1, 0.6]), 0.0)
    a = IKSolver(kin).solve(target)
    b = IKSolver(kin).solve(target)
    np.testing.assert_array_equal(a.q, b.q)


def test_bad_targets_and_configs_raise_typed_errors(solver):
    with pytest.raises(KinematicsInputError, match="rotation"):
        solver.solve(np.diag([1.0, 2.0, 1.0, 1.0]))
    with pytest.raises(KinematicsInputError, match=r"\(4, 4\) matrix"):
        solver.solve(np.eye(3))
    nan = np.eye(4)
    nan[0, 3] = np.nan
    with pytest.raises(KinematicsInputError, match="finite"):
        solver.solve(nan)
    with pytest.raises(KinematicsInputError, match="seed shape"):
        solver.solve(np.eye(4), seed=np.zeros(3))
    with pytest.raises(PlannerConfigError, match="n_solutions=0"):
        solver.solve(np.eye(4), n_solutions=0)
    with pytest.raises(PlannerConfigError, match="max_joint_step"):
        solver.solve_continuous(np.eye(4), np.zeros(7), max_joint_step=-1.0)
    with pytest.raises(PlannerConfigError, match="max_attempts=0"):
        IKConfig(max_attempts=0)
    with pytest.raises(PlannerConfigError, match="lm.tolerance"):
        lm.LMSettings(tolerance=0.0)


def test_table_seeds_start_near_the_target_and_solve_in_fewer_attempts():
    kin = ArmKinematics(Arm.RIGHT)
    rng = np.random.default_rng(21)
    targets = [
        (kin.tcp_pose(rng.uniform(kin.lower, kin.upper), t), t) for t in rng.uniform(-1, 1, 25)
    ]
    tabled = IKSolver(kin)
    plain = IKSolver(ArmKinematics(Arm.RIGHT), dataclasses.replace(default_config(), table_seeds=0))
    attempts = {"tabled": 0, "plain": 0}
    for target, torso in targets:
        starts = tabled._table_starts(target, torso)
        assert len(starts) == default_config().table_seeds
        gap = float(
            np.linalg.norm(
                kin.pose_of(np.concatenate([[torso], starts[0]])).translation - target.translation
            )
        )
        assert gap < 0.15  # the nearest tabled pose is near the target
        for name, s in (("tabled", tabled), ("plain", plain)):
            r = s.solve(target, torso)
            assert r.ok
            attempts[name] += r.attempts
    assert attempts["tabled"] < attempts["plain"]
    again = IKSolver(ArmKinematics(Arm.RIGHT)).solve(*targets[0])
    assert np.array_equal(again.q, IKSolver(ArmKinematics(Arm.RIGHT)).solve(*targets[0]).q)
    with pytest.raises(PlannerConfigError):
        IKConfig(table_seeds=-1)

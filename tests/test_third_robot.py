"""A robot nobody tuned for: ALOHA's bimanual ViperX 300 (gym-aloha 0.1.5's MJCF, six joints
per arm) from a robot file written here, planned, certified, executed by the ``ideal`` drive
runner and judged densely. Skips, saying why, when gym-aloha's assets are not installed
(``make setup`` installs them)."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import mujoco
import numpy as np
import pytest
from rob_twin.experiments.dense_clearance import check_plan, for_group
from rob_twin.experiments.goal_pairs import goal_pairs
from rob_twin.experiments.robot_factory import VIPERX_JOINTS, aloha_toml
from rob_twin.models.names import arm_joint, tcp_site
from rob_twin.models.robot_description import RobotFileError, load_robot_file
from rob_twin.models.robot_model import load_robot_model
from rob_twin.planners.group import ArmGroup, default_config
from rob_twin.twin.sim.ideal import (
    IdealConfig,
    IdealRunDivergedError,
    IdealRunError,
    run_ideal,
)

ASSETS = Path(sysconfig.get_path("purelib")) / "gym_aloha" / "assets"
SCENE = ASSETS / "bimanual_viperx_transfer_cube.xml"
pytestmark = pytest.mark.skipif(
    not SCENE.is_file(), reason=f"gym-aloha 0.1.5's assets are not installed ({SCENE})"
)
PAIRS = 20
ARMS = {a: [arm_joint(a, j) for j in range(1, 7)] for a in ("right", "left")}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "robot.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def aloha(tmp_path_factory):
    return load_robot_model(load_robot_file(write(tmp_path_factory.mktemp("aloha"), aloha_toml())))


@pytest.fixture(scope="module")
def group(aloha):
    g = ArmGroup(aloha, ARMS, default_config())
    g.set_qpos(aloha.key("home").qpos)
    return g


def test_aloha_loads_as_two_six_joint_arms_on_their_own_servos(aloha):
    raw = mujoco.MjModel.from_xml_path(str(SCENE))
    assert aloha.nq == raw.nq and aloha.nu == raw.nu  # ALOHA's servos adopted, none added
    assert mujoco.mj_name2id(aloha, mujoco.mjtObj.mjOBJ_JOINT, "right/j7") < 0
    for a, joints in ARMS.items():
        for name in joints:
            servos = [
                i for i in range(aloha.nu) if aloha.actuator_trnid[i, 0] == aloha.joint(name).id
            ]
            assert len(servos) == 1 and aloha.actuator_gainprm[servos[0], 0] == 3000.0
        assert aloha.site(tcp_site(a)).bodyid[0] == aloha.body(f"{a}/link6").id
    assert aloha.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    home = aloha.key("home").qpos
    lo, hi = aloha.jnt_range[aloha.joint("vx300s_right/left_finger").id]
    assert lo <= home[aloha.joint("vx300s_right/left_finger").qposadr[0]] <= hi  # qpos0 is not
    # the TCP is ALOHA's own calibration point (site cali_*_site1, 0.15 m along gripper_link)
    d_ours, d_raw = mujoco.MjData(aloha), mujoco.MjData(raw)
    rng = np.random.default_rng(1)
    for _ in range(20):
        for a in ARMS:
            for j, name in enumerate(ARMS[a]):
                lo, hi = aloha.jnt_range[aloha.joint(name).id]
                q = rng.uniform(lo, hi)
                d_ours.qpos[aloha.joint(name).qposadr[0]] = q
                d_raw.qpos[raw.joint(f"vx300s_{a}/{VIPERX_JOINTS[j]}").qposadr[0]] = q
        mujoco.mj_kinematics(aloha, d_ours)
        mujoco.mj_kinematics(raw, d_raw)
        for a in ARMS:
            assert np.allclose(d_ours.site(tcp_site(a)).xpos, d_raw.site(f"cali_{a}_site1").xpos)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (('family = "ideal"', 'family = "amber"'), r"joints.*7 joints for drive family 'amber'"),
        (("home_rad = [0.0, -0.96,", "home_rad = [0.0, 0.0, -0.96,"), r"home_rad.*6 \(one per"),
    ],
)
def test_six_joints_only_on_ideal_drives_and_one_home_angle_per_joint(tmp_path, change, match):
    with pytest.raises(RobotFileError, match=match):
        load_robot_file(write(tmp_path, aloha_toml().replace(*change, 1)))


def test_twenty_seeded_pairs_plan_certify_execute_and_judge_collision_free(aloha, group):
    pairs = goal_pairs(group, PAIRS, np.random.default_rng(28))
    start = group.reference_qpos.copy()
    for seed, goals in enumerate(pairs):
        group.set_qpos(start)
        result = group.plan(goals, seed=seed)
        assert result.ok, (seed, result.status, result.reason, result.pair)
        plan = result.plan
        assert plan.certificate.certified and plan.certificate.certified_min_m >= 0.005
        run = run_ideal(aloha, plan, group.reference_qpos)
        assert run.hardware_io is False
        assert run.max_error_rad < 0.1 and run.final_error_rad < 0.01, run.summary()
        assert np.allclose(run.commanded[-1], plan.stacked("q")[-1])
        dense = check_plan(for_group(group, plan.moving), plan)
        assert not dense.counterexamples and dense.true_min_m > 0.0, dense.worst_pair


def test_the_ideal_runner_refuses_bad_input_and_latches_divergence(tmp_path, aloha, group):
    plan = group.plan(goal_pairs(group, 1, np.random.default_rng(3))[0], seed=0).unwrap()
    with pytest.raises(IdealRunError, match=r"start_qpos.*\(23,\)"):
        run_ideal(aloha, plan, np.zeros(5))
    with pytest.raises(IdealRunError, match=r"settle_s=-1"):
        IdealConfig(settle_s=-1)
    raw = mujoco.MjModel.from_xml_path(str(SCENE))  # names not canonical: no right/j1 servo
    with pytest.raises(IdealRunError, match=r"plan joint='right/j1'"):
        run_ideal(raw, plan)
    stiff = load_robot_model(load_robot_file(write(tmp_path, aloha_toml(kp=1e5, kv=0.0))))
    with pytest.raises(IdealRunDivergedError, match="diverged"):
        run_ideal(stiff, plan, group.reference_qpos)

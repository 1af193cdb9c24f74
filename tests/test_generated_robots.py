"""Dual-arm robots nobody has seen (``rob_twin.experiments.robot_factory``), seeded: each
loads from its robot file into the canonical model, sits clean at home, plans certified joint
goals for both arms that a dense coal check confirms, and (``ideal`` drives) executes them on
its servos to the goal. Every family, 5 / 6 / 7 joints and both mountings are covered by ``CASES``.
Simulated figures only."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
from rob_twin.experiments import robot_factory as F
from rob_twin.experiments.dense_clearance import check_plan, for_group
from rob_twin.experiments.goal_pairs import goal_pairs
from rob_twin.models.damiao_motors import MOTORS
from rob_twin.models.names import arm_actuator, arm_joint, tcp_site
from rob_twin.models.robot_description import RobotFileError, load_robot_file
from rob_twin.models.robot_model import load_robot_model
from rob_twin.planners.group import ArmGroup, default_config
from rob_twin.twin.sim.ideal import run_ideal

# (seed, family, joints per arm, mounting); everything else (link lengths, axes, names, TCP
# kind, actuators, boxes, home) is drawn from the seed. The seeds are picked so that together
# they cover every family, joint count, mounting, TCP kind and actuator kind (the first test
# checks that). None is excluded for failing: every seed 0-29 in every family (drawn joints
# and mounting) planned, certified and, for ideal, reached its goal while this was written.
CASES = list(F.COVERING_CASES)
IDS = [f"seed{s}-{f}-{n}dof-{m}" for s, f, n, m in CASES]
PAIRS = 4  # goal pairs planned per robot
GOAL_SEED = 77
MAX_TRACKING_RAD = 0.1  # ideal run: |measured - commanded| anywhere (lag ~ kv / kp * 1 rad/s)
# ideal run: every joint this close to its goal after the 0.5 s settle; the servo gains
# are sized for at most SERVO_SAG_RAD of gravity sag, so this leaves 2.5x for the rest
GOAL_TOLERANCE_RAD = 0.01
RANDOM_POSES = 200  # poses per robot for the FK and gravity checks


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """case -> GeneratedRobot, each generated once into its own folder."""
    cache: dict[tuple, F.GeneratedRobot] = {}

    def get(case: tuple) -> F.GeneratedRobot:
        if case not in cache:
            seed, family, n, mounting = case
            folder = tmp_path_factory.mktemp(f"gen{seed}_{family}")
            cache[case] = F.generate_robot(folder, seed, family=family, joints=n, mounting=mounting)
        return cache[case]

    return get


def home_group(model: mujoco.MjModel, robot: F.GeneratedRobot) -> ArmGroup:
    group = ArmGroup(model, robot.canonical_joints, default_config())
    group.set_qpos(model.key("home").qpos)
    return group


def random_arm_poses(model, robot, rng, count):
    """``count`` dicts {arm: q [rad]} uniform within the canonical model's joint ranges."""
    poses = []
    for _ in range(count):
        pose = {}
        for arm, joints in robot.canonical_joints.items():
            lo, hi = np.array([model.jnt_range[model.joint(j).id] for j in joints]).T
            pose[arm] = rng.uniform(lo, hi)
        poses.append(pose)
    return poses


def set_arms(model, data, joints_by_arm, pose):
    for arm, joints in joints_by_arm.items():
        for name, q in zip(joints, pose[arm], strict=True):
            data.qpos[model.joint(name).qposadr[0]] = q


def test_the_cases_cover_every_family_joint_count_mounting_tcp_and_actuator_kind(made):
    robots = [made(c) for c in CASES]
    kinds = {(r.family, r.joints_per_arm, r.mounting) for r in robots}
    for n in F.IDEAL_JOINTS:
        assert {("ideal", n, m) for m in F.MOUNTINGS} <= kinds
    for family in ("amber", "damiao"):
        assert {(family, 7, m) for m in F.MOUNTINGS} <= kinds
    assert {r.tcp for r in robots} == {"site", "body"}
    assert {r.actuators for r in robots if r.family == "ideal"} == {"named", "adopted", "none"}
    assert {r.has_boxes for r in robots} == {True, False}
    for r in robots:
        assert 1.0 <= r.arm_mass_kg <= 6.0  # a few kg: gravity matters


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_robot_file_loads_canonical_and_clean_at_home(made, case):
    robot = made(case)
    desc = load_robot_file(robot.robot_file)
    assert desc.family == robot.family
    m = load_robot_model(robot.robot_file)
    raw = mujoco.MjModel.from_xml_path(str(robot.mjcf_file))
    n = robot.joints_per_arm
    for arm in ("right", "left"):
        assert [m.joint(arm_joint(arm, j)).id for j in range(1, n + 1)]  # all present
        assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, f"{arm}/j{n + 1}") < 0
        assert m.site(tcp_site(arm)).id >= 0
        # the MJCF spoke its own names: the canonical ones are the loader's renaming
        assert mujoco.mj_name2id(raw, mujoco.mjtObj.mjOBJ_JOINT, arm_joint(arm, 1)) < 0
        for j, name in enumerate(robot.mjcf_joints[arm], start=1):
            assert np.array_equal(raw.joint(name).range, m.joint(arm_joint(arm, j)).range)
    key = m.key("home")
    for arm, joints in robot.canonical_joints.items():
        home = [key.qpos[m.joint(j).qposadr[0]] for j in joints]
        assert home == pytest.approx(robot.home_rad[arm], abs=1e-12)
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, key.id)
    mujoco.mj_forward(m, d)
    assert d.ncon == 0, [(m.geom(c.geom1).name, m.geom(c.geom2).name) for c in d.contact]
    for arm in ("right", "left"):
        position, full = F.jacobian_singular_values(m, d, arm)
        assert position[-1] >= F.MIN_POSITION_SV and full[-1] >= F.MIN_FULL_SV
    group = home_group(m, robot)
    assert group.checker.weak_pairs == []  # no collider MuJoCo is known to miss with
    home = {a: group.arm_q(a) for a in group.arm_names}
    assert group.clearance(home).distance_m >= F.HOME_CLEARANCE_M - 1e-4


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_renaming_keeps_the_mjcf_tcp_at_random_poses(made, case):
    """The canonical TCP is where the robot file puts it on the raw MJCF: its site, or its
    body's frame at tcp_offset_m."""
    robot = made(case)
    m = load_robot_model(robot.robot_file)
    raw = mujoco.MjModel.from_xml_path(str(robot.mjcf_file))
    desc = load_robot_file(robot.robot_file)
    raw_joints = {a: list(robot.mjcf_joints[a]) for a in ("right", "left")}
    d, d_raw = mujoco.MjData(m), mujoco.MjData(raw)
    for pose in random_arm_poses(m, robot, np.random.default_rng(case[0]), 20):
        set_arms(m, d, robot.canonical_joints, pose)
        set_arms(raw, d_raw, raw_joints, pose)
        mujoco.mj_kinematics(m, d)
        mujoco.mj_kinematics(raw, d_raw)
        for arm in ("right", "left"):
            a = desc.arm(arm)
            if a.tcp_site is not None:
                expected = d_raw.site(a.tcp_site).xpos
            else:
                body = d_raw.body(a.tcp_body)
                expected = body.xpos + body.xmat.reshape(3, 3) @ np.array(a.tcp_offset_m)
            assert np.allclose(d.site(tcp_site(arm)).xpos, expected, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_drive_family_actuators(made, case):
    """ideal: one position servo per arm joint at the file's kp / kv; amber: the MJCF's own
    servos, named by the file, kept; damiao: torque motors at each motor's peak; CAN families
    on two distinct channels."""
    robot = made(case)
    m = load_robot_model(robot.robot_file)
    desc = load_robot_file(robot.robot_file)
    raw = mujoco.MjModel.from_xml_path(str(robot.mjcf_file))
    for arm, joints in robot.canonical_joints.items():
        for j, joint in enumerate(joints, start=1):
            act = m.actuator(arm_actuator(arm, j))
            assert act.trnid[0] == m.joint(joint).id
            if robot.family == "damiao":
                peak = MOTORS[robot.motors[j - 1]].peak_torque_nm
                assert act.biastype[0] == mujoco.mjtBias.mjBIAS_NONE
                assert list(act.forcerange) == [-peak, peak]
            else:
                kp = robot.kp if robot.family == "ideal" else raw.actuator_gainprm[0, 0]
                assert act.gainprm[0] == kp and act.biasprm[1] == -kp
    if robot.family == "amber":
        assert m.nu == raw.nu  # the MJCF's servos renamed, none added
    channels = [desc.arm(a).can.channel if desc.arm(a).can else None for a in ("right", "left")]
    if robot.family == "ideal":
        assert channels == [None, None]
    else:
        assert None not in channels and channels[0] != channels[1]


@pytest.mark.parametrize(
    "case", [c for c in CASES if c[1] == "damiao"], ids=[i for i in IDS if "damiao" in i]
)
def test_damiao_motors_hold_the_arm_against_gravity_with_margin(made, case):
    """At home and at random poses within the ranges, every arm joint's gravity torque is at
    most its motor's peak / MOTOR_MARGIN."""
    robot = made(case)
    m = load_robot_model(robot.robot_file)
    d = mujoco.MjData(m)
    peaks = np.array([MOTORS[name].peak_torque_nm for name in robot.motors])
    poses = random_arm_poses(m, robot, np.random.default_rng(1), RANDOM_POSES)
    worst = np.zeros(robot.joints_per_arm)
    for pose in [robot.home_rad, *poses]:
        set_arms(m, d, robot.canonical_joints, pose)
        mujoco.mj_forward(m, d)  # qvel = 0: qfrc_bias is gravity alone
        for joints in robot.canonical_joints.values():
            tau = np.abs([d.qfrc_bias[m.joint(j).dofadr[0]] for j in joints])
            worst = np.maximum(worst, tau)
    assert np.all(worst * F.MOTOR_MARGIN <= peaks), (worst, peaks)
    assert worst.max() > 1.0  # the arm is heavy enough that the sizing means something


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_both_arms_plan_certify_judge_densely_and_ideal_drives_reach_the_goal(made, case):
    robot = made(case)
    m = load_robot_model(robot.robot_file)
    group = home_group(m, robot)
    start = group.reference_qpos.copy()
    for k, goals in enumerate(goal_pairs(group, PAIRS, np.random.default_rng(GOAL_SEED))):
        group.set_qpos(start)
        result = group.plan(goals, seed=k)
        assert result.ok, (k, result.status, result.reason, result.pair)
        plan = result.plan
        assert set(plan.moving) == {"right", "left"}
        assert plan.certificate is not None and plan.certificate.certified
        goal = np.concatenate([goals[a] for a in plan.moving])
        assert np.allclose(plan.stacked("q")[-1], goal, atol=1e-9)
        dense = check_plan(for_group(group, plan.moving), plan)
        assert not dense.counterexamples and dense.true_min_m > 0.0, dense.worst_pair
        if robot.family == "ideal":
            run = run_ideal(m, plan, group.reference_qpos)
            assert run.max_error_rad < MAX_TRACKING_RAD, run.summary()
            assert np.abs(run.measured[-1] - goal).max() < GOAL_TOLERANCE_RAD, run.summary()


def test_the_same_seed_writes_byte_identical_files_and_another_seed_does_not(tmp_path):
    a = F.generate_robot(tmp_path / "a", 12)
    b = F.generate_robot(tmp_path / "b", 12)
    F.generate_robot(tmp_path / "c", 13)
    for name in ("robot.toml", "scene.xml"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
        assert (tmp_path / "a" / name).read_bytes() != (tmp_path / "c" / name).read_bytes()
    assert (a.family, a.joints_per_arm, a.attempt) == (b.family, b.joints_per_arm, b.attempt)
    assert a.rejected == b.rejected and len(a.rejected) == a.attempt


def test_joint_ranges_stop_short_of_folding_a_link_back_onto_its_parent():
    """The rule that made seed 9 plannable: a range through the fold angle let goals sit
    beyond a link folded back through the one before it (unreachable from home)."""
    for parent in ("x", "z"):
        for child in ("x", "z"):
            for axis in ("+x", "-x", "+y", "-y", "+z", "-z"):
                fold = F._fold_angle(parent, child, axis)
                along = axis[1] in (parent, child)  # a roll, or a swing across the parent
                assert (fold is None) == along, (parent, child, axis)
                if fold is not None:  # the child turned by the fold points back along parent
                    quat, turned = np.zeros(4), np.zeros(3)
                    mujoco.mju_axisAngle2Quat(quat, np.array(F._axis(axis), float), fold)
                    mujoco.mju_rotVecQuat(turned, np.array(F.AXES[child], float), quat)
                    assert np.allclose(turned, -np.array(F.AXES[parent]), atol=1e-12)
    rng = np.random.default_rng(0)
    for fold in (-math.pi / 2, math.pi / 2, math.pi, None):
        for _ in range(50):
            lo, hi = F._draw_range(rng, fold)
            assert lo < 0 < hi
            for f in () if fold is None else (fold, fold - 2 * math.pi):  # one angle, twice
                assert f >= hi + F.FOLD_MARGIN_RAD - 1e-3 or f <= lo - F.FOLD_MARGIN_RAD + 1e-3


def test_can_families_refuse_fewer_than_seven_joints(tmp_path):
    robot = F.generate_robot(tmp_path, 2, family="ideal", joints=5)
    text = robot.robot_file.read_text(encoding="utf-8").replace(
        'family = "ideal"', 'family = "amber"'
    )
    robot.robot_file.write_text(text, encoding="utf-8")
    with pytest.raises(RobotFileError, match=r"arms\.right\.joints.*7 joints for drive family"):
        load_robot_file(robot.robot_file)


def test_an_mjcf_without_a_light_loads(tmp_path):
    robot = F.generate_robot(tmp_path, 2, family="ideal", joints=5)
    xml = robot.mjcf_file.read_text(encoding="utf-8")
    lines = [line for line in xml.splitlines(keepends=True) if "<light " not in line]
    robot.mjcf_file.write_text("".join(lines), encoding="utf-8")
    m = load_robot_model(robot.robot_file)  # the twin adds a directional light above it
    assert m.nlight == 1 and int(m.light_type[0]) == int(mujoco.mjtLightType.mjLIGHT_DIRECTIONAL)


def test_the_demo_plans_its_moves_so_facing_arms_do_not_collide(tmp_path):
    """Generated robot 8 (Damiao, arms facing): the demo's reach-and-wave as straight
    keyframe lines ran the left wrist into the right shoulder (contact at 0.96 s, then
    tracking_error latched at 0.15 rad); planned together, every move completes, no fault."""
    from rob_twin.twin.scenario.run import demo_scenario, run_scenario

    made = F.generate_robot(tmp_path, 8, family="damiao", joints=7, mounting="facing")
    sc = demo_scenario(str(made.robot_file), planned=True)
    assert len(sc.plans) == 4 and not sc.keyframes
    res = run_scenario(sc, record=False, progress=False)
    assert [p["outcome"] for p in res.plans] == ["completed"] * 4, res.plans
    faults = {a: f["owner_fault"] for a, f in res.pipeline.items()}
    assert faults == {"right": None, "left": None}, faults


def test_gate_motions_are_drawn_in_where_they_would_collide(tmp_path):
    """Generated robot 8 (Damiao, arms facing 25 mm apart at home): the gates' far move run
    straight would put the right wrist into the left arm; the move is scaled until free,
    the stalled joint moved alone, and the feedback gate latches the stall as on ROB."""
    from rob_twin.models.names import Arm
    from rob_twin.models.robot import robot_of
    from rob_twin.twin.rehearsal.free_motion import free_line_scale
    from rob_twin.twin.rehearsal.gates import FAR_MOVE, RehearsalConfig, gate_feedback
    from rob_twin.twin.rehearsal.targets import toward_far_bound
    from rob_twin.twin.sim.loops import loop_config

    made = F.generate_robot(tmp_path, 8, family="damiao", joints=7, mounting="facing")
    robot = robot_of(made.robot_file)
    lines = {}
    for arm in (Arm.RIGHT, Arm.LEFT):
        home = robot.home(arm.value)
        lo, hi = np.array(robot.joint_ranges(arm.value)).T
        lines[arm] = (home, np.clip(home + toward_far_bound(home, lo, hi, FAR_MOVE), lo, hi))
    scales = free_line_scale(robot, lines)
    assert scales[Arm.RIGHT] < 1.0  # the whole move is not free on this robot
    res = gate_feedback(RehearsalConfig(base=loop_config(made.robot_file)))
    assert res.passed, res.figures

"""Robot description files (robot.toml): validation with typed errors, the published JSON
Schema, and the canonical model every shipped robot loads into."""

from __future__ import annotations

import re

import mujoco
import numpy as np
import pytest
from rob_twin.experiments.robot_factory import generate_robot
from rob_twin.models.loading import HOME_KEY, apply_home, keyframe_index
from rob_twin.models.names import Arm, arm_actuator, tcp_site
from rob_twin.models.robot_description import (
    SCHEMA_PATH,
    RobotFileError,
    json_schema_text,
    load_robot_file,
    resolve_robot,
)
from rob_twin.models.robot_model import (
    arm_joint_ranges,
    load_published_openarm,
    load_robot_model,
)

OPENARM_TOML = resolve_robot("openarm").path


def test_published_schema_is_current():
    assert SCHEMA_PATH.read_text(encoding="utf-8") == json_schema_text()


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (('family = "damiao"', 'family = "hydraulic"'), r"drives\.family"),
        (('"DM8009", "DM8009"', '"DM8009", "DM9999"'), r"DM9999"),
        (('name = "openarm"', 'name = "open arm!"'), r"name"),
        (("[arms.left]", "[arms.middle]"), r"arms"),
        (('tcp_site = "right_ee_control_point"', 'tcp_site = "nowhere"'), r"nowhere"),
        (("home_rad = [0.0, 0.0, 0.0, 1.570796", "home_rad = [nan, 0.0, 0.0, 1.570796"), "finite"),
    ],
)
def test_a_bad_robot_file_is_a_typed_error_naming_the_field(tmp_path, change, match):
    text = OPENARM_TOML.read_text(encoding="utf-8").replace(*change, 1)
    bad = tmp_path / "robot.toml"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(RobotFileError, match=match):
        load_robot_model(load_robot_file(bad))


def _ideal_robot_file(tmp_path, joints: int):
    """A generated 5-joint ``ideal`` robot (rob_twin.experiments.robot_factory, seed 2) whose
    right arm lists ``joints`` joints (the first ones, or the first repeated)."""
    robot = generate_robot(tmp_path, 2, family="ideal", joints=5)
    names = list(robot.mjcf_joints["right"])
    listed = ", ".join(f'"{n}"' for n in (names * 2)[:joints])
    text = robot.robot_file.read_text(encoding="utf-8")
    old = "joints = [" + ", ".join(f'"{n}"' for n in names) + "]"
    assert text.count(old) == 1
    robot.robot_file.write_text(text.replace(old, f"joints = [{listed}]"), encoding="utf-8")
    return robot.robot_file


@pytest.mark.parametrize(
    ("joints", "why"), [(4, r"at least 5 items"), (8, r"at most 7 items"), (0, r"at least 5")]
)
def test_an_arm_outside_five_to_seven_joints_is_refused_naming_field_and_range(
    tmp_path, joints, why
):
    with pytest.raises(RobotFileError, match=r"arms\.right\.joints=") as err:
        load_robot_file(_ideal_robot_file(tmp_path, joints))
    assert "5 to 7 joints per arm for drive families 'ideal' and 'damiao', 7 for 'amber'" in str(
        err.value
    )
    assert re.search(why, str(err.value))


def test_a_five_joint_ideal_robot_loads_with_five_canonical_joints_per_arm(tmp_path):
    path = _ideal_robot_file(tmp_path, 5)
    desc = load_robot_file(path)
    m = load_robot_model(desc)
    for arm in Arm:
        assert len(desc.arm(arm).joints) == len(desc.arm(arm).home_rad) == 5
        assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, f"{arm.value}/j5") >= 0
        assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, f"{arm.value}/j6") < 0
        assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, arm_actuator(arm, 5)) >= 0
        assert len(arm_joint_ranges(desc, arm)) == 5
    amber = path.read_text(encoding="utf-8").replace('family = "ideal"', 'family = "amber"')
    path.write_text(amber, encoding="utf-8")
    with pytest.raises(RobotFileError, match=r"7 joints for drive family 'amber' \(5 to 7 only"):
        load_robot_file(path)


def test_unknown_robot_names_the_shipped_ones_and_garbage_is_refused(tmp_path):
    with pytest.raises(RobotFileError, match=r"\['openarm', 'rob'\]"):
        resolve_robot("baxter")
    junk = tmp_path / "junk.toml"
    junk.write_bytes(b"\xff\xfe = [")
    with pytest.raises(RobotFileError, match="TOML"):
        resolve_robot(junk)


def test_openarm_is_the_published_v2_model_renamed_with_torque_motors():
    m = load_robot_model("openarm")
    raw = load_published_openarm()
    assert m.nbody == raw.nbody and m.nq == raw.nq
    assert np.allclose(sorted(m.body_mass), sorted(raw.body_mass))
    assert m.body("right/link2").mass[0] == pytest.approx(0.277509)  # v2's, not assumed
    assert arm_joint_ranges("openarm", Arm.RIGHT)[1] == pytest.approx((-0.17453, 3.3161))
    assert arm_joint_ranges("openarm", Arm.LEFT)[1] == pytest.approx((-3.3161, 0.17453))
    for arm in Arm:
        for j in range(1, 8):
            act = m.actuator(arm_actuator(arm, j))
            assert act.biastype[0] == mujoco.mjtBias.mjBIAS_NONE  # a motor: torque in
    d = mujoco.MjData(m)
    apply_home(m, d)
    key = m.key(keyframe_index(m, HOME_KEY))
    assert key.qpos[m.jnt_qposadr[m.joint("right/j4").id]] == pytest.approx(1.570796)
    assert d.site(tcp_site(Arm.RIGHT)).xpos[1] < 0 < d.site(tcp_site(Arm.LEFT)).xpos[1]


def test_openarm_fk_equals_the_published_model_at_random_poses():
    from rob_twin.experiments.bench_openarm import fk_agreement

    assert fk_agreement(n=50)["max_tcp_error_m"] <= 1e-12


def test_rob_file_loads_the_generated_scene_unchanged():
    from rob_twin.models.loading import load_scene

    a, b = load_robot_model("rob"), load_scene()
    assert a.nq == b.nq and np.array_equal(a.body_mass, b.body_mass)
    assert resolve_robot("rob").family == "amber"

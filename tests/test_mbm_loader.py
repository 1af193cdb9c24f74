"""MotionBenchMaker's Baxter problems as rob-twin scenes (``rob_twin.experiments.mbm_loader``):
MoveIt's primitives become MuJoCo's; with the ``vamp-planner`` sdist cached (no network here:
``python -m rob_twin.experiments.mbm_loader`` fetches it), one problem converts into a robot
file that loads through the twin's own loader and that ArmGroup takes as it is."""

from __future__ import annotations

import warnings

import mujoco
import numpy as np
import pytest
from rob_twin.experiments import mbm_loader as mbm


def test_moveit_primitives_become_mujoco_sizes_and_quaternions():
    box = mbm._obstacle(
        "shelf",
        {"type": "box", "dimensions": [1.2, 1.0, 0.04]},
        {"position": [1.5, 0.0, -0.3], "orientation": [0, 0, 0.6, 0.8]},
    )
    assert box.size == (0.6, 0.5, 0.02) and box.quat == (0.8, 0.0, 0.0, 0.6)
    can = mbm._obstacle(
        "can",
        {"type": "cylinder", "dimensions": [0.14, 0.03]},
        {"position": [1, 0, 0], "orientation": [0, 0, 0, 1]},
    )
    assert can.size == (0.03, 0.07) and can.quat == (1.0, 0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="cone"):
        mbm._obstacle("c", {"type": "cone", "dimensions": [1, 1]}, {})


def test_one_problem_converts_into_a_robot_file_armgroup_takes():
    sdist = mbm.cached_sdist()
    if sdist is None:
        pytest.skip(mbm.HOW_TO_FETCH)
    pytest.importorskip("yaml")
    resources = mbm.baxter_dir(sdist)
    problem = mbm.load_problem("easy", 1, resources)
    assert set(problem.start) == set(problem.goal) == {"right", "left"}
    assert all(q.shape == (7,) for q in (*problem.start.values(), *problem.goal.values()))
    kinds = {o.kind for o in problem.obstacles}
    assert kinds <= {"box", "cylinder", "sphere"} and "box" in kinds
    model = mbm.problem_model(problem)
    joints = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(model.njnt)]
    assert joints == [f"{a}/j{k}" for a in ("right", "left") for k in range(1, 8)]
    obstacles = [g for g in range(model.ngeom) if model.geom(g).name.startswith("obstacle/")]
    assert len(obstacles) == len(problem.obstacles)
    srdf = mbm.disabled_pairs(resources / "baxter.srdf")
    assert 300 < model.nexclude <= len(srdf)
    from rob_twin.planners.group import ArmGroup

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # weak colliders (boxes, cylinders) are named
        group = ArmGroup(model, {a: [f"{a}/j{k}" for k in range(1, 8)] for a in ("right", "left")})
    group.set_qpos(model.key("home").qpos)
    q0 = np.concatenate([problem.start[a] for a in group.arm_names])
    assert np.allclose(
        group.reference_qpos[group.checker.session(group.arm_names, group.reference_qpos).index], q0
    )
    assert group.clearance(problem.start).distance_m > 0.0  # the problem's start is free

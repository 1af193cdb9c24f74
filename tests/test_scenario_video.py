"""Scenario videos: captions like the demo's, an ``auto`` camera that frames both arms, and
colliding links drawn red. No GL needed: the scene is built with
``mjv_updateScene`` on an ``MjvScene``, the camera checked by projecting the arm bodies."""

from __future__ import annotations

import math
from pathlib import Path

import mujoco
import numpy as np
import pytest
from rob_twin.models.loading import CROSSING_START_KEY, keyframe_state
from rob_twin.models.names import Arm
from rob_twin.twin.render.framing import AUTO_CAMERA, arm_body_ids, auto_camera
from rob_twin.twin.render.highlight import RED, arm_geoms, colliding_geoms, paint
from rob_twin.twin.scenario.run import Scenario, scenario_loop
from rob_twin.twin.scenario.run_captions import scenario_captions

SCENARIOS = Path(__file__).resolve().parents[1] / "experiments" / "scenarios"


def _scene(model, data, camera) -> mujoco.MjvScene:
    scene = mujoco.MjvScene(model, maxgeom=2000)
    mujoco.mjv_updateScene(
        model, data, mujoco.MjvOption(), None, camera, mujoco.mjtCatBit.mjCAT_ALL, scene
    )
    return scene


def _in_view(model, data, camera, points: np.ndarray, aspect: float) -> np.ndarray:
    """Which ``points`` lie inside the camera's view (MuJoCo's own camera frame)."""
    gl = _scene(model, data, camera).camera[0]
    pos, fwd, up = np.array(gl.pos), np.array(gl.forward), np.array(gl.up)
    right = np.cross(fwd, up)
    v = points - pos
    depth = v @ fwd
    t = math.tan(math.radians(model.vis.global_.fovy) / 2)
    return (depth > 0) & (np.abs(v @ up) <= t * depth) & (np.abs(v @ right) <= t * aspect * depth)


def test_every_shipped_scenario_films_with_the_auto_camera():
    for path in sorted(SCENARIOS.glob("*.json")):
        if path.name.endswith(".schema.json"):
            continue
        sc = Scenario.load(path)
        assert sc.cameras in ([], [AUTO_CAMERA]), (path.name, sc.cameras)


@pytest.mark.parametrize("aspect", [4 / 3, 3 / 4])
def test_the_auto_camera_frames_every_arm_body_at_the_start_and_at_a_far_keyframe(aspect):
    sc = Scenario.load(SCENARIOS / "bus_faults.json")
    loop = scenario_loop(sc)
    try:
        model, data = loop.twin.model, loop.twin.data
        cam = auto_camera(model, data, aspect)
        assert cam.type == mujoco.mjtCamera.mjCAMERA_FREE
        ids = arm_body_ids(model)
        assert len(ids) >= 2 * 8
        assert _in_view(model, data, cam, data.xpos[ids], aspect).all()
        # the same camera (framed once, at the start) still holds the arms at a keyframe
        for k in sc.keyframes:
            adr = [model.jnt_qposadr[model.joint(f"{k.arm.value}/j{j + 1}").id] for j in range(7)]
            data.qpos[adr] = k.q
        mujoco.mj_forward(model, data)
        assert _in_view(model, data, cam, data.xpos[ids], aspect).all()
    finally:
        loop.close()


def test_scenario_captions_say_name_time_step_faults_and_latched_faults_in_red():
    sc = Scenario.load(SCENARIOS / "bus_faults.json")
    latched: dict[str, str] = {}
    captions = scenario_captions(sc, lambda: latched)
    early = captions(0.2, None)
    # without the arms' measured angles the captions can tell only the keyframe times passed
    # (keyframes *reached*, from a real run: tests/test_what_a_person_sees.py)
    assert early == [
        "bus_faults (simulated)   t =  0.20 / 4.00 s",
        "keyframe times passed: right 0/2, left 0/2",
    ]
    middle = captions(2.6, None)
    assert "keyframe times passed: right 1/2, left 1/2" in middle
    assert "injected: delay on right, partial_batch on left" in middle
    latched["left"] = "partial_output"
    assert captions(2.6, None)[-1] == "!left owner FAULT latched: partial_output"
    assert captions(3.9, None)[1] == "keyframe times passed: right 2/2, left 2/2"


def test_overlapping_links_are_found_and_drawn_red_only_in_that_frame():
    model, state = keyframe_state(CROSSING_START_KEY)
    data = mujoco.MjData(model)
    data.qpos[:] = state
    mujoco.mj_forward(model, data)
    assert colliding_geoms(model, data) == set()  # the crossing start is collision free
    # the left arm's hand moved onto the right arm's hand: a real overlap
    right, left = arm_geoms(model, Arm.RIGHT), arm_geoms(model, Arm.LEFT)
    target = data.xpos[model.body("right/hand").id].copy()
    body = model.body("left/mount").id
    model.body_pos[body] += target - data.xpos[model.body("left/hand").id]
    mujoco.mj_forward(model, data)
    hits = colliding_geoms(model, data)
    assert hits and hits & set(right) and hits & set(left)
    scene = _scene(model, data, mujoco.MjvCamera())
    assert paint(scene, hits) >= 2
    painted = {
        scene.geoms[i].objid: tuple(scene.geoms[i].rgba)
        for i in range(scene.ngeom)
        if scene.geoms[i].objtype == mujoco.mjtObj.mjOBJ_GEOM
    }
    assert all(np.allclose(painted[g], RED) for g in hits if g in painted)
    assert not any(np.allclose(rgba, RED) for g, rgba in painted.items() if g not in hits)


def test_the_auto_camera_rides_along_with_a_driving_base():
    """ROB drives 1.5 m and turns 90 degrees (base_drive's kind of motion): the framed
    cameras follow its root, so every arm point the first framing saw is still in view, from
    the same side; without following, the arms leave the frame."""
    from rob_twin.models.robot import robot_of
    from rob_twin.twin.render.framing import RootFollow, arm_points

    model = robot_of("rob").model()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    aspect = 16 / 9
    camera = auto_camera(model, data, aspect)
    still = auto_camera(model, data, aspect)
    follow = RootFollow(model)
    assert model.body(follow.root).name == "base"
    follow.anchor(data, [camera])
    seen = _in_view(model, data, camera, arm_points(model, data), aspect)
    assert seen.all()
    adr = model.jnt_qposadr[model.joint("base/free").id]
    data.qpos[adr : adr + 2] += (1.5, 0.4)
    data.qpos[adr + 3 : adr + 7] = (math.cos(math.pi / 4), 0, 0, math.sin(math.pi / 4))
    mujoco.mj_kinematics(model, data)
    follow.apply(data)
    points = arm_points(model, data)
    assert _in_view(model, data, camera, points, aspect).all()
    assert not _in_view(model, data, still, points, aspect).all()
    assert camera.azimuth == pytest.approx(still.azimuth + 90.0)

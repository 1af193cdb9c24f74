"""Scenario frames show the arms and the held box unobstructed: no bright horizon or wall-top
line across the backdrop, no table or can in the foreground (props in front of the arms are
hidden in the render copy only), and the held box's stand reaching the ground while the table
under it is hidden. Small frames (llvmpipe pays per pixel)."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
from render_support import segmentation
from rob_twin.models.robot import robot_of
from rob_twin.twin.render import held_view
from rob_twin.twin.render.backdrop import HIDDEN_GROUP
from rob_twin.twin.render.framing import arm_body_ids
from rob_twin.twin.scenario.run import Scenario
from rob_twin.twin.sim.held_object import BOX, STAND, held_scene

SCENARIOS = Path(__file__).resolve().parents[1] / "experiments" / "scenarios"
W, H = 192, 144
NEAR_WHITE = 0.85  # luminance 0..1 of a backdrop pixel that reads as a white line ...
LINE_STEP = 0.25  # ... when this much brighter than the backdrop LINE_PX rows above and below
LINE_PX = H // 24  # (a light floor is near-white too, but it is no line)
MAX_WHITE_ROW = 0.5  # share of a row's width such pixels may fill
MAX_PROP_SHARE = 0.02  # share of the lower third that scene props may cover


def _scene_model(name: str, tmp_path_factory=None) -> mujoco.MjModel:
    """The model scenario ``name`` runs on; ``generated``: a generated robot's own scene."""
    if name == "generated":
        from rob_twin.experiments import robot_factory as F

        made = F.generate_robot(tmp_path_factory.mktemp("gen"), 3, family="ideal")
        return robot_of(str(made.robot_file)).model()
    sc = Scenario.load(SCENARIOS / f"{name}.json")
    robot = robot_of(sc.robot)
    return held_scene(robot.spec, sc.held.box) if sc.held is not None else robot.model()


def _frame_and_ids(model: mujoco.MjModel, data: mujoco.MjData):
    """(frame, per-pixel geom id or -1) of the ``auto`` main view, as a recorder draws it."""
    from rob_twin.twin.render.video import RenderUnavailable, VideoRecorder

    try:
        rec = VideoRecorder(model, "auto", width=W, height=H, quality="fast", inset=False)
    except RenderUnavailable as err:
        pytest.skip(f"no GL: {err}")
    try:
        frame = rec.capture(data)
        ids = segmentation(rec, data, H, W)
    finally:
        rec.close()
    geom = np.where(ids[..., 1] == mujoco.mjtObj.mjOBJ_GEOM, ids[..., 0], -1)
    return frame, geom


def _subject_geoms(model: mujoco.MjModel) -> np.ndarray:
    """Geoms of the robot's trees (the bodies the arms hang from, and below) and the box."""
    roots = {model.body_rootid[b] for b in arm_body_ids(model)}
    box = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, BOX)
    return np.array(
        [
            g
            for g in range(model.ngeom)
            if model.body_rootid[model.geom_bodyid[g]] in roots or model.geom_bodyid[g] == box
        ]
    )


@pytest.mark.parametrize("name", ["carry_bar", "wave", "generated"])
def test_a_scenario_frame_has_no_white_line_and_no_props_in_front(name, tmp_path_factory):
    model = _scene_model(name, tmp_path_factory)
    groups = model.geom_group.copy()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    frame, geom = _frame_and_ids(model, data)
    subject = np.isin(geom, _subject_geoms(model))
    assert subject.mean() > 0.05  # the arms (and the box) are in the frame, not specks
    # no near-white line across the backdrop (a horizon haze band, a wall's lit top edge)
    lum = frame[..., :3].astype(float) / 255 @ np.array([0.2126, 0.7152, 0.0722])
    k = LINE_PX
    mid = lum[k:-k]
    line = (mid > NEAR_WHITE) & (mid - lum[: -2 * k] > LINE_STEP) & (mid - lum[2 * k :] > LINE_STEP)
    widest = float((line & ~subject[k:-k]).mean(axis=1).max())
    assert widest < MAX_WHITE_ROW, widest
    # scene props (neither the robot, the box, the floor nor the world's static scenery)
    # cover little of the lower third
    planes = model.geom_type == mujoco.mjtGeom.mjGEOM_PLANE
    world = model.geom_bodyid == 0
    props = [g for g in range(model.ngeom) if not planes[g] and not world[g]]
    props = np.setdiff1d(props, _subject_geoms(model))
    share = float(np.isin(geom[2 * H // 3 :], props).mean())
    assert share < MAX_PROP_SHARE, share
    assert (model.geom_group == groups).all()  # the physics model keeps its groups


def test_the_table_is_hidden_and_the_stand_drawn_only_while_the_box_waits():
    from rob_twin.twin.render.video import RenderUnavailable, VideoRecorder

    model = _scene_model("carry_bar")
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    try:
        rec = VideoRecorder(model, "auto", width=64, height=48, quality="fast", inset=False)
    except RenderUnavailable as err:
        pytest.skip(f"no GL: {err}")
    try:
        scene = rec.update_scene(data)
        hidden = {model.geom(g).name for g in rec.hidden_props}
        assert "table/top" in hidden
        assert (rec.render_model.geom_group[rec.hidden_props] == HIDDEN_GROUP).all()
        post = scene.geoms[scene.ngeom - 1]  # the stand, added last while the box waits
        assert post.type == mujoco.mjtGeom.mjGEOM_CYLINDER
        assert post.pos[2] - post.size[2] == pytest.approx(0.0, abs=1e-3)  # to the floor
        # grasped (the stand's weld off): no post
        data.eq_active[model.equality(STAND).id] = 0
        n = rec.update_scene(data).ngeom
        assert not held_view.add_stand(rec.render_model, data, rec.renderer.scene)
        assert rec.renderer.scene.ngeom == n
    finally:
        rec.close()

"""Head camera: intrinsics that match MuJoCo's camera (projection and depth), frame rate."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from rob_twin.models import dimensions as D
from rob_twin.models.errors import UnknownNameError
from rob_twin.models.loading import joint_qpos_index
from rob_twin.twin.render.video import RenderUnavailable
from rob_twin.twin.sim.scheduler import SchedulerError
from rob_twin.twin.sim.twin import Twin


@pytest.fixture
def looking_at_the_can():
    from rob_twin.twin.base.head_camera import HeadCamera

    twin = Twin()
    twin.data.qpos[joint_qpos_index(twin.model, "head/tilt")] = 0.7  # look down at the table
    twin.data.qpos[joint_qpos_index(twin.model, "head/pan")] = -0.3  # and right, at the can
    mujoco.mj_forward(twin.model, twin.data)
    try:
        camera = HeadCamera(twin.model, height=240, width=320)
    except RenderUnavailable as err:
        pytest.skip(f"no GL here: {err}")
    yield twin, camera
    camera.close()


def test_the_can_is_found_where_the_intrinsics_project_it(looking_at_the_can):
    twin, camera = looking_at_the_can
    img = camera.rgb(twin.data)
    assert img.shape == (240, 320, 3) and img.dtype == np.uint8
    red = (img[..., 0] > 150) & (img[..., 1] < 60) & (img[..., 2] < 60)
    assert red.sum() > 100
    rows, cols = np.nonzero(red)
    centre = twin.data.xpos[twin.model.body("can").id]
    ((u, v),) = camera.project(twin.data, [centre])[0]
    # the centroid of the can's visible pixels is its centre's projection (the visible
    # side is its front and top, so rows may sit a few pixels above the centre)
    assert cols.mean() + 0.5 == pytest.approx(u, abs=1.5)
    assert v - 5 < rows.mean() + 0.5 < v + 1.0
    # a point off to the side projects outside the image
    ((u_far, _),) = camera.project(twin.data, [centre + [0.0, -3.0, 0.0]])[0]
    assert u_far > 320


def test_depth_pixels_deprojected_with_the_intrinsics_land_on_the_table_top(looking_at_the_can):
    twin, camera = looking_at_the_can
    depth = camera.depth(twin.data)
    k = camera.intrinsics
    renderer = camera._renderer
    renderer.enable_segmentation_rendering()
    renderer.update_scene(twin.data, camera=camera.camera_id)
    seg = renderer.render()
    renderer.disable_segmentation_rendering()
    top = twin.model.geom("table/top").id
    rows, cols = np.nonzero((seg[..., 0] == top) & (seg[..., 1] == mujoco.mjtObj.mjOBJ_GEOM))
    assert len(rows) > 1000
    z = depth[rows, cols].astype(float)
    x = (cols + 0.5 - k.cx) / k.fx * z
    y = -(rows + 0.5 - k.cy) / k.fy * z
    cam = np.stack([x, y, -z], axis=1)
    rot = twin.data.cam_xmat[camera.camera_id].reshape(3, 3)
    world = cam @ rot.T + twin.data.cam_xpos[camera.camera_id]
    # table pixels from every part of the image lie on the top surface (the rest on the
    # top's 3 cm edge, which the camera also sees)
    h, t = D.SCENE.table_height, D.SCENE.table_thickness
    assert np.mean(np.abs(world[:, 2] - h) < 0.003) > 0.9
    assert np.all((world[:, 2] > h - t - 0.005) & (world[:, 2] < h + 0.005))
    assert np.ptp(cols) > 100 and np.ptp(rows) > 50


def test_frames_at_the_configured_rate_and_bad_names_or_rates(looking_at_the_can):
    from rob_twin.twin.base.head_camera import HeadCamera

    twin, camera = looking_at_the_can
    camera.attach(twin, rate_hz=10.0)
    twin.run_for(0.35)
    assert [round(f.t, 6) for f in camera.frames] == [0.0, 0.1, 0.2, 0.3]
    assert camera.frames[-1].depth.shape == (240, 320) and camera.frames[-1].depth.max() > 0.5
    with pytest.raises(SchedulerError, match="must divide the physics rate"):
        camera.attach(twin, rate_hz=300.0, name="too_fast")
    with pytest.raises(UnknownNameError, match="camera .eye.; valid: .*head/rgb"):
        HeadCamera(twin.model, camera="eye")


def test_closing_one_camera_leaves_another_drawing_the_scene(looking_at_the_can):
    """Each camera owns a GL context; closing one must free its own GL objects, not those
    of the context that happens to be current (another camera's: it then drew MuJoCo's font
    atlas, which failed the gym env's camera test now and then)."""
    from rob_twin.twin.base.head_camera import HeadCamera

    twin, camera = looking_at_the_can
    want = camera.rgb(twin.data)
    other = HeadCamera(twin.model, height=240, width=320)  # now the current context
    camera_again = HeadCamera(twin.model, height=240, width=320)
    other.close()
    np.testing.assert_array_equal(camera_again.rgb(twin.data), want)
    np.testing.assert_array_equal(camera.rgb(twin.data), want)
    camera_again.close()

"""Pictures people want to look at: the demo's real resolution and frame rate read back from an
encoded file, robot pixels that stand out from the floor (ROB, OpenArm, a generated robot),
every figure of a run listed in its summary.md, and a log axis where one outlier would squash a
histogram. Rendering tests use small frames (llvmpipe pays per pixel)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from render_support import segmentation  # noqa: E402
from rob_twin.models.robot import robot_of  # noqa: E402
from rob_twin.twin.render.backdrop import luminance, robot_geoms  # noqa: E402
from rob_twin.twin.render.figures import needs_log_axis, spread_hist  # noqa: E402
from rob_twin.twin.scenario import crossing_demo as cd  # noqa: E402
from rob_twin.twin.scenario.summary_md import FIGURE_CAPTIONS, figures_section  # noqa: E402

MIN_PIXEL_CONTRAST = 0.25  # |mean luminance of robot pixels - of floor pixels|, 0..1


def _recorder(model, **kw):
    from rob_twin.twin.render.video import RenderUnavailable, VideoRecorder

    try:
        return VideoRecorder(model, "auto", quality="fast", **kw)
    except RenderUnavailable as err:
        pytest.skip(f"no GL: {err}")


def test_the_demo_films_1280x720_at_30_fps_read_back_from_the_file(tmp_path):
    import imageio.v2 as imageio

    sc = cd.crossing_demo_scenario(robot="rob")  # the code path that sets the real default
    assert sc.cameras == ["auto"] and sc.fps >= 30
    assert sc.frame_size[0] >= 1280 and sc.frame_size[1] >= 720
    robot = robot_of("rob")
    model = robot.model()
    data = mujoco.MjData(model)
    data.qpos[:] = cd.pair_start_qpos(model, cd.crossing_pair(robot)[0])
    mujoco.mj_forward(model, data)
    w, h = sc.frame_size[0] // 10, sc.frame_size[1] // 10  # 16:9, small, whole 8 px blocks
    rec = _recorder(model, fps=sc.fps, width=w, height=h, path=tmp_path / "d.mp4")
    try:
        for _ in range(3):
            frame = rec.capture(data, ["caption"])
    finally:
        rec.close()
    reader = imageio.get_reader(tmp_path / "d.mp4")
    try:
        assert reader.get_meta_data()["fps"] == pytest.approx(sc.fps)
        assert reader.get_data(0).shape == (h, w, 3)
    finally:
        reader.close()
    # the inset (top right, bordered white) differs from the main view there
    assert frame[0, -1].tolist() == [255, 255, 255]


def _generated(tmp_path_factory):
    from rob_twin.experiments import robot_factory as F

    made = F.generate_robot(tmp_path_factory.mktemp("gen"), 3, family="ideal")
    return robot_of(str(made.robot_file))


@pytest.mark.parametrize("name", ["rob", "openarm", "generated"])
def test_robot_pixels_contrast_with_floor_pixels(name, tmp_path_factory):
    robot = _generated(tmp_path_factory) if name == "generated" else robot_of(name)
    model = robot.model()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    rec = _recorder(model, width=192, height=108, inset=False)
    try:
        frame = rec.capture(data).astype(float) / 255
        ids = segmentation(rec, data, 108, 192)
    finally:
        rec.close()
    geom = ids[..., 1] == mujoco.mjtObj.mjOBJ_GEOM
    planes = [g for g in range(model.ngeom) if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_PLANE]
    robot_px = geom & np.isin(ids[..., 0], robot_geoms(model))
    floor_px = geom & np.isin(ids[..., 0], planes)
    assert robot_px.sum() > 0.02 * robot_px.size  # the arms are in the frame, not specks
    assert floor_px.sum() > 50
    lum = frame[..., :3] @ np.array([0.2126, 0.7152, 0.0722])
    contrast = abs(lum[robot_px].mean() - lum[floor_px].mean())
    assert contrast > MIN_PIXEL_CONTRAST, (name, contrast)
    # the physics model keeps its own colours: only the render copy changed
    floor_mat = model.geom_matid[planes[0]]
    assert floor_mat < 0 or np.allclose(
        model.mat_rgba[floor_mat], robot_of(robot.spec).model().mat_rgba[floor_mat]
    )


def test_the_summary_shows_every_figure_with_a_caption():
    pngs = ["bus.png", "held_object.png", "joints.png", "extra_thing.png"]
    text = "\n".join(figures_section(pngs))
    for name in pngs:
        assert f"]({name})" in text
    assert FIGURE_CAPTIONS["held_object.png"] in text


def test_a_run_folder_summary_references_every_png(tmp_path):
    from rob_twin.twin.scenario.report import summarize
    from rob_twin.twin.scenario.run import Scenario, run_scenario

    sc = Scenario.from_dict(
        {"name": "tiny", "duration": 0.1, "seed": 0, "cameras": []}, source="a test"
    )
    result = run_scenario(sc, tmp_path, record=False, progress=False)
    (tmp_path / "held_object.png").write_bytes(b"\x89PNG")  # a figure another step wrote
    summarize(result, tmp_path)
    md = (tmp_path / "summary.md").read_text()
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    assert "joints.png" in pngs
    for name in pngs:
        assert f"]({name})" in md, name


def test_a_histogram_goes_log_when_one_row_rules():
    times = [10.0 + 0.01 * i for i in range(199)] + [17000.0]  # one 17 s row among 10 ms ones
    assert needs_log_axis(times)
    fig, ax = plt.subplots()
    assert spread_hist(ax, [times]) and ax.get_xscale() == "log"
    assert any("max" in t.get_text() for t in ax.texts)  # the outlier is annotated
    plt.close(fig)
    even = [10.0 + 0.01 * i for i in range(200)]
    assert not needs_log_axis(even)
    fig, ax = plt.subplots()
    assert not spread_hist(ax, [even]) and ax.get_xscale() == "linear"
    plt.close(fig)


def test_luminance_of_white_and_black():
    assert luminance((1, 1, 1)) == pytest.approx(1.0) and luminance((0, 0, 0)) == 0.0

"""Meshes clustered for a software rasteriser (``rob_twin.twin.render.decimate``): fewer
triangles, vertices kept near where they were, both sides of a thin shell kept, a cell sized
from the view's pixels, and only ``fast`` quality's render copy changed."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
from rob_twin.models.errors import RobTwinError
from rob_twin.twin.render.decimate import MIN_FACES, cell_size_m, cluster

RADIUS_M = 0.05


def _sphere(radius: float, stacks: int = 40, slices: int = 80, inward: bool = False):
    """A UV sphere [m]: vertices (N x 3) and triangles (M x 3), outward winding unless
    ``inward``."""
    verts = [(0.0, 0.0, radius), (0.0, 0.0, -radius)]
    for i in range(1, stacks):
        th = math.pi * i / stacks
        for j in range(slices):
            ph = 2 * math.pi * j / slices
            verts.append(
                (
                    radius * math.sin(th) * math.cos(ph),
                    radius * math.sin(th) * math.sin(ph),
                    radius * math.cos(th),
                )
            )

    def ring(i, j):
        return 2 + (i - 1) * slices + j % slices

    faces = []
    for j in range(slices):
        faces.append((0, ring(1, j), ring(1, j + 1)))
        faces.append((1, ring(stacks - 1, j + 1), ring(stacks - 1, j)))
    for i in range(1, stacks - 1):
        for j in range(slices):
            a, b, c, d = ring(i, j), ring(i, j + 1), ring(i + 1, j), ring(i + 1, j + 1)
            faces += [(a, c, b), (b, c, d)]
    f = np.array(faces, dtype=np.int64)
    return np.array(verts), (f[:, ::-1] if inward else f)


def test_clustering_keeps_fewer_triangles_near_the_surface():
    vert, face = _sphere(RADIUS_M)
    cell = 0.01
    moved, kept = cluster(vert, face, cell)
    assert moved.shape == vert.shape
    assert 0 < len(kept) < len(face) / 4  # a 10 mm grid on a 100 mm sphere: far fewer
    assert np.linalg.norm(moved - vert, axis=1).max() <= cell * math.sqrt(3)
    again, kept_fine = cluster(vert, face, 1e-5)  # a grid finer than the mesh: unchanged
    assert len(kept_fine) == len(face) and np.allclose(again, vert)


def test_both_sides_of_a_thin_shell_survive():
    outer, f_out = _sphere(RADIUS_M)
    inner, f_in = _sphere(RADIUS_M - 0.001, inward=True)  # 1 mm wall, facing inwards
    vert = np.vstack([outer, inner])
    face = np.vstack([f_out, f_in + len(outer)])
    moved, kept = cluster(vert, face, 0.008)
    from_inner = kept >= len(f_out)
    assert from_inner.sum() > 0.8 * (~from_inner).sum()  # each side keeps its own triangles
    # the inner wall stays 1 mm inside the outer one: the two sides did not merge into one
    r = np.linalg.norm(moved, axis=1)
    assert r[: len(outer)].mean() - r[len(outer) :].mean() > 0.0008


@pytest.mark.parametrize("cell", [0.0, -0.01, float("nan"), float("inf")])
def test_a_bad_cell_is_a_typed_error(cell):
    vert, face = _sphere(RADIUS_M, 4, 8)
    with pytest.raises(RobTwinError, match="cell_m"):
        cluster(vert, face, cell)


def test_the_cell_follows_the_pixels_at_the_nearest_point():
    cam = mujoco.MjvCamera()
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.lookat[:] = (0.0, 0.0, 0.0)
    cam.azimuth, cam.elevation, cam.distance = 0.0, 0.0, 2.0  # at x = -2, looking along +x
    points = np.array([[-1.0, 0.0, 0.0], [0.5, 0.0, 0.0], [-3.0, 0.0, 0.0]])  # the last: behind
    near = cell_size_m(cam, points, 45.0, 720)
    assert near == pytest.approx(cell_size_m(cam, points[:1], 45.0, 720))  # depth 1 m rules
    assert cell_size_m(cam, points, 45.0, 360) == pytest.approx(2 * near)
    assert cell_size_m(cam, points[1:2], 45.0, 720) == pytest.approx(2.5 * near)


def _arms_model() -> mujoco.MjModel:
    vert, face = _sphere(RADIUS_M)
    assert len(face) >= MIN_FACES
    v = " ".join(f"{x:.6f}" for x in vert.ravel())
    f = " ".join(str(i) for i in face.ravel())
    bodies = "".join(
        f'<body name="{arm}/link1" pos="0 {y} 0.5"><joint name="{arm}/j1" axis="0 0 1"/>'
        f'<geom type="mesh" mesh="ball" rgba="0.2 0.2 0.2 1"/></body>'
        for arm, y in (("right", -0.2), ("left", 0.2))
    )
    return mujoco.MjModel.from_xml_string(
        f'<mujoco><asset><mesh name="ball" vertex="{v}" face="{f}"/></asset><worldbody>'
        f'<light pos="0 0 3"/><geom type="plane" size="0 0 0.05" rgba="0.8 0.8 0.8 1"/>'
        f"{bodies}</worldbody></mujoco>"
    )


@pytest.mark.parametrize("quality", ["fast", "full"])
def test_only_fast_quality_draws_coarser_meshes_and_the_physics_model_keeps_its_own(quality):
    from rob_twin.twin.render.video import RenderUnavailable, VideoRecorder

    model = _arms_model()
    faces = int(model.mesh_facenum.sum())
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    try:
        rec = VideoRecorder(model, "auto", width=192, height=108, quality=quality)
    except RenderUnavailable as err:
        pytest.skip(f"no GL: {err}")
    try:
        frame = rec.capture(data)
    finally:
        rec.close()
    assert frame.shape == (108, 192, 3) and frame.std() > 5
    assert int(model.mesh_facenum.sum()) == faces  # the physics model is never touched
    if quality == "fast":
        main, inset = rec.mesh_triangles["main"], rec.mesh_triangles["inset"]
        assert inset < main < faces  # the inset's pixels are larger: coarser still
    else:
        assert rec.mesh_triangles == {} and int(rec.render_model.mesh_facenum.sum()) == faces

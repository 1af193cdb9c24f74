"""Coarser meshes for a software rasteriser: vertex clustering in the render copy of a model.

A software GL renderer (llvmpipe) pays for every triangle of every pass. OpenArm's visible
meshes hold about 376,000 triangles, more than the pixels that show them: at the demo's
1280x720 they cost two thirds of the main view's frame time and most of the inset's. A
triangle smaller than a pixel adds nothing to the picture, so at ``fast`` quality
(``rob_twin.twin.render.quality``) each renderer gets the meshes clustered on a grid whose
cell is ``CELL_PX`` pixels of its own camera at the arms' nearest point (``cell_size_m``):
the vertices of one cell (and one facing, ``_facing``: the two sides of a thin shell never
merge) move to their mean, and the triangles that collapse are dropped. Vertex normals stay
the original ones, so the shading stays smooth. Only the render copy changes (visual fields:
physics never reads it); ``full`` quality keeps the exact meshes. Metres, pixels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np
from rob_twin.models.errors import InvalidValueError
from rob_twin.twin.render.framing import free_camera_pose

CELL_PX = 3.0  # grid cell [px at the nearest arm point]: OpenArm 1280x720 shows no change
MIN_FACES = 2000  # a mesh with fewer triangles is drawn as it is (nothing worth saving)
MIN_DEPTH_M = 0.05  # points closer to the camera than this are not what it frames


@dataclass(frozen=True)
class MeshSource:
    """The exact mesh arrays of a model (copies), so that clustering always starts from them."""

    vert: np.ndarray
    face: np.ndarray
    facenormal: np.ndarray
    facetexcoord: np.ndarray | None
    facenum: np.ndarray

    @classmethod
    def of(cls, model: mujoco.MjModel) -> MeshSource:
        tex = model.mesh_facetexcoord.copy() if model.nmeshtexcoord else None
        return cls(
            model.mesh_vert.copy(),
            model.mesh_face.copy(),
            model.mesh_facenormal.copy(),
            tex,
            model.mesh_facenum.copy(),
        )

    def worth_clustering(self, model: mujoco.MjModel) -> list[int]:
        """Ids of the meshes with ``MIN_FACES`` triangles or more."""
        return [i for i in range(model.nmesh) if self.facenum[i] >= MIN_FACES]


def _facing(vert: np.ndarray, face: np.ndarray) -> np.ndarray:
    """Per vertex, which of the 6 axis directions (+-x, +-y, +-z) its area-weighted normal
    points to most (0..5)."""
    n = np.cross(vert[face[:, 1]] - vert[face[:, 0]], vert[face[:, 2]] - vert[face[:, 0]])
    normal = np.zeros_like(vert)
    for k in range(3):
        for axis in range(3):
            normal[:, axis] += np.bincount(face[:, k], n[:, axis], minlength=len(vert))
    axis = np.argmax(np.abs(normal), axis=1)
    positive = normal[np.arange(len(vert)), axis] > 0
    return 2 * axis + positive


def cluster(vert: np.ndarray, face: np.ndarray, cell_m: float) -> tuple[np.ndarray, np.ndarray]:
    """One mesh clustered on a grid of ``cell_m`` [m]: (new vertex positions, same count and
    order; indices of the faces kept, in their order). Vertices of one cell and one facing
    move to their mean; a face whose corners fall in fewer than 3 clusters, or repeats a
    kept face's clusters, is dropped."""
    if not (cell_m > 0 and math.isfinite(cell_m)):
        raise InvalidValueError("cell_m", cell_m, "a finite length > 0 [m]")
    if len(face) == 0:
        return vert.copy(), np.zeros(0, dtype=np.int64)
    grid = np.floor((vert - vert.min(axis=0)) / cell_m).astype(np.int64)
    dims = grid.max(axis=0) + 1
    key = ((grid[:, 0] * dims[1] + grid[:, 1]) * dims[2] + grid[:, 2]) * 6 + _facing(vert, face)
    _, which, count = np.unique(key, return_inverse=True, return_counts=True)
    which = which.ravel()
    mean = (
        np.column_stack(
            [np.bincount(which, vert[:, axis], minlength=len(count)) for axis in range(3)]
        )
        / count[:, None]
    )
    corner = which[face]
    whole = (
        (corner[:, 0] != corner[:, 1])
        & (corner[:, 1] != corner[:, 2])
        & (corner[:, 0] != corner[:, 2])
    )
    triple = np.sort(corner[whole], axis=1)
    n = len(count)
    _, first = np.unique((triple[:, 0] * n + triple[:, 1]) * n + triple[:, 2], return_index=True)
    kept = np.flatnonzero(whole)[np.sort(first)]
    return mean[which], kept


def coarsen(model: mujoco.MjModel, source: MeshSource, cell_m: float) -> int:
    """Set ``model``'s meshes (those ``source`` finds worth it) to ``source``'s clustered on
    ``cell_m`` [m], the others to ``source``'s own; returns the triangles left in all meshes."""
    for i in range(model.nmesh):
        va, vn = model.mesh_vertadr[i], model.mesh_vertnum[i]
        fa, fn = model.mesh_faceadr[i], source.facenum[i]
        vert, face = source.vert[va : va + vn], source.face[fa : fa + fn]
        if fn >= MIN_FACES:
            new_vert, kept = cluster(vert, face, cell_m)
        else:
            new_vert, kept = vert, np.arange(fn)
        k = len(kept)
        model.mesh_vert[va : va + vn] = new_vert
        model.mesh_face[fa : fa + k] = face[kept]
        model.mesh_facenormal[fa : fa + k] = source.facenormal[fa : fa + fn][kept]
        if source.facetexcoord is not None:
            model.mesh_facetexcoord[fa : fa + k] = source.facetexcoord[fa : fa + fn][kept]
        model.mesh_facenum[i] = k
    return int(model.mesh_facenum.sum())


def cell_size_m(
    camera: mujoco.MjvCamera, points: np.ndarray, fovy_deg: float, height_px: int
) -> float:
    """``CELL_PX`` pixels [m] of a free ``camera`` ``height_px`` high at the nearest of
    ``points`` [m] (N x 3) in front of it (at its look-at point when none is)."""
    position, forward = free_camera_pose(camera)
    depth = (points - position) @ forward if len(points) else np.zeros(0)
    depth = depth[depth > MIN_DEPTH_M]
    near = float(depth.min()) if len(depth) else float(camera.distance)
    pixel = 2 * near * math.tan(math.radians(fovy_deg) / 2) / max(1, height_px)
    return CELL_PX * pixel


def upload(renderer: mujoco.Renderer, model: mujoco.MjModel) -> bool:
    """Send ``model``'s meshes to ``renderer``'s GL context (its own current); False when the
    renderer exposes no context to send them to (nothing changed)."""
    gl, context = getattr(renderer, "_gl_context", None), getattr(renderer, "_mjr_context", None)
    if gl is None or context is None:  # the Renderer exposes no public handle
        return False
    gl.make_current()
    for i in range(model.nmesh):
        mujoco.mjr_uploadMesh(model, context, i)
    return True

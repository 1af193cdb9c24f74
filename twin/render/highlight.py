"""Colliding links drawn red: which arm geoms overlap, and painting them in a rendered scene.

``colliding_geoms`` measures every geom of the RIGHT arm against every geom of the LEFT arm
(``mj_geomDistance``, nothing of the planner) and returns those closer than 0 m (overlap);
``paint`` sets their rgba in an ``MjvScene`` after ``update_scene``, so only that frame shows
them red.
"""

from __future__ import annotations

import mujoco
import numpy as np
from rob_twin.models.names import Arm

RED = (1.0, 0.1, 0.1, 1.0)


def arm_geoms(model: mujoco.MjModel, arm: Arm) -> list[int]:
    """Ids of the geoms on the bodies of ``arm`` (body names under ``<arm>/``)."""
    prefix = f"{arm.value}/"
    return [
        g for g in range(model.ngeom) if model.body(model.geom_bodyid[g]).name.startswith(prefix)
    ]


def colliding_geoms(model: mujoco.MjModel, data: mujoco.MjData) -> set[int]:
    """Geoms of one arm that overlap a geom of the other (distance < 0 m) in ``data``
    (forward kinematics done)."""
    fromto = np.zeros(6)
    hits: set[int] = set()
    for a in arm_geoms(model, Arm.RIGHT):
        for b in arm_geoms(model, Arm.LEFT):
            if mujoco.mj_geomDistance(model, data, a, b, 0.0, fromto) < 0:
                hits.update((a, b))
    return hits


def paint(scene: mujoco.MjvScene, geom_ids: set[int] | frozenset[int], rgba=RED) -> int:
    """Set ``rgba`` on the scene geoms that draw ``geom_ids``; returns how many."""
    n = 0
    if not geom_ids:
        return n
    for i in range(scene.ngeom):
        g = scene.geoms[i]
        if g.objtype == mujoco.mjtObj.mjOBJ_GEOM and g.objid in geom_ids:
            g.rgba[:] = rgba
            n += 1
    return n

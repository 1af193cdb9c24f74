"""The geom pairs MuJoCo's collision reports at a pose, each by its smallest distance: what
``excitation_clearance`` checks an excitation's targets with and ``replay_contacts`` a
replay's samples. Units: metres."""

from __future__ import annotations

import mujoco


def pair_distances(model: mujoco.MjModel, data: mujoco.MjData) -> dict[tuple[int, int], float]:
    """{(geom a, geom b), a < b: smallest contact distance [m]} of every pair
    ``mj_collision`` reports at ``data``'s pose (kinematics already run): pairs within their
    margin, negative when they penetrate."""
    mujoco.mj_collision(model, data)
    out: dict[tuple[int, int], float] = {}
    for c in data.contact[: data.ncon]:
        g = (min(int(c.geom1), int(c.geom2)), max(int(c.geom1), int(c.geom2)))
        out[g] = min(out.get(g, float("inf")), float(c.dist))
    return out


def pair_name(model: mujoco.MjModel, g: tuple[int, int]) -> str:
    """ "geom a vs geom b" (an unnamed geom by its index)."""
    return f"{model.geom(g[0]).name or g[0]} vs {model.geom(g[1]).name or g[1]}"

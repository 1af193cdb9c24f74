"""An independent collision oracle with coal, and the soundness study of the checker.

``CoalOracle`` rebuilds every geom of a MuJoCo model as a coal shape (sphere, capsule,
cylinder, box, ellipsoid, plane as a half-space, mesh as the convex hull MuJoCo collides
with) and measures signed distances with coal's GJK/EPA: no MuJoCo collider is involved;
only the geom poses come from ``mj_kinematics`` on the oracle's own MjData.

``agreement`` compares the checker with the oracle per geom-pair *type* ("capsule-box"):
a *miss* is a pair the oracle finds closer than ``margin - tolerance`` that the checker
does not report closer than the margin (unsound); an *extra* is the converse
(conservative). Two sources of configurations: random joint configurations of the moving
arms, and random relative poses of one representative pair per type, placed so the two
geoms overlap or nearly do (deep crossings included), which random joint configurations
rarely produce for some types. Units: metres.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import coal
import mujoco
import numpy as np
from rob_twin.planners.collision import CheckSession
from rob_twin.planners.geom_pairs import GeomPairTable

GEOM_TYPE_NAMES = {
    int(mujoco.mjtGeom.mjGEOM_PLANE): "plane",
    int(mujoco.mjtGeom.mjGEOM_HFIELD): "hfield",
    int(mujoco.mjtGeom.mjGEOM_SPHERE): "sphere",
    int(mujoco.mjtGeom.mjGEOM_CAPSULE): "capsule",
    int(mujoco.mjtGeom.mjGEOM_ELLIPSOID): "ellipsoid",
    int(mujoco.mjtGeom.mjGEOM_CYLINDER): "cylinder",
    int(mujoco.mjtGeom.mjGEOM_BOX): "box",
    int(mujoco.mjtGeom.mjGEOM_MESH): "mesh",
}


def pair_type(model: mujoco.MjModel, g1: int, g2: int) -> str:
    """``"capsule-box"``: the two geom type names, sorted."""
    names = sorted(GEOM_TYPE_NAMES.get(int(model.geom_type[g]), "other") for g in (g1, g2))
    return "-".join(names)


def coal_shape(model: mujoco.MjModel, g: int):
    """The coal shape of geom ``g`` in its own frame, or None for unsupported types."""
    t, s = int(model.geom_type[g]), model.geom_size[g]
    if t == mujoco.mjtGeom.mjGEOM_SPHERE:
        return coal.Sphere(s[0])
    if t == mujoco.mjtGeom.mjGEOM_CAPSULE:
        return coal.Capsule(s[0], 2.0 * s[1])  # coal takes the full segment length
    if t == mujoco.mjtGeom.mjGEOM_CYLINDER:
        return coal.Cylinder(s[0], 2.0 * s[1])
    if t == mujoco.mjtGeom.mjGEOM_BOX:
        return coal.Box(2.0 * s[0], 2.0 * s[1], 2.0 * s[2])
    if t == mujoco.mjtGeom.mjGEOM_ELLIPSOID:
        return coal.Ellipsoid(s[0], s[1], s[2])
    if t == mujoco.mjtGeom.mjGEOM_PLANE:
        return coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0)
    if t == mujoco.mjtGeom.mjGEOM_MESH:
        mid = int(model.geom_dataid[g])
        start, count = int(model.mesh_vertadr[mid]), int(model.mesh_vertnum[mid])
        points = coal.StdVec_Vec3s()
        for p in model.mesh_vert[start : start + count]:
            points.append(np.asarray(p, dtype=float))
        return coal.Convex.convexHull(points, False, "")
    return None


class CoalOracle:
    """Signed distances between geoms of ``model`` by coal (own MjData, one thread);
    ``geoms``: build the coal shapes of these geoms only (the others measure nan)."""

    def __init__(self, model: mujoco.MjModel, geoms: Iterable[int] | None = None):
        self.model = model
        self.data = mujoco.MjData(model)
        only = None if geoms is None else {int(g) for g in geoms}
        self.shapes = [
            coal_shape(model, g) if only is None or g in only else None for g in range(model.ngeom)
        ]

    def set_qpos(self, qpos: np.ndarray) -> None:
        self.data.qpos[:] = qpos
        mujoco.mj_kinematics(self.model, self.data)

    def distance(self, g1: int, g2: int, pose1=None, pose2=None) -> float:
        """Signed distance [m] of geoms g1, g2 (negative: penetration depth); poses
        (pos, 3x3 rot) default to the current kinematics."""
        s1, s2 = self.shapes[g1], self.shapes[g2]
        if s1 is None or s2 is None:
            return float("nan")
        p1 = pose1 or (self.data.geom_xpos[g1], self.data.geom_xmat[g1].reshape(3, 3))
        p2 = pose2 or (self.data.geom_xpos[g2], self.data.geom_xmat[g2].reshape(3, 3))
        tf1 = coal.Transform3s(np.array(p1[1]), np.array(p1[0]))
        tf2 = coal.Transform3s(np.array(p2[1]), np.array(p2[0]))
        return float(coal.distance(s1, tf1, s2, tf2, coal.DistanceRequest(), coal.DistanceResult()))


@dataclass
class TypeCounts:
    """Per pair type: pairs compared, oracle hits, checker hits, misses, extras."""

    compared: int = 0
    oracle_hits: int = 0
    checker_hits: int = 0
    missed: int = 0
    extra: int = 0
    worst_missed_distance_m: float | None = None
    example_miss: str | None = None

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Agreement:
    margin_m: float
    tolerance_m: float
    by_type: dict[str, TypeCounts] = field(default_factory=dict)

    @property
    def missed(self) -> int:
        return sum(c.missed for c in self.by_type.values())

    def as_dict(self) -> dict:
        return {
            "margin_m": self.margin_m,
            "tolerance_m": self.tolerance_m,
            "missed": self.missed,
            "by_type": {k: v.as_dict() for k, v in sorted(self.by_type.items())},
        }

    def record(self, type_name: str, oracle_d: float, checker_d: float, label: str) -> None:
        c = self.by_type.setdefault(type_name, TypeCounts())
        c.compared += 1
        oracle_hit = oracle_d < self.margin_m - self.tolerance_m
        checker_hit = checker_d < self.margin_m
        c.oracle_hits += oracle_hit
        c.checker_hits += checker_hit
        if oracle_hit and not checker_hit:
            c.missed += 1
            if c.worst_missed_distance_m is None or oracle_d < c.worst_missed_distance_m:
                c.worst_missed_distance_m = oracle_d
                c.example_miss = label
        if checker_hit and oracle_d > self.margin_m + self.tolerance_m:
            c.extra += 1


def _checker_distances(session: CheckSession, data: mujoco.MjData) -> dict[tuple[int, int], float]:
    out: dict[tuple[int, int], float] = {}
    for k in range(data.ncon):
        g1, g2 = sorted(int(x) for x in data.contact.geom[k])
        if session.checked[g1, g2]:
            out[(g1, g2)] = min(out.get((g1, g2), np.inf), float(data.contact.dist[k]))
    return out


def _checked_pairs(session: CheckSession) -> list[tuple[int, int]]:
    g1, g2 = np.nonzero(np.triu(session.checked))
    return list(zip(g1.tolist(), g2.tolist(), strict=True))


def agreement_on_configs(
    session: CheckSession, oracle: CoalOracle, configs: Iterable[np.ndarray], result: Agreement
) -> Agreement:
    """Compare checker and oracle on stacked configurations of the session's moving arms."""
    pairs = _checked_pairs(session)
    model = session.model
    rbound = oracle.model.geom_rbound
    for q in configs:
        d = session._collide(q)
        found = _checker_distances(session, d)
        oracle.set_qpos(session.full_qpos(q))
        xpos = oracle.data.geom_xpos
        for g1, g2 in pairs:
            planes = int(model.geom_type[g1]) == 0 or int(model.geom_type[g2]) == 0
            gap = np.linalg.norm(xpos[g1] - xpos[g2]) - rbound[g1] - rbound[g2]
            if not planes and gap > result.margin_m + result.tolerance_m:
                continue  # bounding spheres apart: both agree there is nothing
            od = oracle.distance(g1, g2)
            if np.isnan(od):
                continue
            result.record(
                pair_type(model, g1, g2),
                od,
                found.get((g1, g2), np.inf),
                f"{session.checker.pairs.geom_names[g1]} vs "
                f"{session.checker.pairs.geom_names[g2]} at q={np.round(q, 4).tolist()}",
            )
    return result


def representative_pairs(session: CheckSession) -> dict[str, tuple[int, int]]:
    """One checked pair per pair type (the first by geom index)."""
    out: dict[str, tuple[int, int]] = {}
    for g1, g2 in _checked_pairs(session):
        out.setdefault(pair_type(session.model, g1, g2), (g1, g2))
    return out


def _random_rotation(rng: np.random.Generator) -> np.ndarray:
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, q)
    return mat.reshape(3, 3)


def _place_geom(
    model: mujoco.MjModel, data: mujoco.MjData, g: int, pos: np.ndarray, rot: np.ndarray
) -> None:
    """Put geom ``g`` at (pos, rot) by moving its body (MuJoCo's broad and mid phase work
    on body frames), then its geoms."""
    b = int(model.geom_bodyid[g])
    local_rot = np.zeros(9)
    mujoco.mju_quat2Mat(local_rot, model.geom_quat[g])
    body_rot = rot @ local_rot.reshape(3, 3).T
    body_pos = pos - body_rot @ model.geom_pos[g]
    data.xpos[b] = body_pos
    data.xmat[b] = body_rot.reshape(9)
    inertial_rot = np.zeros(9)
    mujoco.mju_quat2Mat(inertial_rot, model.body_iquat[b])
    data.xipos[b] = body_pos + body_rot @ model.body_ipos[b]
    data.ximat[b] = (body_rot @ inertial_rot.reshape(3, 3)).reshape(9)
    for k in np.flatnonzero(model.geom_bodyid == b):
        k_rot = np.zeros(9)
        mujoco.mju_quat2Mat(k_rot, model.geom_quat[k])
        data.geom_xpos[k] = body_pos + body_rot @ model.geom_pos[k]
        data.geom_xmat[k] = (body_rot @ k_rot.reshape(3, 3)).reshape(9)


def agreement_on_placements(
    session: CheckSession,
    oracle: CoalOracle,
    per_type: int,
    rng: np.random.Generator,
    result: Agreement,
) -> Agreement:
    """Place the first geom of each representative pair at random poses overlapping or
    nearly touching the second (positions within the sum of bounding radii; planes: within
    the geom's radius of the surface) and compare the checker's collider with coal.
    Placements put a geom where no joint could: they use the checker's whole model, not
    the session's (which leaves out the geoms its arms cannot reach)."""
    model = session.checker.model
    data = mujoco.MjData(model)
    data.qpos[:] = session.reference_qpos
    names = session.checker.pairs.geom_names
    for type_name, (ga, gb) in representative_pairs(session).items():
        mover, fixed = (ga, gb) if session.checker.pairs.owner[ga] >= 0 else (gb, ga)
        for _ in range(per_type):
            mujoco.mj_kinematics(model, data)
            center = data.geom_xpos[fixed].copy()
            rot = _random_rotation(rng)
            if int(model.geom_type[fixed]) == mujoco.mjtGeom.mjGEOM_PLANE:
                normal = data.geom_xmat[fixed].reshape(3, 3)[:, 2]
                offset = rng.uniform(-1.0, 1.0) * model.geom_rbound[mover] * 1.2
                pos = center + rng.uniform(-0.5, 0.5, 3) * (1 - np.abs(normal)) + offset * normal
            else:
                reach = model.geom_rbound[mover] + model.geom_rbound[fixed]
                pos = center + rng.uniform(-reach, reach, 3)
            _place_geom(model, data, mover, pos, rot)
            mujoco.mj_collision(model, data)
            found = _checker_distances(session, data)
            od = oracle.distance(
                mover,
                fixed,
                (pos, rot),
                (data.geom_xpos[fixed], data.geom_xmat[fixed].reshape(3, 3)),
            )
            key = tuple(sorted((mover, fixed)))
            result.record(
                type_name,
                od,
                found.get(key, np.inf),
                f"placed {names[mover]} vs {names[fixed]} at pos={np.round(pos, 4).tolist()}",
            )
    return result


def pair_table_types(table: GeomPairTable, model: mujoco.MjModel) -> set[str]:
    """Every pair type among the checked pairs of ``table``."""
    g1, g2 = np.nonzero(np.triu(table.table > 0))
    return {pair_type(model, a, b) for a, b in zip(g1.tolist(), g2.tolist(), strict=True)}


def clearances(
    oracle: CoalOracle, table: GeomPairTable, qpos_states: np.ndarray, horizon_m: float = 0.05
) -> tuple[np.ndarray, list[str]]:
    """Coal's clearance [m] of each full-model state over the pairs ``table`` checks (any arm),
    capped at ``horizon_m`` (pairs whose bounding spheres are further apart are not measured),
    and the closest pair's names ("" when none is within the horizon)."""
    g1s, g2s = (np.asarray(x) for x in np.nonzero(np.triu(table.table > 0)))
    model = oracle.model
    plane = int(mujoco.mjtGeom.mjGEOM_PLANE)
    has_plane = (model.geom_type[g1s] == plane) | (model.geom_type[g2s] == plane)
    rsum = model.geom_rbound[g1s] + model.geom_rbound[g2s]
    states = np.atleast_2d(qpos_states)
    out, names = np.full(len(states), horizon_m), [""] * len(states)
    for i, qpos in enumerate(states):
        oracle.set_qpos(qpos)
        xpos = oracle.data.geom_xpos
        gap = np.linalg.norm(xpos[g1s] - xpos[g2s], axis=1) - rsum
        for k in np.flatnonzero(has_plane | (gap < horizon_m)):
            d = oracle.distance(int(g1s[k]), int(g2s[k]))
            if d < out[i]:
                out[i] = d
                names[i] = f"{table.geom_names[g1s[k]]} vs {table.geom_names[g2s[k]]}"
    return out, names


def judge_states(
    oracle: CoalOracle, table: GeomPairTable, qpos_states: np.ndarray, threshold_m: float = 0.0
) -> list[tuple[int, str, float]]:
    """Independent verdict on full-model states: for each state where some checked pair
    (any arm, ``table``'s policy) is closer than ``threshold_m`` by coal, (state index,
    pair, distance [m]) of its closest such pair."""
    dist, names = clearances(oracle, table, qpos_states, max(threshold_m, 0.0) + 1e-3)
    return [(i, names[i], float(d)) for i, d in enumerate(dist) if d < threshold_m]


def densify(states: np.ndarray, factor: int) -> np.ndarray:
    """``states`` (N, n) with ``factor - 1`` evenly spaced joint-space states inserted between
    consecutive rows: (factor * (N - 1) + 1, n)."""
    states = np.atleast_2d(states)
    if factor < 1:
        raise ValueError(f"densify factor must be >= 1, got {factor!r}")
    if factor == 1 or len(states) < 2:
        return states.copy()
    w = np.arange(factor) / factor
    a, b = states[:-1], states[1:]
    inner = a[:, None, :] + w[None, :, None] * (b - a)[:, None, :]
    return np.vstack([inner.reshape(-1, states.shape[1]), states[-1:]])


# ------------------------------------------------------------------ targeted placements
def random_rotations(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` uniformly random rotation matrices (n, 3, 3) from normalised Gaussian quaternions."""
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q.T
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], axis=-1),
            np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], axis=-1),
            np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], axis=-1),
        ],
        axis=1,
    )


@dataclass(kw_only=True)
class Placements:
    """Poses of geom ``mover`` next to geom ``fixed`` (at the session's reference pose): positions
    (n, 3) [m], rotations (n, 3, 3), and coal's signed distance at each (n,) [m]."""

    mover: int
    fixed: int
    type_name: str
    pos: np.ndarray
    rot: np.ndarray
    oracle_m: np.ndarray


def targeted_placements(
    session: CheckSession,
    oracle: CoalOracle,
    mover: int,
    fixed: int,
    n: int,
    rng: np.random.Generator,
    targets_m: np.ndarray,
) -> Placements:
    """``n`` poses of ``mover`` whose coal distance to ``fixed`` is near ``targets_m`` (n,) [m].

    A random orientation and a random position within reach of ``fixed`` are drawn (in one
    batch), then the mover is slid along coal's witness normal by the distance still missing
    (exact when separated; approximate in penetration). The distance reported is coal's at the
    final pose, so a target that was not met is still a true figure."""
    oracle.set_qpos(session.reference_qpos)
    fpose = (oracle.data.geom_xpos[fixed].copy(), oracle.data.geom_xmat[fixed].reshape(3, 3).copy())
    model = oracle.model
    rot = random_rotations(rng, n)
    if int(model.geom_type[fixed]) == mujoco.mjtGeom.mjGEOM_PLANE:
        tangent = rng.uniform(-0.5, 0.5, (n, 3)) * (1 - np.abs(fpose[1][:, 2]))
        pos = (
            fpose[0]
            + tangent
            + np.outer(rng.uniform(0.0, 1.0, n) * model.geom_rbound[mover], fpose[1][:, 2])
        )
    else:
        reach = model.geom_rbound[mover] + model.geom_rbound[fixed]
        pos = fpose[0] + rng.uniform(-reach, reach, (n, 3))
    dist = np.empty(n)
    s1, s2 = oracle.shapes[mover], oracle.shapes[fixed]
    tf2 = coal.Transform3s(fpose[1], fpose[0])
    req = coal.DistanceRequest()
    for k in range(n):
        res = coal.DistanceResult()
        d0 = coal.distance(s1, coal.Transform3s(rot[k], pos[k]), s2, tf2, req, res)
        normal = np.asarray(res.normal, float)  # from the mover towards the fixed geom
        if np.all(np.isfinite(normal)) and np.linalg.norm(normal) > 0.5:
            pos[k] = pos[k] - (targets_m[k] - d0) * normal
        dist[k] = coal.distance(
            s1, coal.Transform3s(rot[k], pos[k]), s2, tf2, req, coal.DistanceResult()
        )
    return Placements(
        mover=mover,
        fixed=fixed,
        type_name=pair_type(model, mover, fixed),
        pos=pos,
        rot=rot,
        oracle_m=dist,
    )


def checker_distances(session: CheckSession, placements: Placements) -> np.ndarray:
    """The checker's distance [m] of the placed pair at each placement: MuJoCo's collision on
    the checker's own model, filtered by its pair table (inf: not reported, i.e. free or not
    checked). The whole model, not the session's: a placement puts a geom where no joint
    could, beyond the session's reach."""
    model = session.checker.model
    data = mujoco.MjData(model)
    data.qpos[:] = session.reference_qpos
    key = tuple(sorted((placements.mover, placements.fixed)))
    out = np.empty(len(placements.oracle_m))
    for k in range(out.size):
        mujoco.mj_kinematics(model, data)
        _place_geom(model, data, placements.mover, placements.pos[k], placements.rot[k])
        mujoco.mj_collision(model, data)
        out[k] = _checker_distances(session, data).get(key, np.inf)
    return out

"""Weak pairs judged by coal: the distances the certificate rests on, where MuJoCo's collider
is known to misjudge them.

A *weak pair* is a checked pair whose MuJoCo collider is known to miss or misjudge
separations (``rob_twin.planners.geom_pairs.weak_reason``: box vs box, box vs cylinder,
cylinder vs cylinder, capsule vs cylinder, capsule vs thin primitive box). The planner
measures distances with ``mj_collision`` at the clearance horizon (4 cm) as margin; for such
pairs that is not a distance. MuJoCo 3.17's box-box collider, on a two-arm robot with box
links (3,000 random states, 7,895 box-box pairs within 4 cm by coal): no contact at all for
367 of them (the final check takes such a pair to be beyond the horizon and skips the
samples its bound allows), and contact distances from 9.8 mm below to 34 mm above coal's for
1,436 more (``mj_geomDistance`` agrees with coal to 0.4 um). On 160 plans of that robot,
certificates built on those figures claimed one pair 2.8 mm above its true minimum (19.88
mm, dense coal 17.10 mm), and ``rob-twin certify``, which measures every pair with coal at
the same states, refused 9 of them.

So the planner's final check (``rob_twin.planners.final_check``) and its certificate's
queries (``rob_twin.planners.pair_certificate.mujoco_query``) take the distances of weak
pairs from coal, not from MuJoCo's contacts (every other pair keeps MuJoCo's: the same
figures as before for robots without weak pairs, OpenArm among them; ROB's weak pairs are
its links against the table legs and can, and its plans came out the same). Each weak
distance is computed as ``rob-twin certify`` computes every pair (``coal_capped``: the
horizon where the bounding spheres, or a box's world-aligned box and the other geom's,
are at least the horizon apart; coal's distance capped at the horizon otherwise) on the
same model and states, so the planner's certificate and ``certify`` agree on weak pairs
exactly. What it costs: on the test stand (3 weak pairs) check and certify take about
5 ms more per plan, on the box-link robot (90) about 4 ms; nothing where no pair is weak.

The plan file says which pairs were judged how (``weak_pairs_document``,
``pair_judges``): every weak pair, why it is weak, and its judge (``JUDGE_COAL``); every
listed pair its judge.

Units: metres.
"""

from __future__ import annotations

import math
import threading

import mujoco
import numpy as np
from rob_twin.planners.certificate_geometry import PairGeometry, _pair_name, weak_rows
from rob_twin.planners.free_filter import segment_distance

# the compiled pre-check (``weak_judge_kernel``) once ``warm_kernel`` loaded it; until then,
# or where numba does not import, ``_cull_numpy`` gives the same figures
_kernel = None

JUDGE_MUJOCO = "mujoco"  # MuJoCo's collider, mj_collision with the horizon as margin
JUDGE_COAL = "coal"  # coal's GJK/EPA on the geoms' coal shapes (rob_twin.planners.oracle)
JUDGES = (JUDGE_MUJOCO, JUDGE_COAL)
_PLANE = int(mujoco.mjtGeom.mjGEOM_PLANE)
_BOX = int(mujoco.mjtGeom.mjGEOM_BOX)
# a sphere, capsule or cylinder lies within the capsule of its axis segment (half length
# size[1], none for a sphere) and radius size[0]: two such geoms are at least their
# segments' distance less both radii apart
_SEGMENT = (
    int(mujoco.mjtGeom.mjGEOM_SPHERE),
    int(mujoco.mjtGeom.mjGEOM_CAPSULE),
    int(mujoco.mjtGeom.mjGEOM_CYLINDER),
)


def coal_capped(oracle, g1: np.ndarray, g2: np.ndarray, horizon_m: float) -> tuple[np.ndarray, int]:
    """(k,) distances [m] of the geom pairs (g1[i], g2[i]) at ``oracle``'s current kinematics
    (a ``rob_twin.planners.oracle.CoalOracle``), capped at ``horizon_m``: coal's where the
    bounding spheres are within the horizon (or a plane is involved), the sphere gap (a
    lower bound) otherwise; and the number of coal queries made (``CoalOracle.distance``'s
    figures). A pair with a box whose world box is at least the horizon from the other
    geom's along a world axis gets the horizon without a query (``_capped``)."""
    pairs = _PairSet(oracle.model, g1, g2)
    data = oracle.data
    out, queries = _capped(
        pairs,
        oracle.shapes,
        data.geom_xpos[pairs.geoms][None],
        data.geom_xmat[pairs.geoms][None],
        horizon_m,
    )
    return out[0], queries


class _PairSet:
    """What ``_capped`` needs of geom pairs (g1[i], g2[i]) of ``model`` besides their poses:
    the geoms involved (``geoms``, sorted, unique) and each pair's two positions among them
    (``i1``, ``i2``); the pairs' bounding radii, which involve a plane, which a box
    (``boxes``), which are two spheres, capsules or cylinders (``segment_pair``); per geom its
    box half sizes (zero for a geom that is no box), for a geom that is no box its bounding
    radius (``round_``: nan for a box), and the half length and radius of the capsule
    around its axis (``seg_half``, ``seg_radius``: zero for a geom of another kind)."""

    def __init__(self, model: mujoco.MjModel, g1: np.ndarray, g2: np.ndarray):
        t1, t2 = model.geom_type[g1], model.geom_type[g2]
        self.g1, self.g2 = g1, g2
        self.geoms = np.unique(np.concatenate([g1, g2]))
        self.i1 = np.searchsorted(self.geoms, g1)
        self.i2 = np.searchsorted(self.geoms, g2)
        self.rb1, self.rb2 = model.geom_rbound[g1], model.geom_rbound[g2]
        self.plane = (t1 == _PLANE) | (t2 == _PLANE)
        self.box_pair = (t1 == _BOX) | (t2 == _BOX)
        self.boxes = np.flatnonzero(self.box_pair)
        box = model.geom_type[self.geoms] == _BOX
        self.half = np.where(box[:, None], model.geom_size[self.geoms], 0.0)
        self.round_ = np.where(box, np.nan, model.geom_rbound[self.geoms])
        self.box_geoms = np.unique(np.concatenate([self.i1[self.boxes], self.i2[self.boxes]]))
        seg = np.isin(model.geom_type[self.geoms], _SEGMENT)
        sphere = model.geom_type[self.geoms] == int(mujoco.mjtGeom.mjGEOM_SPHERE)
        self.segment_pair = seg[self.i1] & seg[self.i2]
        self.segments = np.flatnonzero(self.segment_pair)
        size = model.geom_size[self.geoms]
        self.seg_half = np.where(seg & ~sphere, size[:, 1], 0.0)
        self.seg_radius = np.where(seg, size[:, 0], 0.0)
        self.seg_cylinder = model.geom_type[self.geoms] == int(mujoco.mjtGeom.mjGEOM_CYLINDER)


def _extents(
    half: np.ndarray,
    round_: np.ndarray,
    seg_half: np.ndarray,
    seg_radius: np.ndarray,
    seg_cylinder: np.ndarray,
    mat: np.ndarray,
) -> np.ndarray:
    """(S, k, 3) half extents [m] along the world axes of boxes around k geoms at rotations
    ``mat`` (S, k, 9): a box's own (sum_j |R_ij| h_j, ``half`` (k, 3)); a sphere's or
    capsule's (``seg_radius`` > 0) |z_i| ``seg_half`` + ``seg_radius``, a cylinder's
    (``seg_cylinder``) |z_i| ``seg_half`` + ``seg_radius`` sqrt(1 - z_i^2), z its axis in
    world, either where below its bounding sphere's (``round_``); the bounding sphere's for
    any other geom (``round_`` nan for a box)."""
    rot = np.abs(mat.reshape(mat.shape[:-1] + (3, 3)))
    ext = (rot * half[None, :, None, :]).sum(axis=-1)
    other = ~np.isnan(round_)
    if other.any():
        ext[:, other] = round_[other][None, :, None]
    seg = seg_radius > 0.0
    if seg.any():
        z = rot[:, seg][..., 2]  # |z_i|: the axis's world components
        across = np.where(
            seg_cylinder[seg][None, :, None], np.sqrt(np.maximum(0.0, 1.0 - z * z)), 1.0
        )
        along = z * seg_half[seg][None, :, None] + seg_radius[seg][None, :, None] * across
        ext[:, seg] = np.minimum(round_[seg][None, :, None], along)
    return ext


def _cull_numpy(pairs: _PairSet, pos, mat, horizon_m) -> tuple[np.ndarray, np.ndarray]:
    """(out, query), (S, k): the capped lower bounds [m] of ``_capped`` before coal, and
    which pairs coal must be asked about (numpy; ``weak_judge_kernel.cull`` is the same
    arithmetic compiled)."""
    i1, i2 = pairs.i1, pairs.i2
    diff = pos[:, i1] - pos[:, i2]
    gap = np.sqrt(np.add.reduce(diff * diff, axis=-1)) - pairs.rb1 - pairs.rb2
    out = np.minimum(gap, horizon_m)
    query = (gap < horizon_m) | pairs.plane
    b = pairs.boxes
    if b.size and query[:, b].any():  # a box's world box is often far tighter than its sphere
        kb = pairs.box_geoms
        ext = np.zeros(pos.shape)
        ext[:, kb] = _extents(
            pairs.half[kb],
            pairs.round_[kb],
            pairs.seg_half[kb],
            pairs.seg_radius[kb],
            pairs.seg_cylinder[kb],
            mat[:, kb],
        )
        apart = np.abs(diff[:, b]) - ext[:, i1[b]]
        apart -= ext[:, i2[b]]
        far = apart.max(axis=-1) >= horizon_m  # >= the horizon apart along a world axis
        out[:, b] = np.where(far, horizon_m, out[:, b])
        query[:, b] &= ~far
    c = pairs.segments
    if c.size and query[:, c].any():  # an elongated geom's sphere is far looser than its capsule
        apart = _segment_gaps(pairs, pos, mat, c)
        far = apart >= horizon_m
        out[:, c] = np.where(far & query[:, c], horizon_m, out[:, c])
        query[:, c] &= ~far
    return out, query


def _segment_gaps(pairs: _PairSet, pos, mat, c: np.ndarray) -> np.ndarray:
    """(S, len(c)) lower bounds [m] of the distances of segment pairs ``c``: their axis
    segments' distance (``free_filter.segment_distance``) less both radii; the same
    figures as ``weak_judge_kernel.cull`` (which uses its compiled twin)."""
    a, b = pairs.i1[c], pairs.i2[c]

    def ends(k):
        z = mat[:, k][..., 2::3]  # the geom's z axis in world: column 2 of its rotation
        h = pairs.seg_half[k][None, :, None]
        return (pos[:, k] - h * z).reshape(-1, 3), (pos[:, k] + h * z).reshape(-1, 3)

    gap = segment_distance(*ends(a), *ends(b)).reshape(pos.shape[0], c.size)
    gap -= pairs.seg_radius[a]
    gap -= pairs.seg_radius[b]
    return gap


def warm_kernel() -> bool:
    """Load the compiled pre-check (importing numba and loading, or on a fresh machine
    compiling, ``weak_judge_kernel.cull``: about 0.7 s the first time in a process, nothing
    after), so that ``_capped`` uses it from then on; False where numba does not import.
    ArmGroup calls it when it is built for a model with weak pairs, outside any plan's
    wall-time budget."""
    global _kernel
    if _kernel is None:
        try:
            from rob_twin.planners import weak_judge_kernel
        except ImportError:  # pragma: no cover - numba is a dependency
            return False
        empty = np.zeros(0, np.int64)
        weak_judge_kernel.cull(
            np.zeros((1, 0, 3)), np.zeros((1, 0, 9)), empty, empty, np.zeros(0),
            np.zeros(0), np.zeros(0, bool), np.zeros(0, bool), np.zeros((0, 3)),
            np.zeros(0), np.zeros(0, bool), np.zeros(0), np.zeros(0), np.zeros(0, bool), 0.04,
        )  # fmt: skip
        _kernel = weak_judge_kernel
    return True


def _cull(pairs: _PairSet, pos, mat, horizon_m) -> tuple[np.ndarray, np.ndarray]:
    """``_cull_numpy``'s figures, compiled where numba imports (the same bits)."""
    if _kernel is None:
        return _cull_numpy(pairs, pos, mat, horizon_m)
    return _kernel.cull(
        np.ascontiguousarray(pos, np.float64),
        np.ascontiguousarray(mat, np.float64),
        pairs.i1,
        pairs.i2,
        pairs.rb1,
        pairs.rb2,
        pairs.plane,
        pairs.box_pair,
        pairs.half,
        pairs.round_,
        pairs.segment_pair,
        pairs.seg_half,
        pairs.seg_radius,
        pairs.seg_cylinder,
        float(horizon_m),
    )


def _capped(pairs: _PairSet, shapes, pos, mat, horizon_m) -> tuple[np.ndarray, int]:
    """``coal_capped`` of ``pairs`` at S states at once: ``pos`` (S, G, 3) and ``mat``
    (S, G, 9) the world positions and rotations of ``pairs.geoms`` per state; (S, k)
    distances [m]. Each figure is computed as in one state alone (the same operations
    element by element), each geom's world box and coal frame made once per state. A pair
    with a box that is at least the horizon apart along a world axis (the box's world box
    against the other geom's, ``_extents``) gets the horizon without a query: what coal,
    capped, would give it (``_cull``)."""
    out, query = _cull(pairs, pos, mat, horizon_m)
    near_s, near_p = np.nonzero(query)
    if near_s.size:
        import coal  # loaded on first use (its import takes 0.2 s)

        g1, g2, i1, i2 = pairs.g1, pairs.g2, pairs.i1, pairs.i2
        request, frames = coal.DistanceRequest(), {}

        def frame(s: int, k: int):
            tf = frames.get((s, k))
            if tf is None:
                tf = frames[(s, k)] = coal.Transform3s(
                    mat[s, k].reshape(3, 3).copy(), pos[s, k].copy()
                )
            return tf

        for s, p in zip(near_s.tolist(), near_p.tolist(), strict=True):
            a, b = int(g1[p]), int(g2[p])
            if shapes[a] is None or shapes[b] is None:
                out[s, p] = math.nan  # a geom type coal cannot represent
                continue
            d = coal.distance(
                shapes[a],
                frame(s, int(i1[p])),
                shapes[b],
                frame(s, int(i2[p])),
                request,
                coal.DistanceResult(),
            )
            out[s, p] = min(float(d), horizon_m)
    return out, int(near_s.size)


class CoalJudge:
    """Coal's distances of the weak pairs of ``geometry`` (``weak_rows``) on ``model``,
    capped at ``horizon_m``. ``rows``: their pair numbers; ``mujoco_index``: the geometry's
    geom x geom -> pair table with the weak pairs taken out (-1), for reading MuJoCo's
    contacts of the other pairs. One coal oracle per thread (made on first use)."""

    def __init__(self, model: mujoco.MjModel, geometry: PairGeometry, horizon_m: float):
        self.model = model
        self.horizon_m = float(horizon_m)
        self.rows = weak_rows(geometry)
        self.g1 = geometry.g1[self.rows]
        self.g2 = geometry.g2[self.rows]
        index = geometry.index.copy()
        index[self.g1, self.g2] = -1
        index[self.g2, self.g1] = -1
        index.flags.writeable = False
        self.mujoco_index = index
        self._pairs = _PairSet(model, self.g1, self.g2)
        self._geoms = self._pairs.geoms
        self._local = threading.local()

    def _oracle(self):
        oracle = getattr(self._local, "oracle", None)
        if oracle is None:
            from rob_twin.planners.oracle import CoalOracle  # coal loads on first use

            oracle = self._local.oracle = CoalOracle(self.model, self._geoms.tolist())
        return oracle

    def distances(self, qpos: np.ndarray) -> np.ndarray:
        """(W,) the weak pairs' distances [m] at full model state ``qpos``, capped at the
        horizon (``coal_capped``)."""
        oracle = self._oracle()
        oracle.set_qpos(qpos)
        data, geoms = oracle.data, self._geoms
        out, _ = _capped(
            self._pairs,
            oracle.shapes,
            data.geom_xpos[geoms][None],
            data.geom_xmat[geoms][None],
            self.horizon_m,
        )
        return out[0]

    @property
    def geoms(self) -> np.ndarray:
        """The geoms of the weak pairs, in the order ``at_poses`` takes their poses."""
        return self._geoms

    def at_poses(self, pos: np.ndarray, mat: np.ndarray) -> np.ndarray:
        """(S, W) the weak pairs' distances [m] with ``geoms`` at world positions ``pos``
        (S, G, 3) and rotations ``mat`` (S, G, 9), capped at the horizon."""
        out, _ = _capped(self._pairs, self._oracle().shapes, pos, mat, self.horizon_m)
        return out

    def merged(
        self, near: np.ndarray, dist: np.ndarray, state: np.ndarray, d: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """MuJoCo's checked contacts of the other pairs (pair numbers, distances, state
        numbers, in state order) with the weak pairs' distances ``d`` (S, W: ``at_poses``)
        nearer than the horizon added, in state order, MuJoCo's first within a state: what
        ``final_check`` reads off the contacts."""
        w_state, w = np.nonzero(d < self.horizon_m)
        if not w_state.size:
            return near, dist, state
        all_state = np.concatenate([state, w_state])
        order = np.argsort(all_state, kind="stable")
        return (
            np.concatenate([near, self.rows[w]])[order],
            np.concatenate([dist, d[w_state, w]])[order],
            all_state[order],
        )


def judge_for(group, geometry: PairGeometry) -> CoalJudge | None:
    """The coal judge of ``geometry``'s weak pairs on ``group``'s model at its meter's
    horizon (made once per geometry), or None when no pair of ``geometry`` is weak: then
    every distance is MuJoCo's, as it always was."""
    if not geometry.weak_why:
        return None
    horizon = group.meter.config.horizon_m
    judge = geometry.__dict__.get("_coal_judge")
    if judge is None or judge.model is not group.model or judge.horizon_m != horizon:
        judge = geometry.__dict__["_coal_judge"] = CoalJudge(group.model, geometry, horizon)
    return judge


def pair_judges(geometry: PairGeometry) -> dict[str, str]:
    """Each pair's name (``"a vs b (class)"``) -> its judge: coal for the weak pairs,
    MuJoCo for the rest."""
    weak = set(weak_rows(geometry).tolist())
    return {
        _pair_name(geometry, p): JUDGE_COAL if p in weak else JUDGE_MUJOCO
        for p in range(geometry.g1.size)
    }


def weak_pairs_document(geometry: PairGeometry) -> list[dict]:
    """The plan file's ``certificate.weak_pairs``: every weak pair of ``geometry`` with why
    its MuJoCo collider is weak and its judge."""
    return [
        {"pair": _pair_name(geometry, p), "why": geometry.weak_why[p], "judge": JUDGE_COAL}
        for p in weak_rows(geometry).tolist()
    ]

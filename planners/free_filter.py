"""A conservative free-space filter: proves many states free without a MuJoCo call.

``FreeSpaceFilter.proven_free(states)`` takes a batch of stacked configurations of a
session's moving arms and returns, per state, True only when the state is *proven* free:
every pair the session checks is farther apart than the margin. False means "not proven",
never "colliding": such states go to the exact check (``CheckSession.is_free``). The 125 Hz
sample check and the certificate never use the filter.

How it proves:

- every collision geom of a moving arm is enclosed in a few spheres (``geom_spheres``),
  fixed in the geom's frame: a sphere is itself; a capsule or cylinder is cut into equal
  slices along its axis, each slice enclosed in one sphere; a box, an ellipsoid (by its
  box) and a mesh (by the box of its vertices in the geom frame, which holds the convex
  hull that MuJoCo collides) are cut into a grid of equal cells, each cell enclosed in the
  sphere through its corners. A point of the geom lies in some slice or cell, so in a sphere;
- every other geom (world, robot body, arms that do not move) is fixed in the session and
  enclosed in a rounded box in its own frame (``static_shape``): a sphere (radius), a
  capsule (segment and radius), a box, a cylinder / ellipsoid / mesh by their box, a plane
  by the half-space below it;
- forward kinematics of many states at once (numpy, states along the first axis): every
  moving hinge or slide joint carries a frame, composed from its parent frame by a constant
  transform (taken from MuJoCo's own kinematics at the session's reference state) and a
  rotation about (translation along) its axis by the joint's change from the reference;
  every moving geom is rigidly attached to its nearest frame;
- a pair is cleared when its bounds are farther apart than the margin plus
  ``TOLERANCE_M`` (sphere vs sphere: centre distance minus both radii; sphere vs rounded
  box: the centre's distance to the box minus both roundings; two moving geoms also by the
  capsules holding them, ``geom_segment``: segment distance minus both radii, exact for two
  capsules). Three levels, each only where the one before does not clear the pair: one
  sphere per frame (all its geoms), then per geom (its sphere; against a moving geom its
  capsule), then the geom's fine spheres. A state is proven free when every checked pair of
  the session (``CheckSession.checked`` on geoms the session's model collides) is cleared;
  a pair of moving geoms on one frame (no moving joint between them) is measured once, at
  build, by ``mj_geomDistance``;
- a pair whose relative pose depends on one or two limited moving hinges (a link against
  its neighbours, the first links against the body) and whose geometric bound is not exact
  also has a joint-space distance table (``_tables``), measured at build by
  ``mj_geomDistance`` over bins of those joints' ranges, each entry the bin centre's distance
  less the most the pair can move within the bin; looked up before the geom level, it
  clears pairs that no sphere or box of a mesh can (OpenArm v2's link1 / link2 against the
  body and base, 12-33 mm apart, proved no state free without it);
- the query runs in a compiled kernel (``rob_twin.planners.free_filter_kernel``, numba) state
  by state with the same bounds and comparisons, stopping at the first pair not cleared;
  ``proven_free_numpy`` (batched numpy) is the reference, and the only path where numba
  does not import. Both prove free exactly the same states (tests/test_free_filter_kernel.py).

Soundness rests on the enclosures (each tested against random points inside every geom
kind, tests/test_free_filter.py) and on the kinematics equalling
MuJoCo's (tested to 1e-12 m); ``TOLERANCE_M`` (1 um) absorbs rounding. The property test draws
random states and holds every proven-free state against the exact distance of every
checked pair (``mj_geomDistance``). Joints other than hinge and slide in a moving frame's
body, or a moving plane / height field, make the filter unavailable (``build`` returns None).

Units: metres, radians.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

try:  # the compiled kernel; without numba, the numpy path answers alone
    from rob_twin.planners import free_filter_kernel as _kernel
except ImportError:
    _kernel = None

TOLERANCE_M = 1e-6  # cleared only beyond margin + this [m]: rounding, MuJoCo's own tolerances
SPHERE_HALF_M = 0.02  # target half size of a box cell enclosed by one fine sphere [m]
SLICE_HALF_M = 0.01  # target half height of a capsule / cylinder slice [m]
MAX_SPHERES_PER_GEOM = 48
TABLE_SLACK_M = 1e-3  # aimed most motion of a tabulated pair within a bin, per joint [m]
TABLE_BINS_1D, TABLE_DEPTH_1D = 512, 4  # most bins of a one-joint table; halvings
TABLE_BINS_2D, TABLE_DEPTH_2D = 128, 3  # most bins per joint of a two-joint table; alike
_BIG_M = 1e3  # half size of the box that stands for a plane's half-space [m]
_T = mujoco.mjtGeom
_UNTABULATED = (int(_T.mjGEOM_PLANE), int(_T.mjGEOM_HFIELD), int(_T.mjGEOM_SDF))
_EXACT = (int(_T.mjGEOM_SPHERE), int(_T.mjGEOM_CAPSULE), int(_T.mjGEOM_BOX))
_HINGE, _SLIDE = int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)


def _mesh_box(model: mujoco.MjModel, g: int) -> tuple[np.ndarray, np.ndarray]:
    """(centre, half sizes) of the box of a mesh geom's vertices, in the geom's frame."""
    mid = int(model.geom_dataid[g])
    start, count = int(model.mesh_vertadr[mid]), int(model.mesh_vertnum[mid])
    v = model.mesh_vert[start : start + count].astype(float)
    lo, hi = v.min(axis=0), v.max(axis=0)
    return 0.5 * (lo + hi), 0.5 * (hi - lo)


def _grid(center: np.ndarray, half: np.ndarray, cell_half: float):
    """Centres and the common radius of a grid of equal cells covering the box."""
    counts = np.maximum(1, np.ceil(half / cell_half - 1e-9)).astype(int)
    while int(np.prod(counts)) > MAX_SPHERES_PER_GEOM:
        cell_half *= 1.25
        counts = np.maximum(1, np.ceil(half / cell_half - 1e-9)).astype(int)
    h = half / counts
    axes = [(-half[i] + h[i] * (2 * np.arange(counts[i]) + 1)) for i in range(3)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    radius = float(np.linalg.norm(h))
    return center + grid, np.full(len(grid), radius)


def _slices(half_length: float, radius: float, cell_half: float, capsule: bool):
    """Spheres along z enclosing a cylinder (or capsule) of ``radius`` and ``half_length``."""
    n = max(1, math.ceil(half_length / cell_half - 1e-9))
    n = min(n, MAX_SPHERES_PER_GEOM)
    hz = half_length / n
    z = -half_length + hz * (2 * np.arange(n) + 1)
    r = radius + hz if capsule else math.hypot(radius, hz)
    centers = np.zeros((n, 3))
    centers[:, 2] = z
    return centers, np.full(n, r)


def geom_spheres(
    model: mujoco.MjModel,
    g: int,
    cell_half: float = SPHERE_HALF_M,
    slice_half: float = SLICE_HALF_M,
) -> tuple[np.ndarray, np.ndarray] | None:
    """Spheres (centres (k, 3) in the geom's frame [m], radii (k,) [m]) whose union holds
    every point of geom ``g`` as MuJoCo collides it; None for a plane, height field or SDF."""
    kind, size = int(model.geom_type[g]), model.geom_size[g].astype(float)
    if kind == _T.mjGEOM_SPHERE:
        return np.zeros((1, 3)), np.array([size[0]])
    if kind == _T.mjGEOM_CAPSULE:
        return _slices(size[1], size[0], slice_half, capsule=True)
    if kind == _T.mjGEOM_CYLINDER:
        return _slices(size[1], size[0], slice_half, capsule=False)
    if kind in (_T.mjGEOM_BOX, _T.mjGEOM_ELLIPSOID):
        return _grid(np.zeros(3), size[:3], cell_half)
    if kind == _T.mjGEOM_MESH:
        center, half = _mesh_box(model, g)
        return _grid(center, half, cell_half)
    return None


def geom_segment(model: mujoco.MjModel, g: int) -> tuple[np.ndarray, np.ndarray, float, bool]:
    """A capsule holding geom ``g``: segment ends (2 x (3,)) in the geom's frame, radius [m],
    and whether it is the geom itself (a capsule or a sphere). A cylinder's is its own axis
    and radius; a box's, an ellipsoid's (by its box) and a mesh's (by its vertices' box)
    runs along the box's longest axis with the radius of the box's cross-section corner."""
    kind, size = int(model.geom_type[g]), model.geom_size[g].astype(float)
    if kind == _T.mjGEOM_SPHERE:
        return np.zeros(3), np.zeros(3), float(size[0]), True
    if kind in (_T.mjGEOM_CAPSULE, _T.mjGEOM_CYLINDER):
        h = np.array([0.0, 0.0, size[1]])
        return -h, h, float(size[0]), kind == _T.mjGEOM_CAPSULE
    if kind == _T.mjGEOM_MESH:
        center, half = _mesh_box(model, g)
    else:
        center, half = np.zeros(3), size[:3].copy()
    axis = int(np.argmax(half))
    h = np.zeros(3)
    h[axis] = half[axis]
    rest = np.delete(half, axis)
    return center - h, center + h, float(np.hypot(rest[0], rest[1])), False


def segment_distance(p1, q1, p2, q2) -> np.ndarray:
    """Distance [m] between segments p1-q1 and p2-q2 (rows of (K, 3) arrays): the clamped
    closest points of the two lines (Ericson, Real-Time Collision Detection, 5.1.9)."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a = np.einsum("kj,kj->k", d1, d1)
    e = np.einsum("kj,kj->k", d2, d2)
    f = np.einsum("kj,kj->k", d2, r)
    c = np.einsum("kj,kj->k", d1, r)
    b = np.einsum("kj,kj->k", d1, d2)
    eps = 1e-18
    a_ok, e_ok = a > eps, e > eps
    safe_a, safe_e = np.where(a_ok, a, 1.0), np.where(e_ok, e, 1.0)
    denom = a * e - b * b
    s = np.where(
        denom > eps * np.maximum(a * e, eps), (b * f - c * e) / np.where(denom > 0, denom, 1.0), 0.0
    )
    s = np.clip(s, 0.0, 1.0)
    t = (b * s + f) / safe_e
    low, high = t < 0.0, t > 1.0
    t = np.clip(t, 0.0, 1.0)
    s = np.where(low, np.clip(-c / safe_a, 0.0, 1.0), s)
    s = np.where(high, np.clip((b - c) / safe_a, 0.0, 1.0), s)
    # degenerate ends: a point against a segment, or two points
    s = np.where(a_ok, s, 0.0)
    t = np.where(e_ok, np.where(a_ok, t, np.clip(f / safe_e, 0.0, 1.0)), 0.0)
    s = np.where(a_ok & ~e_ok, np.clip(-c / safe_a, 0.0, 1.0), s)
    gap = (p1 + d1 * s[:, None]) - (p2 + d2 * t[:, None])
    return np.sqrt(np.einsum("kj,kj->k", gap, gap))


def static_shape(model: mujoco.MjModel, g: int) -> tuple[np.ndarray, np.ndarray, float]:
    """A rounded box enclosing geom ``g`` in its own frame: (centre offset (3,), half sizes
    (3,), rounding radius) [m]; every point of the geom is within the rounding of the box."""
    kind, size = int(model.geom_type[g]), model.geom_size[g].astype(float)
    if kind == _T.mjGEOM_SPHERE:
        return np.zeros(3), np.zeros(3), float(size[0])
    if kind == _T.mjGEOM_CAPSULE:
        return np.zeros(3), np.array([0.0, 0.0, size[1]]), float(size[0])
    if kind == _T.mjGEOM_CYLINDER:
        return np.zeros(3), np.array([size[0], size[0], size[1]]), 0.0
    if kind in (_T.mjGEOM_BOX, _T.mjGEOM_ELLIPSOID):
        return np.zeros(3), size[:3].copy(), 0.0
    if kind == _T.mjGEOM_MESH:
        center, half = _mesh_box(model, g)
        return center, half, 0.0
    if kind == _T.mjGEOM_PLANE:  # the half-space z <= 0 of the plane's frame
        return np.array([0.0, 0.0, -_BIG_M]), np.full(3, _BIG_M), 0.0
    aabb = model.geom_aabb[g].astype(float)  # height field, SDF: MuJoCo's own box
    return aabb[:3].copy(), aabb[3:].copy() + 1e-6, 0.0


def _z_frame(axis: np.ndarray) -> np.ndarray:
    """A rotation whose third column is the unit vector ``axis``."""
    a = axis / np.linalg.norm(axis)
    helper = np.array([1.0, 0.0, 0.0]) if abs(a[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, a)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(a, x), a])


class FreeSpaceFilter:
    """The filter of one session: moving arms' joints at qpos addresses ``index`` (stacked
    order), everything else at ``reference_qpos``; ``checked``: the session's ngeom x ngeom
    pairs; ``margin_m``: the clearance a cleared pair must exceed. Build with ``build``."""

    def __init__(self) -> None:
        self.margin_m = 0.0
        self.states = 0  # states asked about
        self.proven = 0  # of them proven free

    # ------------------------------------------------------------------ building
    @classmethod
    def build(
        cls,
        model: mujoco.MjModel,
        reference_qpos: np.ndarray,
        index: np.ndarray,
        checked: np.ndarray,
        margin_m: float,
        cell_half: float = SPHERE_HALF_M,
    ) -> FreeSpaceFilter | None:
        """The filter, or None when the model has what it cannot bound (see the module)."""
        self = cls()
        self.margin_m = float(margin_m)
        d = mujoco.MjData(model)
        d.qpos[:] = reference_qpos
        mujoco.mj_kinematics(model, d)
        if not self._frames(model, d, np.asarray(index, int)):
            return None
        active = (model.geom_contype | model.geom_conaffinity) != 0
        frame_of_geom = self.frame_of_body[model.geom_bodyid]
        moving = np.flatnonzero((frame_of_geom >= 0) & active)
        relevant = checked & active[:, None] & active[None, :]
        partners = np.flatnonzero(relevant[moving].any(axis=0))
        statics = np.array([g for g in partners if frame_of_geom[g] < 0], int)
        if not self._moving_spheres(model, d, moving, frame_of_geom, cell_half):
            return None
        self._static_shapes(model, d, statics)
        relevant = self._drop_rigid_pairs(model, d, relevant, moving)
        self._pairs(relevant, moving, statics)
        self._tables(model, d, relevant, moving, np.asarray(index, int))
        self.kernel = None if _kernel is None else _kernel.Kernel(self)
        return self

    def _drop_rigid_pairs(self, model, d, relevant, moving) -> np.ndarray:
        """``relevant`` less the pairs of two moving geoms on one frame (no moving joint
        between them: their distance never changes) that MuJoCo's ``mj_geomDistance`` puts
        beyond the margin at the reference; such a pair nearer than that stays (no state is
        free then, and the filter proves none)."""
        out = relevant.copy()
        limit = self.margin_m + TOLERANCE_M
        frame = self.frame_of_body[model.geom_bodyid]
        self.rigid_pairs_dropped = 0
        for i, g in enumerate(moving):
            for h in moving[i + 1 :]:
                if not out[g, h] or frame[g] != frame[h]:
                    continue
                if mujoco.mj_geomDistance(model, d, int(g), int(h), limit + 1.0, None) > limit:
                    out[g, h] = out[h, g] = False
                    self.rigid_pairs_dropped += 1
        return out

    def _frames(self, model: mujoco.MjModel, d: mujoco.MjData, index: np.ndarray) -> bool:
        """One frame per body with a moving joint (a frame whose z axis is the joint axis, at
        the joint's anchor), in tree order, each with its parent frame and the constant
        transform from it at the reference."""
        col_of_adr = {int(a): k for k, a in enumerate(index)}
        frame_of_body = np.full(model.nbody, -1, int)
        bodies, cols, kinds, parents = [], [], [], []
        rots, poss, ranges = [], [], []
        for b in range(1, model.nbody):
            parent = int(model.body_parentid[b])
            frame_of_body[b] = frame_of_body[parent]
            start, count = int(model.body_jntadr[b]), int(model.body_jntnum[b])
            joints = range(start, start + count)
            moving = [j for j in joints if int(model.jnt_qposadr[j]) in col_of_adr]
            if not moving:
                continue
            if count != 1 or int(model.jnt_type[moving[0]]) not in (_HINGE, _SLIDE):
                return False
            j = moving[0]
            rot = d.xmat[b].reshape(3, 3) @ _z_frame(model.jnt_axis[j].astype(float))
            pos = d.xanchor[j].copy()
            bodies.append(b)
            cols.append(col_of_adr[int(model.jnt_qposadr[j])])
            kinds.append(int(model.jnt_type[j]))
            ranges.append(model.jnt_range[j] if model.jnt_limited[j] else (np.nan, np.nan))
            parents.append(int(frame_of_body[parent]))
            rots.append(rot)
            poss.append(pos)
            frame_of_body[b] = len(bodies) - 1
        n = len(bodies)
        self.frame_of_body = frame_of_body
        self.frame_rot_ref = np.array(rots).reshape(n, 3, 3)
        self.frame_pos_ref = np.array(poss).reshape(n, 3)
        self.frame_col = np.array(cols, int)
        self.frame_slide = np.array([k == _SLIDE for k in kinds], bool)
        parent = np.array(parents, int)
        self.frame_parent = parent
        self.frame_range = np.array(ranges, float).reshape(n, 2)  # NaN: unlimited
        self.q_ref = np.array([d.qpos[a] for a in index], float)
        # constant transform from the parent frame (or the world) to the frame, at reference
        d_rot = np.empty((n, 3, 3))
        d_pos = np.empty((n, 3))
        for f in range(n):
            p = parent[f]
            if p < 0:
                d_rot[f], d_pos[f] = self.frame_rot_ref[f], self.frame_pos_ref[f]
            else:
                rp = self.frame_rot_ref[p]
                d_rot[f] = rp.T @ self.frame_rot_ref[f]
                d_pos[f] = rp.T @ (self.frame_pos_ref[f] - self.frame_pos_ref[p])
        depth = np.zeros(n, int)
        for f in range(n):
            depth[f] = 0 if parent[f] < 0 else depth[parent[f]] + 1
        self.d_rot, self.d_pos = d_rot, d_pos
        self.levels = (
            [(np.flatnonzero(depth == k), parent[depth == k]) for k in range(int(depth.max()) + 1)]
            if n
            else []
        )
        self.n_frames = n
        return True

    def _moving_spheres(self, model, d, moving, frame_of_geom, cell_half) -> bool:
        """Fine spheres and one bounding sphere per moving geom, in their frame's coordinates
        at the reference."""
        centers, radii, owner, in_geom = [], [], [], []
        seg_a, seg_b, seg_radius, seg_exact = [], [], [], []
        self.geom_center = np.zeros((len(moving), 3))
        self.geom_radius = np.zeros(len(moving))
        self.geom_frame = np.zeros(len(moving), int)
        for k, g in enumerate(moving):
            got = geom_spheres(model, int(g), cell_half)
            if got is None:
                return False
            c_geom, r = got
            f = int(frame_of_geom[g])
            rf, pf = self.frame_rot_ref[f], self.frame_pos_ref[f]
            gx, gm = d.geom_xpos[g], d.geom_xmat[g].reshape(3, 3)
            c_frame = (gx + c_geom @ gm.T - pf) @ rf  # R_f^T (x - p_f), row-wise
            centers.append(c_frame)
            in_geom.append(c_geom)
            radii.append(r)
            owner.append(np.full(len(r), k))
            mid = 0.5 * (c_frame.min(axis=0) + c_frame.max(axis=0))
            self.geom_center[k] = mid
            self.geom_radius[k] = float(np.max(np.linalg.norm(c_frame - mid, axis=1) + r))
            self.geom_frame[k] = f
            ends_a, ends_b, seg_r, exact = geom_segment(model, int(g))
            seg_a.append((gx + gm @ ends_a - pf) @ rf)
            seg_b.append((gx + gm @ ends_b - pf) @ rf)
            seg_radius.append(seg_r)
            seg_exact.append(exact)
        self.seg_a = np.array(seg_a).reshape(-1, 3)
        self.seg_b = np.array(seg_b).reshape(-1, 3)
        self.seg_radius = np.array(seg_radius, float)
        self.seg_exact = np.array(seg_exact, bool)
        self.moving_geoms = np.asarray(moving, int)
        self.sphere_center = np.concatenate(centers) if centers else np.zeros((0, 3))
        self.sphere_radius = np.concatenate(radii) if radii else np.zeros(0)
        self.sphere_in_geom = np.concatenate(in_geom) if in_geom else np.zeros((0, 3))
        self.sphere_geom = np.concatenate(owner) if owner else np.zeros(0, int)
        self.sphere_frame = self.geom_frame[self.sphere_geom]
        return True

    def _static_shapes(self, model, d, statics) -> None:
        n = len(statics)
        self.static_geoms = statics
        self.static_pos = np.zeros((n, 3))
        self.static_rot = np.zeros((n, 3, 3))
        self.static_half = np.zeros((n, 3))
        self.static_round = np.zeros(n)
        for k, g in enumerate(statics):
            offset, half, rounding = static_shape(model, int(g))
            gm = d.geom_xmat[g].reshape(3, 3)
            self.static_pos[k] = d.geom_xpos[g] + gm @ offset
            self.static_rot[k] = gm
            self.static_half[k] = half
            self.static_round[k] = rounding

    def _pairs(self, relevant: np.ndarray, moving: np.ndarray, statics: np.ndarray) -> None:
        """The checked pairs at three levels: frame bounds, geom bounds, fine spheres.

        Points (all attached to frames): one sphere per frame holding its geoms' spheres,
        one per geom, then the fine spheres. Static pairs: frame x static as a dense mask,
        then per (frame, static) its checked geoms, then per geom its fine spheres. Moving
        pairs: a list of frame pairs, per frame pair its checked geom pairs, per geom pair
        its fine sphere pairs."""
        nf, ng = self.n_frames, len(moving)
        frame_center = np.zeros((nf, 3))
        frame_radius = np.full(nf, -1.0)
        for f in range(nf):
            mine = np.flatnonzero(self.geom_frame == f)
            if mine.size == 0:
                continue
            c = self.geom_center[mine]
            lo = (c - self.geom_radius[mine, None]).min(axis=0)
            hi = (c + self.geom_radius[mine, None]).max(axis=0)
            frame_center[f] = 0.5 * (lo + hi)
            frame_radius[f] = float(
                np.max(np.linalg.norm(c - frame_center[f], axis=1) + self.geom_radius[mine])
            )
        nk = len(self.sphere_radius)
        self.point_local = np.concatenate(
            [frame_center, self.geom_center, self.sphere_center, self.seg_a, self.seg_b]
        )
        self.point_frame = np.concatenate(
            [np.arange(nf), self.geom_frame, self.sphere_frame, self.geom_frame, self.geom_frame]
        ).astype(int)
        self.point_radius = np.concatenate(
            [frame_radius, self.geom_radius, self.sphere_radius, np.zeros(2 * ng)]
        )
        self.seg_point = np.stack(
            [nf + ng + nk + np.arange(ng), nf + 2 * ng + nk + np.arange(ng)], 1
        )
        geom_point = nf + np.arange(ng)
        fine_point = nf + ng + np.arange(len(self.sphere_radius))
        counts = np.bincount(self.sphere_geom, minlength=ng)
        fine_start = np.concatenate([[0], np.cumsum(counts)]).astype(int)
        fine_of = [fine_point[fine_start[i] : fine_start[i + 1]] for i in range(ng)]
        # static side
        ns = len(statics)
        self.n_statics = ns
        rel = relevant[np.ix_(moving, statics)] if ns else np.zeros((ng, 0), bool)
        self.fs_mask = np.zeros((nf, ns), bool)
        geoms_of_fs: list[np.ndarray] = []
        for f in range(nf):
            for k in range(ns):
                gs = np.flatnonzero((self.geom_frame == f) & rel[:, k])
                self.fs_mask[f, k] = gs.size > 0
                geoms_of_fs.append(geom_point[gs])
        self.fs_geoms = _csr(geoms_of_fs)  # by f * ns + k: geom points
        self.geom_fine = _csr(fine_of)  # by geom index: fine sphere points
        if ns:
            self.static_rcat = np.concatenate(list(self.static_rot), axis=1)  # (3, 3S)
            self.static_off = np.einsum("sj,sjk->sk", self.static_pos, self.static_rot).ravel()
        # moving side
        pairs_of: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for i, g in enumerate(moving):
            for j in range(i + 1, ng):
                if relevant[g, moving[j]]:
                    fa, fb = sorted((int(self.geom_frame[i]), int(self.geom_frame[j])))
                    pairs_of.setdefault((fa, fb), []).append((i, j))
        keys = sorted(pairs_of)
        self.ff = np.array(keys, int).reshape(-1, 2)
        geom_pairs = [pairs_of[k] for k in keys]
        flat = [p for block in geom_pairs for p in block]
        self.gg = np.array(flat, int).reshape(-1, 2)  # geom indices
        sizes = [len(b) for b in geom_pairs]
        self.ff_start = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        fine_pairs = [
            np.stack(np.meshgrid(fine_of[i], fine_of[j], indexing="ij"), -1).reshape(-1, 2)
            for i, j in flat
        ]
        self.gg_fine, self.gg_start = _concat(fine_pairs)
        self._sort_points_by_frame(nf, ng)

    def _sort_points_by_frame(self, nf: int, ng: int) -> None:
        """Store the points frame by frame (one matrix product per frame) and renumber every
        index list accordingly."""
        perm = np.argsort(self.point_frame, kind="stable")
        inv = np.empty_like(perm)
        inv[perm] = np.arange(perm.size)
        self.point_local = self.point_local[perm]
        self.point_local_h = np.concatenate([self.point_local, np.ones((perm.size, 1))], axis=1)[
            :, :, None
        ]
        self.point_frame = self.point_frame[perm]
        self.point_radius = self.point_radius[perm]
        self.frame_point = inv[:nf]
        self.fine_point = inv[nf + ng : nf + ng + len(self.sphere_radius)]
        self.geom_of_point = np.full(perm.size, -1, int)
        self.geom_of_point[inv[nf : nf + ng]] = np.arange(ng)
        self.fs_geoms = (self.fs_geoms[0], inv[self.fs_geoms[1]])
        self.geom_fine = (self.geom_fine[0], inv[self.geom_fine[1]])
        self.seg_point = inv[self.seg_point].reshape(-1, 2)
        self.gg_fine = inv[self.gg_fine].reshape(-1, 2)

    def _chain(self, f: int) -> list[int]:
        """Frame ``f`` and its ancestors, nearest first (empty for the world, -1)."""
        out = []
        while f >= 0:
            out.append(int(f))
            f = int(self.frame_parent[f])
        return out

    def _reach(self, i: int, p: int) -> float:
        """Largest distance [m] from frame ``p``'s joint axis (its z axis) of any point of
        moving geom ``i`` (whose frame is ``p`` or below it, with hinges between): a point
        ``x = o + y`` (``o`` the origin of the frame below ``p``, constant in ``p``'s
        coordinates) is at most ``|o_xy| + |y|`` from the axis."""
        f = int(self.geom_frame[i])
        mine = self.sphere_geom == i  # its fine spheres, in its frame's coordinates
        c, r = self.sphere_center[mine], self.sphere_radius[mine]
        if f == p:
            return float(np.max(np.hypot(c[:, 0], c[:, 1]) + r))
        out = float(np.max(np.linalg.norm(c, axis=1) + r))
        while int(self.frame_parent[f]) != p:
            out += float(np.linalg.norm(self.d_pos[f]))
            f = int(self.frame_parent[f])
        return out + float(np.hypot(self.d_pos[f][0], self.d_pos[f][1]))

    def _tables(self, model, d, relevant, moving, index) -> None:
        """Joint-space distance tables of the pairs whose relative pose depends on one or two
        moving hinges (a link against its neighbours, the first links against the body).

        Over a grid of bins of those joints' ranges, a bin's entry is a lower bound of the
        pair's distance [m] anywhere in it: ``mj_geomDistance`` at the bin's centre less the
        most the pair can move within the bin (per hinge, half the bin's width times the
        moving geom's reach from the hinge's axis: chord <= arc, and distance is
        1-Lipschitz). Bins are first coarse; a coarse bin not beyond the margin is measured
        again bin by bin (the larger of the two bounds stays). A tabulated pair is cleared
        when its bin's entry exceeds margin + ``TOLERANCE_M``; else (or outside the table's
        range) the geometric levels go on. A pair whose geometric bound is exact (two
        capsules or spheres; a capsule or sphere against a static sphere, capsule or box)
        has no table."""
        ng, ns, nf = len(moving), self.n_statics, self.n_frames
        limit = self.margin_m + TOLERANCE_M
        self.gg_table = np.full(len(self.gg), -1, int)
        self.gs_table = np.full((ng, ns), -1, int)
        chains = [self._chain(f) for f in range(nf)]
        ok = ~self.frame_slide & np.isfinite(self.frame_range).all(axis=1)
        groups: dict[tuple[int, ...], list] = {}

        def add(path, i, j, target):
            """Pair of moving geom ``i`` and geom ``j`` (moving index, or ~static index)."""
            if not 1 <= len(path) <= 2 or not all(ok[p] for p in path):
                return
            if j < 0 and int(model.geom_type[self.static_geoms[~j]]) in _UNTABULATED:
                return
            if self.seg_exact[i] and (
                self.seg_exact[j] if j >= 0 else model.geom_type[self.static_geoms[~j]] in _EXACT
            ):
                return
            rho = []
            for p in path:
                below = i if p in chains[int(self.geom_frame[i])] else j
                rho.append(self._reach(below, p))
            ga = int(moving[i])
            gb = int(self.static_geoms[~j]) if j < 0 else int(moving[j])
            groups.setdefault(tuple(sorted(path)), []).append((ga, gb, np.array(rho), target))

        for e, (i, j) in enumerate(self.gg):
            ca, cb = chains[int(self.geom_frame[i])], chains[int(self.geom_frame[j])]
            add([f for f in ca if f not in cb] + [f for f in cb if f not in ca], i, j, ("m", e))
        for i in range(ng):
            for k in range(ns):
                if relevant[moving[i], self.static_geoms[k]]:
                    add(chains[int(self.geom_frame[i])], i, ~k, ("s", i, k))
        cols, los, his, ns_, offs, lbs = [], [], [], [], [], []
        total = 0
        for path, pairs in groups.items():
            rho = np.max([r for _, _, r, _ in pairs], axis=0)
            lo, hi = self.frame_range[list(path), 0], self.frame_range[list(path), 1]
            depth = TABLE_DEPTH_1D if len(path) == 1 else TABLE_DEPTH_2D
            most = TABLE_BINS_1D if len(path) == 1 else TABLE_BINS_2D
            want = np.clip(np.ceil(rho * (hi - lo) / (2 * TABLE_SLACK_M)), 1, most)
            coarse = np.ceil(want / 2**depth).astype(int)
            n = coarse * 2**depth
            lb = self._measure(model, d, index, path, lo, hi, coarse, depth, pairs, limit)
            for (_, _, _, target), table in zip(pairs, lb, strict=True):
                if target[0] == "m":
                    self.gg_table[target[1]] = len(cols)
                else:
                    self.gs_table[target[1], target[2]] = len(cols)
                c = [int(self.frame_col[p]) for p in path]
                if len(path) == 1:  # a second axis of one bin, reading the same joint
                    c, lo2, hi2, n2 = c * 2, np.r_[lo, lo], np.r_[hi, hi], np.r_[n, 1]
                else:
                    lo2, hi2, n2 = lo, hi, n
                cols.append(c)
                los.append(lo2)
                his.append(hi2)
                ns_.append(n2)
                offs.append(total)
                lbs.append(table.ravel())
                total += table.size
        t = len(cols)
        self.tab_col = np.array(cols, np.int64).reshape(t, 2)
        self.tab_lo = np.array(los, float).reshape(t, 2)
        self.tab_hi = np.array(his, float).reshape(t, 2)
        self.tab_n = np.array(ns_, np.int64).reshape(t, 2)
        self.tab_inv = np.where(self.tab_n > 1, self.tab_n / (self.tab_hi - self.tab_lo), 0.0)
        self.tab_off = np.array(offs, np.int64)
        lb = np.concatenate(lbs) if lbs else np.zeros(0)
        low = lb.astype(np.float32)  # half the memory, each entry rounded down
        up = low.astype(float) > lb
        low[up] = np.nextafter(low[up], np.float32(-np.inf))
        self.tab_lb = low
        d.qpos[index] = self.q_ref
        mujoco.mj_kinematics(model, d)

    def _measure(self, model, d, index, path, lo, hi, coarse, depth, pairs, limit) -> list:
        """Each pair's table (``coarse * 2**depth`` bins of ``path``'s joints over [lo, hi])
        of distance lower bounds [m] (``_tables``): the coarse bins measured, then a bin not
        beyond the limit for some pair halved along each joint and measured again for those
        pairs, ``depth`` times; every bin keeps the largest bound of the bins holding it."""
        adr = index[self.frame_col[list(path)]]
        rho = np.array([r for _, _, r, _ in pairs])  # (pairs, len(path))
        n = coarse * 2**depth
        table = np.full((len(pairs), *n), -np.inf)
        todo = [(np.array(c), np.arange(len(pairs))) for c in np.ndindex(*coarse)]
        for level in range(depth + 1):
            width = (hi - lo) / (coarse * 2**level)
            slack = rho @ (width / 2)
            span = 2 ** (depth - level)  # fine bins per bin of this level, per joint
            nxt = []
            for cell, act in todo:
                d.qpos[adr] = lo + (cell + 0.5) * width
                mujoco.mj_kinematics(model, d)
                block = tuple(slice(c * span, (c + 1) * span) for c in cell)
                still = []
                for p in act:
                    ga, gb = pairs[p][0], pairs[p][1]
                    v = mujoco.mj_geomDistance(model, d, ga, gb, limit + slack[p] + 0.05, None)
                    v -= slack[p]
                    view = table[(p, *block)]
                    np.maximum(view, v, out=view)
                    if v <= limit:
                        still.append(p)
                if still and level < depth:
                    for sub in np.ndindex(*([2] * len(path))):
                        nxt.append((cell * 2 + np.array(sub), np.array(still)))
            todo = nxt
        return list(table)

    def _table_clear(self, q: np.ndarray, rows: np.ndarray, tabs: np.ndarray, limit: float):
        """Whether table ``tabs`` (K,; -1: none, False) clears its pair at states ``q[rows]``."""
        out = np.zeros(len(tabs), bool)
        listed = tabs >= 0
        if listed.any():
            out[listed] = self._table_lookup(q, rows[listed], tabs[listed], limit)
        return out

    def _table_lookup(self, q, rows, tabs, limit):
        col = self.tab_col[tabs]
        x = np.stack([q[rows, col[:, 0]], q[rows, col[:, 1]]], axis=1)  # (K, 2)
        lo, hi, n = self.tab_lo[tabs], self.tab_hi[tabs], self.tab_n[tabs]
        inside = ((x >= lo) & (x <= hi)).all(axis=1)
        i = np.clip(np.floor((x - lo) * self.tab_inv[tabs]), 0, n - 1).astype(np.int64)
        i[~inside] = 0
        lb = self.tab_lb[self.tab_off[tabs] + i[:, 0] * n[:, 1] + i[:, 1]]
        return inside & (lb > limit)

    # ------------------------------------------------------------------ queries
    def frames(self, states: np.ndarray) -> np.ndarray:
        """Homogeneous transforms (N, F, 4, 4) of every frame at each state."""
        q = np.asarray(states, float)
        n = q.shape[0]
        delta = q[:, self.frame_col] - self.q_ref[self.frame_col]  # (N, F)
        slide = self.frame_slide
        c, s = np.cos(delta), np.sin(delta)
        if slide.any():
            c[:, slide], s[:, slide] = 1.0, 0.0
        c, s = c[..., None], s[..., None]
        dr = self.d_rot
        # the constant transform, then the joint's motion about (along) the frame's z axis
        m = np.empty((n, self.n_frames, 4, 4))
        m[..., :3, 0] = dr[..., 0] * c + dr[..., 1] * s
        m[..., :3, 1] = dr[..., 1] * c - dr[..., 0] * s
        m[..., :3, 2] = dr[..., 2]
        m[..., :3, 3] = self.d_pos
        if slide.any():
            m[..., :3, 3] += dr[..., 2] * np.where(slide, delta, 0.0)[..., None]
        m[..., 3, :] = (0.0, 0.0, 0.0, 1.0)
        for fs, parent in self.levels[1:]:  # the first level hangs from the world: m itself
            m[:, fs] = m[:, parent] @ m[:, fs]
        return m

    def points(self, states: np.ndarray) -> np.ndarray:
        """World positions (N, P, 3) [m] of every bounding sphere's centre (all at once: for
        tests and figures; ``proven_free`` computes only those it needs)."""
        t = self.frames(states)[:, self.point_frame, :3]  # (N, P, 3, 4)
        return np.einsum("npij,pj->npi", t, self.point_local_h[:, :, 0])

    def _at(self, t: np.ndarray, rows: np.ndarray, pts: np.ndarray) -> np.ndarray:
        """World positions (K, 3) of points ``pts`` at states ``rows`` (transforms ``t``)."""
        frame = t[rows, self.point_frame[pts], :3]  # (K, 3, 4)
        return np.einsum("kij,kj->ki", frame, self.point_local_h[pts, :, 0])

    def proven_free(self, states: np.ndarray) -> np.ndarray:
        """Per row of ``states`` (N, stacked joints): True when proven free, else False.

        By the compiled kernel (``rob_twin.planners.free_filter_kernel``, numba) where numba
        imports, else by ``proven_free_numpy``; both give the same answers."""
        q = np.atleast_2d(np.asarray(states, float))
        free = self.kernel(q) if self.kernel is not None else self.proven_free_numpy(q)
        self.states += q.shape[0]
        self.proven += int(free.sum())
        return free

    def proven_free_numpy(self, states: np.ndarray) -> np.ndarray:
        """``proven_free`` in numpy, states along the first axis (the reference of the
        kernel; counts nothing).

        Only the frames' bounding spheres are placed for every state; a geom's sphere is
        placed where its frame's sphere does not clear a pair, a fine sphere where its
        geom's does not; a tabulated pair (``_tables``) is looked up instead."""
        q = np.atleast_2d(np.asarray(states, float))
        n = q.shape[0]
        limit = self.margin_m + TOLERANCE_M
        t = self.frames(q)
        fp = self.frame_point
        w = np.einsum("nfij,fj->nfi", t[:, :, :3], self.point_local_h[fp, :, 0])  # (N, F, 3)
        free = np.ones(n, bool)
        radius = self.point_radius
        if self.n_statics:
            ns, nf = self.n_statics, self.n_frames
            local = (w @ self.static_rcat - self.static_off).reshape(n, nf, ns, 3)
            out = np.maximum(np.abs(local) - self.static_half, 0.0)
            dist = np.sqrt(np.einsum("nfsk,nfsk->nfs", out, out))
            dist -= self.static_round + radius[fp, None]
            rows, fi, si = np.nonzero((dist <= limit) & self.fs_mask)
            if rows.size:
                # geoms of the open (frame, static) pairs, then the fine spheres of open geoms
                rows, pts, si = _expand(self.fs_geoms, fi * ns + si, rows, si)
                tab = self.gs_table[self.geom_of_point[pts], si]
                open_ = ~self._table_clear(q, rows, tab, limit)
                rows, pts, si = rows[open_], pts[open_], si[open_]
                d = self._box_distance(self._at(t, rows, pts), si) - radius[pts]
                keep = d <= limit
                rows, geom, si = rows[keep], self.geom_of_point[pts[keep]], si[keep]
                if rows.size:
                    rows, pts, si = _expand(self.geom_fine, geom, rows, si)
                    d = self._box_distance(self._at(t, rows, pts), si) - radius[pts]
                    free[rows[d <= limit]] = False
        if len(self.ff):
            a, b = self.ff[:, 0], self.ff[:, 1]  # frame indices
            diff = w[:, a] - w[:, b]
            gap = np.sqrt(np.einsum("npk,npk->np", diff, diff))
            gap -= radius[fp[a]] + radius[fp[b]]
            gap[:, a == b] = -np.inf  # a frame against itself: to its geoms
            rows, pairs = np.nonzero((gap <= limit) & free[:, None])
            if rows.size:
                rows, entry = _expand((self.ff_start, None), pairs, rows)
                open_ = ~self._table_clear(q, rows, self.gg_table[entry], limit)
                rows, entry = rows[open_], entry[open_]
                ga, gb = self.gg[entry, 0], self.gg[entry, 1]
                sa, sb = self.seg_point[ga], self.seg_point[gb]
                gap = segment_distance(
                    self._at(t, rows, sa[:, 0]),
                    self._at(t, rows, sa[:, 1]),
                    self._at(t, rows, sb[:, 0]),
                    self._at(t, rows, sb[:, 1]),
                )
                gap -= self.seg_radius[ga] + self.seg_radius[gb]
                keep = gap <= limit
                # two capsules (or spheres) within the margin: no finer bound exists
                exact = keep & self.seg_exact[ga] & self.seg_exact[gb]
                free[rows[exact]] = False
                keep &= ~exact
                rows, entry = rows[keep], entry[keep]
                if rows.size:
                    rows, fine = _expand((self.gg_start, None), entry, rows)
                    pa, pb = self.gg_fine[fine, 0], self.gg_fine[fine, 1]
                    gap = self._gap(t, rows, pa, pb) - radius[pa] - radius[pb]
                    free[rows[gap <= limit]] = False
        return free

    def _gap(self, t: np.ndarray, rows: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        diff = self._at(t, rows, a) - self._at(t, rows, b)
        return np.sqrt(np.einsum("kj,kj->k", diff, diff))

    def _box_distance(self, points: np.ndarray, shapes: np.ndarray) -> np.ndarray:
        """Lower bound of the distance [m] from ``points`` (K, 3) to the rounded boxes
        ``shapes`` (K,) (indices of static shapes)."""
        rel = points - self.static_pos[shapes]
        local = np.einsum("kj,kji->ki", rel, self.static_rot[shapes])  # R^T rel
        out = np.maximum(np.abs(local) - self.static_half[shapes], 0.0)
        return np.sqrt(np.einsum("ki,ki->k", out, out)) - self.static_round[shapes]


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(start, start + count)`` of each (start, count)."""
    total = int(counts.sum())
    offsets = np.repeat(starts - np.cumsum(counts) + counts, counts)
    return offsets + np.arange(total)


def _csr(blocks: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(start offsets (len + 1), the blocks' values concatenated)."""
    sizes = np.array([len(b) for b in blocks], int)
    start = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    values = np.concatenate(blocks).astype(int) if blocks else np.zeros(0, int)
    return start, values


def _expand(csr, keys: np.ndarray, rows: np.ndarray, *carry: np.ndarray):
    """Each (row, key) combination expanded into one per entry of block ``key`` of ``csr``:
    (rows, entries (the block's values, or entry indices when the CSR has no values),
    *carried arrays repeated alike)."""
    start, values = csr
    counts = start[keys + 1] - start[keys]
    index = _ranges(start[keys], counts)
    out = [np.repeat(rows, counts), index if values is None else values[index]]
    return (*out, *(np.repeat(c, counts) for c in carry))


def _concat(blocks: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Blocks of (k, 2) rows concatenated, and the start of each block (len + 1)."""
    sizes = np.array([len(b) for b in blocks], int)
    start = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    rows = np.concatenate(blocks).astype(int) if blocks else np.zeros((0, 2), int)
    return rows.reshape(-1, 2), start


def exact_violations(
    model: mujoco.MjModel,
    reference_qpos: np.ndarray,
    index: np.ndarray,
    checked: np.ndarray,
    margin_m: float,
    states: np.ndarray,
) -> tuple[int, float]:
    """The judge of the property "a proven-free state is free": for each row of ``states``
    (all of them proven free by the filter), every ``checked`` pair's distance by MuJoCo's
    ``mj_geomDistance`` on ``model`` (the source model: no margins), pairs whose bounding
    spheres (``geom_rbound``) are farther apart than the margin + 1 cm skipped (their
    distance is larger). Returns (pairs found nearer than ``margin_m``, the smallest distance
    measured [m], inf when none was)."""
    d = mujoco.MjData(model)
    d.qpos[:] = reference_qpos
    g1, g2 = np.nonzero(np.triu(checked, 1))
    rb1, rb2 = model.geom_rbound[g1], model.geom_rbound[g2]
    reach = margin_m + 0.01
    bad, smallest = 0, math.inf
    for q in np.atleast_2d(states):
        d.qpos[index] = q
        mujoco.mj_kinematics(model, d)
        gap = np.linalg.norm(d.geom_xpos[g1] - d.geom_xpos[g2], axis=1) - rb1 - rb2
        # rbound 0 marks a plane: always measured
        near = np.flatnonzero((gap <= reach) | (rb1 == 0) | (rb2 == 0))
        for k in near:
            dist = mujoco.mj_geomDistance(model, d, int(g1[k]), int(g2[k]), reach, None)
            smallest = min(smallest, dist)
            if dist < margin_m:
                bad += 1
    return bad, smallest

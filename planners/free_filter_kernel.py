"""The compiled kernel of the conservative free-space filter (``rob_twin.planners.free_filter``).

``Kernel(flt)(states)`` answers ``FreeSpaceFilter.proven_free_numpy(states)`` state by state
in one numba function: the same frames, points, bounds, tables, levels and comparisons with
margin + ``TOLERANCE_M``, in the same formulas (only the order of a few floating-point sums
differs, by ~1e-16 m), so it proves free exactly the states the numpy path proves free
(tests/test_free_filter_kernel.py holds the two against each other). Per state: the
forward kinematics of every frame, the frames' spheres placed, then pair by pair (static
pairs first) each bound placed only where the one before does not clear, stopping at the
first pair not cleared; a placed point is kept for the state (a geom's fine spheres serve
all its pairs). Serial (no threads of its own) and without shared scratch state (each call
allocates its own), so callers may run it from several threads (it releases the GIL).

numba is a dependency (pyproject.toml); where it does not import, ``free_filter`` answers
with the numpy path alone. The first call in a fresh environment compiles (seconds); the
compiled code is cached next to this file (``cache=True``).

Units: metres, radians.
"""

from __future__ import annotations

import math

import numba
import numpy as np

_I, _F = np.int64, np.float64


class Kernel:
    """The compiled ``proven_free`` of one built ``FreeSpaceFilter``."""

    def __init__(self, flt) -> None:
        from rob_twin.planners.free_filter import TOLERANCE_M

        self.limit = float(flt.margin_m + TOLERANCE_M)
        ns = flt.n_statics

        def i(a):
            return np.ascontiguousarray(a, _I)

        def f(a):
            return np.ascontiguousarray(a, _F)

        self.args = (
            i(flt.frame_col),
            np.ascontiguousarray(flt.frame_slide, np.bool_),
            f(flt.q_ref),
            f(flt.d_rot).reshape(-1, 3, 3),
            f(flt.d_pos).reshape(-1, 3),
            i(flt.frame_parent),
            f(flt.point_local).reshape(-1, 3),
            i(flt.point_frame),
            f(flt.point_radius),
            i(flt.frame_point),
            f(flt.static_pos).reshape(ns, 3),
            f(flt.static_rot).reshape(ns, 3, 3),
            f(flt.static_half).reshape(ns, 3),
            f(flt.static_round),
            # the bounding sphere of each rounded box: a pair its sphere clears, its box clears
            f(np.linalg.norm(flt.static_half, axis=1) + flt.static_round),
            i(_reachable(flt)).reshape(-1, 2),
            i(flt.fs_geoms[0]),
            i(flt.fs_geoms[1]),
            i(flt.geom_of_point),
            i(flt.geom_fine[0]),
            i(flt.geom_fine[1]),
            i(flt.gs_table).reshape(-1, ns),
            i(flt.ff).reshape(-1, 2),
            i(flt.ff_start),
            i(flt.gg).reshape(-1, 2),
            i(flt.seg_point).reshape(-1, 2),
            f(flt.seg_radius),
            np.ascontiguousarray(flt.seg_exact, np.bool_),
            i(flt.gg_start),
            i(flt.gg_fine).reshape(-1, 2),
            i(flt.gg_table),
            i(flt.tab_col).reshape(-1, 2),
            f(flt.tab_lo).reshape(-1, 2),
            f(flt.tab_hi).reshape(-1, 2),
            i(flt.tab_n).reshape(-1, 2),
            f(flt.tab_inv).reshape(-1, 2),
            i(flt.tab_off),
            np.ascontiguousarray(flt.tab_lb, np.float32),
        )

    def __call__(self, states: np.ndarray) -> np.ndarray:
        q = np.ascontiguousarray(np.atleast_2d(states), _F)
        out = np.zeros(q.shape[0], np.bool_)
        _prove(q, self.limit, *self.args, out)
        return out


def _reachable(flt) -> np.ndarray:
    """The (frame, static) pairs of ``fs_mask`` that some state may bring within the limit:
    a frame's sphere stays within its chain's reach (the sum of the constant offsets up its
    chain, its centre's offset and radius [m]) of the first frame's origin, which hinges do
    not move; a pair whose box is beyond that reach + margin + 1 nm is cleared at the frame
    level by every state, so leaving it out changes no answer (with a slide in the chain,
    nothing is left out)."""
    pairs = np.argwhere(np.asarray(flt.fs_mask, bool).reshape(flt.n_frames, flt.n_statics))
    if not len(pairs) or flt.frame_slide.any():
        return pairs
    reach = np.zeros(flt.n_frames)
    root = np.zeros(flt.n_frames, int)
    for f in range(flt.n_frames):
        pt = flt.frame_point[f]
        c, acc = f, float(np.linalg.norm(flt.point_local[pt]) + flt.point_radius[pt])
        while flt.frame_parent[c] >= 0:
            acc += float(np.linalg.norm(flt.d_pos[c]))
            c = flt.frame_parent[c]
        reach[f], root[f] = acc, c
    origin = flt.d_pos[root[pairs[:, 0]]]  # a first frame's origin, in the world
    bound = flt._box_distance(origin, pairs[:, 1]) - reach[pairs[:, 0]]
    return pairs[bound <= flt.margin_m + 1e-9 + 1e-6]


@numba.njit(cache=True, nogil=True)
def _place(pt, s, stamp, w, rot, pos, point_local, point_frame):
    """World position of point ``pt`` at state ``s`` into ``w[pt]`` (once per state)."""
    if stamp[pt] == s:
        return
    stamp[pt] = s
    f = point_frame[pt]
    x, y, z = point_local[pt, 0], point_local[pt, 1], point_local[pt, 2]
    for r in range(3):
        w[pt, r] = rot[f, r, 0] * x + rot[f, r, 1] * y + rot[f, r, 2] * z + pos[f, r]


@numba.njit(cache=True, nogil=True)
def _box(w, p, k, static_pos, static_rot, static_half, static_round):
    """Lower bound [m] of the distance from point ``w[p]`` to static rounded box ``k``."""
    r0 = w[p, 0] - static_pos[k, 0]
    r1 = w[p, 1] - static_pos[k, 1]
    r2 = w[p, 2] - static_pos[k, 2]
    acc = 0.0
    for c in range(3):
        local = r0 * static_rot[k, 0, c] + r1 * static_rot[k, 1, c] + r2 * static_rot[k, 2, c]
        out = abs(local) - static_half[k, c]
        if out > 0.0:
            acc += out * out
    return math.sqrt(acc) - static_round[k]


@numba.njit(cache=True, nogil=True)
def _dist(w, i, j):
    """Distance [m] between points ``w[i]`` and ``w[j]``."""
    d0, d1, d2 = w[i, 0] - w[j, 0], w[i, 1] - w[j, 1], w[i, 2] - w[j, 2]
    return math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)


@numba.njit(cache=True, nogil=True)
def _clip01(x):
    return min(max(x, 0.0), 1.0)


@numba.njit(cache=True, nogil=True)
def _segment(w, i1, j1, i2, j2):
    """``free_filter.segment_distance`` [m] of segments ``w[i1]``-``w[j1]`` and
    ``w[i2]``-``w[j2]``."""
    d10, d11, d12 = w[j1, 0] - w[i1, 0], w[j1, 1] - w[i1, 1], w[j1, 2] - w[i1, 2]
    d20, d21, d22 = w[j2, 0] - w[i2, 0], w[j2, 1] - w[i2, 1], w[j2, 2] - w[i2, 2]
    r0, r1, r2 = w[i1, 0] - w[i2, 0], w[i1, 1] - w[i2, 1], w[i1, 2] - w[i2, 2]
    a = d10 * d10 + d11 * d11 + d12 * d12
    e = d20 * d20 + d21 * d21 + d22 * d22
    f = d20 * r0 + d21 * r1 + d22 * r2
    c = d10 * r0 + d11 * r1 + d12 * r2
    b = d10 * d20 + d11 * d21 + d12 * d22
    eps = 1e-18
    a_ok, e_ok = a > eps, e > eps
    safe_a = a if a_ok else 1.0
    safe_e = e if e_ok else 1.0
    denom = a * e - b * b
    s = 0.0
    if denom > eps * max(a * e, eps):
        s = (b * f - c * e) / (denom if denom > 0 else 1.0)
    s = _clip01(s)
    t = (b * s + f) / safe_e
    if t < 0.0:
        s = _clip01(-c / safe_a)
    elif t > 1.0:
        s = _clip01((b - c) / safe_a)
    t = _clip01(t)
    if not a_ok:
        s = 0.0
    if e_ok:
        if not a_ok:
            t = _clip01(f / safe_e)
    else:
        t = 0.0
    if a_ok and not e_ok:
        s = _clip01(-c / safe_a)
    g0 = (w[i1, 0] + d10 * s) - (w[i2, 0] + d20 * t)
    g1 = (w[i1, 1] + d11 * s) - (w[i2, 1] + d21 * t)
    g2 = (w[i1, 2] + d12 * s) - (w[i2, 2] + d22 * t)
    return math.sqrt(g0 * g0 + g1 * g1 + g2 * g2)


@numba.njit(cache=True, nogil=True)
def _table_clear(tb, q, s, limit, tab_col, tab_lo, tab_hi, tab_n, tab_inv, tab_off, tab_lb):
    """Whether table ``tb`` clears its pair at state ``s`` (``FreeSpaceFilter._table_lookup``)."""
    idx = 0
    for k in range(2):
        x = q[s, tab_col[tb, k]]
        lo, hi = tab_lo[tb, k], tab_hi[tb, k]
        if not (x >= lo and x <= hi):
            return False
        n = tab_n[tb, k]
        i = min(max(np.floor((x - lo) * tab_inv[tb, k]), 0.0), float(n - 1))
        idx = idx * n + int(i)
    return float(tab_lb[tab_off[tb] + idx]) > limit


@numba.njit(cache=True, nogil=True)
def _prove(
    q,
    limit,
    frame_col,
    frame_slide,
    q_ref,
    d_rot,
    d_pos,
    frame_parent,
    point_local,
    point_frame,
    point_radius,
    frame_point,
    static_pos,
    static_rot,
    static_half,
    static_round,
    static_bound,
    fs_pairs,
    fs_start,
    fs_vals,
    geom_of_point,
    gf_start,
    gf_vals,
    gs_table,
    ff,
    ff_start,
    gg,
    seg_point,
    seg_radius,
    seg_exact,
    gg_start,
    gg_fine,
    gg_table,
    tab_col,
    tab_lo,
    tab_hi,
    tab_n,
    tab_inv,
    tab_off,
    tab_lb,
    out,
):
    n, nf, ns = q.shape[0], frame_col.shape[0], static_pos.shape[0]
    npt = point_local.shape[0]
    rot = np.empty((nf, 3, 3))
    pos = np.empty((nf, 3))
    loc = np.empty((3, 3))
    lt = np.empty(3)
    w = np.empty((npt, 3))
    stamp = np.full(npt, -1, np.int64)
    radius = point_radius
    for s in range(n):
        # forward kinematics: the constant transform, then the joint about / along z
        for f in range(nf):
            col = frame_col[f]
            delta = q[s, col] - q_ref[col]
            c, sn = 1.0, 0.0
            if not frame_slide[f]:
                c, sn = math.cos(delta), math.sin(delta)
            for r in range(3):
                loc[r, 0] = d_rot[f, r, 0] * c + d_rot[f, r, 1] * sn
                loc[r, 1] = d_rot[f, r, 1] * c - d_rot[f, r, 0] * sn
                loc[r, 2] = d_rot[f, r, 2]
                lt[r] = d_pos[f, r]
                if frame_slide[f]:
                    lt[r] += d_rot[f, r, 2] * delta
            p = frame_parent[f]
            if p < 0:
                for r in range(3):
                    pos[f, r] = lt[r]
                    for k in range(3):
                        rot[f, r, k] = loc[r, k]
            else:
                for r in range(3):
                    pos[f, r] = (
                        rot[p, r, 0] * lt[0] + rot[p, r, 1] * lt[1] + rot[p, r, 2] * lt[2]
                    ) + pos[p, r]
                    for k in range(3):
                        rot[f, r, k] = (
                            rot[p, r, 0] * loc[0, k]
                            + rot[p, r, 1] * loc[1, k]
                            + rot[p, r, 2] * loc[2, k]
                        )
        for f in range(nf):  # the frames' spheres, placed for every state
            pt = frame_point[f]
            stamp[pt] = s
            x, y, z = point_local[pt, 0], point_local[pt, 1], point_local[pt, 2]
            for r in range(3):
                w[pt, r] = rot[f, r, 0] * x + rot[f, r, 1] * y + rot[f, r, 2] * z + pos[f, r]
        ok = True
        # static pairs: frame sphere, then the geom (table, sphere), then its fine spheres
        for m in range(fs_pairs.shape[0]):
            if not ok:
                break
            f, k = fs_pairs[m, 0], fs_pairs[m, 1]
            fp = frame_point[f]
            d0 = w[fp, 0] - static_pos[k, 0]
            d1 = w[fp, 1] - static_pos[k, 1]
            d2 = w[fp, 2] - static_pos[k, 2]
            reach = limit + radius[fp] + static_bound[k]
            if d0 * d0 + d1 * d1 + d2 * d2 > reach * reach:
                continue  # beyond the box's sphere: beyond the box
            if (
                _box(w, fp, k, static_pos, static_rot, static_half, static_round) - radius[fp]
                > limit
            ):
                continue
            key = f * ns + k
            for e in range(fs_start[key], fs_start[key + 1]):
                gp = fs_vals[e]
                gi = geom_of_point[gp]
                tb = gs_table[gi, k]
                if tb >= 0 and _table_clear(
                    tb, q, s, limit, tab_col, tab_lo, tab_hi, tab_n, tab_inv, tab_off, tab_lb
                ):
                    continue
                _place(gp, s, stamp, w, rot, pos, point_local, point_frame)
                if (
                    _box(w, gp, k, static_pos, static_rot, static_half, static_round) - radius[gp]
                    > limit
                ):
                    continue
                for e2 in range(gf_start[gi], gf_start[gi + 1]):
                    pt = gf_vals[e2]
                    _place(pt, s, stamp, w, rot, pos, point_local, point_frame)
                    d = _box(w, pt, k, static_pos, static_rot, static_half, static_round)
                    if d - radius[pt] <= limit:
                        ok = False
                        break
                if not ok:
                    break
        # moving pairs: frame spheres, then per geom pair (table, capsules, fine spheres)
        for m in range(ff.shape[0]):
            if not ok:
                break
            a, b = ff[m, 0], ff[m, 1]
            if a != b:
                pa, pb = frame_point[a], frame_point[b]
                if _dist(w, pa, pb) - (radius[pa] + radius[pb]) > limit:
                    continue
            for e in range(ff_start[m], ff_start[m + 1]):
                tb = gg_table[e]
                if tb >= 0 and _table_clear(
                    tb, q, s, limit, tab_col, tab_lo, tab_hi, tab_n, tab_inv, tab_off, tab_lb
                ):
                    continue
                ga, gb = gg[e, 0], gg[e, 1]
                a0, a1 = seg_point[ga, 0], seg_point[ga, 1]
                b0, b1 = seg_point[gb, 0], seg_point[gb, 1]
                _place(a0, s, stamp, w, rot, pos, point_local, point_frame)
                _place(a1, s, stamp, w, rot, pos, point_local, point_frame)
                _place(b0, s, stamp, w, rot, pos, point_local, point_frame)
                _place(b1, s, stamp, w, rot, pos, point_local, point_frame)
                gap = _segment(w, a0, a1, b0, b1) - (seg_radius[ga] + seg_radius[gb])
                if gap > limit:
                    continue
                if seg_exact[ga] and seg_exact[gb]:
                    ok = False
                    break
                for e2 in range(gg_start[e], gg_start[e + 1]):
                    pa, pb = gg_fine[e2, 0], gg_fine[e2, 1]
                    _place(pa, s, stamp, w, rot, pos, point_local, point_frame)
                    _place(pb, s, stamp, w, rot, pos, point_local, point_frame)
                    if _dist(w, pa, pb) - radius[pa] - radius[pb] <= limit:
                        ok = False
                        break
                if not ok:
                    break
        out[s] = ok

"""The compiled pre-check of the weak-pair judge (``rob_twin.planners.weak_judge._capped``).

Before coal is asked about a geom pair, ``_capped`` gives it the horizon (or the gap of the
bounding spheres) where a cheap bound already shows it is at least the horizon apart: the
bounding spheres' gap, and for a pair with a box, the pair's world-aligned boxes along each
world axis. In numpy that is some fifteen array operations per call, and the final check
calls it one state at a time in clutter (a MotionBenchMaker bookshelf plan: 603 calls of
one state over 534 weak pairs, 134 us each, 81 ms of the plan's 290 ms check and
certificate; simulated). ``cull`` does the same arithmetic element by element in one numba
function: the same operations in the same order on the same float64 values, so the same
bits (``tests/test_weak_judge_kernel.py`` holds it against the numpy path on random poses);
``weak_judge`` falls back to the numpy path where numba does not import.

The compiled code is cached next to this file (``cache=True``); the first call in a fresh
environment compiles it (about a second).

Units: metres.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from rob_twin.planners.free_filter_kernel import _segment


@numba.njit(cache=True, nogil=True)
def cull(
    pos: np.ndarray,
    mat: np.ndarray,
    i1: np.ndarray,
    i2: np.ndarray,
    rb1: np.ndarray,
    rb2: np.ndarray,
    plane: np.ndarray,
    box_pair: np.ndarray,
    half: np.ndarray,
    round_: np.ndarray,
    segment_pair: np.ndarray,
    seg_half: np.ndarray,
    seg_radius: np.ndarray,
    seg_cylinder: np.ndarray,
    horizon_m: float,
) -> tuple[np.ndarray, np.ndarray]:
    """(out, query), both (S, k): per state and pair, the capped lower bound [m] and whether
    coal must be asked. ``pos`` (S, G, 3) and ``mat`` (S, G, 9) the geoms' world positions
    and row-major rotations; the pair's geoms are ``i1``/``i2`` (positions among the G);
    ``rb1``/``rb2`` their bounding radii; ``plane`` a plane is involved; ``box_pair`` a box is;
    ``half`` (G, 3) a box's half sizes (0 otherwise), ``round_`` (G,) a non-box geom's
    bounding radius (nan for a box); ``segment_pair`` both geoms are spheres, capsules or
    cylinders, each within the capsule of half length ``seg_half`` and radius
    ``seg_radius`` (G,) about its z axis (``seg_cylinder``: a cylinder, whose world box is
    tighter than that capsule's)."""
    n_states, n_geoms = pos.shape[0], pos.shape[1]
    k = i1.size
    out = np.empty((n_states, k))
    query = np.zeros((n_states, k), np.bool_)
    ext = np.empty((n_geoms, 3))
    ends = np.empty((4, 3))  # a segment pair's ends, for _segment_gap
    for s in range(n_states):
        # each geom's world-aligned half extents: a box's sum_j |R_ij| h_j, else its radius
        for g in range(n_geoms):
            r = round_[g]
            if math.isnan(r):
                for i in range(3):
                    e = 0.0
                    for j in range(3):
                        e += abs(mat[s, g, 3 * i + j]) * half[g, j]
                    ext[g, i] = e
            elif seg_radius[g] > 0.0:  # the capsule about its axis, where below its sphere
                for i in range(3):
                    z = abs(mat[s, g, 3 * i + 2])
                    across = math.sqrt(max(0.0, 1.0 - z * z)) if seg_cylinder[g] else 1.0
                    e = z * seg_half[g] + seg_radius[g] * across
                    ext[g, i] = r if r < e else e
            else:
                ext[g, 0] = r
                ext[g, 1] = r
                ext[g, 2] = r
        for p in range(k):
            a, b = i1[p], i2[p]
            d0 = pos[s, a, 0] - pos[s, b, 0]
            d1 = pos[s, a, 1] - pos[s, b, 1]
            d2 = pos[s, a, 2] - pos[s, b, 2]
            sq = 0.0
            sq += d0 * d0
            sq += d1 * d1
            sq += d2 * d2
            gap = math.sqrt(sq) - rb1[p] - rb2[p]
            o = gap if gap < horizon_m else horizon_m
            q = gap < horizon_m or plane[p]
            if box_pair[p]:
                apart = abs(d0) - ext[a, 0]
                apart -= ext[b, 0]
                a1 = abs(d1) - ext[a, 1]
                a1 -= ext[b, 1]
                a2 = abs(d2) - ext[a, 2]
                a2 -= ext[b, 2]
                if a1 > apart:
                    apart = a1
                if a2 > apart:
                    apart = a2
                if apart >= horizon_m:
                    o = horizon_m
                    q = False
            if q and segment_pair[p]:
                if _segment_gap(pos, mat, seg_half, seg_radius, s, a, b, ends) >= horizon_m:
                    o = horizon_m
                    q = False
            out[s, p] = o
            query[s, p] = q
    return out, query


@numba.njit(cache=True, nogil=True)
def _segment_gap(pos, mat, seg_half, seg_radius, s: int, a: int, b: int, w) -> float:
    """The distance [m] of geoms ``a`` and ``b``'s axis segments at state ``s`` less both
    radii (``weak_judge._segment_gaps``): their ends put in ``w`` (4, 3), measured by the
    free-space filter's compiled segment distance."""
    ha, hb = seg_half[a], seg_half[b]
    for i in range(3):
        za, zb = mat[s, a, 3 * i + 2], mat[s, b, 3 * i + 2]
        w[0, i] = pos[s, a, i] - ha * za
        w[1, i] = pos[s, a, i] + ha * za
        w[2, i] = pos[s, b, i] - hb * zb
        w[3, i] = pos[s, b, i] + hb * zb
    gap = _segment(w, 0, 1, 2, 3) - seg_radius[a]
    gap -= seg_radius[b]
    return gap

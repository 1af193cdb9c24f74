"""An independent dense clearance check of a delivered plan: coal every 1 ms, every checked pair.

The plan is followed by linear interpolation of its samples (a motion within the
certificate's speed bound, so the certificate must hold along it). At every ``step_s``
(1 ms) of that motion, for every geom pair the planner checks (``GeomPairTable``'s checked
pairs of the moving arms), the true minimum clearance is found with coal. Nothing of the
planner's MuJoCo checker is used: the pair table is rebuilt from the model, geom poses
come from ``mj_kinematics`` on this check's own ``MjData``, shapes are coal shapes
(``rob_twin.planners.oracle.coal_shape``) and distances coal's GJK/EPA.

Skipping work soundly. A state is skipped for a pair only when a lower bound on the pair's
distance there is at least ``thr = max(claimed_p, min(best_p, cap) - tol)``, where
``claimed_p`` is the pair's certified value, ``best_p`` the smallest distance measured so
far and ``cap`` the measuring cap (the certificate's horizon). So no state below the
claimed value is ever skipped (counterexamples are found exactly), and the reported
minimum is within ``tol`` above the minimum over all 1 ms states (exact with ``tol=0``).
Two lower bounds are used:

- *Bounding spheres.* ``|c1 - c2| - r1 - r2`` with c the geom frame's origin and r
  MuJoCo's ``geom_rbound`` (for a plane: the other geom's height above it minus its r).
- *Motion since the last measured state.* Take a pair measured at d_k at time t_k. A
  point of geom g moves, relative to the pair's partner, only through the joints on the
  tree path between the two geoms (a joint upstream of both moves them rigidly together
  and leaves their distance unchanged); joint j moves it at speed at most
  |qd_j| R_j(g), R_j(g) the configuration-free reach of joint j's anchor to any point of
  g (``rob_twin.planners.certificate_geometry.joint_geom_radii``: triangle inequality along
  the tree; bound-checked over 10^6 configuration pairs by the ``certificate`` benchmark). With
  R_p,j = R_j(g1) for joints moving g1 only, R_j(g2) for those moving g2 only and 0
  otherwise, and s_p(t) = sum_j R_p,j TV_j(0, t) (TV: total variation of q_j along the
  piecewise-linear motion, computed exactly on the union of the 1 ms grid and the sample
  times), the distance is 1-Lipschitz in s_p:  d(t) >= d_k - (s_p(t) - s_p(t_k)).

After each coal query the sweep jumps to the first later state where both bounds fall
below ``thr``. Units: metres, seconds, radians.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import coal
import mujoco
import numpy as np
from rob_twin.planners.certificate_geometry import joint_geom_radii
from rob_twin.planners.errors import PlannerConfigError
from rob_twin.planners.geom_pairs import GeomPairTable, PairClass, joint_qpos_addresses
from rob_twin.planners.oracle import coal_shape

STEP_S = 0.001  # the dense grid [s]
TOLERANCE_M = 1e-5  # the reported minimum is at most this above the 1 ms grid's minimum [m]
COARSE = 8  # states between the sphere bounds of the coarse pass
_PLANE = int(mujoco.mjtGeom.mjGEOM_PLANE)


@dataclass(kw_only=True)
class DenseResult:
    """Per checked pair (P,): ``min_m`` the true minimum over the 1 ms states [m], capped at
    ``cap_m`` (at most ``tolerance_m`` above the exact grid minimum); ``at_s`` its time [s]
    (nan where the pair never came below the cap); ``claimed_m`` the values checked
    against. ``counterexamples``: pairs whose true minimum is below their claimed value,
    worst first, each {pair, true_min_m, claimed_m, at_s, q_rad}. ``coal_queries``: coal
    calls made; ``full_queries``: the calls a check without the motion bound would make
    (every state and pair whose bounding spheres are within the cap, over the pairs the
    coarse pass did not rule out)."""

    names: tuple[str, ...]
    g1: np.ndarray
    g2: np.ndarray
    min_m: np.ndarray
    at_s: np.ndarray
    claimed_m: np.ndarray
    cap_m: float
    tolerance_m: float
    states: int
    coal_queries: int
    full_queries: int
    counterexamples: list[dict] = field(default_factory=list)

    @property
    def true_min_m(self) -> float:
        """The smallest pair minimum [m] (the cap when no pair came below it)."""
        return float(self.min_m.min()) if self.min_m.size else self.cap_m

    @property
    def worst_pair(self) -> str:
        return self.names[int(np.argmin(self.min_m))] if self.min_m.size else ""


class DenseClearance:
    """The dense check of one model and set of moving arms (build once, check many plans).

    arms: every arm's joint names (chain order, as the planner's group has them); moving:
    the arms a plan moves; margin_m: the planner's collision margin (the pair table's
    "touching at reference" rule depends on it) [m]; reference_qpos: the full model state
    the moving arms' joints are written into (nq,)."""

    def __init__(
        self,
        model: mujoco.MjModel,
        arms: Mapping[str, Sequence[str]],
        moving: Sequence[str],
        margin_m: float,
        reference_qpos: np.ndarray,
    ):
        self.model = model
        self.data = mujoco.MjData(model)
        self.moving = tuple(moving)
        table = GeomPairTable(model, arms, margin_m)
        g1, g2 = np.nonzero(np.triu(table.checked_table(self.moving), 1))
        self.g1, self.g2 = g1, g2
        self.names = tuple(
            f"{table.geom_names[a]} vs {table.geom_names[b]} "
            f"({PairClass(int(table.table[a, b])).name.lower()})"
            for a, b in zip(g1.tolist(), g2.tolist(), strict=True)
        )
        self.index = {n: p for p, n in enumerate(self.names)}
        joints = [j for a in self.moving for j in arms[a]]
        self.qpos_index = joint_qpos_addresses(model, joints)
        self.reference = np.asarray(reference_qpos, float).copy()
        if self.reference.shape != (model.nq,):
            raise PlannerConfigError("reference_qpos shape", self.reference.shape, f"({model.nq},)")
        r = joint_geom_radii(model, joints, reference_qpos=self.reference)  # (n, ngeom)
        m1, m2 = r[:, g1] > 0, r[:, g2] > 0
        rel = np.where(m1 & ~m2, r[:, g1], 0.0) + np.where(m2 & ~m1, r[:, g2], 0.0)
        self.radii = np.ascontiguousarray(rel.T)  # (P, n)
        self.shapes = [coal_shape(model, g) for g in range(model.ngeom)]
        self._request = coal.DistanceRequest()

    # ------------------------------------------------------------------ pieces
    def grid(self, t: np.ndarray, q: np.ndarray, step_s: float = STEP_S):
        """(times (N,), states (N, n), arc (P, N)): the grid every ``step_s`` from the first
        sample (ends included), the linear interpolation there, and each pair's s_p at those
        times (see the module)."""
        t = np.asarray(t, float)
        q = np.asarray(q, float).reshape(t.size, -1)
        if not (np.isfinite(step_s) and step_s > 0):
            raise PlannerConfigError("step_s", step_s, "a finite number > 0 s")
        if t.size == 0 or q.shape[1] != self.qpos_index.size or np.any(np.diff(t) < 0):
            raise PlannerConfigError(
                "plan samples",
                (t.shape, q.shape),
                f"(M,) non-decreasing times, M >= 1, and (M, {self.qpos_index.size}) states",
            )
        dense_t = np.append(np.arange(t[0], t[-1], step_s), t[-1]) if t[-1] > t[0] else t[:1]
        states = np.column_stack([np.interp(dense_t, t, q[:, j]) for j in range(q.shape[1])])
        union = np.union1d(dense_t, t)
        uq = np.column_stack([np.interp(union, t, q[:, j]) for j in range(q.shape[1])])
        tv = np.vstack([np.zeros((1, q.shape[1])), np.cumsum(np.abs(np.diff(uq, axis=0)), 0)])
        arc_u = self.radii @ tv.T  # (P, U)
        return dense_t, states, arc_u[:, np.searchsorted(union, dense_t)]

    def poses(self, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(geom positions (N, ngeom, 3), rotations (N, ngeom, 3, 3)) at stacked states."""
        n = states.shape[0]
        pos = np.empty((n, self.model.ngeom, 3))
        rot = np.empty((n, self.model.ngeom, 3, 3))
        qpos = self.reference.copy()
        for i, x in enumerate(states):
            qpos[self.qpos_index] = x
            self.data.qpos[:] = qpos
            mujoco.mj_kinematics(self.model, self.data)
            pos[i] = self.data.geom_xpos
            rot[i] = self.data.geom_xmat.reshape(-1, 3, 3)
        return pos, rot

    def sphere_gaps(self, pos: np.ndarray, rot: np.ndarray, pairs: np.ndarray) -> np.ndarray:
        """(len(pairs), N) lower bounds on the pairs' distances from bounding spheres [m]."""
        rb = self.model.geom_rbound
        g1, g2 = self.g1[pairs], self.g2[pairs]
        gap = np.linalg.norm(pos[:, g1] - pos[:, g2], axis=-1) - rb[g1] - rb[g2]  # (N, k)
        types = self.model.geom_type
        for p in np.flatnonzero((types[g1] == _PLANE) | (types[g2] == _PLANE)):
            a, b = (int(g1[p]), int(g2[p])) if types[g1[p]] == _PLANE else (g2[p], g1[p])
            normal = rot[:, a, :, 2]  # the plane's z axis
            gap[:, p] = np.einsum("ni,ni->n", pos[:, b] - pos[:, a], normal) - rb[b]
            if types[b] == _PLANE:
                gap[:, p] = -np.inf  # two planes: no sphere bound
        return np.ascontiguousarray(gap.T)

    def distance(self, a: int, b: int, pos: np.ndarray, rot: np.ndarray, i: int) -> float:
        """coal's signed distance [m] of geoms a, b at grid state i."""
        return float(
            coal.distance(
                self.shapes[a],
                coal.Transform3s(rot[i, a], pos[i, a]),
                self.shapes[b],
                coal.Transform3s(rot[i, b], pos[i, b]),
                self._request,
                coal.DistanceResult(),
            )
        )

    # ------------------------------------------------------------------ the check
    def check(
        self,
        t: np.ndarray,
        q: np.ndarray,
        claimed_m: np.ndarray | float,
        cap_m: float,
        step_s: float = STEP_S,
        tolerance_m: float = TOLERANCE_M,
        brute: bool = False,
        reference_qpos: np.ndarray | None = None,
    ) -> DenseResult:
        """Dense check of samples ``t`` (M,) [s], ``q`` (M, n) [rad] (moving arms stacked in
        ``moving`` order) against ``claimed_m`` (per pair (P,) or one value) [m]; minima are
        capped at ``cap_m`` [m]. ``brute``: query coal at every state whose bounding spheres
        are within the threshold (no motion bound; the reference for tests);
        ``reference_qpos``: the full state the moving arms are written into (default: the
        one given at construction)."""
        if not (np.isfinite(tolerance_m) and tolerance_m >= 0):
            raise PlannerConfigError("tolerance_m", tolerance_m, "a finite number >= 0 m")
        if not (np.isfinite(cap_m) and cap_m > 0):
            raise PlannerConfigError("cap_m", cap_m, "a finite number > 0 m")
        P = self.g1.size
        claimed = np.broadcast_to(np.asarray(claimed_m, float), (P,)).copy()
        dense_t, states, arc = self.grid(t, q, step_s)
        if reference_qpos is not None:
            ref = np.asarray(reference_qpos, float)
            if ref.shape != self.reference.shape:
                raise PlannerConfigError("reference_qpos shape", ref.shape, f"({self.model.nq},)")
            self.reference = ref.copy()
        pos, rot = self.poses(states)
        # coarse pass: sphere gaps every COARSE states; between two of them the motion bound
        # from both ends gives (gap_a + gap_b - (s_b - s_a)) / 2; pairs above the threshold
        # everywhere need nothing more
        coarse = np.union1d(np.arange(0, dense_t.size, COARSE), [dense_t.size - 1])
        every = np.arange(P)
        gc = self.sphere_gaps(pos[coarse], rot[coarse], every)
        sc = arc[:, coarse]
        low = gc[:, :1] if coarse.size == 1 else (gc[:, :-1] + gc[:, 1:] - np.diff(sc, axis=1)) / 2
        thr0 = np.maximum(claimed, cap_m - tolerance_m)
        active = np.flatnonzero(np.any(low < thr0[:, None], axis=1))
        gaps = self.sphere_gaps(pos, rot, active)  # (len(active), N)
        mins, at, at_i = np.full(P, cap_m), np.full(P, np.nan), np.full(P, -1)
        queries = 0
        full = int(np.sum(gaps < cap_m))
        for row, p in enumerate(active.tolist()):
            a, b = int(self.g1[p]), int(self.g2[p])
            if self.shapes[a] is None or self.shapes[b] is None:
                raise PlannerConfigError(
                    "geom type", (self.names[p]), "a geom type coal can represent"
                )
            best = cap_m
            thr = max(claimed[p], best - tolerance_m)
            gap, s = gaps[row], arc[p]
            j, n = 0, dense_t.size
            while j < n:
                below = np.flatnonzero(gap[j:] < thr)
                if below.size == 0:
                    break
                k = j + int(below[0])
                d = self.distance(a, b, pos, rot, k)
                queries += 1
                if d < best:
                    best, at[p], at_i[p] = d, dense_t[k], k
                    thr = max(claimed[p], best - tolerance_m)
                if brute:
                    j = k + 1
                else:  # skip every later state whose motion bound d - (s - s_k) is >= thr
                    j = max(k + 1, int(np.searchsorted(s, s[k] + (d - thr), side="right")))
            mins[p] = best
        bad = np.flatnonzero(mins < claimed)
        bad = bad[np.argsort(mins[bad] - claimed[bad])]
        counter = [
            {
                "pair": self.names[p],
                "true_min_m": float(mins[p]),
                "claimed_m": float(claimed[p]),
                "at_s": float(at[p]),
                "q_rad": states[at_i[p]].tolist(),
            }
            for p in bad
        ]
        return DenseResult(
            names=self.names,
            g1=self.g1,
            g2=self.g2,
            min_m=mins,
            at_s=at,
            claimed_m=claimed,
            cap_m=float(cap_m),
            tolerance_m=float(tolerance_m),
            states=int(dense_t.size),
            coal_queries=queries,
            full_queries=full,
            counterexamples=counter,
        )

    def claimed_from_certificate(self, certificate) -> tuple[np.ndarray, list[str]]:
        """Each pair's certified value [m]: the certificate's own entry where it lists the
        pair, else its overall ``certified_min_m`` (every pair is certified to at least
        that); and the listed pair names this check does not know (should be none)."""
        claimed = np.full(self.g1.size, float(certificate.certified_min_m))
        unknown = []
        for bound in certificate.pairs:
            p = self.index.get(bound.pair)
            if p is None:
                unknown.append(bound.pair)
            else:
                claimed[p] = float(bound.certified_min_m)
        return claimed, unknown


def for_group(group, moving: Sequence[str]) -> DenseClearance:
    """The dense check of ``group``'s model, arms and reference state (moving arms given)."""
    return DenseClearance(
        group.model,
        {a: group.joint_names(a) for a in group.arm_names},
        moving,
        group.config.collision.margin_m,
        group.reference_qpos,
    )


def check_plan(
    checker: DenseClearance,
    plan,
    reference_qpos: np.ndarray | None = None,
    step_s: float = STEP_S,
    tolerance_m: float = TOLERANCE_M,
) -> DenseResult:
    """Dense check of a delivered plan against its certificate, capped at its horizon
    (``reference_qpos``: the planning group's full state, default the checker's)."""
    cert = plan.certificate
    claimed, unknown = checker.claimed_from_certificate(cert)
    if unknown:
        raise PlannerConfigError(
            "certificate pair", unknown[0], f"a checked pair of this model ({len(checker.names)})"
        )
    cap = max(float(cert.horizon_m), float(claimed.max()) if claimed.size else 0.0)
    return checker.check(
        plan.t, plan.stacked("q"), claimed, cap, step_s, tolerance_m, reference_qpos=reference_qpos
    )

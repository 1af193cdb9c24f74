"""CollisionChecker: clearance of arm configurations with mj_kinematics + mj_collision.

How the margin is enforced: the checker owns a private copy of the model in which every
geom's ``margin`` is the *horizon* (>= the clearance margin). MuJoCo's narrow phase then
reports every pair closer than the horizon as a contact with its signed distance
``dist`` (negative = penetration), so one ``mj_collision`` call gives the distances of all
near pairs: a configuration is free when no checked pair has ``dist < margin``. This is
one C call per check with MuJoCo's own broad phase, instead of one Python call per
candidate pair with ``mj_geomDistance``. The private copy also rewrites contype and
conaffinity so that pairs with no arm in them (floor-tread, table-can) are not even
generated, and enables MuJoCo's parent filter; which pair is checked is decided by the
``GeomPairTable`` (one table lookup per contact, no names).

Soundness: MuJoCo's colliders are physics colliders; ``rob_twin.planners.oracle`` proves them
against coal on the models we plan with (see tests/test_oracle.py).

A session (moving arms at a reference state) checks on a copy of the private model that
leaves out the geoms its arms can never bring within the horizon (``model_for``,
``rob_twin.planners.reach``): the same contacts of checked pairs, fewer candidates (for ROB
at home the floor and the walls, a third of each query). Copies are made once per set of
left-out geoms and shared.

Each checker keeps one MjData per model and thread (``threading.local``), shared by its
sessions (a session writes its reference state in when another one used the data last); no
MjData is allocated per session or per query. The private models are read-only after
construction and shared. Units: metres, radians.
"""

from __future__ import annotations

import copy
import math
import threading
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import mujoco
import numpy as np
from rob_twin.planners.errors import GoalInputError, PlannerConfigError
from rob_twin.planners.free_filter import FreeSpaceFilter
from rob_twin.planners.geom_pairs import (
    ADJACENT_WORLD_PARENT,
    RIGID_AT_REFERENCE,
    GeomPair,
    GeomPairTable,
    PairClass,
    joint_qpos_addresses,
    validate_arms,
    weak_pairs,
)
from rob_twin.planners.reach import arm_reach, out_of_reach


@dataclass(frozen=True)
class CollisionConfig:
    """margin_m: required clearance between checked geoms [m]; horizon_m: distances are
    measured up to this range [m] (>= margin; a larger horizon reports the clearance of
    near misses too, at some cost per check)."""

    margin_m: float = 0.005
    horizon_m: float = 0.005

    def __post_init__(self) -> None:
        if not (math.isfinite(self.margin_m) and self.margin_m >= 0.0):
            raise PlannerConfigError("margin_m", self.margin_m, "finite and >= 0 m")
        if not (math.isfinite(self.horizon_m) and self.horizon_m >= self.margin_m):
            raise PlannerConfigError(
                "horizon_m", self.horizon_m, f">= margin_m ({self.margin_m} m)"
            )


def default_config() -> CollisionConfig:
    """5 mm clearance, measured up to 5 mm (the fastest sound setting)."""
    return CollisionConfig()


@dataclass(frozen=True)
class Clearance:
    """Smallest signed distance [m] among checked pairs within the horizon, and its pair.

    ``distance_m`` is ``inf`` with ``pair`` None when nothing is within the horizon.
    """

    distance_m: float
    pair: GeomPair | None

    def is_free(self, margin_m: float) -> bool:
        return self.distance_m >= margin_m


_NOTHING_NEAR = Clearance(math.inf, None)
ARM_CONTYPE, ARM_CONAFFINITY = 1, 3  # arms collide with arms (bit 0) and others (bit 1)
OTHER_CONTYPE, OTHER_CONAFFINITY = 2, 1  # others collide with arms only


def _mask_out_touching_pairs(
    table: GeomPairTable, contype: np.ndarray, conaffinity: np.ndarray
) -> None:
    """Give each geom of an allowed arm pair that MuJoCo does not filter itself (touching
    or rigid at reference, or an arm's first link against a parent welded to the world)
    its own contype bit (bits 2..31), absent from its partners' conaffinity, so the pair is
    never generated; every other pair with an arm keeps colliding. A geom that is no arm's
    collides through its bit alone (conaffinity 0). Past 30 such geoms the rest keep their
    pairs (generated, then dropped by the pair table: slower, same answers)."""
    pairs = _unfiltered_allowed_arm_pairs(table)
    special = sorted({g for pair in pairs for g in pair})[:30]
    bit = {g: 1 << (2 + k) for k, g in enumerate(special)}
    all_special = sum(bit.values())
    partners = {g: set() for g in special}
    for g1, g2 in pairs:
        if g1 in bit and g2 in bit:
            partners[g1].add(g2)
            partners[g2].add(g1)
    for g in range(contype.size):
        if contype[g] == 0 and conaffinity[g] == 0:
            continue
        is_arm = table.owner[g] >= 0
        if g in bit:
            contype[g] = bit[g]
            others = all_special & ~bit[g] & ~sum(bit[p] for p in partners[g])
            conaffinity[g] = (ARM_CONAFFINITY | others) if is_arm else 0
        elif is_arm:
            conaffinity[g] = ARM_CONAFFINITY | all_special


_UNFILTERED_REASONS = ("touching at reference", RIGID_AT_REFERENCE, ADJACENT_WORLD_PARENT)


def _unfiltered_allowed_arm_pairs(table: GeomPairTable) -> list[tuple[int, int]]:
    index = {n: i for i, n in enumerate(table.geom_names)}
    out = []
    for a in table.allowed:
        if a.reason in _UNFILTERED_REASONS:
            out.append((index[a.name1], index[a.name2]))
    return out


def planning_model(model: mujoco.MjModel, table: GeomPairTable, horizon_m: float) -> mujoco.MjModel:
    """Private copy of ``model`` set up for distance queries up to ``horizon_m``."""
    m = copy.deepcopy(model)
    active = (model.geom_contype | model.geom_conaffinity) != 0
    is_arm = table.owner >= 0
    contype = np.where(active, np.where(is_arm, ARM_CONTYPE, OTHER_CONTYPE), 0)
    conaffinity = np.where(active, np.where(is_arm, ARM_CONAFFINITY, OTHER_CONAFFINITY), 0)
    _mask_out_touching_pairs(table, contype, conaffinity)
    m.geom_contype[:] = contype
    m.geom_conaffinity[:] = conaffinity
    m.geom_margin[:] = horizon_m
    m.geom_gap[:] = 0.0
    # The compiler derives body_margin (the largest margin of a body's geoms) once; MuJoCo's
    # midphase prunes a multi-geom body's inner BVH nodes with it. Left at the compiled value
    # (0 for ROB) it dropped pairs inside the horizon (a finger 4.7 mm from the table top went
    # unreported), which is why the midphase was once switched off; kept equal to the geoms'
    # margin it reports every pair the narrow phase would, at 0.6x the cost per query.
    m.body_margin[:] = horizon_m
    if m.npair:
        m.pair_margin[:] = np.maximum(m.pair_margin, horizon_m)
    _set_body_bits(m)
    m.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    m.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_FILTERPARENT)
    m.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_MIDPHASE)
    return m


def _set_body_bits(m: mujoco.MjModel) -> None:
    """Each body's contype and conaffinity: the OR of its geoms' (as MuJoCo's compiler makes
    them). MuJoCo filters body pairs by these before it looks at their geoms, so they must
    follow the rewritten geom bits: left at the source model's, two bodies whose source
    geoms never collide would hide checked pairs."""
    contype = np.zeros(m.nbody, np.int64)
    conaffinity = np.zeros(m.nbody, np.int64)
    np.bitwise_or.at(contype, m.geom_bodyid, m.geom_contype.astype(np.int64))
    np.bitwise_or.at(conaffinity, m.geom_bodyid, m.geom_conaffinity.astype(np.int64))
    m.body_contype[:] = contype
    m.body_conaffinity[:] = conaffinity


def without_geoms(model: mujoco.MjModel, geoms: np.ndarray) -> mujoco.MjModel:
    """A copy of a planning model in which the geoms of boolean mask ``geoms`` collide with
    nothing."""
    m = copy.deepcopy(model)
    m.geom_contype[geoms] = 0
    m.geom_conaffinity[geoms] = 0
    _set_body_bits(m)
    return m


class WeakPairsWarning(UserWarning):
    """The model has checked pairs whose MuJoCo collider is known to misjudge them
    (``rob_twin.planners.geom_pairs.weak_pairs``)."""


def warn_weak_pairs(weak: Sequence[tuple[GeomPair, str]]) -> None:
    """One ``WeakPairsWarning`` naming how many pairs of which kinds; issued from this one
    place, so Python's default filter shows it once per process for one model (not once per
    checker an ArmGroup builds)."""
    kinds = Counter(why for _, why in weak)
    pair, _ = weak[0]
    n = len(weak)
    warnings.warn(
        f"MuJoCo {mujoco.__version__} can misjudge {n} checked pair{'s' if n != 1 else ''} "
        f"of this model ({', '.join(f'{k} {w}' for w, k in sorted(kinds.items()))}; e.g. "
        f"{pair}): the plan's final check and certificate measure them with coal, the search "
        "with MuJoCo (docs/planning.md, weak pairs)",
        WeakPairsWarning,
        stacklevel=1,
    )


class CollisionChecker:
    """Collision checking of named arms over any MjModel.

    model: the MuJoCo model (not modified); arms: arm name -> its joint names in chain
    order; config: margin and horizon (``default_config()``).
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        arms: Mapping[str, Sequence[str]],
        config: CollisionConfig | None = None,
    ):
        self.config = config or default_config()
        self.source_model = model
        arms = validate_arms(arms)
        self.pairs = GeomPairTable(model, arms, self.config.margin_m)
        self.weak_pairs = weak_pairs(model, self.pairs)
        if self.weak_pairs:
            warn_weak_pairs(self.weak_pairs)
        self.model = planning_model(model, self.pairs, self.config.horizon_m)
        self.arm_names = self.pairs.arm_names
        self.arm_joints = {a: tuple(arms[a]) for a in self.arm_names}
        self.arm_qpos = {a: joint_qpos_addresses(model, arms[a]) for a in self.arm_names}
        self._anchors = {a: _anchor(model, arms[a][0]) for a in self.arm_names}
        self._local = threading.local()
        self._checked: dict[tuple[str, ...], np.ndarray] = {}
        self._lock = threading.Lock()
        self._scratch: mujoco.MjData | None = None
        self._pruned: dict[bytes, mujoco.MjModel] = {}  # out-of-reach mask -> model
        self._session_models: dict[tuple, mujoco.MjModel] = {}
        self._filters: dict[tuple, FreeSpaceFilter | None] = {}

    def data_for(self, session: CheckSession) -> mujoco.MjData:
        """This thread's MjData of the session's model (made once per model and thread),
        with ``session``'s reference state written in when another session used it last."""
        local = self._local
        datas = getattr(local, "datas", None)
        if datas is None:
            datas = local.datas = {}
        entry = datas.get(id(session.model))
        if entry is None:
            entry = datas[id(session.model)] = [mujoco.MjData(session.model), None]
        d = entry[0]
        if entry[1] is not session:
            d.qpos[:] = session.reference_qpos
            entry[1] = session
        local.data, local.owner = d, session
        return d

    def model_for(self, moving: Sequence[str], reference_qpos: np.ndarray) -> mujoco.MjModel:
        """The private model, less the geoms that ``moving``'s arms can never bring within
        the horizon from ``reference_qpos`` (``rob_twin.planners.reach``): the same
        contacts of checked pairs, fewer candidates. Made once per such set of geoms."""
        key_qpos = np.array(reference_qpos, float)
        for a in moving:
            key_qpos[self.arm_qpos[a]] = 0.0  # where the moving arms start changes nothing
        key = (tuple(moving), key_qpos.tobytes())
        model = self._session_models.get(key)
        if model is not None:
            return model
        with self._lock:
            if self._scratch is None:
                self._scratch = mujoco.MjData(self.model)
            d = self._scratch
            d.qpos[:] = reference_qpos
            mujoco.mj_kinematics(self.model, d)
            mask = out_of_reach(
                self.model, d, [self._anchors[a] for a in moving], self.config.horizon_m
            )
            if not mask.any():
                model = self.model
            else:
                model = self._pruned.get(mask.tobytes())
                if model is None:
                    model = self._pruned[mask.tobytes()] = without_geoms(self.model, mask)
            if len(self._session_models) >= _MAX_SESSION_MODELS:
                self._session_models.clear()
            self._session_models[key] = model
        return model

    def free_filter(self, session: CheckSession) -> FreeSpaceFilter | None:
        """The conservative free-space filter of ``session`` (``rob_twin.planners.free_filter``,
        at the checker's margin), made once per set of moving arms and state of everything
        else (as ``model_for``); None where the model has what the filter cannot bound."""
        key_qpos = np.array(session.reference_qpos, float)
        key_qpos[session.index] = 0.0
        key = (session.moving, key_qpos.tobytes())
        if key not in self._filters:
            with self._lock:
                if len(self._filters) >= _MAX_SESSION_MODELS:
                    self._filters.clear()
                self._filters[key] = FreeSpaceFilter.build(
                    session.model,
                    session.reference_qpos,
                    session.index,
                    session.checked,
                    self.config.margin_m,
                )
        return self._filters[key]

    def checked_table(self, moving: Sequence[str]) -> np.ndarray:
        """The pair table's ``checked_table(moving)``, made once per set of moving arms
        (read-only)."""
        key = tuple(moving)
        table = self._checked.get(key)
        if table is None:
            table = self._checked[key] = self.pairs.checked_table(key)
            table.flags.writeable = False
        return table

    def session(self, moving: Sequence[str], reference_qpos: np.ndarray) -> CheckSession:
        """A checker for configurations of the ``moving`` arms (stacked in that order);
        every other joint stays at ``reference_qpos`` (full model qpos)."""
        reference_qpos = np.asarray(reference_qpos, dtype=float)
        if reference_qpos.shape != (self.model.nq,):
            raise GoalInputError(
                "*", "reference_qpos shape", reference_qpos.shape, f"({self.model.nq},)"
            )
        return CheckSession(self, tuple(moving), reference_qpos)


_MAX_SESSION_MODELS = 256  # reference states remembered per checker before starting over
_NO_FILTER = object()  # a session whose model has no free-space filter


def _anchor(model: mujoco.MjModel, first_joint: str):
    """The ``rob_twin.planners.reach.ArmReach`` of an arm, by its first joint's name."""
    return arm_reach(model, mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, first_joint))


class CheckSession:
    """Checks of stacked configurations of a fixed set of moving arms (thread-safe:
    one MjData per thread)."""

    def __init__(
        self, checker: CollisionChecker, moving: tuple[str, ...], reference_qpos: np.ndarray
    ):
        self.checker = checker
        self.moving = moving
        self.model = checker.model_for(moving, reference_qpos)
        self.margin = checker.config.margin_m
        self.index = (
            np.concatenate([checker.arm_qpos[a] for a in moving]) if moving else np.zeros(0, int)
        )
        self.reference_qpos = reference_qpos.copy()
        self.reference_qpos.flags.writeable = False
        self.checked = checker.checked_table(moving)
        self._pairs: dict[tuple[int, int], GeomPair] = {}
        self.checks = 0
        self._filter = None

    def prove_free(self, states: np.ndarray) -> np.ndarray:
        """Per row of ``states`` (stacked configurations): True where the conservative
        free-space filter (``CollisionChecker.free_filter``) proves the state free at the
        margin without a MuJoCo call, False where it cannot (not: colliding; ask
        ``is_free``). All False where the model has no filter. Thread-safe (no shared
        scratch state)."""
        flt = self._filter
        if flt is None:
            flt = self._filter = self.checker.free_filter(self) or _NO_FILTER
        if flt is _NO_FILTER:
            return np.zeros(len(states), bool)
        return flt.proven_free(states)

    def _data(self) -> mujoco.MjData:
        """This thread's MjData of the checker, holding this session's reference state."""
        return self.checker.data_for(self)

    def _collide(self, q: np.ndarray) -> mujoco.MjData:
        d = self._data()
        d.qpos[self.index] = q
        mujoco.mj_kinematics(self.model, d)
        mujoco.mj_collision(self.model, d)
        self.checks += 1
        return d

    def contacts_of(self, states: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every contact within the horizon at each row of ``states`` (stacked
        configurations, measured in order), checked pair or not: geom pairs (K, 2),
        distances (K,) [m] and contacts per state (S,), the states' contacts one after
        another."""
        return self._measure(states, None)

    def contacts_and_poses_of(
        self, states: np.ndarray, geoms: np.ndarray
    ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray, np.ndarray]:
        """``contacts_of(states)`` and, from the same kinematics, the world positions (S, G,
        3) [m] and rotation matrices (S, G, 9) of geoms ``geoms`` at each state (what the
        weak pairs' judge measures with, ``rob_twin.planners.weak_judge``)."""
        n, ngeom = len(states), self.model.ngeom
        poses = (np.empty((n, ngeom, 3)), np.empty((n, ngeom, 9)))
        contacts = self._measure(states, poses)
        return contacts, poses[0][:, geoms], poses[1][:, geoms]

    def _measure(self, states: np.ndarray, poses) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``contacts_of``; with ``poses`` (two arrays, (S, ngeom, 3) and (S, ngeom, 9)) also
        copying every geom's world position and rotation at each state into them."""
        d = self._data()
        m, index = self.model, self.index
        geoms, dists, counts = [], [], np.zeros(len(states), np.int64)
        for s, q in enumerate(states):
            d.qpos[index] = q
            mujoco.mj_kinematics(m, d)
            if poses is not None:  # whole arrays: a plain copy, no indexing per state
                poses[0][s] = d.geom_xpos
                poses[1][s] = d.geom_xmat
            mujoco.mj_collision(m, d)
            if d.ncon:
                con = d.contact
                geoms.append(con.geom.copy())  # views into d: the next state overwrites them
                dists.append(con.dist.copy())
                counts[s] = d.ncon
        self.checks += len(states)
        if not geoms:
            return np.zeros((0, 2), np.int32), np.zeros(0), counts
        return np.concatenate(geoms), np.concatenate(dists), counts

    def _contacts(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The contacts within the horizon at stacked ``q``: their distances [m], geom pairs
        (ncon, 2) and which of them are checked pairs; None when there is none."""
        d = self._collide(q)
        if d.ncon == 0:
            return None
        con = d.contact
        geom = con.geom
        return con.dist, geom, self.checked[geom[:, 0], geom[:, 1]]

    def is_free(self, q: np.ndarray) -> bool:
        """True when every checked pair is at least ``margin_m`` apart at stacked ``q``
        (``_contacts`` inlined: this is the planner's most frequent call)."""
        local = self.checker._local
        if getattr(local, "owner", None) is self:
            d = local.data
        else:
            d = self.checker.data_for(self)
        d.qpos[self.index] = q
        mujoco.mj_kinematics(self.model, d)
        mujoco.mj_collision(self.model, d)
        self.checks += 1
        if d.ncon == 0:
            return True
        con = d.contact
        geom = con.geom
        near = self.checked[geom[:, 0], geom[:, 1]]
        return not bool((con.dist[near] < self.margin).any())

    def clearance(self, q: np.ndarray, among: np.ndarray | None = None) -> Clearance:
        """Smallest checked distance within the horizon at stacked ``q`` and its pair;
        with ``among`` (a boolean ``ngeom x ngeom`` mask), among the checked pairs it marks
        only (e.g. the pairs that matter to an operator: ``pairs_of_classes``)."""
        contacts = self._contacts(q)
        if contacts is None:
            return _NOTHING_NEAR
        dist, geom, near = contacts
        if among is not None:
            near = near & among[geom[:, 0], geom[:, 1]]
        if not near.any():
            return _NOTHING_NEAR
        dist = np.where(near, dist, np.inf)
        k = int(dist.argmin())  # the first smallest among checked pairs
        return Clearance(float(dist[k]), self._pair(int(geom[k, 0]), int(geom[k, 1])))

    def pairs_of_classes(self, classes: Sequence[PairClass]) -> np.ndarray:
        """A boolean ``ngeom x ngeom`` mask of the pairs whose class is one of ``classes``."""
        return np.isin(self.checker.pairs.table, [int(c) for c in classes])

    def sweep(self, states: np.ndarray) -> tuple[int, int, Clearance]:
        """Check the rows of ``states`` (stacked configurations) in order, stopping at the
        first within the margin. Returns (index of that state or -1, index of the state
        with the smallest clearance so far (first of equals; -1 when nothing was within
        the horizon), its Clearance, or the hit's when there is a hit). Same figures as
        calling ``clearance`` per row, without building a Clearance per state."""
        d = self._data()
        m, index, checked, margin = self.model, self.index, self.checked, self.margin
        best, best_i, best_pair = math.inf, -1, (0, 0)
        for i in range(states.shape[0]):
            d.qpos[index] = states[i]
            mujoco.mj_kinematics(m, d)
            mujoco.mj_collision(m, d)
            self.checks += 1
            if d.ncon == 0:
                continue
            con = d.contact
            geom = con.geom
            near = checked[geom[:, 0], geom[:, 1]]
            if not near.any():
                continue
            dist = np.where(near, con.dist, np.inf)
            k = int(dist.argmin())
            dk = float(dist[k])
            if dk < margin:
                return i, i, Clearance(dk, self._pair(int(geom[k, 0]), int(geom[k, 1])))
            if dk < best:
                best, best_i, best_pair = dk, i, (int(geom[k, 0]), int(geom[k, 1]))
        if best_i < 0:
            return -1, -1, _NOTHING_NEAR
        return -1, best_i, Clearance(best, self._pair(*best_pair))

    def _pair(self, g1: int, g2: int) -> GeomPair:
        """The (cached) GeomPair of two geoms."""
        key = (g1, g2) if g1 < g2 else (g2, g1)
        pair = self._pairs.get(key)
        if pair is None:
            pair = self._pairs[key] = self.checker.pairs.pair(*key)
        return pair

    def full_qpos(self, q: np.ndarray) -> np.ndarray:
        """The full model qpos of stacked ``q`` (reference elsewhere)."""
        out = self.reference_qpos.copy()
        out[self.index] = q
        return out

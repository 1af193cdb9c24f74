"""Per-pair geometry of the clearance certificate: which pairs are checked, and how fast each
pair's clearance can change per unit of joint speed.

**Per-pair Lipschitz.** A point of geom g moves, relative to the pair's partner, only
through the joints on the chain *between* the two geoms (joints that move both move them
rigidly together and cancel; joints that move neither, e.g. a torso that stays put, add
nothing). Joint j contributes |qd_j| R_j(g), R_j(g) a configuration-free bound on the
distance from joint j's anchor to any point of g (triangle inequality along the tree),
plus a declared ``payload_reach_m`` for the geoms of the arm's last body.

``model_hash`` fingerprints the geometry and kinematics a certificate depends on.
Units: metres, radians.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import mujoco
import numpy as np
from rob_twin.planners.errors import PlannerConfigError
from rob_twin.planners.geom_pairs import PairClass, weak_reason
from rob_twin.planners.reach import body_reach_m, geom_reach_m, joint_travel_m


def model_hash(model: mujoco.MjModel) -> str:
    """sha256 over the geometry and kinematics a certificate depends on (hex, 16 chars)."""
    h = hashlib.sha256()
    for name in (
        "body_parentid",
        "body_pos",
        "body_quat",
        "jnt_type",
        "jnt_bodyid",
        "jnt_pos",
        "jnt_axis",
        "geom_type",
        "geom_bodyid",
        "geom_size",
        "geom_pos",
        "geom_quat",
        "mesh_vert",
    ):
        arr = np.ascontiguousarray(np.round(np.asarray(getattr(model, name), float), 9))
        h.update(name.encode())
        h.update(arr.tobytes())
    return h.hexdigest()[:16]


_HASHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _hash_of(model: mujoco.MjModel) -> str:
    try:
        if model not in _HASHES:
            _HASHES[model] = model_hash(model)
        return _HASHES[model]
    except TypeError:  # not weak-referenceable
        return model_hash(model)


def joint_geom_radii(
    model: mujoco.MjModel,
    joint_names: Sequence[str],
    payload_reach_m: float = 0.0,
    reference_qpos: np.ndarray | None = None,
) -> np.ndarray:
    """(n_joints, ngeom): R_j(g) [m], a bound valid in every configuration on the distance
    from joint j's anchor to any point of geom g; 0 where joint j does not move g. Joints
    below j that are not in ``joint_names`` stay at ``reference_qpos`` (a finger slide at
    its opening there; at any point of its range when None): their travel is counted
    (``rob_twin.planners.reach.body_reach_m``). Geoms of the last joint's body subtree (the
    gripper) get ``payload_reach_m`` more."""
    out = np.zeros((len(joint_names), model.ngeom))
    planned = set()
    for name in joint_names:
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if jid < 0 or model.jnt_type[jid] != mujoco.mjtJoint.mjJNT_HINGE:
            raise PlannerConfigError("joint", name, "a hinge joint of the model")
        planned.add(jid)

    def travel(j: int) -> float:
        return joint_travel_m(model, j, None if j in planned else reference_qpos)

    last_reach: dict[int, float] = {}
    for k, name in enumerate(joint_names):
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        last_reach = body_reach_m(model, jid, travel)
        out[k] = geom_reach_m(model, last_reach)
    if payload_reach_m > 0 and joint_names:
        gripper = [g for g in range(model.ngeom) if int(model.geom_bodyid[g]) in last_reach]
        out[:, gripper] = np.where(out[:, gripper] > 0, out[:, gripper] + payload_reach_m, 0.0)
    return out


@dataclass
class PairGeometry:
    """The checked pairs of a set of moving arms and their per-joint relative radii."""

    g1: np.ndarray  # (P,) geom ids
    g2: np.ndarray
    pair_class: np.ndarray  # (P,) PairClass values
    radii: np.ndarray  # (P, n) over the moving arms' stacked joints [m]
    index: np.ndarray  # (ngeom, ngeom) pair number or -1
    names: tuple[str, ...]  # geom names
    # per pair, why MuJoCo's collider is weak for it ("" where it is not;
    # ``rob_twin.planners.geom_pairs.weak_reason``): those pairs are judged by coal
    # (``rob_twin.planners.weak_judge``); empty: no pair is weak
    weak_why: tuple[str, ...] = ()


def pair_geometry(
    model: mujoco.MjModel,
    table,
    arm_joints: dict[str, Sequence[str]],
    moving: Sequence[str],
    payload_reach_m: float,
    reference_qpos: np.ndarray | None = None,
) -> PairGeometry:
    """``table``: the group's ``GeomPairTable``; ``arm_joints``: every arm's joints;
    ``reference_qpos``: where the joints that are not planned stay (``joint_geom_radii``)."""
    checked = np.triu(table.checked_table(moving), 1)
    g1, g2 = np.nonzero(checked)
    joints = [j for a in moving for j in arm_joints[a]]
    r = joint_geom_radii(model, joints, payload_reach_m, reference_qpos)  # (n, ngeom)
    m1, m2 = r[:, g1] > 0, r[:, g2] > 0  # which joints move each geom
    rel = np.where(m1 & ~m2, r[:, g1], 0.0) + np.where(m2 & ~m1, r[:, g2], 0.0)
    index = np.full((model.ngeom, model.ngeom), -1, dtype=np.int64)
    index[g1, g2] = np.arange(g1.size)
    index[g2, g1] = np.arange(g1.size)
    why = tuple(weak_reason(model, a, b) for a, b in zip(g1.tolist(), g2.tolist(), strict=True))
    return PairGeometry(
        g1,
        g2,
        table.table[g1, g2].astype(int),
        rel.T.copy(),
        index,
        table.geom_names,
        why if any(why) else (),
    )


def weak_rows(geometry: PairGeometry) -> np.ndarray:
    """The pair numbers of ``geometry``'s weak pairs (``PairGeometry.weak_why``), rising."""
    return np.array([p for p, why in enumerate(geometry.weak_why) if why], dtype=np.int64)


def covering_rows(geometry: PairGeometry) -> np.ndarray:
    """(C, n) the distinct per-joint radii rows [m] of ``geometry`` that no other row
    dominates (>= in every joint): every pair's row is below one of them in every joint, so
    its arc is at most the largest of theirs (cached on the geometry)."""
    cached = geometry.__dict__.get("_covering_rows")
    if cached is None:
        r = np.unique(geometry.radii, axis=0)
        ge = (r[:, None, :] >= r[None, :, :]).all(axis=2)
        np.fill_diagonal(ge, False)  # rows are distinct: ge off the diagonal is strict
        cached = r[~ge.any(axis=0)] if r.size else np.zeros((0, geometry.radii.shape[1]))
        geometry.__dict__["_covering_rows"] = cached
    return cached


_GEOMETRY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _group_geometry(group, moving: tuple[str, ...], payload_reach_m: float) -> PairGeometry:
    """The group's pair geometry of ``moving``, with the joints it does not plan (finger
    slides) where its reference state holds them (made once per such state)."""
    per_group = _GEOMETRY.setdefault(group, {})
    model, reference = group.model, group.reference_qpos
    slides = per_group.get("slide qpos")
    if slides is None:
        is_slide = model.jnt_type == mujoco.mjtJoint.mjJNT_SLIDE
        slides = per_group["slide qpos"] = model.jnt_qposadr[is_slide]
    key = (moving, payload_reach_m, reference[slides].tobytes())
    if key not in per_group:
        per_group[key] = pair_geometry(
            model,
            group.meter.pairs,
            {a: group.joint_names(a) for a in group.arm_names},
            moving,
            payload_reach_m,
            reference,
        )
    return per_group[key]


def _pair_name(geometry: PairGeometry, p: int) -> str:
    cls = PairClass(int(geometry.pair_class[p])).name.lower()
    return f"{geometry.names[geometry.g1[p]]} vs {geometry.names[geometry.g2[p]]} ({cls})"

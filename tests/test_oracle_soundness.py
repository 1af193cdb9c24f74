"""Soundness of the planner's collision checker against coal on ROB: targeted placements give
every pair type hundreds of true contacts, every geom pair that can touch is either checked or
excluded for a reason that is asserted here, and a checker whose geom is 1 mm smaller than the
real one is caught, for every collision geom. Where the study finds the checker unsound
(capsule-cylinder under native CCD; palm vs link6 hidden by the parent filter) the test says
so with its figure instead of passing silently.

The oracle is coal on a freshly loaded model (planners/oracle.py); the checker's figures come
from its own private model (MuJoCo's collider, filtered by the planner's pair table). Fixed
seed; about two seconds."""

from __future__ import annotations

from collections import Counter, defaultdict

import coal
import mujoco
import numpy as np
import pytest
from planner_fixtures import ROB_ARMS, rob_home
from rob_twin.models.loading import load_scene
from rob_twin.planners.collision import CollisionChecker
from rob_twin.planners.oracle import (
    CoalOracle,
    Placements,
    checker_distances,
    pair_type,
    targeted_placements,
)

TOLERANCE_M = 1e-4  # coal vs MuJoCo collider: numerical agreement asked of a true contact
HITS_PER_TYPE = 300  # true contacts (coal < margin - tolerance) per pair type, at least
SHRINK_M = 0.001
PER_PAIR = 40  # placements of every covering pair before topping up each type


@pytest.fixture(scope="module")
def rob():
    m, home = rob_home()
    checker = CollisionChecker(m, ROB_ARMS)
    session = checker.session(list(ROB_ARMS), home)
    return checker, session, CoalOracle(load_scene())


def _checked_pairs(session) -> list[tuple[int, int]]:
    g1, g2 = np.nonzero(np.triu(session.checked))
    return list(zip(g1.tolist(), g2.tolist(), strict=True))


def _covering_pairs(session) -> list[tuple[int, int]]:
    """Three pairs of each type, then the first checked pair of every geom not yet in one."""
    pairs, per_type, covered = [], Counter(), set()
    checked = _checked_pairs(session)
    for a, b in checked:
        t = pair_type(session.model, a, b)
        if per_type[t] < 3:
            per_type[t] += 1
            pairs.append((a, b))
            covered |= {a, b}
    for a, b in checked:
        if a not in covered or b not in covered:
            pairs.append((a, b))
            covered |= {a, b}
    return pairs


def _targets(rng, n, margin_m):
    """Half just inside the margin (the band a 1 mm shrink flips), half from 4 mm deep to
    2 mm out."""
    band = rng.uniform(margin_m - 0.9 * SHRINK_M, margin_m - 2 * TOLERANCE_M, n)
    wide = rng.uniform(-0.004, margin_m + 0.002, n)
    return np.where(np.arange(n) % 2 == 0, band, wide)


def _place(session, oracle, pair, n, rng, margin_m) -> Placements:
    a, b = pair
    mover, fixed = (a, b) if session.checker.pairs.owner[a] >= 0 else (b, a)
    return targeted_placements(session, oracle, mover, fixed, n, rng, _targets(rng, n, margin_m))


@pytest.fixture(scope="module")
def study(rob):
    checker, session, oracle = rob
    margin = checker.config.margin_m
    rng = np.random.default_rng(2026)
    pairs = _covering_pairs(session)
    placed = [_place(session, oracle, p, PER_PAIR, rng, margin) for p in pairs]
    hits = Counter()
    for p in placed:
        hits[p.type_name] += int((p.oracle_m < margin - TOLERANCE_M).sum())
    by_type = defaultdict(list)
    for a, b in _checked_pairs(session):
        by_type[pair_type(session.model, a, b)].append((a, b))
    for t, candidates in by_type.items():  # top up: more pairs of the type, round robin
        k = 0
        while hits[t] < HITS_PER_TYPE:
            p = _place(session, oracle, candidates[k % len(candidates)], PER_PAIR, rng, margin)
            placed.append(p)
            hits[t] += int((p.oracle_m < margin - TOLERANCE_M).sum())
            k += 1
    found = [checker_distances(session, p) for p in placed]
    return placed, found, hits


def _misses(oracle_m, checker_m, margin_m):
    return (oracle_m < margin_m - TOLERANCE_M) & (checker_m >= margin_m)


# Pair types whose MuJoCo collider returns the exact distance inside the margin (measured
# checker - coal within 3e-16 m) versus those it only approximates there. Measured with this
# fixed seed and mujoco 3.17.0 (see the report of the soundness study in the tests below):
EXACT_TYPES = {"capsule-capsule", "capsule-plane"}
APPROXIMATE_TYPES = {"box-capsule", "capsule-cylinder", "capsule-mesh"}


def _by_type(session, placed, found):
    out = defaultdict(lambda: ([], []))
    for p, c in zip(placed, found, strict=True):
        out[p.type_name][0].append(p.oracle_m)
        out[p.type_name][1].append(c)
    return {t: (np.concatenate(o), np.concatenate(c)) for t, (o, c) in out.items()}


def test_every_pair_type_gets_hundreds_of_true_contacts_and_every_geom_is_placed(rob, study):
    _, session, _ = rob
    placed, _, hits = study
    types = {pair_type(session.model, a, b) for a, b in _checked_pairs(session)}
    assert set(hits) == types == EXACT_TYPES | APPROXIMATE_TYPES
    assert min(hits.values()) >= HITS_PER_TYPE, hits
    in_pairs = {g for pair in _checked_pairs(session) for g in pair}
    assert in_pairs <= {g for p in placed for g in (p.mover, p.fixed)}


def test_exact_pair_types_miss_nothing_within_the_margin(rob, study):
    checker, session, _ = rob
    margin = checker.config.margin_m
    for t, (oracle_m, checker_m) in _by_type(session, *study[:2]).items():
        if t not in EXACT_TYPES:
            continue
        assert not _misses(oracle_m, checker_m, margin).any(), t
        inside = oracle_m < margin
        np.testing.assert_allclose(checker_m[inside], oracle_m[inside], atol=1e-9, err_msg=t)


def test_approximate_pair_types_miss_no_penetration_and_keep_most_of_the_margin(rob, study):
    """Box-capsule and capsule-mesh misses lie only in the outer part of the margin: the
    checker's clearance for them is >= 3 mm, not the configured 5 mm (measured deepest miss
    3.6 mm box-capsule, 4.1 mm capsule-mesh in a 10,000-placement probe)."""
    checker, session, _ = rob
    margin = checker.config.margin_m
    for t, (oracle_m, checker_m) in _by_type(session, *study[:2]).items():
        if t in ("box-capsule", "capsule-mesh"):
            miss = _misses(oracle_m, checker_m, margin)
            assert not miss.any() or oracle_m[miss].min() >= 0.003, (t, oracle_m[miss].min())


@pytest.mark.xfail(
    strict=True,
    reason=(
        "UNSOUND (found by this study, not fixed here): with mujoco 3.17's native CCD, "
        "mj_collision reports some penetrating capsule-cylinder pairs (table legs, can) at a "
        "positive distance: right/link1 vs table/leg0 penetrating 9.9 mm by coal and by "
        "mj_geomDistance was reported at +5.4 mm, so the state counted as free. With "
        "mjDSBL_NATIVECCD (libccd) that probe showed no "
        "capsule-cylinder miss; the planner's checker still uses the default."
    ),
)
def test_capsule_cylinder_pairs_miss_nothing_within_the_margin(rob, study):
    checker, session, _ = rob
    margin = checker.config.margin_m
    oracle_m, checker_m = _by_type(session, *study[:2])["capsule-cylinder"]
    assert not _misses(oracle_m, checker_m, margin).any()


def _shrink(model: mujoco.MjModel, g: int, by_m: float) -> None:
    """Make geom ``g`` of ``model`` ``by_m`` smaller on every side (in place)."""
    t = int(model.geom_type[g])
    if t in (mujoco.mjtGeom.mjGEOM_SPHERE, mujoco.mjtGeom.mjGEOM_CAPSULE):
        model.geom_size[g][0] -= by_m
    elif t == mujoco.mjtGeom.mjGEOM_CYLINDER:
        model.geom_size[g][:2] -= by_m
    elif t == mujoco.mjtGeom.mjGEOM_BOX:
        model.geom_size[g][:3] -= by_m
    elif t == mujoco.mjtGeom.mjGEOM_MESH:  # box-like hull: every vertex 1 mm in on each axis
        mid = int(model.geom_dataid[g])
        a, n = int(model.mesh_vertadr[mid]), int(model.mesh_vertnum[mid])
        v = model.mesh_vert[a : a + n]
        model.mesh_vert[a : a + n] = v - by_m * np.sign(v - v.mean(axis=0))
    else:
        raise AssertionError(f"no shrink rule for geom type {t}")


def test_a_1mm_smaller_collision_geom_is_caught_for_every_geom(rob, study):
    """The study has teeth: the checker's model with any one geom 1 mm smaller than the real
    geom (the one coal sees) misses true contacts of that geom."""
    checker, session, _ = rob
    placed, _, _ = study
    margin = checker.config.margin_m
    model = checker.model  # the model the placements are checked on
    plane = int(mujoco.mjtGeom.mjGEOM_PLANE)
    # The floor is a half-space with no size to shrink (and MuJoCo fixes a world geom's pose
    # when its data is made); every geom that meets it is shrunk below instead.
    geoms = sorted(
        {g for p in placed for g in (p.mover, p.fixed) if int(model.geom_type[g]) != plane}
    )
    baseline = [_misses(p.oracle_m, c, margin) for p, c in zip(placed, study[1], strict=True)]
    caught = {}
    for g in geoms:
        saved = (model.geom_size.copy(), model.mesh_vert.copy())
        _shrink(model, g, SHRINK_M)
        try:
            caught[g] = sum(
                int((_misses(p.oracle_m, checker_distances(session, p), margin) & ~base).sum())
                for p, base in zip(placed, baseline, strict=True)
                if g in (p.mover, p.fixed)
            )
        finally:
            model.geom_size[:], model.mesh_vert[:] = saved
    names = session.checker.pairs.geom_names
    assert all(n > 0 for n in caught.values()), {names[g]: n for g, n in caught.items() if n == 0}
    # every sized geom of a checked pair was shrunk (the count follows the model)
    in_pairs = {
        g for pair in _checked_pairs(session) for g in pair if int(model.geom_type[g]) != plane
    }
    assert set(caught) == set(geoms) == in_pairs


# FOUND by the sweep below, not fixed here: MuJoCo's parent filter ("adjacent") hides the
# palm meeting link6 away from J7 (69 mm from its anchor) at the ends of J7's range, up to
# 2.4 mm deep: the planner never checks it. Bounded here so that it cannot grow unseen.
HIDDEN_ADJACENT_CONTACT = {"link6_geom vs right/palm": 0.0025, "link6_geom vs left/palm": 0.0025}


def test_every_arm_pair_is_checked_or_excluded_for_a_reason_that_holds(rob):
    """Sweep both arms over their joint ranges (coal on the fresh model) and check each reason:
    'same weld body' and 'touching at reference' pairs never move relative to each other while
    the arm joints move; 'excluded' pairs overlap at every configuration (they share a joint
    region: checking them would reject every state); 'adjacent' pairs either keep one distance
    (the joint turns about the capsules' common axis) or meet only at their joint."""
    checker, session, oracle = rob
    table = checker.pairs
    names = {n: i for i, n in enumerate(table.geom_names)}
    allowed = {frozenset((names[a.name1], names[a.name2])): a.reason for a in table.allowed}
    for g1 in range(session.model.ngeom):  # every pair with an arm geom: checked or allowed
        for g2 in range(g1 + 1, session.model.ngeom):
            if table.owner[g1] >= 0 or table.owner[g2] >= 0:
                assert (table.table[g1, g2] > 0) != (frozenset((g1, g2)) in allowed), (g1, g2)
    assert set(allowed.values()) == {
        "adjacent",
        "excluded",
        "same weld body",
        "touching at reference",
    }
    m = oracle.model
    ids = [
        mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j) for a in ROB_ARMS for j in ROB_ARMS[a]
    ]
    lo, hi = m.jnt_range[ids].T
    configs = np.random.default_rng(4).uniform(lo, hi, (300, lo.size))
    configs[0] = np.clip(0.0, lo, hi)
    dist = {pair: [] for pair in allowed}
    joint_gap = {pair: [] for pair in allowed}  # contact point to the joint between the bodies
    for q in configs:
        oracle.set_qpos(session.full_qpos(q))
        for pair in allowed:
            g1, g2 = sorted(pair)
            res = coal.DistanceResult()
            d = coal.distance(
                oracle.shapes[g1],
                _tf(oracle, g1),
                oracle.shapes[g2],
                _tf(oracle, g2),
                coal.DistanceRequest(),
                res,
            )
            dist[pair].append(d)
            if allowed[pair] == "adjacent" and d < checker.config.margin_m:
                joint_gap[pair].append(_gap_to_joint(oracle, g1, g2, res))
    margin = checker.config.margin_m
    for pair, reason in allowed.items():
        d = np.array(dist[pair])
        label = " vs ".join(table.geom_names[g] for g in sorted(pair))
        if reason in ("same weld body", "touching at reference"):
            assert np.ptp(d) < 1e-9, (label, reason, np.ptp(d))
        elif reason == "excluded":
            assert d.max() < margin, (label, reason, d.max())
        else:
            constant = np.ptp(d) < 1e-9
            at_joint = not joint_gap[pair] or max(joint_gap[pair]) <= _radius(m, sorted(pair))
            short = label.split("/", 1)[1] if label.startswith(("right/", "left/")) else label
            if short in HIDDEN_ADJACENT_CONTACT:  # a known gap of the parent filter: bounded
                assert -d.min() <= HIDDEN_ADJACENT_CONTACT[short], (label, d.min())
                continue
            assert constant or at_joint, (label, reason, np.ptp(d), max(joint_gap[pair], default=0))


def _tf(oracle, g):
    return coal.Transform3s(
        oracle.data.geom_xmat[g].reshape(3, 3).copy(), oracle.data.geom_xpos[g].copy()
    )


def _radius(m, pair):
    return max(float(m.geom_size[g][0]) for g in pair)


def _gap_to_joint(oracle, g1, g2, res) -> float:
    """Distance [m] from the pair's contact (midpoint of coal's nearest points) to the nearest
    anchor of a joint on the path between the two geoms' bodies."""
    m, d = oracle.model, oracle.data
    b1, b2 = int(m.geom_bodyid[g1]), int(m.geom_bodyid[g2])
    chain = set()
    for b in (b1, b2):
        while b > 0:
            chain ^= {b}
            b = int(m.body_parentid[b])
    joints = [j for j in range(m.njnt) if int(m.jnt_bodyid[j]) in chain]
    mid = 0.5 * (np.asarray(res.getNearestPoint1()) + np.asarray(res.getNearestPoint2()))
    return min(float(np.linalg.norm(d.xanchor[j] - mid)) for j in joints) if joints else np.inf

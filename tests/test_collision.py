"""CollisionChecker: pair classes, margins, clearance with its pair, per-thread data."""

from __future__ import annotations

import threading
import warnings

import mujoco
import numpy as np
import pytest
from planner_fixtures import ROB_ARMS, STAND_ARMS, load_stand, rob_home
from rob_twin.experiments.hard_problems import load as load_hard
from rob_twin.planners.collision import CollisionChecker, CollisionConfig
from rob_twin.planners.errors import GroupNameError, PlannerConfigError
from rob_twin.planners.geom_pairs import PairClass


@pytest.fixture(scope="module")
def rob():
    m, home = rob_home()
    return m, home, CollisionChecker(m, ROB_ARMS)


def _gid(m, name):
    return mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, name)


def test_rob_pair_classes(rob):
    m, _, ch = rob
    t = ch.pairs.table
    assert t[_gid(m, "right/link5_geom"), _gid(m, "left/link5_geom")] == PairClass.ARM_ARM
    assert t[_gid(m, "right/link5_geom"), _gid(m, "torso/shell")] == PairClass.ARM_BODY
    assert t[_gid(m, "right/palm"), _gid(m, "table/top")] == PairClass.ARM_WORLD
    assert t[_gid(m, "right/link3_geom"), _gid(m, "right/link7_geom")] == PairClass.SELF
    assert t[_gid(m, "right/finger_a_geom"), _gid(m, "right/finger_b_geom")] == PairClass.ALLOWED
    assert t[_gid(m, "right/mount_geom"), _gid(m, "right/link2_geom")] == PairClass.ALLOWED
    assert t[_gid(m, "floor"), _gid(m, "base/tread_left")] == PairClass.ALLOWED  # no arm
    reasons = {(a.name1, a.name2): a.reason for a in ch.pairs.allowed}
    assert reasons[("right/finger_a_geom", "right/finger_b_geom")] == "touching at reference"
    assert reasons[("right/mount_geom", "right/link2_geom")] == "excluded"
    # ROB's only weak pairs: its capsule links against the cylinder table legs and can
    assert {why for _, why in ch.weak_pairs} == {"capsule vs cylinder"}
    assert {p.name2 for p, _ in ch.weak_pairs} == {f"table/leg{k}" for k in range(4)} | {"can/body"}


def test_home_is_free_and_locked_arm_pairs_are_skipped(rob):
    m, home, ch = rob
    s = ch.session(["right", "left"], home)
    q = np.concatenate([home[ch.arm_qpos[a]] for a in ("right", "left")])
    assert s.is_free(q)
    checked = ch.pairs.checked_table(["right"])
    assert not checked[_gid(m, "left/palm"), _gid(m, "table/top")]  # locked arm vs world
    assert checked[_gid(m, "left/palm"), _gid(m, "right/palm")]  # locked arm vs moving arm


def test_clearance_reports_the_limiting_pair_and_agrees_with_geom_distance(rob):
    m, home, ch = rob
    meter = CollisionChecker(m, ROB_ARMS, CollisionConfig(margin_m=0.005, horizon_m=0.05))
    s = meter.session(["right"], home)
    rng = np.random.default_rng(3)
    lo, hi = m.jnt_range[
        [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in ROB_ARMS["right"]]
    ].T
    d = mujoco.MjData(m)
    seen = 0
    for _ in range(200):
        q = rng.uniform(lo, hi)
        c = s.clearance(q)
        if c.pair is None:
            continue
        d.qpos[:] = s.full_qpos(q)
        mujoco.mj_kinematics(m, d)
        exact = mujoco.mj_geomDistance(m, d, c.pair.geom1, c.pair.geom2, 0.05, None)
        # Same MuJoCo narrow phase at the same pose (mj_collision with the pair's margin widened
        # to the horizon vs mj_geomDistance with distmax = horizon): measured difference 0.0
        # over these poses, so 1 nm allows float rounding and nothing else.
        assert c.distance_m == pytest.approx(exact, abs=1e-9)
        assert s.is_free(q) == (c.distance_m >= 0.005)
        seen += 1
    assert seen > 50


def test_each_thread_gets_its_own_data(rob):
    _, home, ch = rob
    s = ch.session(["right"], home)
    rng = np.random.default_rng(0)
    lo, hi = np.full(7, -1.0), np.full(7, 1.0)
    qs = rng.uniform(lo, hi, (300, 7)).clip(0.0, None)
    expected = [s.is_free(q) for q in qs]
    results: dict[int, list[bool]] = {}

    def work(k):
        results[k] = [s.is_free(q) for q in qs]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == expected for r in results.values())


def test_threads_interleaving_sessions_with_different_models_agree_with_one_thread(rob):
    """Sessions of one arm and of both arms leave out different geoms, so they check on
    different model copies: threads that make sessions and alternate between them, each
    switch rewriting the per-model data's reference, give the answers of one thread."""
    m, home, ch = rob
    rng = np.random.default_rng(4)
    qs = rng.uniform(-1.0, 1.0, (120, 14)).clip(0.0, None)
    one, both = ch.session(["right"], home), ch.session(["right", "left"], home)
    assert one.model is not both.model  # one arm leaves out a third table leg too
    expected = [(one.is_free(q[:7]), both.is_free(q), both.clearance(q).distance_m) for q in qs]
    results: dict[int, list] = {}

    def work(k):
        mine_one, mine_both = ch.session(["right"], home), ch.session(["right", "left"], home)
        results[k] = [
            (mine_one.is_free(q[:7]), mine_both.is_free(q), mine_both.clearance(q).distance_m)
            for q in qs
        ]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == expected for r in results.values())


def test_works_on_a_model_that_is_not_rob():
    m = load_stand()
    ch = CollisionChecker(m, STAND_ARMS)
    s = ch.session(["a", "b"], m.qpos0)
    assert s.is_free(np.zeros(8))
    c = s.clearance(np.array([0.7, 0, 0, 0, -0.7, 0, 0, 0]))  # the arms point at each other
    assert c.distance_m < 0 and c.pair.pair_class == PairClass.ARM_ARM


def test_typed_errors():
    m = load_stand()
    with pytest.raises(GroupNameError, match="valid: .*a/yaw"):
        CollisionChecker(m, {"a": ["a/nope"]})
    with pytest.raises(PlannerConfigError, match="horizon_m"):
        CollisionConfig(margin_m=0.01, horizon_m=0.005)


THIN_BOX_XML = """
<mujoco><worldbody>
  <geom name="slab" type="box" size="0.3 0.3 0.01" pos="0.3 0 0.5"/>
  <body name="l1" pos="0 0 0.5"><joint name="j1" axis="0 0 1" range="-3 3"/>
    <geom name="link" type="capsule" size="0.02" fromto="0 0 0 0.4 0 0"/></body>
</worldbody></mujoco>
"""


def test_thin_primitive_box_is_flagged():
    m = mujoco.MjModel.from_xml_string(THIN_BOX_XML)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ch = CollisionChecker(m, {"arm": ["j1"]})
    assert ch.weak_pairs and "thin primitive box" in ch.weak_pairs[0][1]
    said = "1 checked pair of this model (1 capsule vs thin primitive box"
    assert any(said in str(w.message) for w in caught)


def test_zero_margin_keeps_reference_contacts_allowed_and_still_finds_penetrations(rob):
    m, home, _ = rob
    ch = CollisionChecker(m, ROB_ARMS, CollisionConfig(margin_m=0.0, horizon_m=0.0))
    reasons = {(a.name1, a.name2): a.reason for a in ch.pairs.allowed}
    assert reasons[("right/finger_a_geom", "right/finger_b_geom")] == "touching at reference"
    s = ch.session(["right", "left"], home)
    q = np.concatenate([home[ch.arm_qpos[a]] for a in ("right", "left")])
    assert s.is_free(q)  # closed fingers 1e-17 m apart do not block the home pose
    rng = np.random.default_rng(5)
    ids = [
        mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j)
        for a in ("right", "left")
        for j in ROB_ARMS[a]
    ]
    lo, hi = m.jnt_range[ids].T
    hits = sum(not s.is_free(rng.uniform(lo, hi)) for _ in range(100))
    assert hits > 10  # penetrations are still reported at margin 0


def test_zero_margin_group_plans():
    from rob_twin.planners.group import ArmGroup, GroupConfig

    m, home = rob_home()
    g = ArmGroup(m, ROB_ARMS, GroupConfig(collision=CollisionConfig(0.0, 0.0)))
    g.set_qpos(home)
    r = g.plan({a: g.arm_q(a) + 0.2 for a in g.arm_names})
    assert r.ok, r.reason


def test_sweep_matches_clearance_per_state(rob):
    m, home, _ = rob
    meter = CollisionChecker(m, ROB_ARMS, CollisionConfig(margin_m=0.005, horizon_m=0.02))
    s = meter.session(["right", "left"], home)
    q0 = np.concatenate([home[meter.arm_qpos[a]] for a in ("right", "left")])
    rng = np.random.default_rng(11)
    for _ in range(4):
        states = q0 + np.cumsum(rng.normal(0.0, 0.05, (40, 14)), axis=0)
        per_state = [s.clearance(q) for q in states]
        hit, best_i, best = s.sweep(states)
        hits = [i for i, c in enumerate(per_state) if c.distance_m < 0.005]
        assert hit == (hits[0] if hits else -1)
        upto = per_state[: hit + 1] if hit >= 0 else per_state
        dists = [c.distance_m for c in upto]
        if hit >= 0:
            assert best == per_state[hit]
        elif np.isfinite(min(dists)):
            assert best_i == int(np.argmin(dists)) and best == per_state[best_i]
        else:
            assert best_i == -1 and best.pair is None


ARMS2 = ("right", "left")


def test_every_pair_within_the_horizon_is_reported_with_the_midphase_on(rob):
    """The checker keeps MuJoCo's BVH midphase (it costs 0.6x per query) and still reports
    every checked pair nearer than the horizon: body_margin is widened with the geoms'
    margins, or the midphase prunes the table body's inner nodes without them."""
    m, home, _ = rob
    horizon = 0.04
    meter = CollisionChecker(m, ROB_ARMS, CollisionConfig(margin_m=0.005, horizon_m=horizon))
    pm = meter.model
    assert not pm.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_MIDPHASE)
    s = meter.session(ARMS2, home)
    checked = np.triu(meter.pairs.checked_table(["right", "left"]), 1)
    table = [g for g in range(m.ngeom) if m.geom(g).name.startswith("table/")]
    pairs = [(a, b) for a, b in zip(*np.nonzero(checked), strict=True) if a in table or b in table]
    # states along the straight lines of the frozen hard problems: many pass near the table
    states = []
    for problem in load_hard("rob"):
        a = np.concatenate([problem.start.get(arm, home[meter.arm_qpos[arm]]) for arm in ARMS2])
        b = np.concatenate([problem.goal[arm] for arm in ARMS2])
        states += [a + f * (b - a) for f in np.linspace(0.0, 1.0, 25)]
    d = mujoco.MjData(m)
    near_table = 0
    for q in states:
        data = s._collide(q)
        reported = {tuple(sorted(c)) for c in data.contact.geom[: data.ncon]}
        d.qpos[:] = s.full_qpos(q)
        mujoco.mj_kinematics(m, d)
        for a, b in pairs:
            if mujoco.mj_geomDistance(m, d, int(a), int(b), horizon, None) < horizon - 1e-9:
                near_table += 1
                assert (min(a, b), max(a, b)) in reported, (m.geom(a).name, m.geom(b).name)
    assert near_table > 100  # the states do reach the table


def test_allowed_pairs_are_never_generated_and_checked_ones_always_are():
    """The stand's arms hang from bases welded to the world: their first links against the
    bases are allowed pairs MuJoCo's parent filter does not drop, so the checker masks them
    out with collision bits (they were 42 % of its contacts at a 4 cm horizon). Over random
    states every contact is a checked pair, and every checked pair nearer than the horizon
    (``mj_geomDistance`` on the source model) is a contact, but for the weak box-box pairs
    (MuJoCo's box-box collider skips some separations within the margin)."""
    m = load_stand()
    horizon = 0.04
    with pytest.warns(UserWarning, match="box vs box"):
        checker = CollisionChecker(
            m, STAND_ARMS, CollisionConfig(margin_m=0.005, horizon_m=horizon)
        )
    weak = {(p.name1, p.name2) for p, why in checker.weak_pairs if why == "box vs box"}
    assert weak == {
        ("stand/pillar", "a/l3_geom"),
        ("stand/pillar", "b/l3_geom"),
        ("a/l3_geom", "b/l3_geom"),
    }
    s = checker.session(("a", "b"), m.qpos0)
    names = checker.pairs.geom_names
    pairs = [
        (int(a), int(b))
        for a, b in zip(*np.nonzero(np.triu(s.checked, 1)), strict=True)
        if (names[a], names[b]) not in weak
    ]
    rng = np.random.default_rng(11)
    joints = [m.joint(j).id for a in STAND_ARMS for j in STAND_ARMS[a]]
    lo, hi = m.jnt_range[joints, 0], m.jnt_range[joints, 1]
    d = mujoco.MjData(m)
    near = 0
    for _ in range(300):
        q = rng.uniform(lo, hi)
        data = s._collide(q)
        geoms = data.contact.geom[: data.ncon]
        assert s.checked[geoms[:, 0], geoms[:, 1]].all()
        reported = {tuple(sorted(map(int, g))) for g in geoms}
        d.qpos[:] = s.full_qpos(q)
        mujoco.mj_kinematics(m, d)
        for a, b in pairs:
            if mujoco.mj_geomDistance(m, d, a, b, horizon, None) < horizon - 1e-9:
                near += 1
                assert (a, b) in reported, (names[a], names[b])
    assert near > 100

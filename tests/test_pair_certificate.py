"""Per-pair clearance certificates: seed 003's numbers, the envelope, the bounds, the plan
artifact and its independent re-verification with coal."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import mujoco
import numpy as np
import pytest
from rob_twin.cli.main import main as cli_main
from rob_twin.experiments.exp_clearance_examples import (
    envelope_example,
    rotation_example,
    two_link_example,
)
from rob_twin.models import dimensions as D
from rob_twin.models.loading import apply_home, load_scene
from rob_twin.models.names import Arm, arm_joints, group_arms
from rob_twin.planners.certificate_check import coal_pair_distances, verify_document
from rob_twin.planners.certificate_envelope import envelope_minima
from rob_twin.planners.certificate_geometry import _group_geometry, joint_geom_radii, model_hash
from rob_twin.planners.errors import PlannerConfigError
from rob_twin.planners.geom_pairs import PairClass
from rob_twin.planners.goals import JointGoal
from rob_twin.planners.group import ArmGroup, GroupConfig
from rob_twin.planners.oracle import CoalOracle
from rob_twin.planners.pair_certificate import CertificateConfig
from rob_twin.planners.plan import PlanStatus
from rob_twin.planners.plan_file import PlanFileError, load_plan_file, save_plan
from rob_twin.planners.uncertainty import UncertaintySpec, pair_allowances_m

# ---------------------------------------------------------------- seed 003's numbers


def test_seed_envelope_example():
    env = envelope_example()
    assert env["certified_mm"] == pytest.approx(3.5)
    assert env["first_minimum_at_s"] == pytest.approx(0.375)
    assert env["outer_queries_only_mm"] == pytest.approx(1.0)
    assert sorted(env["at_s"]) == pytest.approx([0.375, 1.625])


def test_seed_rotation_example():
    r = rotation_example()
    assert r["point_mm"] == pytest.approx(0.200, abs=5e-4)
    assert r["pivot_mm"] == pytest.approx(1.414, abs=5e-4)
    assert r["axis_mm"] == pytest.approx(12.341, abs=5e-4)
    assert r["total_mm"] == pytest.approx(13.955, abs=5e-4)
    assert r["left_of_20_mm"] == pytest.approx(6.045, abs=5e-4)


def test_seed_two_link_sensitivity():
    r = two_link_example()
    assert r["endpoint_m"] == pytest.approx([0.5, 0.5])
    assert r["first_order_mm"] == pytest.approx(7.07, abs=5e-3)
    assert r["exact_mm"] <= r["certificate_bound_mm"] + 1e-9  # the bound covers the exact error


# ---------------------------------------------------------------- envelope


def test_envelope_minima_equal_a_dense_evaluation():
    """Exact per-segment minima match brute force on random multi-pair data, uneven s."""
    rng = np.random.default_rng(3)
    P, N = 6, 9
    s = np.cumsum(rng.uniform(0.0, 0.3, (P, N)), axis=1)
    s[:, 0] = 0.0
    s[2, 3] = s[2, 2]  # a segment of zero length (a pair no joint moves)
    lower = rng.uniform(0.0, 1.0, (P, N))
    val, sc, ia, ib = envelope_minima(s, lower)
    for p in range(P):
        for k in range(N - 1):
            grid = np.linspace(s[p, k], s[p, k + 1], 2001)
            dense = np.max(lower[p][None, :] - np.abs(grid[:, None] - s[p][None, :]), axis=1)
            assert val[p, k] == pytest.approx(
                dense.min(), abs=1e-3 * (s[p, k + 1] - s[p, k]) + 1e-12
            )
            assert s[p, k] - 1e-12 <= sc[p, k] <= s[p, k + 1] + 1e-12
            assert ia[p, k] <= k < ib[p, k]


# ---------------------------------------------------------------- uncertainty


def test_allowances_add_up_and_shared_joints_cancel():
    spec = UncertaintySpec(
        joint_zero_offset_rad=0.001,
        pivot_m=0.0005,
        axis_rad=0.002,
        point_m=0.0001,
        obstacle_m=0.003,
    )
    radii = np.array([[0.5, 0.0], [0.5, 0.3], [0.0, 0.0]])
    e = pair_allowances_m(
        radii, np.array([1.0, 0.5]), np.array([True, False, False]), np.array([1.0, 1.0, 2.0]), spec
    )
    assert e[1] > e[0] - spec.obstacle_m  # one more joint in the chain, more allowance
    not_world = pair_allowances_m(
        radii, np.array([1.0, 0.5]), np.zeros(3, bool), np.array([1.0, 1.0, 2.0]), spec
    )
    assert e[0] - not_world[0] == pytest.approx(
        spec.obstacle_m
    )  # the obstacle term: world pairs only
    assert e[2] == pytest.approx(2 * spec.point_m + spec.query_tolerance_m)  # no joint between them
    zero = pair_allowances_m(
        radii, np.array([1.0, 0.5]), np.zeros(3, bool), np.ones(3), UncertaintySpec()
    )
    assert zero == pytest.approx(np.full(3, UncertaintySpec().query_tolerance_m))


def test_bad_uncertainty_is_a_typed_error():
    with pytest.raises(PlannerConfigError, match="axis_rad"):
        UncertaintySpec(axis_rad=float("nan"))
    with pytest.raises(PlannerConfigError, match="point_m"):
        UncertaintySpec(point_m=-1e-3)
    with pytest.raises(PlannerConfigError, match="one of"):
        UncertaintySpec.from_dict({"pivot": 0.1})
    with pytest.raises(PlannerConfigError, match="payload_reach_m"):
        CertificateConfig(payload_reach_m=-0.1)
    # margin 5 mm + 2 x 20 mm point error = 45 mm > the 40 mm default horizon
    with pytest.raises(PlannerConfigError, match="can ever be certified"):
        GroupConfig(certificate=CertificateConfig(spec=UncertaintySpec(point_m=0.02)))


# ---------------------------------------------------------------- a group and its plans


@pytest.fixture(scope="module")
def scene():
    m = load_scene()
    d = mujoco.MjData(m)
    apply_home(m, d)
    return m, d.qpos.copy()


def _group(scene, **cfg) -> ArmGroup:
    m, home = scene
    g = ArmGroup(m, group_arms(), GroupConfig(**cfg) if cfg else None)
    g.set_qpos(home)
    return g


HOME = np.array(D.HOME_ARM_POSE)
GOALS = {
    "right": JointGoal(HOME + np.array([0.3, 0.2, 0.0, -0.3, 0.2, 0.1, 0.2])),
    "left": JointGoal(HOME + np.array([-0.2, 0.1, 0.2, -0.2, -0.1, 0.1, 0.3])),
}


@pytest.fixture(scope="module")
def planned(scene):
    g = _group(scene)
    return g, g.plan(GOALS, seed=0).unwrap()


def test_pair_radii_drop_shared_joints_and_bound_relative_motion(scene):
    """Per-pair Lipschitz: |d(q1) - d(q2)| <= sum |dq_j| R_j(pair) for coal distances."""
    m, home = scene
    g = _group(scene)
    geo = _group_geometry(g, ("right", "left"), 0.0)
    names = np.array(geo.names)
    same_arm = np.flatnonzero(geo.pair_class == int(PairClass.SELF))
    assert same_arm.size and np.all(geo.radii[same_arm, 0] == 0.0)  # j1 moves both: cancels
    arm_arm = np.flatnonzero(geo.pair_class == int(PairClass.ARM_ARM))
    assert np.all((geo.radii[arm_arm] > 0).sum(axis=1) >= 2)
    all_r = joint_geom_radii(m, list(group_arms()["right"]))
    assert np.all(all_r[:, [i for i, n in enumerate(names) if n.startswith("left/")]] == 0.0)
    oracle = CoalOracle(m)
    idx = np.concatenate([g.checker.arm_qpos[a] for a in ("right", "left")])
    lo = np.concatenate([g.joint_limits(a)[0] for a in ("right", "left")])
    hi = np.concatenate([g.joint_limits(a)[1] for a in ("right", "left")])
    rng = np.random.default_rng(1)
    pick = rng.choice(geo.g1.size, 40, replace=False)
    sub = replace(
        geo,
        g1=geo.g1[pick],
        g2=geo.g2[pick],
        pair_class=geo.pair_class[pick],
        radii=geo.radii[pick],
    )
    worst = -np.inf
    for _ in range(25):
        q1 = rng.uniform(lo, hi)
        q2 = np.clip(q1 + rng.normal(0, 0.05, q1.size), lo, hi)
        d, _ = coal_pair_distances(oracle, sub, home, idx, np.vstack([q1, q2]), 10.0)
        bound = sub.radii @ np.abs(q2 - q1)
        worst = max(worst, float(np.max(np.abs(d[:, 1] - d[:, 0]) - bound)))
    assert worst <= 1e-7


def test_every_plan_is_certified_and_the_bound_holds_densely(scene, planned):
    """Soundness on one plan: coal every 1 ms along the samples' linear interpolation (a
    motion within the speed bound) never finds a pair below its certified minimum."""
    m, home = scene
    g, plan = planned
    cert = plan.certificate
    assert cert.certified and cert.certified_min_m >= cert.margin_m
    assert cert.pairs_far > 0 and cert.pairs_total == _group_geometry(g, plan.moving, 0.0).g1.size
    assert cert.model_hash == model_hash(m) and len(cert.model_hash) == 16
    geo = _group_geometry(g, plan.moving, 0.0)
    t = plan.t
    dense_t = np.arange(0.0, t[-1], 0.001)
    q = plan.stacked("q")
    dense_q = np.column_stack([np.interp(dense_t, t, q[:, j]) for j in range(q.shape[1])])
    idx = np.concatenate([g.checker.arm_qpos[a] for a in plan.moving])
    d, _ = coal_pair_distances(CoalOracle(m), geo, home, idx, dense_q[::3], cert.horizon_m)
    assert float(d.min()) >= cert.certified_min_m - 1e-6
    listed = {p.pair: p for p in cert.pairs}
    assert listed and all(p.certified_min_m <= p.envelope_min_m for p in listed.values())


def test_the_far_pair_bound_names_its_pair_and_holds(scene, planned):
    """The far pairs' closed-form bound is on a named pair: a checked pair of the model,
    not one with an envelope of its own, that coal along the plan never finds below the
    bound; where the bound is the minimum, a person reads the pair, not the placeholder."""
    from rob_twin.planners.certificate_geometry import _pair_name
    from rob_twin.planners.certificate_record import FAR_PAIR_TEXT

    m, home = scene
    g, plan = planned
    cert = plan.certificate
    geo = _group_geometry(g, plan.moving, 0.0)
    names = [_pair_name(geo, p) for p in range(geo.g1.size)]
    assert cert.far_pair in names and cert.far_pair not in {p.pair for p in cert.pairs}
    p = names.index(cert.far_pair)
    one = replace(
        geo,
        g1=geo.g1[[p]],
        g2=geo.g2[[p]],
        pair_class=geo.pair_class[[p]],
        radii=geo.radii[[p]],
    )
    idx = np.concatenate([g.checker.arm_qpos[a] for a in plan.moving])
    d, _ = coal_pair_distances(CoalOracle(m), one, home, idx, plan.stacked("q"), 10.0)
    assert float(d.min()) >= cert.far_pairs_min_m
    assert cert.where() == cert.pair != FAR_PAIR_TEXT
    bounded = replace(cert, pair=FAR_PAIR_TEXT, certified_min_m=cert.far_pairs_min_m)
    assert bounded.where().startswith(f"bound of {cert.far_pair}, never within the ")
    assert replace(bounded, far_pair="").where() == "a pair never within the horizon"


def test_a_plan_that_cannot_be_certified_fails_with_a_typed_reason(scene):
    # a 0.3 rad axis error costs centimetres at the hand: no pair near the arm certifies
    cfg = CertificateConfig(spec=UncertaintySpec(axis_rad=0.3))
    g = _group(scene, certificate=cfg, max_repairs=0)
    result = g.plan({"right": JointGoal(HOME + 0.2)}, seed=1)
    assert result.status is PlanStatus.UNCERTIFIED and result.plan is None
    assert "threshold" in result.reason and "mm" in result.reason


def test_uncertainty_lowers_the_certified_minimum(scene):
    spec = UncertaintySpec(pivot_m=0.0002, axis_rad=0.0005, point_m=0.0001)
    g = _group(scene, certificate=CertificateConfig(spec=spec))
    plan = g.plan({"right": JointGoal(HOME + 0.2)}, seed=1).unwrap()
    plain = _group(scene).plan({"right": JointGoal(HOME + 0.2)}, seed=1).unwrap()
    assert plan.certificate.spec == spec and plan.certificate.certified
    assert plan.certificate.pairs[0].allowance_m > plain.certificate.pairs[0].allowance_m
    np.testing.assert_array_equal(plan.t, plain.t)  # same plan, only the certificate differs


# ---------------------------------------------------------------- artifact + re-verification


def test_saved_certificate_reverifies_with_coal_and_tampering_is_caught(scene, planned, tmp_path):
    m, _ = scene
    g, plan = planned
    path = save_plan(tmp_path / "plan.json", g, plan)
    doc = load_plan_file(path)
    report = verify_document(doc, m)
    assert report.ok, report.disagreements
    assert report.coal_queries > 0 and report.max_pair_difference_m <= 2e-4
    forged = json.loads(json.dumps(doc))
    forged["certificate"]["pairs"][0]["certified_min_m"] += 0.002
    assert not verify_document(forged, m).ok
    jumped = json.loads(json.dumps(doc))
    jumped["q_rad"]["right"][len(plan.t) // 2][3] += 0.2
    bad = verify_document(jumped, m)
    assert not bad.ok and any("speed bound" in x for x in bad.disagreements)
    other = json.loads(json.dumps(doc))
    other["certificate"]["model_hash"] = "0" * 16
    assert any("model hash" in x for x in verify_document(other, m).disagreements)


def test_certify_command_exit_codes_and_one_json_object(planned, tmp_path, capsys):
    g, plan = planned
    path = save_plan(tmp_path / "plan.json", g, plan)
    assert cli_main(["certify", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and out["hardware_io"] is False
    doc = json.loads(path.read_text())
    doc["certificate"]["pairs"][0]["certified_min_m"] += 0.002
    path.write_text(json.dumps(doc))
    assert cli_main(["certify", str(path), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["disagreements"]
    (tmp_path / "junk.json").write_text("{not json")
    assert cli_main(["certify", str(tmp_path / "junk.json"), "--json"]) == 2
    err = json.loads(capsys.readouterr().out)
    assert err["type"] == "PlanFileError" and "not JSON" in err["error"]
    with pytest.raises(PlanFileError, match="missing field"):
        (tmp_path / "empty.json").write_text("{}")
        load_plan_file(tmp_path / "empty.json")


def test_payload_reach_grows_only_gripper_radii(scene):
    m, _ = scene
    joints = list(group_arms()["right"])
    plain = joint_geom_radii(m, joints)
    loaded = joint_geom_radii(m, joints, payload_reach_m=0.1)
    grown = np.flatnonzero(np.any(loaded > plain, axis=0))
    assert grown.size and np.all(
        (loaded - plain)[:, grown][plain[:, grown] > 0] == pytest.approx(0.1)
    )
    assert math.isclose(float((loaded - plain).max()), 0.1)


def _arm_configurations(m, d, jids, rng, n):
    """``n`` times: joints ``jids`` uniform in their ranges, written into ``d`` (the other
    joints as ``d`` holds them), kinematics done."""
    for _ in range(n):
        for jid in jids:
            lo, hi = m.jnt_range[jid]
            d.qpos[m.jnt_qposadr[jid]] = rng.uniform(lo, hi)
        mujoco.mj_kinematics(m, d)
        yield


def test_joint_geom_radii_bound_every_geom_point_in_random_configurations():
    """R_j(g) bounds the distance from joint j's anchor to every point of geom g it moves,
    in any configuration (the triangle inequality along the tree), and is 0 for the rest."""
    m = load_scene()
    d = mujoco.MjData(m)
    names = arm_joints(Arm.RIGHT)
    radii = joint_geom_radii(m, names)
    chain = radii.max(axis=1)  # the farthest geom each joint moves
    assert np.all(np.diff(chain) <= 1e-12) and 0.5 < chain[0] < 1.2  # outer joints move less
    rng = np.random.default_rng(0)
    jids = [m.joint(n).id for n in names]
    for _ in _arm_configurations(m, d, jids, rng, 50):
        for k, jid in enumerate(jids):
            anchor = d.xanchor[jid]
            for g in range(m.ngeom):
                b = m.geom_bodyid[g]
                while b > 0 and b != m.jnt_bodyid[jid]:
                    b = m.body_parentid[b]
                if b == m.jnt_bodyid[jid]:
                    assert (
                        np.linalg.norm(d.geom_xpos[g] - anchor) + m.geom_rbound[g]
                        <= radii[k, g] + 1e-9
                    )
                else:
                    assert radii[k, g] == 0.0


def test_radii_count_fingers_held_open_at_the_reference():
    """The fingers slide (up to 4 cm) but are not planned: they stay where the reference
    holds them. Held open, every finger point stays within the radii made for that
    reference in every arm configuration; the radii of a closed reference do not bound
    them, and the pair geometry of a group follows its reference's opening."""
    m = load_scene()
    d = mujoco.MjData(m)
    names = arm_joints(Arm.RIGHT)
    fingers = [m.joint(f"right/finger_{s}").id for s in ("a", "b")]
    opened = m.qpos0.copy()
    opened[m.jnt_qposadr[fingers]] = m.jnt_range[fingers, 1]
    closed_r = joint_geom_radii(m, names, reference_qpos=m.qpos0)
    open_r = joint_geom_radii(m, names, reference_qpos=opened)
    jids = [m.joint(n).id for n in names]
    rng = np.random.default_rng(1)
    worst_open = worst_closed = -np.inf
    d.qpos[:] = opened
    for _ in _arm_configurations(m, d, jids, rng, 60):
        for k, jid in enumerate(jids):
            moved = open_r[k] > 0
            far = np.linalg.norm(d.geom_xpos[moved] - d.xanchor[jid], axis=1)
            far = far + m.geom_rbound[moved]
            worst_open = max(worst_open, float((far - open_r[k, moved]).max()))
            worst_closed = max(worst_closed, float((far - closed_r[k, moved]).max()))
    assert worst_open <= 1e-9 < worst_closed
    g = ArmGroup(m, group_arms())
    g.set_qpos(opened)
    finger_a = m.geom("right/finger_a_geom").id
    pairs = _group_geometry(g, ("right",), 0.0)
    row = np.flatnonzero((pairs.g1 == finger_a) | (pairs.g2 == finger_a))[0]
    g.set_qpos(m.qpos0)
    closed_pairs = _group_geometry(g, ("right",), 0.0)
    assert np.all(pairs.radii[row] > closed_pairs.radii[row])


def test_every_plan_the_group_returns_carries_a_certificate(scene):
    plan = _group(scene).plan({"right": JointGoal(HOME + 0.2)}, seed=1).unwrap()
    cert = plan.certificate
    assert cert is not None and cert.certified and not cert.failure
    assert cert.margin_m <= cert.certified_min_m <= plan.min_clearance.distance_m + 1e-9
    assert "certify" in plan.stage_times_s

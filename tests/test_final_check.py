"""The final check: samples proven free really are, the arc between measured samples is
integrated across skipped ones, slowing repairs an uncertifiable segment, config errors."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from planner_fixtures import rob_home_group
from rob_twin.experiments.hard_problems import load
from rob_twin.planners.certificate_envelope import _arc, plan_allowances_m
from rob_twin.planners.certificate_geometry import _group_geometry, covering_rows
from rob_twin.planners.certificate_record import FAIL_INCONCLUSIVE
from rob_twin.planners.errors import PlannerConfigError
from rob_twin.planners.final_check import _next_query, check_bounds, far_stops, final_check
from rob_twin.planners.geom_pairs import PairClass
from rob_twin.planners.group import GroupConfig
from rob_twin.planners.pair_certificate import CertificateConfig, certify_samples, mujoco_query
from rob_twin.planners.plan import PlanStatus
from rob_twin.planners.retime import JointLimits, limit_report, time_path

MOVING = ("right", "left")


@pytest.fixture(scope="module")
def rob():
    return rob_home_group()


@pytest.fixture(scope="module")
def problems():
    return load("rob")


def _paths(group, problems, n_random=12, seed=0):
    """Retimed stacked paths: each hard problem's straight motion (it comes within the
    margin somewhere) and seeded random three-waypoint motions around the start."""
    limits = JointLimits.stack([group.motion_limits(a) for a in MOVING])
    lo = np.concatenate([group.joint_limits(a)[0] for a in MOVING])
    hi = np.concatenate([group.joint_limits(a)[1] for a in MOVING])
    rng = np.random.default_rng(seed)
    out = []
    for p in problems:
        a = np.concatenate([p.start[m] for m in MOVING])
        b = np.concatenate([p.goal[m] for m in MOVING])
        out.append(time_path([a, b], limits))
    base = np.concatenate([group.arm_q(m) for m in MOVING])
    for _ in range(n_random):
        pts = [base] + [np.clip(base + rng.normal(0, 0.5, base.size), lo, hi) for _ in range(2)]
        out.append(time_path(pts, limits))
    return out


def test_every_sample_proven_free_is_free_when_measured(rob, problems):
    """Soundness of the skipping: at every sample the check proved free without a query,
    a direct measurement finds every pair at least its threshold (margin + allowance)."""
    geometry = _group_geometry(rob, MOVING, 0.0)
    meter = rob.meter.session(MOVING, rob.reference_qpos)
    query = mujoco_query(meter, geometry, rob.meter.config.horizon_m)
    margin = rob.config.collision.margin_m
    spec = rob.config.certificate.spec
    proven_total = hits = 0
    worst = np.inf
    for timed in _paths(rob, problems):
        fc = final_check(rob, MOVING, timed, meter)
        times, q, _, _ = fc.sampled
        measured = fc.measured_index
        assert measured[0] == 0 and np.all(np.diff(measured) > 0)
        hits += fc.hit is not None
        if fc.hit is None:
            assert measured[-1] == times.size - 1 and fc.measured + fc.proven == times.size
        proven = np.setdiff1d(np.arange(measured[-1] + 1), measured)
        assert proven.size == fc.proven
        threshold = margin + plan_allowances_m(geometry, q, spec)
        for j in proven:
            worst = min(worst, float(np.min(query(q[j]) - threshold)))
        proven_total += proven.size
    assert proven_total > 500 and hits > 5  # the check really skipped, and really hit
    assert worst >= 0.0, worst


def test_distances_handed_to_the_certificate_are_those_of_their_states(rob, problems):
    """Each column of the final check's distance table is a fresh measurement of its state
    (the loop keeps no view into MjData's contact buffer, which the next query overwrites)."""
    geometry = _group_geometry(rob, MOVING, rob.config.certificate.payload_reach_m)
    meter = rob.meter.session(MOVING, rob.reference_qpos)
    query = mujoco_query(meter, geometry, rob.meter.config.horizon_m)
    compared = 0
    for timed in _paths(rob, problems[:2], n_random=12, seed=5):
        fc = final_check(rob, MOVING, timed, meter)
        if fc.initial is None:
            continue
        times, states, table = fc.initial
        assert table.shape == (geometry.g1.size, times.size)
        for k in range(times.size):
            np.testing.assert_array_equal(table[:, k], query(states[k]))
        compared += times.size
    assert compared > 20


def _one_at_a_time(group, timed, meter):
    """The final check's rule with one measurement per step: measure sample i; stop at a
    hit; else the next is ``_next_query`` of i's checked contacts. Returns (measured
    samples, proven count, hit time or None, measurements a near pair set)."""
    b = check_bounds(group, MOVING, timed)
    index, radii = b.geometry.index, b.geometry.radii
    measured, proven, near_set, i = [], 0, 0, 0
    while True:
        data = meter._collide(b.q[i])
        measured.append(i)
        geom = data.contact.geom[: data.ncon]
        pairs, dist = index[geom[:, 0], geom[:, 1]], data.contact.dist[: data.ncon].copy()
        pairs, dist = pairs[pairs >= 0], dist[pairs >= 0]
        if pairs.size and dist.min() < b.margin_m:
            return measured, proven, float(b.times[i]), near_set
        if i == b.times.size - 1:
            return measured, proven, None, near_set
        nxt = _next_query(i, pairs, dist - b.threshold[pairs], radii, int(b.far_stop[i]), b.cum)
        near_set += nxt != b.far_stop[i]
        proven += nxt - i - 1
        i = nxt


def test_the_batched_walk_measures_what_one_state_at_a_time_would(rob, problems):
    """Batches along the far stops end where a hit or a near pair leaves the chain: the
    same states measured, samples proven, hit and near-set count as one state per step,
    on paths that hit, pass close (near pairs set the next state) and stay clear."""
    meter = rob.meter.session(MOVING, rob.reference_qpos)
    hits = near_set = 0
    for timed in _paths(rob, problems, n_random=16, seed=7):
        fc = final_check(rob, MOVING, timed, meter)
        measured, proven, hit_t, near = _one_at_a_time(rob, timed, meter)
        assert fc.measured_index.tolist() == measured and fc.proven == proven
        assert (fc.hit is None) == (hit_t is None) and fc.set_by_near == near
        if hit_t is not None:
            assert fc.hit[0] == hit_t
        hits += hit_t is not None
        near_set += near
    assert hits > 5 and near_set > 5


def test_arc_is_integrated_across_skipped_samples():
    """Two queries three samples apart: the arc is the sum over the segments between them
    (10 + 1 + 5 m/s over 1 s each), not the rate of the segment holding the midpoint."""
    sample_t = np.array([0.0, 1.0, 2.0, 3.0])
    seg_L = np.array([[10.0, 1.0, 5.0]])
    s = _arc(np.array([0.0, 3.0]), sample_t, seg_L)
    np.testing.assert_allclose(s, [[0.0, 16.0]])
    s = _arc(np.array([0.0, 0.5, 2.5, 3.0]), sample_t, seg_L)
    np.testing.assert_allclose(s, [[0.0, 5.0, 13.5, 16.0]])


def test_skipped_samples_cannot_hide_a_dip():
    """One pair, 5 cm apart at both measured ends; the samples between are skipped; the
    segments next to the ends are fast (5 cm each), the middle one (holding the gap's
    midpoint) at rest: the envelope must see the 10 cm arc (it dips to 0), not the middle
    segment's rate alone (which would certify at 5 cm)."""

    class _Geo:
        g1 = g2 = np.array([0])
        pair_class = np.array([int(PairClass.ARM_ARM)])
        radii = np.array([[1.0]])
        index = np.zeros((1, 1), int)
        names = ("g",)

    t = np.array([0.0, 0.01, 0.02, 0.03])
    q = np.zeros((4, 1))
    qd = np.array([[10.0], [0.0], [0.0], [10.0]])
    initial = (t[[0, 3]], q[[0, 3]], np.array([[0.05, 0.05]]))
    cert = certify_samples(
        _Geo(),
        t,
        q,
        qd,
        np.array([1.0]),
        np.array([20.0]),
        lambda x: np.array([0.05]),
        None,
        0.005,
        0.05,
        CertificateConfig(max_bisections=0),
        "x",
        initial,
    )
    assert not cert.certified and cert.fail_kind == FAIL_INCONCLUSIVE
    assert cert.sample_queries == 2 and cert.samples == 4


def test_covering_rows_dominate_every_pair(rob):
    geometry = _group_geometry(rob, MOVING, 0.0)
    cover = covering_rows(geometry)
    dominated = (cover[None, :, :] >= geometry.radii[:, None, :]).all(axis=2).any(axis=1)
    assert dominated.all() and 1 <= cover.shape[0] < geometry.radii.shape[0]


def test_slowing_repairs_a_segment_the_envelope_could_not_certify(rob, problems):
    """No bisection and no re-planning: the hard problem's plan is not certified at full
    speed; slowing its offending segment certifies it."""
    p, seed = problems[1], 1
    cfg = CertificateConfig(max_bisections=0, tighten_ratio=0.0)
    reference = rob.reference_qpos.copy()
    results = {}
    try:
        for slowdowns in (0, 3):
            rob.config = replace(
                rob.config, certificate=cfg, max_repairs=0, max_slowdowns=slowdowns
            )
            for a in MOVING:
                rob.set_arm(a, p.start[a])
            results[slowdowns] = rob.plan(p.goal, seed=seed)
            rob.set_qpos(reference)
    finally:
        rob.config = GroupConfig()
        rob.set_qpos(reference)
    assert results[0].status is PlanStatus.UNCERTIFIED
    assert FAIL_INCONCLUSIVE in results[0].reason
    plan = results[3].unwrap()
    assert 1 <= plan.slowdowns <= 3 and plan.certificate.certified
    assert plan.certificate.uncertified_attempts == plan.slowdowns


@pytest.mark.parametrize(
    "field, value",
    [
        ("slow_factor", 0.0),
        ("slow_factor", 1.0),
        ("slow_factor", float("nan")),
        ("max_slowdowns", -1),
        ("max_slowdowns", 21),
        ("max_slowdowns", 1.5),
        ("max_slowdowns", True),
    ],
)
def test_bad_slowing_config_is_a_typed_error(field, value):
    with pytest.raises(PlannerConfigError) as err:
        GroupConfig(**{field: value})
    assert field in str(err.value) and str(value) in str(err.value)
    assert "(0, 1)" in str(err.value) or "[0, 20]" in str(err.value)


def test_slowed_path_validates_and_only_stretches_its_segment(rob):
    limits = JointLimits.stack([rob.motion_limits(a) for a in MOVING])
    base = np.concatenate([rob.arm_q(a) for a in MOVING])
    timed = time_path([base, base + 0.2, base + 0.1], limits)
    slow = timed.slowed(0, 0.5)
    assert slow.profiles[0].duration > timed.profiles[0].duration
    assert slow.profiles[1] is timed.profiles[1]
    np.testing.assert_allclose(slow.evaluate(np.array([slow.duration]))[0][0], base + 0.1)
    with pytest.raises(PlannerConfigError, match="factor"):
        timed.slowed(0, 1.5)
    with pytest.raises(PlannerConfigError, match=r"\[0, 1\]"):
        timed.slowed(2, 0.5)


def test_a_plan_carries_a_certificate_of_its_measured_samples(rob):
    goal = {a: rob.arm_q(a) + 0.25 for a in MOVING}
    plan = rob.plan(goal, seed=0).unwrap()
    cert = plan.certificate
    assert cert.certified and cert.samples == plan.t.size
    assert 2 <= cert.measured_samples <= cert.samples
    assert cert.measured_samples + plan.proven_samples == plan.t.size
    assert cert.as_dict()["measured_sample_index"][-1] == plan.t.size - 1
    assert set(plan.stage_times_s) >= {"check", "certify", "total"}
    shares = plan.stage_shares
    assert 0 < shares["certify_share"] <= shares["check_certify_share"] <= 1


def test_far_stops_stop_short_of_an_arc_the_envelope_cannot_cover():
    """Covering-row arcs 0, 1, 2.5, 5, 5.5. Slack 2: from sample 0 the bound fails at
    sample 2 (arc 2.5 >= 2, and 2.5 <= 2 x 2: the next measurement); from 1 at 3 (4 <= 4).
    Slack 1.2: from sample 0 it fails at 2 with an arc of 2.5 > 2.4, so sample 1 (proven
    free) is measured instead. Never before i + 1 nor past the last sample."""
    arcs = np.array([[0.0], [1.0], [2.5], [5.0], [5.5]])
    np.testing.assert_array_equal(far_stops(arcs, 2.0), [2, 3, 3, 4, 4])
    np.testing.assert_array_equal(far_stops(arcs, 1.2)[:2], [1, 2])
    np.testing.assert_array_equal(far_stops(arcs, 0.0), [1, 2, 3, 4, 4])


def test_slowed_plan_keeps_the_joint_limits(rob):
    limits = JointLimits.stack([rob.motion_limits(a) for a in MOVING])
    base = np.concatenate([rob.arm_q(a) for a in MOVING])
    slow = time_path([base, base + 0.3, base - 0.1], limits).slowed(1, 0.5)
    t = np.arange(0.0, slow.duration, 1 / 125.0)
    q, qd, qdd = slow.evaluate(t)
    assert limit_report(q, qd, qdd, 1 / 125.0, limits).respected(1e-6)

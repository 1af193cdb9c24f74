"""The dense clearance check agrees with brute-force coal at every 1 ms state and finds a
certificate value planted above the truth (simulated)."""

from __future__ import annotations

from types import SimpleNamespace

import mujoco
import numpy as np
import pytest
from rob_twin.experiments.dense_clearance import check_plan, for_group
from rob_twin.experiments.hard_problems import STAND_ARMS, STAND_PATH, load
from rob_twin.planners.certificate_geometry import _group_geometry
from rob_twin.planners.errors import PlannerConfigError
from rob_twin.planners.group import ArmGroup
from rob_twin.planners.oracle import CoalOracle

WINDOW_S = 0.2  # the test piece: this much either side of the plan's closest state [s]
CAP_M = 0.04


@pytest.fixture(scope="module")
def planned():
    """A hard problem of the two-arm stand (its straight motion collides), planned; the test
    piece is the plan's samples within ``WINDOW_S`` of its closest approach."""
    g = ArmGroup(mujoco.MjModel.from_xml_path(str(STAND_PATH)), STAND_ARMS)
    problem = load("stand")[0]
    for a in g.arm_names:
        g.set_arm(a, problem.start[a])
    r = g.plan(problem.goal, seed=0)
    assert r.ok, r.reason
    checker = for_group(g, r.plan.moving)
    t_all, q_all = r.plan.t, r.plan.stacked("q")
    at = t_all[int(np.argmin(_sample_clearance(g, checker, q_all)))]
    keep = np.abs(t_all - at) <= WINDOW_S
    t, q = t_all[keep] - t_all[keep][0], q_all[keep]
    return g, r.plan, checker, t, q


def _sample_clearance(group, checker, q):
    """coal's smallest clearance over the checked pairs at each sample (M,) [m]."""
    oracle = CoalOracle(group.model)
    qpos = group.reference_qpos.copy()
    out = np.empty(len(q))
    for i, x in enumerate(q):
        qpos[checker.qpos_index] = x
        oracle.set_qpos(qpos)
        pairs = zip(checker.g1.tolist(), checker.g2.tolist(), strict=True)
        out[i] = min(oracle.distance(a, b) for a, b in pairs)
    return out


def _brute(group, checker, t, q, cap_m):
    """Per pair, coal's minimum over every 1 ms state (capped at cap_m), pairs whose bounding
    spheres are at least cap_m apart counted at the cap."""
    oracle = CoalOracle(group.model)
    dense_t = np.append(np.arange(0.0, t[-1], 0.001), t[-1])
    states = np.column_stack([np.interp(dense_t, t, q[:, j]) for j in range(q.shape[1])])
    rb = group.model.geom_rbound
    out = np.full(checker.g1.size, cap_m)
    qpos = group.reference_qpos.copy()
    for x in states:
        qpos[checker.qpos_index] = x
        oracle.set_qpos(qpos)
        c, g1, g2 = oracle.data.geom_xpos, checker.g1, checker.g2
        gap = np.linalg.norm(c[g1] - c[g2], axis=1) - rb[g1] - rb[g2]
        plane = (group.model.geom_type[checker.g1] == 0) | (group.model.geom_type[checker.g2] == 0)
        for p in np.flatnonzero((gap < cap_m) | plane):
            out[p] = min(out[p], oracle.distance(int(checker.g1[p]), int(checker.g2[p])))
    return out, states.shape[0]


@pytest.fixture(scope="module")
def brute(planned):
    g, _, checker, t, q = planned
    return _brute(g, checker, t, q, CAP_M)


def test_checks_the_planners_pairs(planned):
    g, plan, checker, _, _ = planned
    geo = _group_geometry(g, plan.moving, 0.0)
    assert np.array_equal(checker.g1, geo.g1) and np.array_equal(checker.g2, geo.g2)
    claimed, unknown = checker.claimed_from_certificate(plan.certificate)
    assert unknown == [] and claimed.min() == pytest.approx(plan.certificate.certified_min_m)


def test_agrees_with_brute_force_coal_at_every_ms(planned, brute):
    g, _, checker, t, q = planned
    want, states = brute
    assert (want < CAP_M).sum() >= 2  # some pairs come within the cap on this piece
    inside = want < CAP_M
    ends = np.minimum(*(_brute(g, checker, t[[k, k]], q[[k, k]], CAP_M)[0] for k in (0, -1)))
    assert np.any(want[inside] < ends[inside] - 1e-4)  # some pair is closest mid-piece
    exact = checker.check(t, q, 0.0, CAP_M, tolerance_m=0.0)
    assert exact.states == states
    np.testing.assert_allclose(exact.min_m, want, rtol=0, atol=1e-12)
    assert exact.coal_queries < exact.full_queries / 5  # the motion bound skips most states
    loose = checker.check(t, q, 0.0, CAP_M, tolerance_m=1e-4)
    assert np.all(loose.min_m >= want - 1e-12) and np.all(loose.min_m <= want + 1e-4)
    assert exact.counterexamples == [] and loose.counterexamples == []
    later = checker.check(t + 1.0, q, 0.0, CAP_M, tolerance_m=0.0)  # a piece starting at 1 s
    np.testing.assert_allclose(later.min_m, want, rtol=0, atol=1e-12)
    assert later.states == states


def test_finds_a_planted_counterexample(planned, brute):
    _, plan, checker, t, q = planned
    want, _ = brute
    p = int(np.argmin(want))
    claimed = want - 1e-6
    claimed[p] = want[p] + 0.0005  # the certificate says 0.5 mm more than the truth
    res = checker.check(t, q, claimed, CAP_M, tolerance_m=1e-3)
    assert [c["pair"] for c in res.counterexamples] == [checker.names[p]]
    assert res.counterexamples[0]["true_min_m"] == pytest.approx(want[p], abs=1e-12)
    # through a certificate record: the pair listed by name with a raised value
    fake = SimpleNamespace(
        certified_min_m=float(want.min() - 1e-6),
        horizon_m=CAP_M,
        pairs=[SimpleNamespace(pair=checker.names[p], certified_min_m=float(want[p] + 5e-4))],
    )
    short = SimpleNamespace(t=t, stacked=lambda _: q, certificate=fake)
    res = check_plan(checker, short)
    assert [c["pair"] for c in res.counterexamples] == [checker.names[p]]


def test_the_delivered_plan_holds_its_certificate(planned):
    _, plan, checker, _, _ = planned
    res = check_plan(checker, plan)
    assert res.counterexamples == []
    assert res.true_min_m >= plan.certificate.certified_min_m


def test_rejects_a_bad_step_and_unknown_pairs(planned):
    _, plan, checker, t, q = planned
    with pytest.raises(PlannerConfigError, match="step_s"):
        checker.check(t, q, 0.0, CAP_M, step_s=0.0)
    bad = SimpleNamespace(
        certified_min_m=0.01,
        horizon_m=CAP_M,
        pairs=[SimpleNamespace(pair="nope vs nothing (self)", certified_min_m=0.01)],
    )
    with pytest.raises(PlannerConfigError, match="nope vs nothing"):
        check_plan(checker, SimpleNamespace(t=t, stacked=lambda _: q, certificate=bad))

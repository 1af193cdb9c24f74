"""OpenArm v2's published model, unedited, plans and certifies seeded requests with the
general pair rules, and the dense coal judge finds no sample below its certificate
(simulated; the 40-request figure: ``python -m rob_twin.experiments.openarm_v2_plans``)."""

from __future__ import annotations

import numpy as np
import pytest
from rob_twin.experiments import openarm_v2_plans
from rob_twin.experiments.goal_pairs import goal_pairs
from rob_twin.planners.certificate_check import verify_document
from rob_twin.planners.geom_pairs import ADJACENT_WORLD_PARENT, RIGID_AT_REFERENCE
from rob_twin.planners.oracle import CoalOracle
from rob_twin.planners.plan_file import load_plan_file, save_plan

REQUESTS = 12


@pytest.fixture(scope="module")
def study():
    return openarm_v2_plans.run(REQUESTS, seed=0)


def test_every_request_succeeds_certified_and_densely_rechecked(study):
    failed = [r for r in study["rows"] if r["status"] != "success" or not r["certified"]]
    assert not failed, failed[:3]
    assert study["success"] == study["certified"] == REQUESTS, study.get("start_pair")
    assert study["success"] == study["certified"] == REQUESTS
    assert all("dense_min_m" in r for r in study["rows"])
    assert study["dense_counterexamples"] == 0
    assert study["dense_min_m"] >= 0.005  # the planner's margin, measured by coal every 1 ms


def test_the_exemptions_are_the_two_general_rules_and_are_reported(study):
    exempt = {
        (e["pair"], e["reason"]): e["at_reference_m"] for e in study["exempt_by_the_general_rules"]
    }
    for side in ("right", "left"):
        base = f"base_link_{side}_collision_00 vs link1_{side}_collision_00"
        assert (base, ADJACENT_WORLD_PARENT) in exempt
        pads = f"finger_inner_{side}_collision_03 vs finger_outer_{side}_collision_03"
        assert exempt[(pads, RIGID_AT_REFERENCE)] == pytest.approx(0.0050026, abs=1e-6)
    assert len(exempt) == 4  # nothing else: no arm-arm or arm-world pair


def _exempt(group):
    rules = (ADJACENT_WORLD_PARENT, RIGID_AT_REFERENCE)
    return [a for a in group.checker.pairs.allowed if a.reason in rules]


def test_the_exempt_pairs_hide_no_contact_on_openarm_v2():
    """coal on the unedited model: link1 stays clear of its welded base over J1's whole range
    (J1 turns it about their common axis), and the rigid pads keep one distance whatever the
    arm joints do (the argument of the rule, measured)."""
    group = openarm_v2_plans.openarm_v2_group()
    m = group.model
    oracle = CoalOracle(m)
    exempt = _exempt(group)
    assert len(exempt) == 4
    gid = {n: i for i, n in enumerate(group.checker.pairs.geom_names)}
    rng = np.random.default_rng(3)
    for a in exempt:
        g1, g2 = gid[a.name1], gid[a.name2]
        side = "right" if "right" in a.name1 else "left"
        qpos = m.qpos0.copy()
        adr = group.checker.arm_qpos[side]
        lo, hi = group.joint_limits(side)
        dist = []
        for k in range(101):
            if a.reason == ADJACENT_WORLD_PARENT:  # only J1 moves link1 against its base
                qpos[adr[0]] = lo[0] + (hi[0] - lo[0]) * k / 100
            else:
                qpos[adr] = rng.uniform(lo, hi)
            oracle.set_qpos(qpos)
            dist.append(oracle.distance(g1, g2))
        if a.reason == ADJACENT_WORLD_PARENT:
            assert min(dist) > 0.0009, (a, min(dist))
        else:
            assert np.ptp(dist) < 1e-9 and min(dist) == pytest.approx(
                a.reference_distance_m, abs=1e-6
            )


def test_a_plan_file_reverifies_with_coal_from_the_model_alone(tmp_path):
    group = openarm_v2_plans.openarm_v2_group()
    goals = goal_pairs(
        group, 1, np.random.default_rng(11), min_clearance_m=openarm_v2_plans.MIN_GOAL_CLEARANCE_M
    )
    res = group.plan(goals[0], seed=0)
    assert res.ok and res.plan.certificate.certified, res.reason
    doc = load_plan_file(save_plan(tmp_path / "plan.json", group, res.plan))
    report = verify_document(doc, openarm_v2_plans.load_openarm_v2())
    assert report.ok, report.disagreements

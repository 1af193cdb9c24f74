"""OpenArm v2's published model, unedited, plans and certifies seeded requests with the
general pair rules, and the dense coal judge finds no sample below its certificate
(simulated; the 40-request figure: ``python -m rob_twin.experiments.openarm_v2_plans``)."""

from __future__ import annotations

import pytest
from rob_twin.experiments import openarm_v2_plans
from rob_twin.planners.geom_pairs import ADJACENT_WORLD_PARENT, RIGID_AT_REFERENCE

REQUESTS = 20


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

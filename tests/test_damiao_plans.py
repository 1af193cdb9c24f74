"""The planner and the synchronized executor drive OpenArm v2 too: a plan scenario for both
arms, planned on v2's own model and completed through the 500 Hz Damiao owners."""

from __future__ import annotations

import dataclasses

from rob_twin.twin.scenario.run import Scenario, run_scenario, scenario_loop
from rob_twin.twin.sim.damiao_loop import DamiaoClosedLoop
from rob_twin.twin.sim.execution import loop_executor_config

# both arms from OpenArm's home (elbows at 90 degrees) forward and in, then back out
OPENARM_PLANS = {
    "name": "openarm_plans",
    "robot": "openarm",
    "duration": 7.0,
    "cameras": ["overview"],
    "plans": [
        {
            "t": 0.3,
            "goals": {
                "right": [0.7, 0.25, 0.2, 1.3, 0.1, 0.2, 0.0],
                "left": [-0.7, -0.25, -0.2, 1.3, -0.1, -0.2, 0.0],
            },
        },
        {
            "t": 3.8,
            "goals": {
                "right": [0.2, 0.5, -0.3, 0.9, 0.0, -0.2, 0.3],
                "left": [-0.2, -0.5, 0.3, 0.9, 0.0, 0.2, -0.3],
            },
        },
    ],
}


def test_plans_complete_on_openarm_as_planned():
    res = run_scenario(Scenario.from_dict(OPENARM_PLANS), record=False, progress=False)
    assert [p["outcome"] for p in res.plans] == ["completed", "completed"], res.plans
    assert all(p["max_deviation_rad"] < 0.002 for p in res.plans)
    assert all(v["owner_fault"] is None for v in res.pipeline.values())


def test_executor_lookahead_is_one_owner_period():
    sc = dataclasses.replace(Scenario.from_dict(OPENARM_PLANS))
    lp = scenario_loop(sc)
    try:
        assert isinstance(lp, DamiaoClosedLoop)
        assert loop_executor_config(lp).lookahead_s == 0.002
    finally:
        lp.close()

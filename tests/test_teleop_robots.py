"""Teleop on a robot other than ROB: OpenArm v2 (no torso, Damiao drives) is driven from a
controller trace through its own arm kinematics (``planners.robot_kinematics``: MuJoCo on its
own model), and a robot without CAN drives or arm kinematics is refused naming the capability."""

from __future__ import annotations

import numpy as np
import pytest
from rob_twin.cli.main import main
from rob_twin.models.names import Arm
from rob_twin.models.robot import robot_of
from rob_twin.planners.mj_kinematics import MjArmKinematics
from teleop_support import circle_trace, client, hello, recv_until, replay, run, start_app


def test_a_trace_moves_openarms_right_arm_through_its_own_kinematics():
    with start_app(robot="openarm") as app:
        assert app.loop.robot is robot_of("openarm")
        filt = app.controller.filters[Arm.RIGHT]
        assert isinstance(filt.kin, MjArmKinematics)
        owner = app.controller.owners[Arm.RIGHT]
        q0 = owner.commanded_state()[0]

        async def go():
            async with client(app.server.ws_url) as ws:
                await ws.send(hello("trace"))
                assert (await recv_until(ws, "welcome"))["role"] == "operator"
                await replay(app, ws, "trace", circle_trace(95))
                return float(np.max(np.abs(owner.commanded_state()[0] - q0)))

        moved = run(go())
    assert moved > 0.005, app.controller.counts
    assert app.controller.counts["targets_submitted"] > 30, app.controller.counts
    assert owner.fault is None


def test_teleop_refuses_a_robot_without_can_drives(tmp_path, capsys):
    from rob_twin.experiments.robot_factory import generate_robot

    gen = generate_robot(tmp_path, 2, family="ideal", joints=5)
    code = main(["teleop", "--robot", str(gen.robot_file), "--seconds", "0.1"])
    assert code == 2 and "can_drives" in capsys.readouterr().err


@pytest.mark.parametrize("robot", ["openarm"])
def test_teleop_help_names_the_robot_option(robot, capsys):
    with pytest.raises(SystemExit):
        main(["teleop", "--help"])
    assert "--robot" in capsys.readouterr().out

"""``rob-twin bank --robot`` and ``host --robot`` serve and drive the robot a file names:
a generated Amber robot nobody tuned for, on its own channels and joint ranges, over
socketcand on 127.0.0.1; a robot without CAN drives is refused up front by both (exit 2)."""

from __future__ import annotations

import pytest
from bank_support import running_bank
from rob_twin.cli.main import main
from rob_twin.experiments import robot_factory as F
from rob_twin.models.robot import robot_of
from rob_twin.twin.bus.host_process import HostConfig, run_host
from rob_twin.twin.drives.amber_robot import robot_channels


@pytest.mark.realtime
def test_a_generated_amber_robot_is_served_and_driven_as_itself(tmp_path, machine_jitter):
    # the host's 20 ms publication deadline, widened by the measured jitter when busy
    publish_s = machine_jitter.widen_or_skip(0.02, 1.0, "the host's publication deadline")
    gen = F.generate_robot(tmp_path / "robot", 4, family="amber")
    robot = robot_of(gen.robot_file)
    with running_bank(tmp_path, "--robot", str(gen.robot_file)) as bank:
        status = bank.control({"cmd": "status"})
        assert status["robot"] == robot.identity()
        assert set(status["buses"]) == set(robot_channels(robot).values())
        report = run_host(
            HostConfig(
                port=bank.socketcand_port,
                channels=robot_channels(robot),
                robot=str(gen.robot_file),
                seconds=1.5,
                stream="wave",
                feedback_timeout_s=1.0,
                publish_deadline_s=publish_s,
            )
        )
        bank.shutdown()
    assert report["ended"] == "seconds", report.get("end_reason")
    for arm in ("right", "left"):
        assert report["arms"][arm]["fault"] is None, report["arms"][arm]
        assert report["arms"][arm]["max_travel_rad"] > 0.01  # the wave moved the drives
        assert report["arms"][arm]["samples_published"] > 50


def test_bank_and_host_refuse_a_robot_without_can_drives(capsys, tmp_path):
    ideal = F.generate_robot(tmp_path / "ideal", 0, family="ideal")
    assert main(["bank", "--robot", str(ideal.robot_file), "--seconds", "1"]) == 2
    assert "can_drives" in capsys.readouterr().err  # the bank serves Amber and Damiao drives
    # the host drives Amber and Damiao drives (openarm: tests/test_damiao_host.py)
    assert main(["host", "--robot", str(ideal.robot_file), "--seconds", "0.1"]) == 2
    assert "can_drives" in capsys.readouterr().err


def test_the_mirror_twin_takes_per_arm_drive_configs(tmp_path):
    """A calibration's (and a robot's) drive configs are per arm: the live mirror's start
    pose goes through each arm's own (it crashed zipping the dict as seven configs)."""
    from dataclasses import replace

    from rob_twin.cli.mirror import _parameters
    from rob_twin.models.names import Arm
    from rob_twin.twin.bus.mirror_live import _joint_frame

    gen = F.generate_robot(tmp_path / "robot", 4, family="amber")
    robot = robot_of(gen.robot_file)
    params = _parameters(None, robot)
    assert set(params.drive_configs) == set(Arm)
    flipped = {
        Arm.RIGHT: params.drive_configs[Arm.RIGHT],
        Arm.LEFT: tuple(replace(c, sign=-1) for c in params.drive_configs[Arm.LEFT]),
    }
    q = [0.1 * j for j in range(1, 8)]
    frame = _joint_frame({Arm.RIGHT: q, Arm.LEFT: q}, replace(params, drive_configs=flipped))
    assert frame[Arm.RIGHT] == q and frame[Arm.LEFT] == [-x for x in q]
    lo, hi = robot.joint_ranges("left")[0]
    assert params.drive_configs[Arm.LEFT][0].lower_rad == lo
    assert params.drive_configs[Arm.LEFT][0].upper_rad == hi

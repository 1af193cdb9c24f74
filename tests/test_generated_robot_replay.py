"""A generated Damiao robot's synthetic recording replays bit for bit with its hidden values.
Seed 8 (``rob_twin.experiments.robot_factory``, implicitfast integrator),
hidden right J2 armature 0.05, the unseeded excitation: from 1.68 s the left wrist presses
on the right shoulder, the left owner faults on its tracking error at 2.32 s and stops
sending, and the CAN watchdog its bring-up wrote (TIMEOUT 0.1 s) leaves the left drives
limp at 2.42 s. A replay whose drives lacked that register (built at power-up, watchdog
off) held the left arm up against the right one: 1,949 of the 3 s recording's 18,627
replies differed (simulated). The sidecar's ``drive_registers`` now carry it."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from rob_twin.controllers.damiao_codec import Status
from rob_twin.models.names import Arm
from rob_twin.models.robot import robot_of
from rob_twin.twin.bus.replay import read_recording, replay
from rob_twin.twin.calibration import synthetic

SEED = 8  # robot_factory seed: a Damiao robot with the implicitfast integrator
HIDDEN = {"right/j2/armature": 0.05}  # [kg m^2]
SECONDS = 2.5  # recorded [s]: the left watchdog trips at 2.424 s


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """(robot, recording path, the recording run's final qpos, its left drives)."""
    from rob_twin.experiments.robot_factory import generate_robot

    tmp = tmp_path_factory.mktemp("gen")
    robot = robot_of(str(generate_robot(tmp, SEED, family="damiao").robot_file))
    loops = []

    def keep(*args, **kwargs):
        loops.append(make(*args, **kwargs))
        return loops[-1]

    make = synthetic.make_closed_loop
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(synthetic, "make_closed_loop", keep)
        path = synthetic.record_hidden(tmp / "gen.log", HIDDEN, SECONDS, robot=robot)
    (loop,) = loops
    return robot, path, loop.twin.data.qpos.copy(), loop.bank.drives_of(Arm.LEFT).drives


def test_the_recording_is_of_a_generated_implicitfast_robot_whose_left_watchdog_trips(recorded):
    robot, path, _, left = recorded
    assert robot.family == "damiao" and int(robot.model().opt.integrator) == 3  # implicitfast
    # what the replay must reproduce: the left host went quiet and its drives went limp
    assert all(d.error is Status.COMMUNICATION_LOST for d in left)
    meta = json.loads(path.with_name(path.name + ".json").read_text())
    counts = round(0.1 / 50e-6)  # DamiaoOptions.timeout_s in TIMEOUT counts (50 us)
    assert {j: r["TIMEOUT"] for b in meta["drive_registers"].values() for j, r in b.items()} == {
        str(j): counts for j in range(1, 8)
    }


def test_the_replay_with_the_hidden_values_is_bit_exact(recorded):
    robot, path, final_qpos, _ = recorded
    result = replay(read_recording(path), robot=robot, parameters=HIDDEN)
    assert result.feedback_frames > 16_000 and result.feedback_mismatches == 0
    np.testing.assert_array_equal(result.qpos[-1], final_qpos)


def test_a_sidecar_without_the_registers_does_not_replay_exactly(recorded, tmp_path):
    """The recording as the recorder wrote it before it stored drive_registers: none."""
    robot, path, final_qpos, _ = recorded
    old = tmp_path / path.name
    shutil.copy(path, old)
    meta = json.loads(path.with_name(path.name + ".json").read_text())
    del meta["drive_registers"]
    old.with_name(old.name + ".json").write_text(json.dumps(meta))
    result = replay(read_recording(old), robot=robot, parameters=HIDDEN)
    assert result.feedback_mismatches > 100  # 244 (simulated): the right arm's replies
    assert not np.array_equal(result.qpos[-1], final_qpos)

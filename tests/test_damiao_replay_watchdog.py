"""A replay's Damiao drives carry the CAN watchdog the recording's host armed before the
recording started: a host that stops sending mid-recording leaves its drives
limp 0.1 s later in the recording, and so in the replay."""

from __future__ import annotations

import json

import numpy as np
import pytest
from rob_twin.controllers.damiao_codec import Register, Status
from rob_twin.models.names import Arm
from rob_twin.models.robot import robot_of
from rob_twin.twin.bus.recording import TrafficRecorder
from rob_twin.twin.bus.replay import read_recording, replay
from rob_twin.twin.bus.sidecar import SidecarError, validate_sidecar
from rob_twin.twin.sim.faults import FaultKind, FaultSpec
from rob_twin.twin.sim.loops import loop_config, make_closed_loop

OPENARM = robot_of("openarm")
BUS_OFF_AT_S = 0.1  # the left host's frames stop reaching its drives [s]
SECONDS = 0.4  # recorded [s]: the watchdog (0.1 s) trips at 0.2 s, the arm falls after


@pytest.fixture(scope="module")
def silenced(tmp_path_factory):
    """A recording whose left host goes off the bus at 0.1 s, and the recording run's
    final qpos and left drives."""
    fault = FaultSpec(FaultKind.BUS_OFF, Arm.LEFT, at=BUS_OFF_AT_S)
    loop = make_closed_loop(loop_config(OPENARM, "a test", faults=(fault,)))
    path = tmp_path_factory.mktemp("wd") / "silenced.log"
    recorder = TrafficRecorder(loop, path)
    try:
        loop.run_for(SECONDS)
    finally:
        recorder.close()
        loop.close()
    return path, loop.twin.data.qpos.copy(), loop.bank.drives_of(Arm.LEFT).drives


def test_the_sidecar_holds_the_watchdog_the_bring_up_wrote(silenced):
    path, _, drives = silenced
    # the recording run's left drives lost their host and went limp
    assert all(d.error is Status.COMMUNICATION_LOST for d in drives)
    meta = json.loads(path.with_name(path.name + ".json").read_text())
    counts = round(0.1 / 50e-6)  # DamiaoOptions.timeout_s in TIMEOUT counts
    assert set(meta["drive_registers"]) == set(meta["wiring"])  # both arms' buses
    for joints in meta["drive_registers"].values():
        assert joints == {
            str(j): {"TIMEOUT": counts} for j in range(1, OPENARM.joint_count(Arm.LEFT) + 1)
        }


def test_the_replay_reproduces_the_recording_run_after_the_host_stops(silenced):
    path, final_qpos, _ = silenced
    result = replay(read_recording(path), robot=OPENARM)
    assert result.feedback_frames > 1000 and result.feedback_mismatches == 0
    # the whole state, the fallen left arm included, bit for bit (before: the replay's
    # drives had no watchdog and held the left arm at its last command)
    np.testing.assert_array_equal(result.qpos[-1], final_qpos)


def test_a_sidecar_naming_a_register_that_is_none_is_refused(silenced):
    path, _, _ = silenced
    raw = json.loads(path.with_name(path.name + ".json").read_text())
    bus = next(iter(raw["drive_registers"]))
    raw["drive_registers"][bus]["1"] = {"NOT_A_REGISTER": 1}
    with pytest.raises(SidecarError, match="NOT_A_REGISTER"):
        validate_sidecar(raw, path)
    raw["drive_registers"][bus]["1"] = {Register.TIMEOUT.name: float("inf")}
    with pytest.raises(SidecarError, match="drive_registers"):
        validate_sidecar(raw, path)

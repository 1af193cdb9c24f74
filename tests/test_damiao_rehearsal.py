"""The Damiao rehearsal profile: each new gate passes on a clean OpenArm-class robot and
fails when its fault is in the base configuration."""

from __future__ import annotations

import dataclasses
import json

import pytest
from rob_twin.cli.main import main
from rob_twin.controllers.damiao_codec import Register
from rob_twin.models.names import Arm
from rob_twin.planners.kinematics import Payload
from rob_twin.twin.rehearsal import GATES, gates_for
from rob_twin.twin.rehearsal.damiao import DAMIAO_GATES, openarm_rehearsal_config
from rob_twin.twin.sim.damiao_loop import DamiaoOptions, DriveRegisterOverride, openarm_config

FAULTY = {
    "register_agreement": DamiaoOptions(
        drive_registers=(DriveRegisterOverride(Arm.LEFT, 4, Register.VMAX, 8.0),)
    ),
    "enable_sequence": DamiaoOptions(enable=False),
    "gravity_compensation": DamiaoOptions(gravity_compensation=False),
    "torque_limit": DamiaoOptions(payload=Payload(8.0)),
    "can_timeout": DamiaoOptions(timeout_s=None),
}


@pytest.mark.parametrize("gate", list(FAULTY))
def test_gate_passes_clean_and_fails_on_its_injected_fault(gate):
    clean = DAMIAO_GATES[gate](openarm_rehearsal_config())
    assert clean.passed, clean.as_dict()
    faulty = openarm_rehearsal_config(openarm_config(damiao=FAULTY[gate]))
    res = DAMIAO_GATES[gate](faulty)
    assert not res.passed, res.as_dict()


def test_profile_follows_the_robot():
    assert gates_for(openarm_rehearsal_config()) is DAMIAO_GATES
    assert set(FAULTY) <= set(DAMIAO_GATES)
    shared = {
        "exclusive_output",
        "units_and_references",
        "feedback",
        "output_uncertainty",
        "moving_retargets",
    }
    assert shared <= set(DAMIAO_GATES) and shared <= set(GATES)
    rob = dataclasses.replace(
        openarm_rehearsal_config(),
        base=dataclasses.replace(openarm_config(), robot="rob", damiao=None),
    )
    assert gates_for(rob) is GATES


def test_cli_rehearse_openarm_gate(tmp_path, capsys):
    rc = main(
        [
            "rehearse",
            "--robot",
            "openarm",
            "--gate",
            "register_agreement",
            "--json",
            "--out",
            str(tmp_path),
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert rc == 0 and report["passed"] and report["hardware_io"] is False
    assert report["base_config"]["robot"] == "openarm"
    assert (tmp_path / "rehearsal.md").exists()

"""Pre-commissioning rehearsal: every gate passes on a healthy twin and can fail."""

from __future__ import annotations

import dataclasses
import json

import pytest
from rob_twin.cli.main import main
from rob_twin.controllers.owner import ArmOwner
from rob_twin.controllers.publish import PublishOutcome
from rob_twin.controllers.transport import CanTransport
from rob_twin.models.names import UnknownNameError
from rob_twin.twin.drives.amber_bank import default_drive_configs
from rob_twin.twin.rehearsal import GATES, RehearsalConfig, rehearse, write_report
from rob_twin.twin.sim.closed_loop import ClosedLoopConfig, twin_owner_config
from rob_twin.twin.sim.faults import FaultSpec


@pytest.fixture(scope="module")
def healthy():
    return rehearse()


def _with(**changes) -> RehearsalConfig:
    return RehearsalConfig(base=dataclasses.replace(ClosedLoopConfig(), **changes))


def test_every_gate_passes_on_a_healthy_twin(healthy):
    assert healthy["hardware_io"] is False and healthy["evidence_class"] == "simulated"
    assert [g["name"] for g in healthy["gates"]] == list(GATES)
    failed = [g for g in healthy["gates"] if not g["passed"]]
    assert not failed, json.dumps(failed, default=str)[:2000]


def test_gate_figures(healthy):
    gates = {g["name"]: g for g in healthy["gates"]}
    stop = gates["stopping"]["cases"][0]
    assert stop["stop_latency_ticks"] == 1  # braking starts at the next tick
    assert stop["speed_at_stop_rad_s"] > 0.5  # it really was moving
    assert all(c["frames_after_latch"] == 0 for c in gates["feedback"]["cases"])
    unc = gates["output_uncertainty"]["cases"]
    assert all(c["retries"] == 0 and c["publish_attempts_to_latch"] == 1 for c in unc)
    rates = gates["moving_retargets"]["rates"]
    assert [r["rate_hz"] for r in rates] == [20.0, 60.0, 90.0, 120.0]
    assert all(r["moving_retargets"] > 0.7 * r["targets"] for r in rates)
    assert gates["exclusive_output"]["second_writer_detected"] is True


def test_report_files(healthy, tmp_path):
    jp, mp = write_report(healthy, tmp_path)
    assert json.loads(jp.read_text())["hardware_io"] is False
    text = mp.read_text()
    assert "hardware_io: false" in text and "| stopping | PASS |" in text
    assert (tmp_path / "stopping.png").stat().st_size > 5000 and "![stop while moving]" in text


def test_swapped_buses_fail_the_mapping_gate():
    rep = rehearse(_with(swap_wiring=True), ["units_and_references"])
    assert rep["passed"] is False
    rows = [r for r in rep["gates"][0]["joints"] if "joint" in r]
    assert not any(r["ok"] for r in rows)


@pytest.mark.parametrize(
    "fault",
    [
        FaultSpec("wrong_sign", "left", joints=(5,)),
        FaultSpec("encoder_offset", "right", joints=(2,), params={"offset_rad": 0.02}),
    ],
)
def test_installation_faults_fail_the_units_gate(fault):
    rep = rehearse(_with(faults=(fault,)), ["units_and_references"])
    assert rep["passed"] is False


def test_a_second_writer_fails_the_exclusive_output_gate():
    rep = rehearse(
        _with(faults=(FaultSpec("second_writer", "left", at=0.1),)), ["exclusive_output"]
    )
    gate = rep["gates"][0]
    assert gate["passed"] is False and gate["foreign_command_frames"]["left"] > 0


def test_unknown_gate_lists_the_valid_ones():
    with pytest.raises(UnknownNameError, match="valid: exclusive_output, units_and_references"):
        rehearse(gates=["vibes"])


def test_cli_rehearse_json(capsys, tmp_path):
    rc = main(["rehearse", "--json", "--gate", "output_uncertainty", "--out", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["hardware_io"] is False
    assert [(g["name"], g["passed"]) for g in out["gates"]] == [("output_uncertainty", True)]
    rc = main(
        [
            "rehearse",
            "--json",
            "--swap-wiring",
            "--gate",
            "units_and_references",
            "--out",
            str(tmp_path),
        ]
    )
    assert rc == 1 and json.loads(capsys.readouterr().out)["passed"] is False
    assert main(["rehearse", "--faults", '[{"kind": "nope"}]']) == 2


# Each gate below is run alone with the fault it guards against, and must fail on the
# figure that measures that fault (one gate, short runs: about a second each).


def _gate(rep: dict) -> dict:
    assert rep["passed"] is False and len(rep["gates"]) == 1
    return rep["gates"][0]


def test_drives_without_a_command_timeout_fail_the_stopping_gate():
    """With the bus down or the owner gone only the drives' own timeout can hold the arm."""
    drives = tuple(dataclasses.replace(d, command_timeout_s=1e9) for d in default_drive_configs())
    gate = _gate(rehearse(_with(drives=drives), ["stopping"]))
    cases = {c["case"]: c for c in gate["cases"]}
    assert cases["stop while moving"]["passed"] is True  # the owner still brakes
    for name in ("stop under bus-off", "owner loss"):
        assert cases[name]["passed"] is False and cases[name]["time_to_drive_hold_s"] is None


def test_lax_feedback_supervision_fails_the_feedback_gate():
    """A host whose feedback timeout and tracking threshold are far too lax latches too late
    (frozen feedback) or never (a stalled joint)."""
    lax = dataclasses.replace(twin_owner_config(), feedback_timeout_s=1.0, tracking_error_rad=1.0)
    gate = _gate(rehearse(_with(owner=lax), ["feedback"]))
    cases = {c["case"]: c for c in gate["cases"]}
    for name in ("frozen feedback, all joints", "frozen feedback, joint 3"):
        c = cases[name]
        assert c["passed"] is False and c["latched"] == "stale_feedback"
        assert c["time_to_latch_s"] > c["bound_s"] == 0.3
    stall = cases["stalled joint 4 while moving"]
    assert stall["passed"] is False and stall["latched"] is None and stall["frames_after_latch"] > 0


def test_a_retrying_transport_fails_the_output_uncertainty_gate(monkeypatch):
    """A transport that sends a sample again after a partial or uncertain write."""
    send_once = CanTransport.publish_sample

    def send_with_one_retry(self, positions_rad):
        rep = send_once(self, positions_rad)
        return rep if rep.outcome is PublishOutcome.ACCEPTED else send_once(self, positions_rad)

    monkeypatch.setattr(CanTransport, "publish_sample", send_with_one_retry)
    gate = _gate(rehearse(gates=["output_uncertainty"]))
    assert [c["publish_attempts_to_latch"] for c in gate["cases"]] == [2, 2]
    assert not any(c["passed"] for c in gate["cases"])


def test_replanning_from_rest_at_each_retarget_fails_the_moving_retargets_gate(monkeypatch):
    """The legacy hazard: a new target re-seeds the plan at zero velocity and acceleration
    instead of the coherent commanded state, a discontinuity at every moving retarget."""
    retarget = ArmOwner._retarget

    def retarget_from_rest(self, tgt):
        retarget(self, tgt)
        self._inp.current_velocity = [0.0] * 7
        self._inp.current_acceleration = [0.0] * 7

    monkeypatch.setattr(ArmOwner, "_retarget", retarget_from_rest)
    cfg = RehearsalConfig(retarget_rates_hz=(60.0,), retarget_duration_s=1.0)
    gate = _gate(rehearse(cfg, ["moving_retargets"]))
    row = gate["rates"][0]
    assert row["passed"] is False and "limit_violation" in row["faults"]

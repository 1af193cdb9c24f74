"""Pre-commissioning rehearsal: every gate passes on a healthy twin and can fail."""

from __future__ import annotations

import dataclasses
import json

import pytest

from controllers.names import UnknownNameError
from twin.cli import main
from twin.closed_loop import ClosedLoopConfig
from twin.faults import FaultSpec
from twin.rehearsal import GATES, RehearsalConfig, rehearse, write_report


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


@pytest.mark.parametrize("fault", [
    FaultSpec("wrong_sign", "left", joints=(5,)),
    FaultSpec("encoder_offset", "right", joints=(2,), params={"offset_rad": 0.02}),
])
def test_installation_faults_fail_the_units_gate(fault):
    rep = rehearse(_with(faults=(fault,)), ["units_and_references"])
    assert rep["passed"] is False


def test_a_second_writer_fails_the_exclusive_output_gate():
    rep = rehearse(_with(faults=(FaultSpec("second_writer", "left", at=0.1),)), ["exclusive_output"])
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
    rc = main(["rehearse", "--json", "--swap-wiring", "--gate", "units_and_references",
               "--out", str(tmp_path)])
    assert rc == 1 and json.loads(capsys.readouterr().out)["passed"] is False
    assert main(["rehearse", "--faults", "[{\"kind\": \"nope\"}]"]) == 2

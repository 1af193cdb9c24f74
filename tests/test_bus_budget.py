"""The rehearsal's bus-budget gate: ROB's streaming fits at 1 Mbit/s, 1 kHz at 250 kbit/s
does not."""

from __future__ import annotations

import pytest
from rob_twin.cli.main import main
from rob_twin.twin.bus.budget import BusBudgetConfig, bus_budget
from rob_twin.twin.bus.frame_bits import Stuffing
from rob_twin.twin.bus.timing import BusTimingConfig, BusTimingConfigError
from rob_twin.twin.rehearsal import RehearsalConfig, rehearse


def _gate(**kw) -> dict:
    rep = rehearse(RehearsalConfig(bus_budget=BusBudgetConfig(**kw)), ["bus_budget"])
    return rep["gates"][0]


def test_rob_streaming_fits_a_1_mbit_bus_with_the_figures():
    g = _gate()
    assert g["passed"] and [c["bus"] for c in g["cases"]] == ["CAN10", "CAN11"]
    c = g["cases"][0]
    # 7 x 200 Hz commands of 3 bytes (85 bits worst case) + 7 x 20 Hz feedback of 8 bytes
    # (135 bits), interframe spaces included, on 1e6 bit/s
    assert c["offered_load"] == pytest.approx((7 * 200 * 85 + 7 * 20 * 135) / 1e6, abs=1e-4)
    # response-time bound: one 8-byte feedback frame already on the wire (135 bits), then
    # the seven commands (they win every arbitration), less the last interframe space
    assert c["worst_command_to_drive_us"] == pytest.approx(135 + 7 * 85 - 3)
    assert c["simulated_max_command_to_drive_us"] <= c["worst_command_to_drive_us"]
    assert c["frames_refused"] == 0


def test_1khz_streaming_at_250_kbit_fails_with_the_figure():
    bus = BusTimingConfig(bitrate_bps=250e3, stuffing=Stuffing.WORST)
    g = _gate(bus=bus, command_rate_hz=1000.0)
    assert not g["passed"]
    c = g["cases"][0]
    assert c["offered_load"] == pytest.approx((7 * 1000 * 85 + 7 * 20 * 135) / 250e3, abs=1e-3)
    assert c["offered_load"] > 1 and c["frames_refused"] > 0
    assert "250 kbit/s" in g["detail"] and f"{c['offered_load']:.3f}" in g["detail"]


def test_load_limit_alone_can_fail_the_gate():
    # 500 kbit/s at 1 kHz: 1.19 of the bus offered, latency above the 1 ms period
    fig = bus_budget(
        BusBudgetConfig(bus=BusTimingConfig(bitrate_bps=500e3, stuffing="worst")), 1000.0, 20.0
    )
    assert not fig["fits"] and fig["offered_load"] > 1
    ok = bus_budget(BusBudgetConfig(max_load=0.1), 200.0, 20.0)
    assert not ok["fits"] and ok["worst_command_to_drive_us"] < ok["command_period_us"]


def test_bad_budget_settings_are_typed_errors():
    with pytest.raises(BusTimingConfigError, match="command_rate_hz"):
        BusBudgetConfig(command_rate_hz=0.0)
    with pytest.raises(BusTimingConfigError, match="max_load"):
        BusBudgetConfig(max_load=1.5)


def test_cli_exit_code_and_figure(tmp_path, capsys):
    assert main(["rehearse", "--gate", "bus_budget", "--out", str(tmp_path)]) == 0
    assert (
        main(
            [
                "rehearse",
                "--gate",
                "bus_budget",
                "--bus",
                "250k",
                "--command-rate",
                "1000",
                "--out",
                str(tmp_path),
            ]
        )
        == 1
    )
    out = capsys.readouterr().out
    assert "FAIL  bus_budget" in out and "offer load 2.4" in out
    assert main(["rehearse", "--gate", "bus_budget", "--bus", "fast", "--out", str(tmp_path)]) == 2

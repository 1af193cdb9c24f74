"""One simulated Damiao drive: enable state, impedance law, registers, latched errors,
and bad frames answered as the real drive would (ignored, never a crash)."""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rob_twin.controllers.damiao_codec import (
    MitCommand,
    Register,
    RegisterOp,
    Scaling,
    SpecialCommand,
    Status,
    decode_register_frame,
    decode_state,
    encode_mit,
    encode_register_read,
    encode_register_write,
    special_frame,
)
from rob_twin.models.damiao_motors import DM4310, DM4340, DM8009, REGISTER_ID
from rob_twin.twin.drives.damiao_bank import default_damiao_configs
from rob_twin.twin.drives.damiao_drive import DamiaoDrive


def drive(joint: int = 1, timeout_counts: int = 0) -> DamiaoDrive:
    return DamiaoDrive(joint, default_damiao_configs(timeout_counts)[joint - 1])


def mit(d: DamiaoDrive, q=0.0, dq=0.0, kp=0.0, kd=0.0, tau=0.0) -> bytes:
    return encode_mit(MitCommand(q, dq, kp, kd, tau), Scaling.of(d.config.motor))


def test_powers_up_disabled_answers_and_ignores_mit():
    d = drive()
    reply = d.on_frame(d.esc_id, mit(d, 0.5, 0, 50, 1, 5), 0.0, 0.1, 0.0)
    assert reply is not None and reply[0] == 0x11
    st_ = decode_state(reply[1], d.scaling)
    assert st_.status == Status.DISABLED and abs(st_.q_rad - 0.1) < d.scaling.step("q")
    assert d.torque(0.1, 0.0, 0.001) == 0.0 and d.command is None


def test_enable_then_impedance_law_and_peak_clamp():
    d = drive(3)  # DM4340: peak 27 Nm
    assert (
        decode_state(
            d.on_frame(3, special_frame(SpecialCommand.ENABLE), 0.0, 0.0, 0.0)[1], d.scaling
        ).status
        == Status.ENABLED
    )
    d.on_frame(3, mit(d, q=0.5, dq=0.2, kp=40.0, kd=1.0, tau=1.5), 0.0, 0.0, 0.0)
    c = d.command
    expected = c.kp * (c.q_rad - 0.3) + c.kd * (c.dq_rad_s - 0.1) + c.tau_nm
    assert d.torque(0.3, 0.1, 0.001) == pytest.approx(expected)
    assert expected == pytest.approx(40 * 0.2 + 1.0 * 0.1 + 1.5, abs=0.05)
    d.on_frame(3, mit(d, q=2.0, kp=100.0), 0.002, 0.0, 0.0)
    assert d.torque(0.0, 0.0, 0.003) == 27.0  # 200 Nm asked, the motor's peak given
    assert d.torque(4.0, 0.0, 0.003) == -27.0


def test_registers_read_and_write_change_the_scaling_at_once():
    d = drive(3)
    r = d.on_frame(REGISTER_ID, encode_register_read(3, Register.VMAX), 0.0, 0.0, 0.0)
    fr = decode_register_frame(r[1])
    assert r[0] == 0x13 and fr.op is RegisterOp.READ and fr.value == DM4340.vmax_rad_s
    data = mit(d, dq=4.0, kd=1.0)  # host believes VMAX 10
    d.on_frame(REGISTER_ID, encode_register_write(3, Register.VMAX, 8.0), 0.0, 0.0, 0.0)
    d.on_frame(3, special_frame(SpecialCommand.ENABLE), 0.0, 0.0, 0.0)
    d.on_frame(3, data, 0.0, 0.0, 0.0)
    assert d.command.dq_rad_s == pytest.approx(3.2, abs=0.01)  # scaled by 0.8: the real bug
    # a frame for another motor on the same bus is not ours
    assert d.on_frame(REGISTER_ID, encode_register_read(4, Register.VMAX), 0.0, 0.0, 0.0) is None


def test_can_timeout_latches_communication_lost_until_cleared():
    d = drive(5, timeout_counts=2000)  # 2000 x 50 us = 0.1 s
    assert d.timeout_s == pytest.approx(0.1)
    d.on_frame(5, special_frame(SpecialCommand.ENABLE), 0.0, 0.0, 0.0)
    d.on_frame(5, mit(d, q=0.1, kp=10.0), 0.0, 0.0, 0.0)
    assert d.torque(0.0, 0.0, 0.09) != 0.0 and d.error is None
    assert d.torque(0.0, 0.0, 0.11) == 0.0 and d.error is Status.COMMUNICATION_LOST
    reply = d.on_frame(5, mit(d, q=0.1, kp=10.0), 0.12, 0.0, 0.0)
    assert decode_state(reply[1], d.scaling).status == 0xD  # still latched, command ignored
    assert d.torque(0.0, 0.0, 0.12) == 0.0
    d.on_frame(5, special_frame(SpecialCommand.CLEAR_ERROR), 0.13, 0.0, 0.0)
    assert d.error is None and not d.enabled and d.status == Status.DISABLED


def test_under_voltage_and_over_temperature_latch():
    d = drive(1)
    d.on_frame(1, special_frame(SpecialCommand.ENABLE), 0.0, 0.0, 0.0)
    d.supply_v = 12.0
    d.torque(0.0, 0.0, 0.001)
    assert d.error is Status.UNDER_VOLTAGE
    d.supply_v = 24.0
    d.torque(0.0, 0.0, 0.002)
    assert d.error is Status.UNDER_VOLTAGE  # latched though the supply is back
    d.on_frame(1, special_frame(SpecialCommand.CLEAR_ERROR), 0.003, 0.0, 0.0)
    d.t_rotor_c = 120
    d.torque(0.0, 0.0, 0.004)
    assert d.error is Status.ROTOR_OVER_TEMPERATURE
    st_ = decode_state(d.state_frame(0.0, 0.0), d.scaling)
    assert st_.status == 0xC and st_.t_rotor_c == 120


def test_mit_frames_outside_mit_mode_are_ignored_without_reply():
    d = drive(2)
    d.on_frame(REGISTER_ID, encode_register_write(2, Register.CTRL_MODE, 2), 0.0, 0.0, 0.0)
    assert d.on_frame(2, mit(d, q=0.1, kp=10.0), 0.0, 0.0, 0.0) is None
    assert d.on_frame(2, special_frame(SpecialCommand.ENABLE), 0.0, 0.0, 0.0) is not None


def test_set_zero_only_while_disabled():
    d = drive(6)
    d.on_frame(6, special_frame(SpecialCommand.SET_ZERO), 0.0, 0.4, 0.0)
    assert decode_state(d.state_frame(0.4, 0.0), d.scaling).q_rad == pytest.approx(0.0, abs=4e-4)
    d.on_frame(6, special_frame(SpecialCommand.ENABLE), 0.0, 0.4, 0.0)
    d.on_frame(6, special_frame(SpecialCommand.SET_ZERO), 0.0, 0.9, 0.0)
    assert d.zero_rad == pytest.approx(0.4)


def test_state_values_past_the_wire_range_saturate_and_are_counted():
    d = drive(7)  # DM4310: VMAX 30 rad/s
    st_ = decode_state(d.state_frame(0.0, 45.0), d.scaling)
    assert st_.dq_rad_s == pytest.approx(30.0, abs=0.02) and d.counters.saturated_reports == 1


def test_bad_frames_are_ignored():
    d = drive(1)
    assert d.on_frame(1, b"\x00" * 7, 0.0, 0.0, 0.0) is None
    assert d.on_frame(REGISTER_ID, bytes((1, 0, 0x33, 99, 0, 0, 0, 0)), 0.0, 0.0, 0.0) is None
    assert d.on_frame(REGISTER_ID, bytes((1, 0, 0x44, 21, 0, 0, 0, 0)), 0.0, 0.0, 0.0) is None
    bad_write = bytes((1, 0, 0x55, 22)) + struct.pack("<f", -1.0)  # VMAX -1 rad/s
    assert d.on_frame(REGISTER_ID, bad_write, 0.0, 0.0, 0.0) is None
    assert d.registers[Register.VMAX] == DM8009.vmax_rad_s  # state unchanged
    assert d.counters.ignored == 4


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from([1, 3, 5, REGISTER_ID, 0x11, 0x7FE]),
    st.binary(min_size=0, max_size=10),
    st.floats(-20, 20),
    st.floats(-100, 100),
)
def test_any_frame_never_crashes_the_drive(arb, data, q, dq):
    d = drive({1: 1, 3: 3, 5: 5}.get(arb, 1))
    d.on_frame(d.esc_id, special_frame(SpecialCommand.ENABLE), 0.0, 0.0, 0.0)
    reply = d.on_frame(arb, data, 0.0, q, dq)
    assert reply is None or (reply[0] == d.mst_id and len(reply[1]) == 8)
    tau = d.torque(q, dq, 0.001)
    assert math.isfinite(tau) and abs(tau) <= d.config.motor.peak_torque_nm
    assert DM4310.peak_torque_nm == 7.0

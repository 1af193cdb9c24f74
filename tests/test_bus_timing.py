"""CAN frame lengths, arbitration, queues and errors of the bus timing layer."""

from __future__ import annotations

import random

import can
import numpy as np
import pytest
from rob_twin.models.errors import RobTwinError
from rob_twin.twin.bus.frame_bits import (
    INTERFRAME_BITS,
    FrameFormatError,
    Stuffing,
    classic_frame_bits,
    count_stuff_bits,
    count_stuff_bits_int,
    crc15,
    crc15_bitwise,
    crc15_bytes,
    fd_frame_bits,
)
from rob_twin.twin.bus.timing import (
    BusTimeline,
    BusTimingConfig,
    BusTimingConfigError,
    TransmitQueueFullError,
    arbitration_key,
)


def test_crc15_matches_the_catalogue_check_value():
    assert crc15_bytes(b"123456789") == 0x059E  # CRC-15/CAN check value
    rng = random.Random(1)
    for _ in range(300):
        n = rng.randint(1, 130)
        v = rng.getrandbits(n)
        assert crc15(v, n) == crc15_bitwise(v, n)


@pytest.mark.parametrize(
    "bits, stuffed",
    [
        ("00001111", 0),  # runs of four: nothing to stuff
        ("00000", 1),  # five equal bits: one stuff bit, even at the very end
        ("0000000000", 2),  # 00000 1 00000 0
        ("000001111", 2),  # 00000 1 1111 0: the stuff bit counts towards the ones
        ("0000011110000", 3),  # 00000 1 1111 0 0000 1: each stuff bit joins the next run
        ("00000111100001", 3),  # as above, then the final 1 follows a stuffed 1: a run of 2
    ],
)
def test_stuff_bits_of_hand_worked_strings(bits, stuffed):
    assert count_stuff_bits(bits) == stuffed
    assert count_stuff_bits_int(int(bits, 2), len(bits)) == stuffed


def test_all_zero_standard_frame_by_hand():
    # id 0, DLC 0: SOF..DLC are 19 zero bits and CRC-15 of zeros is 0: 34 zero bits,
    # stuffed after bits 5, 10, 15, 20, 25, 30 -> 6 stuff bits; 34 + 6 + 10 trailer = 50
    fb = classic_frame_bits(0x000, b"")
    assert (fb.stuff_bits, fb.total_bits, fb.data_bits) == (6, 50, 0)


@pytest.mark.parametrize("n", range(9))
def test_worst_case_lengths_match_the_published_formulas(n):
    # Davis et al. 2007: worst case incl. the 3-bit interframe space is 55 + 10 n bits
    # for 11-bit ids and 80 + 10 n bits for 29-bit ids
    std = classic_frame_bits(0x123, bytes(n), stuffing=Stuffing.WORST)
    ext = classic_frame_bits(0x1234567, bytes(n), extended=True, stuffing=Stuffing.WORST)
    assert std.total_bits + INTERFRAME_BITS == 55 + 10 * n
    assert ext.total_bits + INTERFRAME_BITS == 80 + 10 * n


def test_exact_stuffing_lies_between_none_and_worst_case():
    rng = random.Random(7)
    for _ in range(400):
        ext = rng.random() < 0.3
        aid = rng.getrandbits(29 if ext else 11)
        data = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 8)))
        exact = classic_frame_bits(aid, data, extended=ext)
        worst = classic_frame_bits(aid, data, extended=ext, stuffing=Stuffing.WORST)
        unstuffed = (64 if ext else 44) + 8 * len(data)
        assert exact.total_bits - exact.stuff_bits == unstuffed
        assert 0 <= exact.stuff_bits <= worst.stuff_bits


def test_fd_frame_with_bit_rate_switch_by_hand():
    # 8 bytes, 11-bit id, BRS, worst-case stuffing: nominal SOF..BRS 17 bits + 4 stuff
    # bits (after bits 5, 9, 13, 17) + CRC delimiter, ACK 2, EOF 7 = 31 bits; data phase
    # ESI + DLC 5 + data 64 + 17 stuff bits (21 in all over 86 bits) + stuff count 4 +
    # CRC 17 + 6 fixed stuff bits = 113 bits
    fb = fd_frame_bits(0x91, bytes(8), stuffing=Stuffing.WORST)
    assert (fb.nominal_bits, fb.data_bits) == (31, 113)
    assert fb.duration_s(1e6, 5e6) == pytest.approx(31e-6 + 113 / 5e6)
    no_brs = fd_frame_bits(0x91, bytes(8), brs=False, stuffing=Stuffing.WORST)
    assert (no_brs.nominal_bits, no_brs.data_bits) == (144, 0)
    assert fd_frame_bits(0x91, bytes(20), stuffing=Stuffing.WORST).data_bits > fb.data_bits + 96


def test_frame_format_errors_name_the_value():
    with pytest.raises(FrameFormatError, match="0x800"):
        classic_frame_bits(0x800, b"")
    with pytest.raises(FrameFormatError, match="9"):
        classic_frame_bits(0x11, bytes(9))
    with pytest.raises(FrameFormatError, match="10"):
        fd_frame_bits(0x11, bytes(10))
    with pytest.raises(BusTimingConfigError, match="bitrate_bps"):
        BusTimingConfig(bitrate_bps=2e6)
    with pytest.raises(BusTimingConfigError, match="frame_format"):
        BusTimingConfig(frame_format="flexray")


def _msg(aid: int, n: int = 8, ext: bool = False, remote: bool = False) -> can.Message:
    return can.Message(
        arbitration_id=aid,
        data=bytes(n) if not remote else b"",
        is_extended_id=ext,
        is_remote_frame=remote,
        dlc=n if remote else None,
    )


def _timeline(capacity: int = 4, **kw) -> tuple[BusTimeline, list]:
    got: list = []
    tl = BusTimeline("CANX", BusTimingConfig(**kw))
    for node in ("a", "b", "c"):
        tl.add_node(
            node, capacity, lambda m, node=node: got.append((node, m.arbitration_id, m.timestamp))
        )
    return tl, got


def test_lowest_id_wins_arbitration_among_all_waiting_nodes():
    tl, got = _timeline()
    tl.submit("a", _msg(0x17), 0.0)
    tl.submit("b", _msg(0x91), 0.0)
    tl.submit("c", _msg(0x11), 0.0)
    tl.submit("c", _msg(0x12), 0.0)  # behind 0x11 in c's FIFO
    tl.advance(1.0)
    assert [g[1] for g in got] == [0x11, 0x12, 0x17, 0x91]
    ends = [g[2] for g in got]
    durations = np.diff([0.0] + ends)
    cfg = tl.config
    for (_, aid, _), dur, first in zip(got, durations, (True, False, False, False), strict=True):
        ifs = 0 if first else INTERFRAME_BITS / cfg.bitrate_bps
        assert dur == pytest.approx(cfg.frame_bits(_msg(aid)).duration_s(1e6) + ifs)


def test_arbitration_key_orders_standard_extended_and_remote():
    std = _msg(0x100)
    ext_same_base = _msg(0x100 << 18, ext=True)
    remote = _msg(0x100, remote=True)
    lower_ext = _msg((0x0FF << 18) | 0x3FFFF, ext=True)
    order = sorted([remote, ext_same_base, std, lower_ext], key=arbitration_key)
    assert order == [lower_ext, std, remote, ext_same_base]


def test_a_frame_waits_for_the_frame_on_the_bus_then_wins_on_priority():
    tl, got = _timeline()
    tl.submit("b", _msg(0x50), 0.0)
    tl.advance(10e-6)  # 0x50 is on the wire now
    tl.submit("a", _msg(0x60), 10e-6)
    tl.submit("c", _msg(0x10), 20e-6)
    tl.advance(1.0)
    assert [g[1] for g in got] == [0x50, 0x10, 0x60]
    assert tl.queue_latency_s[1] > 0  # 0x10 waited for 0x50 to finish


def test_full_queue_is_a_typed_error_and_leaves_the_queue_unchanged():
    tl, _ = _timeline()
    for _ in range(4):
        tl.submit("a", _msg(0x11), 0.0)
    with pytest.raises(TransmitQueueFullError, match="queue of a is full") as err:
        tl.submit("a", _msg(0x12), 0.0)
    assert isinstance(err.value, RobTwinError) and isinstance(err.value, can.CanOperationError)
    assert len(tl.nodes["a"].queue) == 4 and tl.nodes["a"].refused == 1


def test_destroyed_frames_and_bus_off_take_bus_time_and_are_never_delivered():
    tl, got = _timeline()
    tl.destroyed("a", _msg(0x11), 0.0)
    tl.bus_off("b", _msg(0x12), 0.0)
    tl.bus_off("b", _msg(0x12), 0.0)  # the same episode: charged once
    tl.submit("c", _msg(0x13), 0.0)
    tl.advance(1.0)
    assert got == [("c", 0x13, pytest.approx(got[0][2]))]
    assert tl.frames_lost == 1 and tl.bus_off_events == 1
    assert tl.error_frames == 1 + tl.config.bus_off_attempts
    one = tl.config.frame_seconds(_msg(0x13))
    assert got[0][2] > 20 * one  # 0x13 waited behind the error frames of the bus-off


def test_load_is_busy_time_over_elapsed_time():
    tl, _ = _timeline(capacity=7, stuffing="worst")
    for k in range(7):
        tl.submit("a", _msg(0x11 + k), 0.0)
    tl.advance(0.01)
    assert tl.load == pytest.approx(7 * 135e-6 / 0.01)
    rep = tl.report()
    assert rep["frames"] == 7 and rep["command_to_drive_latency"]["n"] == 7
    assert rep["command_to_drive_latency"]["max_us"] == pytest.approx(7 * 135 - 3)

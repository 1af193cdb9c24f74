"""Exact on-the-wire length of one CAN frame: bits, stuff bits and seconds.

Classic CAN 2.0A (11-bit id) and 2.0B (29-bit id), and CAN FD with a separate
data-phase bit rate (BRS). Field widths follow ISO 11898-1 (the same accounting as
the Linux kernel's ``include/linux/can/length.h`` and can-utils' ``canbusload``):

Classic, stuffed region (SOF through the CRC sequence)::

    2.0A: SOF 1, id 11, RTR 1, IDE 1, r0 1, DLC 4              = 19 header bits
    2.0B: SOF 1, id 11, SRR 1, IDE 1, id 18, RTR 1, r1 1, r0 1, DLC 4 = 39
    then data 8n (none for a remote frame) and CRC-15

  then CRC delimiter 1, ACK slot 1, ACK delimiter 1, EOF 7 (never stuffed).
  Interframe space (intermission) 3 bits. An 8-byte 2.0A frame is 108 bits
  unstuffed, 111 with the interframe space, at most 135 with worst-case stuffing
  (Davis et al., "Controller Area Network schedulability analysis", 2007).

CAN FD::

    nominal rate: SOF 1, id 11, RRS 1, IDE 1, FDF 1, res 1, BRS 1 (2.0B-style ids: 36)
    data rate (BRS set; else nominal): ESI 1, DLC 4, data 8n, stuff count 4,
        CRC 17 (n <= 16) or 21, fixed stuff bits (one per 4 bits of the CRC field: 6 or 7)
    nominal rate: CRC delimiter 1, ACK 2, EOF 7, interframe space 3

  Dynamic stuffing covers SOF through the data field; each stuff bit takes the rate
  of the bit it follows. The rate switches are taken at the BRS and CRC-delimiter
  bit boundaries (sample-point offsets ignored: under 1 bit of the slow rate).

Stuffing: after five equal bits the transmitter inserts one of opposite value, which
then counts towards the next run; worst case one stuff bit per four bits after the
first: ``(n - 1) // 4`` for n stuffed bits. ``exact`` stuffing needs the real bits,
CRC-15 included (poly 0x4599, init 0, the CRC-15/CAN of the CRC catalogue).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from rob_twin.models.errors import RobTwinError

CLASSIC_TRAILER_BITS = 10  # CRC delimiter 1, ACK slot 1, ACK delimiter 1, EOF 7
INTERFRAME_BITS = 3
FD_LENGTHS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 48, 64)
CRC15_POLY = 0x4599
_RUNS = re.compile(r"0+|1+")


class FrameFormatError(RobTwinError, ValueError):
    """A frame the bus model cannot put on a wire (id or length out of range)."""


class Stuffing(Enum):
    EXACT = "exact"  # count the stuff bits of the frame's real bits
    WORST = "worst"  # the worst case for its length: (n - 1) // 4


@dataclass(frozen=True)
class FrameBits:
    """Bits of one frame. nominal_bits at the nominal rate, data_bits at the data rate
    (0 for classic frames); both include stuff bits, neither the interframe space."""

    nominal_bits: int
    data_bits: int
    stuff_bits: int

    @property
    def total_bits(self) -> int:
        return self.nominal_bits + self.data_bits

    def duration_s(self, bitrate_bps: float, data_bitrate_bps: float | None = None) -> float:
        """Seconds on the wire, without the interframe space."""
        d = data_bitrate_bps or bitrate_bps
        return self.nominal_bits / bitrate_bps + self.data_bits / d


def crc15_bitwise(bits: int, n_bits: int) -> int:
    """CRC-15/CAN of the ``n_bits`` bits of ``bits``, most significant first (reference)."""
    crc = 0
    for i in range(n_bits - 1, -1, -1):
        top = ((crc >> 14) & 1) ^ ((bits >> i) & 1)
        crc = (crc << 1) & 0x7FFF
        if top:
            crc ^= CRC15_POLY
    return crc


_CRC15_TABLE = tuple(crc15_bitwise(i, 8) for i in range(256))


def crc15(bits: int, n_bits: int) -> int:
    """CRC-15/CAN of the ``n_bits`` bits of ``bits``, a byte at a time. With init 0,
    leading zero bits leave the CRC at 0, so the bits are padded on the left to whole bytes."""
    crc = 0
    for byte in bits.to_bytes((n_bits + 7) // 8, "big"):
        crc = ((crc << 8) & 0x7FFF) ^ _CRC15_TABLE[((crc >> 7) ^ byte) & 0xFF]
    return crc


def crc15_bytes(data: bytes) -> int:
    """CRC-15/CAN of whole bytes (catalogue check: b"123456789" -> 0x059E)."""
    return crc15(int.from_bytes(data, "big"), 8 * len(data)) if data else 0


def stuff_positions(bits: str) -> list[int]:
    """0-based indices of the bits after which a stuff bit is inserted in ``bits``."""
    out: list[int] = []
    carry = 0  # a stuff bit just inserted has the polarity of the next run: it counts
    for m in _RUNS.finditer(bits):
        start, length = m.start(), m.end() - m.start()
        eff = length + carry
        k = eff // 5
        out.extend(start + 5 * (i + 1) - carry - 1 for i in range(k))
        carry = 1 if k and eff % 5 == 0 else 0
    return out


def count_stuff_bits(bits: str) -> int:
    """Stuff bits a transmitter inserts into ``bits`` (a string of '0'/'1')."""
    carry = total = 0
    for m in _RUNS.finditer(bits):
        eff = m.end() - m.start() + carry
        k = eff // 5
        total += k
        carry = 1 if k and eff % 5 == 0 else 0
    return total


def _step(state: int, bit: int) -> tuple[int, int]:
    """One bit through the stuffing state machine: state 0 = no bit yet, else
    1 + 4 * polarity + (run length - 1) with runs 1..4; returns (state, stuff bits)."""
    if state and (state - 1) // 4 == bit:
        run = (state - 1) % 4 + 2
        if run == 5:  # five equal bits: a stuff bit of opposite polarity starts a run of 1
            return 1 + 4 * (1 - bit), 1
        return 1 + 4 * bit + run - 1, 0
    return 1 + 4 * bit, 0


def _byte_table() -> tuple[tuple[tuple[int, int], ...], ...]:
    table = []
    for state in range(9):
        row = []
        for byte in range(256):
            st, n = state, 0
            for i in range(7, -1, -1):
                st, k = _step(st, (byte >> i) & 1)
                n += k
            row.append((st, n))
        table.append(tuple(row))
    return tuple(table)


_STUFF_TABLE = _byte_table()


def count_stuff_bits_int(bits: int, n_bits: int) -> int:
    """``count_stuff_bits`` of the ``n_bits`` bits of ``bits`` (MSB first), a byte at a time."""
    return stuff_run(bits, n_bits)[1]


def stuff_run(bits: int, n_bits: int, state: int = 0) -> tuple[int, int]:
    """(state, stuff bits) after the ``n_bits`` bits of ``bits`` from ``state``."""
    head = n_bits % 8
    total = 0
    for i in range(n_bits - 1, n_bits - 1 - head, -1):
        state, k = _step(state, (bits >> i) & 1)
        total += k
    table = _STUFF_TABLE
    for byte in (bits & ((1 << (n_bits - head)) - 1)).to_bytes((n_bits - head) // 8, "big"):
        state, k = table[state][byte]
        total += k
    return state, total


def worst_stuff_bits(n_bits: int) -> int:
    return (n_bits - 1) // 4 if n_bits > 0 else 0


def _check(arbitration_id: int, extended: bool, length: int, fd: bool) -> None:
    top = 0x1FFFFFFF if extended else 0x7FF
    if not 0 <= arbitration_id <= top:
        raise FrameFormatError(
            f"CAN id 0x{arbitration_id:X} is outside 0..0x{top:X} "
            f"({'29' if extended else '11'}-bit)"
        )
    if fd and length not in FD_LENGTHS:
        raise FrameFormatError(f"CAN FD data length {length} is not one of {FD_LENGTHS}")
    if not fd and not 0 <= length <= 8:
        raise FrameFormatError(f"classic CAN data length {length} is outside 0..8 bytes")


def _id_bits(arbitration_id: int, extended: bool, rtr_or_rrs: int) -> tuple[int, int]:
    """(bits, width) of SOF + arbitration field + IDE (and r1 for 2.0B), value MSB first."""
    if extended:
        base, ext = arbitration_id >> 18, arbitration_id & 0x3FFFF
        # SOF 0, base 11, SRR 1, IDE 1, ext 18, RTR/RRS
        v = (((((0 << 11 | base) << 1 | 1) << 1 | 1) << 18 | ext) << 1) | rtr_or_rrs
        return v, 1 + 11 + 1 + 1 + 18 + 1
    v = ((0 << 11 | arbitration_id) << 1 | rtr_or_rrs) << 1 | 0  # SOF, id, RTR/RRS, IDE=0
    return v, 1 + 11 + 1 + 1


def classic_frame_bits(
    arbitration_id: int,
    data: bytes,
    *,
    extended: bool = False,
    remote: bool = False,
    dlc: int | None = None,
    stuffing: Stuffing = Stuffing.EXACT,
) -> FrameBits:
    """Bits of a classic CAN frame (2.0A or 2.0B), stuffing counted ``stuffing``-wise."""
    n = len(data)
    _check(arbitration_id, extended, n, fd=False)
    dlc = n if dlc is None else dlc
    v, w = _id_bits(arbitration_id, extended, 1 if remote else 0)
    reserved = 2 if extended else 1  # r1, r0 (2.0B) or r0 (2.0A), all dominant
    v, w = v << reserved, w + reserved
    v, w = (v << 4) | (dlc & 0xF), w + 4
    if not remote and n:
        v, w = (v << 8 * n) | int.from_bytes(data, "big"), w + 8 * n
    stuffed_len = w + 15
    if stuffing is Stuffing.WORST:
        stuff = worst_stuff_bits(stuffed_len)
    else:
        crc = crc15(v, w)
        stuff = count_stuff_bits_int((v << 15) | crc, stuffed_len)
    return FrameBits(stuffed_len + stuff + CLASSIC_TRAILER_BITS, 0, stuff)


def fd_frame_bits(
    arbitration_id: int,
    data: bytes,
    *,
    extended: bool = False,
    brs: bool = True,
    stuffing: Stuffing = Stuffing.EXACT,
) -> FrameBits:
    """Bits of a CAN FD frame; with ``brs`` the data-phase bits are counted in
    ``data_bits`` (sent at the data rate), else all bits are nominal."""
    n = len(data)
    _check(arbitration_id, extended, n, fd=True)
    dlc = FD_LENGTHS.index(n)
    v, w = _id_bits(arbitration_id, extended, 0)  # RRS 0 (FD has no remote frames)
    v, w = (((v << 1 | 1) << 1 | 0) << 1) | (1 if brs else 0), w + 3  # FDF, res, BRS
    nominal_head = w
    v, w = ((v << 1 | 0) << 4) | dlc, w + 5  # ESI 0 (error active), DLC
    if n:
        v, w = (v << 8 * n) | int.from_bytes(data, "big"), w + 8 * n
    crc_field = 4 + (17 if n <= 16 else 21)
    fixed = -(-crc_field // 4)
    if stuffing is Stuffing.WORST:
        first, every = 5, 4  # worst case: after bit 5, then every 4 bits
        total = worst_stuff_bits(w)
        in_head = sum(1 for k in range(total) if first + every * k <= nominal_head)
    else:
        tail = w - nominal_head
        state, in_head = stuff_run(v >> tail, nominal_head)
        total = in_head + stuff_run(v & ((1 << tail) - 1), tail, state)[1]
    nominal = nominal_head + in_head + 1 + 2 + 7  # + CRC delimiter, ACK slot+delim, EOF
    data_phase = (w - nominal_head) + (total - in_head) + crc_field + fixed
    if not brs:
        return FrameBits(nominal + data_phase, 0, total)
    return FrameBits(nominal, data_phase, total)

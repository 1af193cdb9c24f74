"""ROB's Amber CAN protocol as a DBC file (``models/rob/amber.dbc``), generated here.

``python -m rob_twin.models.amber_dbc`` rewrites the committed file; a test requires the two to
agree, and decodes a recorded run with cantools against the project's codec.

What the DBC says (seed 001; ``rob_twin.controllers.codec`` is the authority):

- ``CMD_J<j>`` on 0x10 + j (j = 1..7), 3 bytes, host -> drive: ``opcode`` (byte 0) is
  a multiplexer; under opcode 0x40 ``position`` is the big-endian 16-bit word of
  bytes 1-2 in counts of 1/128 degree, read as signed.
- ``FB_J<j>`` on 0x90 + j, 8 bytes, drive -> host: ``diagnostic`` (byte 0, opaque),
  ``position`` (bytes 1-2, as above), ``velocity_raw`` (bytes 3-4, units unverified:
  left raw), ``current`` (bytes 5-6, signed, 1/256 drive units), ``status`` (byte 7, raw).

What a DBC cannot say, and so a DBC reader gets wrong (named in the file's comments):
negative counts are sent as count + 65535, not the two's complement count + 65536,
so a signed reading is one count (1/128 deg) low for every negative position; the
word 0xFFFF is a second zero (reads -1 count); the word 0x8000 is +32768 counts
(reads -32768). No standard DBC construct expresses an offset that applies only to
negative values.
"""

from __future__ import annotations

from pathlib import Path

from rob_twin.models.names import COMMAND_IDS, FEEDBACK_IDS, JOINTS_PER_ARM

DBC_PATH = Path(__file__).parent / "rob" / "amber.dbc"
COUNT_DEG = 1.0 / 128.0
CURRENT_UNIT = 1.0 / 256.0

POSITION_NOTE = (
    "Counts of 1/128 degree, big-endian. The Amber host sends a negative count as "
    "count + 65535 (not 65536): read as signed 16 bit, every negative position is one "
    "count (1/128 deg) low; 0xFFFF is a second zero (reads -1 count); 0x8000 is +32768 "
    "counts (reads -32768). The twin's codec (controllers/codec.py) decodes words up to "
    "0x8000 as +word and larger words as word - 65535."
)


def amber_dbc() -> str:
    """The DBC text (ids from ``rob_twin.models.names``)."""
    drives = [f"DRIVE{j}" for j in range(1, JOINTS_PER_ARM + 1)]
    out = [
        'VERSION "rob-twin Amber protocol 1"',
        "",
        "NS_ :",
        "",
        "BS_:",
        "",
        "BU_: HOST " + " ".join(drives),
        "",
    ]
    for j in range(1, JOINTS_PER_ARM + 1):
        d = drives[j - 1]
        out += [
            f"BO_ {COMMAND_IDS[j - 1]} CMD_J{j}: 3 HOST",
            f' SG_ opcode M : 7|8@0+ (1,0) [0|255] "" {d}',
            f' SG_ position m64 : 15|16@0- ({COUNT_DEG!r},0) [-256|256] "deg" {d}',
            "",
            f"BO_ {FEEDBACK_IDS[j - 1]} FB_J{j}: 8 {d}",
            ' SG_ diagnostic : 7|8@0+ (1,0) [0|255] "" HOST',
            f' SG_ position : 15|16@0- ({COUNT_DEG!r},0) [-256|256] "deg" HOST',
            ' SG_ velocity_raw : 31|16@0+ (1,0) [0|65535] "" HOST',
            f' SG_ current : 47|16@0- ({CURRENT_UNIT!r},0) [-128|127.99609375] "" HOST',
            ' SG_ status : 63|8@0+ (1,0) [0|255] "" HOST',
            "",
        ]
    out.append(
        'CM_ "ROB arm bus (CAN10: RIGHT arm L-10, CAN11: LEFT arm R-11), Amber position '
        "protocol as used by rob-twin. hardware_io: false: derived from the seeds, not "
        'from a drive manual.";'
    )
    for j in range(1, JOINTS_PER_ARM + 1):
        out += [
            f'CM_ BO_ {COMMAND_IDS[j - 1]} "Position command of joint {j}: opcode 0x40 then the '
            'position word.";',
            f'CM_ SG_ {COMMAND_IDS[j - 1]} position "{POSITION_NOTE}";',
            f'CM_ BO_ {FEEDBACK_IDS[j - 1]} "Feedback of joint {j}.";',
            f'CM_ SG_ {FEEDBACK_IDS[j - 1]} position "{POSITION_NOTE}";',
            f'CM_ SG_ {FEEDBACK_IDS[j - 1]} velocity_raw "Units unverified on the real drive; '
            'the twin sends 0.";',
            f'CM_ SG_ {FEEDBACK_IDS[j - 1]} diagnostic "Opaque (the twin: a rolling counter).";',
            f"CM_ SG_ {FEEDBACK_IDS[j - 1]} status \"Raw status byte (the twin's bits: 0x01 "
            'enabled, 0x02 timeout, 0x04 limit, 0x08 following error).";',
        ]
    return "\n".join(out) + "\n"


def main() -> None:
    DBC_PATH.write_text(amber_dbc())
    print(f"wrote {DBC_PATH}")


if __name__ == "__main__":
    main()

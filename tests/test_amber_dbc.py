"""The Amber DBC: generated, readable by cantools, and in agreement with the codec count for
count."""

from __future__ import annotations

import can
import cantools
import pytest
from rob_twin.controllers.codec import decode_command, decode_feedback, word_to_count
from rob_twin.models.amber_dbc import DBC_PATH, amber_dbc
from rob_twin.models.names import COMMAND_IDS, FEEDBACK_IDS, Arm
from rob_twin.twin.bus.recording import TrafficRecorder
from rob_twin.twin.rehearsal import wave_source
from rob_twin.twin.sim.closed_loop import ClosedLoop


@pytest.fixture(scope="module")
def db():
    return cantools.database.load_file(str(DBC_PATH))


def test_committed_dbc_is_the_generated_one():
    assert DBC_PATH.read_text() == amber_dbc()


def _dbc_count(db, aid: int, data: bytes) -> int:
    return db.decode_message(aid, data, scaling=False)["position"]


def test_every_position_of_a_recorded_run_agrees_with_the_codec(db, tmp_path):
    path = tmp_path / "run.log"
    with ClosedLoop() as lp:
        for k, arm in enumerate(Arm):
            lp.stream_targets(arm, wave_source(k), 100.0)
        rec = TrafficRecorder(lp, path)
        lp.run_for(0.6)
        rec.close()
    seen = {"command": 0, "feedback": 0, "negative": 0}
    for msg in can.LogReader(str(path)):
        aid, data = msg.arbitration_id, bytes(msg.data)
        dec = db.decode_message(aid, data, scaling=False, decode_choices=False)
        phys = db.decode_message(aid, data)
        if aid in COMMAND_IDS:
            ref = decode_command(aid, data)
            count, kind = ref.count, "command"
            assert dec["opcode"] == 0x40
        else:
            assert aid in FEEDBACK_IDS
            ref = decode_feedback(aid, data)
            count, kind = ref.position_count, "feedback"
            assert dec["diagnostic"] == ref.diagnostic and dec["status"] == ref.status
            assert dec["velocity_raw"] == ref.velocity_raw
            assert phys["current"] == ref.current  # 1/256 units, signed: exact
        seen[kind] += 1
        if count >= 0:
            assert dec["position"] == count  # count for count
            assert phys["position"] == count / 128.0
        else:
            # NOT expressible in a DBC: negative counts are sent as count + 65535, a signed
            # reading is one count low (the DBC comment says so)
            assert dec["position"] == count - 1
            seen["negative"] += 1
    assert seen["command"] == 2 * 7 * 120 and seen["feedback"] > 0 and seen["negative"] > 0


@pytest.mark.parametrize(
    "word, codec_count, dbc_count, what",
    [
        (0x0080, 128, 128, "+1 deg"),
        (0xFF7F, -128, -129, "-1 deg: negative counts as count + 65535 (DBC reads one count low)"),
        (0xFFFF, 0, -1, "0xFFFF is a second zero (DBC reads -1 count)"),
        (0x8000, 32768, -32768, "0x8000 is +32768 counts (DBC reads -32768)"),
    ],
)
def test_what_the_dbc_cannot_express_is_named(db, word, codec_count, dbc_count, what):
    assert word_to_count(word) == codec_count, what
    assert _dbc_count(db, COMMAND_IDS[0], bytes([0x40, word >> 8, word & 0xFF])) == dbc_count, what
    fb = bytes([0, word >> 8, word & 0xFF, 0, 0, 0, 0, 0])
    assert _dbc_count(db, FEEDBACK_IDS[0], fb) == dbc_count, what


def test_another_opcode_is_not_read_as_a_position(db):
    with pytest.raises(cantools.database.DecodeError, match="expected multiplexer id 64"):
        db.decode_message(COMMAND_IDS[2], bytes([0x41, 0x00, 0x80]))

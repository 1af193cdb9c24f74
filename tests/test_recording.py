"""Standard recordings of a run, strict reading, and bit-for-bit lockstep replay."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import rob_twin.twin.bus.replay as replay_mod
from rob_twin.models.names import Arm
from rob_twin.twin.bus.recording import (
    RECORDING_FORMATS,
    RecordingError,
    TrafficRecorder,
    sidecar_path,
)
from rob_twin.twin.bus.replay import read_recording, replay
from rob_twin.twin.bus.timing import BusTimingConfig
from rob_twin.twin.rehearsal import wave_source
from rob_twin.twin.sim.closed_loop import ClosedLoop, ClosedLoopConfig
from rob_twin.twin.sim.faults import FaultSpec


def _record(path, seconds: float = 0.3, **kw) -> np.ndarray:
    lp = ClosedLoop(ClosedLoopConfig(**kw))
    for k, arm in enumerate(Arm):
        lp.stream_targets(arm, wave_source(k), 100.0)
    rec = TrafficRecorder(lp, path)
    qs = [lp.twin.data.qpos.copy()]
    for _ in range(int(round(seconds / 0.01))):
        lp.run_for(0.01)
        qs.append(lp.twin.data.qpos.copy())
    rec.close()
    lp.close()
    return np.array(qs)


@pytest.mark.parametrize("suffix", RECORDING_FORMATS)
def test_every_format_replays_the_run_bit_for_bit(tmp_path, suffix):
    path = tmp_path / f"run{suffix}"
    original = _record(path, faults=(FaultSpec("encoder_offset", "left", at=0.1, joints=(2,)),))
    rec = read_recording(path)
    assert {f.bus for f in rec.frames} == {10, 11}
    assert len(rec.frames) == json.loads(sidecar_path(path).read_text())["frames"]
    result = replay(rec)
    assert np.array_equal(result.qpos, original)  # every joint, every 10 ms, exactly
    assert result.frames_fed == 2 * 7 * 60 and result.feedback_mismatches == 0
    assert result.feedback_frames > 0


def test_a_timed_run_replays_bit_for_bit_too(tmp_path):
    path = tmp_path / "slow_bus.log"
    original = _record(path, bus_timing=BusTimingConfig(bitrate_bps=125e3))
    assert np.array_equal(replay(path).qpos, original)


def test_replay_differs_when_the_commands_are_tampered_with(tmp_path):
    path = tmp_path / "run.log"
    original = _record(path)
    lines = path.read_text().splitlines(keepends=True)
    k = next(i for i, ln in enumerate(lines) if " can10 014#40" in ln and i > len(lines) // 2)
    lines[k] = re.sub(r"014#40[0-9A-F]{4}", "014#400400", lines[k])  # joint 4 to +8 deg
    path.write_text("".join(lines))
    assert not np.array_equal(replay(path).qpos, original)


@pytest.fixture()
def good_log(tmp_path):
    path = tmp_path / "run.log"
    _record(path, seconds=0.05)
    return path


def _no_twin(monkeypatch):
    def forbidden(*a, **k):
        raise AssertionError("a twin was built from a malformed recording")

    monkeypatch.setattr(replay_mod, "Twin", forbidden)


def test_truncated_line_names_file_and_line(good_log, monkeypatch):
    text = good_log.read_text()
    good_log.write_text(text[: len(text) - 9])  # cut inside the last frame's line
    n_lines = good_log.read_text().count("\n") + 1
    _no_twin(monkeypatch)
    with pytest.raises(RecordingError, match=rf"run\.log, line {n_lines}: truncated"):
        replay(good_log)


def test_garbage_line_names_its_line(good_log, monkeypatch):
    lines = good_log.read_text().splitlines(keepends=True)
    lines[4] = "(0.001000) can10 this-is-not-a-frame\n"
    good_log.write_text("".join(lines))
    _no_twin(monkeypatch)
    with pytest.raises(RecordingError, match=r"line 5: malformed"):
        replay(good_log)


def test_time_going_backwards_names_its_line(good_log):
    lines = good_log.read_text().splitlines(keepends=True)
    lines[20] = "(0.000000)" + lines[20].split(")", 1)[1]
    lines[19] = "(0.020000)" + lines[19].split(")", 1)[1]
    good_log.write_text("".join(lines))
    with pytest.raises(RecordingError, match=r"line 21: time goes backwards"):
        read_recording(good_log)


def test_truncated_binary_recording_is_caught_by_the_frame_count(tmp_path, monkeypatch):
    path = tmp_path / "run.blf"
    _record(path, seconds=0.05)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    _no_twin(monkeypatch)
    with pytest.raises(RecordingError, match=r"run\.blf"):
        replay(path)


def test_unknown_format_lists_the_valid_ones(tmp_path):
    bad = tmp_path / "run.csv"
    bad.write_text("")
    with pytest.raises(
        RecordingError, match=r"unknown recording format '\.csv'; valid: \.log, \.asc"
    ):
        read_recording(bad)
    with ClosedLoop() as lp, pytest.raises(RecordingError, match="unknown recording format"):
        TrafficRecorder(lp, tmp_path / "run.txt")


def test_cli_replay_exit_codes(good_log, tmp_path, capsys):
    from rob_twin.cli.main import main

    assert main(["replay", str(good_log), "--out", str(tmp_path / "r")]) == 0
    assert json.loads((tmp_path / "r" / "replay.json").read_text())["feedback_mismatches"] == 0
    good_log.write_text(good_log.read_text()[:-5])
    assert main(["replay", str(good_log), "--out", str(tmp_path / "r")]) == 2
    assert "truncated" in capsys.readouterr().err

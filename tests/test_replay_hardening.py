"""Replay with bounded time and memory, and the replay command's options.

Every case stops by itself: replays run with a progress guard that fails the test after a
generous number of progress calls, so a stepping loop that does not advance, or a
recording that would run for years of simulated time, fails instead of hanging.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import can
import numpy as np
import pytest
import rob_twin.twin.bus.replay as replay_mod
from rob_twin.models.errors import InvalidValueError
from rob_twin.models.names import Arm
from rob_twin.twin.bus.recording import RecordingError, TrafficRecorder, sidecar_path
from rob_twin.twin.bus.replay import read_recording, replay
from rob_twin.twin.rehearsal import wave_source
from rob_twin.twin.sim.closed_loop import ClosedLoop, ClosedLoopConfig

SECONDS = 0.05  # each recording: 50 ms, 154 frames (140 host, 14 feedback)
HOST_FRAMES = 2 * 7 * 10  # both arms, seven joints, 100 Hz targets over 50 ms


class ProgressGuard:
    """``on_progress`` that fails the test once a replay has reported ``limit`` times."""

    def __init__(self, limit: int = 1000):
        self.calls, self.limit = 0, limit

    def __call__(self, now: float) -> None:
        self.calls += 1
        if self.calls > self.limit:
            raise AssertionError(f"replay still running after {self.limit} progress calls")


def _guarded(rec, **kw):
    return replay(rec, on_progress=ProgressGuard(), **kw)


@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    """One short recording per format, written by the project's recorder."""
    folder = tmp_path_factory.mktemp("rec")
    for suffix in (".log", ".asc", ".mf4"):
        lp = ClosedLoop(ClosedLoopConfig())
        for k, arm in enumerate(Arm):
            lp.stream_targets(arm, wave_source(k), 100.0)
        rec = TrafficRecorder(lp, folder / f"run{suffix}")
        lp.run_for(SECONDS)
        rec.close()
        lp.close()
    return folder


def _copy(originals, tmp_path, suffix: str, sidecar: bool = True):
    path = tmp_path / f"run{suffix}"
    shutil.copy(originals / f"run{suffix}", path)
    if sidecar:
        shutil.copy(sidecar_path(originals / f"run{suffix}"), sidecar_path(path))
    return path


def _retime_log(path, fn) -> None:
    """Rewrite every timestamp ``t`` of a candump .log as ``fn(index, t)``."""
    lines = path.read_text().splitlines(keepends=True)
    out = []
    for i, line in enumerate(lines):
        stamp, rest = line[1:].split(")", 1)
        out.append(f"({fn(i, float(stamp), len(lines)):.6f}){rest}")
    path.write_text("".join(out))


# --- the stepping loop always advances --------------------------------------------------


def test_a_last_frame_off_the_millisecond_grid_ends_the_replay(originals, tmp_path):
    path = _copy(originals, tmp_path, ".log", sidecar=False)
    _retime_log(path, lambda i, t, n: t + 0.0003 if i == n - 1 else t)  # 0.3 ms off grid
    result = _guarded(path)
    assert result.frames_fed == HOST_FRAMES
    assert result.simulated_s == pytest.approx(0.047)


def test_the_twins_own_mf4_without_its_sidecar_replays_and_agrees(originals, tmp_path):
    path = _copy(originals, tmp_path, ".mf4", sidecar=False)  # stamps in float32: 0.046000004
    result = _guarded(path)
    same_run_as_log = _guarded(_copy(originals, tmp_path, ".log", sidecar=False))
    assert result.frames_fed == HOST_FRAMES and result.feedback_mismatches == 0
    assert np.array_equal(result.qpos, same_run_as_log.qpos)


def test_epoch_stamped_recordings_are_normalised_to_the_twins_clock(originals, tmp_path):
    plain = _copy(originals, tmp_path, ".log", sidecar=False)
    epoch = tmp_path / "epoch.log"
    shutil.copy(plain, epoch)
    _retime_log(epoch, lambda i, t, n: 1.7e9 + t)
    a, b = _guarded(plain), _guarded(epoch)
    assert np.array_equal(a.qpos, b.qpos)
    assert b.frames_fed == HOST_FRAMES and b.feedback_mismatches == 0
    assert any("normalised" in note and "1700000000" in note for note in b.notes)


def test_a_recording_spanning_more_than_the_limit_is_refused_before_stepping(originals, tmp_path):
    path = _copy(originals, tmp_path, ".log", sidecar=False)
    _retime_log(path, lambda i, t, n: t + 1e6 if i == n - 1 else t)  # one frame 11 days later
    with pytest.raises(RecordingError, match=r"spans 1000000\.0\d* s.*limit 600"):
        _guarded(path)
    part = _guarded(path, seconds=SECONDS)  # a part of it replays
    assert part.simulated_s == pytest.approx(SECONDS)


@pytest.mark.parametrize("seconds", [0.0, -1.0, float("nan"), float("inf")])
def test_seconds_must_be_a_finite_positive_number(originals, tmp_path, seconds):
    path = _copy(originals, tmp_path, ".log")
    with pytest.raises(InvalidValueError, match=r"seconds=.* is invalid; valid: a finite"):
        _guarded(path, seconds=seconds)


# --- empty, truncated and foreign recordings ------------------------------------------


@pytest.mark.parametrize("suffix", [".log", ".asc"])
def test_a_zero_byte_recording_is_an_error(tmp_path, suffix):
    path = tmp_path / f"empty{suffix}"
    path.write_bytes(b"")
    with pytest.raises(RecordingError, match=r"no frames"):
        read_recording(path)


def test_an_asc_cut_at_a_line_end_is_truncated(originals, tmp_path):
    path = _copy(originals, tmp_path, ".asc", sidecar=False)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[: len(lines) // 2]))
    with pytest.raises(RecordingError, match=r"truncated.*End TriggerBlock"):
        read_recording(path)


def test_an_asc_cut_inside_a_line_is_truncated(originals, tmp_path):
    path = _copy(originals, tmp_path, ".asc", sidecar=False)
    text = path.read_text()
    cut = text.index("\n", len(text) // 2) + 4  # four characters into the next line
    path.write_text(text[:cut])
    n_lines = text[:cut].count("\n") + 1
    with pytest.raises(RecordingError, match=rf"line {n_lines}: truncated"):
        read_recording(path)


def test_another_robots_ids_are_named(originals, tmp_path, capsys):
    from rob_twin.cli.main import main

    path = _copy(originals, tmp_path, ".log", sidecar=False)
    text = path.read_text().replace(" can10 01", " can10 02")  # 0x11.. -> 0x21..
    path.write_text(text)
    assert main(["replay", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "bus 10" in err and "0x21" in err and "0x11..0x17" in err


def test_a_damaged_mf4_prints_one_message_and_no_teardown_traceback(originals, tmp_path):
    path = _copy(originals, tmp_path, ".mf4", sidecar=False)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    proc = subprocess.run(
        [sys.executable, "-m", "rob_twin.cli.main", "replay", str(path), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "run.mf4" in proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr


# --- sidecars are validated field by field ----------------------------------------------

BAD_SIDECAR_VALUES = [
    ("seed", "zero"),
    ("seed", -1),
    ("seed", 1.5),
    ("physics_dt_s", 0),
    ("physics_dt_s", "1ms"),
    ("start_time_s", -1.0),
    ("start_time_s", "0"),
    ("feedback_rate_hz", 0),
    ("feedback_rate_hz", 333.0),
    ("wiring", {"10": "middle"}),
    ("wiring", {"CAN10": "right"}),
    ("wiring", ["right", "left"]),
    ("initial_state", [1.0, 2.0]),
    ("initial_state", "home"),
    ("frames", -3),
    ("frames", "many"),
    ("end_time_s", -5.0),
    ("first_frame_sim_s", "soon"),
    ("drive_faults", [{"kind": "explode", "arm": "right", "at": 0.0}]),
    ("drive_faults", {"kind": "stall"}),
    ("timestamps", "sundial"),
    ("format", ".blf"),
    ("colour", "blue"),
]


@pytest.mark.parametrize(("field", "value"), BAD_SIDECAR_VALUES)
def test_each_bad_sidecar_value_is_a_typed_error_naming_its_field(
    originals, tmp_path, field, value
):
    path = _copy(originals, tmp_path, ".log")
    meta = json.loads(sidecar_path(path).read_text())
    meta[field] = value
    sidecar_path(path).write_text(json.dumps(meta))
    with pytest.raises(RecordingError) as caught:
        _guarded(path)
    err = caught.value
    assert isinstance(err, InvalidValueError) and err.field == field
    assert f"{field}=" in str(err) and "valid:" in str(err)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"seed": NaN}', "number"),
        ('{"seed": 0, "seed": 1}', "key"),
        ('{"seed": 1e400}', "number"),
        ("[1, 2]", "sidecar"),
        ('{"seed": ', "syntax"),
    ],
)
def test_a_sidecar_that_is_not_a_sound_json_object_is_a_typed_error(
    originals, tmp_path, text, field
):
    path = _copy(originals, tmp_path, ".log")
    sidecar_path(path).write_text(text)
    with pytest.raises(RecordingError) as caught:
        read_recording(path)
    assert isinstance(caught.value, InvalidValueError) and caught.value.field == field


def test_the_cli_reports_a_bad_sidecar_with_exit_2_and_no_traceback(originals, tmp_path, capsys):
    from rob_twin.cli.main import main

    path = _copy(originals, tmp_path, ".log")
    meta = json.loads(sidecar_path(path).read_text())
    meta["wiring"] = {"10": "middle"}
    sidecar_path(path).write_text(json.dumps(meta))
    assert main(["replay", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "wiring=" in err and "middle" in err and "right, left" in err


# --- the command's options ------------------------------------------------------------


def test_onto_writes_its_report_to_out(originals, tmp_path):
    from rob_twin.cli.main import main

    path = _copy(originals, tmp_path, ".log")
    channels = [f"CAN10@{tmp_path.name}", f"CAN11@{tmp_path.name}"]
    listeners = [can.Bus(interface="virtual", channel=ch) for ch in channels]
    try:
        rc = main(
            [
                "replay",
                str(path),
                "--onto",
                "virtual",
                "--channels",
                f"10={channels[0]},11={channels[1]}",
                "--speed",
                "50",
                "--out",
                str(tmp_path / "onto"),
            ]
        )
        got = 0
        for bus in listeners:
            while bus.recv(timeout=0) is not None:
                got += 1
    finally:
        for bus in listeners:
            bus.shutdown()
    assert rc == 0 and got == HOST_FRAMES
    report = json.loads((tmp_path / "onto" / "replay.json").read_text())
    assert report["frames_sent"] == HOST_FRAMES and report["hardware_io"] is False
    assert report["onto"] == "virtual"


def test_human_output_by_default_json_with_the_flag(originals, tmp_path, capsys):
    from rob_twin.cli.main import main

    path = _copy(originals, tmp_path, ".log")
    assert main(["replay", str(path), "--out", str(tmp_path / "a")]) == 0
    human = capsys.readouterr().out
    assert human.startswith("replayed ") or "\nreplayed " in human
    with pytest.raises(json.JSONDecodeError):
        json.loads(human)
    assert main(["replay", str(path), "--out", str(tmp_path / "b"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["agrees"] is True and doc["feedback_mismatches"] == 0
    assert doc["hardware_io"] is False and doc["frames_fed"] == HOST_FRAMES


def test_every_replay_option_has_help_that_shows_its_default():
    from rob_twin.cli.main import build_parser

    parser = build_parser()
    replay_parser = parser._subparsers._group_actions[0].choices["replay"]
    for action in replay_parser._actions:
        if action.dest in ("help", "recording"):
            continue
        assert action.help, f"--{action.dest} has no help"
        assert "%(default)s" in action.help or "default" in action.help, action.dest


def test_another_robots_feedback_ids_are_refused_before_a_twin_is_built(
    originals, tmp_path, monkeypatch
):
    path = _copy(originals, tmp_path, ".log", sidecar=False)
    path.write_text(path.read_text().replace(" can11 09", " can11 0A"))  # 0x91.. -> 0xA1..

    def forbidden(*a, **k):
        raise AssertionError("a twin was built for another robot's recording")

    monkeypatch.setattr(replay_mod, "Twin", forbidden)
    with pytest.raises(RecordingError, match=r"bus 11.*0xA1"):
        replay(path)

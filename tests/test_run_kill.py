"""Kill ``python -m rob_twin.cli.main run`` half-way (SIGINT, SIGTERM, SIGKILL): the run folder says
interrupted or incomplete, and the video frames rendered so far are a playable file.

Short runs with small frames: the run reports progress to ``summary.json`` about once a
second of wall time; each test waits for that, then signals the process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _render_or_skip() -> None:
    from rob_twin.models.loading import load_scene
    from rob_twin.twin.render.video import RenderUnavailable, make_renderer

    os.environ.setdefault("MUJOCO_GL", "egl")
    try:
        make_renderer(load_scene(), 160, 120).close()
    except RenderUnavailable as err:
        pytest.skip(f"offscreen rendering unavailable here: {err}")


def _start(
    tmp_path: Path, name: str, duration: float, video: bool
) -> tuple[subprocess.Popen, Path]:
    path = tmp_path / f"{name}.json"
    path.write_text(
        json.dumps(
            {
                "name": name,
                "duration": duration,
                "cameras": ["overview"],
                "fps": 5,
                "frame_size": [160, 120],
            }
        )
    )
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "rob_twin.cli.main", "run", str(path), "--out", str(out), "--json"]
    if not video:
        cmd.append("--no-video")
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return proc, out / name


def _wait_for_progress(
    proc: subprocess.Popen, folder: Path, key: str, at_least: float, timeout_s: float = 90.0
) -> dict:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            pytest.fail(
                f"run ended early ({proc.returncode}): {proc.stderr.read().decode()[-2000:]}"
            )
        try:
            status = json.loads((folder / "summary.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError):  # the atomic write makes the latter a bug
            status = {}
        if status.get("status") == "running" and status.get(key, 0) >= at_least:
            return status
        time.sleep(0.05)
    proc.kill()
    pytest.fail(f"no progress {key} >= {at_least} in {timeout_s} s")


def _video_frames(path: Path) -> int:
    import imageio.v2 as imageio

    reader = imageio.get_reader(str(path))
    try:
        return sum(1 for frame in reader if frame.shape == (120, 160, 3))
    finally:
        reader.close()


def test_sigint_half_way_writes_an_interrupted_summary_and_a_playable_video(tmp_path):
    _render_or_skip()
    proc, folder = _start(tmp_path, "ctrl_c", duration=20.0, video=True)
    seen = _wait_for_progress(proc, folder, "frames", 2)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr.decode()[-2000:]
    reply = json.loads(stdout)  # one JSON object: the interrupted run's summary
    summary = json.loads((folder / "summary.json").read_text())
    assert (
        summary["status"] == reply["status"] == "interrupted" and summary["stopped_by"] == "SIGINT"
    )
    assert seen["simulated_s"] <= summary["simulated_s"] < 20.0
    assert summary["frames"] >= seen["frames"] and summary["video"] == str(folder / "ctrl_c.mp4")
    assert _video_frames(folder / "ctrl_c.mp4") == summary["frames"]
    assert "interrupted" in (folder / "summary.md").read_text()


def test_sigkill_half_way_leaves_the_folder_marked_incomplete_and_a_playable_video(tmp_path):
    _render_or_skip()
    proc, folder = _start(tmp_path, "killed", duration=20.0, video=True)
    seen = _wait_for_progress(proc, folder, "frames", 2)
    proc.kill()
    proc.communicate(timeout=30)
    status = json.loads((folder / "summary.json").read_text())
    assert status["status"] == "running" and status["pid"] == proc.pid  # nobody is running it now
    assert status["note"].startswith("incomplete")
    assert not (folder / "summary.md").exists()
    deadline = time.monotonic() + 20  # ffmpeg, its own process, finishes the file on EOF
    while time.monotonic() < deadline:
        try:
            frames = _video_frames(folder / "killed.mp4")
            break
        except Exception:
            time.sleep(0.2)
    else:
        pytest.fail("the video of the killed run is not readable")
    assert frames >= seen["frames"]


def test_sigterm_without_video_exits_143_with_an_interrupted_summary(tmp_path):
    proc, folder = _start(tmp_path, "termed", duration=600.0, video=False)
    seen = _wait_for_progress(proc, folder, "simulated_s", 0.1)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr.decode()[-2000:]
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["stopped_by"] == "SIGTERM"
    assert seen["simulated_s"] <= summary["simulated_s"] < 600.0
    assert json.loads(stdout)["exit_code"] == 143

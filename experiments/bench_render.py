"""Benchmark ``render``: offscreen frames per second at each render quality, and the
wall time of ``rob-twin demo`` (video included) as a user runs it.

Frames: ROB at the crossing start seen from the front camera (the demo's view), at the
demo's size (480x360) and at 640x480; ``fast`` (no shadows, reflections or
multisampling, frame-sized buffer) and ``full`` (the model's own settings). The demo is
run in a fresh interpreter (imports and model loading included), output in a temporary
folder. Simulated scene; ``hardware_io: false``.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mujoco
from rob_twin.experiments.registry import benchmark
from rob_twin.twin.scenario.report import EVIDENCE

SIZES = ((480, 360), (640, 480))
FRAMES = {"fast": 40, "full": 6}  # full costs ~1 s a frame on a 2-core software renderer
ROOT = Path(__file__).resolve().parents[1]


def frames_per_s(quality: str, width: int, height: int, frames: int) -> float:
    from rob_twin.models.loading import CROSSING_START_KEY, keyframe_state
    from rob_twin.twin.render.video import close_renderer, make_renderer

    model, qpos = keyframe_state(CROSSING_START_KEY)
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_forward(model, data)
    renderer = make_renderer(model, width, height, quality)
    try:
        renderer.update_scene(data, camera="front")
        renderer.render()  # first frame: shader and buffer set-up, not counted
        t0 = time.perf_counter()
        for _ in range(frames):
            renderer.update_scene(data, camera="front")
            renderer.render()
        return frames / (time.perf_counter() - t0)
    finally:
        close_renderer(renderer)


def demo_wall_s() -> dict:
    """``python -m rob_twin.cli.main demo --json`` in a fresh interpreter: wall time [s], its CPU
    time [s] (user + system, ffmpeg included: the figure a busy shared machine does not
    inflate) and the summary's own figures."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run = subprocess.run(
            [sys.executable, "-m", "rob_twin.cli.main", "demo", "--json", "--out", tmp],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            env=dict(os.environ, MUJOCO_GL=os.environ.get("MUJOCO_GL", "egl")),
        )
        wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = json.loads(run.stdout) if run.stdout.strip() else {}
    return {
        "demo_wall_s": round(wall, 2),
        "demo_cpu_s": round(cpu, 2),
        "demo_exit_code": run.returncode,
        "demo_run_wall_s": summary.get("wall_s"),
        "demo_frames": summary.get("frames"),
        "demo_render_fps": summary.get("render_fps"),
        "demo_simulated_s": summary.get("simulated_s"),
    }


@benchmark("render")
def run() -> dict:
    from rob_twin.twin.render.quality import gl_renderer_name, resolve_quality

    fps = {
        q: {f"{w}x{h}": round(frames_per_s(q, w, h, FRAMES[q]), 2) for w, h in SIZES}
        for q in FRAMES
    }
    return {
        **EVIDENCE,
        "gl_renderer": gl_renderer_name(),
        "auto_quality": resolve_quality("auto"),
        "cpu_count": os.cpu_count(),
        "frames_per_s": fps,
        "fast_over_full": {k: round(fps["fast"][k] / fps["full"][k], 1) for k in fps["fast"]},
        **demo_wall_s(),
        "demo_target_wall_s": 25.0,
        "load_average_1min": round(os.getloadavg()[0], 2),
        "context": "wall times on a shared machine vary with its load; the demo's before "
        "figure (keyframe wave, 640x480, shadows and reflections) was 56-112 s",
    }

"""Offscreen rendering to MP4, with a clear reason when no GL backend is available."""

from __future__ import annotations

import os
from pathlib import Path

import mujoco
import numpy as np

from controllers.errors import RobTwinError


class RenderUnavailable(RobTwinError, RuntimeError):
    """No OpenGL context could be made (no EGL/OSMesa/display); the message says why."""


def make_renderer(model: mujoco.MjModel, width: int = 640, height: int = 480) -> mujoco.Renderer:
    os.environ.setdefault("MUJOCO_GL", "egl")
    try:
        return mujoco.Renderer(model, height, width)
    except Exception as err:  # mujoco raises plain Exceptions for GL failures
        raise RenderUnavailable(
            f"no GL backend for offscreen rendering (MUJOCO_GL={os.environ.get('MUJOCO_GL')!r}): {err}"
        ) from err


class VideoRecorder:
    """Collects frames from a named camera and writes an MP4 with imageio-ffmpeg."""

    def __init__(self, model: mujoco.MjModel, camera: str, fps: int = 30, width: int = 640, height: int = 480):
        if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera) < 0:
            from controllers.names import UnknownNameError

            raise UnknownNameError("camera", camera, [model.camera(i).name for i in range(model.ncam)])
        self.camera, self.fps = camera, fps
        self.renderer = make_renderer(model, width, height)
        self.frames: list[np.ndarray] = []
        # the 36 range-finder rays would hide the arms in a video
        self.options = mujoco.MjvOption()
        self.options.flags[mujoco.mjtVisFlag.mjVIS_RANGEFINDER] = False

    def capture(self, data: mujoco.MjData) -> np.ndarray:
        self.renderer.update_scene(data, camera=self.camera, scene_option=self.options)
        frame = self.renderer.render().copy()
        self.frames.append(frame)
        return frame

    def write(self, path: Path) -> Path:
        import imageio.v2 as imageio

        path.parent.mkdir(parents=True, exist_ok=True)
        imageio.mimwrite(path, self.frames, fps=self.fps, codec="libx264", quality=7, macro_block_size=8)
        return path

    def close(self) -> None:
        self.renderer.close()

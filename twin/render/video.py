"""Offscreen rendering to MP4, with a clear reason when no GL backend is available."""

from __future__ import annotations

import os
from pathlib import Path

import mujoco
import numpy as np
from rob_twin.models.errors import RobTwinError
from rob_twin.twin.render.captions import burn_captions
from rob_twin.twin.render.framing import AUTO_CAMERA, auto_camera
from rob_twin.twin.render.highlight import paint
from rob_twin.twin.render.quality import apply_scene_flags, offscreen_settings, resolve_quality


class RenderUnavailable(RobTwinError, RuntimeError):
    """No OpenGL context could be made (no EGL/OSMesa/display); the message says why."""


def make_renderer(
    model: mujoco.MjModel, width: int = 640, height: int = 480, quality: str = "full"
) -> mujoco.Renderer:
    """An offscreen renderer of ``width`` x ``height`` pixels at ``quality`` (``fast`` or
    ``full``, ``rob_twin.twin.render.quality``)."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    try:
        with offscreen_settings(model, quality, width, height):
            renderer = mujoco.Renderer(model, height, width)
        apply_scene_flags(renderer.scene, quality)
        return renderer
    except Exception as err:  # mujoco raises plain Exceptions for GL failures
        raise RenderUnavailable(
            "no GL backend for offscreen rendering "
            f"(MUJOCO_GL={os.environ.get('MUJOCO_GL')!r}): {err}"
        ) from err


def close_renderer(renderer: mujoco.Renderer) -> None:
    """Close ``renderer`` with its own GL context current. ``mujoco.Renderer.close`` frees
    its GL objects in whatever context is current, so closing one renderer while another
    is current freed the other's buffers, and the other then returned garbage (MuJoCo's
    font atlas in a head camera image)."""
    gl = getattr(renderer, "_gl_context", None)  # the Renderer exposes no public handle
    if gl is not None:
        gl.make_current()
    renderer.close()


class VideoRecorder:
    """Renders a named camera and streams each frame to an MP4 encoder as it is rendered.

    With ``path`` the frames go straight to ffmpeg (imageio-ffmpeg, libx264), nothing is
    kept in memory. The file is a fragmented MP4 with a keyframe every second: if the
    process dies, the frames encoded so far stay playable. ``frames`` counts the frames
    sent; without ``path`` frames are only rendered (``capture`` returns them).
    ``quality``: ``fast``, ``full`` or ``auto``/None (``rob_twin.twin.render.quality``)."""

    def __init__(
        self,
        model: mujoco.MjModel,
        camera: str,
        fps: int = 30,
        width: int = 640,
        height: int = 480,
        path: Path | None = None,
        quality: str | None = None,
    ):
        auto = camera == AUTO_CAMERA
        if not auto and mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera) < 0:
            from rob_twin.models.names import UnknownNameError

            raise UnknownNameError(
                "camera", camera, [model.camera(i).name for i in range(model.ncam)]
            )
        self.model, self.camera, self.fps, self.size = model, camera, fps, (width, height)
        self.quality = resolve_quality(quality)
        self.renderer = make_renderer(model, width, height, self.quality)
        self.frames = 0
        # ``auto``: framed from the arms' workspace at the first frame (``framing``)
        self.free_camera: mujoco.MjvCamera | None = None
        self._auto = auto
        self.path: Path | None = None
        self._encoder = None
        # the 36 range-finder rays would hide the arms in a video
        self.options = mujoco.MjvOption()
        self.options.flags[mujoco.mjtVisFlag.mjVIS_RANGEFINDER] = False
        if path is not None:
            try:
                self._open(Path(path))
            except BaseException:
                close_renderer(self.renderer)
                raise

    def _open(self, path: Path) -> None:
        import imageio_ffmpeg

        path.parent.mkdir(parents=True, exist_ok=True)
        encoder = imageio_ffmpeg.write_frames(
            str(path),
            self.size,
            fps=self.fps,
            codec="libx264",
            quality=7,
            macro_block_size=8,
            ffmpeg_log_level="error",
            output_params=[
                "-g",
                str(max(1, int(self.fps))),
                "-movflags",
                "+frag_keyframe+empty_moov+default_base_moof",
            ],
        )
        encoder.send(None)  # starts ffmpeg
        self._encoder, self.path = encoder, path

    def capture(
        self,
        data: mujoco.MjData,
        captions: list[str] | None = None,
        highlight: set[int] | frozenset[int] = frozenset(),
    ) -> np.ndarray:
        """Render one frame (height x width x 3, uint8) with the geoms ``highlight`` drawn
        red, burn ``captions`` (lines of text, bottom band) into it and send it to the
        encoder."""
        self.update_scene(data, highlight)
        frame = self.renderer.render()
        if captions:
            frame = burn_captions(frame, captions)
        if self._encoder is not None:
            self._encoder.send(np.ascontiguousarray(frame))
        self.frames += 1
        return frame.copy()

    def update_scene(
        self, data: mujoco.MjData, highlight: set[int] | frozenset[int] = frozenset()
    ) -> mujoco.MjvScene:
        """The renderer's scene of ``data`` from this recorder's camera, ``highlight`` red."""
        camera: str | mujoco.MjvCamera = self.camera
        if self._auto:
            if self.free_camera is None:
                self.free_camera = auto_camera(self.model, data, self.size[0] / self.size[1])
            camera = self.free_camera
        self.renderer.update_scene(data, camera=camera, scene_option=self.options)
        paint(self.renderer.scene, highlight)
        return self.renderer.scene

    def close(self) -> None:
        """Finish the file (ffmpeg writes its last fragment) and free the GL context."""
        encoder, self._encoder = self._encoder, None
        try:
            if encoder is not None:
                encoder.close()
        finally:
            close_renderer(self.renderer)

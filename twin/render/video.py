"""Offscreen rendering to MP4, with a clear reason when no GL backend is available."""

from __future__ import annotations

import os
from pathlib import Path

import mujoco
import numpy as np
from rob_twin.models.errors import RobTwinError
from rob_twin.twin.render import held_view
from rob_twin.twin.render.backdrop import HIDDEN_GROUP, styled_copy
from rob_twin.twin.render.captions import burn_captions
from rob_twin.twin.render.decimate import MeshSource, cell_size_m, coarsen, upload
from rob_twin.twin.render.framing import (
    AUTO_CAMERA,
    RootFollow,
    arm_points,
    auto_camera,
    focus_camera,
    top_camera,
)
from rob_twin.twin.render.highlight import paint
from rob_twin.twin.render.props import in_front, props
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


INSET_FRACTION = 3  # the inset is 1/3 of the frame's width and height
INSET_BORDER_PX = 2
HELD_PAD_M = 0.14  # room around the held box and the hands: a carry's lift stays in view
ENCODER_PRESET = "veryfast"  # libx264, CRF 15: ~half the CPU of "medium", no larger a file


class VideoRecorder:
    """Renders a named camera and streams each frame to an MP4 encoder as it is rendered.

    The ``auto`` camera (``framing``) fills the frame with the arms, and an inset (top right,
    1/3 of the frame) shows them from above, so which arm passes in front of the other can be
    read; in a scene with a held box the main view closes on the box and the hands instead
    (the grasp and the lift large, the hands drawn green while they hold it, its stand drawn
    while it waits, ``held_view``) and the inset shows the whole arms. Frames are drawn from
    a copy of the model whose floor and sky contrast with the robot (``backdrop``) and whose
    scene props in front of the arms (a table, a can) are hidden once the views are framed
    (``props``: ``hidden_props``); at ``fast`` quality each view draws its meshes no finer
    than its pixels (``decimate``).

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
        inset: bool = True,
    ):
        """``inset``: with the ``auto`` camera, the second view in the top right corner."""
        auto = camera == AUTO_CAMERA
        if not auto and mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera) < 0:
            from rob_twin.models.names import UnknownNameError

            raise UnknownNameError(
                "camera", camera, [model.camera(i).name for i in range(model.ncam)]
            )
        self.model, self.camera, self.fps, self.size = model, camera, fps, (width, height)
        self.quality = resolve_quality(quality)
        scratch = mujoco.MjData(model)
        mujoco.mj_kinematics(model, scratch)
        self.render_model = styled_copy(model, scratch)  # colours only: physics never sees it
        self.renderer = make_renderer(self.render_model, width, height, self.quality)
        self.frames = 0
        # ``auto``: framed from the arms' geometry at the first frame (``framing``)
        self.free_camera: mujoco.MjvCamera | None = None
        self.inset_camera: mujoco.MjvCamera | None = None
        self.inset_label = ""
        self._auto = auto
        self._follow = RootFollow(model)  # the auto cameras ride along with a driven base
        self._extra_points: np.ndarray | None = None
        self._held = held_view.has_held_box(model)
        keep = {model.body(held_view.BOX).id} if self._held else set()
        self._props = props(model, keep)  # hidden in the render copy when in front (``props``)
        self.hidden_props: list[int] = []
        self.inset: mujoco.Renderer | None = None
        # ``fast``: the exact meshes, clustered per view once the cameras are framed
        self._meshes: MeshSource | None = None
        if self.quality == "fast" and auto:
            source = MeshSource.of(self.render_model)
            self._meshes = source if source.worth_clustering(self.render_model) else None
        self.mesh_triangles: dict[str, int] = {}  # triangles drawn per view ("main", "inset")
        self.path: Path | None = None
        self._encoder = None
        # the 36 range-finder rays would hide the arms in a video; far scenery is hidden
        self.options = mujoco.MjvOption()
        self.options.flags[mujoco.mjtVisFlag.mjVIS_RANGEFINDER] = False
        self.options.geomgroup[HIDDEN_GROUP] = 0
        try:
            if auto and inset:
                iw, ih = _even(width // INSET_FRACTION), _even(height // INSET_FRACTION)
                self.inset = make_renderer(self.render_model, iw, ih, self.quality)
            if path is not None:
                self._open(Path(path))
        except BaseException:
            self._close_renderers()
            raise

    def frame_over(self, states: np.ndarray, every: int = 10) -> None:
        """Frame the ``auto`` camera (from the next frame on) so the arms stay in view at
        every ``every``-th of ``states`` (full qpos rows) too: a run whose motion is known
        beforehand keeps one still camera that never loses a hand."""
        data = mujoco.MjData(self.model)
        points = []
        for q in states[:: max(1, every)]:
            data.qpos[:] = q
            mujoco.mj_kinematics(self.model, data)
            points.append(arm_points(self.model, data))
        self._extra_points = np.vstack(points) if points else None
        self.free_camera = self.inset_camera = None

    def _frame(self, data: mujoco.MjData) -> None:
        aspect = self.size[0] / self.size[1]
        arms = auto_camera(self.model, data, aspect, self._extra_points)
        whole = arm_points(self.model, data)
        if self._extra_points is not None:
            whole = np.vstack([whole, self._extra_points])
        if self._held:
            self.free_camera = focus_camera(
                self.model,
                held_view.focus_points(self.model, data),
                arms.azimuth,
                aspect,
                HELD_PAD_M,
            )
            self.inset_camera, self.inset_label = arms, "both arms"
        else:
            self.free_camera = arms
            self.inset_camera = top_camera(self.model, whole, arms.azimuth, aspect)
            self.inset_label = "from above (front at the bottom)"
        self._hide_props(data, whole)
        self._fit_meshes(whole)
        self._follow.anchor(data, [self.free_camera, self.inset_camera])

    def _hide_props(self, data: mujoco.MjData, whole: np.ndarray) -> None:
        """Move the scene props any view sees before the arms (and the held box) to the
        hidden group of the render copy (``props.in_front``); those hidden for an earlier
        framing come back first."""
        groups = self.render_model.geom_group
        groups[self.hidden_props] = self.model.geom_group[self.hidden_props]
        subject = whole
        if self._held:
            subject = np.vstack([whole, held_view.focus_points(self.model, data)])
        hidden: set[int] = set()
        for camera in (self.free_camera, self.inset_camera):
            if camera is not None:
                hidden.update(in_front(self.model, data, self._props, camera, subject))
        self.hidden_props = sorted(hidden)
        groups[self.hidden_props] = HIDDEN_GROUP

    def _fit_meshes(self, points: np.ndarray) -> None:
        """At ``fast`` quality, each view's meshes clustered on ``CELL_PX`` of its own pixels
        at the nearest of ``points`` [m] (``decimate``) and sent to its renderer."""
        if self._meshes is None:
            return
        fovy = self.model.vis.global_.fovy
        views = (
            ("main", self.renderer, self.free_camera),
            ("inset", self.inset, self.inset_camera),
        )
        for name, renderer, camera in views:
            if renderer is None or camera is None:
                continue
            cell = cell_size_m(camera, points, fovy, renderer.height)
            triangles = coarsen(self.render_model, self._meshes, cell)
            if upload(renderer, self.render_model):
                self.mesh_triangles[name] = triangles

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
                "-preset",
                ENCODER_PRESET,
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
        if self.inset is not None and self.inset_camera is not None:
            frame = self._with_inset(frame, data, highlight)
        if captions:
            frame = burn_captions(frame, captions)
        if self._encoder is not None:
            self._encoder.send(np.ascontiguousarray(frame))
        self.frames += 1
        return frame  # a new array each call (the renderer's and the captions' own)

    def update_scene(
        self, data: mujoco.MjData, highlight: set[int] | frozenset[int] = frozenset()
    ) -> mujoco.MjvScene:
        """The renderer's scene of ``data`` from this recorder's camera, ``highlight`` red."""
        camera: str | mujoco.MjvCamera = self.camera
        if self._auto:
            if self.free_camera is None:
                self._frame(data)
            self._follow.apply(data)
            camera = self.free_camera
        return self._draw(self.renderer, data, camera, highlight)

    def _draw(self, renderer, data, camera, highlight) -> mujoco.MjvScene:
        renderer.update_scene(data, camera=camera, scene_option=self.options)
        if self._held:
            paint(renderer.scene, held_view.grasping_geoms(self.model, data), held_view.GRASP_RGBA)
            held_view.add_stand(self.render_model, data, renderer.scene, self.options.geomgroup)
        paint(renderer.scene, highlight)
        return renderer.scene

    def _with_inset(self, frame: np.ndarray, data: mujoco.MjData, highlight) -> np.ndarray:
        """``frame`` (changed in place) with the inset view pasted in its top right corner,
        framed and labelled."""
        self._draw(self.inset, data, self.inset_camera, highlight)
        small = burn_captions(self.inset.render(), [self.inset_label])
        h, w = small.shape[:2]
        b = INSET_BORDER_PX
        out = frame
        out[: h + 2 * b, -(w + 2 * b) :] = 255
        out[b : h + b, -(w + b) : -b] = small
        return out

    def close(self) -> None:
        """Finish the file (ffmpeg writes its last fragment) and free the GL context."""
        encoder, self._encoder = self._encoder, None
        try:
            if encoder is not None:
                encoder.close()
        finally:
            self._close_renderers()

    def _close_renderers(self) -> None:
        close_renderer(self.renderer)
        if self.inset is not None:
            close_renderer(self.inset)
            self.inset = None


def _even(n: int) -> int:
    """``n`` rounded down to an even number of pixels, 16 at least."""
    return max(16, n - n % 2)

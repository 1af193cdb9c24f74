"""Live video of the twin for the teleop pages, rendered offscreen in its own thread.

Threads. The *loop thread* owns the twin's MjData: at the video rate it copies the state a
picture needs (qpos, mocap poses; a few hundred floats, microseconds) into a
``StateMailbox`` with its wall-clock stamp. The *render thread* owns its own MjData, GL
context and renderer (one thread per MjData, as everywhere in the twin): it takes the newest
state, renders each camera a client asks for at the ``fast`` quality, draws the overlays (the
operator's TCP target as a translucent ghost per engaged hand, the clearance-limiting geom
pair in amber), encodes JPEG and hands the ``VideoFrame`` to ``publish``. The server fans a
frame out to the clients watching that camera, each through its latest-value slot: a slow
client gets the newest frame when it is ready and drops the rest; nothing waits on it, and
the loop thread never renders.

Stamps are wall-clock epoch seconds (``time.time``), so a page on the same machine (or one
with a synchronised clock) can show a frame's age: ``state_stamp_s`` is when the loop copied
the state the frame shows, ``rendered_stamp_s`` when the JPEG was ready.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from rob_twin.models.errors import InvalidValueError

GHOST_RGBA = (0.1, 0.9, 0.4, 0.45)  # the operator's target: translucent green
GHOST_RADIUS_M = 0.03
HIGHLIGHT_RGBA = (1.0, 0.6, 0.0, 1.0)  # the clearance-limiting pair: amber
MAX_SIDE_PX = 1920


class VideoConfigError(InvalidValueError):
    """A video setting out of its valid range."""

    subject = "teleop video config"


@dataclass(frozen=True)
class VideoConfig:
    """fps: frames per second per watched camera [Hz] (0: video off); width/height [px];
    jpeg_quality [1..95]; max_frame_bytes: a JPEG larger than this is re-encoded at a lower
    quality, then dropped and counted [bytes]; default_camera: what a new client sees
    (None: the model's first camera); quality: the render quality (``fast``: no shadows,
    reflections or multisampling)."""

    fps: float = 30.0
    width: int = 480
    height: int = 360
    jpeg_quality: int = 70
    max_frame_bytes: int = 200_000
    default_camera: str | None = "overview"
    quality: str = "fast"

    def __post_init__(self) -> None:
        if not 0.0 <= self.fps <= 120.0:
            raise VideoConfigError("fps", self.fps, "0 (off) .. 120 Hz")
        for name in ("width", "height"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 16 <= v <= MAX_SIDE_PX:
                raise VideoConfigError(name, v, f"an integer 16..{MAX_SIDE_PX} px")
        if not 1 <= self.jpeg_quality <= 95:
            raise VideoConfigError("jpeg_quality", self.jpeg_quality, "1..95")
        if not self.max_frame_bytes >= 10_000:
            raise VideoConfigError("max_frame_bytes", self.max_frame_bytes, ">= 10000")


def default_config() -> VideoConfig:
    return VideoConfig()


class UnknownCameraError(InvalidValueError):
    """A camera name the model does not have; ``valid`` lists the ones it has."""

    subject = "teleop video"

    def __init__(self, name: object, cameras: list[str]):
        super().__init__("camera", name, "one of " + ", ".join(cameras))


@dataclass(frozen=True)
class StateSnapshot:
    """What a frame shows: the twin's qpos and mocap poses at ``stamp_s`` (epoch [s]) and
    simulated time ``sim_time_s`` [s]."""

    stamp_s: float
    sim_time_s: float
    qpos: np.ndarray
    mocap_pos: np.ndarray
    mocap_quat: np.ndarray


class StateMailbox:
    """One latest-state slot between the loop thread (``put``) and the render thread."""

    def __init__(self) -> None:
        self._latest: StateSnapshot | None = None
        self._cond = threading.Condition()
        self.puts = 0

    def put_from(self, data, sim_time_s: float) -> None:
        """Copy ``data``'s qpos and mocap poses (the caller's thread owns ``data``)."""
        snap = StateSnapshot(
            time.time(),
            float(sim_time_s),
            data.qpos.copy(),
            data.mocap_pos.copy(),
            data.mocap_quat.copy(),
        )
        with self._cond:
            self._latest = snap
            self.puts += 1
            self._cond.notify_all()

    def wait_newer(self, than: StateSnapshot | None, timeout_s: float) -> StateSnapshot | None:
        """The newest snapshot once it differs from ``than`` (None after ``timeout_s``)."""
        with self._cond:
            self._cond.wait_for(lambda: self._latest is not than, timeout_s)
            return self._latest if self._latest is not than else None


@dataclass(frozen=True)
class Overlay:
    """What is drawn over a frame: TCP targets (4x4, in the robot's base frame, [m]) and
    the geom ids of the clearance-limiting pair."""

    targets: tuple[np.ndarray, ...] = ()
    highlight: tuple[int, ...] = ()


@dataclass(frozen=True)
class VideoFrame:
    camera: str
    seq: int
    state_stamp_s: float
    rendered_stamp_s: float
    sim_time_s: float
    render_ms: float
    width: int
    height: int
    jpeg: bytes


@dataclass
class VideoStats:
    """Counters of the render thread (read anywhere; written by the render thread only)."""

    frames: int = 0
    oversize_dropped: int = 0
    render_ms: list[float] = field(default_factory=list)  # the last 200 render+encode times

    def record(self, ms: float) -> None:
        self.render_ms.append(ms)
        del self.render_ms[:-200]


def camera_names(model) -> list[str]:
    """The model's named cameras, in model order."""
    return [model.camera(i).name for i in range(model.ncam) if model.camera(i).name]


class VideoThread:
    """The render thread. ``wanted()`` returns the cameras some client watches (read every
    cycle, from any thread: an immutable set); ``overlay()`` the overlay; ``publish(frame)``
    is called on the render thread and must not block (the server hands it to its loop)."""

    def __init__(
        self,
        model,
        mailbox: StateMailbox,
        wanted: Callable[[], frozenset[str]],
        overlay: Callable[[], Overlay],
        publish: Callable[[VideoFrame], None],
        config: VideoConfig | None = None,
    ):
        self.config = config or default_config()
        self.model = model
        self.cameras = camera_names(model)
        self.mailbox = mailbox
        self.wanted = wanted
        self.overlay = overlay
        self.publish = publish
        self.stats = VideoStats()
        self.status = "starting"
        self._stop = threading.Event()
        self._started = threading.Event()
        self._thread: threading.Thread | None = None
        self._seq = 0

    def resolve(self, name: str | None) -> str:
        """A camera name this model has (None: the default); UnknownCameraError otherwise."""
        if name is None:
            name = self.config.default_camera
            if name not in self.cameras:
                name = self.cameras[0] if self.cameras else None
        if name not in self.cameras:
            raise UnknownCameraError(name, self.cameras)
        return name

    def start(self, timeout_s: float = 30.0) -> None:
        """Start the thread; returns once its renderer exists or it gave up (``status``)."""
        self._thread = threading.Thread(target=self._run, name="teleop-video", daemon=True)
        self._thread.start()
        self._started.wait(timeout_s)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)

    # ------------------------------------------------------------------ the thread
    def _run(self) -> None:
        import mujoco
        from rob_twin.twin.render.video import make_renderer

        try:
            c = self.config
            renderer = make_renderer(self.model, c.width, c.height, c.quality)
        except Exception as err:  # no GL: telemetry says why, the rest of teleop runs
            self.status = f"video off: rendering unavailable ({type(err).__name__}: {err})"
            self._started.set()
            return
        data = mujoco.MjData(self.model)
        options = mujoco.MjvOption()
        options.flags[mujoco.mjtVisFlag.mjVIS_RANGEFINDER] = False  # rays would hide the arms
        base = int(mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, "base"))
        self.status = f"ok: {c.width}x{c.height} {c.quality}, up to {c.fps:g} frames/s"
        self._started.set()
        period = 1.0 / c.fps
        snap, next_due = None, time.monotonic()
        try:
            while not self._stop.is_set():
                wanted = [n for n in self.cameras if n in self.wanted()]
                if not wanted:
                    self._stop.wait(0.05)
                    continue
                newer = self.mailbox.wait_newer(snap, 0.1)
                if newer is None:
                    continue
                snap = newer
                data.qpos[:] = snap.qpos
                data.mocap_pos[:] = snap.mocap_pos
                data.mocap_quat[:] = snap.mocap_quat
                mujoco.mj_kinematics(self.model, data)
                mujoco.mj_camlight(self.model, data)
                overlay = self.overlay()
                for name in wanted:
                    self._one(renderer, data, options, name, snap, overlay, base)
                next_due = max(next_due + period, time.monotonic())
                self._stop.wait(max(0.0, next_due - time.monotonic()))
        finally:
            renderer.close()

    def _one(self, renderer, data, options, camera, snap, overlay, base) -> None:
        from PIL import Image

        t0 = time.perf_counter()
        renderer.update_scene(data, camera=camera, scene_option=options)
        scene = renderer.scene
        if overlay.highlight:
            from rob_twin.twin.render.highlight import paint

            paint(scene, set(overlay.highlight), HIGHLIGHT_RGBA)
        for target in overlay.targets:
            _add_ghost(scene, data, base, target)
        pixels = renderer.render()
        quality, jpeg = self.config.jpeg_quality, b""
        while True:
            buf = io.BytesIO()
            Image.fromarray(pixels).save(buf, format="JPEG", quality=quality)
            jpeg = buf.getvalue()
            if len(jpeg) <= self.config.max_frame_bytes or quality <= 20:
                break
            quality = max(20, quality - 20)
        if len(jpeg) > self.config.max_frame_bytes:
            self.stats.oversize_dropped += 1
            return
        ms = (time.perf_counter() - t0) * 1e3
        self.stats.record(ms)
        self.stats.frames += 1
        self._seq += 1
        c = self.config
        self.publish(
            VideoFrame(
                camera,
                self._seq,
                snap.stamp_s,
                time.time(),
                snap.sim_time_s,
                ms,
                c.width,
                c.height,
                jpeg,
            )
        )


def _add_ghost(scene, data, base: int, target: np.ndarray) -> None:
    """A translucent sphere and the target's axes at ``target`` (4x4 in the base frame),
    placed in the world through the base body's pose in ``data``."""
    import mujoco

    if scene.ngeom + 1 > scene.maxgeom:
        return
    rot_b = data.xmat[base].reshape(3, 3) if base >= 0 else np.eye(3)
    pos_b = data.xpos[base] if base >= 0 else np.zeros(3)
    pos = pos_b + rot_b @ target[:3, 3]
    mat = rot_b @ target[:3, :3]
    g = scene.geoms[scene.ngeom]
    mujoco.mjv_initGeom(
        g,
        int(mujoco.mjtGeom.mjGEOM_SPHERE),
        np.full(3, GHOST_RADIUS_M),
        pos,
        mat.reshape(9),
        np.array(GHOST_RGBA, dtype=np.float32),
    )
    g.category = int(mujoco.mjtCatBit.mjCAT_DECOR)
    scene.ngeom += 1
    for axis, rgba in ((0, (1, 0.2, 0.2, 0.8)), (1, (0.2, 1, 0.2, 0.8)), (2, (0.2, 0.4, 1, 0.8))):
        if scene.ngeom + 1 > scene.maxgeom:
            return
        a = scene.geoms[scene.ngeom]
        mujoco.mjv_initGeom(
            a,
            int(mujoco.mjtGeom.mjGEOM_NONE),
            np.zeros(3),
            np.zeros(3),
            np.eye(3).reshape(9),
            np.array(rgba, dtype=np.float32),
        )
        mujoco.mjv_connector(
            a, int(mujoco.mjtGeom.mjGEOM_CAPSULE), 0.004, pos, pos + 0.06 * mat[:, axis]
        )
        scene.ngeom += 1

"""Live video of the twin for the teleop pages, rendered offscreen in its own process.

The *loop thread* owns the twin's MjData: at the video rate it copies the state a picture
needs (qpos, mocap poses; a few hundred floats, microseconds) into a ``StateMailbox`` with
its wall-clock stamp. A *bridge thread* takes the newest state and hands it to the *render
process* (``render_worker.py``), which owns its own MjData, GL context and renderer: it
renders each camera a client asks for at the ``fast`` quality, draws the overlays (the
operator's TCP target as a translucent ghost per engaged hand, the clearance-limiting geom
pair in amber) and encodes JPEG; the bridge hands each ``VideoFrame`` to ``publish``. The
server fans a frame out to the clients watching that camera, each through its latest-value
slot: a slow client gets the newest frame when it is ready and drops the rest; nothing
waits on it, and the loop thread never renders. A process rather than a thread: the closed
loop is mostly Python, and a render thread would share its interpreter lock; the process
runs at a lower priority (``nice``), so on a busy machine the loop thread gets the cores
first. What the video costs the loop is measured in ``experiments/bench_teleop.py``.

Stamps are wall-clock epoch seconds (``time.time``), so a page on the same machine (or one
with a synchronised clock) can show a frame's age: ``state_stamp_s`` is when the loop copied
the state the frame shows, ``rendered_stamp_s`` when the JPEG was ready.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from rob_twin.models.errors import InvalidValueError

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
    reflections or multisampling); nice: how much lower the render process's (and its
    software rasteriser's worker threads') scheduling priority is than the loop thread's
    (Linux nice increment, 0..19): on a busy machine the loop thread gets the cores first
    and video frames come later or fewer, never the other way round; software_gl_threads: the
    software rasteriser's worker threads in the render process (Mesa llvmpipe's
    ``LP_NUM_THREADS``; one leaves the other cores to the loop; a GPU ignores it).

    Measured (``bench teleop``, 2 cores, load 1.3): nice 10 with llvmpipe's default threads
    put the loop's frame period p99 at 1.20x its video-off value; nice 19 and one thread at
    0.95x, with 30 frames/s still delivered to three watchers."""

    fps: float = 30.0
    width: int = 480
    height: int = 360
    jpeg_quality: int = 70
    max_frame_bytes: int = 200_000
    default_camera: str | None = "overview"
    quality: str = "fast"
    nice: int = 19
    software_gl_threads: int = 1

    def __post_init__(self) -> None:
        if not 0.0 <= self.fps <= 120.0:
            raise VideoConfigError("fps", self.fps, "0 (off) .. 120 Hz")
        for name in ("width", "height"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 16 <= v <= MAX_SIDE_PX:
                raise VideoConfigError(name, v, f"an integer 16..{MAX_SIDE_PX} px")
        if not 1 <= self.jpeg_quality <= 95:
            raise VideoConfigError("jpeg_quality", self.jpeg_quality, "1..95")
        nice = self.nice
        if isinstance(nice, bool) or not isinstance(nice, int) or not 0 <= nice <= 19:
            raise VideoConfigError("nice", self.nice, "an integer 0..19")
        threads = self.software_gl_threads
        if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= 64:
            raise VideoConfigError("software_gl_threads", threads, "an integer 1..64")
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
    """One latest-state slot between the loop thread (``put``) and the bridge thread."""

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
    """Counters of the live video (read anywhere; written by the bridge thread only)."""

    frames: int = 0
    oversize_dropped: int = 0
    render_ms: list[float] = field(default_factory=list)  # the last 200 render+encode times

    def record(self, ms: float) -> None:
        self.render_ms.append(ms)
        del self.render_ms[:-200]


def camera_names(model) -> list[str]:
    """The model's named cameras, in model order."""
    return [model.camera(i).name for i in range(model.ncam) if model.camera(i).name]


class LiveVideo:
    """The live video: a render *process* and, in this process, a bridge thread.

    ``wanted()`` returns the cameras some client watches (read every cycle, from any
    thread: an immutable set); ``overlay()`` the overlay; ``publish(frame)`` is called on
    the bridge thread and must not block (the server hands it to its loop). The bridge
    thread takes the newest state from the mailbox, sends it (with the cameras and the
    overlay) to the render process and waits for its frames; it holds the interpreter
    lock only to pass a few hundred floats and a few JPEGs, so rendering, which is mostly
    outside Python, competes with the loop thread for cores only, and at a lower
    priority (``VideoConfig.nice``)."""

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
        self._thread: threading.Thread | None = None
        self._process = None
        self._conn = None
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

    def start(self, timeout_s: float = 60.0) -> None:
        """Start the render process and the bridge thread; returns once the renderer exists
        or it gave up (``status`` says why)."""
        import socket
        import sys
        from multiprocessing.connection import Connection

        mine, theirs = socket.socketpair()
        fd = theirs.fileno()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "rob_twin.twin.teleop.render_worker", str(fd)],
            pass_fds=(fd,),
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        self._conn = Connection(mine.detach())
        try:
            self._conn.send((self.model, self.config))
            if not self._conn.poll(timeout_s):
                self.status = f"video off: the render process did not start within {timeout_s} s"
                self._shutdown_process()
                return
            kind, detail = self._conn.recv()
        except (OSError, EOFError):  # it died first (e.g. an unusable MUJOCO_GL)
            code = self._process.wait(5.0)
            self.status = (
                f"video off: the render process ended before it was ready (exit code {code}; "
                "its error is on stderr)"
            )
            self._shutdown_process()
            return
        if kind != "ready":
            self.status = f"video off: rendering unavailable ({detail})"
            self._shutdown_process()
            return
        c = self.config
        self.status = f"ok: {c.width}x{c.height} {c.quality}, up to {c.fps:g} frames/s"
        self._thread = threading.Thread(target=self._bridge, name="teleop-video", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
        self._shutdown_process()

    def _shutdown_process(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(OSError, ValueError):
                self._conn.send(None)
        if self._process is not None:
            try:
                self._process.wait(5.0)
            except subprocess.TimeoutExpired:
                self._process.terminate()
                try:
                    self._process.wait(2.0)
                except subprocess.TimeoutExpired:  # starved at nice 19 on a busy machine
                    self._process.kill()
                    self._process.wait()
            self._process = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # ------------------------------------------------------------------ the bridge thread
    def _bridge(self) -> None:
        # paced by the loop thread's state copies (``fps`` of them per second): each frame
        # starts as soon as a newer state is there, so what it shows is as fresh as can be
        snap = None
        conn = self._conn
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
                conn.send((snap, wanted, self.overlay()))
                while not conn.poll(0.1):
                    if self._stop.is_set():
                        return
                for camera, jpeg, ms in conn.recv():
                    self._deliver(camera, jpeg, ms, snap)
        except (EOFError, OSError) as err:
            self.status = f"video off: the render process ended ({type(err).__name__})"

    def _deliver(self, camera: str, jpeg: bytes | None, ms: float, snap: StateSnapshot) -> None:
        if jpeg is None:
            self.stats.oversize_dropped += 1
            return
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

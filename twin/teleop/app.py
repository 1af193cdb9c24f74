"""``rob-twin teleop``: the closed loop in real time plus the teleop server.

Threads: the *loop thread* owns the Twin (physics, owners' ticks, buses, the grippers,
the MuJoCo viewer when a display exists); the *server thread* owns the teleop controller
(clutches, IK, safety filter), the websocket clients and the telemetry; the live video
(``video.py``) renders the cameras the clients watch in a process of its own (own MjData
and GL context), from state copies the loop thread leaves in a mailbox, through a bridge
thread. They meet only through the owners' thread-safe API (``submit``,
``commanded_state``, ``release``, ``reset``), the mailbox and plain value reads.

The scenario gives the initial state and the faults; its keyframes and plans are not
streamed (the operator drives).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
from rob_twin.models.names import Arm, gripper_actuator
from rob_twin.models.robot import CARTESIAN_KINEMATICS, robot_of
from rob_twin.planners.collision import CollisionChecker, CollisionConfig
from rob_twin.twin.teleop.controller import TeleopConfig, TeleopController
from rob_twin.twin.teleop.safety import ArmSafetyFilter, SafetyConfig
from rob_twin.twin.teleop.server import ServerConfig, TeleopServer
from rob_twin.twin.teleop.telemetry import TelemetrySource
from rob_twin.twin.teleop.video import LiveVideo, Overlay, StateMailbox, VideoConfig

CLEARANCE_HORIZON_M = 0.10  # telemetry reports clearances up to 10 cm


@dataclass(frozen=True)
class AppConfig:
    """scenario: a scenario file (None: the demo scenario's initial state); video: the
    live video of the pages (``VideoConfig(fps=0)``: off); viewer: open the MuJoCo viewer
    (None: when a display exists)."""

    scenario: str | None = None
    server: ServerConfig = field(default_factory=ServerConfig)
    teleop: TeleopConfig = field(default_factory=TeleopConfig)
    safety: SafetyConfig = field(default_factory=SafetyConfig)
    video: VideoConfig = field(default_factory=VideoConfig)
    viewer: bool | None = None
    calibration: object | None = None  # a loaded rob_twin.twin.calibration Calibration
    robot: str | None = None  # a shipped robot or robot file (None: the scenario's)


class TeleopApp:
    """The whole teleop session. ``start()`` runs the loop in a background thread (tests,
    benchmarks); ``run()`` runs it in the calling thread (the CLI)."""

    def __init__(
        self,
        config: AppConfig | None = None,
        ssl_context=None,
        clock: Callable[[], float] = time.monotonic,
    ):
        """clock: the teleop controller's and server's time base [s] (input stamps, input
        staleness, operator lease, rate limit); tests inject one they advance themselves."""
        self.config = config or AppConfig()
        self.ssl_context = ssl_context
        self.clock = clock
        self.loop = None
        self.controller: TeleopController | None = None
        self.server: TeleopServer | None = None
        self.video: LiveVideo | None = None
        self.mailbox = StateMailbox()
        self.frame_times_s: list[float] = []  # loop-thread compute time per frame [s]
        self.frame_gaps_s: list[float] = []  # wall time between frames [s]
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    # ------------------------------------------------------------------ building
    def _build(self) -> None:
        from rob_twin.twin.scenario.run import Scenario, demo_scenario, scenario_loop

        cfg = self.config
        if cfg.scenario:
            sc = Scenario.load(cfg.scenario, cfg.robot)
        else:
            sc = demo_scenario(cfg.robot)
        robot = robot_of(sc.robot)
        robot.require(CARTESIAN_KINEMATICS, "rob-twin teleop (its IK)")
        self.loop = loop = scenario_loop(sc, calibration=cfg.calibration)
        model = loop.twin.model
        checker = CollisionChecker(model, robot.group_arms())
        meter = CollisionChecker(
            model, robot.group_arms(), CollisionConfig(horizon_m=CLEARANCE_HORIZON_M)
        )
        reference = loop.twin.data.qpos.copy()
        torso = _torso_angle(loop)
        moving = tuple(a.value for a in Arm)
        owners = {arm: loop.drivers[arm].owner for arm in Arm}
        filters = {
            arm: ArmSafetyFilter(
                arm,
                checker.session(moving, reference),
                np.array(loop.config.owner.max_acceleration),
                torso,
                self.config.safety,
                robot=robot,
            )
            for arm in Arm
        }
        self.controller = TeleopController(owners, filters, self.config.teleop, now=self.clock)
        if self.config.video.fps > 0:
            self.video = LiveVideo(
                model,
                self.mailbox,
                wanted=lambda: self.server.wanted_cameras,
                overlay=self._overlay,
                publish=lambda frame: self.server.publish_video(frame),
                config=self.config.video,
            )
        self.source = source = TelemetrySource(
            loop, self.controller, meter.session(moving, reference), self.video
        )
        self.server = TeleopServer(self.controller, source, self.config.server, self.ssl_context)
        self.server.video = self.video
        grippers = {arm: _actuator_id(model, gripper_actuator(arm)) for arm in Arm}
        self._gripper_ctrl = {arm: i for arm, i in grippers.items() if i >= 0}  # if it has one
        self._gripper_open = {
            arm: float(model.actuator_ctrlrange[i][1]) for arm, i in self._gripper_ctrl.items()
        }

    def _on_frame(self, handle=None) -> bool:
        t0 = time.perf_counter()
        if self.frame_times_s:
            self.frame_gaps_s.append(t0 - self._last_frame)
        self._last_frame = t0
        data = self.loop.twin.data
        for arm, h in self.controller.hands.items():  # trigger closes the gripper
            if arm in self._gripper_ctrl:
                data.ctrl[self._gripper_ctrl[arm]] = self._gripper_open[arm] * (1.0 - h.gripper)
        if (
            self.video is not None
            and self.server.wanted_cameras
            and self.loop.time >= self._next_video
        ):  # a state copy for the video thread (microseconds); it renders on its own
            period = 1.0 / self.config.video.fps
            self._next_video = max(self._next_video + period, self.loop.time - period)
            self.mailbox.put_from(data, self.loop.time)
        if handle is not None:
            handle.sync()
            if not handle.is_running():
                return False
        self.frame_times_s.append(time.perf_counter() - t0)
        return not self._stop.is_set()

    def _overlay(self) -> Overlay:
        """What the video draws over the twin (read on the video thread: plain reads of
        values the server thread replaces, never mutates)."""
        targets = tuple(
            t
            for h in self.controller.hands.values()
            if h.clutch.engaged and (t := h.target_tcp) is not None
        )
        return Overlay(targets, self.source.limiting_geoms)

    def _serve(self, seconds: float, handle=None) -> None:
        self._next_video = 0.0
        self._last_frame = time.perf_counter()
        self.server.start()
        if self.video is not None:
            self.video.start()
        self._ready.set()
        try:
            self.loop.run_realtime(seconds, lambda: self._on_frame(handle))
        finally:
            if self.video is not None:
                self.video.stop()
            self.server.stop()
            self.loop.close()

    # ------------------------------------------------------------------ running
    def run(self, seconds: float = float("inf")) -> None:
        """Build and run in the calling thread (with the viewer when configured)."""
        self._build()
        viewer = self.config.viewer
        if viewer is None:
            viewer = bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
        if not viewer:
            self._serve(seconds)
            return
        import mujoco.viewer

        with mujoco.viewer.launch_passive(self.loop.twin.model, self.loop.twin.data) as handle:
            self._serve(seconds, handle)

    def start(self, timeout_s: float = 60.0) -> TeleopApp:
        """Build and run in a background thread; returns when the server listens."""

        def target() -> None:
            try:
                self._build()
                self._serve(float("inf"))
            except BaseException as err:
                self._error = err
                self._ready.set()

        self._thread = threading.Thread(target=target, name="teleop-loop", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout_s):
            raise TimeoutError(f"teleop app did not start within {timeout_s} s")
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10.0)

    def __enter__(self) -> TeleopApp:
        return self if self._thread is not None else self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _actuator_id(model, name: str) -> int:
    import mujoco

    return int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, name))


def _torso_angle(loop) -> float:
    """The torso's yaw [rad]; 0 for a robot without one (its arms' kinematics are in the
    world frame)."""
    import mujoco
    from rob_twin.models.names import TORSO_JOINT

    jid = mujoco.mj_name2id(loop.twin.model, mujoco.mjtObj.mjOBJ_JOINT, TORSO_JOINT)
    return float(loop.twin.data.qpos[loop.twin.model.jnt_qposadr[jid]]) if jid >= 0 else 0.0


def with_port(config: AppConfig, host: str, port: int) -> AppConfig:
    return replace(config, server=replace(config.server, host=host, port=port))


def teleop_config(input_timeout_s: float | None) -> TeleopConfig:
    """The teleop settings for an input timeout [s] (None: the defaults): the owner lease
    and the operator TTL keep their default ratio to it (3x and 5x), never shorter than
    their defaults, so the staleness brake always acts first."""
    base = TeleopConfig()
    if input_timeout_s is None:
        return base
    return replace(
        base,
        input_timeout_s=input_timeout_s,
        owner_lease_s=max(base.owner_lease_s, 3.0 * input_timeout_s),
        operator_ttl_s=max(base.operator_ttl_s, 5.0 * input_timeout_s),
    )


def run_teleop(
    scenario: str | None = None,
    port: int = 8765,
    lan: bool = False,
    cert_dir: str | None = None,
    seconds: float = float("inf"),
    viewer: bool | None = None,
    video_fps: float = 30.0,
    input_timeout_s: float | None = None,
    as_json: bool = False,
    calibration=None,
    robot: str | None = None,
) -> int:
    """``rob-twin teleop``: print the addresses, then run until Ctrl-C (or ``seconds``);
    ``input_timeout_s`` [s]: the staleness brake (None: the default, 0.1 s). With
    ``as_json`` the human lines go to stderr and stdout gets one JSON object at the end
    (addresses, counts, ``hardware_io: false``)."""
    import functools
    import json
    import sys

    say = functools.partial(print, file=sys.stderr if as_json else sys.stdout)

    teleop = teleop_config(input_timeout_s)
    ssl_context, host = None, "127.0.0.1"
    if lan:
        from rob_twin.twin.teleop.certs import (
            DEFAULT_CERT_DIR,
            ensure_certificate,
            lan_addresses,
            server_ssl_context,
        )

        cert = ensure_certificate(cert_dir or DEFAULT_CERT_DIR)
        ssl_context, host = server_ssl_context(cert), "0.0.0.0"
        say(f"TLS certificate {'generated' if cert.created else 'reused'}: {cert.cert_path}")
        say(f"  SHA-256 fingerprint {cert.fingerprint_sha256}")
        addrs = lan_addresses()
    cfg = with_port(
        AppConfig(
            scenario=scenario,
            viewer=viewer,
            video=VideoConfig(fps=video_fps),
            teleop=teleop,
            calibration=calibration,
            robot=robot,
        ),
        host,
        port,
    )
    app = TeleopApp(cfg, ssl_context)

    def announce() -> None:
        app._ready.wait()
        url = app.server.url
        say(
            f"teleop: operator page {url}  watcher page {url}watch  (simulated; hardware_io: false)"
        )
        if lan:
            for a in addrs:
                say(
                    f"  on the LAN: https://{a}:{app.server.port}/  "
                    "(accept the self-signed certificate)"
                )
        say("  hold Space (grip) to engage a hand, W/A/S/D/R/F to move it; Ctrl-C ends", flush=True)

    threading.Thread(target=announce, daemon=True).start()
    try:
        app.run(seconds)
    except KeyboardInterrupt:
        pass
    counts = dict(app.controller.counts) if app.controller else {}
    say("teleop ended: " + (", ".join(f"{k} {v}" for k, v in counts.items()) or "no input"))
    if as_json:
        url = app.server.url if app.server else None
        summary = {"operator_page": url, "watcher_page": url and url + "watch"}
        from rob_twin.twin.calibration.calibration_file import calibration_label

        summary |= {"counts": counts, "calibration": calibration_label(calibration)}
        print(json.dumps(summary | {"hardware_io": False}, default=str))
    return 0

"""ROB as a ``dm_env.Environment`` for policies, on ``dm_control.mujoco.Physics``.

Actions do not write ``ctrl``: each ``step`` submits the arm joint targets to the two arm owners
(``rob_twin.twin.sim.closed_loop``: owner -> Ruckig -> codec -> simulated CAN -> drives), and
the base command to the tracked base drive (``rob_twin.twin.base.tread_drive``, which stops the
base when an owner faults or stops), then advances the lockstep closed loop by one control
period.

Action (float64, ``ACTION_NAMES`` order): RIGHT arm j1..j7 and LEFT arm j1..j7 joint
targets [rad] within the joint bounds, then base forward speed v [m/s] and yaw rate omega
[rad/s]. The base bounds are the box that fits inside the treads' limits (|v| <= 0.3 m/s,
|omega| <= 0.3 / (track/2) rad/s), so every action inside the spec is drivable. An action of
the wrong shape, with a NaN, of a non-real dtype (complex, string, boolean, a masked
array: refused, never converted) or outside the spec raises ``EnvActionError`` (the field,
the value and the valid range) and the environment is left as it was. A reset seed that is
not an integer in [0, 2^32-1] raises ``EnvSeedError`` and the episode goes on; ``step`` and
``reset`` after ``close()`` raise ``EnvClosedError``.

Observations (``sensors`` picks them; ``SENSORS`` lists the names): ``feedback`` (joint
positions [rad] decoded by the host from the drives' feedback frames; the commanded ones
until the first frame arrives), ``commanded`` (the owners' last published positions),
``modes`` (each owner's mode as an index into ``MODES``), ``base`` (tread speeds [m/s], the
flow+gyro odometry pose x, y [m], yaw [rad], the base-stop flag), ``scan`` (the latest merged
360 degree lidar scan [m], no return = the range limit; zeros before the first), ``camera``
(the head camera's RGB image, uint8). Reward is 0 unless a ``reward_fn(physics, observation)``
is given: this environment is the robot, a task supplies the reward. Episodes end by
truncation at ``time_limit_s``; ``reset(seed)`` rebuilds the whole loop from that seed.

With a display, the dm_control viewer runs it with a policy in the loop::

    from dm_control import viewer
    viewer.launch(RobEnv(), policy=lambda time_step: my_action(time_step))
"""

from __future__ import annotations

import math
import numbers
import operator
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import dm_env
import numpy as np
from dm_control import mujoco as dm_mujoco
from dm_env import specs
from rob_twin.controllers.owner_types import Mode
from rob_twin.models import dimensions as D
from rob_twin.models.errors import InvalidValueError, RobTwinError, UnknownNameError
from rob_twin.models.loading import SCENE_PATH, apply_home
from rob_twin.models.names import Arm, arm_joints
from rob_twin.twin.base.lidar import LidarPair
from rob_twin.twin.base.odometry import Odometry, OdometryConfig
from rob_twin.twin.base.scan_merge import ScanMerger, mounts_from_model
from rob_twin.twin.base.tread_drive import BaseDrive
from rob_twin.twin.errors import TwinInputError
from rob_twin.twin.sim.closed_loop import ClosedLoop, ClosedLoopConfig
from rob_twin.twin.sim.twin import Twin, TwinConfig

SENSORS = ("feedback", "commanded", "modes", "base", "scan", "camera")
MODES = tuple(m.value for m in Mode)
ARMS = (Arm.RIGHT, Arm.LEFT)
ACTION_NAMES = tuple(n for arm in ARMS for n in arm_joints(arm)) + ("base/v", "base/omega")
BASE_V_MAX_M_S = D.BODY.tread_max_speed / 2
BASE_OMEGA_MAX_RAD_S = BASE_V_MAX_M_S / D.BODY.tread_y
SEED_MAX = 2**32 - 1
CAMERA_MAX_PX = 4096  # per side: the largest offscreen image the env renders


class EnvActionError(InvalidValueError):
    """An action the environment refuses (shape, dtype, NaN, outside the action spec)."""

    subject = "action"


class EnvSeedError(InvalidValueError):
    """A reset or config seed that is not an integer in [0, SEED_MAX]."""

    subject = "env"


class EnvClosedError(RobTwinError, RuntimeError):
    """``step`` or ``reset`` on an environment after ``close()``."""


def check_seed(seed: object) -> int:
    """``seed`` as an int (Python or numpy integer, not bool) in [0, SEED_MAX]; EnvSeedError
    otherwise."""
    valid = f"an integer in [0, {SEED_MAX}]"
    if isinstance(seed, (bool, np.bool_)):
        raise EnvSeedError("seed", seed, valid)
    try:
        n = operator.index(seed)
    except TypeError:
        raise EnvSeedError("seed", seed, valid) from None
    if not 0 <= n <= SEED_MAX:
        raise EnvSeedError("seed", seed, valid)
    return int(n)


def _real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _check_camera_size(size: object) -> tuple[int, int]:
    valid = f"(height, width): two integers in [1, {CAMERA_MAX_PX}] px"
    if not (isinstance(size, (tuple, list)) and len(size) == 2):
        raise TwinInputError("camera_size", size, valid)
    out = []
    for v in size:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
            raise TwinInputError("camera_size", size, valid)
        if not 1 <= int(v) <= CAMERA_MAX_PX:
            raise TwinInputError("camera_size", size, valid)
        out.append(int(v))
    return out[0], out[1]


@dataclass(frozen=True, kw_only=True)
class EnvConfig:
    """control_rate_hz: env steps per simulated second (must divide the 1 kHz physics
    rate); time_limit_s: episode length [s]; sensors: observation groups (``SENSORS``);
    camera_size: (height, width) [px] of the head camera image, rendered once per env step;
    seed: the default reset seed."""

    control_rate_hz: float = 20.0
    time_limit_s: float = 10.0
    sensors: tuple[str, ...] = ("feedback", "commanded", "modes", "base", "scan")
    camera_size: tuple[int, int] = (120, 160)
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("control_rate_hz", "time_limit_s"):
            value = getattr(self, name)
            if not _real(value) or not math.isfinite(_as_float(value)):
                raise TwinInputError(name, value, "a finite real number")
        physics_hz = 1.0 / D.TIMESTEP
        steps = physics_hz / self.control_rate_hz if self.control_rate_hz > 0 else 0.0
        if not (math.isfinite(steps) and steps >= 1 and abs(steps - round(steps)) < 1e-9):
            raise TwinInputError(
                "control_rate_hz",
                self.control_rate_hz,
                f"{physics_hz:g}/k Hz for a whole k >= 1 (it must divide the physics rate)",
            )
        if not (math.isfinite(self.time_limit_s) and self.time_limit_s > 0):
            raise TwinInputError("time_limit_s", self.time_limit_s, "a finite time > 0 s")
        if not isinstance(self.sensors, (tuple, list)):
            raise TwinInputError("sensors", self.sensors, f"a tuple of names from {SENSORS}")
        for name in self.sensors:
            if name not in SENSORS:
                raise UnknownNameError("sensor", name, SENSORS)
        _check_camera_size(self.camera_size)
        check_seed(self.seed)


def _as_float(value: numbers.Real) -> float:
    """``float(value)``, inf for an integer too large for a float."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def action_bounds() -> tuple[np.ndarray, np.ndarray]:
    lo = np.array([*D.ARM_LOWER_RAD, *D.ARM_LOWER_RAD, -BASE_V_MAX_M_S, -BASE_OMEGA_MAX_RAD_S])
    hi = np.array([*D.ARM_UPPER_RAD, *D.ARM_UPPER_RAD, BASE_V_MAX_M_S, BASE_OMEGA_MAX_RAD_S])
    return lo, hi


class RobEnv(dm_env.Environment):
    """See the module doc. ``physics`` is the ``dm_control.mujoco.Physics`` the closed loop
    steps (named indexing: ``env.physics.named.data.qpos["right/j1"]``)."""

    def __init__(
        self,
        config: EnvConfig | None = None,
        reward_fn: Callable[[dm_mujoco.Physics, dict], float] | None = None,
    ):
        self.config = config or EnvConfig()
        self.reward_fn = reward_fn
        self._lo, self._hi = action_bounds()
        self.loop: ClosedLoop | None = None
        self._camera = None
        self._reset_next = True
        self._closed = False
        self._build(self.config.seed)

    # ------------------------------------------------------------------ set-up
    def _build(self, seed: int) -> None:
        """Build a new loop from ``seed`` and swap it in; a build that raises closes what it
        built and leaves the running episode as it was."""
        parts: dict = {"merged_scan": None}
        try:
            physics = dm_mujoco.Physics.from_xml_path(str(SCENE_PATH))
            model, data = physics.model.ptr, physics.data.ptr
            apply_home(model, data)
            twin = Twin(TwinConfig(seed=seed), model=model, data=data)
            parts["loop"] = loop = ClosedLoop(ClosedLoopConfig(seed=seed), twin=twin)
            drive = BaseDrive(twin)
            drive.watch_owners(loop)
            parts.update(physics=physics, drive=drive)
            parts["odometry"] = Odometry(twin, drive, OdometryConfig(), seed=seed)
            if "scan" in self.config.sensors:
                parts["lidars"] = lidars = LidarPair(twin, seed=seed)
                parts["merger"] = ScanMerger(mounts_from_model(model)).attach(lidars)
                parts["merger"].subscribers.append(self._on_scan)
            if "camera" in self.config.sensors:
                from rob_twin.twin.base.head_camera import HeadCamera

                h, w = self.config.camera_size
                parts["_camera"] = HeadCamera(model, height=h, width=w)
        except BaseException:
            if "loop" in parts:
                parts["loop"].close()
            if parts.get("_camera") is not None:
                parts["_camera"].close()
            raise
        if self.loop is not None:
            self.loop.close()
        if self._camera is not None and "_camera" in parts:
            self._camera.close()
        for name, value in parts.items():
            setattr(self, name, value)
        self._steps_per_action = int(round(1.0 / (self.config.control_rate_hz * twin.scheduler.dt)))
        self._limit_steps = int(round(self.config.time_limit_s * self.config.control_rate_hz))
        self._step_count = 0
        self.seed = seed

    def _on_scan(self, merged) -> None:
        self.merged_scan = merged

    # ------------------------------------------------------------------ specs
    def action_spec(self) -> specs.BoundedArray:
        return specs.BoundedArray(
            shape=(len(ACTION_NAMES),),
            dtype=np.float64,
            minimum=self._lo,
            maximum=self._hi,
            name="\t".join(ACTION_NAMES),
        )

    def observation_spec(self) -> OrderedDict:
        out = OrderedDict()
        s = self.config.sensors
        for arm in ARMS:
            if "feedback" in s:
                out[f"feedback/{arm.value}"] = specs.Array(
                    (7,), np.float64, f"feedback/{arm.value}"
                )
            if "commanded" in s:
                out[f"commanded/{arm.value}"] = specs.Array(
                    (7,), np.float64, f"commanded/{arm.value}"
                )
            if "modes" in s:
                out[f"mode/{arm.value}"] = specs.BoundedArray(
                    (), np.int32, 0, len(MODES) - 1, f"mode/{arm.value}"
                )
        if "base" in s:
            out["base/tread_speeds"] = specs.Array((2,), np.float64, "base/tread_speeds")
            out["base/odometry"] = specs.Array((3,), np.float64, "base/odometry")
            out["base/stopped"] = specs.BoundedArray((), np.int32, 0, 1, "base/stopped")
        if "scan" in s:
            n = self._scan_bins()
            out["scan"] = specs.BoundedArray((n,), np.float64, 0.0, self._scan_max(), "scan")
        if "camera" in s:
            h, w = self.config.camera_size
            out["camera/rgb"] = specs.BoundedArray((h, w, 3), np.uint8, 0, 255, "camera/rgb")
        return out

    def _scan_bins(self) -> int:
        inc = min(u.config.angle_increment_rad for u in self.lidars.units.values())
        return int(math.ceil(2 * math.pi / inc - 1e-9))

    def _scan_max(self) -> float:
        return max(u.config.range_max_m for u in self.lidars.units.values())

    # ------------------------------------------------------------------ dm_env
    def reset(self, seed: int | None = None) -> dm_env.TimeStep:
        """A new episode: the whole loop rebuilt from ``seed`` (the config's by default; an
        integer in [0, SEED_MAX], else EnvSeedError and the running episode goes on)."""
        self._check_open("reset")
        self._build(self.config.seed if seed is None else check_seed(seed))
        self._reset_next = False
        return dm_env.restart(self._observation())

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise EnvClosedError(f"RobEnv.{what}() on a closed environment; valid: a new RobEnv")

    def step(self, action) -> dm_env.TimeStep:
        self._check_open("step")
        if self._reset_next:
            return self.reset(self.seed)
        a = self._validate(action)
        for k, arm in enumerate(ARMS):
            self.loop.command(arm, a[7 * k : 7 * k + 7])
        if not self.drive.stopped:
            self.drive.command(a[14], a[15])
        self.loop.twin.step(self._steps_per_action)
        self._step_count += 1
        obs = self._observation()
        reward = float(self.reward_fn(self.physics, obs)) if self.reward_fn else 0.0
        if self._step_count >= self._limit_steps:
            self._reset_next = True
            return dm_env.truncation(reward, obs)
        return dm_env.transition(reward, obs)

    def _validate(self, action) -> np.ndarray:
        """``action`` as float64, refused unless it is 16 plain real numbers in the spec: no
        complex, string, boolean or masked values (nothing is converted silently)."""
        n = len(ACTION_NAMES)
        if isinstance(action, np.ma.MaskedArray):
            raise EnvActionError("action", "a masked array", f"{n} plain real numbers")
        if isinstance(action, (str, bytes)):
            raise EnvActionError("action", action, f"{n} real numbers")
        if isinstance(action, np.ndarray):
            a = action
        else:
            try:
                entries = list(action)
            except TypeError:
                raise EnvActionError("action", action, f"{n} real numbers") from None
            if len(entries) != n:
                raise EnvActionError(
                    "action shape", (len(entries),), f"({n},): {', '.join(ACTION_NAMES)}"
                )
            for i, (name, v) in enumerate(zip(ACTION_NAMES, entries, strict=True)):
                if isinstance(v, (str, bytes)):
                    raise EnvActionError("action dtype", type(v).__name__, "real numbers")
                if not _real(v):
                    raise EnvActionError(name, v, "a real number")
                if not math.isfinite(_as_float(v)):
                    raise EnvActionError(name, v, f"[{self._lo[i]:.4g}, {self._hi[i]:.4g}]")
            a = np.array([float(v) for v in entries], dtype=np.float64)
        if a.dtype.kind not in "iuf":
            raise EnvActionError("action dtype", str(a.dtype), "integer or floating point")
        if a.shape != (n,):
            raise EnvActionError("action shape", a.shape, f"({n},): {', '.join(ACTION_NAMES)}")
        a = a.astype(np.float64)
        for i, name in enumerate(ACTION_NAMES):
            v = a[i]
            if not (np.isfinite(v) and self._lo[i] <= v <= self._hi[i]):
                raise EnvActionError(name, float(v), f"[{self._lo[i]:.4g}, {self._hi[i]:.4g}]")
        return a

    def _observation(self) -> OrderedDict:
        s, loop, obs = self.config.sensors, self.loop, OrderedDict()
        for arm in ARMS:
            commanded = np.array(loop.commanded(arm), np.float64)
            if "feedback" in s:
                fb = loop.feedback(arm)
                obs[f"feedback/{arm.value}"] = commanded if fb is None else np.array(fb, np.float64)
            if "commanded" in s:
                obs[f"commanded/{arm.value}"] = commanded
            if "modes" in s:
                obs[f"mode/{arm.value}"] = np.int32(MODES.index(loop.drivers[arm].owner.mode.value))
        if "base" in s:
            obs["base/tread_speeds"] = self.drive.tread_speed_m_s.copy()
            obs["base/odometry"] = self.odometry.pose.copy()
            obs["base/stopped"] = np.int32(self.drive.stopped)
        if "scan" in s:
            if self.merged_scan is None:
                obs["scan"] = np.zeros(self._scan_bins())
            else:
                obs["scan"] = np.minimum(self.merged_scan.ranges, self._scan_max())
        if "camera" in s:
            obs["camera/rgb"] = self._camera.rgb(self.loop.twin.data)
        return obs

    def close(self) -> None:
        """Release the bus and the renderer; later ``step``/``reset`` raise EnvClosedError."""
        self._closed = True
        if self.loop is not None:
            self.loop.close()
            self.loop = None
        if self._camera is not None:
            self._camera.close()
            self._camera = None

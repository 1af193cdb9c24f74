"""Odometry of the tracked base, and the simulator's ground truth as a motion-capture stream.

Estimators (planar pose x, y [m], yaw [rad], integrated at ``rate_hz``):

- ``tread``: forward speed and yaw rate from the tread motors' speeds (encoders) with the
  nominal track width; blind to slip.
- ``tread+gyro``: forward speed from the treads, yaw rate from the gyro.
- ``flow+gyro``: the floor-flow sensor's velocity over the floor (moved from its mounting
  point to the base centre with the gyro's yaw rate), yaw rate from the gyro.

Each sensor is read in its own frame (MuJoCo ``gyro`` and ``velocimeter`` sensors on their
sites) with simulated noise, then turned into the base frame with the mounting that the
*configuration* states: a missing or wrong mounting is an estimator error, which the
``odometry`` experiment provokes on purpose.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import mujoco
import numpy as np
from rob_twin.models import dimensions as D
from rob_twin.models import names as N
from rob_twin.models.errors import UnknownNameError

ESTIMATORS = ("tread", "tread+gyro", "flow+gyro")


def _rx(angle: float) -> tuple[tuple[float, ...], ...]:
    c, s = math.cos(angle), math.sin(angle)
    return ((1.0, 0.0, 0.0), (0.0, c, -s), (0.0, s, c))


IDENTITY = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


@dataclass(frozen=True, kw_only=True)
class Mounting:
    """Where a sensor sits on the base: ``position_m`` in the base frame, ``rotation``
    (3x3, rows) turning sensor-frame vectors into the base frame."""

    position_m: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rotation: tuple[tuple[float, ...], ...] = IDENTITY


def true_imu_mounting() -> Mounting:
    """The IMU as the model mounts it (rolled about x; ``rob_twin.models.dimensions``)."""
    return Mounting(position_m=D.BODY.imu_pos, rotation=_rx(D.BODY.imu_roll))


def true_flow_mounting() -> Mounting:
    return Mounting(position_m=D.BODY.flow_pos)


@dataclass(frozen=True, kw_only=True)
class OdometryConfig:
    """estimator: one of ESTIMATORS; rate_hz: integration rate (divides the physics rate);
    track_width_m: the track width the tread model assumes [m]; imu, flow: the mountings the
    configuration states; gyro_noise_rad_s, gyro_bias_rad_s: white noise std and constant
    bias of the gyro [rad/s]; flow_noise_m_s: white noise std of the flow velocity [m/s]."""

    estimator: str = "flow+gyro"
    rate_hz: float = 100.0
    track_width_m: float = 2 * D.BODY.tread_y
    imu: Mounting = field(default_factory=true_imu_mounting)
    flow: Mounting = field(default_factory=true_flow_mounting)
    gyro_noise_rad_s: float = 0.002
    gyro_bias_rad_s: float = 0.0005
    flow_noise_m_s: float = 0.003

    def __post_init__(self) -> None:
        if self.estimator not in ESTIMATORS:
            raise UnknownNameError("odometry estimator", self.estimator, ESTIMATORS)


def base_pose(model: mujoco.MjModel, data: mujoco.MjData) -> tuple[float, float, float]:
    """The base's true planar pose (x, y [m], yaw [rad]) in the world."""
    bid = model.body(N.BASE_BODY).id
    x, y = data.xpos[bid, :2]
    r = data.xmat[bid].reshape(3, 3)
    return float(x), float(y), math.atan2(r[1, 0], r[0, 0])


class MocapStream:
    """Ground truth: the base's planar pose sampled at ``rate_hz`` (a motion-capture stream,
    noise ``noise_m`` [m] std on x and y). ``samples``: rows (t, x, y, yaw)."""

    def __init__(
        self, twin, rate_hz: float = 100.0, noise_m: float = 0.0, seed: int = 0, name: str = "mocap"
    ):
        self.twin, self.noise_m = twin, noise_m
        self.rng = np.random.default_rng(seed)
        self.rows: list[tuple[float, float, float, float]] = []
        twin.scheduler.add(name, rate_hz, self._sample)

    def _sample(self, now: float) -> None:
        x, y, yaw = base_pose(self.twin.model, self.twin.data)
        if self.noise_m > 0:
            x, y = x + self.rng.normal(0, self.noise_m), y + self.rng.normal(0, self.noise_m)
        self.rows.append((now, x, y, yaw))

    @property
    def samples(self) -> np.ndarray:
        return np.array(self.rows).reshape(-1, 4)


class Odometry:
    """One estimator running on a twin whose base is driven by ``drive`` (a BaseDrive).

    Starts at the true pose (as a robot that is told where it stands); ``track`` holds rows
    (t, x, y, yaw) of the estimate."""

    def __init__(
        self,
        twin,
        drive,
        config: OdometryConfig | None = None,
        seed: int = 0,
        name: str | None = None,
    ):
        self.config = cfg = config or OdometryConfig()
        self.twin, self.drive = twin, drive
        self.rng = np.random.default_rng(seed)
        model = twin.model
        self._gyro = slice(
            int(model.sensor(N.GYRO_SENSOR).adr[0]), int(model.sensor(N.GYRO_SENSOR).adr[0]) + 3
        )
        flow_adr = int(model.sensor(N.FLOW_SENSOR).adr[0])
        self._flow = slice(flow_adr, flow_adr + 3)
        self._imu_rot = np.array(cfg.imu.rotation, float)
        self._flow_rot = np.array(cfg.flow.rotation, float)
        self._flow_pos = np.array(cfg.flow.position_m, float)
        self.pose = np.array(base_pose(model, twin.data), float)
        self.rows: list[tuple[float, float, float, float]] = []
        self._dt = 1.0 / cfg.rate_hz
        self.name = name or f"odometry/{cfg.estimator}/{len(twin.scheduler.tasks)}"
        twin.scheduler.add(self.name, cfg.rate_hz, self._update)

    def yaw_rate(self) -> float:
        """Yaw rate [rad/s] from the gyro, through the configured IMU mounting."""
        cfg = self.config
        raw = self.twin.data.sensordata[self._gyro] + self.rng.normal(0, cfg.gyro_noise_rad_s, 3)
        raw = raw + cfg.gyro_bias_rad_s
        return float((self._imu_rot @ raw)[2])

    def body_velocity(self, omega: float) -> tuple[float, float]:
        """Base-centre velocity (forward, left) [m/s] in the base frame from the flow sensor."""
        raw = self.twin.data.sensordata[self._flow] + self.rng.normal(
            0, self.config.flow_noise_m_s, 3
        )
        v = self._flow_rot @ raw
        rx, ry = self._flow_pos[0], self._flow_pos[1]
        return float(v[0] + omega * ry), float(v[1] - omega * rx)

    def _update(self, now: float) -> None:
        cfg = self.config
        left, right = self.drive.tread_speed_m_s
        if cfg.estimator == "tread":
            vx, vy, w = (left + right) / 2, 0.0, (right - left) / cfg.track_width_m
        elif cfg.estimator == "tread+gyro":
            vx, vy, w = (left + right) / 2, 0.0, self.yaw_rate()
        else:
            w = self.yaw_rate()
            vx, vy = self.body_velocity(w)
        x, y, yaw = self.pose
        mid = yaw + 0.5 * w * self._dt
        c, s = math.cos(mid), math.sin(mid)
        self.pose[:] = (
            x + (c * vx - s * vy) * self._dt,
            y + (s * vx + c * vy) * self._dt,
            yaw + w * self._dt,
        )
        self.rows.append((now, *self.pose))

    @property
    def track(self) -> np.ndarray:
        return np.array(self.rows).reshape(-1, 4)


def position_errors(estimate: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Planar distance [m] between an estimate and ground truth at the estimate's times
    (truth interpolated in time; both are rows (t, x, y, yaw))."""
    tx = np.interp(estimate[:, 0], truth[:, 0], truth[:, 1])
    ty = np.interp(estimate[:, 0], truth[:, 0], truth[:, 2])
    return np.hypot(estimate[:, 1] - tx, estimate[:, 2] - ty)

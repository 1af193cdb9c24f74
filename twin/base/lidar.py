"""RPLIDAR A1-class 2D lidars on the base: each beam cast at its own time along a revolution.

A unit spins at ``rate_hz * (1 + rate_error)`` (a small per-unit error: the two units never
spin in step, seed 002). Beam ``i`` of a revolution that starts at ``t0`` leaves at angle
``2 pi i / beams`` of the unit's frame (its site: +x is angle 0, counter-clockwise) at time
``t0 + i / beams * period``. Every ``slice_s`` the beams due since the previous slice are
cast together with one ``mujoco.mj_multiRay`` from the unit's pose at that instant (so a
revolution costs ``period / slice_s`` calls; a beam's origin is at most ``slice_s`` old: 2.5
mm at 0.5 m/s with the default 5 ms). The unit sees everything, the robot too: dropping
self-hits is the merge's job.

A completed revolution becomes a ``Scan`` that the host receives ``latency_s`` later; the
host stamps it as a driver does, receive time minus the nominal scan duration, so latency
and rate error both end up in the stamp. Returns outside ``[range_min_m, range_max_m]``
are ``inf``; noise is Gaussian, ``noise_floor_m + noise_fraction * range`` std.
Values are ASSUMED for the A1 class (datasheet order of magnitude: 0.15-12 m, about 1 degree,
<1 % of range below 3 m), not measured on ROB's units.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import mujoco
import numpy as np
from rob_twin.models import names as N
from rob_twin.models.errors import UnknownNameError
from rob_twin.twin.errors import TwinInputError


@dataclass(frozen=True, kw_only=True)
class LidarConfig:
    """unit: ``front`` or ``back`` (its site in the model); rate_hz: nominal revolutions per
    second; rate_error: this unit's fractional rate error; beams: returns per revolution;
    range_min_m, range_max_m [m]; noise_floor_m [m], noise_fraction: range noise std =
    floor + fraction * range; latency_s: revolution end -> host receive [s]; slice_s: how
    often due beams are cast [s] (1/slice_s must divide the physics rate); phase: where in
    its revolution the unit is at t = 0 (0..1)."""

    unit: str = "front"
    rate_hz: float = 5.5
    rate_error: float = 0.0
    beams: int = 360
    range_min_m: float = 0.15
    range_max_m: float = 12.0
    noise_floor_m: float = 0.002
    noise_fraction: float = 0.005
    latency_s: float = 0.03
    slice_s: float = 0.005
    phase: float = 0.0

    def __post_init__(self) -> None:
        if self.unit not in N.LIDAR_SITES:
            raise UnknownNameError("lidar unit", self.unit, sorted(N.LIDAR_SITES))
        checks = {
            "rate_hz": (self.rate_hz, 0.5 <= self.rate_hz <= 20, "[0.5, 20] Hz"),
            "rate_error": (self.rate_error, abs(self.rate_error) < 0.2, "(-0.2, 0.2)"),
            "beams": (
                self.beams,
                isinstance(self.beams, int) and 8 <= self.beams <= 8192,
                "8..8192",
            ),
            "range_min_m": (
                self.range_min_m,
                0 <= self.range_min_m < self.range_max_m,
                f"[0, range_max_m={self.range_max_m})",
            ),
            "range_max_m": (self.range_max_m, 0 < self.range_max_m <= 100, "(0, 100] m"),
            "noise_floor_m": (self.noise_floor_m, self.noise_floor_m >= 0, ">= 0 m"),
            "noise_fraction": (self.noise_fraction, 0 <= self.noise_fraction < 0.5, "[0, 0.5)"),
            "latency_s": (self.latency_s, 0 <= self.latency_s < 1, "[0, 1) s"),
            "phase": (self.phase, 0 <= self.phase < 1, "[0, 1)"),
        }
        for name, (value, ok, valid) in checks.items():
            if not (isinstance(value, (int, float)) and math.isfinite(value) and ok):
                raise TwinInputError(name, value, valid)

    @property
    def period_s(self) -> float:
        """The unit's true revolution period [s]."""
        return 1.0 / (self.rate_hz * (1.0 + self.rate_error))

    @property
    def angle_increment_rad(self) -> float:
        return 2 * math.pi / self.beams


def front_back_configs(**common) -> tuple[LidarConfig, LidarConfig]:
    """The two units as ROB carries them (ASSUMED): the front one 1 % fast with 360 beams,
    30 ms latency; the back one 1.3 % slow with 400 beams (a finer mode), 45 ms latency,
    started 0.37 of a revolution later."""
    front = dict(unit="front", rate_error=0.010, beams=360, latency_s=0.030, phase=0.0)
    back = dict(unit="back", rate_error=-0.013, beams=400, latency_s=0.045, phase=0.37)
    return LidarConfig(**{**front, **common}), LidarConfig(**{**back, **common})


@dataclass
class Scan:
    """One revolution as the host sees it, plus the simulator's truth for evaluation.

    stamp_s: host stamp (receive time minus the nominal scan duration) [s]; ranges [m] per
    beam, ``inf`` for no return, beam ``i`` at ``i * angle_increment_rad`` in the unit
    frame; received_s: host receive time [s]. Truth: beam_time_s (when each beam really
    left), hit_world (the point each beam hit, world frame, noise-free; nan without a
    hit), hit_geom (geom id or -1)."""

    unit: str
    seq: int
    stamp_s: float
    received_s: float
    angle_increment_rad: float
    time_increment_s: float  # nominal, as the driver reports it
    ranges: np.ndarray
    beam_time_s: np.ndarray
    hit_world: np.ndarray
    hit_geom: np.ndarray

    @property
    def angles_rad(self) -> np.ndarray:
        return np.arange(len(self.ranges)) * self.angle_increment_rad


@dataclass
class _Revolution:
    start_s: float
    dist: np.ndarray
    geom: np.ndarray
    hit: np.ndarray
    cast: int = 0


class Lidar:
    """One unit on a twin. ``subscribe(fn)`` gets each Scan at its receive time; ``scans``
    keeps them all (``keep`` most recent)."""

    def __init__(self, twin, config: LidarConfig | None = None, seed: int = 0, keep: int = 1000):
        self.config = cfg = config or LidarConfig()
        self.twin = twin
        model = twin.model
        self.site = model.site(N.LIDAR_SITES[cfg.unit]).id
        self.rng = np.random.default_rng(seed)
        self.keep = keep
        self.scans: list[Scan] = []
        self.subscribers: list[Callable[[Scan], None]] = []
        self._pending: list[Scan] = []
        self._seq = 0
        n = cfg.beams
        local = np.arange(n) * cfg.angle_increment_rad
        self._dirs_local = np.stack([np.cos(local), np.sin(local), np.zeros(n)], axis=1)
        self._geomid = np.zeros(n, np.int32)
        self._dist = np.zeros(n)
        self._rev = self._new_revolution(-cfg.phase * cfg.period_s)
        self.calls = 0
        self.task_name = f"lidar/{cfg.unit}"
        twin.scheduler.add(self.task_name, 1.0 / cfg.slice_s, self._tick)

    def subscribe(self, fn: Callable[[Scan], None]) -> None:
        self.subscribers.append(fn)

    def _new_revolution(self, start_s: float) -> _Revolution:
        n = self.config.beams
        return _Revolution(
            start_s, np.full(n, -1.0), np.full(n, -1, np.int32), np.full((n, 3), np.nan)
        )

    def _tick(self, now: float) -> None:
        self._deliver(now)
        cfg = self.config
        while True:
            rev = self._rev
            due = int(math.floor((now - rev.start_s) / cfg.period_s * cfg.beams + 1e-9)) + 1
            due = min(due, cfg.beams)
            if due > rev.cast:
                self._cast(rev, rev.cast, due)
            if rev.cast < cfg.beams:
                return
            self._finish(rev)
            self._rev = self._new_revolution(rev.start_s + cfg.period_s)

    def _cast(self, rev: _Revolution, lo: int, hi: int) -> None:
        """Cast beams lo..hi-1 of ``rev`` from the unit's pose now: one mj_multiRay call."""
        data = self.twin.data
        origin = data.site_xpos[self.site]
        rot = data.site_xmat[self.site].reshape(3, 3)
        dirs = self._dirs_local[lo:hi] @ rot.T
        k = hi - lo
        geomid, dist = self._geomid[:k], self._dist[:k]
        mujoco.mj_multiRay(
            self.twin.model,
            data,
            origin,
            dirs.reshape(-1),
            None,
            True,
            -1,
            geomid,
            dist,
            None,
            k,
            self.config.range_max_m + 1.0,
        )
        self.calls += 1
        rev.dist[lo:hi] = dist
        rev.geom[lo:hi] = geomid
        hit = dist >= 0
        rev.hit[lo:hi][hit] = origin + dirs[hit] * dist[hit, None]
        rev.cast = hi

    def _finish(self, rev: _Revolution) -> None:
        cfg = self.config
        n = cfg.beams
        true = rev.dist.copy()
        noisy = true + self.rng.normal(0.0, 1.0, n) * (
            cfg.noise_floor_m + cfg.noise_fraction * np.abs(true)
        )
        ranges = np.where(
            (true >= cfg.range_min_m) & (noisy <= cfg.range_max_m) & (true >= 0), noisy, np.inf
        )
        received = rev.start_s + cfg.period_s + cfg.latency_s
        nominal = 1.0 / cfg.rate_hz
        self._seq += 1
        scan = Scan(
            unit=cfg.unit,
            seq=self._seq,
            stamp_s=received - nominal,
            received_s=received,
            angle_increment_rad=cfg.angle_increment_rad,
            time_increment_s=nominal / n,
            ranges=ranges,
            beam_time_s=rev.start_s + np.arange(n) / n * cfg.period_s,
            hit_world=rev.hit,
            hit_geom=rev.geom,
        )
        self._pending.append(scan)

    def _deliver(self, now: float) -> None:
        while self._pending and self._pending[0].received_s <= now + 1e-9:
            scan = self._pending.pop(0)
            self.scans.append(scan)
            del self.scans[: -self.keep]
            for fn in self.subscribers:
                fn(scan)


@dataclass
class LidarPair:
    """Both units on one twin (``front_back_configs`` by default)."""

    twin: object
    configs: tuple[LidarConfig, LidarConfig] = field(default_factory=front_back_configs)
    seed: int = 0
    units: dict[str, Lidar] = field(init=False)

    def __post_init__(self) -> None:
        self.units = {
            c.unit: Lidar(self.twin, c, seed=self.seed + i) for i, c in enumerate(self.configs)
        }

"""Merge the front and back lidar scans into one 360 degree scan (seed 002's merge node).

Seed 002: pair scans by their timestamps (any two within 0.1 s), look up each scan's
transform into the robot frame at that scan's own timestamp, resample both to the finer of
the two angular resolutions, keep the nearest return in each direction, stamp the result
halfway between the two, and drop hits on the robot itself.

Here the units are bolted to the base, so each scan's transform into the robot (base)
frame is the unit's static mount, the same at every timestamp; like the seed's node, the
merge does not undo the base's motion during a revolution (the error that leaves is
measured by ``evaluate``). Self-hits are dropped by the robot's footprint: any return
inside the box ``self_box_m`` (robot frame, base footprint plus the torso's swept circle
plus a margin) is the robot. The merged scan's bins start at ``-pi``; ``inf`` is no return.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from rob_twin.models import names as N
from rob_twin.twin.base.lidar import Scan
from rob_twin.twin.errors import TwinInputError


@dataclass(frozen=True, kw_only=True)
class MergeConfig:
    """pair_window_s: largest stamp difference of a pair [s]; self_box_m: ((x_lo, x_hi),
    (y_lo, y_hi)) of the robot in its own frame [m], returns inside are dropped."""

    pair_window_s: float = 0.1
    self_box_m: tuple[tuple[float, float], tuple[float, float]] = ((-0.36, 0.36), (-0.36, 0.36))

    def __post_init__(self) -> None:
        if not (math.isfinite(self.pair_window_s) and 0 < self.pair_window_s <= 1.0):
            raise TwinInputError("pair_window_s", self.pair_window_s, "(0, 1] s")


@dataclass(frozen=True)
class Mount:
    """A unit's pose on the base: x, y [m], yaw [rad] (robot frame)."""

    x: float
    y: float
    yaw: float


def mounts_from_model(model) -> dict[str, Mount]:
    """Each unit's static mount, read from its site in the model."""
    out = {}
    for unit, site in N.LIDAR_SITES.items():
        s = model.site(site)
        w, _, _, z = s.quat
        out[unit] = Mount(float(s.pos[0]), float(s.pos[1]), 2 * math.atan2(z, w))
    return out


@dataclass
class MergedScan:
    """stamp_s: halfway between the pair's stamps [s]; ranges [m] over bins of
    ``angle_increment_rad`` from ``angle_min_rad`` (``inf``: no return); source: per bin,
    (unit index into ``units``, beam index) of the kept return, (-1, -1) where empty;
    dropped_self: returns dropped as hits on the robot, per unit."""

    stamp_s: float
    angle_min_rad: float
    angle_increment_rad: float
    ranges: np.ndarray
    source: np.ndarray
    units: tuple[str, str]
    scans: tuple[Scan, Scan]
    dropped_self: dict[str, np.ndarray]

    @property
    def angles_rad(self) -> np.ndarray:
        return self.angle_min_rad + (np.arange(len(self.ranges)) + 0.5) * self.angle_increment_rad


def scan_points(scan: Scan, mount: Mount) -> np.ndarray:
    """The scan's returns as (n, 2) points in the robot frame (nan rows for no return)."""
    r = np.where(np.isfinite(scan.ranges), scan.ranges, np.nan)
    a = scan.angles_rad + mount.yaw
    return np.stack([mount.x + r * np.cos(a), mount.y + r * np.sin(a)], axis=1)


def merge(
    a: Scan, b: Scan, mounts: dict[str, Mount], config: MergeConfig | None = None
) -> MergedScan:
    """One 360 degree scan from a pair (see the module doc for the rules)."""
    cfg = config or MergeConfig()
    inc = min(a.angle_increment_rad, b.angle_increment_rad)
    nbins = int(math.ceil(2 * math.pi / inc - 1e-9))
    inc = 2 * math.pi / nbins
    (x0, x1), (y0, y1) = cfg.self_box_m
    dropped, parts = {}, []
    for k, scan in enumerate((a, b)):
        p = scan_points(scan, mounts[scan.unit])
        valid = np.isfinite(p[:, 0])
        inside = valid & (p[:, 0] > x0) & (p[:, 0] < x1) & (p[:, 1] > y0) & (p[:, 1] < y1)
        dropped[scan.unit] = np.flatnonzero(inside)
        keep = np.flatnonzero(valid & ~inside)
        rng = np.hypot(p[keep, 0], p[keep, 1])
        bins = ((np.arctan2(p[keep, 1], p[keep, 0]) + math.pi) / inc).astype(int) % nbins
        parts.append(np.stack([bins, rng, np.full(len(keep), k), keep], axis=1))
    allp = np.concatenate(parts)
    allp = allp[np.lexsort((allp[:, 1], allp[:, 0]))]  # by bin, then nearest first
    bins, first = np.unique(allp[:, 0].astype(int), return_index=True)
    best = np.full(nbins, np.inf)
    source = np.full((nbins, 2), -1, int)
    best[bins] = allp[first, 1]
    source[bins] = allp[first, 2:].astype(int)
    return MergedScan(
        stamp_s=(a.stamp_s + b.stamp_s) / 2,
        angle_min_rad=-math.pi,
        angle_increment_rad=inc,
        ranges=best,
        source=source,
        units=(a.unit, b.unit),
        scans=(a, b),
        dropped_self=dropped,
    )


class ScanMerger:
    """Pairs the units' scans as they arrive and emits merged scans to ``subscribers``.

    A new scan pairs with the other unit's waiting scan whose stamp is nearest, if within
    ``pair_window_s``; a scan that finds no partner waits; scans that can no longer pair
    (older than the window behind the newest of the other unit) are counted as unpaired."""

    def __init__(self, mounts: dict[str, Mount], config: MergeConfig | None = None):
        self.mounts, self.config = mounts, config or MergeConfig()
        self.waiting: dict[str, list[Scan]] = {}
        self.merged: list[MergedScan] = []
        self.unpaired = 0
        self.subscribers: list[Callable[[MergedScan], None]] = []

    def attach(self, lidars) -> ScanMerger:
        """Subscribe to each unit of a LidarPair (or an iterable of Lidar)."""
        units = lidars.units.values() if hasattr(lidars, "units") else lidars
        for lidar in units:
            lidar.subscribe(self.add)
        return self

    def add(self, scan: Scan) -> MergedScan | None:
        window = self.config.pair_window_s
        others = [s for u, lst in self.waiting.items() if u != scan.unit for s in lst]
        partner = min(others, key=lambda s: abs(s.stamp_s - scan.stamp_s), default=None)
        for u, lst in self.waiting.items():  # drop scans that can no longer pair
            stale = [s for s in lst if s.stamp_s < scan.stamp_s - window and s is not partner]
            self.unpaired += len(stale)
            self.waiting[u] = [s for s in lst if s not in stale]
        if partner is None or abs(partner.stamp_s - scan.stamp_s) > window:
            self.waiting.setdefault(scan.unit, []).append(scan)
            return None
        self.waiting[partner.unit].remove(partner)
        first, second = sorted((partner, scan), key=lambda s: s.unit != "front")
        merged = merge(first, second, self.mounts, self.config)
        self.merged.append(merged)
        for fn in self.subscribers:
            fn(merged)
        return merged


@dataclass
class PoseHistory:
    """The base's true planar pose sampled on a twin (rows t, x, y, yaw with yaw unwrapped),
    interpolated at any time inside the record."""

    rows: list = field(default_factory=list)

    def add(self, t: float, x: float, y: float, yaw: float) -> None:
        if self.rows:
            prev = self.rows[-1][3]
            yaw = prev + math.remainder(yaw - prev, 2 * math.pi)
        self.rows.append((t, x, y, yaw))

    def at(self, t: float | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a = np.array(self.rows)
        return (
            np.interp(t, a[:, 0], a[:, 1]),
            np.interp(t, a[:, 0], a[:, 2]),
            np.interp(t, a[:, 0], a[:, 3]),
        )


def robot_geoms(model) -> np.ndarray:
    """Boolean per geom: does it belong to ROB (a body under the base)?"""
    base = model.body(N.BASE_BODY).id
    return model.body_rootid[model.geom_bodyid] == base


def evaluate(merged: MergedScan, history: PoseHistory, is_robot: np.ndarray) -> dict:
    """Errors of one merged scan against the simulator's truth.

    For each kept return, the world point its beam really hit is put in the true robot
    frame at the merged stamp: angular error = bin centre - true bearing [rad], range error
    = merged range - true range [m]. Self-hits: raw robot hits in the pair, how many of
    them survived into the merge, and how many world hits were dropped as the robot."""
    x, y, yaw = history.at(merged.stamp_s)
    kept = np.flatnonzero(merged.source[:, 0] >= 0)
    ang_err, rng_err, leaked = [], [], 0
    for k, scan in enumerate(merged.scans):
        sel = kept[merged.source[kept, 0] == k]
        beams = merged.source[sel, 1]
        robot = is_robot[np.maximum(scan.hit_geom[beams], 0)] & (scan.hit_geom[beams] >= 0)
        leaked += int(robot.sum())
        sel, beams = sel[~robot], beams[~robot]
        p = scan.hit_world[beams, :2] - (x, y)
        c, s = math.cos(yaw), math.sin(yaw)
        px, py = c * p[:, 0] + s * p[:, 1], -s * p[:, 0] + c * p[:, 1]
        true_bearing, true_range = np.arctan2(py, px), np.hypot(px, py)
        ang_err.append(
            np.remainder(merged.angles_rad[sel] - true_bearing + math.pi, 2 * math.pi) - math.pi
        )
        rng_err.append(merged.ranges[sel] - true_range)
    robot_hits = world_dropped = 0
    for scan in merged.scans:
        in_range = np.isfinite(scan.ranges) & (scan.hit_geom >= 0)
        robot = in_range & is_robot[np.maximum(scan.hit_geom, 0)]
        robot_hits += int(robot.sum())
        dropped = np.zeros(len(scan.ranges), bool)
        dropped[merged.dropped_self[scan.unit]] = True
        world_dropped += int((dropped & ~robot).sum())
    return {
        "angular_error_rad": np.concatenate(ang_err),
        "range_error_m": np.concatenate(rng_err),
        "robot_hits": robot_hits,
        "robot_hits_kept": leaked,
        "world_hits_dropped": world_dropped,
    }

"""The two lidars (timing, geometry, noise, one ray call per slice) and their merge."""

from __future__ import annotations

import math

import numpy as np
import pytest
from rob_twin.models.errors import UnknownNameError
from rob_twin.twin.base.lidar import Lidar, LidarConfig, LidarPair, Scan
from rob_twin.twin.base.odometry import base_pose
from rob_twin.twin.base.scan_merge import (
    MergeConfig,
    PoseHistory,
    ScanMerger,
    evaluate,
    merge,
    mounts_from_model,
    robot_geoms,
)
from rob_twin.twin.base.tread_drive import BaseDrive, place_base
from rob_twin.twin.errors import TwinInputError
from rob_twin.twin.sim.scheduler import SchedulerError
from rob_twin.twin.sim.twin import Twin


def test_bad_lidar_configs_are_typed_errors_naming_value_and_range():
    with pytest.raises(UnknownNameError, match="lidar unit 'side'; valid: back, front"):
        LidarConfig(unit="side")
    with pytest.raises(TwinInputError, match=r"rate_hz=50\.0 .*\[0\.5, 20\] Hz"):
        LidarConfig(rate_hz=50.0)
    with pytest.raises(TwinInputError, match="range_min_m=20"):
        LidarConfig(range_min_m=20)
    with pytest.raises(SchedulerError, match="must divide the physics rate"):
        Lidar(Twin(), LidarConfig(slice_s=0.0003))
    with pytest.raises(TwinInputError, match="pair_window_s"):
        MergeConfig(pair_window_s=float("nan"))


def test_each_unit_spins_at_its_own_rate_and_arrives_after_its_latency():
    twin = Twin()
    pair = LidarPair(twin)
    twin.run_for(2.0)
    for unit in pair.units.values():
        cfg = unit.config
        stamps = np.array([s.stamp_s for s in unit.scans])
        assert np.diff(stamps) == pytest.approx(cfg.period_s, abs=1e-9)  # the true rate shows
        for scan in unit.scans:
            end = scan.beam_time_s[-1] + cfg.period_s / cfg.beams
            assert scan.received_s == pytest.approx(end + cfg.latency_s)
            assert np.diff(scan.beam_time_s) == pytest.approx(cfg.period_s / cfg.beams)
            assert scan.stamp_s == pytest.approx(scan.received_s - 1.0 / cfg.rate_hz)
        # one mj_multiRay call per 5 ms slice: about period / slice calls per revolution
        revolutions = (twin.time + cfg.phase * cfg.period_s) / cfg.period_s
        assert unit.calls == pytest.approx(revolutions * cfg.period_s / cfg.slice_s, rel=0.1)
    front, back = pair.units["front"].config, pair.units["back"].config
    assert front.period_s != back.period_s


def test_ranges_match_the_walls_within_the_noise():
    twin = Twin()
    place_base(twin, -5.0, 0.0, 0.0)
    pair = LidarPair(twin)
    twin.run_for(0.5)
    front, back = pair.units["front"].scans[-1], pair.units["back"].scans[-1]
    x = -5.0 + 0.28  # the front unit: 0.28 m ahead of the base centre, facing +x
    assert front.ranges[0] == pytest.approx(3.0 - x, abs=5 * (0.002 + 0.005 * (3.0 - x)))
    xb = -5.0 - 0.28  # the back unit faces -x: its beam 0 hits the south wall at x = -7
    assert back.ranges[0] == pytest.approx(xb + 7.0, abs=5 * (0.002 + 0.005 * (xb + 7.0)))
    # a beam along +y of the front unit (beam 90 of 360) meets the west wall at y = 3
    assert front.ranges[90] == pytest.approx(3.0, abs=0.05)
    assert np.all(np.isinf(front.ranges) | (front.ranges >= 0.15))


def test_beams_are_taken_at_their_own_time_while_the_base_turns():
    twin = Twin()
    place_base(twin, -2.5, 0.0, 0.0)
    drive = BaseDrive(twin)
    pair = LidarPair(twin)
    history = PoseHistory()
    twin.scheduler.add(
        "history", 1000.0, lambda now: history.add(now, *base_pose(twin.model, twin.data))
    )
    drive.command(0.0, 1.5)
    twin.run_for(2.0)
    scan = pair.units["front"].scans[-1]
    hit = np.flatnonzero(scan.hit_geom >= 0)
    # each hit point seen from the unit's pose at that beam's own time lies along the beam
    x, y, yaw = history.at(scan.beam_time_s[hit])
    mount = mounts_from_model(twin.model)["front"]
    ux = x + mount.x * np.cos(yaw) - mount.y * np.sin(yaw)
    uy = y + mount.x * np.sin(yaw) + mount.y * np.cos(yaw)
    bearing = np.arctan2(scan.hit_world[hit, 1] - uy, scan.hit_world[hit, 0] - ux) - yaw - mount.yaw
    err = np.remainder(bearing - scan.angles_rad[hit] + math.pi, 2 * math.pi) - math.pi
    assert np.percentile(np.abs(err), 95) < 0.02  # within the slice (5 ms * yaw rate)
    # and it is not the pose at the scan's end (the base turned tens of degrees meanwhile)
    _, _, yaw_end = history.at(scan.beam_time_s[-1])
    assert abs(yaw_end - history.at(scan.beam_time_s[0])[2]) > 0.05


def _synthetic(unit: str, stamp: float, beams: int = 8) -> Scan:
    n = beams
    return Scan(
        unit=unit,
        seq=0,
        stamp_s=stamp,
        received_s=stamp,
        angle_increment_rad=2 * math.pi / n,
        time_increment_s=0.0,
        ranges=np.full(n, 2.0),
        beam_time_s=np.zeros(n),
        hit_world=np.full((n, 3), np.nan),
        hit_geom=np.full(n, -1),
    )


def test_pairing_window_and_halfway_stamp():
    mounts = mounts_from_model(Twin().model)
    merger = ScanMerger(mounts)
    assert merger.add(_synthetic("front", 1.00)) is None
    assert merger.add(_synthetic("back", 1.15)) is None  # 0.15 s apart: no pair
    merged = merger.add(_synthetic("front", 1.20, beams=16))  # pairs with back @ 1.15
    assert merged.stamp_s == pytest.approx(1.175)
    assert len(merged.ranges) == 16  # the finer of the two resolutions
    assert merger.unpaired == 1  # front @ 1.00 can no longer pair


def test_merge_keeps_the_nearest_return_per_direction():
    mounts = mounts_from_model(Twin().model)
    a, b = _synthetic("front", 0.0, 8), _synthetic("back", 0.0, 8)
    b.ranges[:] = 5.0
    a.ranges[1:] = np.inf  # the front unit returns only straight ahead
    b.ranges[0] = 1.0  # the back unit sees a near return straight behind
    b.ranges[1] = 0.05  # a hit on the robot itself (inside its footprint): dropped
    m = merge(a, b, mounts)
    assert {u: d.tolist() for u, d in m.dropped_self.items()} == {"front": [], "back": [1]}
    ahead = np.argmin(np.abs(m.angles_rad - 0.0 - m.angle_increment_rad / 2))
    # straight ahead: the front unit's return at 0.28 + 2.0 m; behind: the back unit's at 0.28 + 1.0
    assert m.ranges[ahead] == pytest.approx(2.28)
    assert m.source[ahead].tolist() == [0, 0]
    # straight behind is the seam at +-pi: the first or the last bin
    assert min(m.ranges[0], m.ranges[-1]) == pytest.approx(1.28)
    assert np.all(m.ranges[np.isfinite(m.ranges)] > 0.36)  # nothing from inside the footprint


@pytest.mark.parametrize("speed", [0.0, 0.5])
def test_merged_scan_against_ground_truth(speed):
    twin = Twin()
    place_base(twin, -1.5, 0.5, 0.3)
    drive = BaseDrive(twin)
    history = PoseHistory()
    twin.scheduler.add(
        "history", 1000.0, lambda now: history.add(now, *base_pose(twin.model, twin.data))
    )
    pair = LidarPair(twin)
    merger = ScanMerger(mounts_from_model(twin.model)).attach(pair)
    drive.command(-speed, 0.0)
    twin.run_for(2.0)
    assert len(merger.merged) >= 9
    is_robot = robot_geoms(twin.model)
    evs = [evaluate(m, history, is_robot) for m in merger.merged[2:]]
    ang = np.abs(np.concatenate([e["angular_error_rad"] for e in evs]))
    rng = np.abs(np.concatenate([e["range_error_m"] for e in evs]))
    half_bin = math.pi / 400
    assert np.median(ang) < (half_bin if speed == 0 else 2 * half_bin)
    assert np.median(rng) < (0.02 if speed == 0 else 0.04)
    assert sum(e["robot_hits"] for e in evs) > 100  # the units do see the torso ...
    assert sum(e["robot_hits_kept"] for e in evs) == 0  # ... and the merge drops every such hit
    assert sum(e["world_hits_dropped"] for e in evs) == 0
    for m in merger.merged:
        a, b = m.scans
        assert abs(a.stamp_s - b.stamp_s) <= 0.1 and {a.unit, b.unit} == {"front", "back"}


def test_scan_merge_experiment_writes_figures_and_the_plot(tmp_path, monkeypatch):
    from rob_twin.experiments import exp_scan_merge, output

    for mod in (output, exp_scan_merge):
        monkeypatch.setattr(mod, "OUT_DIR", tmp_path)
    r = exp_scan_merge.run(seed=0, seconds=1.2)
    assert r["hardware_io"] is False
    still, moving = r["runs"]["still"], r["runs"]["0.5 m/s"]
    assert (
        still["robot_hits_seen"] > 0 and still["robot_hits_kept"] == moving["robot_hits_kept"] == 0
    )
    assert still["angular_error_median_rad"] <= moving["angular_error_p99_rad"]
    assert (tmp_path / "experiments" / "scan-merge" / "scans.png").stat().st_size > 10_000


def test_sensing_benchmark_is_registered():
    from rob_twin.experiments.registry import benchmarks

    assert "sensing" in benchmarks()

"""The tracked base drive (limits, ramps, slip, base-stop) and odometry against ground truth."""

from __future__ import annotations

import math

import numpy as np
import pytest
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import Arm
from rob_twin.twin.base.odometry import (
    MocapStream,
    Mounting,
    Odometry,
    OdometryConfig,
    base_pose,
    position_errors,
)
from rob_twin.twin.base.tread_drive import (
    BaseCommandError,
    BaseDrive,
    BaseDriveConfig,
    BaseStoppedError,
    place_base,
)
from rob_twin.twin.errors import TwinInputError
from rob_twin.twin.sim.closed_loop import ClosedLoop
from rob_twin.twin.sim.scheduler import SchedulerError
from rob_twin.twin.sim.twin import Twin


@pytest.fixture
def rig():
    twin = Twin()
    place_base(twin, -2.5, 0.0, 0.0)  # clear of the table
    return twin, BaseDrive(twin)


def test_commands_outside_the_limits_are_refused_with_value_and_range(rig):
    twin, drive = rig
    cfg = drive.config
    with pytest.raises(BaseCommandError, match=r"v_m_s=0\.9 .*\[-0\.6, 0\.6\] m/s"):
        drive.command(0.9, 0.0)
    with pytest.raises(BaseCommandError, match=r"omega_rad_s=5\.0 .*rad/s"):
        drive.command(0.0, 5.0)
    with pytest.raises(BaseCommandError, match="v_m_s=nan"):
        drive.command(float("nan"), 0.0)
    with pytest.raises(BaseCommandError, match="omega_rad_s='fast'"):
        drive.command(0.0, "fast")
    # each limit alone is met, together a tread would exceed its top speed
    with pytest.raises(BaseCommandError, match="each tread within its top speed"):
        drive.command(0.5, 1.0)
    assert isinstance(BaseCommandError("v", 1, "x"), RobTwinError)
    assert drive.target_m_s.tolist() == [0.0, 0.0]  # state unchanged
    left, right = drive.command(0.2, cfg.max_yaw_rate_rad_s / 4)
    assert right - left == pytest.approx(cfg.max_yaw_rate_rad_s / 4 * cfg.track_width_m)


def test_bad_config_and_rates_are_typed_errors():
    with pytest.raises(TwinInputError, match="tread_accel_m_s2=-1"):
        BaseDriveConfig(tread_accel_m_s2=-1)
    with pytest.raises(SchedulerError, match="must divide the physics rate"):
        BaseDrive(Twin(), BaseDriveConfig(control_rate_hz=300.0))


def test_tread_speeds_ramp_within_the_acceleration_limit_and_move_the_base(rig):
    twin, drive = rig
    drive.command(0.4, 0.0)
    twin.run_for(0.2)
    accel = drive.config.tread_accel_m_s2
    assert drive.tread_speed_m_s == pytest.approx([accel * 0.2] * 2, abs=accel * 0.011)
    twin.run_for(1.8)
    assert drive.tread_speed_m_s.tolist() == [0.4, 0.4]
    x, y, yaw = base_pose(twin.model, twin.data)
    # the treads' ramp then 1.6 s at 0.4 m/s: at most 0.72 m (the base lags its treads a
    # little while it speeds up), straight, and at the tread speed by now
    assert 0.6 < x + 2.5 < 0.73 and abs(y) < 0.005 and abs(yaw) < 0.01
    assert twin.data.qvel[0] == pytest.approx(0.4, abs=0.01)


def test_turning_on_the_spot_slips_the_treads(rig):
    twin, drive = rig
    drive.command(0.0, 1.0)
    twin.run_for(3.0)
    _, _, yaw0 = base_pose(twin.model, twin.data)
    twin.run_for(1.0)
    _, _, yaw1 = base_pose(twin.model, twin.data)
    achieved = math.remainder(yaw1 - yaw0, 2 * math.pi)
    assert 0.1 < achieved < 0.9  # counter-clockwise, well below the kinematic 1.0 rad/s


def test_estop_brakes_latches_and_needs_a_reset(rig):
    twin, drive = rig
    drive.command(0.5, 0.0)
    twin.run_for(1.0)
    drive.estop()
    with pytest.raises(BaseStoppedError, match="E-stop"):
        drive.command(0.1, 0.0)
    with pytest.raises(BaseStoppedError, match="cannot be reset while"):
        drive.reset()
    twin.run_for(0.1)
    assert 0 < drive.tread_speed_m_s[0] < 0.5  # braking at stop_decel, not a jump
    twin.run_for(0.3)
    assert drive.tread_speed_m_s.tolist() == [0.0, 0.0]
    drive.reset()
    drive.command(0.1, 0.0)


def test_an_owner_stop_or_fault_stops_the_base():
    with ClosedLoop() as loop:
        drive = BaseDrive(loop.twin)
        drive.watch_owners(loop)
        drive.command(0.3, 0.0)
        loop.run_for(0.5)
        assert not drive.stopped
        loop.stop(Arm.LEFT)
        loop.run_for(0.5)
        assert drive.stopped and "left arm owner" in drive.stop_cause
        assert drive.tread_speed_m_s.tolist() == [0.0, 0.0]
        with pytest.raises(BaseStoppedError):
            drive.command(0.3, 0.0)


def test_odometry_with_and_without_the_imu_mounting_while_spinning():
    twin = Twin()
    place_base(twin, -2.5, 0.0, 0.0)
    drive = BaseDrive(twin)
    mocap = MocapStream(twin, rate_hz=100.0)
    right = Odometry(twin, drive, OdometryConfig(estimator="flow+gyro"))
    missing = Odometry(twin, drive, OdometryConfig(estimator="flow+gyro", imu=Mounting()))
    tread = Odometry(twin, drive, OdometryConfig(estimator="tread"))
    drive.command(0.0, 1.0)
    twin.run_for(5.0)
    truth = mocap.samples
    assert truth.shape[1] == 4 and len(truth) == 500
    assert position_errors(right.track, truth)[-1] < 0.02
    assert position_errors(missing.track, truth)[-1] > 0.15  # lever-arm speed integrated as travel
    turned = np.unwrap(truth[:, 3])[-1] - truth[0, 3]
    assert abs(right.track[-1, 3] - truth[-1, 3]) < 0.05
    assert tread.track[-1, 3] - turned > 1.0  # treads think they turned more than the base did


def test_unknown_estimator_lists_the_valid_ones():
    with pytest.raises(RobTwinError, match="tread, tread\\+gyro, flow\\+gyro"):
        OdometryConfig(estimator="ekf")


def test_a_scenario_drives_the_base_while_both_arms_move_and_records_the_merged_scan(tmp_path):
    from rob_twin.models.poses import HOME
    from rob_twin.twin.scenario.run import Scenario, ScenarioError, run_scenario

    home = list(HOME["right"])
    reach = [home[0] + 0.2, *home[1:]]
    sc = Scenario.from_dict(
        {
            "name": "base_and_arm",
            "duration": 1.5,
            "keyframes": [
                {"t": 1.0, "arm": "right", "q": reach},
                {"t": 1.0, "arm": "left", "q": reach},
            ],
            "base": [{"t": 0.2, "v": -0.3}, {"t": 1.0, "v": 0.0, "omega": 0.0}],
        }
    )
    result = run_scenario(sc, out_dir=tmp_path, record=False, progress=False)
    assert {k: result.base[k] for k in ("steps", "refused", "base_stop")} == {
        "steps": 2,
        "refused": [],
        "base_stop": None,
    }
    assert result.base["merged_scans"] >= 6  # both lidars ran and merged at about 5.5 Hz
    scans = np.load(result.base["merged_scans_file"])
    assert scans["ranges_m"].shape == (result.base["merged_scans"], 400)
    assert result.measured["right"][-1][0] > home[0] + 0.1
    assert result.measured["left"][-1][0] > home[0] + 0.1
    with pytest.raises(ScenarioError, match=r"base\[0\]\.v: .*'fast'"):
        Scenario.from_dict({"duration": 1.0, "base": [{"t": 0.0, "v": "fast"}]})
    with pytest.raises(ScenarioError, match=r"base\[0\]: .*0\.66 m/s; valid: .*<= 0\.6 m/s"):
        Scenario.from_dict({"duration": 1.0, "base": [{"t": 0.0, "v": 0.4, "omega": 1.0}]})
    with pytest.raises(ScenarioError, match="robot 'openarm' has no tracked base"):
        Scenario.from_dict({"duration": 1.0, "robot": "openarm", "base": [{"t": 0.0}]})


def test_odometry_experiment_reports_both_runs_side_by_side_with_the_seed(tmp_path, monkeypatch):
    from rob_twin.experiments import exp_odometry, output

    for mod in (output, exp_odometry):
        monkeypatch.setattr(mod, "OUT_DIR", tmp_path)
    r = exp_odometry.run(seed=0, spin_s=6.0)
    assert r["hardware_io"] is False
    straight, spin = r["runs"]["straight 5.5 m"], r["runs"]["spin in place"]
    assert straight["travelled_m"] == pytest.approx(5.5, abs=0.1)
    fixed, missing = "flow+gyro", "flow+gyro, IMU mounting missing"
    assert straight["estimates"][missing]["final_error_m"] < 0.1  # straight: no yaw to mis-read
    assert spin["estimates"][fixed]["final_error_m"] < 0.02
    assert (
        spin["estimates"][missing]["final_error_m"] > 10 * spin["estimates"][fixed]["final_error_m"]
    )
    report = (tmp_path / "experiments" / "odometry" / "report.md").read_text()
    assert (
        "155 m" in report
        and "0.74 m" in report
        and (tmp_path / "experiments" / "odometry" / "tracks.png").is_file()
    )

"""``read_lerobot_v3``: a dataset written by LeRobot 0.6.1's own writer (the committed fixture,
tests/data/lerobot_v3_openarm/README.md) read as Damiao bus frames, and its refusals."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rob_twin.controllers.damiao_codec import Scaling, decode_mit, decode_state
from rob_twin.models.damiao_motors import MOTORS, OPENARM_GRIPPER_MOTOR
from rob_twin.models.robot import robot_of
from rob_twin.twin.calibration.dataset import DatasetError
from rob_twin.twin.calibration.lerobot_v3 import (
    FOLLOWER_KD,
    FOLLOWER_KP,
    LEROBOT_SCALING,
    read_lerobot_v3,
)

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "lerobot_v3_openarm"
DATA = FIXTURE / "data" / "chunk-000" / "file-000.parquet"
LEROBOT_PY = ROOT / ".venv-lerobot" / "bin" / "python"
BUSES = {0: "right", 1: "left"}
MOTOR_NAMES = [f"joint_{k}" for k in range(1, 8)] + ["gripper"]


@pytest.fixture(scope="module")
def table():
    info = json.loads((FIXTURE / "meta" / "info.json").read_text())
    t = pq.read_table(DATA).to_pydict()
    names = {k: info["features"][k]["names"] for k in ("observation.state", "action")}
    return t, names


@pytest.fixture(scope="module")
def recording():
    return read_lerobot_v3(FIXTURE)


def motors():
    robot = robot_of("openarm")
    return [MOTORS[m] for m in robot.motors] + [OPENARM_GRIPPER_MOTOR]


def column(table, key: str, name: str) -> np.ndarray:
    t, names = table
    return np.array([row[names[key].index(name)] for row in t[key]], float)


def test_frames_per_arm_and_drive_equal_rows(recording, table):
    rows = len(table[0]["index"])
    assert rows == 600
    for bus in BUSES:
        for esc in range(1, 9):
            cmds = [f for f in recording.frames if f.bus == bus and f.arbitration_id == esc]
            states = [
                f for f in recording.frames if f.bus == bus and f.arbitration_id == esc + 0x10
            ]
            assert len(cmds) == rows and len(states) == rows
    assert len(recording.frames) == rows * 2 * 8 * 2
    times = [f.timestamp_s for f in recording.frames]
    assert times[0] == 0.0 and np.all(np.diff(times) >= 0)
    assert math.isclose(times[-1], 5.99, abs_tol=1e-6)
    assert recording.sidecar.wiring == {0: "right", 1: "left"}
    assert recording.meta["hardware_io"] is False


def test_decoded_frames_equal_the_parquet_values(recording, table):
    ms = motors()
    for bus, side in BUSES.items():
        for j, name in enumerate(MOTOR_NAMES):
            esc, drive = j + 1, Scaling.of(ms[j])
            lerobot = LEROBOT_SCALING[ms[j].model]
            cmds = [f for f in recording.frames if f.bus == bus and f.arbitration_id == esc]
            states = [
                f for f in recording.frames if f.bus == bus and f.arbitration_id == esc + 0x10
            ]
            act = np.radians(column(table, "action", f"{side}_{name}.pos"))
            got = np.array([decode_mit(f.data, drive).q_rad for f in cmds])
            assert np.max(np.abs(got - act)) <= drive.step("q") * 1.001
            first = decode_mit(cmds[0].data, drive)
            assert first.kp == pytest.approx(FOLLOWER_KP[j], abs=drive.step("kp"))
            assert first.kd == pytest.approx(FOLLOWER_KD[j], abs=drive.step("kd"))
            assert first.dq_rad_s == pytest.approx(0.0, abs=drive.step("dq"))
            obs = "observation.state"
            pos = np.radians(column(table, obs, f"{side}_{name}.pos"))
            vel = np.radians(column(table, obs, f"{side}_{name}.vel"))
            tau = column(table, obs, f"{side}_{name}.torque")
            dec = [decode_state(f.data, drive) for f in states]
            q = np.array([d.q_rad for d in dec])
            assert np.max(np.abs(q - pos)) <= drive.step("q") * 1.001
            # LeRobot decodes under its own table; the frame holds the drive's count: the same
            # count under LeRobot's VMAX is LeRobot's value within one count
            dq_codes = np.array([(d.dq_rad_s + drive.vmax_rad_s) / drive.step("dq") for d in dec])
            dq_lerobot = dq_codes * lerobot.step("dq") - lerobot.vmax_rad_s
            assert np.max(np.abs(dq_lerobot - vel)) <= lerobot.step("dq") * 1.001
            t = np.array([d.tau_nm for d in dec])
            assert np.max(np.abs(t - tau)) <= drive.step("tau") * 1.001
            assert np.ptp(q) > 0.01 or name == "gripper"  # the fixture moves every joint


def test_initial_state_is_the_first_observation(recording, table):
    import mujoco
    from rob_twin.twin.bus.recording import STATE_SPEC

    robot = robot_of("openarm")
    model = robot.model()
    data = mujoco.MjData(model)
    mujoco.mj_setState(model, data, np.array(recording.meta["initial_state"]), STATE_SPEC)
    for side in ("right", "left"):
        for k, joint in enumerate(robot.joints(side), start=1):
            q = math.radians(column(table, "observation.state", f"{side}_joint_{k}.pos")[0])
            assert data.qpos[model.joint(joint).qposadr[0]] == pytest.approx(q, abs=4e-4)


def copy_fixture(tmp_path: Path) -> Path:
    dst = tmp_path / "ds"
    shutil.copytree(FIXTURE, dst)
    return dst


def tamper_data(folder: Path, key: str, row: int, feature: str, value: float) -> None:
    path = folder / "data" / "chunk-000" / "file-000.parquet"
    info = json.loads((folder / "meta" / "info.json").read_text())
    table = pq.read_table(path)
    values = table.column(key).to_pylist()
    values[row][info["features"][key]["names"].index(feature)] = value
    i = table.column_names.index(key)
    table = table.set_column(i, key, pa.array(values, type=table.schema.field(key).type))
    pq.write_table(table, path)


def test_refuses_another_codebase_version(tmp_path):
    folder = copy_fixture(tmp_path)
    path = folder / "meta" / "info.json"
    info = json.loads(path.read_text())
    info["codebase_version"] = "v2.1"
    path.write_text(json.dumps(info))
    with pytest.raises(DatasetError, match=r"codebase_version.*v2\.1.*v3"):
        read_lerobot_v3(folder)


def test_refuses_a_nan(tmp_path):
    folder = copy_fixture(tmp_path)
    tamper_data(folder, "observation.state", 17, "left_joint_3.vel", math.nan)
    with pytest.raises(DatasetError, match=r"left_joint_3\.vel\[17\]"):
        read_lerobot_v3(folder)


def test_refuses_a_position_of_100_rad(tmp_path):
    folder = copy_fixture(tmp_path)
    tamper_data(folder, "action", 42, "right_joint_2.pos", math.degrees(100.0))
    with pytest.raises(
        DatasetError, match=r"action right_joint_2\.pos\[42\]=5729.*valid: -20\.\.200 deg"
    ):
        read_lerobot_v3(folder)


LEROBOT_READ = """
import json, sys
from lerobot.datasets.lerobot_dataset import LeRobotDataset
ds = LeRobotDataset("rob-twin/openarm_twin_fixture", root=sys.argv[1])
row = ds[0]
print(json.dumps({"rows": len(ds), "fps": ds.fps,
                  "state": row["observation.state"].tolist(), "action": row["action"].tolist(),
                  "timestamp": float(row["timestamp"])}))
"""


@pytest.mark.skipif(
    not LEROBOT_PY.exists(), reason="no .venv-lerobot (make lerobot-venv): LeRobot's reader absent"
)
def test_lerobot_reader_agrees(table, tmp_path):
    folder = copy_fixture(tmp_path)  # LeRobot may write caches beside the data
    out = subprocess.run(
        [str(LEROBOT_PY), "-c", LEROBOT_READ, str(folder)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    theirs = json.loads(out.stdout.strip().splitlines()[-1])
    t, _ = table
    assert theirs["rows"] == len(t["index"]) and theirs["fps"] == 100
    assert theirs["state"] == pytest.approx(t["observation.state"][0], abs=0)
    assert theirs["action"] == pytest.approx(t["action"][0], abs=0)
    assert theirs["timestamp"] == 0.0

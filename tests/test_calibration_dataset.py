"""Joint-state datasets (the LeRobot-style layout openarm_dataset writes) as calibration
input: an episode made here by the twin with hidden parameters reads as a recording, the
hidden parameters predict it, ``rob-twin calibrate`` fits from it, bad folders exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rob_twin.controllers.codec import encode_joint
from rob_twin.models.names import BUS_MAPPING, Arm, arm_actuators, arm_joints
from rob_twin.twin.bus.replay import RecordedFrame, Recording, bus_no, replay
from rob_twin.twin.calibration.dataset import HOST_CODEC, DatasetError, read_joint_dataset
from rob_twin.twin.calibration.predict import predict
from rob_twin.twin.calibration.synthetic import excitation_source

HIDDEN = {"right/j2/damping": 2.5}
ACTION_HZ, OBS_HZ, SECONDS = 30.0, 250.0, 3.0
ROB_TWIN = Path(sys.executable).parent / "rob-twin"


def _write(path: Path, columns: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)


@pytest.fixture(scope="module")
def episode(tmp_path_factory) -> Path:
    """A 3 s episode: 30 Hz joint targets (the actions) given to a twin with HIDDEN
    parameters, its joints and torques sampled at 250 Hz (the observations)."""
    folder = tmp_path_factory.mktemp("dataset") / "episode_000000"
    t_act = np.arange(0.0, SECONDS, 1.0 / ACTION_HZ)
    actions = {arm: np.array([excitation_source(k)(t) for t in t_act]) for k, arm in enumerate(Arm)}
    frames = [
        RecordedFrame(float(t), bus_no(BUS_MAPPING[arm].channel), fr.arbitration_id, fr.data)
        for arm in Arm
        for t, row in zip(t_act, actions[arm], strict=True)
        for fr in (encode_joint(j, float(row[j - 1]), HOST_CODEC) for j in range(1, 8))
    ]
    frames.sort(key=lambda f: f.timestamp_s)
    run = replay(
        Recording(folder, frames), seconds=SECONDS, sample_every_s=1.0 / OBS_HZ, parameters=HIDDEN
    )
    model = run.model
    stamp = lambda t: (np.asarray(t) * 1e9).astype("datetime64[ns]")  # noqa: E731
    for arm in Arm:
        qadr = [model.joint(n).qposadr[0] for n in arm_joints(arm)]
        aid = [model.actuator(n).id for n in arm_actuators(arm)]
        q = np.c_[run.qpos[:, qadr], np.zeros(len(run.times))]
        tau = np.c_[run.actuator_force[:, aid], np.zeros(len(run.times))]
        obs = folder / "obs" / "arms" / arm.value / "state.parquet"
        _write(obs, {"timestamp": stamp(run.times), "qpos": q.tolist(), "qtorque": tau.tolist()})
        act = np.c_[actions[arm], np.zeros(len(t_act))]
        _write(
            folder / "action" / "arms" / arm.value / "qpos.parquet",
            {"timestamp": stamp(t_act), "value": act.tolist()},
        )
    return folder


def test_the_episode_reads_as_a_recording_the_hidden_parameters_predict(episode):
    rec = read_joint_dataset(episode)
    assert {f.bus for f in rec.frames} == {10, 11}
    hidden = predict(rec, HIDDEN).rms_by_joint()
    nominal = predict(rec).rms_by_joint()
    assert max(hidden.values()) < 2e-4  # the feedback's quantisation
    assert nominal["right/j2"] > 5 * hidden["right/j2"]


def test_calibrate_fits_from_the_dataset(episode, tmp_path):
    done = subprocess.run(
        [str(ROB_TWIN), "calibrate", str(episode), "--fit", "right/j2/damping"]
        + ["--max-iters", "4", "--out", "cal.json", "--json", "--quiet"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    import json

    value = json.loads(done.stdout)["parameters"]["right/j2/damping"]["value"]
    assert value == pytest.approx(2.5, rel=0.05)


def test_a_broken_episode_is_a_dataset_error(episode, tmp_path):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(episode, broken)
    (broken / "action" / "arms" / "left" / "qpos.parquet").unlink()
    with pytest.raises(DatasetError, match="missing"):
        read_joint_dataset(broken)
    _write(
        broken / "action" / "arms" / "left" / "qpos.parquet",
        {"timestamp": [0.0], "value": [[float("nan")] * 8]},
    )
    with pytest.raises(DatasetError, match="finite"):
        read_joint_dataset(broken)
    done = subprocess.run(
        [str(ROB_TWIN), "compare", str(broken)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "finite" in done.stderr and "Traceback" not in done.stderr

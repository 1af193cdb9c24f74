"""What the fuzz campaign (``test_fuzz_inputs.py``) found, each kept as a plain case: a
parquet episode's out-of-range positions and velocities and too many rows exit 2 naming
the field and the range (were exit 1 with a codec error, and minutes of conversion); a plan
file's per-arm objects hold the moving arms only and each joint belongs to one arm (an extra
arm's samples were accepted unchecked; a joint in two arms exited 1); MuJoCo's parse errors
of a robot's MJCF are one line; a decoded goals document with NaN is refused as a goals
file."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fuzz_support import cli
from rob_twin.twin.calibration import dataset
from rob_twin.twin.calibration.dataset import DatasetError, read_joint_dataset

ROOT = Path(__file__).resolve().parents[1]


def _episode(folder: Path, rows: int = 20, q=0.1, qvel=0.0) -> Path:
    """Both arms, ``rows`` observation and action rows over 1 s; joint 2 at ``q`` [rad]."""
    t = np.linspace(0.0, 1.0, rows)
    for arm in ("right", "left"):
        pos = np.zeros((rows, 8))
        pos[:, 1] = q
        obs = folder / "obs" / "arms" / arm / "state.parquet"
        obs.parent.mkdir(parents=True)
        vel = np.full((rows, 8), qvel)
        pq.write_table(pa.table({"timestamp": t, "qpos": pos.tolist(), "qvel": vel.tolist()}), obs)
        act = folder / "action" / "arms" / arm / "qpos.parquet"
        act.parent.mkdir(parents=True)
        pq.write_table(pa.table({"timestamp": t, "value": np.zeros((rows, 8)).tolist()}), act)
    return folder


@pytest.mark.parametrize("q", [1e300, 100.0, -4.47])
def test_calibrate_refuses_positions_the_bus_cannot_carry(tmp_path, q):
    folder = _episode(tmp_path / "episode", q=q)
    out = tmp_path / "cal.json"
    code, stdout, err = cli(["calibrate", str(folder), "--out", str(out), "--json", "--quiet"])
    reply = json.loads(stdout)
    assert code == 2 and reply["type"] == "DatasetError", reply
    assert "qpos[0][1]" in reply["error"] and "within +-4.468 rad" in reply["error"]
    assert "\n" not in reply["error"] and "Traceback" not in err
    assert not out.exists()


def test_a_position_on_the_bound_is_read(tmp_path):
    rec = read_joint_dataset(_episode(tmp_path / "episode", q=-dataset.MAX_POSITION_RAD))
    assert len(rec.frames) == 2 * 2 * 20 * 7


def test_velocities_beyond_any_drive_are_refused(tmp_path):
    with pytest.raises(DatasetError, match=r"qvel\[0\]\[0\]=1e\+300.*within \+-100 rad/s"):
        read_joint_dataset(_episode(tmp_path / "episode", qvel=1e300))


def test_too_many_rows_are_refused_from_the_footers(tmp_path, monkeypatch):
    """The rows of all four files together against the replay's frame limit (here 700
    frames: 100 rows), before any column is converted."""
    from rob_twin.twin.bus.replay import ReplayConfig

    folder = _episode(tmp_path / "episode", rows=26)  # 4 files x 26 rows = 104 rows
    monkeypatch.setattr(dataset, "replay_limits", lambda: ReplayConfig(max_frames=700))

    def never(*_args):
        raise AssertionError("a column was read before the row count was checked")

    monkeypatch.setattr(dataset, "_table", never)
    with pytest.raises(DatasetError, match=r"rows='104 \(728 frames\)'.*at most 100 obs"):
        read_joint_dataset(folder)


def test_the_row_limit_follows_the_replays_frame_limit():
    from rob_twin.twin.bus.replay import default_config

    assert dataset.max_rows() == default_config().max_frames // 7 == 714_285


# --- plan files ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def plan(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("plan") / "plan.json"
    code, _, err = cli(["plan", str(ROOT / "examples" / "goals.json"), "--out", str(out)])
    assert code == 0, err
    return json.loads(out.read_text())


def _certify(tmp_path, doc) -> tuple[int, dict]:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    code, out, err = cli(["certify", str(path), "--json"])
    assert "Traceback" not in err
    return code, json.loads(out)


@pytest.mark.parametrize(
    "key", ["joint_names", "q_rad", "qd_rad_s", "qdd_rad_s2", "velocity_rad_s"]
)
def test_a_per_arm_object_holds_the_moving_arms_only(plan, tmp_path, key):
    doc = copy.deepcopy(plan)
    doc[key]["third"] = copy.deepcopy(doc[key]["right"])  # was accepted, never checked
    code, reply = _certify(tmp_path, doc)
    assert code == 2 and reply["type"] == "PlanFileError", reply
    assert f"{key}.third=" in reply["error"] and "known: right, left" in reply["error"]


def test_a_joint_in_two_arms_is_refused(plan, tmp_path):
    doc = copy.deepcopy(plan)
    doc["arms"]["third"] = ["right/j1"]  # was exit 1 (a planner config error)
    code, reply = _certify(tmp_path, doc)
    assert code == 2 and reply["type"] == "PlanFileError", reply
    assert "arms.third[0]='right/j1'" in reply["error"] and "in arm 'right'" in reply["error"]


# --- robot MJCF, goals documents ----------------------------------------------------------


def test_an_mjcf_mujoco_cannot_parse_is_refused_in_one_line(tmp_path):
    from rob_twin.experiments.robot_factory import generate_robot
    from rob_twin.models.robot_description import RobotFileError
    from rob_twin.models.robot_model import load_robot_model

    made = generate_robot(tmp_path / "gen", 2, family="amber")
    xml = made.robot_file.parent / "scene.xml"
    text = xml.read_text()
    start = text.index('rgba="') + len('rgba="')
    xml.write_text(text[:start] + "1e308 " + text[start:])  # finite, too large for a float
    with pytest.raises(RobotFileError) as err:
        load_robot_model(str(made.robot_file))
    assert "\n" not in str(err.value) and "too large" in str(err.value)


@pytest.mark.parametrize(
    ("path", "value"),
    [(("left", "pose", "position", 0), math.nan), (("right", "joints", 2), 10**400)],
)
def test_a_goals_document_with_a_number_no_file_holds_is_refused(path, value):
    from rob_twin.models import keyframe_state
    from rob_twin.models.names import group_arms
    from rob_twin.planners import ArmGroup
    from rob_twin.planners.goals_file import GoalsFileError, goals_request

    model, home = keyframe_state("home")
    group = ArmGroup(model, group_arms())
    raw = json.loads((ROOT / "examples" / "goals.json").read_text())
    node = raw["goals"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value  # was KinematicsInputError (NaN) or OverflowError (10**400)
    with pytest.raises(GoalsFileError, match="finite numbers"):
        goals_request(raw, group)

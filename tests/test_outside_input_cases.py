"""Hostile files on the command paths the other bound tests do not walk: ``compare`` and
``bank`` given a calibration outside its physical bounds refuse it (exit 2, the ``--json``
error object naming the parameter and its range) before reading a recording or serving
a bus, and ``compare`` refuses a joint-state dataset whose positions no bus frame carries.
Every case is refused before any work, in-process."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fuzz_support import cli
from rob_twin.models.loading import load_scene
from rob_twin.twin.calibration.calibration_file import calibration_document, save_calibration


@pytest.fixture(scope="module")
def good_calibration(tmp_path_factory) -> dict:
    """A calibration document of ROB that loads (its model hash is the twin's)."""
    params = {
        n: {"value": v, "nominal": v, "lower": 0.0, "upper": 10.0 * v, "fitted": True}
        for n, v in {"right/j2/damping": 3.0, "left/command_delay_s": 0.011}.items()
    }
    return calibration_document("lab", load_scene(), params, [], {}, [])


def _calibration(doc: dict, folder: Path, name: str, value: float) -> Path:
    bad = json.loads(json.dumps(doc))
    bad["parameters"][name] = {"value": value, "fitted": True}
    return save_calibration(folder / "bad.json", bad)


def _refusal(argv: list[str]) -> tuple[dict, str]:
    code, out, err = cli([*argv, "--json"])
    assert "Traceback" not in err, err
    reply = json.loads(out)  # exactly one JSON object on stdout
    assert code == 2 and reply["exit_code"] == 2, (code, reply)
    assert "\n" not in reply["error"], reply["error"]
    return reply, err


@pytest.mark.parametrize(
    ("name", "value", "valid"),
    [("left/command_delay_s", 1e9, "[0, 1] s"), ("right/j1/armature", 1e9, "[0, 8] kg m^2")],
)
def test_compare_refuses_the_calibration_before_reading_the_recording(
    good_calibration, tmp_path, name, value, valid
):
    cal = _calibration(good_calibration, tmp_path, name, value)
    recording = tmp_path / "rec.log"
    recording.write_text("")  # never read: the calibration is refused first
    out = tmp_path / "report"
    reply, _ = _refusal(["compare", str(recording), "--calibration", str(cal), "--out", str(out)])
    assert reply["type"] == "CalibrationError", reply
    assert f"parameters.{name}.value" in reply["error"] and valid in reply["error"]
    assert not out.exists()


@pytest.mark.parametrize(
    ("name", "value", "valid"),
    [("right/j1/damping", 1e12, "[0, 50]"), ("right/payload_kg", 1e6, "[0, 20] kg")],
)
def test_bank_json_prints_its_error_object_for_an_unbounded_calibration(
    good_calibration, tmp_path, name, value, valid
):
    cal = _calibration(good_calibration, tmp_path, name, value)
    ready = tmp_path / "ready.json"
    argv = ["bank", "--calibration", str(cal), "--port", "0", "--control-port", "0"]
    reply, err = _refusal([*argv, "--seconds", "1", "--ready-file", str(ready)])
    assert reply["type"] == "CalibrationError", reply
    assert f"parameters.{name}.value" in reply["error"] and valid in reply["error"]
    assert reply["error"].split(":")[-1].strip() in err  # the same reason on stderr
    assert not ready.exists()  # nothing was served


def _episode(folder: Path, q: float) -> Path:
    """Both arms, 10 rows over 1 s; joint 2's position at ``q`` [rad]."""
    t = np.linspace(0.0, 1.0, 10)
    for arm in ("right", "left"):
        pos = np.zeros((10, 8))
        pos[:, 1] = q
        obs = folder / "obs" / "arms" / arm / "state.parquet"
        obs.parent.mkdir(parents=True)
        pq.write_table(pa.table({"timestamp": t, "qpos": pos.tolist()}), obs)
        act = folder / "action" / "arms" / arm / "qpos.parquet"
        act.parent.mkdir(parents=True)
        pq.write_table(pa.table({"timestamp": t, "value": np.zeros((10, 8)).tolist()}), act)
    return folder


@pytest.mark.parametrize("q", [1e300, 100.0])
def test_compare_refuses_a_dataset_whose_positions_no_frame_carries(tmp_path, q):
    folder = _episode(tmp_path / "episode", q)
    out = tmp_path / "report"
    reply, _ = _refusal(["compare", str(folder), "--out", str(out)])
    assert reply["type"] == "DatasetError", reply
    assert "qpos[0][1]" in reply["error"] and "within +-4.468 rad" in reply["error"]
    assert not out.exists()

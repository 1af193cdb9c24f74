"""Calibration files are bounded: every parameter kind has a physical range
checked when the file loads, the file's own bounds hold, and ``hardware_io`` is never
taken from a file; each refusal is a CalibrationError (exit 2) naming the field, the
value and the valid range."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rob_twin.cli.main import main
from rob_twin.models.loading import load_scene
from rob_twin.twin.calibration.calibration_file import (
    CalibrationError,
    calibration_document,
    load_calibration,
    save_calibration,
)

ROOT = Path(__file__).resolve().parents[1]
GOOD = {
    "right/j2/damping": 3.0,
    "right/j4/armature": 0.2,
    "left/j1/lag_s": 0.02,
    "right/command_delay_s": 0.011,
    "left/payload_kg": 1.5,
}


@pytest.fixture(scope="module")
def model():
    return load_scene()


@pytest.fixture(scope="module")
def good(tmp_path_factory, model):
    params = {
        n: {"value": v, "nominal": v, "lower": 0.0, "upper": 10.0 * v, "fitted": True}
        for n, v in GOOD.items()
    }
    doc = calibration_document("lab", model, params, [], {}, [])
    return save_calibration(tmp_path_factory.mktemp("bounds") / "good.json", doc)


def test_a_real_calibration_file_still_loads(good, model):
    cal = load_calibration(good, model)
    assert cal.values == GOOD


def _with(good, tmp_path, name: str, **entry) -> object:
    doc = json.loads(good.read_text())
    doc["parameters"][name] = {"value": 1.0, "fitted": True} | entry
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    ("name", "value", "valid"),
    [
        ("right/j1/armature", 1e9, "[0, 8] kg m^2"),
        ("right/j1/damping", 1e12, "[0, 50] N m s/rad"),
        ("right/j1/frictionloss", 1e9, "[0, 20] N m"),
        ("right/j1/kp", 1e12, "[4, 40000] N m/rad"),
        ("right/j1/lag_s", 1e9, "[0, 1] s"),
        ("right/j1/integral_gain", 1e9, "[0, 1000] 1/s"),
        ("right/j1/amps_per_nm", 1e-300, "[0.005, 50] units/N m"),
        ("right/payload_kg", 1e6, "[0, 20] kg"),
        ("left/command_delay_s", 1e9, "[0, 1] s"),
        ("left/feedback_delay_s", 1.5, "[0, 1] s"),
        ("right/j3/zero_offset_rad", 0.7, "[-0.5, 0.5] rad"),
    ],
)
def test_values_outside_their_physical_range_are_refused(good, model, tmp_path, name, value, valid):
    path = _with(good, tmp_path, name, value=value)
    with pytest.raises(CalibrationError) as err:
        load_calibration(path, model)
    assert err.value.field == f"bad.json: parameters.{name}.value"
    assert err.value.value == value
    assert err.value.valid == valid, err.value.valid


def test_a_value_outside_the_files_own_bounds_is_refused(good, model, tmp_path):
    path = _with(good, tmp_path, "right/j1/damping", value=3.0, lower=0.05, upper=2.0)
    with pytest.raises(CalibrationError, match=r"damping\.value.*own bounds \[0.05, 2\]"):
        load_calibration(path, model)


def test_lower_above_upper_is_refused(good, model, tmp_path):
    path = _with(good, tmp_path, "right/j1/damping", value=1.0, lower=2.0, upper=0.5)
    with pytest.raises(CalibrationError, match=r"damping\.lower.*<= upper"):
        load_calibration(path, model)


@pytest.mark.parametrize("bound", ["x", True, None, [1.0]])
def test_bounds_must_be_finite_numbers(good, model, tmp_path, bound):
    doc = json.loads(good.read_text())
    doc["parameters"]["right/j2/damping"]["upper"] = bound
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(CalibrationError, match=r"damping\.upper"):
        load_calibration(path, model)


@pytest.mark.parametrize("claim", [True, "yes", 1])
def test_hardware_io_is_never_taken_from_a_file(good, model, tmp_path, claim):
    doc = json.loads(good.read_text())
    doc["hardware_io"] = claim
    path = tmp_path / "hw.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(CalibrationError, match="hardware_io"):
        load_calibration(path, model)


def test_the_bounds_come_from_the_model_not_the_file(good, model, tmp_path):
    """A file cannot widen the physical range by claiming a huge nominal."""
    path = _with(good, tmp_path, "right/j1/damping", value=1e6, nominal=1e6, upper=1e7)
    with pytest.raises(CalibrationError, match=r"damping\.value"):
        load_calibration(path, model)


def test_the_command_line_refuses_with_exit_2(good, tmp_path, capsys):
    path = _with(good, tmp_path, "right/j1/kp", value=1e12)
    wave = ROOT / "experiments" / "scenarios" / "wave.json"
    args = ["run", str(wave), "--no-video", "--bus", "off", "--out", str(tmp_path / "out")]
    code = main([*args, "--calibration", str(path), "--json"])
    out, _ = capsys.readouterr()
    error = json.loads(out)
    assert code == 2 and error["type"] == "CalibrationError", error
    assert "right/j1/kp" in error["error"] and "[4, 40000]" in error["error"]

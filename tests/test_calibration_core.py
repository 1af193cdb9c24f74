"""The calibration core: parameter names and their effect, the calibration file, and the
twin's prediction of a recording (made here by the twin with hidden parameters)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from rob_twin.models.errors import UnknownNameError
from rob_twin.models.loading import load_scene
from rob_twin.models.names import Arm
from rob_twin.twin.calibration.calibration_file import (
    CalibrationError,
    calibration_document,
    load_calibration,
    save_calibration,
)
from rob_twin.twin.calibration.parameters import (
    ParameterError,
    apply_to_model,
    drive_configs,
    nominal_parameters,
    select,
)
from rob_twin.twin.calibration.predict import predict
from rob_twin.twin.calibration.synthetic import record_hidden
from rob_twin.twin.rehearsal import wave_source

HIDDEN = {"right/j2/damping": 3.0, "right/j4/armature": 0.2, "left/j1/lag_s": 0.02}


def test_names_select_and_refuse():
    assert select(["right/j*/damping"]) == [f"right/j{j}/damping" for j in range(1, 8)]
    assert "left/command_delay_s" in select(["command_delay_s"])
    with pytest.raises(UnknownNameError, match="right/j9/damping.*ARM/jN/KIND"):
        select(["right/j9/damping"])
    with pytest.raises(ParameterError, match="right/j1/damping"):
        apply_to_model(load_scene(), {"right/j1/damping": float("nan")})


def test_apply_changes_a_copy_and_the_drives():
    model = load_scene()
    before = nominal_parameters(model)
    changed = apply_to_model(model, {"right/j2/damping": 3.0, "right/j1/kp": 123.0})
    assert nominal_parameters(changed)["right/j2/damping"] == 3.0
    assert nominal_parameters(changed)["right/j1/kp"] == 123.0
    assert nominal_parameters(model) == before  # the original is untouched
    cfgs = drive_configs({"left/j1/lag_s": 0.02})
    assert cfgs[Arm.LEFT][0].lag_s == 0.02 and cfgs[Arm.RIGHT][0].lag_s == 0.002


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """3 s of both arms waving, recorded from a twin whose parameters are HIDDEN."""
    path = tmp_path_factory.mktemp("cal") / "hidden.log"
    return record_hidden(path, HIDDEN, 3.0, source=wave_source)


def test_the_hidden_parameters_predict_the_recording_and_the_nominal_ones_do_not(recording):
    nominal = predict(recording).rms_by_joint()
    hidden = predict(recording, HIDDEN).rms_by_joint()
    assert max(hidden.values()) < 2e-4  # the feedback's quantisation (1/128 deg)
    assert nominal["right/j4"] > 5 * hidden["right/j4"]
    assert nominal["left/j1"] > 5 * hidden["left/j1"]


def test_calibration_file_round_trip_and_refusals(tmp_path):
    model = load_scene()
    params = {n: {"value": v, "fitted": True} for n, v in HIDDEN.items()}
    doc = calibration_document("lab", model, params, [], {}, [])
    path = save_calibration(tmp_path / "c.json", doc)
    cal = load_calibration(path, model)
    assert cal.values == HIDDEN and cal.label()["name"] == "lab"
    other = apply_to_model(model, {})
    other.body_pos[1] += 0.01  # another robot's geometry
    with pytest.raises(CalibrationError, match="model_hash"):
        load_calibration(path, other)
    for bad in ({"value": float("nan")}, {"value": -1.0}, {"nope": 1}):
        broken = json.loads(path.read_text())
        broken["parameters"]["right/j2/damping"] = bad
        (tmp_path / "b.json").write_text(json.dumps(broken))
        with pytest.raises(CalibrationError, match="right/j2/damping|number"):
            load_calibration(tmp_path / "b.json", model)
    np.testing.assert_equal(sorted(cal.values), sorted(HIDDEN))

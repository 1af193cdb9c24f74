"""``rob-twin calibrate`` on recordings the twin made with hidden parameters: the fit
finds them, a recording at rest is refused by name, bad inputs exit 2 with one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from rob_twin.models.robot import robot_of
from rob_twin.twin.calibration.calibrate import NotExcitedError, calibrate
from rob_twin.twin.calibration.fit import FitConfig
from rob_twin.twin.calibration.synthetic import record_hidden

HIDDEN = {"right/j2/damping": 2.0, "right/command_delay_s": 0.005}
ROB_TWIN = Path(sys.executable).parent / "rob-twin"


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    folder = tmp_path_factory.mktemp("calibrate")
    fit = record_hidden(folder / "fit.log", HIDDEN, 2.5, seed=1)
    rest = record_hidden(folder / "rest.log", {}, 1.5, amplitude_rad=0.0)
    return fit, rest


def test_the_fit_finds_the_hidden_damping_and_delay(recordings, tmp_path):
    fit, _ = recordings
    report = calibrate(
        [fit],
        list(HIDDEN),
        tmp_path / "cal.json",
        config=FitConfig(max_iters=6),
    )
    values = {n: p["value"] for n, p in report["parameters"].items()}
    assert values["right/j2/damping"] == pytest.approx(2.0, rel=0.05)
    assert values["right/command_delay_s"] == pytest.approx(0.005, abs=0.001)
    before, after = report["residuals"]["rms_before_rad"], report["residuals"]["rms_after_rad"]
    assert max(after["fit"].values()) < max(before["fit"].values()) / 5
    doc = json.loads((tmp_path / "cal.json").read_text())
    assert doc["format"] == "rob-twin-calibration/1" and doc["hardware_io"] is False
    assert doc["recordings"][0]["sha256"] and doc["parameters"]["right/j2/damping"]["interval"]


def test_a_recording_at_rest_excites_nothing_and_says_so(recordings, tmp_path):
    _, rest = recordings
    with pytest.raises(NotExcitedError, match="excite none of the 2 selected"):
        calibrate([rest], list(HIDDEN), tmp_path / "no.json", config=FitConfig(max_iters=2))
    assert not (tmp_path / "no.json").exists()


def _cli(*args, cwd):
    return subprocess.run(
        [str(ROB_TWIN), "calibrate", *map(str, args), "--quiet"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_bad_inputs_exit_2_with_one_line(recordings, tmp_path):
    fit, rest = recordings
    cut = tmp_path / "cut.log"
    cut.write_bytes(fit.read_bytes()[: len(fit.read_bytes()) // 2])  # no line end at the cut
    foreign = tmp_path / "foreign.log"
    foreign.write_text("(0.001000) can10 321#0102030405060708\n")
    other = tmp_path / "other.json"
    other.write_text(
        json.dumps(
            {
                "format": "rob-twin-calibration/1",
                "name": "x",
                "model_hash": "0000000000000000",
                "parameters": {"right/j2/damping": {"value": 1.0}},
            }
        )
    )
    cases = {
        "truncated": [cut],
        "foreign ids": [foreign],
        "another model": [fit, "--start", other],
        "unknown parameter": [fit, "--fit", "right/j9/damping"],
        "at rest": [rest, "--fit", "right/j2/damping", "--max-iters", "2"],
    }
    for what, args in cases.items():
        done = _cli(*args, cwd=tmp_path)
        assert done.returncode == 2, (what, done.stderr[-1500:])
        lines = [line for line in done.stderr.splitlines() if line.startswith("rob-twin:")]
        assert len(lines) == 1 and "Traceback" not in done.stderr, (what, done.stderr[-1500:])


def test_mirror_takes_a_calibration_and_refuses_another_models(tmp_path):
    """``rob-twin mirror --calibration``: a file for another model exits 2 with one line,
    before any bus is opened; a good one becomes the twin's parameters, named."""
    from rob_twin.cli.mirror import _parameters
    from rob_twin.models.loading import load_scene
    from rob_twin.twin.calibration.calibration_file import calibration_document, save_calibration

    good = save_calibration(
        tmp_path / "good.json",
        calibration_document("lab", load_scene(), {"right/j2/damping": {"value": 2.5}}, [], {}, []),
    )
    params = _parameters(str(good), robot_of("rob"))
    assert params.name.startswith("lab (") and params.drive_configs is not None
    j2 = params.model.jnt_dofadr[params.model.joint("right/j2").id]
    assert params.model.dof_damping[j2] == 2.5
    other = tmp_path / "other.json"
    other.write_text(
        json.dumps(
            {
                "format": "rob-twin-calibration/1",
                "name": "x",
                "model_hash": "0000000000000000",
                "parameters": {"right/j2/damping": {"value": 1.0}},
            }
        )
    )
    done = subprocess.run(
        [str(ROB_TWIN), "mirror", "--calibration", str(other), "--port", "9", "--seconds", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "model_hash" in done.stderr, done.stderr[-1500:]

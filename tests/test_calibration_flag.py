"""``--calibration FILE`` on the commands that run the twin: the model and drives take the
fitted parameters, every summary records the calibration (or "uncalibrated"), and a
calibration for another model, or for the OpenArm-class robot, is refused with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rob_twin.cli.main import main
from rob_twin.models.loading import load_scene
from rob_twin.models.names import Arm
from rob_twin.twin.calibration.calibration_file import (
    calibration_document,
    load_calibration,
    save_calibration,
)
from rob_twin.twin.sim.closed_loop import ClosedLoopConfig
from rob_twin.twin.sim.loops import make_closed_loop

ROOT = Path(__file__).resolve().parents[1]
WAVE = ROOT / "experiments" / "scenarios" / "wave.json"
HEAVY = {"right/j2/damping": 40.0, "right/j4/armature": 0.5, "right/j1/lag_s": 0.05}


@pytest.fixture(scope="module")
def cal_file(tmp_path_factory) -> Path:
    params = {n: {"value": v, "fitted": True} for n, v in HEAVY.items()}
    doc = calibration_document("heavy", load_scene(), params, [], {}, [])
    return save_calibration(tmp_path_factory.mktemp("flag") / "heavy.json", doc)


def run_json(capsys, *args: str) -> tuple[int, dict, str]:
    code = main([*args, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_the_loop_takes_the_model_and_drive_parameters(cal_file):
    cal = load_calibration(cal_file, load_scene())
    loop = make_closed_loop(ClosedLoopConfig(calibration=cal))
    try:
        import mujoco

        model = loop.twin.model
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, "right/j2")
        assert model.dof_damping[model.jnt_dofadr[jid]] == 40.0
        assert loop.bank.drives_of(Arm.RIGHT).drives[0].config.lag_s == 0.05
        assert loop.bank.drives_of(Arm.LEFT).drives[0].config.lag_s != 0.05
    finally:
        loop.close()


def test_run_records_the_calibration_and_moves_differently(cal_file, tmp_path, capsys):
    base = ["run", str(WAVE), "--no-video", "--bus", "off"]
    code, plain, _ = run_json(capsys, *base, "--out", str(tmp_path / "a"))
    assert code == 0 and plain["calibration"] == "uncalibrated"
    code, fitted, _ = run_json(
        capsys, *base, "--out", str(tmp_path / "b"), "--calibration", str(cal_file)
    )
    assert code == 0, fitted
    assert fitted["calibration"]["name"] == "heavy"
    saved = json.loads((tmp_path / "b" / "wave" / "summary.json").read_text())
    assert saved["calibration"] == fitted["calibration"]
    err_plain = plain["max_abs_tracking_error_rad"]["right"]
    err_fitted = fitted["max_abs_tracking_error_rad"]["right"]
    assert abs(err_fitted - err_plain) > 0.1 * err_plain, (err_plain, err_fitted)


def test_rehearse_records_the_calibration(cal_file, tmp_path, capsys):
    args = ["rehearse", "--gate", "units_and_references", "--out", str(tmp_path)]
    code, report, _ = run_json(capsys, *args, "--calibration", str(cal_file))
    assert report["calibration"]["name"] == "heavy", report
    code, report, _ = run_json(capsys, *args)
    assert report["calibration"] == "uncalibrated"


def test_refusals_exit_2_with_one_line(cal_file, tmp_path, capsys):
    other = json.loads(cal_file.read_text()) | {"model_hash": "0" * 16}
    (tmp_path / "other.json").write_text(json.dumps(other))
    cal, wave = ["--calibration", str(cal_file)], str(WAVE)
    still = tmp_path / "still.json"  # valid on OpenArm v2 (the wave's poses are ROB's)
    still.write_text(json.dumps({"duration": 0.2, "robot": "openarm"}))
    cases = {
        "another model": (
            ["run", wave, "--calibration", str(tmp_path / "other.json")],
            "model_hash",
        ),
        # ROB's calibration on OpenArm: fitted on another model (OpenArm takes its own)
        "openarm": (["run", str(still), *cal], "model_hash"),
        "openarm demo": (["demo", "--robot", "openarm", *cal], "model_hash"),
        "rehearse openarm": (["rehearse", "--robot", "openarm", *cal], "model_hash"),
        "missing": (["rehearse", "--calibration", str(tmp_path / "nope.json")], "nope.json"),
    }
    for case, (args, says) in cases.items():
        code = main([*args, "--out", str(tmp_path / "never")])
        _, err = capsys.readouterr()
        assert code == 2, (case, err)
        assert len(err.strip().splitlines()) == 1 and says in err, (case, err)
        assert not (tmp_path / "never").exists(), case


def test_the_bank_serves_the_calibrated_twin_and_says_so(cal_file, tmp_path, capsys):
    args = ["bank", "--port", "0", "--control-port", "0", "--seconds", "0.2"]
    code = main([*args, "--json", "--calibration", str(cal_file)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["calibration"]["name"] == "heavy"
    assert main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["calibration"] == "uncalibrated"


def test_study_view_and_teleop_take_the_flag_and_refuse_another_models(cal_file, tmp_path, capsys):
    """study records the calibration (planning does not use it); view and teleop build their
    twin with it; each refuses another model's file with exit 2 before anything runs."""
    spec = tmp_path / "tiny.toml"
    spec.write_text(
        'name = "tiny"\nseed = 1\ncount = 2\nmargins_m = [0.01]\n'
        '[goals]\nkind = "gaussian"\nsigma_rad = 0.2\n'
    )
    code, summary, _ = run_json(
        capsys, "study", str(spec), "--workers", "1", "--out", str(tmp_path / "s"),
        "--calibration", str(cal_file),
    )  # fmt: skip
    assert code == 0 and summary["calibration"]["name"] == "heavy", summary
    other = json.loads(cal_file.read_text()) | {"model_hash": "0" * 16}
    (tmp_path / "other.json").write_text(json.dumps(other))
    for args in (
        ["study", str(spec), "--out", str(tmp_path / "s2")],
        ["view", "--seconds", "0.1"],
        ["teleop", "--seconds", "0.1", "--port", "0", "--no-viewer"],
    ):
        code = main([*args, "--calibration", str(tmp_path / "other.json")])
        _, err = capsys.readouterr()
        assert code == 2 and "model_hash" in err, (args, err)

"""Studies, sweeps and scenarios refuse what is out of range before any work:
``--workers`` below 1, ``study --out`` at a file, keyframes and faults after the end of the
run, more keyframes or faults than a scenario holds. Each exits 2 naming the field and the
valid range (``--json``: the error object)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rob_twin.cli.main import main as cli_main
from rob_twin.experiments.study.backends import LocalBackend, RayBackend, StudyBackendError
from rob_twin.experiments.study.runner import run_study
from rob_twin.experiments.study.spec import load_spec
from rob_twin.experiments.study.store import StudyOutputError
from rob_twin.twin.scenario.schema import MAX_FAULTS, MAX_KEYFRAMES

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "experiments" / "studies" / "margins.toml"
WAVE = ROOT / "experiments" / "scenarios" / "wave.json"


def _cli(capsys, *argv) -> tuple[int, dict]:
    capsys.readouterr()
    code = cli_main([*argv, "--json"])
    out = capsys.readouterr()
    assert "Traceback" not in out.err, out.err
    return code, json.loads(out.out)


@pytest.mark.parametrize("command", ["study", "sweep"])
@pytest.mark.parametrize("workers", ["0", "-2", "many"])
def test_workers_below_one_are_refused(capsys, tmp_path, command, workers):
    target = str(STUDY) if command == "study" else str(ROOT / "tests" / "data" / "sweep")
    code, out = _cli(capsys, command, target, "--workers", workers, "--out", str(tmp_path / "o"))
    assert code == 2 and out["type"] == "UsageError", out
    assert "--workers" in out["error"] and "valid: an integer in [1, 1024]" in out["error"]
    assert not (tmp_path / "o").exists()


def test_backends_refuse_workers_below_one():
    with pytest.raises(StudyBackendError, match=r"workers=0 is invalid; valid: an integer in"):
        LocalBackend(workers=0)
    with pytest.raises(StudyBackendError, match="workers"):
        RayBackend(workers=-1)
    assert RayBackend().workers is None  # None: one actor per cluster CPU


@pytest.mark.parametrize("command", ["study", "sweep"])
@pytest.mark.parametrize("where", ["a file", "below a file"])
def test_out_at_a_file_is_refused(capsys, tmp_path, command, where):
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    out_dir = afile if where == "a file" else afile / "sub"
    target = str(STUDY) if command == "study" else str(ROOT / "tests" / "data" / "sweep")
    code, out = _cli(capsys, command, target, "--out", str(out_dir))
    assert code == 2 and out["type"] == "UsageError", out
    assert "--out" in out["error"] and "valid: a folder" in out["error"]
    assert afile.read_text() == "not a folder"


def test_run_study_checks_its_folder_before_anything_runs(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("")
    spec, base = load_spec(STUDY)
    with pytest.raises(StudyOutputError, match="is a file"):
        run_study(spec, base, afile, progress=False)


# ------------------------------------------------------------------ scenarios


def _scenario(tmp_path, **change) -> Path:
    doc = json.loads(WAVE.read_text()) | change
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(doc))
    return path


def _check_refused(capsys, path, where: str, valid: str) -> dict:
    code, out = _cli(capsys, "run", str(path), "--check")
    assert code == 2 and out["type"] == "ScenarioError", out
    assert any(i["path"] == where for i in out["issues"]), out["issues"]
    assert valid in out["error"], out["error"]
    if len(out["issues"]) == 1:  # one problem: one line
        assert "\n" not in out["error"] and where in out["error"], out["error"]
    return out


def test_a_keyframe_after_the_end_is_refused(capsys, tmp_path):
    wave = json.loads(WAVE.read_text())
    late = dict(wave["keyframes"][0], t=99.0)
    path = _scenario(tmp_path, keyframes=[*wave["keyframes"], late])
    n = len(wave["keyframes"])
    _check_refused(capsys, path, f"keyframes[{n}].t", f"in [0, {wave['duration']}] s")


def test_a_fault_after_the_end_is_refused(capsys, tmp_path):
    fault = {"kind": "drop", "arm": "right", "at": 99.0, "duration": 0.01, "probability": 0.5}
    path = _scenario(tmp_path, faults=[fault])
    _check_refused(capsys, path, "faults[0].at", "in [0, 5.0] s")


def test_more_keyframes_than_a_scenario_holds_are_refused(capsys, tmp_path):
    frame = json.loads(WAVE.read_text())["keyframes"][0]
    path = _scenario(tmp_path, keyframes=[frame] * 100_000)
    out = _check_refused(capsys, path, "keyframes", f"at most {MAX_KEYFRAMES} keyframes")
    assert "(got a list of 100000)" in out["error"], out["error"]  # not the list itself


def test_more_faults_than_a_scenario_holds_are_refused(capsys, tmp_path):
    fault = {"kind": "drop", "arm": "right", "at": 1.0, "duration": 0.01, "probability": 0.5}
    path = _scenario(tmp_path, faults=[fault] * 100_000)
    _check_refused(capsys, path, "faults", f"at most {MAX_FAULTS} faults")


def test_the_caps_themselves_are_accepted(capsys, tmp_path):
    fault = {"kind": "drop", "arm": "right", "at": 1.0, "duration": 0.01, "probability": 0.5}
    path = _scenario(tmp_path, faults=[fault] * MAX_FAULTS)
    code, out = _cli(capsys, "run", str(path), "--check")
    assert code == 0 and out["valid"] is True, out

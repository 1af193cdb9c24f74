"""``--robot`` on ``calibrate``, ``compare`` and ``excite``: a generated Amber robot nobody
tuned (``rob_twin.experiments.robot_factory``) is excited, recorded with hidden parameters,
calibrated and compared; the calibration file names its robot and no other robot takes it; a robot
without CAN drives (family ``ideal``) is refused up front, exit 2, naming ``can_drives``
(Damiao robots calibrate too: tests/test_damiao_calibration.py).

Simulated (hardware_io: false). The generated robot's servos are stiff (kp ~3500 N m/rad,
kv = 0.02 s x kp): a joint damping within its bounds (10x the drawn ~0.2 N m s/rad) moves
its joints by less than the feedback's quantum, so the hidden change is the position-loop
gain of both shoulders (kp x0.6 and x0.7: 0.4 to 0.8 mrad RMS more gravity sag)."""

from __future__ import annotations

import json

import pytest
from rob_twin.cli.main import main
from rob_twin.experiments.robot_factory import generate_robot
from rob_twin.models.robot import CAN_DRIVES, robot_of
from rob_twin.twin.calibration.parameters import nominal_parameters
from rob_twin.twin.calibration.synthetic import record_hidden

SEED = 1  # channels CAN9 / CAN10: its LEFT arm on the bus number of ROB's right arm
HIDDEN_SCALE = {"right/j2/kp": 0.6, "left/j2/kp": 0.7}
FIT_REL = 0.02  # the fit finds each hidden gain within 2 % (0.5 % seen)
TIGHT_RAD = 0.0005  # a compare tolerance the calibrated twin meets and the nominal one not


def _json(capsys, argv: list[str]) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def gen(tmp_path_factory):
    made = generate_robot(tmp_path_factory.mktemp("gen"), SEED, family="amber")
    return robot_of(str(made.robot_file))


@pytest.fixture(scope="module")
def hidden(gen):
    nominal = nominal_parameters(gen.model(), gen)
    return {name: scale * nominal[name] for name, scale in HIDDEN_SCALE.items()}


@pytest.fixture(scope="module")
def recording(gen, hidden, tmp_path_factory):
    path = tmp_path_factory.mktemp("rec") / "gen.log"
    return record_hidden(path, hidden, 2.0, seed=1, amplitude_rad=0.08, robot=gen)


@pytest.fixture(scope="module")
def calibration(gen, recording, tmp_path_factory):
    """``calibrate --robot GEN``: (the calibration file, its report)."""
    out = tmp_path_factory.mktemp("cal") / "gen.json"
    argv = ["calibrate", str(recording), "--robot", str(gen.path), "--out", str(out)]
    for name in HIDDEN_SCALE:
        argv += ["--fit", name]
    assert main([*argv, "--max-iters", "6", "--quiet"]) == 0
    return out, json.loads(out.with_name("gen_report.json").read_text())


def test_excite_writes_a_plan_and_a_scenario_for_the_robot(gen, tmp_path, capsys):
    from rob_twin.planners.plan_file import load_plan_file
    from rob_twin.twin.scenario.run import Scenario

    code, out = _json(
        capsys, ["excite", "--robot", str(gen.path), "--out", str(tmp_path), "--seconds", "4"]
    )
    assert code == 0 and out["ok"] and out["robot"] == gen.identity(), out
    doc = load_plan_file(tmp_path / "excite_plan.json")
    assert doc["robot"] == gen.identity() and doc["certificate"]["certified"]
    assert set(doc["arms"]) == {"right", "left"}
    raw = json.loads((tmp_path / "excite.json").read_text())
    assert raw["robot"] == gen.spec == str(gen.path)
    sc = Scenario.load(tmp_path / "excite.json")
    assert sc.robot == gen.spec and sc.plans[0].plan_file is not None
    for arm in ("right", "left"):  # every arm joint starts at the plan's first sample
        for j, q in zip(doc["joint_names"][arm], doc["q_rad"][arm][0], strict=True):
            assert sc.initial[j] == q
    # certify without --model checks the plan on the robot its file names
    assert main(["certify", str(tmp_path / "excite_plan.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_calibrate_finds_the_hidden_gains_and_names_the_robot(gen, hidden, calibration):
    path, report = calibration
    values = {n: p["value"] for n, p in report["parameters"].items()}
    for name, value in hidden.items():
        assert values[name] == pytest.approx(value, rel=FIT_REL), (name, values)
    before, after = report["residuals"]["rms_before_rad"], report["residuals"]["rms_after_rad"]
    assert max(after["fit"].values()) < max(before["fit"].values()) / 4
    doc = json.loads(path.read_text())
    assert doc["robot"] == report["robot"] == gen.identity()
    assert doc["robot"]["file"] == str(gen.path) and doc["robot"]["family"] == "amber"


def test_compare_with_the_calibration_passes_and_without_it_does_not(
    gen, recording, calibration, tmp_path, capsys
):
    path, _ = calibration
    argv = ["compare", str(recording), "--robot", str(gen.path), "--tolerance-rad"]
    code, report = _json(
        capsys, [*argv, str(TIGHT_RAD), "--calibration", str(path), "--out", str(tmp_path / "c")]
    )
    assert code == 0 and report["within_tolerance"], report["joints"]
    assert report["robot"] == gen.identity() and report["calibration"]["name"] == "gen"
    assert report["worst_max_mrad"] < 1e3 * TIGHT_RAD
    code, report = _json(capsys, [*argv, str(TIGHT_RAD), "--out", str(tmp_path / "u")])
    assert code == 1 and "right/j2" in report["exceeded"], report["exceeded"]


def test_the_calibration_is_refused_for_another_robot(gen, recording, calibration, capsys):
    path, _ = calibration
    code, err = _json(
        capsys, ["compare", str(recording), "--robot", "rob", "--calibration", str(path)]
    )
    assert code == 2 and err["type"] == "CalibrationError", err
    assert "model_hash" in err["error"] and gen.name in err["error"]
    code, err = _json(capsys, ["calibrate", str(recording), "--start", str(path), "--quiet"])
    assert code == 2 and err["type"] == "CalibrationError", err


@pytest.fixture(scope="module")
def ideal(tmp_path_factory):
    made = generate_robot(tmp_path_factory.mktemp("ideal"), 2, family="ideal", joints=5)
    return str(made.robot_file)


@pytest.mark.parametrize("command", ["calibrate", "compare", "excite"])
def test_a_robot_without_can_drives_is_refused_up_front(command, ideal, tmp_path, capsys):
    argv = {
        "calibrate": ["calibrate", str(tmp_path / "missing.log"), "--out", str(tmp_path / "c")],
        "compare": ["compare", str(tmp_path / "missing.log"), "--out", str(tmp_path / "c")],
        "excite": ["excite", "--out", str(tmp_path / "e")],
    }[command]
    code, err = _json(capsys, [*argv, "--robot", ideal])
    assert code == 2 and err["type"] == "MissingCapabilityError", err
    assert repr(CAN_DRIVES) in err["error"] and ideal in err["error"]
    assert not any(tmp_path.iterdir())  # nothing written

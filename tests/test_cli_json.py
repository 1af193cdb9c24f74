"""``--json`` means exactly one JSON object on stdout, on success and on failure, for every
command that takes it; everything else goes to stderr."""

from __future__ import annotations

import json

import pytest
import rob_twin.experiments.registry as registry
from rob_twin.cli.main import main


def _one_object(capsys) -> dict:
    out = capsys.readouterr().out
    obj = json.loads(out)  # raises if stdout holds anything but one JSON value
    assert isinstance(obj, dict) and out.count("\n") == 1
    return obj


def test_experiment_list_json_is_one_object(capsys):
    assert main(["experiment", "--list", "--json"]) == 0
    names = _one_object(capsys)["experiments"]
    assert names == registry.experiment_names() and len(names) > 3


def test_experiment_unknown_name_json(capsys):
    assert main(["experiment", "no-such-thing", "--json"]) == 2
    reply = _one_object(capsys)
    assert reply["type"] == "UnknownNameError" and reply["exit_code"] == 2
    assert "unknown experiment 'no-such-thing'" in reply["error"]


@pytest.fixture
def chatty_experiments(monkeypatch):
    """Two throwaway experiments: one prints to stdout and succeeds, one raises."""
    registry._load_all()
    fns = dict(registry._EXPERIMENTS)

    def chatty(seed: int = 0) -> dict:
        print("progress text a careless experiment prints")
        return {"seed": seed, "ok": True}

    def broken(seed: int = 0) -> dict:
        raise ValueError(f"broken on purpose (seed {seed})")

    monkeypatch.setattr(registry, "_EXPERIMENTS", {**fns, "chatty": chatty, "broken": broken})


def test_experiment_prints_go_to_stderr_under_json(chatty_experiments, capsys):
    assert main(["experiment", "chatty", "--seed", "3", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"seed": 3, "ok": True}
    assert "progress text" in captured.err


def test_experiment_failure_json(chatty_experiments, capsys):
    assert main(["experiment", "broken", "--json"]) == 1
    assert _one_object(capsys) == {
        "error": "broken on purpose (seed 0)",
        "type": "ValueError",
        "exit_code": 1,
    }


def test_experiment_failure_without_json_exits_1_with_the_message(chatty_experiments, capsys):
    assert main(["experiment", "broken"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "broken on purpose" in captured.err


def test_usage_errors_are_json_too(capsys):
    assert main(["run", "--json"]) == 2
    reply = _one_object(capsys)
    assert (
        reply["type"] == "UsageError"
        and "the following arguments are required: scenario" in reply["error"]
    )
    assert main(["rehearse", "--json", "--seed", "x"]) == 2
    assert "invalid int value" in _one_object(capsys)["error"]


def test_rehearse_bad_input_json(tmp_path, capsys):
    assert (
        main(["rehearse", "--json", "--out", str(tmp_path), "--faults", '[{"kind": "nope"}]']) == 2
    )
    reply = _one_object(capsys)
    assert reply["type"] == "ScenarioError" and "unknown fault kind 'nope'" in reply["error"]
    assert reply["issues"][0]["path"] == "faults[0]"
    assert main(["rehearse", "--json", "--out", str(tmp_path), "--faults", "[{"]) == 2
    assert "--faults syntax=" in _one_object(capsys)["error"]  # the bounded reader names it
    assert main(["rehearse", "--json", "--out", str(tmp_path), "--gate", "vibes"]) == 2
    assert "unknown gate 'vibes'" in _one_object(capsys)["error"]
    assert list(tmp_path.iterdir()) == []


def test_rehearse_checks_its_out_folder_before_the_gates(tmp_path, capsys):
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    assert (
        main(["rehearse", "--json", "--out", str(blocker / "reh"), "--gate", "output_uncertainty"])
        == 2
    )
    reply = _one_object(capsys)
    assert reply["type"] == "RunFolderError" and "cannot create output folder" in reply["error"]


def test_demo_json_failure_is_one_object(tmp_path, capsys):
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    assert main(["demo", "--json", "--no-video", "--out", str(blocker)]) == 2
    assert _one_object(capsys)["type"] == "RunFolderError"


def test_run_json_success_is_the_summary(tmp_path, capsys):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps({"duration": 0.1}))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--no-video", "--json"]) == 0
    captured = capsys.readouterr()
    reply = json.loads(captured.out)
    assert (
        reply["status"] == "completed" and reply["exit_code"] == 0 and reply["hardware_io"] is False
    )
    assert reply["run_folder"] == str(tmp_path / "out" / "tiny")
    assert "simulated 0.1 s" in captured.err  # the human lines went to stderr

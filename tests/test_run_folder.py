"""The run folder: checked and marked before the run, written atomically, never stale;
an interrupted or failed run leaves a summary that says so."""

from __future__ import annotations

import json
import os
import signal

import numpy as np
import pytest
import rob_twin.cli.main as cli
import rob_twin.twin.scenario.run as scenario_module
from rob_twin.models import dimensions as D
from rob_twin.twin.scenario.report import summarize
from rob_twin.twin.scenario.run import Scenario, run_scenario
from rob_twin.twin.scenario.run_folder import RunFolder, RunFolderError, write_atomic
from rob_twin.twin.sim.interrupts import stop_requests

REACH = (np.array(D.HOME_ARM_POSE) + 0.2).tolist()


def test_prepare_removes_an_old_runs_outputs_and_marks_the_folder_running(tmp_path):
    old = tmp_path / "wave"
    (old / "can").mkdir(parents=True)
    for name in (
        "summary.json",
        "summary.md",
        "joints.png",
        "wave.mp4",
        "can/CAN10@1.log",
        "notes.txt",
    ):
        (old / name).write_text("from an earlier run\n")
    folder = RunFolder.prepare(
        tmp_path, "wave", stale=("wave.mp4", "summary.md", "joints.png", "can")
    )
    status = json.loads((old / "summary.json").read_text())
    assert (
        status["status"] == "running"
        and status["scenario"] == "wave"
        and status["pid"] == os.getpid()
    )
    assert sorted(p.name for p in old.rglob("*")) == ["can", "notes.txt", "summary.json"]
    assert folder.path == old


def test_a_folder_that_cannot_be_made_is_refused_before_the_run(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunFolderError, match="cannot create run folder .*file/x"):
        RunFolder.prepare(tmp_path / "file", "x")
    with pytest.raises(RunFolderError, match="not a plain folder name"):
        RunFolder.prepare(tmp_path, "../x")


def test_atomic_write_keeps_the_old_file_when_the_write_fails(tmp_path, monkeypatch):
    target = tmp_path / "summary.json"
    write_atomic(target, "old\n")
    assert target.stat().st_mode & 0o777 == 0o666 & ~_umask()

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="No space"):
        write_atomic(target, "new\n")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]  # no temporary file left


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def test_a_run_stopped_early_reports_interrupted_with_what_was_done(tmp_path):
    sc = Scenario.from_dict(
        {
            "name": "stopped",
            "duration": 1.0,
            "keyframes": [{"t": 0.5, "arm": "right", "q": REACH}],
            "plans": [{"t": 0.9, "goals": {"left": REACH}}],
        }
    )
    polls = iter(range(1000))
    result = run_scenario(
        sc,
        record=False,
        progress=False,
        should_stop=lambda: "SIGTERM" if next(polls) == 10 else None,
    )
    assert result.status == "interrupted" and result.stopped_by == "SIGTERM"
    assert 0.25 < result.simulated_s < 0.4  # ten frames of 1/30 s were simulated
    assert result.times[-1] <= result.simulated_s and len(result.times) > 10
    assert result.plans == [
        {
            "t": 0.9,
            "arms": ["left"],
            "status": "not_started",
            "reason": "the run was interrupted first",
        }
    ]
    summary = summarize(result, tmp_path, [])
    assert summary["status"] == "interrupted" and summary["passed"] is False


def test_a_run_stopped_before_its_first_step_still_writes_a_summary(tmp_path):
    sc = Scenario.from_dict({"name": "at_once", "duration": 0.5})
    result = run_scenario(sc, record=False, progress=False, should_stop=lambda: "SIGINT")
    assert result.simulated_s == 0.0 and result.times.size == 0
    summary = summarize(result, tmp_path, [])
    assert summary["max_abs_tracking_error_rad"] == {"right": None, "left": None}
    assert (tmp_path / "joints.png").exists()


def test_a_run_that_crashes_leaves_a_failed_summary_and_one_json_error(
    tmp_path, capsys, monkeypatch
):
    def crash(*args, **kwargs):
        raise RuntimeError("simulated crash in the middle of the run")

    monkeypatch.setattr(scenario_module, "run_scenario", crash)
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"name": "crash", "duration": 0.2}))
    assert cli.main(["run", str(path), "--out", str(tmp_path / "out"), "--json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {
        "error": "simulated crash in the middle of the run",
        "type": "RuntimeError",
        "exit_code": 1,
    }
    status = json.loads((tmp_path / "out" / "crash" / "summary.json").read_text())
    assert status["status"] == "failed" and "simulated crash" in status["error"]


def test_signals_become_a_stop_request_and_the_old_handlers_come_back():
    before = signal.getsignal(signal.SIGTERM)
    with stop_requests() as stop:
        assert stop() is None
        signal.raise_signal(signal.SIGTERM)
        assert stop() == "SIGTERM"
        signal.raise_signal(signal.SIGTERM)  # a repeated SIGTERM changes nothing
        assert stop() == "SIGTERM"
    assert signal.getsignal(signal.SIGTERM) is before
    with pytest.raises(KeyboardInterrupt):
        with stop_requests() as stop:
            signal.raise_signal(signal.SIGINT)
            assert stop() == "SIGINT"
            signal.raise_signal(signal.SIGINT)  # a Ctrl-C while stopping gets out at once

"""The README's journeys, as a new user runs them: each command is a subprocess of the
installed ``rob-twin`` (the console script next to this interpreter), run in a temporary
folder with the inputs the README names, and checked for its exit code and the outputs it
promises. A shipped example that fails its journey fails ``make test``.

Each journey's wall time and exit code are appended to ``$ROB_TWIN_JOURNEY_LOG`` (JSON
lines) when that variable is set (a journey time table for a closing note).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bank_support import running_bank
from child_signals import default_sigint
from realtime_support import host_publish_deadline

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SCENARIOS = sorted((ROOT / "experiments" / "scenarios").glob("*.json"))
SCENARIOS = [p for p in SCENARIOS if p.name != "scenario.schema.json"]
STUDIES = sorted((ROOT / "experiments" / "studies").glob("*.toml"))


def journey(*args: str, cwd: Path, timeout: float = 300, tool: str = "rob-twin", **kw):
    """Run ``tool args`` (a console script of this environment) in ``cwd``; the completed
    process, with its wall time logged when ``ROB_TWIN_JOURNEY_LOG`` is set."""
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    start = time.monotonic()
    done = subprocess.run(
        [str(BIN / tool), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        **kw,
    )
    log = os.environ.get("ROB_TWIN_JOURNEY_LOG")
    if log:
        with open(log, "a") as f:
            shown = [a.replace(str(ROOT) + "/", "").replace(str(cwd), ".") for a in args]
            line = {"command": " ".join([tool, *shown]), "exit": done.returncode}
            f.write(json.dumps(line | {"seconds": round(time.monotonic() - start, 1)}) + "\n")
    return done


def explain(done: subprocess.CompletedProcess) -> str:
    return f"exit {done.returncode}\nstdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"


def _wait_for_a_client(bank, channel: str, client: subprocess.Popen, wait_s: float = 60) -> None:
    """Until the bank's socketcand server counts a client in raw mode on ``channel`` (its
    status over the control port): the readiness of a client started beside the bank."""
    end = time.monotonic() + wait_s
    while bank.control({"cmd": "status"})["socketcand"]["channels"][channel]["clients"] < 1:
        assert client.poll() is None, f"client exited {client.returncode}"
        assert time.monotonic() < end, f"no client on {channel} within {wait_s} s"
        time.sleep(0.05)


def test_experiment_list_names_each_experiment_with_one_line(tmp_path):
    done = journey("experiment", "--list", cwd=tmp_path)
    assert done.returncode == 0, explain(done)
    lines = done.stdout.strip().splitlines()
    assert len(lines) >= 10 and all(len(line.split(None, 1)) == 2 for line in lines)
    assert any(line.startswith("crossing ") for line in lines)


def test_demo_writes_its_video_summary_and_plot(tmp_path):
    done = journey("demo", "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, explain(done)
    folder = tmp_path / "out" / "demo"
    for name in ("demo.mp4", "summary.json", "summary.md", "joints.png"):
        assert (folder / name).stat().st_size > 0, name
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["hardware_io"] is False


def test_demo_on_openarm_v2_passes_on_the_default_bus(tmp_path):
    done = journey("demo", "--robot", "openarm", "--no-video", "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, explain(done)
    summary = json.loads((tmp_path / "out" / "demo_openarm" / "summary.json").read_text())
    assert summary["passed"] and summary["hardware_io"] is False
    assert all(v["owner_fault"] is None for v in summary["pipeline"].values())
    # OpenArm's default bus is CAN FD, which carries its 500 Hz MIT frames within budget
    # (tests/test_robot_buses.py: the same demo over classic CAN is reported over it)
    assert "bus_over_budget" not in summary
    assert all("FD" in b["config"] for b in summary["bus"].values())


def test_the_sweep_runs_on_the_default_bus_of_run():
    from rob_twin.cli.main import build_parser
    from rob_twin.experiments.sweep.runner import DEFAULT_BUS

    run = build_parser().parse_args(["run", "x.json"])
    assert run.bus == DEFAULT_BUS


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.stem)
def test_each_shipped_scenario_runs_on_the_default_bus_and_matches_its_baseline(scenario, tmp_path):
    """`rob-twin run` of every shipped scenario, whole, on the default bus (classic CAN at
    1 Mbit/s): it passes its own ``expect``, writes its summary and video, and its figures
    match ``baselines/NAME.json`` within the baseline's tolerances, as ``rob-twin sweep``
    compares them. A baseline that no longer describes what the scenario does is stale:
    ``rob-twin sweep experiments/scenarios --update-baselines`` is how it changes (once
    ``bus_faults`` died on the default bus; the ``crossing_plan`` baseline was stale on a
    fresh clone). Each scenario runs once per suite, here."""
    from rob_twin.experiments.sweep.figures import compare, run_figures
    from rob_twin.experiments.sweep.runner import read_baseline

    done = journey("run", str(scenario), "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, explain(done)
    name = json.loads(scenario.read_text()).get("name", scenario.stem)
    folder = tmp_path / "out" / name
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["hardware_io"] is False
    assert summary["passed"] is True, summary["unexpected"]
    assert (folder / "summary.md").stat().st_size > 0
    assert any(folder.glob("*.mp4")), sorted(p.name for p in folder.iterdir())
    baseline = read_baseline(scenario.parent / "baselines" / f"{name}.json")
    assert baseline is not None, f"no baseline for {name}"
    changes = compare(baseline["figures"], run_figures(summary), baseline.get("tolerances", {}))
    assert changes == [], (
        f"baseline of {name} is stale (rob-twin sweep experiments/scenarios "
        f"--update-baselines, if the change is intended): {changes}"
    )


def test_sweep_of_a_scenario_folder_compares_with_its_baselines(tmp_path):
    """The sweep journey on a folder holding one shipped scenario and its baseline (every
    shipped scenario's baseline is compared above; ``make bench`` sweeps them all)."""
    folder = tmp_path / "scenarios"
    (folder / "baselines").mkdir(parents=True)
    shipped = ROOT / "experiments" / "scenarios"
    (folder / "wave.json").write_text((shipped / "wave.json").read_text())
    baseline = (shipped / "baselines" / "wave.json").read_text()
    (folder / "baselines" / "wave.json").write_text(baseline)
    done = journey("sweep", str(folder), cwd=tmp_path)
    assert done.returncode == 0, explain(done)
    assert "wave" in done.stdout, done.stdout


def test_replay_of_a_fresh_recording_agrees(tmp_path):
    wave = ROOT / "experiments" / "scenarios" / "wave.json"
    rec = tmp_path / "wave.log"
    done = journey("run", str(wave), "--no-video", "--record-can", str(rec), cwd=tmp_path)
    assert done.returncode == 0, explain(done)
    done = journey("replay", str(rec), "--out", "replayed", "--json", cwd=tmp_path)
    assert done.returncode == 0, explain(done)
    assert (tmp_path / "replayed" / "replay.json").is_file()


@pytest.mark.parametrize("robot", ["rob", "openarm"])
def test_rehearse_passes_every_gate(robot, tmp_path):
    done = journey("rehearse", "--robot", robot, "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, explain(done)
    report = json.loads((tmp_path / "out" / "rehearsal.json").read_text())
    assert report["hardware_io"] is False
    assert (tmp_path / "out" / "rehearsal.md").stat().st_size > 0


def test_plan_then_certify_then_run_the_plan_file(tmp_path):
    goals = ROOT / "examples" / "goals.json"
    done = journey("plan", str(goals), "--out", "plan.json", cwd=tmp_path)
    assert done.returncode == 0, explain(done)
    done = journey("certify", "plan.json", cwd=tmp_path)
    assert done.returncode == 0, explain(done)
    assert "AGREES" in done.stdout


@pytest.mark.parametrize("spec", STUDIES, ids=lambda p: p.stem)
def test_each_shipped_study_spec_runs_clean(spec, tmp_path):
    done = journey("study", str(spec), "--workers", "2", "--out", "study", cwd=tmp_path)
    assert done.returncode == 0, explain(done)
    assert any((tmp_path / "study").glob("*.csv"))
    assert any((tmp_path / "study").glob("*.png"))


@pytest.mark.realtime
def test_bank_host_and_the_can_logger_recipe_share_one_clock(tmp_path, machine_jitter):
    """README: `rob-twin bank`, watched with `python -m can.logger -i socketcand -c CAN10
    --bus-kwargs host=127.0.0.1 port=PORT`, driven by `rob-twin host`: the host ends 0 and
    the logger shows the host's commands and the drives' feedback on one time base (Unix
    time: the two once showed 10.42 s next to 1796416583.98). The host's publication
    deadline is its 20 ms default, widened by the machine's measured jitter when busy."""
    logger = None
    deadline = host_publish_deadline(machine_jitter)
    with running_bank(tmp_path) as bank:
        try:
            port = bank.socketcand_port
            log = tmp_path / "can10.log"
            logger = subprocess.Popen(
                [sys.executable, "-m", "can.logger", "-i", "socketcand", "-c", "CAN10"]
                + ["-f", str(log), "--bus-kwargs", "host=127.0.0.1", f"port={port}"],
                cwd=tmp_path,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                preexec_fn=default_sigint,  # it must see the Ctrl-C below
            )
            _wait_for_a_client(bank, "CAN10", logger)  # the logger connected and subscribed
            started = time.time()
            done = journey(
                "host", "--port", str(port), "--seconds", "2", "--publish-deadline", deadline,
                cwd=tmp_path,
            )  # fmt: skip
            assert done.returncode == 0, explain(done)
            logger.send_signal(2)  # Ctrl-C: can.logger flushes and closes its file
            logger.wait(timeout=30)
        finally:
            if logger is not None and logger.poll() is None:
                logger.kill()
        stamps: dict[str, list[float]] = {"host": [], "drives": []}
        for line in log.read_text().splitlines():
            parts = line.split()  # "(1796416583.981000) CAN10 091#... R"
            if len(parts) >= 3 and parts[0].startswith("("):
                can_id = int(parts[2].split("#")[0], 16)
                side = "drives" if can_id >= 0x80 else "host"
                stamps[side].append(float(parts[0].strip("()")))
        assert stamps["host"] and stamps["drives"], (
            f"logger wrote {log.stat().st_size if log.exists() else 'no'} bytes: "
            f"{logger.stderr.read()[-2000:]}"
        )
        for side, values in stamps.items():  # every frame within the run, on Unix time
            assert started - 5 < min(values) and max(values) < time.time() + 1, side
        out, err = bank.shutdown()
        assert bank.process.returncode == 0, err
        assert out.startswith("bank: ran ") and "CAN10 (right): command frames" in out, out


def test_teleop_serves_and_ends_with_one_json_object(tmp_path):
    done = journey("teleop", "--json", "--seconds", "2", "--no-viewer", "--port", "0", cwd=tmp_path)
    assert done.returncode == 0, explain(done)
    summary = json.loads(done.stdout)
    assert summary["operator_page"].startswith("http://127.0.0.1:")
    assert summary["hardware_io"] is False and "operator page" in done.stderr


@pytest.mark.realtime
def test_mirror_follows_the_bank_and_host_without_an_alarm(tmp_path, machine_jitter):
    """README "Fitting the twin to your robot": `rob-twin bank`, then `rob-twin mirror` beside
    it, then `rob-twin host`: the mirror prints its status lines, feeds the host's commands
    to its twin and ends 0 with "no alarm" (the same parameters on both sides). The host's
    publication deadline is its 20 ms default, widened by the measured jitter when busy."""
    deadline = host_publish_deadline(machine_jitter)
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    with running_bank(tmp_path) as bank:
        port = str(bank.socketcand_port)
        mirror = subprocess.Popen(
            [str(BIN / "rob-twin"), "mirror", "--port", port, "--seconds", "5", "--max-lag", "30"]
            + ["--bank-control-port", str(bank.control_port)],  # the bank's lag left out
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        first = mirror.stderr.readline()  # "mirror: listening ..." once its twin stands
        assert "listening (never transmitting)" in first, first + mirror.stderr.read()
        done = journey(
            "host", "--port", port, "--seconds", "2", "--publish-deadline", deadline, cwd=tmp_path
        )
        assert done.returncode == 0, f"{machine_jitter}\n{explain(done)}"
        out, err = mirror.communicate(timeout=60)
        assert mirror.returncode == 0, f"{out}\n{err}"
        assert "no alarm" in out and "0 send attempts" in out and "hardware_io: false" in out
        assert "| commands " in err  # the status lines


def test_excite_writes_a_certified_excitation_that_run_plays(tmp_path):
    done = journey("excite", "--out", "ex", "--seconds", "4", cwd=tmp_path)
    assert done.returncode == 0, explain(done)
    assert "armature: acceleration" in done.stdout and "hardware_io: false" in done.stdout
    certified = journey("certify", "ex/excite_plan.json", cwd=tmp_path)
    assert certified.returncode == 0 and certified.stdout.startswith("AGREES"), explain(certified)
    ran = journey("run", "ex/excite.json", "--no-video", "--out", "runs", "--json", cwd=tmp_path)
    assert ran.returncode == 0, explain(ran)
    summary = json.loads(ran.stdout)
    assert summary["plans"][0]["outcome"] == "completed" and summary["failed_plan_steps"] == 0


def test_compare_of_a_fresh_recording_is_within_tolerance(tmp_path):
    wave = ROOT / "experiments" / "scenarios" / "wave.json"
    rec = tmp_path / "wave.log"
    done = journey("run", str(wave), "--no-video", "--record-can", str(rec), cwd=tmp_path)
    assert done.returncode == 0, explain(done)
    done = journey("compare", str(rec), "--json", cwd=tmp_path)
    assert done.returncode == 0, explain(done)
    report = json.loads(done.stdout)
    assert report["hardware_io"] is False and report["calibration"] == "uncalibrated"
    assert len(report["joints"]) == 14 and report["within_tolerance"] is True
    folder = tmp_path / "out" / "compare" / "wave"
    assert (folder / "compare.json").is_file() and (folder / "compare_right.png").is_file()


def test_the_fitting_procedure_excite_record_calibrate_compare(tmp_path):
    """README "Fitting the twin to your robot", with the twin standing in for the robot:
    excite, run the excitation with --record-can (the recording), calibrate one parameter
    from it, compare with the calibration."""
    done = journey("excite", "--out", "ex", "--seconds", "4", cwd=tmp_path)
    assert done.returncode == 0, explain(done)
    rec = "ex/fit.log"
    done = journey(
        "run", "ex/excite.json", "--no-video", "--out", "runs", "--record-can", rec, cwd=tmp_path
    )
    assert done.returncode == 0, explain(done)
    done = journey(
        "calibrate", rec, "--fit", "right/j2/damping", "--max-iters", "3", "--out", "lab.json",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, explain(done)
    assert "calibration of robot rob (rob, model" in done.stdout
    assert "written: lab.json" in done.stdout and "right/j2/damping" in done.stdout
    done = journey("compare", rec, "--calibration", "lab.json", "--out", "cmp", cwd=tmp_path)
    assert done.returncode in (0, 1), explain(done)  # 1: a joint beyond the tolerance
    assert "lab" in done.stdout and (tmp_path / "cmp" / "compare.json").is_file()

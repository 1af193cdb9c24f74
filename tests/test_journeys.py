"""The README's journeys, as a new user runs them: each command is a subprocess of the
installed ``rob-twin`` (the console script next to this interpreter), run in a temporary
folder with the inputs the README names, and checked for its exit code and the outputs it
promises. A shipped example that fails its journey fails ``make test``.

Each journey's wall time and exit code are appended to ``$ROB_TWIN_JOURNEY_LOG`` (JSON
lines) when that variable is set, which is how the table in the closing note of issue 29
was made.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

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


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.stem)
def test_each_shipped_scenario_runs_on_the_default_bus(scenario, tmp_path):
    done = journey("run", str(scenario), "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, explain(done)
    folder = tmp_path / "out" / json.loads(scenario.read_text()).get("name", scenario.stem)
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["hardware_io"] is False
    assert (folder / "summary.md").stat().st_size > 0
    assert any(folder.glob("*.mp4")), sorted(p.name for p in folder.iterdir())


def test_sweep_over_the_shipped_scenarios_matches_their_baselines(tmp_path):
    done = journey("sweep", str(ROOT / "experiments" / "scenarios"), cwd=tmp_path)
    assert done.returncode == 0, explain(done)


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

"""What a person sees of a run: the captions a run burns into its video, its
summary and its last line, read back from the run itself.

The video recorder is replaced by one that keeps each frame's caption lines (no GL, no
encoder): the captions are those ``run_scenario`` made for the run, from its own loop.
Once wrong: the first plan step was captioned "plan step 2/2" and the second "3/2";
"keyframes reached" counted keyframe times passed (``bus_faults``: "left 2/2" after the left
owner latched ``partial_output`` and refused every target); the OpenArm demo ended on
"t = 6.61 / 6.50 s"; ``summary.md`` said "0.5x faster than real time" and "peak internal
force n"; a run ended without a verdict and never named its latched faults.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
import rob_twin.twin.scenario.run as run_module
from rob_twin.cli.main import main
from rob_twin.twin.scenario.run import Scenario, demo_scenario, run_scenario
from rob_twin.twin.scenario.run_captions import (
    KEYFRAME_TOLERANCE_RAD,
    keyframes_reached,
    scenario_captions,
)
from rob_twin.twin.scenario.summary_md import label, run_markdown, speed_words

SCENARIOS = Path(__file__).resolve().parents[1] / "experiments" / "scenarios"
HEAD = re.compile(r"t = +([\d.]+) / ([\d.]+) s")


class CaptionTape:
    """Stands in for the video recorder: keeps (simulated time, caption lines) per frame."""

    def __init__(self, path: Path):
        self.path, self.frames, self.lines = path, 0, []

    def capture(self, data, captions=None, highlight=frozenset()):
        self.lines.append((float(data.time), list(captions or [])))
        self.frames += 1

    def close(self):
        pass


@pytest.fixture
def tape(monkeypatch, tmp_path):
    """The captions of every frame of the next run (its recorder replaced by a tape)."""
    tapes: list[CaptionTape] = []

    def open_tape(sc, twin, out_dir, record):
        tapes.append(CaptionTape((out_dir or tmp_path) / f"{sc.name}.mp4"))
        return tapes[-1], None

    monkeypatch.setattr(run_module, "_open_recorder", open_tape)
    return tapes


def _lines(tape: CaptionTape, prefix: str) -> list[str]:
    return [line for _, lines in tape.lines for line in lines if line.startswith(prefix)]


def test_plan_steps_are_captioned_one_and_two_of_two(tape):
    sc = Scenario.load(SCENARIOS / "crossing_plan.json")
    assert len(sc.plans) == 2
    result = run_scenario(sc, progress=False)
    assert [r.get("outcome") for r in result.plans] == ["completed", "completed"]
    executing = {
        m.group(1)
        for line in _lines(tape[0], "plan step ")
        if (m := re.match(r"plan step (\d+/\d+): executing", line))
    }
    assert executing == {"1/2", "2/2"}, executing
    waiting = {line.split(" at ")[0] for line in _lines(tape[0], "plan step ") if " at " in line}
    assert waiting <= {"plan step 1/2", "plan step 2/2"}, waiting


def test_bus_faults_run_counts_only_keyframes_reached_and_ends_on_a_verdict(tape, tmp_path, capsys):
    rc = main(["run", str(SCENARIOS / "bus_faults.json"), "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert rc == 0
    summary = json.loads((tmp_path / "bus_faults" / "summary.json").read_text())
    latched = {a: f["faults_latched"] for a, f in summary["pipeline"].items()}
    assert "partial_output" in latched["left"]
    assert summary["refused_targets"]["left"].get("closed", 0) > 0
    # the summary's count, from the run's logged angles: the left arm never got to 3.5 s
    reached = summary["keyframes_reached"]
    assert reached["left"] == {"reached": 1, "keyframes": 2, "missed_at_s": [3.5]}
    assert summary["keyframe_tolerance_rad"] == KEYFRAME_TOLERANCE_RAD
    # the captions say the same, frame by frame: never "left 2/2"
    kf = _lines(tape[0], "keyframes reached: ")
    assert kf and not any("left 2/2" in line for line in kf)
    words = ", ".join(f"{a} {r['reached']}/{r['keyframes']}" for a, r in reached.items())
    assert kf[-1] == f"keyframes reached: {words}"
    assert any(
        line == "!left owner FAULT latched: partial_output"
        for _, ls in tape[0].lines
        for line in ls
    )
    md = (tmp_path / "bus_faults" / "summary.md").read_text()
    assert f"| keyframes reached | {words} (not reached: " in md and "left at 3.5 s" in md
    # the last line on stderr: the verdict, the latched faults named, where the outputs are
    last = captured.err.strip().splitlines()[-1]
    assert last.startswith("run bus_faults: passed")
    assert "left partial_output (expected)" in last
    assert f"left {reached['left']['reached']}/2" in last
    assert str(tmp_path / "bus_faults") in last


def test_a_run_that_fails_says_so_and_why_on_its_last_line(tmp_path, capsys):
    raw = json.loads((SCENARIOS / "bus_faults.json").read_text())
    raw["expect"] = {}  # nothing declared: every refusal and latched fault is unexpected
    raw.pop("$schema", None)
    path = tmp_path / "undeclared.json"
    path.write_text(json.dumps(raw))
    rc = main(["run", str(path), "--out", str(tmp_path / "out"), "--no-video", "--json"])
    captured = capsys.readouterr()
    assert rc == 1 and json.loads(captured.out)["passed"] is False
    last = captured.err.strip().splitlines()[-1]
    assert last.startswith("run bus_faults: FAILED: ") and "more)" in last
    assert "left partial_output (UNEXPECTED)" in last and "outputs in " in last


def test_keyframes_reached_is_what_the_arm_did_not_what_the_clock_says():
    sc = Scenario.load(SCENARIOS / "bus_faults.json")
    right = [k for k in sc.keyframes if k.arm.value == "right"]
    import numpy as np

    times = np.array([0.0, 1.5, 2.0, 3.5, 4.0])
    stuck = np.array([right[0].q * 0, right[0].q, right[0].q, right[0].q, right[0].q])
    moved = stuck.copy()
    moved[3:] = right[1].q + 0.5 * KEYFRAME_TOLERANCE_RAD
    r = keyframes_reached(sc.keyframes, times, {"right": moved, "left": stuck})
    assert r["right"]["reached"] == 2 and r["left"] == {
        "reached": 1,
        "keyframes": 2,
        "missed_at_s": [3.5],
    }
    # the captions without measured angles say what they can: times passed, named so
    captions = scenario_captions(sc)(3.9, None)
    assert "keyframe times passed: right 2/2, left 2/2" in captions


def test_the_openarm_demo_never_shows_a_time_past_its_end(tape):
    from rob_twin.models.robot import robot_of
    from rob_twin.twin.bus.timing import parse_bus_spec

    sc = dataclasses.replace(demo_scenario("openarm"), duration=1.0)  # its first second
    bus = parse_bus_spec(robot_of("openarm").bus_spec)  # what `run`/`demo` use: CAN FD
    run_scenario(sc, progress=False, bus_timing=bus)
    heads = [ls[0] for _, ls in tape[0].lines]
    shown = [tuple(map(float, HEAD.search(h).groups())) for h in heads]
    assert all(now <= end + 0.005 for now, end in shown), shown[-3:]
    now, end = shown[-1]
    assert abs(now - end) < 0.02  # the last frame is the end of the run
    if end > sc.duration + 0.005:  # drives brought up first on the timed bus: said so
        assert "bring-up" in heads[-1]


def test_summary_md_says_slower_than_real_time_and_newtons(tmp_path):
    assert speed_words(0.5) == "2.0x slower than real time"
    assert speed_words(3.3) == "3.3x faster than real time"
    assert label("peak_internal_force_n") == "peak internal force [N]"
    summary = {
        "scenario": "carry",
        "status": "completed",
        "passed": True,
        "simulated_s": 6.5,
        "wall_s": 13.5,
        "physics_wall_s": 13.06,
        "sim_to_wall_ratio_physics_only": 0.5,
        "held_object": {"passed": True, "peak_internal_force_n": 0.37, "peak_squeeze_n": 1.2},
    }
    md = run_markdown(summary)
    assert "physics 13.06 s, 2.0x slower than real time" in md and "faster" not in md
    assert "| peak internal force [N] | 0.37 |" in md and "force n |" not in md

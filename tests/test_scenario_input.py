"""Bad input to ``rob-twin run``, one row per case: the error type, the exit code, where
the message points, and that nothing was written anywhere (the run never started)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from rob_twin.cli.main import main
from rob_twin.models import dimensions as D

HOME = list(D.HOME_ARM_POSE)


@dataclass(frozen=True)
class Case:
    id: str
    content: bytes | str | object  # raw bytes/text of the file, or an object to json.dumps
    error: str  # expected "type" of the JSON error
    message: str  # a fragment the message must contain (field path, value, range)
    code: int = 2
    args: tuple[str, ...] = ()


def sc(**fields) -> dict:
    return {"name": "bad", "duration": 0.2, **fields}


def nested(depth: int) -> str:
    return '{"name": "deep", "duration": 0.2, "initial": ' + "[" * depth + "]" * depth + "}"


CASES = [
    Case("top level is a list", [1, 2], "ScenarioError", "(top level): must be a JSON object"),
    Case("top level is a string", '"wave"', "ScenarioError", "(top level): must be a JSON object"),
    Case("top level is null", "null", "ScenarioError", "(top level): must be a JSON object"),
    Case("empty file", "", "ScenarioError", "is not valid JSON"),
    Case("trailing comma", '{"duration": 1,}', "ScenarioError", "is not valid JSON"),
    Case(
        "duplicate key",
        '{"duration": 1, "name": "a", "duration": 2}',
        "ScenarioError",
        "has the key 'duration' twice in one object (values 1 and 2)",
    ),
    Case("missing duration", {"name": "x"}, "ScenarioError", "duration: required field is missing"),
    Case(
        "keyframe entry not an object",
        sc(keyframes=[1]),
        "ScenarioError",
        "keyframes[0]: must be a JSON object",
    ),
    Case(
        "keyframe lacks fields",
        sc(keyframes=[{"t": 0.1}]),
        "ScenarioError",
        "keyframes[0].arm: required field is missing",
    ),
    Case(
        "keyframe q too short",
        sc(keyframes=[{"t": 0.1, "arm": "right", "q": [0.1]}]),
        "ScenarioError",
        "keyframes[0].q: must be one finite joint angle [rad] per joint of the robot's arm",
    ),
    Case(
        "keyframe q outside the joint limits",
        sc(keyframes=[{"t": 0.1, "arm": "left", "q": HOME[:3] + [2.9] + HOME[4:]}]),
        "ScenarioError",
        "keyframes[0].q[3]: joint j4 = 2.9 rad is outside the left arm's limits [0.0, 2.443]",
    ),
    Case(
        "keyframe q is a string",
        sc(keyframes=[{"t": 0.1, "arm": "left", "q": "1234567"}]),
        "ScenarioError",
        "keyframes[0].q: must be a JSON list",
    ),
    Case(
        "unknown arm in a keyframe",
        sc(keyframes=[{"t": 0.1, "arm": "rihgt", "q": HOME}]),
        "ScenarioError",
        "keyframes[0].arm: Input should be 'right' or 'left' (did you mean 'right'?)",
    ),
    Case(
        "NaN keyframe time",
        '{"duration": 1, "keyframes": [{"t": NaN, "arm": "right", "q": ' + json.dumps(HOME) + "}]}",
        "ScenarioError",
        "keyframes[0].t: Input should be a finite number",
    ),
    Case(
        "infinite duration", '{"duration": Infinity}', "ScenarioError", "duration: must be a number"
    ),
    Case(
        "negative time",
        sc(keyframes=[{"t": -0.5, "arm": "right", "q": HOME}]),
        "ScenarioError",
        "keyframes[0].t: Input should be greater than or equal to 0",
    ),
    Case(
        "unknown arm in initial",
        sc(initial={"middle/j1": 0.1}),
        "ScenarioError",
        "initial.middle/j1: unknown joint",
    ),
    Case(
        "unknown joint in initial",
        sc(initial={"right/j8": 0.1}),
        "ScenarioError",
        "initial.right/j8: unknown joint (did you mean",
    ),
    Case(
        "initial outside the joint limits",
        sc(initial={"torso/yaw": 3.0}),
        "ScenarioError",
        "initial.torso/yaw: outside the joint's limits [-2.6, 2.6]",
    ),
    Case("initial is a list", sc(initial=[0.1]), "ScenarioError", "initial: must be a JSON object"),
    Case("fps 0", sc(fps=0), "ScenarioError", "fps: Input should be greater than or equal to 1"),
    Case("fps a float", sc(fps=29.97), "ScenarioError", "fps: Input should be a valid integer"),
    Case(
        "seed not an integer",
        sc(seed=1.5),
        "ScenarioError",
        "seed: Input should be a valid integer",
    ),
    Case("seed a string", sc(seed="7"), "ScenarioError", "seed: Input should be a valid integer"),
    Case("seed a bool", sc(seed=True), "ScenarioError", "seed: Input should be a valid integer"),
    Case(
        "negative seed",
        sc(seed=-1),
        "ScenarioError",
        "seed: Input should be greater than or equal to 0",
    ),
    Case(
        "duration too short for a sample",
        sc(duration=0.001),
        "ScenarioError",
        "needs at least one sample",
    ),
    Case("duration zero", sc(duration=0), "ScenarioError", "duration: must be a number"),
    Case("duration a string", sc(duration="2"), "ScenarioError", "duration: must be a number"),
    Case(
        "cameras a string", sc(cameras="overview"), "ScenarioError", "cameras: must be a JSON list"
    ),
    Case(
        "unknown camera",
        sc(cameras=["overveiw"]),
        "ScenarioError",
        "cameras[0]: Input should be 'auto', 'overview', 'front' or 'head/rgb' "
        "(did you mean 'overview'?)",
    ),
    Case(
        "keyframes a string", sc(keyframes="abc"), "ScenarioError", "keyframes: must be a JSON list"
    ),
    Case(
        "misspelled top-level key",
        {"name": "x", "duraton": 1, "duration": 1},
        "ScenarioError",
        "duraton: unknown key (did you mean 'duration'?)",
    ),
    Case(
        "misspelled keyframe key",
        sc(keyframes=[{"time": 0.1, "arm": "right", "q": HOME}]),
        "ScenarioError",
        "keyframes[0].time: unknown key",
    ),
    Case(
        "misspelled fault parameter",
        sc(faults=[{"kind": "drop", "arm": "left", "probabilty": 0.3}]),
        "ScenarioError",
        "faults[0].probabilty: unknown key (did you mean 'probability'?)",
    ),
    Case(
        "unknown fault kind",
        sc(faults=[{"kind": "meteor", "arm": "left"}]),
        "ScenarioError",
        "faults[0]: unknown fault kind 'meteor'; valid: drop",
    ),
    Case(
        "fault probability out of range",
        sc(faults=[{"kind": "drop", "arm": "left", "probability": 2}]),
        "ScenarioError",
        "faults[0].probability: Input should be less than or equal to 1",
    ),
    Case(
        "joints on a wire fault",
        sc(faults=[{"kind": "bus_off", "arm": "left", "joints": [1]}]),
        "ScenarioError",
        "faults[0].joints: unknown key",
    ),
    Case(
        "fault joint 8",
        sc(faults=[{"kind": "stall", "arm": "left", "joints": [8]}]),
        "ScenarioError",
        "faults[0].joints[0]: Input should be less than or equal to 7",
    ),
    Case(
        "too many faults",
        sc(faults=[{"kind": "bus_off", "arm": "left"}] * 100_001),
        "ScenarioError",
        "faults: 100001 entries; a scenario holds at most 1000 faults",
    ),
    Case(
        "plan goal outside the limits",
        sc(plans=[{"t": 0.1, "goals": {"left": [9.0] * 7}}]),
        "ScenarioError",
        "plans[0].goals.left[0]: joint j1 = 9.0 rad is outside the left arm's limits",
    ),
    Case(
        "plan after the end",
        sc(plans=[{"t": 0.5, "goals": {"left": HOME}}]),
        "ScenarioError",
        "plans[0].t: must be before the end of the run (duration 0.2 s)",
    ),
    Case(
        "unknown expected refusal",
        sc(expect={"refused_targets": {"left": ["closd"]}}),
        "ScenarioError",
        "expect.refused_targets.left[0]: Input should be",
    ),
    Case(
        "name climbs out of --out",
        sc(name="../../x"),
        "ScenarioError",
        "name: must be a plain folder name",
    ),
    Case(
        "name is an absolute path", "ABSOLUTE", "ScenarioError", "name: must be a plain folder name"
    ),
    Case(
        "name with a separator",
        sc(name="a/b"),
        "ScenarioError",
        "name: must be a plain folder name",
    ),
    Case("name is empty", sc(name=""), "ScenarioError", "name: must be a plain folder name"),
    Case(
        "frame size not a multiple of 8",
        sc(frame_size=[100, 120]),
        "ScenarioError",
        "frame_size[0]: Input should be a multiple of 8",
    ),
    Case(
        "not UTF-8",
        b'{"name": "caf\xe9", "duration": 1}',
        "ScenarioError",
        "is not UTF-8 text (byte 0xe9",
    ),
    Case("binary garbage", b"\xff\xfe\x00\x01", "ScenarioError", "is not UTF-8 text"),
    Case(
        "nested far too deeply", "[" * 100_000 + "]" * 100_000, "ScenarioError", "nested too deeply"
    ),
    Case(
        "deep nesting inside a field",
        nested(800),
        "ScenarioError",
        "initial: must be a JSON object",
    ),
    Case("a directory", "DIRECTORY", "ScenarioError", "is a directory"),
    Case("a missing file", "MISSING", "ScenarioError", "does not exist"),
    Case("an endless device", "DEVZERO", "ScenarioError", "is larger than 67108864 bytes"),
    Case("unknown option", sc(), "UsageError", "unrecognized arguments: --fast", args=("--fast",)),
    Case(
        "--out blocked by a file",
        sc(name="ok"),
        "RunFolderError",
        "cannot create run folder",
        args=("--out", "BLOCKED/out"),
    ),
]


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_refused_before_anything_runs(case: Case, tmp_path, capsys):
    inputs, out = tmp_path / "in", tmp_path / "work" / "deep" / "out"
    inputs.mkdir()
    (tmp_path / "blocker").write_text("a file where a folder should be\n")
    path = inputs / "scenario.json"
    if case.content == "DIRECTORY":
        path.mkdir()
    elif case.content == "DEVZERO":
        path = Path("/dev/zero")
    elif case.content == "ABSOLUTE":
        path.write_text(json.dumps(sc(name=str(tmp_path / "abs"))))
    elif case.content != "MISSING":
        data = case.content
        if not isinstance(data, (bytes, str)):
            data = json.dumps(data)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    args = [a.replace("BLOCKED", str(tmp_path / "blocker")) for a in case.args]
    if "--out" not in args:
        args += ["--out", str(out)]
    before = _tree(tmp_path)

    code = main(["run", str(path), "--no-video", "--json", *args])

    captured = capsys.readouterr()
    reply = json.loads(captured.out)  # exactly one JSON object, nothing else on stdout
    assert (code, reply["exit_code"], reply["type"]) == (case.code, case.code, case.error), reply
    assert case.message in reply["error"], reply["error"]
    assert _tree(tmp_path) == before  # nothing written, inside --out or anywhere else
    assert "Traceback" not in captured.err


def test_each_problem_is_listed_with_path_value_and_range(tmp_path, capsys):
    path = tmp_path / "s.json"
    path.write_text(
        json.dumps(
            {
                "name": "x",
                "duration": 0.2,
                "fps": 0,
                "seed": 1.5,
                "keyframes": [{"t": 0.1, "arm": "right", "q": HOME[:6] + [1.6]}],
            }
        )
    )
    assert main(["run", str(path), "--json"]) == 2
    issues = json.loads(capsys.readouterr().out)["issues"]
    by_path = {i["path"]: i for i in issues}
    assert {p: i["value"] for p, i in by_path.items()} == {
        "keyframes[0].q[6]": "1.6",
        "seed": "1.5",
        "fps": "0",
    }
    assert "[-1.571, 1.571]" in by_path["keyframes[0].q[6]"]["message"]


def test_text_mode_prints_the_problems_on_stderr_without_a_traceback(tmp_path, capsys):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"duration": 0.2, "sed": 1}))
    assert main(["run", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (
        "sed: unknown key (did you mean 'seed'?)" in captured.err
        and "Traceback" not in captured.err
    )


def test_a_symlinked_run_folder_pointing_outside_out_is_refused(tmp_path, capsys):
    outside, out = tmp_path / "elsewhere", tmp_path / "out"
    outside.mkdir()
    out.mkdir()
    os.symlink(outside, out / "linked")
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"name": "linked", "duration": 0.2}))
    assert main(["run", str(path), "--out", str(out), "--no-video", "--json"]) == 2
    reply = json.loads(capsys.readouterr().out)
    assert reply["type"] == "RunFolderError" and "symbolic link" in reply["error"]
    assert list(outside.iterdir()) == []


def test_check_validates_without_running(tmp_path, capsys):
    path = tmp_path / "wave.json"
    path.write_text(
        json.dumps({"duration": 0.2, "keyframes": [{"t": 0.1, "arm": "right", "q": HOME}]})
    )
    assert main(["run", str(path), "--check", "--json", "--out", str(tmp_path / "out")]) == 0
    reply = json.loads(capsys.readouterr().out)
    robot = reply.pop("robot")
    assert reply == {"valid": True, "scenario": "wave", "path": str(path)}
    assert robot["name"] == "rob" and robot["family"] == "amber"
    assert not (tmp_path / "out").exists()

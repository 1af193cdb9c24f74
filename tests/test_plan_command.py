"""``rob-twin plan``: a goals file or a scenario step in, a plan file out that
``certify`` agrees with, that a scenario step can execute and ``view --plan`` accepts; bad
goals files exit 2 with the field named; a goal without a plan exits 1 and writes nothing;
docs/planning.md's Python recipe runs as printed."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from rob_twin.cli.main import main as cli_main
from rob_twin.twin.scenario.plan_steps import scenario_for_plan_file
from rob_twin.twin.scenario.run import Scenario, run_scenario
from rob_twin.twin.scenario.schema import ScenarioError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "goals.json"


def _cli(capsys, *argv) -> tuple[int, dict]:
    code = cli_main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory):
    """The plan of examples/goals.json (a joint goal and a TCP pose goal), written by the CLI."""
    out = tmp_path_factory.mktemp("plan") / "plan.json"
    assert cli_main(["plan", str(EXAMPLE), "--out", str(out)]) == 0
    return out


def test_plan_writes_a_file_certify_agrees_with(plan_file, capsys):
    code, out = _cli(capsys, "certify", str(plan_file))
    assert code == 0 and out["ok"] and out["disagreements"] == []
    doc = json.loads(plan_file.read_text())
    assert doc["moving"] == ["right", "left"] and doc["hardware_io"] is False


def test_plan_json_output_names_the_plan(tmp_path, capsys):
    code, out = _cli(capsys, "plan", str(EXAMPLE), "--out", str(tmp_path / "p.json"))
    assert code == 0 and out["ok"] and out["plan"] == str(tmp_path / "p.json")
    assert out["certified"] and out["certified_min_m"] > 0.005 and out["hardware_io"] is False
    assert out["samples"] == len(json.loads((tmp_path / "p.json").read_text())["t_s"])


def test_a_scenario_step_naming_the_plan_file_runs_it(plan_file):
    sc = Scenario.from_dict(scenario_for_plan_file(plan_file, lead_s=0.2, tail_s=0.3))
    result = run_scenario(sc, record=False, progress=False)
    assert result.status == "completed"
    (row,) = result.plans
    assert row["plan_file"] == str(plan_file.resolve())
    assert row["status"] == "success" and row["outcome"] == "completed", row


def test_a_plan_file_step_from_another_start_is_refused_by_the_executor(plan_file):
    raw = scenario_for_plan_file(plan_file, lead_s=0.2, tail_s=0.3)
    raw["initial"]["right/j1"] += 0.2  # the owners are not where the plan starts
    result = run_scenario(Scenario.from_dict(raw), record=False, progress=False)
    (row,) = result.plans
    assert row["outcome"] != "completed" and "start" in row["reason"], row


def test_a_scenario_step_gives_goals_or_a_valid_plan_file(plan_file, tmp_path):
    step = {
        "t": 0.1,
        "plan": str(plan_file),
        "goals": {"right": [1.196, -1.22, -0.897, 1.576, 0.535, -0.018, -1.571]},
    }
    with pytest.raises(ScenarioError) as info:
        Scenario.from_dict({"duration": 1.0, "plans": [step]})
    assert "exactly one of goals" in str(info.value.issues)
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": NaN}')
    with pytest.raises(ScenarioError) as info:
        Scenario.from_dict({"duration": 1.0, "plans": [{"t": 0.1, "plan": str(bad)}]})
    assert any(i.path.endswith(".plan") for i in info.value.issues), info.value.issues


def test_plan_from_a_scenario_step(tmp_path, capsys):
    scenario = ROOT / "experiments" / "scenarios" / "crossing_plan.json"
    out = tmp_path / "step.json"
    code, res = _cli(capsys, "plan", "--scenario", str(scenario), "--step", "0", "--out", str(out))
    assert code == 0 and res["source"].endswith("step 0") and res["seed"] == 0
    doc = json.loads(out.read_text())
    raw = json.loads(scenario.read_text())
    assert doc["q_rad"]["right"][0] == pytest.approx(
        [raw["initial"][f"right/j{k}"] for k in range(1, 8)]
    )
    assert doc["q_rad"]["left"][-1] == pytest.approx(raw["plans"][0]["goals"]["left"], abs=1e-9)
    code, res = _cli(capsys, "plan", "--scenario", str(scenario), "--step", "5")
    assert code == 2 and "--step" in res["error"]


def test_a_start_after_an_earlier_plan_chains(plan_file, tmp_path, capsys):
    goals = tmp_path / "back.json"
    home = [1.196, -1.22, -0.897, 1.576, 0.535, -0.018, -1.571]
    goals.write_text(json.dumps({"start": {"after_plan": str(plan_file)},
                                 "goals": {"right": {"joints": home}}}))  # fmt: skip
    code, res = _cli(capsys, "plan", str(goals), "--out", str(tmp_path / "back_plan.json"))
    assert code == 0, res
    first = json.loads(plan_file.read_text())
    back = json.loads((tmp_path / "back_plan.json").read_text())
    assert back["q_rad"]["right"][0] == pytest.approx(first["q_rad"]["right"][-1])
    assert back["q_rad"]["right"][-1] == pytest.approx(home)


BAD_GOALS = {
    "NaN": ('{"goals": {"right": {"joints": [NaN, 0, 0, 1, 0, 0, 0]}}}', "NaN"),
    "unknown arm": ('{"goals": {"middle": {"joints": [0, 0, 0, 1, 0, 0, 0]}}}', "middle"),
    "outside limits": ('{"goals": {"right": {"joints": [9, 0, 0, 1, 0, 0, 0]}}}', "right/j1"),
    "six joints": ('{"goals": {"right": {"joints": [0, 0, 0, 1, 0, 0]}}}', "7 numbers"),
    "not a unit quaternion": (
        '{"goals": {"left": {"pose": {"position": [0.4, 0.3, 0.9], "quat_wxyz": [1, 1, 0, 0]}}}}',
        "quat_wxyz",
    ),
    "unknown keyframe": (
        '{"start": {"keyframe": "sleep"}, "goals": {"right": {"joints": [0,0,0,1,0,0,0]}}}',
        "home",
    ),
    "no goals": ('{"goals": {}}', "goals"),
    "unknown key": ('{"goal": {}}', "goal"),
    "garbage": ("\x00\x01 not json", "JSON"),
    "bad seed": ('{"goals": {"right": {"joints": [0,0,0,1,0,0,0]}}, "seed": -1}', "seed"),
}


@pytest.mark.parametrize("case", sorted(BAD_GOALS))
def test_a_bad_goals_file_exits_2_naming_the_field(tmp_path, capsys, case):
    text, named = BAD_GOALS[case]
    path = tmp_path / "goals.json"
    path.write_text(text)
    code, res = _cli(capsys, "plan", str(path), "--out", str(tmp_path / "p.json"))
    assert code == 2 and res["type"] == "GoalsFileError", res
    assert named in res["error"] and "valid:" in res["error"], res["error"]
    assert not (tmp_path / "p.json").exists()


def test_a_goal_without_a_plan_exits_1_and_writes_nothing(tmp_path, capsys):
    path = tmp_path / "far.json"
    far = {"position": [2.0, 2.0, 2.0], "quat_wxyz": [1, 0, 0, 0]}  # beyond any reach
    path.write_text(json.dumps({"goals": {"left": {"pose": far}}}))
    code, res = _cli(capsys, "plan", str(path), "--out", str(tmp_path / "p.json"))
    assert code == 1 and not res["ok"] and res["status"] == "goal_unreachable"
    assert not (tmp_path / "p.json").exists()


def test_view_takes_a_plan_file(plan_file, tmp_path, monkeypatch, capsys):
    """Without a display the viewer exits 3 after reading the plan; a bad plan exits 2."""
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert cli_main(["view", "--plan", str(plan_file)]) == 3
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    assert cli_main(["view", "--plan", str(bad)]) == 2
    assert "PlanFileError" not in capsys.readouterr().out  # human output, no JSON


def test_the_docs_recipe_runs(tmp_path, monkeypatch):
    text = (ROOT / "docs" / "planning.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    (recipe,) = [b for b in blocks if "group_arms" in b]
    monkeypatch.chdir(tmp_path)
    exec(compile(recipe, "docs/planning.md recipe", "exec"), {})
    assert cli_main(["certify", "plan.json"]) == 0
    assert os.path.getsize("plan.json") > 0

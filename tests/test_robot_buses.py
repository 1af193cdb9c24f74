"""The bus a robot file names is the bus its runs and rehearsals simulate, and the budget is
checked on every robot in its own drive family's frames: OpenArm on CAN FD fits, OpenArm on
classic CAN at 500 Hz does not, and a run over budget says so."""

from __future__ import annotations

import json

import pytest
from rob_twin.cli.main import main
from rob_twin.models.robot import robot_of
from rob_twin.models.robot_description import RobotFileError, load_robot_file
from rob_twin.twin.bus.budget import BusBudgetConfig, bus_budget
from rob_twin.twin.bus.timing import parse_bus_spec
from rob_twin.twin.rehearsal.damiao import openarm_rehearsal_config
from rob_twin.twin.rehearsal.gates import gates_for


def test_robot_files_name_their_bus():
    assert robot_of("rob").bus_spec == "1M"
    assert robot_of("openarm").bus_spec == "fd:1M/5M"
    assert parse_bus_spec(robot_of("openarm").bus_spec).frame_format == "fd"


def test_a_bus_the_loader_cannot_read_is_refused(tmp_path):
    text = robot_of("openarm").path.read_text().replace('bus = "fd:1M/5M"', 'bus = "fast"')
    text = text.replace('"$schema" = "../robot.schema.json"', "")
    path = tmp_path / "robot.toml"
    path.write_text(text)
    with pytest.raises(RobotFileError, match=r"drives\.bus"):
        load_robot_file(path)


def test_damiao_frames_load_the_bus_more_than_ambers():
    classic = BusBudgetConfig(bus=parse_bus_spec("1M"))
    amber = bus_budget(classic, 500.0, 500.0)
    damiao = bus_budget(BusBudgetConfig(bus=parse_bus_spec("1M"), family="damiao"), 500.0, 500.0)
    assert damiao["offered_load"] > amber["offered_load"]
    assert not damiao["fits"]  # 7 x 8-byte MIT frames each way at 500 Hz: over 0.8


def test_openarm_is_rehearsed_for_its_bus_and_its_stop():
    assert {"bus_budget", "stopping"} <= set(gates_for(openarm_rehearsal_config()))


@pytest.mark.parametrize(("bus", "fits"), [(None, True), ("1M", False)])
def test_openarm_bus_budget_on_its_fd_bus_and_on_classic_can(bus, fits, tmp_path, capsys):
    argv = ["rehearse", "--robot", "openarm", "--gate", "bus_budget", "--json"]
    code = main([*argv, *(["--bus", bus] if bus else []), "--out", str(tmp_path)])
    report = json.loads(capsys.readouterr().out)
    (gate,) = report["gates"]
    assert code == (0 if fits else 1) and gate["passed"] is fits
    assert all(("FD" in c["config"]) is (bus is None) for c in gate["cases"])


def test_a_run_over_the_bus_budget_says_so(tmp_path, capsys):
    code = main(["demo", "--robot", "openarm", "--no-video", "--bus", "1M", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0  # the motion itself ran as expected; the budget is a warning
    summary = json.loads((tmp_path / "demo_openarm" / "summary.json").read_text())
    over = summary["bus_over_budget"]
    # OpenArm's 500 Hz MIT frames load classic CAN at about the 80 % budget; the demo's motion
    # (bit stuffing) decides which bus ends just over it: exactly those are reported
    loads = {bus: fig["load"] for bus, fig in summary["bus"].items()}
    assert over and {b["bus"] for b in over} == {bus for bus, x in loads.items() if x > 0.8}
    assert all(f"WARNING: bus {b['bus']}" in out for b in over)
    assert "over budget" in (tmp_path / "demo_openarm" / "summary.md").read_text()
    # on its default CAN FD bus the same demo is within budget: tests/test_journeys.py

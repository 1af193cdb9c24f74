"""The viewer's keys and status without a display: keys act through the owners and the
executor (Stop, reset, next step, re-plan), the status board reports what they did."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from rob_twin.models.names import Arm, UnknownNameError
from rob_twin.twin.scenario.plan_steps import PlanRunner
from rob_twin.twin.scenario.run import Scenario, scenario_loop
from rob_twin.twin.viewer.keys import (
    KEY_END,
    KEY_F8,
    KEY_F9,
    KEY_F10,
    KEY_F11,
    KEY_HOME,
    KEY_INSERT,
    KEYS,
    ViewerControls,
    key_code,
)
from rob_twin.twin.viewer.status import StatusBoard

CROSSING = Path(__file__).resolve().parents[1] / "experiments" / "scenarios" / "crossing_plan.json"


@pytest.fixture
def session():
    sc = Scenario.load(CROSSING)
    loop = scenario_loop(sc)
    planner = PlanRunner(loop, sc.plans)
    wall = iter(np.arange(0.0, 1e6, 0.5))  # each reading half a wall second later
    board = StatusBoard(loop, planner, wall_clock=lambda: float(next(wall)))
    yield loop, planner, ViewerControls(loop, planner), board
    planner.close()
    loop.close()


def _modes(loop) -> set[str]:
    return {d.owner.mode.value for d in loop.drivers.values()}


def test_stop_key_stops_both_owners_and_aborts_the_plan(session):
    loop, planner, keys, board = session
    loop.run_for(0.8)  # the first plan step (t = 0.5 s) is executing
    assert planner.status(loop.time)["state"] == "executing"
    keys.press(KEY_F8)
    assert _modes(loop) == {"tracking"}  # pressing only queues: nothing happens off the loop
    [said] = keys.apply()
    assert "STOP" in said and "aborted" in said
    assert planner.results[-1]["outcome"] != "completed"
    assert loop.run_until(lambda: _modes(loop) == {"stopped"}, timeout_s=2.0)
    held = {a: loop.commanded(a) for a in Arm}
    sent = {a: d.transport.counters.frames_sent for a, d in loop.drivers.items()}
    loop.run_for(0.3)
    for a in Arm:  # still publishing its hold, never a new position
        assert np.array_equal(loop.commanded(a), held[a])
        assert np.max(np.abs(loop.measured(a) - held[a])) < 0.01
        assert loop.drivers[a].transport.counters.frames_sent >= sent[a]
    assert loop.command(Arm.RIGHT, held[Arm.RIGHT]).accepted is False  # refused until reset
    lines = board.lines()
    assert lines[0].startswith("right STOPPED") and lines[1].startswith("left  STOPPED")
    assert "sim/wall" in lines[-1]


def test_reset_key_gives_each_stopped_owner_a_new_generation(session):
    loop, _, keys, _ = session
    loop.run_for(0.1)
    before = {a: d.owner.generation for a, d in loop.drivers.items()}
    assert "nothing to reset" in keys.act(KEY_F9)  # both tracking
    keys.act(KEY_F8)
    loop.run_until(lambda: _modes(loop) == {"stopped"}, timeout_s=2.0)
    said = keys.act(KEY_F9)
    assert said.startswith("reset: right gen") and "left gen" in said
    assert _modes(loop) == {"tracking"}
    assert all(d.owner.generation > before[a] for a, d in loop.drivers.items())


def test_next_step_and_replan_keys_drive_the_planner(session):
    loop, planner, keys, board = session
    assert "re-plan" not in keys.act(KEY_F11) and planner.replan() is None  # nothing started
    assert "starts now" in keys.act(KEY_F10)
    loop.run_for(0.05)  # the first step started at once instead of at t = 0.5 s
    st = planner.status(loop.time)
    assert st["state"] == "executing" and planner.results == [] and len(planner.executed) == 1
    assert "executing" in board.plan_line() and "clearance" in board.plan_line()
    keys.update_ghost()  # the planned TCP path, once per new plan
    assert {a: p.shape for a, p in keys.ghost.items()} == {a: (40, 3) for a in Arm}
    loop.run_until(lambda: planner.status(loop.time)["state"] != "executing", timeout_s=6.0)
    assert planner.results[0]["outcome"] == "completed"
    said = keys.act(KEY_F11)
    assert said == "re-planning with seed 1"
    loop.run_for(0.05)
    assert len(planner.executed) == 2 and planner.executed[1][0].seed == 1


def test_toggles_traces_and_key_names(session):
    loop, _, keys, _ = session
    assert (keys.show_traces, keys.show_ghost, keys.show_debug) == (True, True, False)
    for k in (KEY_INSERT, KEY_HOME, KEY_END):
        keys.press(k)
    keys.press(12345)  # a key of MuJoCo's own viewer: not ours, ignored
    assert len(keys.apply()) == 3
    assert (keys.show_traces, keys.show_ghost, keys.show_debug) == (False, False, True)
    loop.run_for(0.01)
    keys.record_traces()
    tcp = keys.traces[Arm.RIGHT][-1]
    assert tcp.shape == (3,) and np.all(np.isfinite(tcp)) and not np.allclose(tcp, 0)
    assert key_code("f8") == KEY_F8 and len(keys.key_list().splitlines()) == len(KEYS) + 1
    with pytest.raises(UnknownNameError, match="F13.*F8"):
        key_code("F13")


def test_key_list_shows_each_toggles_state_and_the_docs_name_every_key(session):
    """The README once said "Insert TCP traces" while traces started on, so pressing Insert
    turned them off; the list now shows each toggle's state and docs/commands.md each key."""
    _, _, keys, _ = session
    before = keys.key_list()
    assert "Insert  TCP traces [on]" in before and "End  rays and contacts [off]" in before
    keys.press(KEY_INSERT)
    keys.apply()
    assert "Insert  TCP traces [off]" in keys.key_list()
    page = (Path(__file__).parents[1] / "docs" / "commands.md").read_text()
    section = page.split("\n## Viewer keys\n", 1)[1].split("\n## ", 1)[0]
    for name in [k for k, _ in KEYS.values()] + ["Esc"]:
        assert name in section, f"docs/commands.md's viewer keys do not name {name}"
    assert "Insert TCP traces (on at start)" in " ".join(section.split())

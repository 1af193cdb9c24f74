"""``python -m rob_twin.experiments.bench robots``, shortened: the per-robot part of the
benchmark runs on ROB and on one generated ideal robot (two plan requests, a few IK targets,
a short hold, the cheap commands) and writes rows of the shape the JSON and the summary table
read. No figure is pinned: only the structure, a plan that succeeded and integer exit codes."""

from __future__ import annotations

import json

import pytest
from rob_twin.experiments import bench_robots as B

ROW_KEYS = {
    "label",
    "source",
    "robot",
    "joints_per_arm",
    "capabilities",
    "planning",
    "certify_agreement",
    "holding",
    "teleop_ik",
    "commands",
    "wall_s",
}
# cheap on both robots: plan and certify always; run (ROB: a 1.5 s scenario; ideal: refused,
# exit 2); each a child process, as a user runs it
COMMANDS = ("plan", "certify", "run")


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench_robots")
    seed, family, joints, mounting = B.GENERATED[0]
    assert family == "ideal"
    entries = [
        {"label": "rob", "spec": "rob", "source": "shipped"},
        B.generated_robot(tmp / "gen", seed, family, joints, mounting),
    ]
    return [
        B.bench_robot(
            e,
            tmp / "work" / e["label"],
            plan_requests=2,
            ik_targets=4,
            hold_s=0.1,
            commands=COMMANDS,
        )
        for e in entries
    ]


def test_each_row_has_every_part_a_plan_and_integer_exit_codes(rows):
    for row in rows:
        assert ROW_KEYS <= set(row), (row["label"], ROW_KEYS - set(row))
        assert {"name", "file", "family", "model_hash"} <= set(row["robot"])
        p = row["planning"]
        assert p["requests"] == 2 and 0 < p["succeeded"] <= 2, p
        assert p["median_plan_s"] > 0.0
        c = row["certify_agreement"]
        assert c["plans"] == p["succeeded"] and 0 <= c["agreed"] <= c["plans"]
        assert len(c["plans_checked"]) == c["plans"]
        assert list(row["commands"]) == list(COMMANDS)
        for name, cmd in row["commands"].items():
            if "argv" in cmd:  # a command line that ran
                assert isinstance(cmd["exit_code"], int), (row["label"], name, cmd)
                assert isinstance(cmd["message"], str)
        assert row["commands"]["plan"]["exit_code"] == 0, row["commands"]["plan"]
        assert isinstance(row["commands"]["certify"]["exit_code"], int)
        json.dumps(row)  # what the benchmark writes


def test_rob_holds_and_the_ideal_robot_has_no_loop_to_hold(rows):
    rob, ideal = rows
    assert set(rob["holding"]["max_drift_mrad"]) == {"right", "left"}
    assert isinstance(rob["holding"]["owner_faults"], dict)
    assert "can_drives" in ideal["holding"]["not_run"]
    for row in rows:
        ik = row["teleop_ik"]
        assert ("solved" in ik and ik["targets"] == 4) or ik["not_available"], ik
    assert "solved" in rob["teleop_ik"]  # ROB's ArmKinematics at least


def test_summary_rows_and_verdict_read_the_rows(rows):
    table = [B._summary_row(r) for r in rows]
    assert [t["robot"] for t in table] == [r["label"] for r in rows]
    for t in table:
        assert {"plans", "median_plan_s", "cert_check", "hold_drift_mrad", "ik"} <= set(t)
    ok, line = B.verdict(rows)
    assert isinstance(ok, bool) and "2 robots" in line
    assert line.startswith("PASS: " if ok else "ATTENTION: ")
    skipped = B.bench_robot({"label": "x", "source": "s", "skipped": "why"}, None)
    assert skipped["skipped"] == "why" and B._summary_row(skipped)["plans"] == "skipped"

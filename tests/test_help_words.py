"""What a person reads at the terminal and in reports: every ``--help`` has a
description and no Python repr; a refused command line prints one prefix and the usage
line; ``--version``; a failing rehearsal gate says why; ``view --screenshot`` says where
the picture went; experiments show progress and end on their figures; reports write values
as words (``right 0, left 0``, ``success 185``), never ``{'right': 0}`` or ``None``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from rob_twin.cli import rehearse as rehearse_cli
from rob_twin.cli.experiment import figures_line
from rob_twin.cli.main import build_parser, main
from rob_twin.twin.scenario.summary_md import words

ROOT = Path(__file__).resolve().parents[1]
REPRS = ("{'", "['", "None", "default: inf")
HELP_REPRS = ("{'", "['", "default: None", "default: inf", "(default: False)", "(default: True)")


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Every ``rob-twin`` command, nested ones too, by its words (``"run"``)."""
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found[" ".join((*path, name))] = sub
                    walk(sub, (*path, name))

    walk(build_parser(), ())
    return found


COMMANDS = _commands()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_help_has_a_description_and_no_python_repr(name):
    parser = COMMANDS[name]
    assert (parser.description or "").strip(), f"rob-twin {name} --help has no description"
    text = parser.format_help()
    for mark in HELP_REPRS:
        assert mark not in text, f"rob-twin {name} --help shows {mark!r}"


def test_rehearse_help_names_every_gate_and_only_real_ones():
    from rob_twin.twin.rehearsal.damiao import DAMIAO_GATES
    from rob_twin.twin.rehearsal.gates import GATES

    assert set(rehearse_cli.SHARED_GATES) == set(GATES)
    assert set(rehearse_cli.SHARED_GATES) | set(rehearse_cli.DAMIAO_ONLY_GATES) == set(
        DAMIAO_GATES
    ) | set(GATES)
    text = " ".join(COMMANDS["rehearse"].format_help().split())
    for gate in set(GATES) | set(DAMIAO_GATES):
        assert gate in text, gate
    swap = next(a for a in COMMANDS["rehearse"]._actions if "--swap-wiring" in a.option_strings)
    named = set(re.findall(r"the (\w+) gate", swap.help))
    assert named and named <= set(GATES), named  # once: "the mapping gate", which is none


def test_teleop_video_is_said_to_render_in_a_process():
    video = next(a for a in COMMANDS["teleop"]._actions if "--video-fps" in a.option_strings)
    assert "process" in video.help and "thread" not in video.help


def test_version_comes_from_the_package_metadata_and_agrees_with_the_changelog(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"rob-twin {version('rob-twin')}"
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    latest = re.search(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), re.M).group(1)
    assert declared == latest


@pytest.mark.parametrize(
    ("argv", "usage", "message"),
    [
        (["run"], "usage: rob-twin run ", "rob-twin run: the following arguments are required"),
        ([], "usage: rob-twin ", "rob-twin: the following arguments are required: command"),
        (["rehearse", "--seed", "x"], "usage: rob-twin rehearse ", "invalid int value"),
    ],
)
def test_a_refused_command_line_prints_the_usage_and_one_prefix(capsys, argv, usage, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "rob-twin: rob-twin" not in err
    lines = err.strip().splitlines()
    assert lines[0].startswith(usage), err
    assert message in lines[-1] and lines[-1].count("rob-twin") == 1, err


def test_bench_help_lists_the_benchmarks():
    out = subprocess.run(
        [sys.executable, "-m", "rob_twin.experiments.bench", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "unknown benchmark" not in out.stdout + out.stderr
    assert out.stdout.startswith("usage:") and "  physics" in out.stdout


def test_a_failing_gate_says_why_on_the_terminal(tmp_path, capsys):
    rc = main(
        [
            "rehearse",
            "--swap-wiring",
            "--gate",
            "units_and_references",
            "--out",
            str(tmp_path),
        ]
    )
    captured = capsys.readouterr()
    assert rc == 1
    lines = captured.out.splitlines()
    at = lines.index("FAIL  units_and_references")
    reason = lines[at + 1].strip()
    assert reason.startswith("right joint 1: ") and "measured delta rad" in reason
    assert "rehearse: FAILED 1 of 1 gates (units_and_references)" in captured.err
    md = (tmp_path / "rehearsal.md").read_text()
    assert "First failure: right joint 1: " in md
    for mark in REPRS:
        assert mark not in md, mark


def test_the_rehearsal_report_writes_values_as_words(tmp_path):
    from rob_twin.twin.rehearsal.report import first_failure, write_report

    gate = {
        "name": "exclusive_output",
        "passed": False,
        "requirement": "one writer per bus",
        "detail": "",
        "foreign_command_frames": {"right": 0, "left": 0},
        "detection_latency_s": None,
        "cases": [
            {"case": "quiet", "passed": True, "latched": None},
            {"case": "second writer", "passed": False, "latched": None, "frames": [1, 2]},
        ],
    }
    report = {"passed": False, "gates": [gate]}
    _, md_path = write_report(report, tmp_path)
    md = md_path.read_text()
    assert "- foreign command frames: right 0, left 0" in md
    assert "- detection latency s: —" in md
    assert "| second writer | no | — | 1, 2 |" in md
    for mark in REPRS:
        assert mark not in md, mark
    assert first_failure(gate) == "second writer: latched —, frames 1, 2"
    assert first_failure({**gate, "detail": "bus over budget"}) == "bus over budget"
    assert first_failure({**gate, "passed": True}) == ""


def test_view_screenshot_says_where_it_went(tmp_path, capsys, monkeypatch):
    import rob_twin.twin.viewer.session as session

    shot = tmp_path / "shots" / "end.png"

    def fake_view(scenario, *, screenshot=None, report=None, **kwargs):
        Path(screenshot).parent.mkdir(parents=True, exist_ok=True)
        Path(screenshot).write_bytes(b"png")
        Path(report).write_text(json.dumps({"screenshot": str(screenshot)}))
        return 0

    monkeypatch.setattr(session, "view", fake_view)
    assert main(["view", "--screenshot", str(shot), "--seconds", "1"]) == 0
    assert f"screenshot: {shot.resolve()}" in capsys.readouterr().out


def test_figures_line_is_the_headline_or_the_first_numbers():
    assert figures_line({"headline": "rob: stack median 50 ms", "seed": 0}) == (
        "rob: stack median 50 ms"
    )
    line = figures_line(
        {
            "experiment": "x",
            "seed": 3,
            "config": {"trials": 5},
            "robots": {"rob": {"stack": {"median_ms": 50.5, "n": 98}, "ok": True}},
            "rows": [1, 2, 3],
        }
    )
    assert line == "stack.median_ms 50.5, stack.n 98"


def test_cross_arm_latency_shows_progress_its_clusters_and_ends_on_its_figures(
    tmp_path, capsys, monkeypatch
):
    import rob_twin.experiments.output as output
    from rob_twin.experiments import exp_cross_arm_latency as exp

    for mod in (output, exp):
        monkeypatch.setattr(mod, "OUT_DIR", tmp_path)
    monkeypatch.setattr(exp, "PROGRESS_EVERY_S", 0.0)  # a line every trial
    assert main(["experiment", "cross-arm-latency", "--trials", "4", "--robot", "rob"]) == 0
    captured = capsys.readouterr()
    assert "[cross-arm-latency] rob: trial 2/4" in captured.err
    last = captured.out.strip().splitlines()[-1]
    assert last.startswith("figures: rob: stack median ") and "clusters by direction" in last
    result = json.loads(
        (tmp_path / "experiments" / "cross-arm-latency" / "result.json").read_text()
    )
    by_dir = result["robots"]["rob"]["stack_by_direction"]
    assert set(by_dir) == {"out", "back"}
    assert by_dir["out"]["n"] + by_dir["back"]["n"] == result["robots"]["rob"]["stack"]["n"]
    report = (tmp_path / "experiments" / "cross-arm-latency" / "report.md").read_text()
    assert "j1 stepped out (even trials)" in report and "stepped back (odd trials)" in report


def test_study_statuses_and_tables_are_words(tmp_path):
    from rob_twin.experiments.study.report import statuses_words, summarize, write_report
    from rob_twin.experiments.study.spec import StudySpec

    assert statuses_words({"success": 185, "no_path": 15}) == "success 185, no_path 15"
    spec = StudySpec(name="words", count=3, margins_m=[0.0, 0.005])
    rows = [
        {
            "row": i,
            "pair": i,
            "margin_m": m,
            "goal_seed": 0,
            "plan_seed": 0,
            "status": status,
            "plan_time_s": t,
            "min_clearance_m": 0.01 if status == "success" else None,
            "error": None,
            **{f"{a}_tcp_{c}": 0.1 for a in spec.arms for c in "xyz"},
        }
        for i, (m, status, t) in enumerate(
            [(0.0, "success", 0.1), (0.0, "no_path", 0.2), (0.005, "error", None)]
        )
    ]
    summary = summarize(spec, rows, backend="local", wall_s=1.0, expected=3)
    write_report(spec, rows, summary, tmp_path, "words.json")
    md = (tmp_path / "report.md").read_text()
    assert "statuses: success 1, no_path 1, error 1;" in md
    for mark in REPRS:
        assert mark not in md, mark


def test_words_never_writes_a_repr():
    assert words({"right": 0, "left": 0}) == "right 0, left 0"
    assert words(None) == "none" and words(True) == "yes" and words([]) == "none"
    assert words({"limits": {"v": 1.0}, "q": [[0.1, 0.2]]}) == "limits (v 1.0), q (0.1, 0.2)"

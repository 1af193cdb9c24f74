"""What ``rob-twin run`` tells people: ``summary.md`` as tables with units, rounded, lists and
dicts written out (no Python reprs), for failed runs too; an earlier video that ``--no-video``
removes is said to be removed; human lines by default, one JSON object with ``--json``.
Short scenario (0.6 s simulated, no video)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import rob_twin.twin.scenario.run as scenario_module
from rob_twin.cli.main import main

REACH = Path(__file__).parent / "data" / "sweep" / "reach.json"
BUS_FAULTS = Path(__file__).resolve().parents[1] / "experiments" / "scenarios" / "bus_faults.json"
REPR_MARKS = ("{'", "['", "None", "True", "False", "nan")
LONG_FLOAT = re.compile(r"\d\.\d{5,}")


def _no_reprs(md: str) -> None:
    for mark in REPR_MARKS:
        assert mark not in md, f"{mark!r} in summary.md"
    assert not LONG_FLOAT.findall(md), LONG_FLOAT.findall(md)


def test_summary_md_is_tables_with_units_rounded_without_python_reprs(tmp_path, capsys):
    rc = main(["run", str(BUS_FAULTS), "--out", str(tmp_path), "--no-video"])
    assert rc == 0
    md = (tmp_path / "bus_faults" / "summary.md").read_text()
    _no_reprs(md)
    assert "max tracking error [mrad]" in md and "| right |" in md and "| left |" in md
    assert "simulated time | 4.00 s" in md
    assert "uncertain_output" in md and "partial_output" in md  # lists written out
    assert "closed: 99" in md  # refused targets per reason, a dict written out
    assert "hardware_io: false" in md
    out = capsys.readouterr().out
    assert out.strip() and not out.lstrip().startswith("{")  # lines for people by default


def test_json_flag_prints_one_object_and_the_lines_go_to_stderr(tmp_path, capsys):
    rc = main(["run", str(REACH), "--out", str(tmp_path), "--no-video", "--json"])
    captured = capsys.readouterr()
    payload = json.loads(captured.out)
    assert rc == 0 and payload["scenario"] == "reach" and payload["hardware_io"] is False
    assert "summary:" in captured.err


def test_a_failed_run_writes_a_summary_md_that_says_why(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("drive table is empty")

    monkeypatch.setattr(scenario_module, "run_scenario", broken)
    rc = main(["run", str(REACH), "--out", str(tmp_path), "--no-video"])
    assert rc == 1
    status = json.loads((tmp_path / "reach" / "summary.json").read_text())
    assert status["status"] == "failed"
    md = (tmp_path / "reach" / "summary.md").read_text()
    assert "failed" in md and "RuntimeError" in md and "drive table is empty" in md
    assert "hardware_io: false" in md
    _no_reprs(md)


def test_no_video_says_that_it_removed_an_earlier_runs_video(tmp_path, capsys):
    folder = tmp_path / "reach"
    folder.mkdir()
    (folder / "reach.mp4").write_bytes(b"an earlier run's video")
    rc = main(["run", str(REACH), "--out", str(tmp_path), "--no-video"])
    out = capsys.readouterr().out
    assert rc == 0 and not (folder / "reach.mp4").exists()
    assert "reach.mp4" in out and "removed" in out and "--no-video" in out
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["video"] is None and "removed" in summary["video_skipped_reason"]
    assert "removed" in (folder / "summary.md").read_text()
    # without an earlier video, nothing is said to be removed
    main(["run", str(REACH), "--out", str(tmp_path), "--no-video"])
    assert "removed" not in capsys.readouterr().out

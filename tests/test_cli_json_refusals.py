"""Every command that takes ``--json`` answers a refusal with its error object on stdout.

One bad input per command (a missing file, a calibration file that is not one, a value out of
its range): exit 2, stdout exactly one JSON object ``{"error", "type", "exit_code": 2}``, the
reason on stderr too. Every refusal here comes before any work (no bank served, no window,
no plan), so the whole test takes seconds. A command that gains ``--json`` without a case
here fails ``test_every_json_command_has_a_refusal_case``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rob_twin.cli.main import build_parser, main

BAD_CALIBRATION = "bad_calibration.json"  # a JSON object without the calibration format
BLOCKER = "blocker"  # a file where a folder must go


def _write_inputs(tmp: Path) -> None:
    (tmp / BAD_CALIBRATION).write_text(json.dumps({"not": "a calibration"}))
    (tmp / BLOCKER).write_text("x")


def _cases(tmp: Path) -> dict[str, list[str]]:
    """{command: its arguments with one bad input} (``--json`` is added by the test;
    ``_write_inputs`` writes the files they name)."""
    blocker = tmp / BLOCKER
    bad_cal = str(tmp / BAD_CALIBRATION)
    missing = str(tmp / "missing")
    out = str(tmp / "out")
    return {
        "experiment": ["experiment", "no-such-experiment"],
        "demo": ["demo", "--no-video", "--out", str(blocker)],
        "run": ["run", missing + ".json", "--no-video", "--out", out],
        "rehearse": ["rehearse", "--out", out, "--gate", "vibes"],
        "replay": ["replay", missing + ".log", "--out", out],
        "bank": ["bank", "--calibration", bad_cal, "--port", "0", "--seconds", "1"],
        "host": ["host", "--max-velocity", "99", "--seconds", "0.1"],
        "plan": ["plan", missing + ".json", "--out", out],
        "excite": ["excite", "--seconds", "-1", "--out", out],
        "compare": ["compare", missing + ".log", "--out", out],
        "certify": ["certify", missing + ".json"],
        "view": ["view", "--calibration", bad_cal, "--seconds", "0.1"],
        "teleop": ["teleop", "--calibration", bad_cal, "--seconds", "0.1"],
        "study": ["study", missing + ".toml", "--out", out],
        "sweep": ["sweep", missing, "--out", out],
        "calibrate": ["calibrate", missing + ".log", "--out", out],
        "mirror": ["mirror", "--calibration", bad_cal, "--seconds", "0.1"],
    }


def _json_commands() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a.choices, dict))
    return {
        name
        for name, cmd in sub.choices.items()
        if any("--json" in a.option_strings for a in cmd._actions)
    }


def test_every_json_command_has_a_refusal_case(tmp_path):
    assert set(_cases(tmp_path)) == _json_commands()


@pytest.mark.parametrize("command", sorted(_cases(Path("/nonexistent")).keys()))
def test_a_refusal_prints_its_error_object_on_stdout(command, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing a command might write lands in the checkout
    _write_inputs(tmp_path)
    argv = [*_cases(tmp_path)[command], "--json"]
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 2, (argv, captured.err[-2000:])
    reply = json.loads(captured.out)  # raises unless stdout is exactly one JSON value
    assert captured.out.count("\n") == 1, captured.out
    assert reply["exit_code"] == 2 and reply["type"] and reply["error"], reply
    assert reply["error"].split(":")[-1].strip() in captured.err  # the same reason on stderr


def test_a_warning_is_one_line_without_the_source_line(capsys):
    """A warning a command raises reaches the user as one ``rob-twin: warning:`` line on
    stderr, not Python's two-line form with a file, a line number and a line of source."""
    import argparse
    import warnings

    from rob_twin.cli.common import run_command
    from rob_twin.planners.collision import WeakPairsWarning

    def command(args):
        warnings.warn("4 checked pairs of this model are weak", WeakPairsWarning, stacklevel=1)
        return 0

    def parser():
        p = argparse.ArgumentParser(prog="rob-twin")
        p.set_defaults(func=command)
        return p

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        assert run_command(parser, []) == 0
    err = capsys.readouterr().err
    assert err == "rob-twin: warning: 4 checked pairs of this model are weak\n", err

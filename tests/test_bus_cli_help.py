"""`rob-twin bank --help` and `rob-twin host --help` document every option with its default."""

from __future__ import annotations

import argparse

import pytest
from rob_twin.cli.main import build_parser


def _subparser(name: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


@pytest.mark.parametrize("command", ["bank", "host"])
def test_every_option_has_help_naming_its_default(command):
    parser = _subparser(command)
    for action in parser._actions:
        if action.dest in ("help", "json") or not action.option_strings:
            continue
        name = action.option_strings[0]
        assert action.help, f"{command} {name} has no help"
        shown = action.help % {"default": action.default}
        assert "(default: " in shown, f"{command} {name}: its default is not shown"
        if action.default is not None:
            assert f"(default: {action.default}" in shown, (command, name, shown)


def test_host_has_json_and_human_output_by_default():
    args = build_parser().parse_args(["host"])
    assert args.json is False and args.json_result is True
    assert build_parser().parse_args(["host", "--json"]).json is True

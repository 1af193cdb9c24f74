"""Every option of every ``rob-twin`` command says what it does, and its help shows the
default (once missing: ``run --out``, ``--no-video``, ``experiment --seed``, ``host --host`` had
none)."""

from __future__ import annotations

import argparse

import pytest
from rob_twin.cli.common import default_words
from rob_twin.cli.main import build_parser


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


COMMANDS = _commands()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_has_help(name):
    missing = [
        "/".join(action.option_strings) or action.dest
        for action in COMMANDS[name]._actions
        if not isinstance(action, argparse._HelpAction) and not (action.help or "").strip()
    ]
    assert not missing, f"rob-twin {name}: options without help text: {missing}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_shows_each_set_default(name):
    text = " ".join(COMMANDS[name].format_help().split())
    for action in COMMANDS[name]._actions:
        default = action.default
        if not action.option_strings or any(default is v for v in (None, False, True)):
            continue
        if default is argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        help_text = " ".join((action.help or "").lower().split())
        shown = default_words(default)  # a list as words, not its repr
        assert f"default: {shown}" in text or "default" in help_text, (
            f"rob-twin {name} {'/'.join(action.option_strings)}: default {default!r} not shown"
        )


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_json_output(name):
    """Human output by default, one JSON object with --json, for every command (once broken:
    bank, view and teleop had none)."""
    options = {o for action in COMMANDS[name]._actions for o in action.option_strings}
    assert "--json" in options, f"rob-twin {name} has no --json"

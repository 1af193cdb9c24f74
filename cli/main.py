"""``rob-twin`` command line: experiment, demo, run, rehearse, replay, bank, host, plan,
excite, compare, certify, view, teleop, study, sweep, calibrate, mirror.

Exit codes: 0 done; 1 the run or check failed (unexpected refused targets, failed plan
steps or owner faults; a failed gate; an error while running); 2 bad input (command line,
scenario file, output folder, unknown name); 3 no display for the viewer; 4 a calibration
flagged as a misfit (``calibrate``: written, with its warnings; ``--accept-misfit``: 0);
130 / 143 the run was interrupted by SIGINT / SIGTERM (its summary is marked
``interrupted``).

With ``--json`` stdout carries exactly one JSON object, on success and on failure
(``{"error": ..., "type": ..., "exit_code": ...}``); progress and anything else a command
prints go to stderr.
"""

from __future__ import annotations

import argparse

from rob_twin.cli import (  # one module per command group
    bus,
    calibrate,
    certify,
    compare,
    demo,
    excite,
    experiment,
    mirror,
    plan,
    rehearse,
    run,
    scale,
    teleop,
    view,
)
from rob_twin.cli.common import QUALITY_CHOICES, Parser, UsageError, run_command

__all__ = ["QUALITY_CHOICES", "UsageError", "build_parser", "main"]

# Each module adds its commands (options next to their handler); this order is the order
# ``rob-twin --help`` lists them in.
COMMAND_MODULES = (
    experiment,
    demo,
    run,
    rehearse,
    bus,
    plan,
    excite,
    compare,
    certify,
    view,
    teleop,
    scale,
    calibrate,
    mirror,
)


def version() -> str:
    """The installed package's version (its metadata: pyproject.toml's ``version``)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as package_version

    try:
        return package_version("rob-twin")
    except PackageNotFoundError:  # run from a tree that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="rob-twin", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--version", action="version", version=f"rob-twin {version()}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMAND_MODULES:
        module.register(sub)
    _describe_every_command(sub)
    return parser


def _describe_every_command(sub: argparse._SubParsersAction) -> None:
    """A command registered without a description shows its one-line help as one (``rob-twin
    NAME --help`` never opens on a bare usage line)."""
    helps = {a.dest: a.help for a in sub._choices_actions}
    for name, command in sub.choices.items():
        if not (command.description or "").strip() and helps.get(name):
            text = helps[name]
            command.description = text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")


def main(argv: list[str] | None = None) -> int:
    return run_command(build_parser, argv)


if __name__ == "__main__":
    raise SystemExit(main())

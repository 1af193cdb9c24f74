"""``rob-twin`` command line: experiment, demo, run, rehearse, replay, bank, host, plan,
excite, compare, certify, view, teleop, study, sweep, calibrate, mirror.

Exit codes: 0 done; 1 the run or check failed (unexpected refused targets, failed plan
steps or owner faults; a failed gate; an error while running); 2 bad input (command line,
scenario file, output folder, unknown name); 3 no display for the viewer; 130 / 143 the
run was interrupted by SIGINT / SIGTERM (its summary is marked ``interrupted``).

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


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="rob-twin", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_command(build_parser, argv)


if __name__ == "__main__":
    raise SystemExit(main())

"""``rob-twin experiment``: run a registered experiment, or list them
(``rob_twin.experiments.registry``, imported only when the command runs)."""

from __future__ import annotations

import argparse

from rob_twin.cli.common import CommandResult


def _cmd_experiment(args: argparse.Namespace) -> CommandResult:
    from rob_twin.experiments.registry import experiment_names, get_experiment

    if args.list or not args.name:
        names = experiment_names()
        if not args.json:
            print("\n".join(names))
        return 0, {"experiments": names}
    fn = get_experiment(args.name)
    result = fn(seed=args.seed)
    if not args.json:
        for key, value in result.items():
            if not isinstance(value, (list, dict)):
                print(f"{key}: {value}")
        print(f"(full result under out/experiments/{args.name}/)")
    return 0, result


def register(sub) -> None:
    """Add ``experiment`` to the ``rob-twin`` sub-command parser ``sub``."""
    exp = sub.add_parser("experiment", help="run a registered experiment")
    exp.add_argument("name", nargs="?", help="experiment name (omit to list)")
    exp.add_argument("--json", action="store_true", help="print exactly one JSON object")
    exp.add_argument("--seed", type=int, default=0)
    exp.add_argument("--list", action="store_true")
    exp.set_defaults(func=_cmd_experiment, json_result=True)

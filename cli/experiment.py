"""``rob-twin experiment``: run a registered experiment, or list them
(``rob_twin.experiments.registry``, imported only when the command runs)."""

from __future__ import annotations

import argparse

from rob_twin.cli.common import ROBOT_HELP, CommandResult, robot_arg


def _cmd_experiment(args: argparse.Namespace) -> CommandResult:
    from rob_twin.experiments.registry import (
        experiment_names,
        experiment_summary,
        get_experiment,
    )

    if args.list or not args.name:
        summaries = {name: experiment_summary(name) for name in experiment_names()}
        if not args.json:
            width = max(map(len, summaries))
            for name, line in summaries.items():
                print(f"{name:<{width}}  {line}")
        return 0, {"experiments": list(summaries), "summaries": summaries}
    fn = get_experiment(args.name)
    kwargs = {}
    if args.trials is not None:
        import inspect

        from rob_twin.cli.common import UsageError

        if "trials" not in inspect.signature(fn).parameters:
            raise UsageError(
                f"--trials {args.trials}: experiment {args.name!r} takes no trial count; "
                "valid: omit it"
            )
        if args.trials < 2:
            raise UsageError(f"--trials {args.trials}: valid: an int >= 2")
        kwargs["trials"] = args.trials
    if args.robot:
        import inspect

        from rob_twin.cli.common import UsageError

        if "robots" not in inspect.signature(fn).parameters:
            takers = [n for n in experiment_names() if _takes_robots(get_experiment(n))]
            raise UsageError(
                f"--robot: experiment {args.name!r} reproduces its source's figures on its own "
                f"robot and takes none; valid: omit it, or one of {takers}"
            )
        kwargs["robots"] = tuple(r.spec for r in args.robot)
    result = fn(seed=args.seed, **kwargs)
    if not args.json:
        for key, value in result.items():
            if not isinstance(value, (list, dict)):
                print(f"{key}: {value}")
        print(f"(full result under out/experiments/{args.name}/)")
    return 0, result


def _takes_robots(fn) -> bool:
    import inspect

    return "robots" in inspect.signature(fn).parameters


def register(sub) -> None:
    """Add ``experiment`` to the ``rob-twin`` sub-command parser ``sub``."""
    exp = sub.add_parser(
        "experiment",
        help="run a registered experiment",
        description="Run a registered experiment; its result goes under out/experiments/NAME/.",
    )
    exp.add_argument("name", nargs="?", help="experiment name (omit to list them)")
    exp.add_argument("--json", action="store_true", help="print exactly one JSON object")
    exp.add_argument(
        "--seed", type=int, default=0, help="seed of the experiment's random draws and planner"
    )
    exp.add_argument(
        "--trials",
        type=int,
        default=None,
        help="trials per case, for experiments that take it (default: the experiment's own)",
    )
    exp.add_argument(
        "--list", action="store_true", help="list the experiments, one line each, and exit"
    )
    exp.add_argument(
        "--robot",
        type=robot_arg,
        action="append",
        help=f"run on this robot (repeatable), for experiments that take robots "
        f"(cross-arm-latency, held-skew): {ROBOT_HELP} (default: the experiment's own)",
    )
    exp.set_defaults(func=_cmd_experiment, json_result=True)

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
            if not isinstance(value, (list, dict)) and key != "headline":
                print(f"{key}: {value}")
        print(f"(full result under out/experiments/{args.name}/)")
    import sys

    # the figures, last (on stderr under --json: stdout is then the one object)
    print(f"figures: {figures_line(result)}", file=sys.stderr if args.json else sys.stdout)
    return 0, result


# what an experiment's result says about itself rather than what it measured
_NOT_FIGURES = {
    "experiment",
    "figures",
    "seed",
    "seeds",
    "config",
    "trials",
    "hardware_io",
    "evidence_class",
    "note",
    "python",
    "written_utc",
    "plot",
    "plots",
    "explanation",
    "robot_model",
    "middleware",
}


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:.4g}"


def figures_line(result: dict, most: int = 8) -> str:
    """One short line of an experiment's figures: its ``headline`` when it has one, else its
    first ``most`` numbers (not lists of raw samples, not its metadata), each named by the
    last two keys of its path (``stack.median_ms 50.5``)."""
    if isinstance(result.get("headline"), str) and result["headline"]:
        return result["headline"]
    found: list[str] = []

    def walk(value: object, path: tuple[str, ...]) -> None:
        if len(found) >= most:
            return
        if isinstance(value, dict):
            for k, v in value.items():
                if str(k) not in _NOT_FIGURES:
                    walk(v, (*path, str(k)))
        elif isinstance(value, bool) or value is None:
            return
        elif isinstance(value, (int, float)) and path:
            found.append(f"{'.'.join(path[-2:])} {_number(value)}")

    walk(result, ())
    return ", ".join(found) if found else "none in the result (see its report)"


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

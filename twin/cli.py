"""``rob-twin`` command line (foundation issue): demo, run, experiment, view, rehearse."""

from __future__ import annotations

import argparse
import json
import sys


def _cmd_experiment(args: argparse.Namespace) -> int:
    from controllers.names import UnknownNameError
    from experiments.registry import experiment_names, get_experiment

    if args.list or not args.name:
        print("\n".join(experiment_names()))
        return 0
    try:
        fn = get_experiment(args.name)
    except UnknownNameError as err:
        print(f"rob-twin: {err}", file=sys.stderr)
        return 2
    result = fn(seed=args.seed)
    if args.json:
        print(json.dumps(result, sort_keys=False))
    else:
        for key, value in result.items():
            if not isinstance(value, (list, dict)):
                print(f"{key}: {value}")
        print(f"(full result under out/experiments/{args.name}/)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rob-twin", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    exp = sub.add_parser("experiment", help="run a registered experiment")
    exp.add_argument("name", nargs="?", help="experiment name (omit to list)")
    exp.add_argument("--json", action="store_true", help="print exactly one JSON object")
    exp.add_argument("--seed", type=int, default=0)
    exp.add_argument("--list", action="store_true")
    exp.set_defaults(func=_cmd_experiment)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())

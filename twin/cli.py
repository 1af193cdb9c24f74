"""``rob-twin`` command line (foundation issue): demo, run, experiment, view, rehearse, study, sweep."""

from __future__ import annotations

import argparse
import json
import sys

from .cli_scale import add_commands as add_scale_commands


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


def _run_and_report(sc, out_root: str, record: bool, can_log: bool = False) -> int:
    from pathlib import Path

    from .report import summarize
    from .scenario import run_scenario

    out_dir = Path(out_root) / sc.name
    result = run_scenario(sc, out_dir=out_dir, record=record,
                          can_log_dir=out_dir / "can" if can_log else None)
    summary = summarize(result, out_dir)
    if summary["video"]:
        print(f"video: {summary['video']} ({summary['frames']} frames, {summary['render_fps']} frames/s rendering)")
    else:
        print(f"no video written: {summary['video_skipped_reason']}")
    print(f"summary: {out_dir / 'summary.md'} and summary.json; plot: {summary['plot']}")
    if can_log:
        print(f"bus traffic: {out_dir / 'can'}/*.log (python-can canutils format)")
    print(f"simulated {summary['simulated_s']} s in {summary['wall_s']} s wall (hardware_io: false)")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from .scenario import demo_scenario

    return _run_and_report(demo_scenario(), args.out, record=not args.no_video, can_log=args.can_log)


def _cmd_run(args: argparse.Namespace) -> int:
    from .scenario import Scenario, ScenarioError

    try:
        sc = Scenario.load(args.scenario)
    except ScenarioError as err:
        print(f"rob-twin: {err}", file=sys.stderr)
        return 2
    return _run_and_report(sc, args.out, record=not args.no_video, can_log=args.can_log)


def _cmd_view(args: argparse.Namespace) -> int:
    from .viewer import NoDisplayError, view

    try:
        return view(args.scenario)
    except NoDisplayError as err:
        print(f"rob-twin view: {err}", file=sys.stderr)
        return 3


def _cmd_rehearse(args: argparse.Namespace) -> int:
    import dataclasses

    from controllers.names import UnknownNameError

    from .closed_loop import ClosedLoopConfig
    from .faults import FaultSpec, FaultSpecError
    from .rehearsal import RehearsalConfig, rehearse, write_report

    try:
        faults = tuple(FaultSpec.from_dict(f) for f in (json.loads(args.faults) if args.faults else []))
    except (FaultSpecError, json.JSONDecodeError, TypeError, AttributeError) as err:
        print(f"rob-twin rehearse: --faults must be a JSON list of fault objects: {err}", file=sys.stderr)
        return 2
    base = dataclasses.replace(ClosedLoopConfig(), seed=args.seed, swap_wiring=args.swap_wiring,
                               faults=faults)
    try:
        report = rehearse(RehearsalConfig(base=base), args.gate or None, progress=not args.json)
    except UnknownNameError as err:
        print(f"rob-twin rehearse: {err}", file=sys.stderr)
        return 2
    jp, mp = write_report(report, args.out)
    if args.json:
        print(json.dumps(report, default=str))
    else:
        for g in report["gates"]:
            print(f"{'PASS' if g['passed'] else 'FAIL'}  {g['name']}")
        print(f"report: {mp} and {jp} (simulated; hardware_io: false)")
    return 0 if report["passed"] else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rob-twin", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    exp = sub.add_parser("experiment", help="run a registered experiment")
    exp.add_argument("name", nargs="?", help="experiment name (omit to list)")
    exp.add_argument("--json", action="store_true", help="print exactly one JSON object")
    exp.add_argument("--seed", type=int, default=0)
    exp.add_argument("--list", action="store_true")
    exp.set_defaults(func=_cmd_experiment)
    demo = sub.add_parser("demo", help="headless demo: ROB at the table moves both arms; video + summary")
    demo.add_argument("--out", default="out", help="output folder (default out/)")
    demo.add_argument("--no-video", action="store_true")
    demo.add_argument("--can-log", action="store_true", help="log all CAN traffic under OUT/demo/can/")
    demo.set_defaults(func=_cmd_demo)
    run = sub.add_parser("run", help="run a scenario file headless")
    run.add_argument("scenario")
    run.add_argument("--out", default="out")
    run.add_argument("--no-video", action="store_true")
    run.add_argument("--can-log", action="store_true", help="log all CAN traffic under OUT/NAME/can/")
    run.set_defaults(func=_cmd_run)
    reh = sub.add_parser("rehearse", help="pre-commissioning gates, simulated (exit 1 if any fails)")
    reh.add_argument("--json", action="store_true", help="print exactly one JSON object")
    reh.add_argument("--out", default="out/rehearsal", help="report folder (default out/rehearsal/)")
    reh.add_argument("--gate", action="append", help="run only this gate (repeatable)")
    reh.add_argument("--seed", type=int, default=0)
    reh.add_argument("--swap-wiring", action="store_true",
                     help="rehearse a robot whose arm buses are swapped (the mapping gate must fail)")
    reh.add_argument("--faults", help="JSON list of faults applied to every gate, e.g. "
                     '\'[{"kind": "wrong_sign", "arm": "right", "joints": [5]}]\'')
    reh.set_defaults(func=_cmd_rehearse)
    view = sub.add_parser("view", help="interactive viewer paced in real time (needs a display)")
    view.add_argument("scenario", nargs="?")
    view.set_defaults(func=_cmd_view)
    add_scale_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())

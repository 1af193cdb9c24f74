"""``rob-twin study`` and ``rob-twin sweep``: the parallel commands (engines in
``rob_twin.experiments.study`` and ``rob_twin.experiments.sweep``, imported only when a command
runs).

Both return ``(exit code, result object)`` (``--json`` prints the object); a bad spec, folder
or Ray address is exit 2 with the reason on stderr."""

from __future__ import annotations

import argparse
import sys


def _input_error(command: str, err: Exception) -> tuple[int, dict]:
    print(f"rob-twin {command}: {err}", file=sys.stderr)
    return 2, {"error": str(err), "type": type(err).__name__, "exit_code": 2}


def _backend(args: argparse.Namespace):
    from rob_twin.experiments.study.backends import LocalBackend, RayBackend, default_workers

    if args.ray is not None:
        return RayBackend(
            address=None if args.ray == "local" else args.ray,
            workers=args.workers,
            connect_timeout_s=args.ray_timeout,
        )
    return LocalBackend(workers=args.workers or default_workers())


def _cmd_study(args: argparse.Namespace) -> tuple[int, dict]:
    from pathlib import Path

    from rob_twin.experiments.study.runner import replay_row, run_study
    from rob_twin.experiments.study.spec import load_spec
    from rob_twin.models.errors import RobTwinError

    out = Path(args.out) if args.out else None
    try:
        spec, base = load_spec(args.spec)
        if args.replay is not None:
            result = replay_row(spec, base, args.replay, out)
            r = result["row"]
            print(
                f"row {r['row']} (pair {r['pair']}, margin {r['margin_m']} m, goal seed "
                f"{r['goal_seed']}, plan seed {r['plan_seed']}): {r['status']} "
                f"{r['error'] or r['reason']}".rstrip()
            )
            verdict = {
                None: "no stored row to compare",
                True: "same as the stored row",
                False: "DIFFERS from the stored row",
            }[result["same"]]
            print(f"plan time {r['plan_time_s']} s; {verdict}")
            return (1 if result["same"] is False else 0), result
        summary = run_study(
            spec,
            base,
            out,
            backend=_backend(args),
            resume=args.resume,
            overwrite=args.overwrite,
            progress=not (args.json or args.no_progress),
            spec_path=args.spec,
        )
    except RobTwinError as err:
        return _input_error("study", err)
    except KeyboardInterrupt:
        print(
            "rob-twin study: interrupted; finished rows are kept, --resume continues",
            file=sys.stderr,
        )
        raise
    print(
        f"{summary['finished']}/{summary['tasks']} tasks ({summary['ran_now']} now) on "
        f"{summary['backend']} in {summary['wall_s']} s: {summary['statuses']}"
    )
    print(
        f"table: {summary['table']}; report: {Path(summary['table']).parent / 'report.md'} "
        "(simulated; hardware_io: false)"
    )
    return 0, summary


def _cmd_sweep(args: argparse.Namespace) -> tuple[int, dict]:
    from pathlib import Path

    from rob_twin.experiments.sweep import run_sweep
    from rob_twin.models.errors import RobTwinError

    try:
        report = run_sweep(
            Path(args.dir),
            baselines=Path(args.baselines) if args.baselines else None,
            out_dir=Path(args.out),
            workers=args.workers,
            update=args.update_baselines,
            progress=not args.json,
            bus=args.bus,
        )
    except RobTwinError as err:
        return _input_error("sweep", err)
    print(report["table_md"], end="")
    print(
        f"{report['verdict']}: {report['scenarios']} scenarios in {report['wall_s']} s; "
        f"report {report['report']} (simulated; hardware_io: false)"
    )
    return (0 if report["passed"] else 1), report


def register(sub) -> None:
    """Add ``study`` and ``sweep`` to the ``rob-twin`` sub-command parser ``sub``."""
    st = sub.add_parser("study", help="collision study from a spec (JSON/TOML), in parallel")
    st.add_argument("spec", help="study spec (.toml or .json); see experiments/studies/")
    st.add_argument("--out", help="output folder (default out/studies/NAME/)")
    st.add_argument(
        "--workers",
        type=int,
        default=None,
        help="local worker processes (default: all cores); with --ray: Ray actors",
    )
    st.add_argument(
        "--ray",
        nargs="?",
        const="local",
        default=None,
        metavar="ADDRESS",
        help="run on Ray: a local Ray (no ADDRESS) or the cluster at HOST:PORT",
    )
    st.add_argument(
        "--ray-timeout",
        type=float,
        default=10.0,
        help="seconds to reach the Ray ADDRESS before giving up (default 10)",
    )
    st.add_argument("--resume", action="store_true", help="continue the study in --out")
    st.add_argument("--overwrite", action="store_true", help="discard the rows already in --out")
    st.add_argument("--replay", type=int, metavar="ROW", help="plan one row again and compare")
    st.add_argument("--json", action="store_true", help="print exactly one JSON object")
    st.add_argument("--no-progress", action="store_true")
    st.set_defaults(func=_cmd_study, json_result=True)
    from rob_twin.cli.run import BUS_HELP, DefaultsShown

    sw = sub.add_parser(
        "sweep",
        help="run every scenario in DIR, compare with baselines (exit 1 on a regression)",
        formatter_class=DefaultsShown,
        description="Run every scenario of DIR headless (no video) on the simulated bus and "
        "compare each run's figures with DIR/baselines/NAME.json; exit 1 on a regression, with "
        "a table of what changed (OUT/sweep.md). --update-baselines is how baselines change.",
    )
    sw.add_argument("dir", help="folder of scenario .json files")
    sw.add_argument("--baselines", help="baseline folder (default: DIR/baselines/)")
    sw.add_argument(
        "--update-baselines",
        action="store_true",
        help="write the baselines from this run instead of comparing (keeps their "
        "tolerances); only for an intended change of behaviour",
    )
    sw.add_argument("--workers", type=int, default=None, help="parallel runs (default: all cores)")
    sw.add_argument("--bus", default="1M", help=BUS_HELP)
    sw.add_argument("--out", default="out/sweep", help="run outputs and report")
    sw.add_argument(
        "--json",
        action="store_true",
        help="print exactly one JSON object (the report) instead of the table",
    )
    sw.set_defaults(func=_cmd_sweep, json_result=True)

"""``rob-twin study`` and ``rob-twin sweep``: the parallel commands (engines in
``rob_twin.experiments.study`` and ``rob_twin.experiments.sweep``, imported only when a command
runs).

Both return ``(exit code, result object)`` (``--json`` prints the object); a bad spec, folder
or Ray address is exit 2 with the reason on stderr. ``study`` checks the whole spec and its
estimated size before the first row (exit 2, nothing written; ``--force`` runs a study beyond
the caps), and exits 1 when a row raised or no row succeeded."""

from __future__ import annotations

import argparse
import sys

MAX_WORKERS = 1024  # local processes or Ray actors one command asks for


def workers_arg(text: str) -> int:
    """``--workers N``: an integer in [1, MAX_WORKERS] (0 or fewer is refused, exit 2)."""
    try:
        n = int(text)
    except ValueError:
        n = None
    if n is None or not 1 <= n <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(
            f"--workers={text!r} is invalid; valid: an integer in [1, {MAX_WORKERS}]"
        )
    return n


def out_folder_arg(text: str) -> str:
    """``--out DIR``: a folder, or a path where one can be made: not an existing file, no
    existing file on its way (refused at the command line, exit 2, before any work)."""
    from pathlib import Path

    path = Path(text)
    for part in (path, *path.parents):
        if part.exists() or part.is_symlink():
            if not part.is_dir():
                what = "is a file" if part == path else f"has the file {part} on its way"
                raise argparse.ArgumentTypeError(
                    f"--out={text!r} is invalid ({what}); valid: a folder, or a path where one "
                    "can be made"
                )
            break
    return text


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


def _announce_force(spec, backend, force: bool) -> None:
    """With ``--force``, print (stderr) the estimate of a study beyond the caps before it
    runs."""
    from rob_twin.experiments.study.backends import default_workers
    from rob_twin.experiments.study.preflight import default_config, estimate

    est = estimate(spec, getattr(backend, "workers", None) or default_workers())
    beyond = est.beyond(default_config())
    if force and beyond:
        caps = "; ".join(f"{field} {value} (cap {valid})" for field, value, valid in beyond)
        print(
            f"rob-twin study: --force: beyond the caps: {caps}; estimate: {est.text()}",
            file=sys.stderr,
        )


def _study_calibration(path: str | None, spec, base):
    """The ``--calibration`` of a study, checked against the study's model (CalibrationError
    for another model's file); None without one."""
    if path is None:
        return None
    from rob_twin.experiments.study.spec import model_path
    from rob_twin.models.robot_model import load_model_of
    from rob_twin.twin.calibration.calibration_file import load_calibration

    return load_calibration(path, load_model_of(model_path(spec, base)))


def _cmd_study(args: argparse.Namespace) -> tuple[int, dict]:
    from pathlib import Path

    from rob_twin.experiments.study.report import statuses_words
    from rob_twin.experiments.study.runner import replay_row, run_study
    from rob_twin.experiments.study.spec import load_spec
    from rob_twin.models.errors import RobTwinError

    out = Path(args.out) if args.out else None
    try:
        spec, base = load_spec(args.spec)
        calibration = _study_calibration(args.calibration, spec, base)
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
        backend = _backend(args)
        _announce_force(spec, backend, args.force)
        summary = run_study(
            spec,
            base,
            out,
            backend=backend,
            resume=args.resume,
            overwrite=args.overwrite,
            progress=not (args.json or args.no_progress),
            spec_path=args.spec,
            force=args.force,
        )
    except RobTwinError as err:
        return _input_error("study", err)
    except KeyboardInterrupt:
        print(
            "rob-twin study: interrupted; finished rows are kept, --resume continues",
            file=sys.stderr,
        )
        raise
    from rob_twin.twin.calibration.calibration_file import calibration_label

    summary["calibration"] = calibration_label(calibration)
    est = summary["estimate"]
    if not args.json:
        if calibration is not None:
            print(
                f"calibration {calibration.name}: checked against the study's model; planning "
                "uses kinematics and collision geometry only, which a calibration does not change"
            )
        print(
            f"estimate: {est['rows']} rows, ~{est['memory_bytes'] / 2**20:.0f} MiB, "
            f"~{est['time_s']:g} s on {est['workers']} worker(s)"
        )
        print(
            f"{summary['finished']}/{summary['tasks']} tasks ({summary['ran_now']} now) on "
            f"{summary['backend']} in {summary['wall_s']} s: {statuses_words(summary['statuses'])}"
        )
        print(
            f"table: {summary['table']}; report: {Path(summary['table']).parent / 'report.md'} "
            "(simulated; hardware_io: false)"
        )
    code = 0 if summary["verdict"] == "clean" else 1
    if code:
        print(
            f"rob-twin study: {summary['verdict']}: {summary['errors']} error rows, "
            f"{summary['statuses'].get('success', 0)} of {summary['finished']} succeeded; "
            f"failed rows {summary['failed_rows'][:10]} (replay one with --replay ROW)",
            file=sys.stderr,
        )
    summary["exit_code"] = code
    return code, summary


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
    st = sub.add_parser(
        "study",
        help="collision study from a spec (JSON/TOML), in parallel",
        description="Plan a study spec's goal pairs at every margin. The whole spec and its "
        "size are checked before the first row (exit 2 with the field named, nothing "
        "written); exit 1 when a row raised or no row succeeded.",
    )
    st.add_argument("spec", help="study spec (.toml or .json); see experiments/studies/")
    st.add_argument("--out", type=out_folder_arg, help="output folder (default: out/studies/NAME/)")
    st.add_argument(
        "--calibration",
        metavar="FILE",
        help="a calibration (rob-twin calibrate) checked against the study's model and "
        "recorded in the summary; planning uses kinematics and geometry only, which it does "
        "not change (default: none, uncalibrated)",
    )
    st.add_argument(
        "--workers",
        type=workers_arg,
        default=None,
        help="local worker processes (default: all cores); with --ray: Ray actors "
        "(default: one per cluster CPU)",
    )
    st.add_argument(
        "--ray",
        nargs="?",
        const="local",
        default=None,
        metavar="ADDRESS",
        help="run on Ray: a local Ray (no ADDRESS) or the cluster at HOST:PORT "
        "(default: no Ray, local processes)",
    )
    st.add_argument(
        "--ray-timeout",
        type=float,
        default=10.0,
        help="seconds to reach the Ray ADDRESS before giving up (default: %(default)s)",
    )
    st.add_argument(
        "--resume", action="store_true", help="continue the study in --out (default: off)"
    )
    st.add_argument(
        "--overwrite", action="store_true", help="discard the rows already in --out (default: off)"
    )
    st.add_argument(
        "--replay",
        type=int,
        metavar="ROW",
        help="plan one row again and compare it with the stored row (default: run the study)",
    )
    st.add_argument(
        "--force",
        action="store_true",
        help="run a study whose estimated rows, memory or time is beyond the caps "
        "(1,000,000 rows, 4 GiB, 24 h); the estimate is printed (default: off)",
    )
    st.add_argument(
        "--json",
        action="store_true",
        help="print exactly one JSON object instead of the human summary (default: off)",
    )
    st.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar on stderr (default: a bar, off with --json)",
    )
    st.set_defaults(func=_cmd_study, json_result=True)
    from rob_twin.cli.run import BUS_HELP

    sw = sub.add_parser(
        "sweep",
        help="run every scenario in DIR, compare with baselines (exit 1 on a regression)",
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
    sw.add_argument(
        "--workers", type=workers_arg, default=None, help="parallel runs (default: all cores)"
    )
    sw.add_argument("--bus", default=None, help=BUS_HELP)
    sw.add_argument(
        "--out", type=out_folder_arg, default="out/sweep", help="run outputs and report"
    )
    sw.add_argument(
        "--json",
        action="store_true",
        help="print exactly one JSON object (the report) instead of the table",
    )
    sw.set_defaults(func=_cmd_sweep, json_result=True)

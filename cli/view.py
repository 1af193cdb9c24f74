"""``rob-twin view``: the interactive viewer paced in real time (exit 3 without a display);
``--plan FILE`` shows a plan file (``rob-twin plan --out``) executed from its start."""

from __future__ import annotations

import argparse
import sys

from rob_twin.cli.common import (
    CALIBRATION_HELP,
    QUALITY_CHOICES,
    ROBOT_HELP,
    UsageError,
    calibration_arg,
    robot_arg,
)


def _cmd_view(args: argparse.Namespace) -> int:
    from rob_twin.twin.viewer.keys import key_code

    presses = []
    for item in args.press or ():
        at, _, name = item.partition(":")
        try:
            presses.append((float(at), key_code(name)))
        except ValueError:
            raise UsageError(f"--press {item!r}: expected SECONDS:KEY, e.g. 1.5:F8") from None
    scenario = args.scenario
    if args.plan is not None:
        if scenario is not None:
            raise UsageError("rob-twin view: give a SCENARIO or --plan, not both")
        return _view_plan(args, presses)
    return _run_view(scenario, args, presses)


def _run_view(scenario: str | None, args: argparse.Namespace, presses: list) -> int:
    """The viewer on ``scenario``; exit 3 without a display. Under ``--json`` stdout gets one
    object when the window closes: the session's outcome (the ``--report`` content) and the
    exit code, or the error."""
    import contextlib
    import json
    import tempfile
    from pathlib import Path

    from rob_twin.twin.viewer.session import NoDisplayError, view

    with tempfile.TemporaryDirectory(prefix="rob-twin-view-") as tmp:
        # always a report: the session's outcome says where the screenshot went
        report = args.report or str(Path(tmp) / "outcome.json")
        # under --json, stdout carries only the one object: the session's lines go to stderr
        quiet = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
        try:
            with quiet:
                code = view(
                    scenario,
                    max_wall_s=args.seconds,
                    presses=presses,
                    screenshot=args.screenshot,
                    report=report,
                    quality=args.quality,
                    max_sim_s=args.sim_seconds,
                    calibration=calibration_arg(args.calibration),
                    robot=args.robot,
                )
        except NoDisplayError as err:
            print(f"rob-twin view: {err}", file=sys.stderr)
            if args.json:
                print(json.dumps({"error": str(err), "type": type(err).__name__, "exit_code": 3}))
            return 3
        outcome = json.loads(Path(report).read_text()) if Path(report).is_file() else {}
        if args.screenshot:  # where it went, or that none was taken (stderr under --json)
            shot = outcome.get("screenshot")
            print(
                f"screenshot: {Path(shot).resolve()}"
                if shot
                else f"no screenshot written to {args.screenshot}: the session ended without one",
                file=sys.stderr if args.json else sys.stdout,
            )
        if args.json:
            print(json.dumps({"exit_code": code, "outcome": outcome, "hardware_io": False}))
        return code


def _view_plan(args: argparse.Namespace, presses: list) -> int:
    """The plan file as a scenario (``scenario_for_plan_file``: the arms at the plan's start,
    the plan at 0.5 s), written to a temporary file the viewer loads; exit 2 for a file
    that is not a valid plan, before any window opens."""
    import json
    import tempfile
    from pathlib import Path

    from rob_twin.twin.scenario.plan_steps import scenario_for_plan_file

    raw = scenario_for_plan_file(args.plan)
    with tempfile.TemporaryDirectory(prefix="rob-twin-view-") as tmp:
        path = Path(tmp) / "plan.json"
        path.write_text(json.dumps(raw))
        return _run_view(str(path), args, presses)


def register(sub) -> None:
    """Add ``view`` to the ``rob-twin`` sub-command parser ``sub``."""
    view = sub.add_parser(
        "view",
        help="interactive viewer paced in real time (needs a display)",
        description="Open the interactive MuJoCo viewer on a scenario (default: the demo) or "
        "a plan file, paced in real time through owners, codecs, buses and drives "
        "(simulated). Keys F8-F12, Insert, Home and End drive the session (--press types "
        "them at set times). Exit 0: closed; 2: bad input; 3: no display.",
    )
    view.add_argument("scenario", nargs="?", help="scenario file (default: the demo scenario)")
    view.add_argument(
        "--plan",
        default=None,
        help="show a plan file (rob-twin plan --out) executed from its start, instead of "
        "a scenario",
    )
    view.add_argument(
        "--seconds",
        type=float,
        default=None,
        help="close after this many wall seconds (default: when the window closes)",
    )
    view.add_argument(
        "--sim-seconds",
        type=float,
        default=None,
        help="close once this much simulated time has run",
    )
    view.add_argument(
        "--press",
        action="append",
        metavar="SECONDS:KEY",
        help="press KEY (F8, F9, F10, F11, F12, Insert, Home, End) at this "
        "simulated time, as if typed (repeatable)",
    )
    view.add_argument(
        "--quality",
        choices=QUALITY_CHOICES,
        default=None,
        help="render quality (default: the scenario's; auto: fast on a software GL renderer)",
    )
    view.add_argument(
        "--screenshot",
        metavar="PNG",
        help="PNG of the display taken just before closing; its path is printed",
    )
    view.add_argument(
        "--robot",
        type=robot_arg,
        default=None,
        help=f"override the scenario's robot: {ROBOT_HELP} (default: the scenario's; the "
        "demo: rob)",
    )
    view.add_argument(
        "--report", help="write what the session did (owner modes, bus frames) as JSON"
    )
    view.add_argument("--calibration", metavar="FILE", help=CALIBRATION_HELP)
    view.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object when the window closes (the session's outcome)",
    )
    view.set_defaults(func=_cmd_view)

"""``rob-twin compare``: a recording's host commands replayed into the twin of ``--robot``
(any robot with Amber drives), its prediction against the recorded feedback per joint
(``rob_twin.twin.calibration.compare``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rob_twin.cli.common import ROBOT_HELP, CommandResult, calibration_arg, robot_arg, say_for
from rob_twin.models.names import DEFAULT_ROBOT


def _cmd_compare(args: argparse.Namespace) -> CommandResult:
    """Exit 2: bad input; 1: a joint's largest position error is above --tolerance-rad; 0."""
    from rob_twin.models.robot import CAN_DRIVES
    from rob_twin.twin.calibration.compare import (
        CompareConfig,
        check_comparable,
        compare_plots,
        compare_recording,
        format_table,
    )
    from rob_twin.twin.calibration.dataset import read_input
    from rob_twin.twin.scenario.run_folder import RunFolder, write_json_atomic

    say = say_for(args)
    robot = args.robot
    robot.require(CAN_DRIVES, "rob-twin compare (its twin replays the drives)")
    config = CompareConfig(tolerance_rad=args.tolerance_rad)
    calibration = calibration_arg(args.calibration, robot)
    rec = read_input(args.recording, robot)  # bad input: exit 2 before any folder is made
    check_comparable(rec, robot)
    out = Path(args.out) if args.out else Path("out/compare") / Path(args.recording).stem
    RunFolder.check_writable(out)  # before the replay, not after
    comparison = compare_recording(rec, calibration, config, robot)
    report = comparison.report()
    out.mkdir(parents=True, exist_ok=True)
    report["plots"] = [str(p) for p in compare_plots(comparison, out)]
    report["report"] = str(out / "compare.json")
    code = 1 if comparison.exceeded else 0
    report["exit_code"] = code
    write_json_atomic(out / "compare.json", report)
    if not args.json:
        label = report["calibration"]
        label = label if isinstance(label, str) else json.dumps(label)
        for note in report["notes"]:
            say(f"note: {note}")
        say(
            f"{comparison.recording}: the twin of robot {robot.name} ({label}) against the "
            "recorded feedback, "
            f"{report['simulated_s']} s (simulated prediction; hardware_io: false)"
        )
        say(format_table(comparison))
        verdict = (
            f"EXCEEDED on {', '.join(comparison.exceeded)}"
            if comparison.exceeded
            else "within tolerance"
        )
        say(f"tolerance {1e3 * config.tolerance_rad:g} mrad (largest error per joint): {verdict}")
        say(f"report: {report['report']}; plots: {', '.join(report['plots'])}")
    return code, report


def register(sub) -> None:
    """Add ``compare`` to the ``rob-twin`` sub-command parser ``sub``."""
    cmp = sub.add_parser(
        "compare",
        help="replay a recording's host commands into the twin and compare its prediction "
        "with the recorded feedback per joint (exit 1: over tolerance; 2: bad input)",
        description="Replay the host commands of a bus recording (.log/.asc/.blf/.mf4, from "
        "the real robot or the twin) into the twin and report, per joint, predicted against "
        "recorded feedback: RMS and largest position error [mrad], lag [ms] (cross-"
        "correlation; positive: the recording is behind the twin), current error [drive "
        "units] and time over the tolerance [s]. Writes compare.json and one plot per arm "
        "into --out. Exit 0: every joint within --tolerance-rad; 1: a joint's largest error "
        "is above it; 2: bad input (a robot without Amber drives, unreadable or truncated "
        "recording, another robot's ids, no feedback frames, a calibration for another "
        "model).",
    )
    cmp.add_argument("recording", help="bus recording (.log, .asc, .blf or .mf4, + sidecar)")
    cmp.add_argument(
        "--calibration",
        metavar="FILE",
        help="calibration file (rob-twin calibrate): the twin predicts with its parameters, "
        "transport delays included (default: uncalibrated)",
    )
    cmp.add_argument(
        "--robot",
        type=robot_arg,
        default=DEFAULT_ROBOT,
        help=f"the robot recorded, whose twin predicts: {ROBOT_HELP}; its drives must be "
        "Amber (default: %(default)s)",
    )
    cmp.add_argument(
        "--tolerance-rad",
        type=float,
        default=0.01,
        metavar="X",
        help="largest position error a joint may show [rad]",
    )
    cmp.add_argument(
        "--out",
        default=None,
        help="report folder (default: out/compare/NAME/, NAME the "
        "recording's file name without suffix)",
    )
    cmp.add_argument(
        "--json", action="store_true", help="print exactly one JSON object (the report)"
    )
    cmp.set_defaults(func=_cmd_compare, json_result=True)

"""``rob-twin teleop``: teleoperate both arms from a browser or WebXR headset (real-time closed
loop and one server for page, websocket and telemetry)."""

from __future__ import annotations

import argparse
import sys

from rob_twin.cli.common import (
    CALIBRATION_HELP,
    ROBOT_HELP,
    calibration_arg,
    error_payload,
    robot_arg,
)


def _cmd_teleop(args: argparse.Namespace) -> int | tuple[int, dict]:
    from rob_twin.models.robot import MissingCapabilityError
    from rob_twin.models.robot_description import RobotFileError
    from rob_twin.twin.calibration.calibration_file import CalibrationError
    from rob_twin.twin.scenario.run import ScenarioError
    from rob_twin.twin.teleop.app import run_teleop
    from rob_twin.twin.teleop.controller import TeleopConfigError

    try:
        return run_teleop(
            args.scenario,
            port=args.port,
            lan=args.lan,
            cert_dir=args.cert_dir,
            seconds=args.seconds,
            viewer=False if args.no_viewer else None,
            video_fps=args.video_fps,
            input_timeout_s=args.input_timeout,
            as_json=args.json,
            calibration=calibration_arg(args.calibration, args.robot),
            robot=args.robot.spec if args.robot is not None else None,
        )
    except (
        ScenarioError,
        TeleopConfigError,
        CalibrationError,
        MissingCapabilityError,
        RobotFileError,
    ) as err:
        print(f"rob-twin teleop: {err}", file=sys.stderr)
        return 2, error_payload(err, 2)  # under --json: stdout's one object
    except OSError as err:
        print(f"rob-twin teleop: cannot serve on port {args.port}: {err}", file=sys.stderr)
        return 2, {**error_payload(err, 2), "error": f"cannot serve on port {args.port}: {err}"}


def register(sub) -> None:
    """Add ``teleop`` to the ``rob-twin`` sub-command parser ``sub``."""
    tele = sub.add_parser(
        "teleop",
        help="teleoperate both arms from a browser or WebXR headset "
        "(real-time closed loop + one server for page, websocket and telemetry)",
        description="Teleoperate both arms of the twin from a browser page or a WebXR "
        "headset: a real-time closed loop through owners, codecs, buses and drives "
        "(simulated), and one server for the page, its websocket, telemetry and live video "
        "(rendered in a separate process). Binds 127.0.0.1 unless --lan (HTTPS, "
        "self-signed). Exit 0: the session ended; 2: bad input or the port is taken.",
    )
    tele.add_argument(
        "scenario", nargs="?", help="scenario file: initial state and faults (default: demo)"
    )
    tele.add_argument(
        "--robot",
        type=robot_arg,
        default=None,
        help=f"{ROBOT_HELP}; with CAN drives and arm kinematics (default: the scenario's "
        "robot, the demo's: rob)",
    )
    tele.add_argument("--calibration", metavar="FILE", help=CALIBRATION_HELP)
    tele.add_argument(
        "--json",
        action="store_true",
        help="human lines to stderr; one JSON object on stdout when the session ends",
    )
    tele.add_argument(
        "--port",
        type=int,
        default=8765,
        help="port of page, websocket and telemetry (default 8765)",
    )
    tele.add_argument(
        "--lan",
        action="store_true",
        help="bind every interface, HTTPS only (self-signed certificate made on first use)",
    )
    tele.add_argument(
        "--cert-dir", help="where the --lan certificate lives (default ~/.cache/rob-twin/teleop)"
    )
    tele.add_argument(
        "--seconds",
        type=float,
        default=float("inf"),
        help="stop after this many seconds (default: run until Ctrl-C)",
    )
    tele.add_argument(
        "--no-viewer", action="store_true", help="headless even when a display exists"
    )
    tele.add_argument(
        "--video-fps",
        "--camera-hz",
        dest="video_fps",
        type=float,
        default=30.0,
        help="live video of the pages, frames per second per watched camera, rendered in "
        "its own process at 480x360 (0: off; default 30)",
    )
    tele.add_argument(
        "--input-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="input age that brakes an engaged arm (default 0.1 s; raise it for a slow "
        "network or a loaded machine)",
    )
    tele.set_defaults(func=_cmd_teleop)

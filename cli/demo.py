"""``rob-twin demo``: the headless demo (a robot with a crossing pair, ROB and OpenArm: the
pair planned apart then together; any other: both arms through keyframes), run and reported
like ``rob-twin run``."""

from __future__ import annotations

import argparse

from rob_twin.cli.common import (
    CALIBRATION_HELP,
    QUALITY_CHOICES,
    ROBOT_HELP,
    CommandResult,
    robot_arg,
    say_for,
)
from rob_twin.cli.run import BUS_HELP, RECORD_CAN_HELP, run_and_report
from rob_twin.models.names import DEFAULT_ROBOT


def _cmd_demo(args: argparse.Namespace) -> CommandResult:
    """A robot with a crossing pair (its file's ``[demo]`` table, or ROB's ``crossing_start``
    keyframe): the pair separately planned (replayed, colliding) then planned together and
    executed (``rob_twin.twin.scenario.crossing_demo``); any other: both arms through
    keyframes."""

    from rob_twin.cli.common import calibration_arg
    from rob_twin.twin.scenario import crossing_demo as cd

    robot = args.robot
    calibration_arg(args.calibration, robot)  # a bad file: exit 2 before the planning starts
    if cd.crossing_pair(robot) is None:  # no crossing pair in the file or the model: a wave
        from rob_twin.twin.scenario.run import demo_scenario

        sc = demo_scenario(robot, planned=True)  # moves planned together: no arm into the other
        return run_and_report(sc, args)

    say = say_for(args)
    say("planning each arm alone (the contrast) and judging it on a fresh model copy ...")
    contrast = cd.separate_contrast(robot=robot)
    say(
        f"separately planned: {contrast.colliding_frames} of {len(contrast.states)} samples "
        "in contact; now both arms planned together and executed through the owners"
    )
    planners: list = []
    hooks = {
        "prelude": lambda rec: cd.film_contrast(rec, contrast),
        "captions": lambda now, planner: cd.group_captions(now, planner, contrast),
        "on_planner": planners.append,
    }
    sc = cd.crossing_demo_scenario(robot=robot)
    return run_and_report(
        sc,
        args,
        hooks,
        extra=lambda: {"crossing": cd.demo_figures(contrast, planners[0] if planners else None)},
    )


def register(sub) -> None:
    """Add ``demo`` to the ``rob-twin`` sub-command parser ``sub``."""
    demo = sub.add_parser(
        "demo",
        help="headless demo: both arms planned apart (they collide), then together; video + "
        "summary",
        description="Headless demo, run and reported like rob-twin run (simulated): on a "
        "robot with a crossing pair (rob, openarm) the two arms are first planned apart and "
        "replayed (they collide), then planned together and executed through owners, "
        "codecs, buses and drives; any other robot reaches and waves both arms from its "
        "home. Outputs go to OUT/NAME/ (summary.md, summary.json, joints.png, NAME.mp4). "
        "Exit 0: passed; 1: the run did something unexpected; 2: bad input.",
    )
    demo.add_argument("--out", default="out", help="output folder (default out/)")
    demo.add_argument(
        "--no-video", action="store_true", help="run and judge without rendering demo.mp4"
    )
    demo.add_argument(
        "--can-log", action="store_true", help="log all CAN traffic under OUT/demo/can/"
    )
    demo.add_argument(
        "--json", action="store_true", help="print exactly one JSON object (the summary)"
    )
    demo.add_argument(
        "--quality",
        choices=QUALITY_CHOICES,
        default=None,
        help="video render quality (default: fast on a software GL renderer, full on a GPU)",
    )
    demo.add_argument(
        "--robot",
        type=robot_arg,
        default=DEFAULT_ROBOT,
        help=f"{ROBOT_HELP}. A robot whose file has a [demo] crossing pair (openarm: Damiao "
        "MIT drives, gravity compensation at 500 Hz), or rob (its crossing_start keyframe; "
        "Amber position drives): the crossing demo; any other: both arms reach and wave from "
        "its home",
    )
    demo.add_argument(
        "--bus",
        default=None,
        help=BUS_HELP,
    )
    demo.add_argument(
        "--record-can",
        metavar="FILE",
        help=RECORD_CAN_HELP,
    )
    demo.add_argument("--calibration", metavar="FILE", help=CALIBRATION_HELP)
    demo.set_defaults(func=_cmd_demo, json_result=True)

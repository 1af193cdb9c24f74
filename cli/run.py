"""``rob-twin run``: a scenario file headless, and ``run_and_report``, the run folder, summary
and exit code that ``run`` and ``demo`` share."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from rob_twin.cli.common import (
    CALIBRATION_HELP,
    QUALITY_CHOICES,
    ROBOT_HELP,
    CommandResult,
    calibration_arg,
    robot_arg,
    say_for,
)

BUS_HELP = (
    "simulated CAN bus: 1M (classic 1 Mbit/s), 500k, fd:1M/5M (CAN FD), off (frames arrive "
    "instantly); +worst for worst-case stuffing (default: the robot file's drives.bus: ROB "
    "1M, OpenArm fd:1M/5M)"
)
RECORD_CAN_HELP = (
    "record all bus traffic to FILE "
    "(.log, .asc, .blf or .mf4; simulated timestamps) for rob-twin replay"
)


def _bus_timing(args: argparse.Namespace, robot):
    """The ``--bus`` option as a BusTimingConfig (None: off; not given: the robot file's
    ``drives.bus``); typed error when malformed."""
    from rob_twin.twin.bus.timing import parse_bus_spec

    return parse_bus_spec(getattr(args, "bus", None) or robot.bus_spec)


def run_and_report(
    sc, args: argparse.Namespace, hooks: dict | None = None, extra: Callable[[], dict] | None = None
) -> CommandResult:
    """Prepare the run folder (checked and marked ``running`` before anything runs), run
    ``sc`` with Ctrl-C / SIGTERM caught, write the summary; exit 1 on anything the
    scenario did not expect, 130/143 when interrupted. ``hooks``: keyword arguments of
    ``run_scenario`` (prelude, captions, on_planner); ``extra()``: further summary
    sections, asked for after the run."""
    import dataclasses
    from pathlib import Path

    from rob_twin.twin.bus.recording import check_format
    from rob_twin.twin.scenario.report import summarize
    from rob_twin.twin.scenario.run import run_scenario, scenario_robot
    from rob_twin.twin.scenario.run_folder import RunFolder, write_atomic
    from rob_twin.twin.scenario.summary_md import failed_markdown
    from rob_twin.twin.scenario.verdict import unexpected
    from rob_twin.twin.sim.interrupts import EXIT_CODES, stop_requests

    say = say_for(args)
    robot = scenario_robot(sc)  # a robot that cannot run it: exit 2 before anything runs
    bus = _bus_timing(args, robot)  # bad --bus / --record-can: exit 2 before anything runs
    calibration = calibration_arg(getattr(args, "calibration", None), robot)
    traffic = getattr(args, "record_can", None)
    if traffic:
        check_format(traffic)
    if getattr(args, "quality", None) is not None:
        sc = dataclasses.replace(sc, quality=args.quality)
    video_name = f"{sc.name}.mp4"
    earlier_video = (Path(args.out) / sc.name / video_name).is_file()
    with stop_requests() as stop:  # from before the folder is marked running
        folder = RunFolder.prepare(
            args.out, sc.name, stale=(video_name, "summary.md", "joints.png", "can")
        )
        try:
            result = run_scenario(
                sc,
                out_dir=folder.path,
                record=not args.no_video,
                can_log_dir=folder.file("can") if args.can_log else None,
                should_stop=stop,
                on_progress=lambda figures: folder.write_status("running", **figures),
                bus_timing=bus,
                traffic_path=traffic,
                calibration=calibration,
                **(hooks or {}),
            )
            if result.video is None:  # say why, and that an earlier run's video is gone
                reason = "recording disabled (--no-video)" if args.no_video else None
                reason = reason or result.video_skipped_reason
                if earlier_video:
                    reason += f"; the earlier run's {video_name} was removed: it would not match"
                    reason += " this run"
                result = dataclasses.replace(result, video_skipped_reason=reason)
            problems = unexpected(result, sc.expect) if result.status == "completed" else []
            summary = summarize(
                result,
                folder.path,
                problems,
                expect=sc.expect.model_dump(),
                extra=extra() if extra is not None else None,
                keyframes=sc.keyframes,
            )
        except KeyboardInterrupt:  # a second Ctrl-C: out at once, the figures are lost
            folder.write_status(
                "interrupted",
                stopped_by="SIGINT (twice)",
                note="stopped at once; no figures were kept",
            )
            raise
        except Exception as err:
            write_atomic(folder.file("summary.md"), failed_markdown(sc.name, err))
            folder.write_status("failed", error=str(err), type=type(err).__name__)
            raise
    if result.status == "interrupted":
        code = EXIT_CODES.get(result.stopped_by or "", 1)
        say(
            f"interrupted by {result.stopped_by} after {summary['simulated_s']} s simulated; "
            f"summary marked interrupted"
        )
    else:
        code = 1 if problems else 0
    if summary["video"]:
        say(
            f"video: {summary['video']} ({summary['frames']} frames, "
            f"{summary['render_fps']} frames/s rendering)"
        )
    else:
        say(f"no video written: {summary['video_skipped_reason']}")
    say(f"summary: {folder.file('summary.md')} and summary.json; plot: {summary['plot']}")
    if args.can_log:
        say(f"bus traffic: {folder.file('can')}/*.log (python-can canutils format)")
    if summary.get("bus_plot"):
        for b in summary["bus"].values():
            c = b["command_to_drive_latency"]
            say(
                f"bus {b['bus']} ({b['config']}): load {100 * b['load']:.1f} %, command->drive "
                f"p99 {c['p99_us']} us, max {c['max_us']} us, frames lost {b['frames_lost']}"
            )
        say(f"bus plot: {summary['bus_plot']}")
    for b in summary.get("bus_over_budget", []):
        say(
            f"WARNING: bus {b['bus']} ({b['config']}) ran at {100 * b['load']:.1f} % load, over "
            f"the {100 * b['max_load']:.0f} % budget (rob-twin rehearse --gate bus_budget)"
        )
    if traffic:
        say(f"bus recording: {traffic} (+ .json sidecar; rob-twin replay {traffic})")
    label = summary["calibration"]
    say(f"calibration: {label if isinstance(label, str) else label['name']}")
    r = summary.get("robot") or {}
    say(f"robot: {r.get('name')} ({r.get('file')}, model {r.get('model_hash')})")
    say(f"simulated {summary['simulated_s']} s in {summary['wall_s']} s wall (hardware_io: false)")
    for line in problems:
        say(f"UNEXPECTED: {line}")
    print(
        verdict_line(getattr(args, "command", None) or "run", summary, folder.path), file=sys.stderr
    )
    return code, {**summary, "run_folder": str(folder.path), "exit_code": code}


def _latched_words(summary: dict) -> str:
    """``left partial_output (expected), right uncertain_output (UNEXPECTED)``: every owner
    fault latched during the run, per arm, and whether the scenario's ``expect`` declares it;
    ``""`` when none latched."""
    declared = (summary.get("expect") or {}).get("owner_faults") or {}
    words = []
    for arm, figures in (summary.get("pipeline") or {}).items():
        for fault in dict.fromkeys(figures.get("faults_latched") or ()):
            tag = "expected" if fault in declared.get(arm, ()) else "UNEXPECTED"
            words.append(f"{arm} {fault} ({tag})")
    return ", ".join(words)


def verdict_line(command: str, summary: dict, folder) -> str:
    """The one line a run ends with (on stderr): passed, FAILED or interrupted, why, the
    owner faults that latched (named, expected or not) and where the outputs are."""
    from rob_twin.twin.scenario.summary_md import keyframes_words

    name = summary.get("scenario")
    if summary.get("status") == "interrupted":
        head = f"{command} {name}: INTERRUPTED by {summary.get('stopped_by')}"
    elif summary.get("passed"):
        head = f"{command} {name}: passed (did only what its 'expect' declares)"
    else:
        problems = summary.get("unexpected") or []
        first = problems[0] if problems else "see the summary"
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        head = f"{command} {name}: FAILED: {first}{more}"
    parts = [head]
    latched = _latched_words(summary)
    parts.append(f"owner faults latched: {latched}" if latched else "no owner fault latched")
    if summary.get("keyframes_reached"):
        parts.append(f"keyframes reached {keyframes_words(summary['keyframes_reached'])}")
    failed_steps = summary.get("failed_plan_steps") or 0
    if summary.get("plans"):
        parts.append(f"plan steps failed {failed_steps} of {len(summary['plans'])}")
    parts.append(f"outputs in {folder}/ (summary.md)")
    return "; ".join(parts)


def _cmd_run(args: argparse.Namespace) -> CommandResult:
    from rob_twin.twin.scenario.run import Scenario, scenario_robot

    sc = Scenario.load(args.scenario, robot=args.robot)
    robot = scenario_robot(sc)  # what the scenario needs of its robot, before anything runs
    if args.check:
        say_for(args)(
            f"{args.scenario}: valid scenario {sc.name!r} for robot {robot.name!r} "
            f"({sc.duration} s, {len(sc.keyframes)} keyframes, {len(sc.plans)} plan steps, "
            f"{len(sc.faults)} faults)"
        )
        return 0, {
            "valid": True,
            "scenario": sc.name,
            "path": str(args.scenario),
            "robot": robot.identity(),
        }
    return run_and_report(sc, args)


def register(sub) -> None:
    """Add ``run`` to the ``rob-twin`` sub-command parser ``sub``."""
    run = sub.add_parser(
        "run",
        help="run a scenario file headless",
        description="Run a scenario file headless through owners, codec, simulated CAN buses "
        "and drives; outputs go to OUT/NAME/ (summary.md, summary.json, joints.png, NAME.mp4). "
        "Exit 0: passed; 1: the run did something its 'expect' does not declare; 2: bad input; "
        "130/143: interrupted. Schema: experiments/scenarios/scenario.schema.json",
    )
    run.add_argument("scenario", help="scenario file (.json)")
    run.add_argument("--out", default="out", help="output folder; the run writes OUT/NAME/")
    run.add_argument(
        "--no-video",
        action="store_true",
        help="render no video; an earlier run's NAME.mp4 in OUT/NAME/ is removed (it would "
        "not match this run) and the summary says so",
    )
    run.add_argument(
        "--can-log", action="store_true", help="log all CAN traffic under OUT/NAME/can/"
    )
    run.add_argument("--check", action="store_true", help="only validate the scenario file")
    run.add_argument(
        "--json",
        action="store_true",
        help="print exactly one JSON object (the summary) instead of lines for people",
    )
    run.add_argument(
        "--robot", type=robot_arg, help=f"override the scenario's 'robot': {ROBOT_HELP}"
    )
    run.add_argument("--bus", default=None, help=BUS_HELP)
    run.add_argument("--record-can", metavar="FILE", help=RECORD_CAN_HELP)
    run.add_argument("--calibration", metavar="FILE", help=CALIBRATION_HELP)
    run.add_argument(
        "--quality",
        choices=QUALITY_CHOICES,
        default=None,
        help="override the scenario's video render 'quality'",
    )
    run.set_defaults(func=_cmd_run, json_result=True)

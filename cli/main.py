"""``rob-twin`` command line: demo, run, experiment, view, rehearse, replay, bank, host, study,
sweep, certify.

Exit codes: 0 done; 1 the run or check failed (unexpected refused targets, failed plan
steps or owner faults; a failed gate; an error while running); 2 bad input (command line,
scenario file, output folder, unknown name); 3 no display for the viewer; 130 / 143 the
run was interrupted by SIGINT / SIGTERM (its summary is marked ``interrupted``).

With ``--json`` stdout carries exactly one JSON object, on success and on failure
(``{"error": ..., "type": ..., "exit_code": ...}``); progress and anything else a command
prints go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from rob_twin.cli.scale import add_commands as add_scale_commands
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import ROBOTS

QUALITY_CHOICES = (
    "auto",
    "fast",
    "full",
)  # rob_twin.twin.render.quality.CHOICES (mujoco-free here)

# A command registered with json_result=True returns its exit code and the one object
# main() prints under --json; other commands return an exit code and print for themselves.
CommandResult = tuple[int, dict]


class UsageError(RobTwinError):
    """A command line argparse refuses (unknown option, missing argument)."""


class _Parser(argparse.ArgumentParser):
    """Raises UsageError instead of exiting, so ``--json`` can report it as JSON."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def _input_errors() -> tuple[type[BaseException], ...]:
    """Errors that mean bad input (exit 2) rather than a failed run (exit 1)."""
    from rob_twin.models.names import UnknownNameError
    from rob_twin.planners.plan_file import PlanFileError
    from rob_twin.twin.bus.recording import RecordingError
    from rob_twin.twin.bus.timing import BusTimingConfigError
    from rob_twin.twin.scenario.run_folder import RunFolderError
    from rob_twin.twin.scenario.schema import ScenarioError

    return (
        UsageError,
        ScenarioError,
        RunFolderError,
        UnknownNameError,
        BusTimingConfigError,
        RecordingError,
        PlanFileError,
    )


def _say(args: argparse.Namespace) -> Callable[..., None]:
    """Human-readable lines: stdout normally, stderr under --json (stdout is the JSON)."""
    stream = sys.stderr if getattr(args, "json", False) else sys.stdout
    return lambda *parts: print(*parts, file=stream)


# --------------------------------------------------------------------------- experiment


def _cmd_experiment(args: argparse.Namespace) -> CommandResult:
    from rob_twin.experiments.registry import experiment_names, get_experiment

    if args.list or not args.name:
        names = experiment_names()
        if not args.json:
            print("\n".join(names))
        return 0, {"experiments": names}
    fn = get_experiment(args.name)
    result = fn(seed=args.seed)
    if not args.json:
        for key, value in result.items():
            if not isinstance(value, (list, dict)):
                print(f"{key}: {value}")
        print(f"(full result under out/experiments/{args.name}/)")
    return 0, result


# --------------------------------------------------------------------------- run / demo


def _bus_timing(args: argparse.Namespace):
    """The ``--bus`` option as a BusTimingConfig (None: off); typed error when malformed."""
    from rob_twin.twin.bus.timing import parse_bus_spec

    return parse_bus_spec(getattr(args, "bus", "off"))


def _bus_budget(args: argparse.Namespace):
    """The bus-budget gate's settings from ``--bus`` and ``--command-rate`` (worst-case
    stuffing unless the spec says otherwise)."""
    import dataclasses

    from rob_twin.twin.bus.budget import BusBudgetConfig
    from rob_twin.twin.bus.frame_bits import Stuffing
    from rob_twin.twin.bus.timing import BusTimingConfigError, parse_bus_spec

    bus = parse_bus_spec(args.bus)
    if bus is None:
        raise BusTimingConfigError("the bus budget needs a bus: --bus off is not valid here")
    bus = dataclasses.replace(
        bus, stuffing=Stuffing.EXACT if args.exact_stuffing else Stuffing.WORST
    )
    return BusBudgetConfig(bus=bus, command_rate_hz=args.command_rate)


def _run_and_report(
    sc, args: argparse.Namespace, hooks: dict | None = None, extra: Callable[[], dict] | None = None
) -> CommandResult:
    """Prepare the run folder (checked and marked ``running`` before anything runs), run
    ``sc`` with Ctrl-C / SIGTERM caught, write the summary; exit 1 on anything the
    scenario did not expect, 130/143 when interrupted. ``hooks``: keyword arguments of
    ``run_scenario`` (prelude, captions, on_planner); ``extra()``: further summary
    sections, asked for after the run."""
    from rob_twin.twin.bus.recording import check_format
    from rob_twin.twin.scenario.report import summarize
    from rob_twin.twin.scenario.run import run_scenario
    from rob_twin.twin.scenario.run_folder import RunFolder
    from rob_twin.twin.scenario.verdict import unexpected
    from rob_twin.twin.sim.interrupts import EXIT_CODES, stop_requests

    say = _say(args)
    bus = _bus_timing(args)  # bad --bus / --record-can: exit 2 before anything runs
    traffic = getattr(args, "record_can", None)
    if traffic:
        check_format(traffic)
    if getattr(args, "quality", None) is not None:
        import dataclasses

        sc = dataclasses.replace(sc, quality=args.quality)
    with stop_requests() as stop:  # from before the folder is marked running
        folder = RunFolder.prepare(
            args.out, sc.name, stale=(f"{sc.name}.mp4", "summary.md", "joints.png", "can")
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
                **(hooks or {}),
            )
            problems = unexpected(result, sc.expect) if result.status == "completed" else []
            summary = summarize(
                result,
                folder.path,
                problems,
                expect=sc.expect.model_dump(),
                extra=extra() if extra is not None else None,
            )
        except KeyboardInterrupt:  # a second Ctrl-C: out at once, the figures are lost
            folder.write_status(
                "interrupted",
                stopped_by="SIGINT (twice)",
                note="stopped at once; no figures were kept",
            )
            raise
        except Exception as err:
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
    if traffic:
        say(f"bus recording: {traffic} (+ .json sidecar; rob-twin replay {traffic})")
    say(f"simulated {summary['simulated_s']} s in {summary['wall_s']} s wall (hardware_io: false)")
    for line in problems:
        say(f"UNEXPECTED: {line}")
    return code, {**summary, "run_folder": str(folder.path), "exit_code": code}


def _cmd_demo(args: argparse.Namespace) -> CommandResult:
    """ROB: the crossing pair, separately planned (replayed, colliding) then planned
    together and executed (``rob_twin.twin.scenario.crossing_demo``); openarm: both arms through
    keyframes."""
    import dataclasses

    if args.robot != "rob":
        from rob_twin.twin.scenario.run import demo_scenario

        sc = dataclasses.replace(demo_scenario(), name=f"demo_{args.robot}", robot=args.robot)
        return _run_and_report(sc, args)
    from rob_twin.twin import crossing_demo as cd

    say = _say(args)
    say("planning each arm alone (the contrast) and judging it on a fresh model copy ...")
    contrast = cd.separate_contrast()
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
    sc = cd.crossing_demo_scenario()
    return _run_and_report(
        sc,
        args,
        hooks,
        extra=lambda: {"crossing": cd.demo_figures(contrast, planners[0] if planners else None)},
    )


def _cmd_run(args: argparse.Namespace) -> CommandResult:
    from rob_twin.twin.scenario.run import Scenario

    sc = Scenario.load(args.scenario)
    if args.robot is not None:
        import dataclasses

        sc = dataclasses.replace(sc, robot=args.robot)
    if args.check:
        _say(args)(
            f"{args.scenario}: valid scenario {sc.name!r} ({sc.duration} s, "
            f"{len(sc.keyframes)} keyframes, {len(sc.plans)} plan steps, {len(sc.faults)} faults)"
        )
        return 0, {"valid": True, "scenario": sc.name, "path": str(args.scenario)}
    return _run_and_report(sc, args)


# --------------------------------------------------------------------------- view


def _cmd_view(args: argparse.Namespace) -> int:
    from rob_twin.twin.viewer.keys import key_code
    from rob_twin.twin.viewer.session import NoDisplayError, view

    presses = []
    for item in args.press or ():
        at, _, name = item.partition(":")
        try:
            presses.append((float(at), key_code(name)))
        except ValueError:
            raise UsageError(f"--press {item!r}: expected SECONDS:KEY, e.g. 1.5:F8") from None
    try:
        return view(
            args.scenario,
            max_wall_s=args.seconds,
            presses=presses,
            screenshot=args.screenshot,
            report=args.report,
            quality=args.quality,
            max_sim_s=args.sim_seconds,
        )
    except NoDisplayError as err:
        print(f"rob-twin view: {err}", file=sys.stderr)
        return 3


# --------------------------------------------------------------------------- rehearse


def _cmd_rehearse(args: argparse.Namespace) -> CommandResult:
    import dataclasses

    from rob_twin.models.names import UnknownNameError
    from rob_twin.twin.rehearsal import RehearsalConfig, gates_for, rehearse, write_report
    from rob_twin.twin.scenario.run_folder import RunFolder
    from rob_twin.twin.scenario.schema import ScenarioError, validate_faults
    from rob_twin.twin.sim.closed_loop import ClosedLoopConfig
    from rob_twin.twin.sim.faults import FaultSpec

    try:
        raw = json.loads(args.faults) if args.faults else []
    except (json.JSONDecodeError, RecursionError) as err:
        raise ScenarioError(f"--faults is not valid JSON: {err}") from None
    faults = tuple(FaultSpec.from_model(f) for f in validate_faults(raw, "--faults"))
    if args.robot == "openarm":
        from rob_twin.twin.rehearsal.damiao import openarm_rehearsal_config
        from rob_twin.twin.sim.damiao_loop import openarm_config

        base = openarm_config(seed=args.seed, swap_wiring=args.swap_wiring, faults=faults)
        cfg = openarm_rehearsal_config(base)
    else:
        base = dataclasses.replace(
            ClosedLoopConfig(), seed=args.seed, swap_wiring=args.swap_wiring, faults=faults
        )
        cfg = RehearsalConfig(base=base)
    gates = gates_for(cfg)
    for gate in args.gate or ():
        if gate not in gates:
            raise UnknownNameError("gate", gate, list(gates))
    out = Path(args.out)
    RunFolder.check_writable(out)  # before the gates run, not after
    report = rehearse(
        dataclasses.replace(cfg, bus_budget=_bus_budget(args)),
        args.gate or None,
        progress=not args.json,
    )
    jp, mp = write_report(report, out)
    if not args.json:
        for g in report["gates"]:
            print(f"{'PASS' if g['passed'] else 'FAIL'}  {g['name']}")
            if not g["passed"] and g.get("detail"):
                print(f"      {g['detail']}")
        print(f"report: {mp} and {jp} (simulated; hardware_io: false)")
    return (0 if report["passed"] else 1), report


# --------------------------------------------------------------------------- bank / host / replay


def _channels(text: str | None, default: dict) -> dict:
    """'right=CAN10,left=CAN11' -> {'right': 'CAN10', 'left': 'CAN11'}."""
    if not text:
        return default
    out = {}
    for part in text.split(","):
        arm, sep, ch = part.partition("=")
        if not sep or not ch:
            raise ValueError(f"--channels wants ARM=CHANNEL[,ARM=CHANNEL], got {part!r}")
        out[arm.strip()] = ch.strip()
    return out


def _cmd_bank(args: argparse.Namespace) -> int:
    from rob_twin.models.names import BUS_MAPPING, Arm, UnknownNameError
    from rob_twin.twin.bus.bank_process import BankConfig, BankError, BankProcess
    from rob_twin.twin.bus.recording import RecordingError
    from rob_twin.twin.bus.socketcand import SocketcandError

    try:
        by_arm = _channels(args.channels, {a.value: BUS_MAPPING[a].channel for a in Arm})
        channels = {ch: Arm.parse(arm).value for arm, ch in by_arm.items()}
        cfg = BankConfig(
            interface=args.interface,
            channels=channels,
            host=args.host,
            port=args.port,
            control_port=args.control_port,
            feedback_rate_hz=args.feedback_rate,
            seed=args.seed,
            seconds=args.seconds,
            ready_file=args.ready_file,
            record_path=args.record_can,
            max_lag_s=args.max_lag,
        )
        final = BankProcess(cfg).run()
    except (BankError, SocketcandError, UnknownNameError, ValueError, RecordingError) as err:
        print(f"rob-twin bank: {err}", file=sys.stderr)
        return 2
    print(json.dumps({k: v for k, v in final.items() if k != "socketcand"}, default=str))
    return 0


def _cmd_host(args: argparse.Namespace) -> int:
    from rob_twin.models.names import BUS_MAPPING, Arm
    from rob_twin.twin.bus.host_process import HostConfig, HostError, run_host

    try:
        cfg = HostConfig(
            interface=args.interface,
            host=args.host,
            port=args.port,
            channels=_channels(args.channels, {a.value: BUS_MAPPING[a].channel for a in Arm}),
            arms=tuple(args.arm or ("right", "left")),
            seconds=args.seconds,
            stream=args.stream,
            stop_after_s=args.stop_after,
            ping_hz=args.ping_hz,
        )
        report = run_host(
            cfg, on_ready=lambda: print("host: streaming", file=sys.stderr, flush=True)
        )
    except (HostError, ValueError) as err:
        print(f"rob-twin host: {err}", file=sys.stderr)
        return 2
    print(json.dumps(report))
    return 0 if not any(a["fault"] for a in report["arms"].values()) else 1


def _play_onto(args: argparse.Namespace, rec) -> int:
    """Play the recording's host frames onto a live interface (a bank, a real bus)."""
    from rob_twin.twin.bus.host_process import HostConfig, HostError, close_bus, open_bus
    from rob_twin.twin.bus.recording import RecordingError
    from rob_twin.twin.bus.replay import play_onto

    numbers = sorted({f.bus for f in rec.frames})
    chans = _channels(args.channels, {str(n): f"CAN{n}" for n in numbers})
    buses = {}
    try:
        cfg = HostConfig(interface=args.onto, host=args.host, port=args.port)
        for n in numbers:
            buses[n] = open_bus(cfg, chans.get(str(n), f"CAN{n}"))
        sent = play_onto(rec, buses, speed=args.speed, deadline_s=args.seconds)
    except (HostError, RecordingError, ValueError) as err:
        print(f"rob-twin replay: {err}", file=sys.stderr)
        return 2
    finally:
        for bus in buses.values():
            close_bus(bus)
    onto = ", ".join(chans.get(str(n), f"CAN{n}") for n in numbers)
    print(f"played {sent} host frames onto {args.onto} ({onto})")
    return 0


def _cmd_replay(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rob_twin.twin.bus.recording import RecordingError
    from rob_twin.twin.bus.replay import read_recording, replay

    try:
        rec = read_recording(args.recording)
    except RecordingError as err:
        print(f"rob-twin replay: {err}", file=sys.stderr)
        return 2
    print(f"read {len(rec.frames)} frames from {rec.path}", file=sys.stderr)
    if args.onto:
        return _play_onto(args, rec)
    try:
        result = replay(rec, seconds=args.seconds)
    except RecordingError as err:
        print(f"rob-twin replay: {err}", file=sys.stderr)
        return 2
    summary = {
        "hardware_io": False,
        "evidence_class": "simulated",
        "recording": str(rec.path),
        **result.summary(),
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "replay.json").write_text(json.dumps(summary, indent=2) + "\n")
    np_path = out / "replay_qpos.npz"
    import numpy as np

    np.savez_compressed(np_path, times=result.times, qpos=result.qpos)
    for note in result.notes:
        print(f"note: {note}")
    print(
        f"replayed {result.frames_fed} host frames over {summary['simulated_s']} s simulated in "
        f"{summary['wall_s']} s wall; drive feedback {result.feedback_frames} frames, "
        f"{result.feedback_mismatches} differ from the recording"
    )
    print(f"report: {out / 'replay.json'}, trajectory: {np_path} (simulated; hardware_io: false)")
    return 0 if result.feedback_mismatches == 0 else 1


# --------------------------------------------------------------------------- certify


def _cmd_certify(args: argparse.Namespace) -> CommandResult:
    from rob_twin.models.loading import SCENE_PATH, load_scene
    from rob_twin.planners.certificate_check import verify_document
    from rob_twin.planners.plan_file import load_plan_file

    doc = load_plan_file(args.plan)
    model = load_scene(args.model or SCENE_PATH)
    report = verify_document(doc, model).as_dict()
    report["plan"] = str(args.plan)
    if not args.json:
        verdict = "AGREES" if report["ok"] else "DISAGREES"
        print(
            f"{verdict}: certified minimum {report['certified_min_m'] * 1e3:.3f} mm "
            f"({report['pair']}), {report['pairs_checked']} pairs, "
            f"{report['coal_queries']} coal queries"
        )
        for line in report["disagreements"]:
            print(f"  {line}")
    return (0 if report["ok"] else 1), report


# --------------------------------------------------------------------------- parser


def _cmd_teleop(args: argparse.Namespace) -> int:
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
            camera_hz=args.camera_hz,
            input_timeout_s=args.input_timeout,
        )
    except (ScenarioError, TeleopConfigError) as err:
        print(f"rob-twin teleop: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"rob-twin teleop: cannot serve on port {args.port}: {err}", file=sys.stderr)
        return 2


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rob-twin", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    exp = sub.add_parser("experiment", help="run a registered experiment")
    exp.add_argument("name", nargs="?", help="experiment name (omit to list)")
    exp.add_argument("--json", action="store_true", help="print exactly one JSON object")
    exp.add_argument("--seed", type=int, default=0)
    exp.add_argument("--list", action="store_true")
    exp.set_defaults(func=_cmd_experiment, json_result=True)
    demo = sub.add_parser(
        "demo", help="headless demo: ROB at the table moves both arms; video + summary"
    )
    demo.add_argument("--out", default="out", help="output folder (default out/)")
    demo.add_argument("--no-video", action="store_true")
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
        choices=ROBOTS,
        default="rob",
        help="rob: Amber position drives; openarm: Damiao MIT drives (gravity "
        "compensation at 500 Hz)",
    )
    demo.add_argument(
        "--bus",
        default="1M",
        help="simulated CAN bus: 1M (default, classic 1 Mbit/s), 500k, fd:1M/5M, off "
        "(frames arrive instantly); +worst for worst-case stuffing",
    )
    demo.add_argument(
        "--record-can",
        metavar="FILE",
        help="record all bus traffic to FILE "
        "(.log, .asc, .blf or .mf4; simulated timestamps) for rob-twin replay",
    )
    demo.set_defaults(func=_cmd_demo, json_result=True)
    run = sub.add_parser(
        "run",
        help="run a scenario file headless",
        description="Run a scenario file headless; outputs go to OUT/NAME/. "
        "Schema: experiments/scenarios/scenario.schema.json",
    )
    run.add_argument("scenario")
    run.add_argument("--out", default="out")
    run.add_argument("--no-video", action="store_true")
    run.add_argument(
        "--can-log", action="store_true", help="log all CAN traffic under OUT/NAME/can/"
    )
    run.add_argument("--check", action="store_true", help="only validate the scenario file")
    run.add_argument(
        "--json", action="store_true", help="print exactly one JSON object (the summary)"
    )
    run.add_argument("--robot", choices=ROBOTS, help="override the scenario's 'robot'")
    run.add_argument(
        "--bus",
        default="1M",
        help="simulated CAN bus: 1M (default, classic 1 Mbit/s), 500k, fd:1M/5M, off "
        "(frames arrive instantly); +worst for worst-case stuffing",
    )
    run.add_argument(
        "--record-can",
        metavar="FILE",
        help="record all bus traffic to FILE "
        "(.log, .asc, .blf or .mf4; simulated timestamps) for rob-twin replay",
    )
    run.add_argument(
        "--quality",
        choices=QUALITY_CHOICES,
        default=None,
        help="override the scenario's video render 'quality'",
    )
    run.set_defaults(func=_cmd_run, json_result=True)
    reh = sub.add_parser(
        "rehearse", help="pre-commissioning gates, simulated (exit 1 if any fails)"
    )
    reh.add_argument("--json", action="store_true", help="print exactly one JSON object")
    reh.add_argument(
        "--out", default="out/rehearsal", help="report folder (default out/rehearsal/)"
    )
    reh.add_argument("--gate", action="append", help="run only this gate (repeatable)")
    reh.add_argument("--seed", type=int, default=0)
    reh.add_argument(
        "--swap-wiring",
        action="store_true",
        help="rehearse a robot whose arm buses are swapped (the mapping gate must fail)",
    )
    reh.add_argument(
        "--faults",
        help="JSON list of faults applied to every gate, e.g. "
        '\'[{"kind": "wrong_sign", "arm": "right", "joints": [5]}]\'',
    )
    reh.add_argument(
        "--robot",
        choices=ROBOTS,
        default="rob",
        help="openarm: the Damiao profile (register agreement, enable sequence, "
        "gravity compensation, torque limit, CAN timeout, and the shared gates)",
    )
    reh.add_argument(
        "--bus",
        default="1M",
        help="bus of the bus_budget gate: 1M (default), 500k, "
        "250k, fd:1M/5M ... (worst-case stuffing)",
    )
    reh.add_argument(
        "--exact-stuffing",
        action="store_true",
        help="budget with the stuffing of typical payloads instead of the worst case",
    )
    reh.add_argument(
        "--command-rate",
        type=float,
        default=None,
        help="command streaming rate of the bus_budget gate [Hz] (default: the owners' 200 Hz)",
    )
    reh.set_defaults(func=_cmd_rehearse, json_result=True)
    rep = sub.add_parser(
        "replay",
        help="feed a bus recording as the host's commands into a fresh "
        "lockstep twin (exit 1 if the drives' feedback differs from the recording)",
    )
    rep.add_argument(
        "recording",
        help=".log, .asc, .blf or .mf4 (with its .json sidecar when written by rob-twin)",
    )
    rep.add_argument(
        "--seconds", type=float, default=None, help="replay only this much simulated time"
    )
    rep.add_argument("--out", default="out/replay", help="report folder (default out/replay/)")
    rep.add_argument(
        "--onto",
        metavar="INTERFACE",
        help="play the host frames onto a live python-can "
        "interface instead (socketcand: a running rob-twin bank; socketcan: vcan0 ...)",
    )
    rep.add_argument("--host", default="127.0.0.1", help="socketcand server for --onto")
    rep.add_argument("--port", type=int, default=29536, help="socketcand port for --onto")
    rep.add_argument("--channels", help="BUS=CHANNEL,... for --onto (default 10=CAN10,11=CAN11)")
    rep.add_argument("--speed", type=float, default=1.0, help="x real time for --onto")
    rep.set_defaults(func=_cmd_replay)
    bank = sub.add_parser(
        "bank",
        help="the simulated drives + MuJoCo in real time, served on named "
        "buses (socketcand on 127.0.0.1, or SocketCAN)",
    )
    bank.add_argument("--interface", default="socketcand", choices=("socketcand", "socketcan"))
    bank.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1 only)"
    )
    bank.add_argument("--port", type=int, default=29536, help="socketcand port (0: any free port)")
    bank.add_argument(
        "--control-port", type=int, default=0, help="JSON control port (0: any free port)"
    )
    bank.add_argument("--channels", help="ARM=CHANNEL,... (default right=CAN10,left=CAN11)")
    bank.add_argument("--feedback-rate", type=float, default=100.0, help="drive feedback rate [Hz]")
    bank.add_argument("--seed", type=int, default=0)
    bank.add_argument(
        "--seconds", type=float, default=None, help="stop after this long (default: until shutdown)"
    )
    bank.add_argument("--ready-file", help="write the bound ports here (JSON) once serving")
    bank.add_argument(
        "--max-lag",
        type=float,
        default=1.0,
        help="stop with an error when this many seconds behind real time (default 1)",
    )
    bank.add_argument(
        "--record-can",
        metavar="FILE",
        help="record all traffic the drives see and "
        "send (.log, .asc, .blf, .mf4; wall-clock timestamps)",
    )
    bank.set_defaults(func=_cmd_bank)
    host = sub.add_parser(
        "host",
        help="ROB's host stack (owners, codec, transport) against a bank "
        "over a real interface (exit 1 if an owner latched a fault)",
    )
    host.add_argument(
        "--interface", default="socketcand", help="python-can interface (default socketcand)"
    )
    host.add_argument("--host", default="127.0.0.1")
    host.add_argument("--port", type=int, default=29536)
    host.add_argument("--channels", help="ARM=CHANNEL,... (default right=CAN10,left=CAN11)")
    host.add_argument("--arm", action="append", help="drive only this arm (repeatable)")
    host.add_argument("--seconds", type=float, default=3.0)
    host.add_argument("--stream", default="wave", choices=("wave", "hold"))
    host.add_argument(
        "--stop-after", type=float, default=None, help="call Stop after this many seconds"
    )
    host.add_argument("--ping-hz", type=float, default=0.0, help="round-trip probes per second")
    host.set_defaults(func=_cmd_host)
    cert = sub.add_parser(
        "certify",
        help="re-verify a saved plan's clearance certificate with coal "
        "(exit 1 on any disagreement)",
    )
    cert.add_argument("plan", help="plan file (JSON, rob_twin.planners.plan_file)")
    cert.add_argument("--model", help="scene XML (default: the generated ROB scene)")
    cert.add_argument("--json", action="store_true", help="print exactly one JSON object")
    cert.set_defaults(func=_cmd_certify, json_result=True)
    view = sub.add_parser("view", help="interactive viewer paced in real time (needs a display)")
    view.add_argument("scenario", nargs="?")
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
    view.add_argument("--screenshot", help="PNG of the display taken just before closing")
    view.add_argument(
        "--report", help="write what the session did (owner modes, bus frames) as JSON"
    )
    view.set_defaults(func=_cmd_view)
    tele = sub.add_parser(
        "teleop",
        help="teleoperate both arms from a browser or WebXR headset "
        "(real-time closed loop + one server for page, websocket and telemetry)",
    )
    tele.add_argument(
        "scenario", nargs="?", help="scenario file: initial state and faults (default: demo)"
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
        "--seconds", type=float, default=float("inf"), help="stop after this many seconds"
    )
    tele.add_argument(
        "--no-viewer", action="store_true", help="headless even when a display exists"
    )
    tele.add_argument(
        "--camera-hz", type=float, default=2.0, help="head-camera JPEG rate for watchers (0: off)"
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
    add_scale_commands(sub)
    return parser


# --------------------------------------------------------------------------- main


def _error_payload(err: BaseException, code: int) -> dict:
    payload = {"error": str(err), "type": type(err).__name__, "exit_code": code}
    issues = getattr(err, "issues", None)
    if issues:
        payload["issues"] = [i.model_dump() for i in issues]
    return payload


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv
    stdout = sys.stdout
    try:
        args = build_parser().parse_args(argv)
        # a command that returns its result (json_result) prints nothing itself under
        # --json: stray prints (libraries, experiments) go to stderr, not into the object
        quiet = as_json and getattr(args, "json_result", False)
        with contextlib.redirect_stdout(sys.stderr) if quiet else contextlib.nullcontext():
            outcome = args.func(args)
        code, payload = outcome if isinstance(outcome, tuple) else (int(outcome or 0), None)
    except KeyboardInterrupt as err:
        code, payload = 130, _error_payload(err, 130) | {"error": "interrupted"}
        print("rob-twin: interrupted", file=sys.stderr)
    except Exception as err:
        code = 2 if isinstance(err, _input_errors()) else 1
        payload = _error_payload(err, code)
        if code == 1 and not isinstance(err, RobTwinError):
            traceback.print_exc(file=sys.stderr)
        print(f"rob-twin: {err}", file=sys.stderr)
    if as_json and payload is not None:
        print(json.dumps(payload, default=str), file=stdout, flush=True)
    return code


if __name__ == "__main__":
    raise SystemExit(main())

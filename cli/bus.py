"""``rob-twin replay``, ``bank`` and ``host``: the bus commands (a recording fed into a fresh
lockstep twin or onto a live interface; the simulated drives served in real time; ROB's host
stack against them)."""

from __future__ import annotations

import argparse
import json
import math
import sys

from rob_twin.cli.common import (
    CALIBRATION_HELP,
    ROBOT_HELP,
    CommandResult,
    calibration_arg,
    error_payload,
    robot_arg,
)
from rob_twin.models.names import DEFAULT_ROBOT


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


def _cmd_bank(args: argparse.Namespace) -> CommandResult:
    from rob_twin.models.names import Arm, UnknownNameError
    from rob_twin.twin.bus.bank_process import BankConfig, BankError, BankProcess
    from rob_twin.twin.bus.recording import RecordingError
    from rob_twin.twin.bus.socketcand import SocketcandError
    from rob_twin.twin.drives.amber_robot import robot_channels

    try:
        by_arm = _channels(args.channels, robot_channels(args.robot))
        channels = {ch: Arm.parse(arm).value for arm, ch in by_arm.items()}
        cfg = BankConfig(
            robot=args.robot.spec,
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
            calibration=calibration_arg(args.calibration, args.robot),
        )
        final = BankProcess(cfg).run()
    except (BankError, SocketcandError, UnknownNameError, ValueError, RecordingError) as err:
        # CalibrationError and MissingCapabilityError are ValueErrors: refused, exit 2, and
        # under --json the error object is stdout's one object (run_command prints it)
        print(f"rob-twin bank: {err}", file=sys.stderr)
        return 2, error_payload(err, 2)
    final = {k: v for k, v in final.items() if k != "socketcand"}
    if not args.json:
        print(_bank_summary(final))
    return 0, final


def _bank_summary(final: dict) -> str:
    """The bank's final status for people: time, lag, then one line per bus with its frame
    counts (the full object with ``--json``)."""
    lines = [
        f"bank: ran {final.get('sim_time_s', 0):.2f} s (simulated drives; hardware_io: false), "
        f"max lag {1000 * final.get('max_lag_s', 0):.1f} ms, "
        f"{len(final.get('faults') or [])} faults in force at the end"
    ]
    for channel, bus in (final.get("buses") or {}).items():
        counts = ", ".join(
            f"{k.replace('_', ' ')} {v}"
            for k, v in bus.items()
            if isinstance(v, int) and not isinstance(v, bool)
        )
        lines.append(f"  {channel} ({bus.get('arm')}): {counts}")
    return "\n".join(lines)


def _cmd_host(args: argparse.Namespace) -> CommandResult:
    from rob_twin.twin.bus.host_process import HostConfig, HostError, run_host

    try:
        cfg = HostConfig(
            **live_bus_fields(args, args.robot),
            robot=args.robot.spec,
            seconds=args.seconds,
            stream=args.stream,
            stop_after_s=args.stop_after,
            ping_hz=args.ping_hz,
            publish_deadline_s=args.publish_deadline,
            drive_timeout_s=args.drive_timeout or None,
            max_velocity_rad_s=args.max_velocity,
            rest_timeout_s=args.rest_timeout,
        )
        report = run_host(
            cfg, on_ready=lambda: print("host: streaming", file=sys.stderr, flush=True)
        )
    except (HostError, ValueError) as err:  # MissingCapabilityError is a ValueError
        print(f"rob-twin host: {err}", file=sys.stderr)
        return 2, {"error": str(err), "type": type(err).__name__, "exit_code": 2}
    if (line := host_end_line(report)) is not None:
        print(line, file=sys.stderr, flush=True)
    if not args.json:
        for line in host_summary(report):
            print(line)
    failed = report["ended"] != "seconds" or any(a["fault"] for a in report["arms"].values())
    return (1 if failed else 0), report


def host_end_line(report: dict) -> str | None:
    """The one stderr line of a host that stopped before its time (None: it ran its
    seconds): what happened, in the words of ``twin/bus/host_loss.py``: the host's own
    batch deadline missed, the bank lost (it stopped answering, or the connection closed),
    or the drives' bring-up failed."""
    ended, why = report["ended"], report["end_reason"]
    head = f"rob-twin host: stopped after {report['ended_at_s']:.2f} s: "
    if ended == "deadline_missed":
        loss = report.get("loss") or {}
        answering = bool(loss) and all(
            a["feedback_age_s"] is not None
            and a["feedback_timeout_s"] is not None
            and a["feedback_age_s"] <= a["feedback_timeout_s"]
            for a in loss.values()
        )
        bank = (
            f"the bank at {report['endpoint']} was still answering: the host was late, not "
            "the bank (a loaded machine; --publish-deadline S allows more)"
            if answering
            else f"the bank at {report['endpoint']} had stopped answering too"
        )
        return f"{head}missed its own batch deadline ({why}); {bank}"
    if ended == "bank_lost":
        return f"{head}lost the bank at {report['endpoint']} ({why})"
    if ended == "bring_up_failed":
        return f"rob-twin host: the drives' bring-up failed ({why})"
    return None


def _us(p: dict) -> str:
    if not p["n"]:
        return "none"
    return f"p50 {p['p50_us']:.0f} us, p99 {p['p99_us']:.0f} us, max {p['max_us']:.0f} us"


def host_summary(report: dict) -> list[str]:
    """The host report as a few human lines (``--json`` prints the report itself)."""
    stream = report["stream"]
    scale = report.get("wave_scale")
    if scale not in (None, 1.0):  # the full wave ran into something: a smaller or mirrored one
        stream += f" at {abs(scale):g} of its size{', mirrored' if scale < 0 else ''}"
    lines = [
        f"host: {report['ticks']} ticks at {report['rate_hz']:g} Hz ({stream}) against "
        f"{report['interface']} {report['endpoint']}; ended: {report['ended']} after "
        f"{report['ended_at_s']:.2f} s (simulated drives; hardware_io: false)"
    ]
    for arm, a in report["arms"].items():
        fault = f"FAULT {a['fault']}: {a['fault_reason']}" if a["fault"] else "no fault"
        travel = "-" if a["max_travel_rad"] is None else f"{a['max_travel_rad']:.3f} rad"
        lines.append(
            f"  {arm}: {a['mode']}, {fault}; {a['samples_published']} samples, "
            f"{a['frames_sent']} frames sent, {a['feedback_frames']} feedback frames, "
            f"max travel {travel}"
        )
        if "bring_up" in a:  # Damiao drives: how they were found and brought up
            b = a["bring_up"]
            states = ", ".join(sorted(set(a["start_status"])))
            lines.append(
                f"    drives found {states}"
                + (
                    f" (cleared errors on joints {a['cleared_errors']})"
                    if a["cleared_errors"]
                    else ""
                )
                + f", at rest after {a['waited_for_rest_s']:.2f} s; bring-up "
                + ("passed" if b["passed"] else f"FAILED: {b['reason']}")
            )
    lines.append(f"  tick jitter: {_us(report['tick_jitter'])}")
    if report["pings_sent"]:
        lines.append(
            f"  ping round trip ({report['pings_sent']} sent): {_us(report['ping_round_trip'])}"
        )
    if report["bus_log"]["records"]:
        lines.append(f"  python-can logged {report['bus_log']['records']} warning(s)")
    if "verdict" in report:
        lines.append(f"host: {report['verdict']}")
    return lines


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def _onto_is_simulated(args: argparse.Namespace, channels: list[str]) -> bool:
    """True when ``--onto`` reaches no hardware: python-can's ``virtual``, SocketCAN ``vcan``
    channels, or a socketcand server on this machine (a rob-twin bank)."""
    if args.onto == "virtual":
        return True
    if args.onto == "socketcan":
        return all(ch.startswith("vcan") for ch in channels)
    return args.onto == "socketcand" and args.host in LOOPBACK_HOSTS


def _play_onto(args: argparse.Namespace, rec) -> tuple[int, dict]:
    """Play the recording's host frames onto a live interface (a bank, a real bus)."""
    from rob_twin.twin.bus.host_process import HostConfig, HostError, close_bus, open_bus
    from rob_twin.twin.bus.recording import RecordingError
    from rob_twin.twin.bus.replay import check_robot_ids, play_onto

    numbers = sorted({f.bus for f in rec.frames})
    chans = _channels(args.channels, {str(n): f"CAN{n}" for n in numbers})
    names = [chans.get(str(n), f"CAN{n}") for n in numbers]
    buses = {}
    try:
        check_robot_ids(rec)
        cfg = HostConfig(interface=args.onto, host=args.host, port=args.port)
        for n, name in zip(numbers, names, strict=True):
            buses[n] = open_bus(cfg, name)
        sent = play_onto(rec, buses, speed=args.speed, deadline_s=args.seconds)
    except (HostError, RecordingError, ValueError) as err:
        print(f"rob-twin replay: {err}", file=sys.stderr)
        return 2, {"error": str(err), "type": type(err).__name__, "exit_code": 2}
    finally:
        for bus in buses.values():
            close_bus(bus)
    report = {
        "hardware_io": not _onto_is_simulated(args, names),
        "recording": str(rec.path),
        "mode": "onto",
        "onto": args.onto,
        "channels": {str(n): name for n, name in zip(numbers, names, strict=True)},
        "speed": args.speed,
        "frames_sent": sent,
    }
    path = _write_report(args.out, report)
    if not args.json:
        print(f"played {sent} host frames onto {args.onto} ({', '.join(names)})")
        print(f"report: {path}")
    return 0, report


def _write_report(folder: str, report: dict):
    from pathlib import Path

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "replay.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    return path


def _cmd_replay(args: argparse.Namespace) -> tuple[int, dict]:
    """Exit 2: the recording or an option is unreadable or invalid; 1: the replayed drives'
    feedback differs from the recording; 0: it replayed and agrees."""
    import numpy as np
    from rob_twin.models.robot import robot_of
    from rob_twin.twin.bus.recording import RecordingError
    from rob_twin.twin.bus.replay import ReplayConfig, read_recording, replay

    try:
        config = ReplayConfig(max_span_s=args.max_span)
        rec = read_recording(args.recording, config)
        print(f"read {len(rec.frames)} frames from {rec.path}", file=sys.stderr)
        if args.onto:
            return _play_onto(args, rec)
        robot = args.robot  # None: replay's own twin, the default robot's
        result = replay(rec, seconds=args.seconds, config=config, robot=robot)
    except (RecordingError, ValueError) as err:  # MissingCapabilityError is a ValueError
        print(f"rob-twin replay: {err}", file=sys.stderr)
        return 2, {"error": str(err), "type": type(err).__name__, "exit_code": 2}
    agrees = result.feedback_mismatches == 0
    summary = {
        "hardware_io": False,
        "evidence_class": "simulated",
        "recording": str(rec.path),
        "mode": "lockstep",
        "robot": robot_of(robot).identity(),  # None: the default robot
        "agrees": agrees,
        **result.summary(),
    }
    path = _write_report(args.out, summary)
    np_path = path.parent / "replay_qpos.npz"
    np.savez_compressed(np_path, times=result.times, qpos=result.qpos)
    summary["trajectory"] = str(np_path)
    if not args.json:
        for note in result.notes:
            print(f"note: {note}")
        print(
            f"replayed {result.frames_fed} host frames over {summary['simulated_s']} s "
            f"simulated in {summary['wall_s']} s wall; drive feedback "
            f"{result.feedback_frames} frames, {result.feedback_mismatches} differ from the "
            f"recording ({'agrees' if agrees else 'DISAGREES'})"
        )
        print(f"report: {path}, trajectory: {np_path} (simulated; hardware_io: false)")
    return (0 if agrees else 1), summary


def publish_deadline_arg(text: str) -> float:
    """``host --publish-deadline S``: seconds in (0, 1] (anything else refused, exit 2)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= 1.0:  # also refuses NaN
        raise argparse.ArgumentTypeError(
            f"--publish-deadline={text!r} is invalid; valid: seconds in (0, 1]"
        )
    return value


def add_live_bus_options(
    parser, verb: str, choices: tuple[str, ...] | None, note: str = ", opened read-only"
) -> None:
    """The options of a command on a live python-can bus (``host``, ``mirror``):
    ``--interface --host --port --channels --arm``; ``verb`` says what is done to an arm."""
    parser.add_argument(
        "--interface",
        default="socketcand",
        choices=choices,
        help=f"python-can interface{note} (default: %(default)s)",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="socketcand server address (default: %(default)s)"
    )
    parser.add_argument(
        "--port", type=int, default=29536, help="socketcand server port (default: %(default)s)"
    )
    parser.add_argument(
        "--channels",
        help="ARM=CHANNEL,... (default: the robot file's channels, right=CAN10,left=CAN11 on "
        "rob, right=can0,left=can1 on openarm)",
    )
    parser.add_argument(
        "--arm", action="append", help=f"{verb} only this arm, repeatable (default: both)"
    )


def live_bus_fields(args: argparse.Namespace, robot=None) -> dict:
    """The options of ``add_live_bus_options`` as config fields: interface, host, port,
    channels ({arm: channel}; default: ``robot``'s file, else the twin's mapping) and arms."""
    from rob_twin.models.names import BUS_MAPPING, Arm

    if robot is not None:
        from rob_twin.twin.drives.amber_robot import robot_channels

        default = robot_channels(robot)
    else:
        default = {a.value: BUS_MAPPING[a].channel for a in Arm}
    return {
        "interface": args.interface,
        "host": args.host,
        "port": args.port,
        "channels": _channels(args.channels, default),
        "arms": tuple(args.arm or ("right", "left")),
    }


def register(sub) -> None:
    """Add ``replay``, ``bank`` and ``host`` to the ``rob-twin`` sub-command parser ``sub``."""
    rep = sub.add_parser(
        "replay",
        help="feed a bus recording as the host's commands into a fresh lockstep twin, or "
        "play it onto a live interface (exit 2: unreadable or invalid input; 1: the drives' "
        "feedback differs from the recording; 0: it replayed and agrees)",
    )
    rep.add_argument(
        "recording",
        help=".log, .asc, .blf or .mf4 (with its .json sidecar when written by rob-twin)",
    )
    rep.add_argument(
        "--robot",
        type=robot_arg,
        default=None,
        help=f"{ROBOT_HELP}: the robot recorded, Amber drives (its model, drives and channels "
        f"replay it) (default: {DEFAULT_ROBOT})",
    )
    rep.add_argument(
        "--seconds",
        type=float,
        default=None,
        help="replay only this much simulated time [s], or with --onto this much recorded "
        "time (default: %(default)s, the whole recording)",
    )
    rep.add_argument(
        "--max-span",
        type=float,
        default=600.0,
        metavar="S",
        help="refuse a recording that spans more simulated time than this [s] unless "
        "--seconds cuts it (default: %(default)s)",
    )
    rep.add_argument(
        "--out",
        default="out/replay",
        help="report folder: replay.json, and replay_qpos.npz for a lockstep replay "
        "(default: %(default)s)",
    )
    rep.add_argument(
        "--json",
        action="store_true",
        help="print exactly one JSON object (the report) instead of the human lines "
        "(default: %(default)s)",
    )
    rep.add_argument(
        "--onto",
        metavar="INTERFACE",
        default=None,
        help="play the host frames onto a live python-can interface instead (socketcand: a "
        "running rob-twin bank; socketcan: vcan0 ...; virtual) (default: %(default)s, "
        "replay into a lockstep twin)",
    )
    rep.add_argument(
        "--host",
        default="127.0.0.1",
        help="socketcand server for --onto (default: %(default)s)",
    )
    rep.add_argument(
        "--port", type=int, default=29536, help="socketcand port for --onto (default: %(default)s)"
    )
    rep.add_argument(
        "--channels",
        default=None,
        help="BUS=CHANNEL,... for --onto (default: %(default)s, that is 10=CAN10,11=CAN11)",
    )
    rep.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help="pace for --onto, times real time (default: %(default)s)",
    )
    rep.set_defaults(func=_cmd_replay, json_result=True)
    bank = sub.add_parser(
        "bank",
        help="the simulated drives + MuJoCo in real time, served on named "
        "buses (socketcand on 127.0.0.1, or SocketCAN)",
        description="The simulated drives of the robot (Amber or Damiao) and MuJoCo paced in "
        "real time, served over socketcand (or SocketCAN); a JSON-lines control port takes "
        "status, fault, "
        "clear_faults and shutdown (docs/BANK_PROTOCOL.md). Frames on its bus carry Unix "
        "time (simulated; hardware_io: false).",
    )
    bank.add_argument(
        "--interface",
        default="socketcand",
        choices=("socketcand", "socketcan"),
        help="serve over TCP (socketcand) or open Linux SocketCAN interfaces "
        "(default: %(default)s)",
    )
    bank.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: %(default)s only)"
    )
    bank.add_argument(
        "--port",
        type=int,
        default=29536,
        help="socketcand port, 0: any free port (default: %(default)s)",
    )
    bank.add_argument(
        "--control-port",
        type=int,
        default=0,
        help="JSON control port, 0: any free port (default: %(default)s)",
    )
    bank.add_argument(
        "--channels",
        help="ARM=CHANNEL,... wiring of the arms to buses (default: the robot file's channels, "
        "right=CAN10,left=CAN11 on rob, right=can0,left=can1 on openarm)",
    )
    bank.add_argument(
        "--feedback-rate",
        type=float,
        default=100.0,
        help="Amber drive feedback rate [Hz]; Damiao drives answer each frame on receipt "
        "instead (default: %(default)s)",
    )
    bank.add_argument(
        "--seed", type=int, default=0, help="the twin's random seed (default: %(default)s)"
    )
    bank.add_argument(
        "--seconds",
        type=float,
        default=None,
        help="stop after this many seconds (default: run until a shutdown command)",
    )
    bank.add_argument(
        "--ready-file", help="write the bound ports here (JSON) once serving (default: none)"
    )
    bank.add_argument(
        "--max-lag",
        type=float,
        default=1.0,
        help="stop with an error when this many seconds behind real time (default: %(default)s)",
    )
    bank.add_argument(
        "--record-can",
        metavar="FILE",
        help="record all traffic the drives see and send (.log, .asc, .blf, .mf4; Unix-time "
        "stamps) (default: none)",
    )
    bank.add_argument(
        "--json",
        action="store_true",
        help="print the final status as one JSON object instead of the human summary",
    )
    bank.add_argument("--calibration", metavar="FILE", help=CALIBRATION_HELP)
    bank.add_argument(
        "--robot",
        type=robot_arg,
        default=DEFAULT_ROBOT,
        help=f"{ROBOT_HELP}; Amber drives (periodic feedback) or Damiao drives (every frame "
        "answered on receipt; CAN FD on SocketCAN where the file's drives.bus says fd); "
        "without --channels, its file's channels (default: %(default)s)",
    )
    bank.set_defaults(func=_cmd_bank, json_result=True)
    host = sub.add_parser(
        "host",
        help="the project's host stack (owners, codec, transport) against a bank "
        "over a real interface (exit 1 if an owner latched a fault, the drives' bring-up "
        "failed or the bank was lost)",
        description="The project's host stack on a python-can interface, against a running "
        "rob-twin bank or real drives: owners, codec and CanTransport for Amber drives; "
        "owners and DamiaoTransport for Damiao drives (started from the drives' replies to "
        "register refreshes, brought up as the in-process loop does: registers checked, "
        "enabled holding the measured pose, gravity feed-forward from the robot's model; "
        "disabled at the end). Stops by itself, with one line on stderr and exit 1, when "
        "every owner latched a loss of bus or feedback. The last line is the verdict.",
    )
    add_live_bus_options(host, "drive", choices=None, note="")
    host.add_argument(
        "--seconds", type=float, default=3.0, help="run length [s] (default: %(default)s)"
    )
    host.add_argument(
        "--stream",
        default="wave",
        choices=("wave", "hold", "home"),
        help="targets: wave (a smooth motion around the start, checked first on the robot's "
        "own model: where it would drive a link into the robot, the other arm or the floor, "
        "as from the limp pose a Damiao bank starts in, the wave mirrored, then at half and a "
        "quarter of its size is taken, and when all run into something it is refused with "
        "exit 2 before any drive is enabled), hold (the start pose) or home (the robot "
        "file's home pose, reached and held) (default: %(default)s)",
    )
    host.add_argument(
        "--max-velocity",
        type=float,
        default=None,
        metavar="RAD_S",
        help="the owners' speed limit on every joint [rad/s] (default: the twin's owner "
        "limits, 1 rad/s)",
    )
    host.add_argument(
        "--drive-timeout",
        type=float,
        default=0.25,
        metavar="S",
        help="Damiao drives: the CAN watchdog written at bring-up [s], 0: leave the drives' "
        "own (default: %(default)s)",
    )
    host.add_argument(
        "--rest-timeout",
        type=float,
        default=5.0,
        metavar="S",
        help="Damiao drives: how long to wait for arms that hang limp (their drives disabled) "
        "to come to rest before enabling them [s], in [0, 60]; 0: do not wait "
        "(default: %(default)s)",
    )
    host.add_argument(
        "--stop-after",
        type=float,
        default=None,
        help="call Stop after this many seconds (default: never)",
    )
    host.add_argument(
        "--publish-deadline",
        type=publish_deadline_arg,
        default=0.02,
        metavar="S",
        help="a sample's frames (one per joint) must be written within this, else the owner "
        "latches uncertain_output [s], in (0, 1]; a loaded desktop needs more than a "
        "real-time host (default: %(default)s)",
    )
    host.add_argument(
        "--ping-hz",
        type=float,
        default=0.0,
        help="round-trip probes per second, 0: none (default: %(default)s)",
    )
    host.add_argument(
        "--json", action="store_true", help="print the report as one JSON object on stdout"
    )
    host.add_argument(
        "--robot",
        type=robot_arg,
        default=DEFAULT_ROBOT,
        help=f"{ROBOT_HELP}; Amber or Damiao drives (its owners' and codec's bounds are its "
        "joint ranges; without --channels, its file's channels) (default: %(default)s)",
    )
    host.set_defaults(func=_cmd_host, json_result=True)

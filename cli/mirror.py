"""``rob-twin mirror``: listen (never transmit) on a live bus and run the twin beside the real
arm, fed the real host's commands; an alarm when a joint leaves the twin's prediction."""

from __future__ import annotations

import argparse
import contextlib
import sys

from rob_twin.cli.bus import add_live_bus_options, live_bus_fields
from rob_twin.cli.common import ROBOT_HELP, CommandResult, robot_arg
from rob_twin.models.names import DEFAULT_ROBOT
from rob_twin.twin.bus.mirror_alarm import ALARM_KINDS, CLI_ALARM, AlarmConfig

_ALARM = AlarmConfig()


def _cmd_mirror(args: argparse.Namespace) -> CommandResult:
    """Exit 0: no alarm; 1: an alarm (or the bus was lost, or the mirror fell behind);
    2: bad input (an option, an unreachable bus, no feedback)."""
    from rob_twin.models.names import UnknownNameError
    from rob_twin.twin.bus.host_process import HostError
    from rob_twin.twin.bus.mirror_alarm import AlarmConfig, MirrorInputError
    from rob_twin.twin.bus.mirror_live import MirrorConfig, MirrorLagError, run_mirror

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    def alarm(a) -> None:
        say(f"mirror: {a.text()}")

    view = _View(args.screenshot) if args.view else None
    if view is not None:
        from rob_twin.twin.viewer.session import NoDisplayError, require_display

        try:
            require_display()
        except NoDisplayError as err:
            print(f"rob-twin mirror: {err}", file=sys.stderr)
            return 3, {"error": str(err), "type": type(err).__name__, "exit_code": 3}
    try:
        cfg = MirrorConfig(
            **live_bus_fields(args, args.robot),
            seconds=args.seconds,
            tolerance_rad=args.tolerance_rad,
            status_every_s=args.status_every,
            telemetry_hz=args.telemetry_hz,
            startup_feedback_timeout_s=args.startup_timeout,
            max_lag_s=args.max_lag,
            robot=args.robot.spec,
            bank_control_port=args.bank_control_port,
            alarm=AlarmConfig(
                kind=args.alarm,
                window_s=args.window_s,
                factor=args.alarm_factor,
                floor_s=args.floor_s,
                min_rad=args.alarm_min_rad,
            ),
        )
        with (
            open(args.telemetry, "w", encoding="utf-8")  # noqa: SIM115 - closed by the stack
            if args.telemetry
            else contextlib.nullcontext()
        ) as telemetry:
            summary = run_mirror(
                cfg,
                _parameters(args.calibration, args.robot),
                on_status=say,
                on_alarm=alarm,
                on_ready=say,
                telemetry=telemetry,
                on_tick=view.update if view else None,
            )
    except (MirrorInputError, HostError, UnknownNameError, ValueError, OSError) as err:
        print(f"rob-twin mirror: {err}", file=sys.stderr)
        return 2, {"error": str(err), "type": type(err).__name__, "exit_code": 2}
    except MirrorLagError as err:
        print(f"rob-twin mirror: {err}", file=sys.stderr)
        return 1, {"error": str(err), "type": type(err).__name__, "exit_code": 1}
    finally:
        if view is not None:
            view.close()
    if view is not None:
        summary["view"] = view.report()
    if not args.json:
        for line in mirror_summary(summary):
            print(line)
    failed = bool(summary["alarms"]) or summary["ended"] != "seconds"
    return (1 if failed else 0), summary


def _ms(p: dict) -> str:
    if not p["n"]:
        return "none"
    return f"p50 {p['p50_us'] / 1000:.1f} ms, max {p['max_us'] / 1000:.1f} ms"


def mirror_summary(s: dict) -> list[str]:
    """The summary as a few human lines (``--json`` prints the summary itself)."""
    lines = [
        f"mirror: {s['seconds']:.1f} s on {s['interface']} "
        f"{s['endpoint'] or ''} ({', '.join(f'{c} {a}' for a, c in s['channels'].items())}); "
        f"{s['frames_handled']} frames, {s['commands_fed']} host commands fed to the twin, "
        f"{s['send_attempts']} send attempts; parameters {s['parameters']} "
        "(simulated twin; hardware_io: false)"
    ]
    for arm, a in s["arms"].items():
        worst = max(range(len(a["max_abs_diff_rad"])), key=a["max_abs_diff_rad"].__getitem__)
        lines.append(
            f"  {arm}: max |real - twin| {a['max_abs_diff_rad'][worst]:.4f} rad (J{worst + 1}), "
            f"RMS {max(a['rms_diff_rad']):.4f} rad at worst, "
            f"{sum(a['feedback_frames'])} feedback frames"
        )
    alarm = s.get("alarm") or {"kind": "max"}
    if alarm["kind"] == "rms":
        for arm, a in s["arms"].items():
            floors = [f for f in a.get("floor_rms_rad", []) if f is not None]
            rms = [r for r in a.get("max_window_rms_rad", []) if r is not None]
            if floors:
                lines.append(
                    f"  {arm}: start-up floor (RMS, first {alarm['floor_s']:g} s) up to "
                    f"{max(floors):.4f} rad, RMS over {alarm['window_s']:g} s up to "
                    f"{max(rms, default=0.0):.4f} rad, threshold "
                    f"max({alarm['factor']:g} x floor, {alarm['min_rad']:g} rad)"
                )
            else:
                lines.append(f"  {arm}: the run ended before the start-up floor was measured")
    lag = s.get("bank_lag") or {}
    if lag.get("observable"):
        lines.append(
            f"  simulated bank's lag: up to {1000 * lag['max_lag_seen_s']:.1f} ms; "
            f"{lag['excluded_for_bank_lag_s']:.2f} s of bus time left out of the alarm "
            f"statistic (beyond {1000 * lag['threshold_s']:g} ms, plus {lag['settle_s']:g} s), "
            f"{lag['excluded_samples']} replies; {lag['judged_without_lag_knowledge_samples']} "
            "replies judged with the bank's lag unknown"
        )
    if s["alarms"]:
        lines.append(
            f"  {len(s['alarms'])} ALARM(S): " + ", ".join(_alarm_words(a) for a in s["alarms"])
        )
        lines.append(
            f"  alarm latency from the frame's arrival: {_ms(s['alarm_latency_from_arrival'])}"
        )
    elif alarm["kind"] == "rms":
        lines.append(f"  no alarm (windowed RMS; gross tolerance {s['tolerance_rad']:g} rad)")
    else:
        lines.append(f"  no alarm (tolerance {s['tolerance_rad']:g} rad)")
    if s["ended"] != "seconds":
        lines.append(f"  ended early: {s['ended']} ({s['end_reason']})")
    return lines


def _alarm_words(a: dict) -> str:
    if a.get("statistic") == "rms":
        return (
            f"{a['arm']} J{a['joint']} RMS {a['rms_rad']:.4f} rad beyond "
            f"{a['tolerance_rad']:.4f} rad"
        )
    return f"{a['arm']} J{a['joint']} {a['diff_rad']:+.4f} rad beyond {a['tolerance_rad']:g} rad"


class _View:
    """``--view``: the 3-D view, opened on the first tick (the mirror's twin exists then)."""

    def __init__(self, screenshot: str | None):
        self.screenshot, self.view, self.shot = screenshot, None, None

    def update(self, mirror) -> None:
        if self.view is None:
            from rob_twin.twin.viewer.mirror_view import MirrorView

            self.view = MirrorView(mirror, self.screenshot)
        self.view.update()

    def close(self) -> None:
        if self.view is not None:
            self.shot = self.view.close()

    def report(self) -> dict:
        v = self.view
        return {
            "frames": v.frames if v else 0,
            "ghost_geoms": v.ghost_geoms if v else 0,
            "screenshot": self.shot,
        }


def _parameters(path: str | None, robot):
    """The mirror twin's parameters: ``robot``'s model and its drives (Amber: the robot's
    drive configs; Damiao: the bank's drives of the robot file's motors and friction; either
    with the calibration file at ``path`` when given); CalibrationError (exit 2) for a file
    fitted on another model or naming another drive family's parameters,
    MissingCapabilityError (exit 2) for a robot without CAN drives."""
    from rob_twin.cli.common import calibration_arg
    from rob_twin.models.robot import CAN_DRIVES
    from rob_twin.twin.bus.mirror import TwinParameters
    from rob_twin.twin.calibration.apply import (
        calibrated_delays,
        calibrated_drives,
        calibrated_model,
    )
    from rob_twin.twin.drives.amber_robot import amber_drive_configs

    robot.require(CAN_DRIVES, "rob-twin mirror (it reads Amber and Damiao buses)")
    calibration = calibration_arg(path, robot)
    amber = robot.family == "amber"  # Damiao drives take their values from ``values``
    if calibration is None:
        return TwinParameters(
            model=robot.model(), drive_configs=amber_drive_configs(robot) if amber else None
        )
    return TwinParameters(
        name=f"{calibration.name} ({calibration.file_sha256[:16]})",
        model=calibrated_model(calibration, robot.model()),
        drive_configs=calibrated_drives(calibration, robot) if amber else None,
        delays=calibrated_delays(calibration),
        values=dict(calibration.values),
    )


def register(sub) -> None:
    """Add ``mirror`` to the ``rob-twin`` sub-command parser ``sub``."""
    mir = sub.add_parser(
        "mirror",
        help="listen (never transmit) on a live bus, run the twin fed the real host's "
        "commands beside the real arm, alarm on divergence (exit 1: alarm; 2: bad input)",
        description="Listen, never transmit, on a live bus (socketcand or SocketCAN, the "
        "options of `rob-twin host`): the real host's commands drive a lockstep twin at "
        "their bus time, each drive feedback frame is compared with the twin's joint at "
        "the same time, and a joint alarms (stderr, telemetry, summary), once. --alarm rms "
        "(the default): the RMS of real - twin over the last --window-s seconds of bus time "
        "(a sliding window, per joint) beyond max(--alarm-factor x the joint's jitter floor, "
        "--alarm-min-rad), the floor being that joint's RMS over the first --floor-s "
        "seconds after the twin starts (measured at start-up: start the mirror with the "
        "arms at rest or in their usual motion under parameters you trust; no RMS alarm "
        "before then), or any one frame beyond --tolerance-rad (a gross limit). A single "
        "late frame of a moving joint on a loaded machine shows 10-15 mrad with the same "
        "parameters on both sides; a one-second RMS hardly moves for it, while a misfit "
        "that persists moves it by its own size. --alarm max: the old alarm, any one frame "
        "beyond --tolerance-rad. A calibration's transport delays apply (the host's frames "
        "reach the twin's drives the command delay after their stamp; each reply is "
        "compared with the twin the feedback delay before its stamp). A status line every "
        "--status-every seconds on stderr. Exit 0: no alarm; 1: an alarm, a lost bus or a "
        "mirror too slow to stay live; 2: bad input or no bus.",
    )
    mir.add_argument(
        "--max-lag",
        type=float,
        default=1.0,
        metavar="S",
        help="stop (exit 1) when the mirror falls this many seconds behind the bus",
    )
    mir.add_argument(
        "--bank-control-port",
        type=int,
        default=None,
        metavar="PORT",
        help="beside a simulated rob-twin bank: its control port (the bank's banner and "
        "ready file name it). The mirror asks it for status every 0.05 s and leaves out of "
        "the alarm statistic the replies stamped while the bank's physics lagged the wall "
        "clock by more than 5 ms, and 0.2 s after (a loaded machine's bank shows the arm "
        "some ms late: not the arm's fault), counted in the summary's bank_lag; alarms then "
        "come up to one poll later. Exit 2 when the port does not answer like a bank "
        "(default: none, for a real bus: every reply judged, bank_lag not observable)",
    )
    mir.add_argument(
        "--view",
        action="store_true",
        help="open a 3-D view: the twin's prediction solid, the real arm as a ghost (red: a "
        "joint in alarm); needs a display (exit 3 without one)",
    )
    mir.add_argument(
        "--screenshot", metavar="PNG", help="with --view: save the window when the mirror ends"
    )
    mir.add_argument(
        "--calibration",
        metavar="FILE",
        help="run the mirror's twin with this calibration's model and drive parameters "
        "(rob-twin calibrate; Amber drives only; default: the twin's assumed ones, reported "
        "as uncalibrated)",
    )
    add_live_bus_options(mir, "mirror", choices=("socketcand", "socketcan"))
    mir.add_argument(
        "--robot",
        type=robot_arg,
        default=DEFAULT_ROBOT,
        help=f"{ROBOT_HELP}; Amber or Damiao drives: its family's ids, reply decoding and "
        "joint count (without --channels, its file's channels) (default: %(default)s)",
    )
    mir.add_argument(
        "--seconds", type=float, default=10.0, help="run length [s] (default: %(default)s)"
    )
    mir.add_argument(
        "--tolerance-rad",
        type=float,
        default=0.05,
        help="alarm when a joint's real position and the twin's differ by more in any one "
        "frame [rad]: the max alarm, and the rms alarm's gross limit (default: %(default)s)",
    )
    mir.add_argument(
        "--alarm",
        choices=ALARM_KINDS,
        default=CLI_ALARM,
        help="rms: the windowed RMS against the start-up jitter floor (and --tolerance-rad "
        "as a gross limit); max: any one frame beyond --tolerance-rad (default: %(default)s)",
    )
    mir.add_argument(
        "--window-s",
        type=float,
        default=_ALARM.window_s,
        metavar="S",
        help="--alarm rms: the sliding window of bus time the RMS is over [s] "
        "(default: %(default)s)",
    )
    mir.add_argument(
        "--floor-s",
        type=float,
        default=_ALARM.floor_s,
        metavar="S",
        help="--alarm rms: the jitter floor is each joint's RMS over the first S seconds of "
        "bus time after the twin starts; no RMS alarm before (default: %(default)s)",
    )
    mir.add_argument(
        "--alarm-factor",
        type=float,
        default=_ALARM.factor,
        metavar="K",
        help="--alarm rms: alarm when the windowed RMS exceeds K x the joint's floor "
        "(default: %(default)s)",
    )
    mir.add_argument(
        "--alarm-min-rad",
        type=float,
        default=_ALARM.min_rad,
        metavar="R",
        help="--alarm rms: the least RMS threshold [rad], for a floor measured at rest "
        "(default: %(default)s)",
    )
    mir.add_argument(
        "--status-every",
        type=float,
        default=1.0,
        metavar="S",
        help="a status line on stderr every S seconds (default: %(default)s)",
    )
    mir.add_argument(
        "--telemetry",
        metavar="FILE",
        help="write JSON-lines telemetry here: samples of real, twin and difference per "
        "joint, alarms, the summary last (default: none)",
    )
    mir.add_argument(
        "--telemetry-hz",
        type=float,
        default=20.0,
        help="telemetry samples per second (default: %(default)s)",
    )
    mir.add_argument(
        "--startup-timeout",
        type=float,
        default=3.0,
        metavar="S",
        help="wait this long for feedback from every joint before giving up (default: %(default)s)",
    )
    mir.add_argument(
        "--json",
        action="store_true",
        help="print the summary as one JSON object on stdout at the end (status and alarms "
        "stay on stderr)",
    )
    mir.set_defaults(func=_cmd_mirror, json_result=True)

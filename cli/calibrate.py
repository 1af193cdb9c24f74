"""``rob-twin calibrate``: fit the twin to recordings of the robot (``rob_twin.twin.calibration``).

``--robot`` names the robot recorded (a shipped robot or a robot file with Amber or Damiao drives);
the calibration file names it (its ``robot`` field) and only that robot's model takes it.

Exit 0 with the calibration file written; 2 for bad input (a robot without CAN drives,
an unreadable, truncated or foreign recording, an unknown parameter, a start calibration
for another model, recordings that excite none of the selected parameters, a torque
constant alone without ``--current-weight``: nothing is written); 4 when the fit is
flagged as a misfit: the calibration file and report are written, with the warnings under
``misfit`` (a value on its bound, an interval leaving its bounds, a residual more than 10x
the recording's quantisation floor, residual structure the fit cannot explain; see
``rob_twin.twin.calibration.fit``), and printed; ``--accept-misfit`` exits 0 for it.

Intervals are 95 % and cover (``rob_twin.twin.calibration.fit``: a sandwich covariance
for correlated residuals, no narrower than the quantisation floor, in log space for
positive kinds, inside the bounds; 234 of 240 truths inside on correctly specified
synthetic draws, ``python -m rob_twin.twin.calibration.coverage``). Torque constants
(``amps_per_nm``) show only in the drives' current: fit them with ``--current-weight W``
(rad per drive unit; 0, the default, fits positions only and holds them).
``--replay-noise auto`` replays every rollout with the drive noise measured in the
recording's currents (``rob_twin.twin.calibration.drive_noise``; where they cannot show it,
Damiao drives' assumed 0.02 N m on each motor torque, said so), positions only; the
intervals then also take the estimate's spread over the replay's own noise (three other
realisations, ``fit.realisation_spread``)."""

from __future__ import annotations

import argparse
import sys

from rob_twin.cli.common import (
    ROBOT_HELP,
    CommandResult,
    UsageError,
    calibration_arg,
    robot_arg,
)
from rob_twin.models.names import DEFAULT_ROBOT

MISFIT_EXIT = 4  # the fit is written, flagged as a misfit (--accept-misfit: 0)
DEFAULT_FIT = {  # per drive family
    "amber": ("armature", "damping", "frictionloss", "command_delay_s", "payload_kg"),
    "damiao": ("armature", "friction_fv", "friction_fc", "command_delay_s", "payload_kg"),
}


def _cmd_calibrate(args: argparse.Namespace) -> CommandResult:
    from rob_twin.models.robot import CAN_DRIVES
    from rob_twin.twin.calibration.calibrate import calibrate
    from rob_twin.twin.calibration.drive_noise import describe_noise
    from rob_twin.twin.calibration.fit import FitConfig

    robot = args.robot
    robot.require(CAN_DRIVES, "rob-twin calibrate (it fits drive parameters)")
    if args.replay_noise != 0.0 and args.current_weight > 0:
        raise UsageError(
            f"rob-twin calibrate: --replay-noise {args.replay_noise} with --current-weight "
            f"{args.current_weight}: valid: --replay-noise off when currents are weighed (a "
            "noisy replay's currents pull a torque constant toward zero)"
        )
    start = calibration_arg(args.start, robot)
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    report = calibrate(
        args.recordings,
        args.fit or list(DEFAULT_FIT[robot.family]),
        args.out,
        validate=args.validate or [],
        name=args.name,
        start=start,
        config=FitConfig(
            max_iters=args.max_iters, seconds=args.seconds, current_weight=args.current_weight
        ),
        progress=progress,
        robot=robot,
        replay_noise=args.replay_noise,
    )
    if not args.json:
        print(
            f"calibration of robot {robot.name} ({robot.spec}, model {robot.model_hash}) "
            f"written: {report['calibration']} (simulated fit; hardware_io: false)"
        )
        print(f"{'parameter':28} {'value':>12} {'start':>12}  95 % interval")
        for name, p in report["parameters"].items():
            ci = p["interval"]
            span = f"[{ci[0]:.4g}, {ci[1]:.4g}]" if ci else "not identifiable"
            print(f"{name:28} {p['value']:12.5g} {p['nominal']:12.5g}  {span} {p['unit']}")
        res = report["residuals"]
        for role in res["rms_before_rad"]:
            b, a = res["rms_before_rad"][role], res["rms_after_rad"][role]
            worst_b, worst_a = max(b.values()), max(a.values())
            print(
                f"{role}: worst joint RMS {1000 * worst_b:.3f} -> {1000 * worst_a:.3f} mrad "
                f"(mean {1000 * sum(b.values()) / len(b):.3f} -> "
                f"{1000 * sum(a.values()) / len(a):.3f} mrad)"
            )
        if report["not_identifiable"]:
            print(
                "not identifiable from these recordings: " + ", ".join(report["not_identifiable"])
            )
        noise = report["fit"]["replay_noise_rad"]
        estimate = report["fit"]["drive_noise_estimate"]
        if noise > 0:
            how = (
                "given"
                if not estimate
                else "measured in the currents"
                if estimate.get("measured", True)
                else "assumed: not measurable in the currents"
            )
            level = describe_noise(noise, robot)
            print(f"rollouts replayed with drive noise of {level} ({how})")
        elif estimate:
            print(f"rollouts replayed noiseless: the drive noise is {estimate['reason']}")
        for c in report["contacts"][:3]:
            print(
                f"contact in the replay: {c['pair']} in {100 * c['share']:.0f} % of the samples "
                f"from t={c['first_s']:.2f} s: the fit is partly a fit of the contact"
            )
        if report["not_weighed"]:
            print(
                "not fitted (seen only in currents; --current-weight): "
                + ", ".join(report["not_weighed"])
            )
        if report["plot"]:
            print(f"plot: {report['plot']}")
    if report["misfit"]:
        accepted = "accepted (--accept-misfit)" if args.accept_misfit else f"exit {MISFIT_EXIT}"
        for w in report["misfit"]:
            print(f"MISFIT {w['rule']}: {w['message']}", file=sys.stderr)
        print(
            f"rob-twin calibrate: the fit is flagged as a misfit ({len(report['misfit'])} "
            f"warning(s), in {report['calibration']}): {accepted}",
            file=sys.stderr,
        )
        if not args.accept_misfit:
            return MISFIT_EXIT, report
    return 0, report


def _replay_noise(text: str) -> float | str:
    """``--replay-noise``'s value: "auto", "off" (0.0) or a std [rad] in 0..0.05."""
    from rob_twin.twin.calibration.fit import MAX_REPLAY_NOISE_RAD

    if text == "auto":
        return "auto"
    if text == "off":
        return 0.0
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= MAX_REPLAY_NOISE_RAD:  # NaN fails too
        raise argparse.ArgumentTypeError(
            f"{text!r}: give auto, off or a std in 0..{MAX_REPLAY_NOISE_RAD} (rad on a servo "
            "target; N m on a Damiao motor torque)"
        )
    return value


def register(sub) -> None:
    """Add ``calibrate`` to the ``rob-twin`` sub-command parser ``sub``."""
    cal = sub.add_parser(
        "calibrate",
        help="fit the twin's parameters to bus recordings of the robot (mujoco.sysid)",
        description=__doc__,
    )
    cal.add_argument(
        "recordings",
        nargs="+",
        help="bus recordings to fit (.log/.asc/.blf/.mf4 with commands and drive feedback)",
    )
    cal.add_argument("--out", default="calibration.json", help="calibration file to write")
    cal.add_argument(
        "--fit",
        action="append",
        metavar="PATTERN",
        help="parameters to fit, repeatable: a kind (damping), a name (right/j2/damping) or a "
        "glob (right/j*/armature); default: "
        + "; ".join(f"{family} drives: {', '.join(k)}" for family, k in DEFAULT_FIT.items()),
    )
    cal.add_argument(
        "--validate",
        action="append",
        metavar="RECORDING",
        help="a recording scored before and after but never fitted (repeatable)",
    )
    cal.add_argument("--name", help="the calibration's name (default: the --out file's stem)")
    cal.add_argument(
        "--start", metavar="CALIBRATION", help="start from this calibration file's values"
    )
    cal.add_argument("--max-iters", type=int, default=12, help="solver iterations")
    cal.add_argument(
        "--current-weight",
        type=float,
        default=0.0,
        metavar="W",
        help="weight of current errors in the fit [rad per drive unit]; > 0 fits torque "
        "constants (amps_per_nm), e.g. 0.03 (a current step of 1/256 unit then weighs about "
        "a position count); default 0: positions only",
    )
    cal.add_argument(
        "--replay-noise",
        type=_replay_noise,
        default=0.0,
        metavar="auto|off|STD",
        help="replay every rollout with drive noise on the servo targets (Amber) or motor "
        "torques (Damiao): 'auto' measures its std in the first recording's current feedback "
        "(rob_twin.twin.calibration.drive_noise; Damiao drives' assumed 0.02 N m where the "
        "currents cannot show it), STD gives it [rad or N m, 0..0.05]; positions only (not with "
        "--current-weight); default off. Simulated, ROB: a noiseless replay fits friction "
        "loss 2.7-16 %% off from 60 s recordings made with 1 mrad of drive noise (four seeds)",
    )
    cal.add_argument(
        "--accept-misfit",
        action="store_true",
        help=f"exit 0, not {MISFIT_EXIT}, when the fit is flagged as a misfit (the warnings "
        "stay in the file and report)",
    )
    cal.add_argument(
        "--seconds", type=float, default=None, help="use only the first seconds of each recording"
    )
    cal.add_argument(
        "--robot",
        type=robot_arg,
        default=DEFAULT_ROBOT,
        help=f"the robot recorded: {ROBOT_HELP}; its drives must be Amber or Damiao "
        "(default: %(default)s)",
    )
    cal.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    cal.add_argument("--json", action="store_true", help="print exactly one JSON object")
    cal.set_defaults(func=_cmd_calibrate, json_result=True)

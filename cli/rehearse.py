"""``rob-twin rehearse``: the pre-commissioning gates, simulated (exit 1 if any fails)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rob_twin.cli.common import (
    CALIBRATION_HELP,
    ROBOT_HELP,
    CommandResult,
    calibration_arg,
    robot_arg,
)
from rob_twin.models.names import DEFAULT_ROBOT

# The gate names, for --help without importing the gates (mujoco): the shared gates
# (rob_twin.twin.rehearsal.gates.GATES) and those only the Damiao profile adds
# (rob_twin.twin.rehearsal.damiao.DAMIAO_GATES); tests/test_help_words.py checks both.
SHARED_GATES = (
    "exclusive_output",
    "units_and_references",
    "stopping",
    "feedback",
    "output_uncertainty",
    "moving_retargets",
    "bus_budget",
    "held_object",
)
DAMIAO_ONLY_GATES = (
    "register_agreement",
    "enable_sequence",
    "gravity_compensation",
    "torque_limit",
    "can_timeout",
)


def _bus_budget(args: argparse.Namespace, robot):
    """The bus-budget gate's settings from ``--bus`` and ``--command-rate`` (worst-case
    stuffing unless the spec says otherwise)."""
    import dataclasses

    from rob_twin.twin.bus.budget import BusBudgetConfig
    from rob_twin.twin.bus.frame_bits import Stuffing
    from rob_twin.twin.bus.timing import BusTimingConfigError, parse_bus_spec

    bus = parse_bus_spec(args.bus or robot.bus_spec)
    if bus is None:
        raise BusTimingConfigError("the bus budget needs a bus: --bus off is not valid here")
    bus = dataclasses.replace(
        bus, stuffing=Stuffing.EXACT if args.exact_stuffing else Stuffing.WORST
    )
    return BusBudgetConfig(bus=bus, command_rate_hz=args.command_rate)


def _cmd_rehearse(args: argparse.Namespace) -> CommandResult:
    import dataclasses

    from rob_twin.models.bounded_json import JsonInputError, read_bounded_json
    from rob_twin.twin.rehearsal import RehearsalConfig, rehearse, write_report
    from rob_twin.twin.rehearsal.report import first_failure
    from rob_twin.twin.rehearsal.run import check_gates
    from rob_twin.twin.scenario.run_folder import RunFolder
    from rob_twin.twin.scenario.schema import ScenarioError, validate_faults
    from rob_twin.twin.sim.faults import FaultSpec
    from rob_twin.twin.sim.loops import loop_config

    try:
        raw = read_bounded_json(args.faults, what="--faults") if args.faults else []
    except JsonInputError as err:
        raise ScenarioError(str(err)) from None
    faults = tuple(FaultSpec.from_model(f) for f in validate_faults(raw, "--faults"))
    robot = args.robot
    calibration = calibration_arg(args.calibration, robot)
    base = loop_config(
        robot,
        "rob-twin rehearse (it gates owners, codecs and drives)",
        seed=args.seed,
        swap_wiring=args.swap_wiring,
        faults=faults,
        calibration=calibration,
    )
    if robot.family == "damiao":
        from rob_twin.twin.rehearsal.damiao import openarm_rehearsal_config

        cfg = openarm_rehearsal_config(base)
    else:
        cfg = RehearsalConfig(base=base)
    check_gates(cfg, args.gate)
    out = Path(args.out)
    RunFolder.check_writable(out)  # before the gates run, not after
    report = rehearse(
        dataclasses.replace(cfg, bus_budget=_bus_budget(args, robot)),
        args.gate or None,
        progress=not args.json,
    )
    jp, mp = write_report(report, out)
    if not args.json:
        for g in report["gates"]:
            print(f"{'PASS' if g['passed'] else 'FAIL'}  {g['name']}")
            if not g["passed"]:
                print(f"      {first_failure(g)}")
        for name, why in report.get("gates_not_run", {}).items():
            print(f"NOT RUN  {name}: {why}")
        print(f"report: {mp} and {jp} (simulated; hardware_io: false)")
    failed = [g for g in report["gates"] if not g["passed"]]
    for g in failed if args.json else ():  # the lines above went to stdout otherwise
        print(f"FAIL  {g['name']}: {first_failure(g)}", file=sys.stderr)
    verdict = (
        f"rehearse: FAILED {len(failed)} of {len(report['gates'])} gates "
        f"({', '.join(g['name'] for g in failed)})"
        if failed
        else f"rehearse: passed all {len(report['gates'])} gates"
    )
    print(f"{verdict}; report in {mp}", file=sys.stderr)
    return (0 if report["passed"] else 1), report


def register(sub) -> None:
    """Add ``rehearse`` to the ``rob-twin`` sub-command parser ``sub``."""
    reh = sub.add_parser(
        "rehearse",
        help="pre-commissioning gates, simulated (exit 1 if any fails)",
        description="Run the pre-commissioning gates on the twin (simulated; hardware_io: "
        "false): each gate provokes what it checks through owners, codecs, buses and "
        "drives and passes or fails; a failing gate's first failure is printed. Writes "
        "rehearsal.md, rehearsal.json and stopping.png under --out. Exit 0: every gate "
        "passed; 1: a gate failed; 2: bad input.",
    )
    reh.add_argument("--json", action="store_true", help="print exactly one JSON object")
    reh.add_argument(
        "--out", default="out/rehearsal", help="report folder (default out/rehearsal/)"
    )
    reh.add_argument(
        "--gate",
        action="append",
        metavar="NAME",
        help="run only this gate (repeatable; default: every gate of the robot's profile). "
        f"Gates: {', '.join(SHARED_GATES)}; Damiao drives (openarm) also: "
        f"{', '.join(DAMIAO_ONLY_GATES)}",
    )
    reh.add_argument(
        "--seed", type=int, default=0, help="seed of the gates' planner and random draws"
    )
    reh.add_argument(
        "--swap-wiring",
        action="store_true",
        help="rehearse a robot whose arm buses are swapped (the units_and_references "
        "gate must fail: each arm's commands move the other arm)",
    )
    reh.add_argument(
        "--faults",
        help="JSON list of faults applied to every gate, e.g. "
        '\'[{"kind": "wrong_sign", "arm": "right", "joints": [5]}]\'',
    )
    reh.add_argument(
        "--robot",
        type=robot_arg,
        default=DEFAULT_ROBOT,
        help=f"{ROBOT_HELP}; a robot on Damiao drives (openarm) gets the Damiao profile "
        "(register agreement, enable sequence, gravity compensation, torque limit, CAN "
        "timeout, and the shared gates)",
    )
    reh.add_argument(
        "--bus",
        default=None,
        help="bus of the bus_budget gate: 1M, 500k, 250k, fd:1M/5M ... (worst-case stuffing; "
        "default: the robot file's drives.bus)",
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
    reh.add_argument("--calibration", metavar="FILE", help=CALIBRATION_HELP)
    reh.set_defaults(func=_cmd_rehearse, json_result=True)

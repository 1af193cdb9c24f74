"""``rob-twin excite``: write an excitation for system identification, certified
collision-free, as a plan file and a scenario that plays it.

Both arms (``--arms``) follow multi-sine joint motions (``rob_twin.planners.excitation``:
interleaved harmonics of 0.1 Hz up to 2 Hz, within ``--fraction`` of each joint's range
around the start pose and 95 % of the planning limits v 0.9 rad/s, a 2.5 rad/s^2, jerk 15
rad/s^3), at rest at the start pose at both ends. ArmGroup's own final check and clearance
certificate judge every sample and the time between (``rob_twin.planners.given_path``);
the path is never altered to pass. Writes ``OUT/excite_plan.json`` (the plan file with its
certificate and the excitation summary: ``rob-twin certify`` re-verifies it) and
``OUT/excite.json`` (a scenario that starts the arms at the start pose and executes the
plan file: ``rob-twin run OUT/excite.json``). Prints which model parameters the motion
excites and by how much (``rob_twin.planners.excitation_summary``). Simulated:
``hardware_io: false``.

``--robot`` names the robot (a shipped robot or a robot file with Amber drives: the
excitation is what ``rob-twin calibrate --robot`` fits): the plan is made and certified on
its model, the plan file names it (``robot``) and the scenario runs on it (``"robot"``).
Start poses: ``excite`` is ROB's chosen excitation start
(``rob_twin.models.poses.EXCITATION_START``) and, on any other robot, its file's home pose;
``home`` the file's home pose; ``crossing_start`` ROB's keyframe (ROB only).

Exit 0 with both files written; 1 when the excitation collides or cannot be certified (the
samples and pairs are named; nothing is written: try another ``--seed`` or a smaller
``--fraction``); 2 for an option out of range, a motion the limits refuse or a robot without
Amber drives.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rob_twin.cli.common import ROBOT_HELP, CommandResult, UsageError, robot_arg, say_for
from rob_twin.models.names import DEFAULT_ROBOT

START_POSES = ("excite", "home", "crossing_start")
PLAN_NAME, SCENARIO_NAME = "excite_plan.json", "excite.json"


def _start_poses(name: str, robot) -> dict:
    """{arm: joint angles [rad]} of start pose ``name`` on ``robot`` (see the module
    docstring); UsageError for a pose the robot does not have."""
    from rob_twin.models.names import Arm
    from rob_twin.models.poses import EXCITATION_START, KEYFRAMES

    if robot.spec == DEFAULT_ROBOT:  # ROB's own poses, chosen for it
        return EXCITATION_START if name == "excite" else KEYFRAMES[name]
    if name in ("excite", "home"):
        return {arm.value: tuple(robot.home(arm)) for arm in Arm}
    raise UsageError(
        f"rob-twin excite: --start {name} is a pose of robot {DEFAULT_ROBOT!r} only; valid for "
        f"robot {robot.name!r}: excite, home"
    )


def _start_qpos(name: str, group, robot):
    """The full qpos: ``robot``'s home keyframe with the arms at start pose ``name``."""
    import mujoco
    from rob_twin.models.loading import HOME_KEY, apply_keyframe

    poses = _start_poses(name, robot)
    data = mujoco.MjData(group.model)
    apply_keyframe(group.model, data, HOME_KEY)
    group.set_qpos(data.qpos.copy())
    for arm, q in poses.items():
        group.set_arm(arm, q)
    return group.reference_qpos.copy()


def _scenario(doc: dict, plan_path: Path, robot, lead_s: float = 0.5, tail_s: float = 1.5):
    """A scenario document that runs the plan file at ``plan_path`` (document ``doc``) on
    ``robot``: every arm joint starts where the plan does (its reference state, the moving
    arms at their first sample), the plan starts at ``lead_s`` [s] and the run ends
    ``tail_s`` [s] after it (``rob_twin.twin.scenario.plan_steps.scenario_for_plan_file``,
    on the robot's model)."""
    model = robot.model()
    ref = doc["reference_qpos"]
    initial = {
        j: float(ref[model.jnt_qposadr[model.joint(j).id]])
        for joints in doc["arms"].values()
        for j in joints
    }
    for arm in doc["moving"]:
        for j, value in zip(doc["joint_names"][arm], doc["q_rad"][arm][0], strict=True):
            initial[j] = float(value)
    return {
        "name": "plan",
        "duration": round(lead_s + float(doc["t_s"][-1]) + tail_s, 3),
        "initial": initial,
        "plans": [{"t": lead_s, "plan": str(Path(plan_path).resolve())}],
        "robot": robot.spec,
    }


def _cmd_excite(args: argparse.Namespace) -> CommandResult:
    import numpy as np
    from rob_twin.models.robot import AMBER_DRIVES
    from rob_twin.planners.excitation import ExcitationConfig, ExcitationError, excitation_path
    from rob_twin.planners.excitation_summary import excitation_summary, summary_lines
    from rob_twin.planners.given_path import GivenPathRefused, certify_given_path
    from rob_twin.planners.group import ArmGroup
    from rob_twin.planners.plan_file import plan_document, validate_plan_document
    from rob_twin.planners.retime import JointLimits
    from rob_twin.twin.drives.amber_drive import DriveConfig
    from rob_twin.twin.scenario.plan_steps import planning_config
    from rob_twin.twin.scenario.run import Scenario

    robot = args.robot
    robot.require(AMBER_DRIVES, "rob-twin excite (an excitation for Amber drive calibration)")
    if not 0 <= args.seed <= 2**32 - 1:
        raise UsageError(f"--seed {args.seed}: valid: an integer in [0, 4294967295]")
    say = say_for(args)
    try:
        config = ExcitationConfig(seconds=args.seconds, fraction=args.fraction)
    except ExcitationError as err:
        raise UsageError(f"rob-twin excite: {err}") from None
    group = ArmGroup(robot.model(), robot.group_arms(), planning_config())
    _start_qpos(args.start, group, robot)
    moving = tuple(a for a in group.arm_names if a in set(args.arms))
    start = np.concatenate([group.arm_q(a) for a in moving])
    lower = np.concatenate([group.joint_limits(a)[0] for a in moving])
    upper = np.concatenate([group.joint_limits(a)[1] for a in moving])
    limits = JointLimits.stack([group.motion_limits(a) for a in moving])
    names = tuple(j for a in moving for j in group.joint_names(a))
    try:
        path = excitation_path(start, lower, upper, limits, names, config, args.seed)
    except ExcitationError as err:
        raise UsageError(f"rob-twin excite: {err}") from None
    out: dict = {
        "robot": robot.identity(),
        "arms": list(moving),
        "start": args.start,
        "seconds": config.seconds,
        "fraction": config.fraction,
        "seed": args.seed,
        "hardware_io": False,
    }
    try:
        plan = certify_given_path(group, moving, path, args.seed)
    except GivenPathRefused as err:
        out.update(ok=False, refused=err.as_dict())
        say(f"refused ({err.kind}): {err.reason}; nothing written")
        for h in err.hits[1:]:
            say(f"  sample {h.index} t={h.t_s:.3f} s: {h.pair} {h.distance_m * 1e3:.2f} mm")
        say("try another --seed, a smaller --fraction or another --start")
        return 1, out
    summary = excitation_summary(plan, path, drive_lag_s=DriveConfig().lag_s)
    summary["config"] = {
        "seconds": config.seconds,
        "fraction": config.fraction,
        "period_s": config.period_s,
        "max_frequency_hz": config.max_frequency_hz,
        "ramp_s": config.ramp_s,
        "headroom": config.headroom,
        "seed": args.seed,
        "start": args.start,
    }
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    plan_path = folder / PLAN_NAME
    doc = plan_document(group, plan)
    doc["robot"] = robot.identity()
    doc["excitation"] = summary
    validate_plan_document(doc, str(plan_path))
    plan_path.write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")
    lines = summary_lines(summary)
    scenario = _scenario(doc, plan_path, robot)
    scenario["name"] = "excite"
    arms = " + ".join(moving)
    scenario["about"] = (
        f"Excitation for system identification of robot {robot.name} (simulated, "
        f"hardware_io: false): {config.seconds:g} s of multi-sine motion of {arms} within "
        f"{config.fraction:g} of each joint's range around the {args.start} pose, seed "
        f"{args.seed}. Excites: " + "; ".join(lines)
    )[:4000]
    Scenario.from_dict(scenario, str(folder / SCENARIO_NAME))  # what run will load
    scenario_path = folder / SCENARIO_NAME
    scenario_path.write_text(json.dumps(scenario, indent=1) + "\n")
    cert = plan.certificate
    out.update(
        ok=True,
        plan=str(plan_path),
        scenario=str(scenario_path),
        duration_s=round(plan.duration_s, 4),
        samples=int(plan.t.size),
        certified=cert.certified,
        certified_min_m=round(cert.certified_min_m, 7),
        pair=cert.pair,
        model_hash=cert.model_hash,
        check_certify_s=round(plan.stage_times_s["total"], 3),
        excitation=summary,
    )
    say(
        f"excitation of {robot.name}'s {arms}: {plan.duration_s:.2f} s, {plan.t.size} samples, "
        f"certified minimum {cert.certified_min_m * 1e3:.2f} mm ({cert.pair}); wrote "
        f"{plan_path} and {scenario_path} (simulated, hardware_io: false)"
    )
    say("excites (simulated figures over the joints):")
    for line in lines:
        say(f"  {line}")
    return 0, out


def register(sub) -> None:
    """Add ``excite`` to the ``rob-twin`` sub-command parser ``sub``."""
    p = sub.add_parser(
        "excite",
        help="write a certified excitation (multi-sine joint motions of both arms) as a "
        "plan file and a scenario, to record for calibration; says what it excites",
        description=__doc__,
    )
    p.add_argument(
        "--out", default="out/excite", help=f"folder to write {SCENARIO_NAME} and {PLAN_NAME}"
    )
    p.add_argument(
        "--seconds",
        type=float,
        default=60.0,
        help="duration of the motion [s], 1.5 s ramps at rest included (4 to 150)",
    )
    p.add_argument(
        "--fraction",
        type=float,
        default=0.3,
        help="share of each joint's range the motion may span, centred on the start pose "
        "and cut at the limits (0 < fraction <= 1)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the harmonics' phases")
    p.add_argument(
        "--arms",
        nargs="+",
        choices=("right", "left"),
        default=["right", "left"],
        help="arms that move (the others hold still and are obstacles)",
    )
    p.add_argument(
        "--start",
        choices=START_POSES,
        default="excite",
        help="start and end pose: excite (ROB: home with J2 at -0.9 rad and J7 centred, "
        "rob_twin.models.poses.EXCITATION_START; another robot: its file's home), home (the "
        "robot file's) or crossing_start (ROB's keyframe)",
    )
    p.add_argument(
        "--robot",
        type=robot_arg,
        default=DEFAULT_ROBOT,
        help=f"the robot to excite: {ROBOT_HELP}; its drives must be Amber (default: %(default)s)",
    )
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.set_defaults(func=_cmd_excite, json_result=True)

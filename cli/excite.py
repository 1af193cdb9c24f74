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

``--robot`` names the robot (a shipped robot or a robot file with Amber or Damiao drives:
the excitation is what ``rob-twin calibrate --robot`` fits): the plan is made and certified on
its model, the plan file names it (``robot``) and the scenario runs on it (``"robot"``).
Start poses: ``excite`` is ROB's chosen excitation start
(``rob_twin.models.poses.EXCITATION_START``) and, on any other robot, its file's home pose
with the window narrowed where the motion from there would run into the robot
(``_clear_window``: OpenArm's elbows reach its torso);
``home`` the file's home pose; ``crossing_start`` ROB's keyframe (ROB only).

``--validation FOLDER`` also writes an independent validation excitation into FOLDER: the
same start, span and limits, but harmonics of 1/(1.37 x the base period) (other tones: none
the fit excitation plays below 20 Hz) with phases from ``--validation-seed`` (default
``--seed`` + 1), certified the same way; the JSON's ``validation`` holds its files and
figures. Record it like the fit excitation (``rob-twin run FOLDER/excite.json
--record-can ...``) and score the calibration on it (``rob-twin calibrate FIT.log --validate
VALIDATION.log``): a motion the fit never saw. Both excitations are made and certified before
either is written.

Exit 0 with both files written (four with ``--validation``); 1 when an excitation collides
or cannot be certified (the samples and pairs are named; nothing is written: try another
``--seed`` or a smaller ``--fraction``); 2 for an option out of range (a ``--validation``
folder that is ``--out``, a ``--validation-seed`` equal to ``--seed``), a motion the limits
refuse or a robot without CAN drives.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rob_twin.cli.common import ROBOT_HELP, CommandResult, UsageError, robot_arg, say_for
from rob_twin.models.names import DEFAULT_ROBOT

START_POSES = ("excite", "home", "crossing_start")
PLAN_NAME, SCENARIO_NAME = "excite_plan.json", "excite.json"
# --validation: the validation excitation's base period is the fit one's times this, so its
# harmonics (k / period) are other tones: none coincides below 100 / period_s Hz (20 Hz at
# the default 10 s period, beyond max_frequency_hz's 10 Hz)
VALIDATION_PERIOD_RATIO = 1.37


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


CLEAR_SCAN_STEP_RAD = 0.01  # _clear_window's scan along one joint
CLEAR_EXTRA_M = 0.002  # the window keeps the planner's margin plus this
CLEAR_SHARES = (1.0, 0.75, 0.5, 0.35, 0.25)  # of each joint's clear span, widest first


def _clear_window(group, moving, start, spec, config, seed):
    """(lower, upper [rad] stacked, share or None) of the joint windows an excitation from
    ``start`` keeps, for a robot without a chosen excitation start (its home): OpenArm's
    home hangs each elbow 30 mm from the torso, so the default window runs it in at every
    --fraction down to 0.1. Each joint's clear span: from the start toward each limit, in
    ``CLEAR_SCAN_STEP_RAD`` steps with every other joint at the start, up to where the
    clearance falls below the planner's margin plus ``CLEAR_EXTRA_M`` (or below the start's
    own, less 1 mm: a gripper's fingers). Joints move together, so the bounds are
    ``start + share x (span end - start)`` for the widest share of ``CLEAR_SHARES`` whose
    motion's 125 Hz samples all keep that clearance; the certificate then judges the
    motion. ``share`` None: the joint limits already keep it (or none does)."""
    import numpy as np
    from rob_twin.planners.excitation import excitation_path
    from rob_twin.twin.scenario.plan_steps import planning_config

    lower, upper, limits, names = spec
    need = planning_config().collision.margin_m + CLEAR_EXTRA_M
    session = group.meter.session(moving, group.reference_qpos)  # what group.clearance asks

    def clearance(q: np.ndarray) -> float:
        return session.clearance(q).distance_m

    need = min(need, clearance(start) - 0.001)
    t = np.arange(0.0, config.seconds, 1.0 / 125.0)

    def clear(lo, hi) -> bool:
        q = excitation_path(start, lo, hi, limits, names, config, seed).evaluate(t)[0]
        return all(clearance(x) >= need for x in q)

    if clear(lower, upper):
        return lower, upper, None
    span_lo, span_hi = start.copy(), start.copy()
    for j in range(start.size):
        for ends, limit, sign in ((span_lo, lower[j], -1.0), (span_hi, upper[j], 1.0)):
            q = start.copy()
            while sign * (q[j] + sign * CLEAR_SCAN_STEP_RAD - limit) <= 0:
                q[j] += sign * CLEAR_SCAN_STEP_RAD
                if clearance(q) < need:
                    q[j] -= sign * CLEAR_SCAN_STEP_RAD
                    break
            ends[j] = q[j]
    for share in CLEAR_SHARES:
        lo, hi = start + share * (span_lo - start), start + share * (span_hi - start)
        if clear(lo, hi):
            return lo, hi, share
    return lower, upper, None


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


def _check_seed(flag: str, seed: int) -> None:
    if not 0 <= seed <= 2**32 - 1:
        raise UsageError(f"{flag} {seed}: valid: an integer in [0, 4294967295]")


def _validation_setup(args: argparse.Namespace, config) -> tuple | None:
    """(seed, config, folder) of the validation excitation ``--validation`` asks for (None:
    not asked); UsageError for a folder or seed that would repeat the fit excitation."""
    from dataclasses import replace

    from rob_twin.planners.excitation import ExcitationError

    if args.validation is None:
        return None
    folder = Path(args.validation)
    if folder.resolve() == Path(args.out).resolve():
        raise UsageError(
            f"rob-twin excite: --validation {args.validation}: the --out folder; valid: "
            "another folder (the validation excitation would overwrite the fit one)"
        )
    seed = args.seed + 1 if args.validation_seed is None else args.validation_seed
    _check_seed("--validation-seed", seed)
    if seed == args.seed:
        raise UsageError(
            f"rob-twin excite: --validation-seed {seed}: the --seed; valid: any other seed "
            "in [0, 4294967295] (the same seed draws the same phases)"
        )
    try:
        vconfig = replace(config, period_s=round(config.period_s * VALIDATION_PERIOD_RATIO, 6))
    except ExcitationError as err:
        raise UsageError(f"rob-twin excite: validation excitation: {err}") from None
    return seed, vconfig, folder


def _write(folder: Path, group, plan, summary: dict, robot, about: str) -> tuple:
    """Write ``plan`` (with its excitation ``summary``) and the scenario that plays it into
    ``folder``; (plan path, scenario path, summary lines)."""
    from rob_twin.planners.excitation_summary import summary_lines
    from rob_twin.planners.plan_file import plan_document, validate_plan_document
    from rob_twin.twin.scenario.run import Scenario

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
    scenario["about"] = (about + " Excites: " + "; ".join(lines))[:4000]
    Scenario.from_dict(scenario, str(folder / SCENARIO_NAME))  # what run will load
    scenario_path = folder / SCENARIO_NAME
    scenario_path.write_text(json.dumps(scenario, indent=1) + "\n")
    return plan_path, scenario_path, lines


def _cmd_excite(args: argparse.Namespace) -> CommandResult:
    import numpy as np
    from rob_twin.models.robot import CAN_DRIVES
    from rob_twin.planners.excitation import ExcitationConfig, ExcitationError, excitation_path
    from rob_twin.planners.excitation_summary import excitation_summary
    from rob_twin.planners.given_path import GivenPathRefused, certify_given_path
    from rob_twin.planners.group import ArmGroup
    from rob_twin.planners.retime import JointLimits
    from rob_twin.twin.drives.amber_drive import DriveConfig
    from rob_twin.twin.scenario.plan_steps import planning_config

    robot = args.robot
    robot.require(CAN_DRIVES, "rob-twin excite (an excitation for drive calibration)")
    _check_seed("--seed", args.seed)
    say = say_for(args)
    try:
        config = ExcitationConfig(seconds=args.seconds, fraction=args.fraction)
    except ExcitationError as err:
        raise UsageError(f"rob-twin excite: {err}") from None
    validation = _validation_setup(args, config)
    group = ArmGroup(robot.model(), robot.group_arms(), planning_config())
    _start_qpos(args.start, group, robot)
    moving = tuple(a for a in group.arm_names if a in set(args.arms))
    start = np.concatenate([group.arm_q(a) for a in moving])
    lower = np.concatenate([group.joint_limits(a)[0] for a in moving])
    upper = np.concatenate([group.joint_limits(a)[1] for a in moving])
    limits = JointLimits.stack([group.motion_limits(a) for a in moving])
    names = tuple(j for a in moving for j in group.joint_names(a))
    narrowed = None
    if args.start == "excite" and robot.spec != DEFAULT_ROBOT:
        try:
            lower, upper, narrowed = _clear_window(
                group, moving, start, (lower, upper, limits, names), config, args.seed
            )
        except ExcitationError as err:
            raise UsageError(f"rob-twin excite: {err}") from None
        if narrowed is not None:
            say(
                f"window narrowed to {narrowed:g} of each joint's clear span (from home the "
                "motion runs into the robot)"
            )
    motions = [("fit", args.seed, config, Path(args.out))]
    if validation is not None:
        motions.append(("validation", *validation))
    out: dict = {
        "robot": robot.identity(),
        "arms": list(moving),
        "start": args.start,
        "clear_span_share": narrowed,
        "seconds": config.seconds,
        "fraction": config.fraction,
        "seed": args.seed,
        "hardware_io": False,
    }
    made = []  # every motion is made and certified before anything is written
    for role, seed, cfg, folder in motions:
        prefix = "" if role == "fit" else "validation excitation: "
        try:
            path = excitation_path(start, lower, upper, limits, names, cfg, seed)
        except ExcitationError as err:
            raise UsageError(f"rob-twin excite: {prefix}{err}") from None
        try:
            plan = certify_given_path(group, moving, path, seed)
        except GivenPathRefused as err:
            refused = err.as_dict()
            if role != "fit":
                refused["excitation"] = role
            out.update(ok=False, refused=refused)
            say(f"{prefix}refused ({err.kind}): {err.reason}; nothing written")
            for h in err.hits[1:]:
                say(f"  sample {h.index} t={h.t_s:.3f} s: {h.pair} {h.distance_m * 1e3:.2f} mm")
            flag = "--seed" if role == "fit" else "--validation-seed"
            say(f"try another {flag}, a smaller --fraction or another --start")
            return 1, out
        # the drive's setpoint lag: an Amber drive's; a Damiao drive applies its MIT frame at
        # once and has none (None: no lag figures; 0 divided its corner frequency by zero)
        lag_s = DriveConfig().lag_s if robot.family == "amber" else None
        summary = excitation_summary(plan, path, drive_lag_s=lag_s)
        summary["config"] = {
            "seconds": cfg.seconds,
            "fraction": cfg.fraction,
            "period_s": cfg.period_s,
            "max_frequency_hz": cfg.max_frequency_hz,
            "ramp_s": cfg.ramp_s,
            "headroom": cfg.headroom,
            "seed": seed,
            "start": args.start,
        }
        if role != "fit":
            summary["config"]["role"] = role
        made.append((role, seed, cfg, folder, plan, summary))
    arms = " + ".join(moving)
    for role, seed, cfg, folder, plan, summary in made:
        kind = (
            "Excitation for system identification"
            if role == "fit"
            else "Independent validation excitation (score a calibration on it with "
            "rob-twin calibrate --validate; never fit it)"
        )
        about = (
            f"{kind} of robot {robot.name} (simulated, hardware_io: false): "
            f"{cfg.seconds:g} s of multi-sine motion of {arms} within {cfg.fraction:g} of "
            f"each joint's range around the {args.start} pose, harmonics of "
            f"1/{cfg.period_s:g} Hz, seed {seed}."
        )
        plan_path, scenario_path, lines = _write(folder, group, plan, summary, robot, about)
        cert = plan.certificate
        figures = dict(
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
        if role == "fit":
            out.update(ok=True, **figures)
        else:
            out[role] = {"seed": seed, "period_s": cfg.period_s} | figures
        what = "excitation" if role == "fit" else "validation excitation"
        say(
            f"{what} of {robot.name}'s {arms}: {plan.duration_s:.2f} s, {plan.t.size} "
            f"samples, certified minimum {cert.certified_min_m * 1e3:.2f} mm ({cert.where()}); "
            f"wrote {plan_path} and {scenario_path} (simulated, hardware_io: false)"
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
        help=f"the robot to excite: {ROBOT_HELP}; its drives must be Amber or Damiao "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--validation",
        metavar="FOLDER",
        help=f"also write an independent validation excitation into FOLDER ({SCENARIO_NAME} "
        f"and {PLAN_NAME}, certified like the fit one; nothing is written unless both "
        "certify): other tones (harmonics of 1/(1.37 x the base period)) and other phases "
        "(--validation-seed); record it like the fit one and pass the recording to "
        "rob-twin calibrate --validate, never --fit; FOLDER must not be --out",
    )
    p.add_argument(
        "--validation-seed",
        type=int,
        help="seed of the validation excitation's phases (default: --seed + 1; must differ "
        "from --seed)",
    )
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.set_defaults(func=_cmd_excite, json_result=True)

"""``rob-twin plan``: plan both arms from a goals file or a scenario's plan step and write the
plan file (with its clearance certificate) that ``certify``, ``run`` (a scenario step's
``"plan"``) and ``view`` accept.

Exit 0 with the file written; 1 when no plan was found (the status and reason are printed,
nothing is written); 2 for a bad goals file, scenario or option. Plans use the twin's
planning limits (``rob_twin.twin.scenario.plan_steps.planning_config``: v 0.9 rad/s, a 2.5
rad/s^2, jerk 15 rad/s^3), so a plan file runs through the twin's owners as written.
"""

from __future__ import annotations

import argparse

from rob_twin.cli.common import ROBOT_HELP, CommandResult, UsageError, robot_arg, say_for


def _scenario_request(path: str, step: int, group, robot: str | None = None):
    """The GoalsRequest of plan step ``step`` of the scenario at ``path``: its goals and
    seed, from the scenario's initial state with every earlier step's goals reached."""
    import mujoco
    import numpy as np
    from rob_twin.models.loading import HOME_KEY, apply_keyframe, joint_qpos_index
    from rob_twin.planners.goals import JointGoal
    from rob_twin.planners.goals_file import GoalsRequest
    from rob_twin.twin.scenario.run import Scenario

    sc = Scenario.load(path, robot=robot)
    if not sc.plans:
        raise UsageError(f"--scenario {path}: the scenario has no plan steps")
    if not 0 <= step < len(sc.plans):
        raise UsageError(f"--step {step}: valid: 0..{len(sc.plans) - 1} (the scenario's steps)")
    data = mujoco.MjData(group.model)
    apply_keyframe(group.model, data, HOME_KEY)
    qpos = data.qpos.copy()
    for joint, value in sc.initial.items():
        qpos[joint_qpos_index(group.model, joint)] = value
    steps = sorted(sc.plans, key=lambda s: s.t)  # the order the scenario runs them in
    for earlier in [*steps[:step], steps[step]]:
        if earlier.plan_file is not None:
            raise UsageError(
                f"--step {step}: step at t={earlier.t} s executes the plan file "
                f"{earlier.plan_file!r}; only goal steps (and steps after goal steps) are planned"
            )
    for earlier in steps[:step]:
        for arm, q in earlier.goals.items():
            qpos[[joint_qpos_index(group.model, j) for j in group.joint_names(arm.value)]] = q
    target = steps[step]
    goals = {arm.value: JointGoal(np.asarray(q, float)) for arm, q in target.goals.items()}
    return GoalsRequest(start_qpos=qpos, goals=goals, seed=target.seed)


def out_arg(text: str) -> str:
    """``--out FILE``: where a plan file may be written (``plan_file.check_out_path``),
    checked at the command line, before any planning (exit 2)."""
    from rob_twin.planners.plan_file import PlanFileError, check_out_path

    try:
        check_out_path(text)
    except PlanFileError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def _cmd_plan(args: argparse.Namespace) -> CommandResult:
    from rob_twin.models.robot import robot_of
    from rob_twin.planners.goals_file import read_goals_file
    from rob_twin.planners.group import ArmGroup
    from rob_twin.planners.plan_file import save_plan
    from rob_twin.twin.scenario.plan_steps import planning_config

    if (args.goals is None) == (args.scenario is None):
        raise UsageError("rob-twin plan: give exactly one of GOALS or --scenario")
    if args.seed is not None and not 0 <= args.seed <= 2**32 - 1:
        raise UsageError(f"--seed {args.seed}: valid: an integer in [0, 4294967295]")
    say = say_for(args)
    robot = args.robot
    if robot is None and args.scenario is not None:
        from rob_twin.twin.scenario.run import Scenario

        robot = Scenario.load(args.scenario).robot
    robot = robot_of(robot)  # None: the default robot
    group = ArmGroup(robot.model(), robot.group_arms(), planning_config())
    if args.goals is not None:
        request = read_goals_file(args.goals, group, robot)
        source = f"goals file {args.goals}"
    else:
        request = _scenario_request(args.scenario, args.step, group, args.robot)
        source = f"scenario {args.scenario} step {args.step}"
    group.set_qpos(request.start_qpos)
    seed = request.seed if args.seed is None else args.seed
    result = group.plan(request.goals, seed=seed)
    out: dict = {
        "source": source,
        "robot": robot.identity(),
        "status": result.status.value,
        "seed": seed,
        "hardware_io": False,
    }
    if not result.ok:
        out.update(ok=False, reason=result.reason)
        say(f"no plan ({result.status.value}): {result.reason}; nothing written")
        return 1, out
    plan = result.plan
    cert = plan.certificate
    path = save_plan(args.out, group, plan, robot)
    out.update(
        ok=True,
        plan=str(path),
        moving=list(plan.moving),
        duration_s=round(plan.duration_s, 4),
        samples=int(plan.t.size),
        certified=cert.certified,
        certified_min_m=round(cert.certified_min_m, 7),
        pair=cert.pair,
        model_hash=cert.model_hash,
        planning_s=round(plan.stage_times_s.get("total", 0.0), 4),
    )
    say(
        f"planned {' + '.join(plan.moving)} of {robot.name} from {source}: "
        f"{plan.duration_s:.2f} s, "
        f"{plan.t.size} samples, certified minimum {cert.certified_min_m * 1e3:.2f} mm "
        f"({cert.where()}); wrote {path} (simulated, hardware_io: false)"
    )
    return 0, out


def register(sub) -> None:
    """Add ``plan`` to the ``rob-twin`` sub-command parser ``sub``."""
    p = sub.add_parser(
        "plan",
        help="plan both arms from a goals file or a scenario's plan step and write the plan "
        "file (with its certificate) that certify, run and view accept",
        description=__doc__,
    )
    p.add_argument(
        "goals",
        nargs="?",
        default=None,
        help="goals file (JSON: start, goals per arm as joints or a TCP pose, seed; "
        "see docs/planning.md 'Goals files' and examples/goals.json)",
    )
    p.add_argument(
        "--scenario",
        default=None,
        help="plan a scenario's plan step instead of a goals file",
    )
    p.add_argument(
        "--step",
        type=int,
        default=0,
        help="which plan step of --scenario (0 = the first in time); it starts where the "
        "earlier steps' goals leave the arms",
    )
    p.add_argument(
        "--robot",
        type=robot_arg,
        default=None,
        help=f"plan on this robot's model: {ROBOT_HELP} (default: the scenario's robot, or rob)",
    )
    p.add_argument(
        "--out", type=out_arg, default="plan.json", help="plan file to write (a .json path)"
    )
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="planner seed (default: the goals file's or the step's seed)",
    )
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.set_defaults(func=_cmd_plan, json_result=True)

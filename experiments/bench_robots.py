"""Benchmark ``robots``: every command and planner figure on every kind of robot
(``out/bench/robots.json`` and ``out/bench/robots.md``).

Robots: ROB (``rob``), OpenArm v2 (``openarm``), ALOHA (gym-aloha's bimanual ViperX 300 from
the robot file ``robot_factory.aloha_toml`` writes; a skip with the reason when gym-aloha's
assets are absent) and twelve seeded robots of ``rob_twin.experiments.robot_factory`` (the
``CASES`` of ``tests/test_generated_robots.py``: ideal 5 / 6 / 7 joints, amber, damiao 5 /
6 / 7 joints, facing and side by side), written under a temporary folder. Per robot:

1. Commands, each the ``rob-twin`` command line in a child process as a user runs it (``python
   -m rob_twin.cli``: this layer never imports the command line), outputs into a temporary
   folder, no video: ``plan`` (a goals file: both arms from home to the first joint goal pair of
   part 2 that planned), ``certify`` of that plan, ``run`` (a 1.5 s scenario: keyframes from
   home and back, its bus recorded; what its summary calls unexpected), ``demo`` (likewise),
   ``rehearse`` (every gate of the robot's profile: ROB ~6 s, OpenArm ~15 s; the failed gates
   with their detail), ``view --screenshot`` (exit 3 without a display), ``study`` (a tiny spec:
   two goal pairs at one margin, one worker) and ``teleop``, ``bank``, ``host``, ``mirror``,
   ``calibrate``, ``excite`` with ``--robot``. A command whose ``--help`` lists no ``--robot``
   option gets the command line with ``--robot`` (argparse refuses it, exit 2, before anything
   runs); ``mirror`` taking it listens on a closed port (it resolves the robot, then finds no
   bus); ``bank``, ``host`` and ``teleop`` taking it are only reported (servers: never started);
   ``excite`` taking it writes a 4 s excitation; ``calibrate`` taking it fits one parameter
   (``CALIBRATE_FIT``, one iteration) to the run's bus recording. Each command: exit code, the
   last line it printed, wall time.
2. Planning: ``PLAN_REQUESTS`` seeded joint goal pairs from home
   (``goal_requests``: ``rob_twin.experiments.goal_pairs``' rule, home + N(0, 0.8 rad) per
   joint clipped, each arm and the pair 10 mm free, or as free as at home where home is
   closer: OpenArm's gripper fingers are 8.5 mm apart in every pose), ArmGroup with the twin's
   planning limits; success and median planning time [s].
3. Certificate agreement: each successful plan saved (``save_plan``), read back and
   re-verified with coal (``verify_document``, what ``rob-twin certify`` runs): agrees when
   the check passes, the plan is certified and both minima are within
   ``AGREE_TOLERANCE_M``.
4. Holding at home (CAN drives only): the robot's closed loop with nothing commanded for
   ``HOLD_S``; the largest |q - home| per arm (sampled every ``HOLD_CHUNK_S``; ROB's Amber
   drives dip ~17 mrad in the first 0.4 s before they settle) and at the end, and any latched
   owner fault.
5. Teleop IK: ``IK_TARGETS`` reachable TCP poses (FK of uniform joint vectors within the
   ranges, arms alternating), solved by ``IKSolver`` when the robot has Cartesian
   kinematics (an ``arm_kinematics`` function in ``rob_twin.planners`` when one exists,
   else ``ArmKinematics``, ROB's); "not available: <reason>" otherwise.

Everything is simulated (hardware_io: false).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from functools import cache, partial
from pathlib import Path

import numpy as np
from rob_twin.experiments.output import OUT_DIR, markdown_table
from rob_twin.experiments.registry import benchmark
from rob_twin.experiments.robot_factory import COVERING_CASES, aloha_toml, generate_robot
from rob_twin.models.names import ROBOTS, Arm

PLAN_REQUESTS = 10
IK_TARGETS = 100
HOLD_S = 2.0
HOLD_CHUNK_S = 0.02  # the holding run is sampled this often [s]
RUN_S = 1.5  # the run scenario's duration [s]
RUN_OFFSET_RAD = 0.15  # the run scenario's keyframe: home + this on every joint (clipped)
GOAL_SEED = 42  # rng of the goal pairs
GOAL_SIGMA_RAD = 0.8
GOAL_CLEARANCE_M = 0.01  # goals at least this free (or as free as home, if less)
GOAL_DRAWS = 5000  # draws per arm at most before fewer requests are made
REHEARSE_GATES = "all"  # every gate of the robot's profile (ROB ~6 s, OpenArm ~15-30 s)
CLI_TIMEOUT_S = 300.0  # one command line at most [s]
ALOHA_SCENE = (
    Path(sysconfig.get_path("purelib"))
    / "gym_aloha"
    / "assets"
    / "bimanual_viperx_transfer_cube.xml"
)
GENERATED = COVERING_CASES  # (seed, family, joints per arm, mounting)
RUN_COMMANDS = ("plan", "certify", "run", "demo", "rehearse", "view", "study")
ROBOT_OPTION_COMMANDS = ("teleop", "bank", "host", "mirror", "excite", "calibrate")
BUS_COMMANDS = ("bank", "host", "mirror")  # run together: a bank, its host, a mirror of it
BANK_S = 30.0  # the bench's bank serves this long [s]: the arms' rest, bring-up, host, mirror
REST_TIMEOUT_S = 20.0  # the host waits this long for limp Damiao arms to come to rest [s]
HOST_S = 6.0  # the host's run [s]: stream home, from where the arms came to rest
MIRROR_S = 2.0  # the mirror listens this long once it has its first frame [s]
TELEOP_S = 2.0  # teleop serves this long [s] (no client connects: it starts and stops)
READY_TIMEOUT_S = 60.0  # the bank must be serving within this [s]
RECORDING = "run_bus.log"  # run's --record-can file, calibrate's recording
CALIBRATE_FIT = "right/j1/damping"  # on the run's recording: one parameter, one iteration, ~3 s
# (on an excitation's recording: the default parameter set, one iteration, ~40 s)
CLOSED_PORT = 1  # mirror listens here: nothing serves on it, the connection is refused
COMMANDS = RUN_COMMANDS + ROBOT_OPTION_COMMANDS


def _say(text: str) -> None:
    print(f"[robots] {text}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- robots


def generated_robot(folder: Path, seed: int, family: str, joints: int, mounting: str) -> dict:
    """Write one ``rob_twin.experiments.robot_factory`` robot into ``folder``: a robot entry."""
    made = generate_robot(folder, seed, family=family, joints=joints, mounting=mounting)
    return {
        "label": f"gen{seed}-{family}-{joints}dof-{mounting}",
        "spec": str(made.robot_file),
        "source": f"rob_twin.experiments.robot_factory generate_robot({seed}, family={family!r}, "
        f"joints={joints}, mounting={mounting!r})",
        "mounting": mounting,
    }


def aloha_robot(folder: Path) -> dict:
    """ALOHA's robot file as tests/test_third_robot.py writes it, or a skip saying why."""
    entry = {"label": "aloha", "source": "rob_twin.experiments.robot_factory.aloha_toml()"}
    if not ALOHA_SCENE.is_file():
        return entry | {"skipped": f"gym-aloha's assets are not installed ({ALOHA_SCENE})"}
    try:
        text = aloha_toml()
    except Exception as err:  # say so, run the rest
        return entry | {"skipped": f"aloha_toml() unavailable: {type(err).__name__}: {err}"}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "robot.toml"
    path.write_text(text, encoding="utf-8")
    return entry | {"spec": str(path)}


def robot_entries(folder: Path, generated: Sequence[tuple] = GENERATED) -> list[dict]:
    """ROB, OpenArm, ALOHA and the generated robots (files written under ``folder``)."""
    entries = [{"label": name, "spec": name, "source": "shipped"} for name in ROBOTS]
    entries.append(aloha_robot(folder / "aloha"))
    for seed, family, joints, mounting in generated:
        sub = folder / f"gen{seed}_{family}_{joints}_{mounting}"
        entries.append(generated_robot(sub, seed, family, joints, mounting))
    return entries


# ---------------------------------------------------------------- commands


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:400] if lines else ""


def cli(argv: list[str]) -> dict:
    """Run ``rob-twin ARGV`` in a child process (``python -m rob_twin.cli``, ``CLI_TIMEOUT_S``
    at most): exit code, the last line it printed (stderr's when it failed, else stdout's)
    and wall time [s]."""
    t0 = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "rob_twin.cli", *argv],
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
        code, out, err, raised = done.returncode, done.stdout, done.stderr, ""
    except subprocess.TimeoutExpired as exc:
        code, out, err = None, "", str(exc.stderr or "")
        raised = f"timed out after {CLI_TIMEOUT_S} s"
    first = err if code != 0 else out or err
    return {
        "argv": ["rob-twin", *argv],
        "exit_code": code,
        **({"raised": raised} if raised else {}),
        "message": _last_line(first) or _last_line(err + out),
        "wall_s": round(time.perf_counter() - t0, 2),
    }


@cache
def _help(command: str) -> str:
    """``rob-twin COMMAND --help`` as printed (empty for an unknown command)."""
    done = subprocess.run(
        [sys.executable, "-m", "rob_twin.cli", command, "--help"],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    return done.stdout if done.returncode == 0 else ""


def _goals_file(path: Path, goals: dict[str, np.ndarray], seed: int) -> Path:
    doc = {
        "start": {"keyframe": "home"},
        "goals": {a: {"joints": [round(float(v), 6) for v in q]} for a, q in goals.items()},
        "seed": seed,
    }
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path


def _run_scenario(path: Path, robot, spec: str) -> Path:
    """Both arms from home to home + ``RUN_OFFSET_RAD`` (clipped into the ranges) and back."""
    frames = []
    for arm in Arm:
        home = robot.home(arm)
        lo, hi = np.array(robot.joint_ranges(arm)).T
        away = np.clip(home + RUN_OFFSET_RAD, lo + 0.05, hi - 0.05)
        for t, q in ((0.5, away), (1.2, home)):
            frames.append({"t": t, "arm": arm.value, "q": [round(float(v), 6) for v in q]})
    doc = {"name": "bench_robots_run", "duration": RUN_S, "seed": 0, "robot": spec}
    doc["keyframes"] = frames
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path


def _study_spec(path: Path, spec: str) -> Path:
    model = spec if "/" not in spec and not spec.endswith(".toml") else Path(spec).as_posix()
    path.write_text(
        f'name = "bench_robots"\nmodel = "{model}"\nstart = "home"\n'
        'arms = ["right", "left"]\nmargins_m = [0.005]\ncount = 2\nseed = 0\n\n'
        '[goals]\nkind = "gaussian"\nsigma_rad = 0.6\nmin_clearance_m = 0.01\n\n'
        "[planner]\nmax_iterations = 4000\n",
        encoding="utf-8",
    )
    return path


def _run_summary(folder: Path) -> dict:
    """What a run's or demo's summary.json says went wrong (``unexpected``), if it wrote one."""
    found = sorted(folder.glob("*/summary.json"))
    if not found:
        return {}
    summary = json.loads(found[0].read_text(encoding="utf-8"))
    return {
        "passed": summary.get("passed"),
        "unexpected": [str(u)[:300] for u in summary.get("unexpected", [])[:4]],
        "max_abs_tracking_error_rad": summary.get("max_abs_tracking_error_rad"),
    }


def _gates(folder: Path) -> dict:
    """The rehearsal report's gates: how many ran, which failed (with their detail) and
    which could not run on the robot."""
    path = folder / "rehearsal.json"
    if not path.is_file():
        return {}
    report = json.loads(path.read_text(encoding="utf-8"))
    gates = report.get("gates", [])
    return {
        "gates_run": [g.get("name") for g in gates],
        "gates_failed": {g.get("name"): _why(g) for g in gates if not g.get("passed")},
        "gates_not_run": report.get("gates_not_run", {}),
    }


def _failing(item: object) -> bool:
    """A gate's case or joint entry that says it failed: ``ok`` / ``passed`` false, or a
    field that differs from its ``expected_`` field (``mount_side`` vs ``expected_side``)."""
    if not isinstance(item, dict):
        return False
    if item.get("ok") is False or item.get("passed") is False:
        return True
    for key, want in item.items():
        if key.startswith("expected_"):
            what = key.removeprefix("expected_")
            for other, got in item.items():
                if other != key and (other == what or other.endswith(f"_{what}")) and got != want:
                    return True
    return False


def _why(gate: dict) -> str:
    """A failed gate's detail, else its first failing case or joint (compact JSON)."""
    if gate.get("detail"):
        return str(gate["detail"])[:300]
    for value in gate.values():
        for item in value if isinstance(value, list) else ():
            if _failing(item):
                return json.dumps(item, default=str)[:300]
    return "(no detail)"


def robot_option(command: str, spec: str, work: Path) -> dict:
    """Whether ``command`` takes ``--robot``: its ``--help`` says. Without the option, the
    command line with ``--robot`` is run (argparse refuses it: exit 2, nothing starts)."""
    accepts = "--robot" in _help(command)
    if not accepts:
        row = cli([command, "--robot", spec])
        return row | {"robot_option": False, "note": "no --robot option"}
    if command == "teleop":  # serves TELEOP_S on a free port with no client, then stops
        argv = [command, "--robot", spec, "--port", str(_free_port()), "--no-viewer"]
        return cli([*argv, "--seconds", str(TELEOP_S)]) | {"robot_option": True}
    if command == "excite":
        argv = [command, "--robot", spec, "--seconds", "4", "--out", str(work / "excite")]
        return cli(argv) | {"robot_option": True}
    if command == "calibrate":  # on a recording of excite's scenario where excite wrote
        # one, else on the run's bus recording (none: refused for the robot or for the
        # missing file, whichever calibrate checks first)
        recording, played = work / RECORDING, None
        scenario = work / "excite" / "excite.json"
        if scenario.is_file():
            recording = work / "excite_bus.log"
            argv = ["run", str(scenario), "--robot", spec, "--no-video", "--out"]
            played = cli([*argv, str(work / "excite_run"), "--record-can", str(recording)])
        argv = [command, str(recording), "--robot", spec, "--out", str(work / "cal.json")]
        fit = [] if played is not None else ["--fit", CALIBRATE_FIT]  # excited: the defaults
        row = cli([*argv, *fit, "--max-iters", "1", "--quiet", "--accept-misfit"])
        extra = {} if played is None else {"excitation_run_exit_code": played["exit_code"]}
        return row | {"robot_option": True, "recording": recording.name, **extra}
    raise ValueError(f"command {command!r}; valid: {ROBOT_OPTION_COMMANDS}")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def bus_session(spec: str, work: Path) -> dict[str, dict]:
    """``bank``, ``host`` and ``mirror`` on the robot ``spec`` together: ``rob-twin bank``
    serves its drives for ``BANK_S`` (any free ports, a ready file), ``rob-twin host`` drives
    them to home for ``HOST_S``, then ``rob-twin mirror`` listens to the bus for ``MIRROR_S``;
    the bank's exit code once it stops. A bank that does not serve (a robot it refuses: exit 2
    naming what it lacks) leaves host and mirror to run against a closed port, where each
    refuses the robot or finds no bus (exit 2)."""
    ready = work / "bank_ready.json"
    ready.unlink(missing_ok=True)
    argv = ["bank", "--robot", spec, "--port", "0", "--control-port", "0", "--seconds"]
    argv += [str(BANK_S), "--ready-file", str(ready), "--max-lag", "5"]
    t0 = time.perf_counter()
    bank = subprocess.Popen(
        [sys.executable, "-m", "rob_twin.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    while (
        not ready.is_file() and bank.poll() is None and time.perf_counter() - t0 < READY_TIMEOUT_S
    ):
        time.sleep(0.05)
    port = json.loads(ready.read_text())["socketcand_port"] if ready.is_file() else CLOSED_PORT
    at = ["--robot", spec, "--host", "127.0.0.1", "--port", str(port)]
    mirror_argv = ["mirror", *at, "--seconds", str(MIRROR_S)]
    mirror_argv += ["--startup-timeout", str(REST_TIMEOUT_S + 5)]
    mirror_argv += ["--json"]
    mirror = subprocess.Popen(  # listens while the host drives: Damiao drives only answer
        [sys.executable, "-m", "rob_twin.cli", *mirror_argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    t_mirror = time.perf_counter()
    host_argv = ["host", *at, "--seconds", str(HOST_S), "--stream", "home"]
    rows = {"host": cli([*host_argv, "--rest-timeout", str(REST_TIMEOUT_S)])}
    try:
        m_out, m_err = mirror.communicate(timeout=CLI_TIMEOUT_S)
        m_code = mirror.returncode
    except subprocess.TimeoutExpired:
        mirror.kill()
        m_out, m_err = mirror.communicate()
        m_code = None
    rows["mirror"] = {
        "argv": ["rob-twin", *mirror_argv],
        "exit_code": m_code,
        "message": _last_line(m_err if m_code != 0 else m_err or m_out),
        "wall_s": round(time.perf_counter() - t_mirror, 2),
    }
    try:
        out, err = bank.communicate(timeout=BANK_S + CLI_TIMEOUT_S)
        code = bank.returncode
    except subprocess.TimeoutExpired:
        bank.kill()
        out, err = bank.communicate()
        code = None
    rows["bank"] = {
        "argv": ["rob-twin", *argv],
        "exit_code": code,
        "served": port != CLOSED_PORT,
        "message": _last_line(err if code != 0 else out or err),
        "wall_s": round(time.perf_counter() - t0, 2),
    }
    if port == CLOSED_PORT:
        for name in ("host", "mirror"):
            rows[name]["note"] = f"no bank served: run against a closed port ({CLOSED_PORT})"
    return {name: rows[name] | {"robot_option": True} for name in BUS_COMMANDS}


def run_commands(
    robot, spec: str, work: Path, goals: dict[str, np.ndarray] | None, commands: Sequence[str]
) -> dict:
    """Every command in ``commands`` (``COMMANDS``) on the robot ``spec``: name -> row."""
    rows: dict[str, dict] = {}
    plan_path = work / "plan.json"
    for command in commands:
        if command == "plan":
            if goals is None:
                rows[command] = {"exit_code": None, "note": "not run: no goal pair planned"}
                continue
            goals_path = _goals_file(work / "goals.json", goals, seed=0)
            argv = ["plan", str(goals_path), "--robot", spec, "--out", str(plan_path)]
            rows[command] = cli(argv)
        elif command == "certify":
            if not plan_path.is_file():
                rows[command] = {"exit_code": None, "note": "not run: plan wrote no plan file"}
                continue
            rows[command] = cli(["certify", str(plan_path), "--model", spec])
        elif command == "run":
            scenario = _run_scenario(work / "run_scenario.json", robot, spec)
            argv = ["run", str(scenario), "--robot", spec, "--out", str(work / "run")]
            rows[command] = cli([*argv, "--no-video", "--record-can", str(work / RECORDING)])
            rows[command] |= _run_summary(work / "run")
        elif command == "demo":
            rows[command] = cli(["demo", "--robot", spec, "--no-video", "--out", str(work / "d")])
            rows[command] |= _run_summary(work / "d")
        elif command == "rehearse":
            rows[command] = cli(["rehearse", "--robot", spec, "--out", str(work / "rehearsal")])
            rows[command] |= {"gates": REHEARSE_GATES} | _gates(work / "rehearsal")
        elif command == "view":
            if "--screenshot" not in _help("view"):
                rows[command] = {"exit_code": None, "note": "not run: view has no --screenshot"}
                continue
            shot = work / "view.png"
            argv = ["view", "--robot", spec, "--screenshot", str(shot), "--seconds", "3"]
            rows[command] = cli(argv) | {"screenshot_written": shot.is_file()}
        elif command == "study":
            if "spec" not in _help("study"):
                rows[command] = {"exit_code": None, "note": "not run: study takes no spec"}
                continue
            path = _study_spec(work / "study.toml", spec)
            argv = ["study", str(path), "--out", str(work / "study"), "--workers", "1"]
            rows[command] = cli([*argv, "--no-progress", "--overwrite"])
        elif command in BUS_COMMANDS:
            if command not in rows:  # the three run together, at the first of them
                rows |= bus_session(spec, work)
        elif command in ROBOT_OPTION_COMMANDS:
            rows[command] = robot_option(command, spec, work)
        else:
            raise ValueError(f"command {command!r}; valid: {COMMANDS}")
    return rows


# ---------------------------------------------------------------- planning and certificates


def home_group(robot):
    from rob_twin.planners.group import ArmGroup
    from rob_twin.twin.scenario.plan_steps import planning_config

    model = robot.model()
    group = ArmGroup(model, robot.group_arms(), planning_config())
    group.set_qpos(model.key("home").qpos)
    return group


def goal_requests(group, n: int, rng: np.random.Generator) -> tuple[list[dict], dict]:
    """Up to ``n`` goal pairs {arm: q} (``goal_pairs``' rule, bounded: at most
    ``GOAL_DRAWS`` draws per arm in all) and the clearance floors they were held to [m]."""
    home = {a: group.arm_q(a) for a in group.arm_names}
    floor = {a: min(GOAL_CLEARANCE_M, group.clearance({a: q}).distance_m) for a, q in home.items()}
    pair_floor = min(GOAL_CLEARANCE_M, group.clearance(home).distance_m)
    out: list[dict] = []
    draws = 0
    while len(out) < n and draws < GOAL_DRAWS * len(home):
        goals = {}
        for a in group.arm_names:
            lo, hi = group.joint_limits(a)
            while draws < GOAL_DRAWS * len(home):
                draws += 1
                q = np.clip(home[a] + rng.normal(0.0, GOAL_SIGMA_RAD, lo.size), lo, hi)
                if group.clearance({a: q}).distance_m >= floor[a]:
                    goals[a] = q
                    break
        if len(goals) == len(home) and group.clearance(goals).distance_m >= pair_floor:
            out.append(goals)
    floors = {a: round(v, 6) for a, v in floor.items()} | {"pair": round(pair_floor, 6)}
    return out, floors


def planning(robot, work: Path, requests: int) -> tuple[dict, dict, dict | None]:
    """(planning figures, certificate agreement, the first goal pair that planned)."""
    from rob_twin.planners.certificate_check import AGREE_TOLERANCE_M, verify_document
    from rob_twin.planners.plan_file import load_plan_file, save_plan

    group = home_group(robot)
    start = group.reference_qpos.copy()
    pairs, floors = goal_requests(group, requests, np.random.default_rng(GOAL_SEED))
    times, statuses, first, checks = [], Counter(), None, []
    for seed, goals in enumerate(pairs):
        group.set_qpos(start)
        t0 = time.perf_counter()
        result = group.plan(goals, seed=seed)
        times.append(time.perf_counter() - t0)
        statuses[result.status.value] += 1
        if not result.ok:
            continue
        first = first or goals
        plan = result.plan
        path = save_plan(work / "plans" / f"plan_{seed}.json", group, plan)
        t1 = time.perf_counter()
        report = verify_document(load_plan_file(path), robot.model(), where=str(path))
        stored = float(plan.certificate.certified_min_m)
        checked = report.certified_min_m
        diff = abs(checked - stored) if math.isfinite(checked) else math.inf
        checks.append(
            {
                "seed": seed,
                "agrees": bool(
                    report.ok and plan.certificate.certified and diff <= AGREE_TOLERANCE_M
                ),
                "check_ok": report.ok,
                "certified": bool(plan.certificate.certified),
                "certified_min_mm": round(stored * 1e3, 4),
                "coal_min_mm": round(checked * 1e3, 4) if math.isfinite(checked) else None,
                "difference_mm": round(diff * 1e3, 4) if math.isfinite(diff) else None,
                "disagreements": report.disagreements[:3],
                "check_s": round(time.perf_counter() - t1, 3),
            }
        )
    plan_row = {
        "requests": len(pairs),
        "succeeded": len(checks),
        "success_rate": round(len(checks) / requests, 3) if requests else 0.0,
        "median_plan_s": round(float(np.median(times)), 4) if times else None,
        "max_plan_s": round(float(np.max(times)), 4) if times else None,
        "statuses": dict(statuses),
        "asked": requests,
        "goal_clearance_floor_m": floors,
        "goals": f"home + N(0, {GOAL_SIGMA_RAD} rad) per joint, clipped, each arm and the pair "
        f">= {GOAL_CLEARANCE_M * 1e3:g} mm free or as free as home (rng {GOAL_SEED}); plan "
        f"seeds 0..{len(pairs) - 1}; planning_config()",
    }
    cert_row = {
        "plans": len(checks),
        "agreed": sum(c["agrees"] for c in checks),
        "check_passed": sum(c["check_ok"] and c["certified"] for c in checks),
        "agreed_means": "coal's check passes, the plan is certified and coal's minimum is within "
        "tolerance_mm of the certificate's (check_passed: the first two only; coal above the "
        "certificate means the certificate is conservative there)",
        "tolerance_mm": AGREE_TOLERANCE_M * 1e3,
        "max_difference_mm": max(
            (c["difference_mm"] for c in checks if c["difference_mm"] is not None), default=None
        ),
        "plans_checked": checks,
    }
    return plan_row, cert_row, first


# ---------------------------------------------------------------- holding


def holding(robot, seconds: float) -> dict:
    """Nothing commanded for ``seconds`` on the robot's closed loop: max |q - home| per arm
    [mrad] and any latched owner fault (CAN drives only)."""
    from rob_twin.models.robot import CAN_DRIVES, SEVEN_JOINT_ARMS
    from rob_twin.twin.sim.loops import loop_config, make_closed_loop

    # Damiao arms of any joint count have a loop; Amber's codec drives seven joints
    needs = (CAN_DRIVES, SEVEN_JOINT_ARMS) if robot.family == "amber" else (CAN_DRIVES,)
    for cap in needs:
        if not robot.can(cap):
            return {"not_run": f"robot lacks capability {cap!r} (no closed loop to hold)"}
    loop = make_closed_loop(loop_config(robot, "bench robots holding"))
    drift = {arm.value: 0.0 for arm in Arm}
    try:
        home = {arm: robot.home(arm) for arm in Arm}
        steps = max(1, int(round(seconds / HOLD_CHUNK_S)))
        for _ in range(steps):
            loop.run_for(seconds / steps)
            for arm in Arm:
                err = float(np.max(np.abs(loop.measured(arm) - home[arm])))
                drift[arm.value] = max(drift[arm.value], err)
        faults = {}
        for arm in Arm:
            owner = loop.drivers[arm].owner
            if owner.fault is not None:
                faults[arm.value] = f"{owner.fault.value}: {owner.fault_reason}"[:300]
        final = {a.value: float(np.max(np.abs(loop.measured(a) - home[a]))) for a in Arm}
        simulated = round(loop.time, 4)
    finally:
        loop.close()
    return {
        "seconds": seconds,
        "simulated_s": simulated,
        "max_drift_mrad": {a: round(v * 1e3, 4) for a, v in drift.items()},
        "final_drift_mrad": {a: round(v * 1e3, 4) for a, v in final.items()},
        "sampled_every_s": HOLD_CHUNK_S,
        "owner_faults": faults,
    }


# ---------------------------------------------------------------- teleop IK


def kinematics_provider(robot) -> tuple[Callable | None, str]:
    """(arm -> kinematics, where it comes from) for ``robot`` (``arm_kinematics``: ROB's
    Pinocchio model, every other robot's own MuJoCo model), or (None, why not)."""
    from rob_twin.models.robot import CAPABILITY_SOURCES, CARTESIAN_KINEMATICS
    from rob_twin.planners.robot_kinematics import arm_kinematics

    if not robot.can(CARTESIAN_KINEMATICS):
        why = CAPABILITY_SOURCES[CARTESIAN_KINEMATICS]
        return None, f"the robot lacks capability {CARTESIAN_KINEMATICS!r} ({why})"
    return partial(arm_kinematics, robot), "rob_twin.planners.robot_kinematics.arm_kinematics"


def teleop_ik(robot, targets: int) -> dict:
    """IK success on ``targets`` reachable TCP poses (FK of uniform joint vectors within the
    ranges, arms alternating), solved unseeded by ``IKSolver``."""
    from rob_twin.planners.ik import IKSolver

    make, source = kinematics_provider(robot)
    if make is None:
        return {"not_available": source}
    try:
        solvers = {arm: IKSolver(make(arm)) for arm in Arm}
    except Exception as err:
        return {"not_available": f"{source} raised {type(err).__name__}: {err}"[:400]}
    rng = np.random.default_rng(7)
    ok, times, statuses = 0, [], Counter()
    for k in range(targets):
        arm = (Arm.RIGHT, Arm.LEFT)[k % 2]
        kin = solvers[arm].kin
        q = rng.uniform(kin.lower, kin.upper)
        target = kin.tcp_pose(q)
        result = solvers[arm].solve(target)
        ok += bool(result.ok)
        times.append(result.solve_time_s)
        statuses[result.status.value] += 1
    return {
        "kinematics": source,
        "targets": targets,
        "solved": ok,
        "success_rate": round(ok / targets, 4) if targets else None,
        "median_solve_ms": round(float(np.median(times)) * 1e3, 3) if times else None,
        "statuses": dict(statuses),
        "targets_from": "FK of joint vectors uniform within the ranges, seed 7, arms alternating",
    }


# ---------------------------------------------------------------- one robot


def bench_robot(
    entry: dict,
    work: Path,
    *,
    plan_requests: int = PLAN_REQUESTS,
    ik_targets: int = IK_TARGETS,
    hold_s: float = HOLD_S,
    commands: Sequence[str] = COMMANDS,
) -> dict:
    """One robot's row (``entry``: from ``robot_entries``; ``work``: a scratch folder)."""
    from rob_twin.models.robot import robot_of

    t0 = time.perf_counter()
    row = {k: entry[k] for k in ("label", "source", "mounting") if k in entry}
    if "skipped" in entry:
        _say(f"{entry['label']}: skipped ({entry['skipped']})")
        return row | {"skipped": entry["skipped"]}
    spec = entry["spec"]
    work.mkdir(parents=True, exist_ok=True)
    robot = robot_of(spec)
    shipped = entry["source"] == "shipped"  # other robots' files are in a temporary folder
    row |= {
        "robot": robot.identity() | {"file": spec if shipped else entry["source"]},
        "joints_per_arm": {a.value: robot.joint_count(a) for a in Arm},
        "capabilities": sorted(robot.capabilities),
    }
    _say(f"{entry['label']}: planning {plan_requests} requests ...")
    row["planning"], row["certify_agreement"], goals = planning(robot, work, plan_requests)
    p = row["planning"]
    _say(
        f"{entry['label']}: plans {p['succeeded']}/{p['requests']}, median {p['median_plan_s']} s"
        f"; certificates agree {row['certify_agreement']['agreed']}/{p['succeeded']}"
    )
    row["holding"] = holding(robot, hold_s)
    row["teleop_ik"] = teleop_ik(robot, ik_targets)
    row["commands"] = run_commands(robot, spec, work, goals, commands)
    codes = " ".join(f"{c}={r.get('exit_code')}" for c, r in row["commands"].items())
    row["wall_s"] = round(time.perf_counter() - t0, 2)
    _say(f"{entry['label']}: exits {codes} ({row['wall_s']} s)")
    return row


# ---------------------------------------------------------------- summary


def _summary_row(row: dict) -> dict:
    if "skipped" in row:
        return {"robot": row["label"], "family": "-", "joints": "-", "plans": "skipped"}
    p, c, h, ik = row["planning"], row["certify_agreement"], row["holding"], row["teleop_ik"]
    if "not_run" in h:
        hold = final = "n/a"
    else:
        hold = f"{max(h['max_drift_mrad'].values()):.3g}"
        hold += f" FAULT {sorted(h['owner_faults'])}" if h["owner_faults"] else ""
        final = f"{max(h['final_drift_mrad'].values()):.3g}"
    ik_text = f"{ik['solved']}/{ik['targets']}" if "solved" in ik else "n/a"
    return {
        "robot": row["label"],
        "family": row["robot"]["family"],
        "joints": row["joints_per_arm"]["right"],
        "plans": f"{p['succeeded']}/{p['requests']}",
        "median_plan_s": p["median_plan_s"],
        "cert_check": f"{c['check_passed']}/{c['plans']}",
        "cert_same_min": f"{c['agreed']}/{c['plans']}",
        "hold_drift_mrad": hold,
        "hold_final_mrad": final,
        "ik": ik_text,
        **{cmd: r.get("exit_code", "") for cmd, r in row["commands"].items()},
        "wall_s": row["wall_s"],
    }


def verdict(rows: list[dict]) -> tuple[bool, str]:
    """(all well, one line): every robot planned, every certificate check passed, no command failed
    (exit 1 or raised), no owner fault while holding. Exit 2 (refused: capability, option)
    and 3 (no display) are recorded, not failures."""
    ran = [r for r in rows if "skipped" not in r]
    problems = []
    for r in ran:
        if r["planning"]["succeeded"] == 0:
            problems.append(f"{r['label']}: no plan")
        c = r["certify_agreement"]
        if c["check_passed"] != c["plans"]:
            problems.append(
                f"{r['label']}: {c['plans'] - c['check_passed']} certificate checks fail"
            )
        for cmd, cr in r["commands"].items():
            if cr.get("exit_code") == 1 or cr.get("raised"):
                problems.append(f"{r['label']}: {cmd} " + (cr.get("raised") or "exit 1"))
        if r["holding"].get("owner_faults"):
            problems.append(f"{r['label']}: owner fault while holding")
    plans = sum(r["planning"]["succeeded"] for r in ran)
    asked = sum(r["planning"]["requests"] for r in ran)
    agree = sum(r["certify_agreement"]["agreed"] for r in ran)
    passed = sum(r["certify_agreement"]["check_passed"] for r in ran)
    ik = [r for r in ran if "solved" in r["teleop_ik"]]
    held = [r for r in ran if "max_drift_mrad" in r["holding"]]
    drift = max((max(r["holding"]["max_drift_mrad"].values()) for r in held), default=0.0)
    solved = sum(r["teleop_ik"]["solved"] for r in ik)
    targets = sum(r["teleop_ik"]["targets"] for r in ik)
    line = (
        f"{len(ran)} robots ({len(rows) - len(ran)} skipped): plans {plans}/{asked}, "
        f"certificate checks pass {passed}/{plans} (same minimum {agree}/{plans}), "
        f"holding drift <= {drift:.3g} mrad on {len(held)} "
        f"CAN robots, IK {solved}/{targets} on {len(ik)} robots (not available on "
        f"{len(ran) - len(ik)})"
    )
    ok = not problems
    return ok, ("PASS: " if ok else "ATTENTION: ") + line + (
        "" if ok else "; " + "; ".join(problems[:8])
    )


def _markdown(result: dict) -> str:
    cols = list(result["summary_table"][0]) if result["summary_table"] else []
    wide = max(result["summary_table"], key=len) if result["summary_table"] else {}
    cols = list(wide) or cols
    return (
        "# Benchmark `robots` (simulated)\n\nhardware_io: false. Exit codes: 0 done, 1 failed, "
        "2 refused (bad input, a missing capability, no --robot option), 3 no display; "
        "`None`: not run (see robots.json). Holding drift: max |q - home| over "
        f"{result['hold_s']} s with nothing commanded, and at its end [mrad]; cert_check: coal's "
        "check passes; cert_same_min: and its minimum is the certificate's within "
        f"{result['certificate_tolerance_mm']} mm; ik: solved / reachable targets.\n\n"
        f"{markdown_table(result['summary_table'], cols)}\n{result['verdict']}\n"
    )


@benchmark("robots")
def run() -> dict:
    from rob_twin.planners.certificate_check import AGREE_TOLERANCE_M

    tolerance_mm = AGREE_TOLERANCE_M * 1e3
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rob-twin-bench-robots-") as tmp:
        tmp = Path(tmp)
        entries = robot_entries(tmp / "robots")
        rows = []
        for k, entry in enumerate(entries):
            _say(f"({k + 1}/{len(entries)}) {entry['label']}")
            rows.append(bench_robot(entry, tmp / "work" / entry["label"]))
    ok, line = verdict(rows)
    result = {
        "benchmark": "robots",
        "robots": rows,
        "summary_table": [_summary_row(r) for r in rows],
        "verdict": line,
        "ok": ok,
        "plan_requests": PLAN_REQUESTS,
        "ik_targets": IK_TARGETS,
        "hold_s": HOLD_S,
        "rehearse_gates": REHEARSE_GATES,
        "certificate_tolerance_mm": tolerance_mm,
        "commands": list(COMMANDS),
        "wall_s": round(time.perf_counter() - t0, 2),
    }
    md = OUT_DIR / "bench" / "robots.md"
    md.parent.mkdir(parents=True, exist_ok=True)
    md.write_text(_markdown(result), encoding="utf-8")
    print(line, flush=True)
    return result

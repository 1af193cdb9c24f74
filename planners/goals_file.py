"""A goals file: where the arms start and what each should reach, for ``rob-twin plan``.

::

    {
      "start": {"keyframe": "home", "joints": {"right/j1": 1.2}},
      "goals": {
        "right": {"joints": [7 joint angles, rad]},
        "left": {"pose": {"position": [x, y, z], "quat_wxyz": [w, x, y, z]}}
      },
      "seed": 0
    }

``start`` (optional; default the ``home`` keyframe): ``keyframe`` names one of the model's
keyframes (``home``, ``crossing_start``); ``joints`` overrides joint positions by name
[rad; m for finger slides]; or ``after_plan`` names an earlier plan file, whose last
sample (over its reference state) is the start, so plans chain. ``goals``: one entry per
arm that moves, either ``joints`` (the arm's joint angles in chain order [rad], inside its
limits) or ``pose`` (the TCP in ROB's base frame: ``position`` [m] and a unit quaternion
``quat_wxyz``, solved by IK, ``rob_twin.planners.pose_goals.PoseGoal``). ``seed`` (optional,
default 0): the planner's seed, an integer in [0, 2^32 - 1].

Read with the bounded JSON reader (1 MB, no NaN, no repeated keys); every problem is a
``GoalsFileError`` naming the file, the field, the value and the valid range.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
from rob_twin.models.bounded_json import JsonInputError, JsonLimits, read_bounded_json
from rob_twin.models.errors import InvalidValueError
from rob_twin.planners.errors import PlannerError

MAX_GOALS_FILE_BYTES = 1_000_000
MAX_SEED = 2**32 - 1
START_KINDS = ("keyframe", "joints", "after_plan")


class GoalsFileError(PlannerError, InvalidValueError):
    """A goals file that cannot be read or holds an invalid field (``field``, ``value``,
    ``valid``); ``where`` names the file."""

    def __init__(self, where: str, field: str, value: object, valid: str):
        self.where = where
        self.subject = f"goals file {where}:"
        super().__init__(field, value, valid)


@dataclass(frozen=True)
class GoalsRequest:
    """What to plan: ``start_qpos`` (the model's full qpos, nq), ``goals`` (arm -> a
    ``JointGoal`` or ``PoseGoal``, what ``ArmGroup.plan`` takes) and ``seed``."""

    start_qpos: np.ndarray
    goals: dict
    seed: int


def read_goals_file(path: str | Path, group, robot=None) -> GoalsRequest:
    """The goals file at ``path`` for ``group`` (an ``ArmGroup``: its model, arms and joint
    limits check the file); GoalsFileError for anything invalid. ``robot``: whose arm
    kinematics solve its pose goals (a ``Robot``, name or file; None: ROB's)."""
    path, where = Path(path), str(path)
    try:
        if path.is_dir():
            raise GoalsFileError(where, "path", where, "a goals file (JSON), not a directory")
        size = path.stat().st_size
        if size > MAX_GOALS_FILE_BYTES:
            raise GoalsFileError(where, "size", f"{size} bytes", f"<= {MAX_GOALS_FILE_BYTES}")
        data = path.read_bytes()
    except OSError as err:
        raise GoalsFileError(where, "path", where, f"a readable file ({err.strerror})") from None
    limits = JsonLimits(max_bytes=MAX_GOALS_FILE_BYTES, max_depth=6, reject_duplicate_keys=True)
    try:
        raw = read_bounded_json(data, what=f"goals file {where}", limits=limits)
    except JsonInputError as err:
        raise GoalsFileError(where, f"JSON {err.field}", err.value, err.valid) from None
    return goals_request(raw, group, where, robot)


def goals_request(raw: object, group, where: str = "(in memory)", robot=None) -> GoalsRequest:
    """``raw`` (a decoded goals document) checked against ``group``, as a GoalsRequest
    (``robot``: whose kinematics its pose goals use, as for ``read_goals_file``)."""

    def fail(field: str, value: object, valid: str):
        raise GoalsFileError(where, field, value, valid)

    if not isinstance(raw, dict):
        fail("(top level)", type(raw).__name__, "a JSON object with goals (and start, seed)")
    unknown = sorted(set(raw) - {"start", "goals", "seed", "$comment"})
    if unknown:
        fail(unknown[0], "(unknown key)", "start, goals, seed, $comment")
    seed = raw.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        fail("seed", seed, f"an integer in [0, {MAX_SEED}]")
    start = _start_qpos(raw.get("start", {}), group, fail)
    goals = raw.get("goals")
    if not isinstance(goals, dict) or not goals:
        fail("goals", goals, f"an object arm -> goal, arms: {', '.join(group.arm_names)}")
    out = {}
    for arm, goal in goals.items():
        if arm not in group.arm_names:
            fail("goals", arm, f"an arm of the group: {', '.join(group.arm_names)}")
        out[arm] = _goal(arm, goal, group, fail, robot)
    return GoalsRequest(start_qpos=start, goals=out, seed=seed)


def _numbers(value: object, n: int, field: str, fail, unit: str) -> np.ndarray:
    if (
        not isinstance(value, list)
        or len(value) != n
        or any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in value)
    ):
        fail(field, value, f"{n} numbers [{unit}]")
    try:  # a decoded document may hold what the file reader refuses: NaN, 10**400
        out = np.asarray(value, float)
    except OverflowError:
        out = np.full(n, np.inf)
    if not np.all(np.isfinite(out)):
        fail(field, value, f"{n} finite numbers [{unit}]")
    return out


def _start_qpos(start: object, group, fail) -> np.ndarray:
    from rob_twin.models.loading import apply_keyframe, joint_qpos_index
    from rob_twin.models.names import UnknownNameError

    if not isinstance(start, dict):
        fail("start", start, "an object with keyframe and/or joints, or after_plan")
    unknown = sorted(set(start) - set(START_KINDS))
    if unknown:
        fail(f"start.{unknown[0]}", "(unknown key)", ", ".join(START_KINDS))
    model = group.model
    if "after_plan" in start:
        if set(start) != {"after_plan"}:
            fail("start", sorted(start), "after_plan alone (it fixes every joint)")
        return _after_plan(start["after_plan"], group, fail)
    name = start.get("keyframe", "home")
    data = mujoco.MjData(model)
    try:
        apply_keyframe(model, data, name)
    except (UnknownNameError, TypeError):
        valid = [model.key(i).name for i in range(model.nkey)]
        fail("start.keyframe", name, f"one of the model's keyframes: {', '.join(valid)}")
    qpos = data.qpos.copy()
    joints = start.get("joints", {})
    if not isinstance(joints, dict):
        fail("start.joints", joints, "an object joint name -> position [rad; m for slides]")
    for joint, value in joints.items():
        try:
            k = joint_qpos_index(model, joint)
        except UnknownNameError:
            fail(f"start.joints.{joint}", "(unknown joint)", "a joint of the model, e.g. right/j1")
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, joint)
        lo, hi = model.jnt_range[jid] if model.jnt_limited[jid] else (-np.inf, np.inf)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
            fail(f"start.joints.{joint}", value, f"a number in [{lo:.4g}, {hi:.4g}]")
        qpos[k] = value
    return qpos


def _after_plan(path: object, group, fail) -> np.ndarray:
    from rob_twin.planners.plan_file import PlanFileError, load_plan_file

    if not isinstance(path, str) or not path:
        fail("start.after_plan", path, "the path of a plan file (rob-twin plan --out)")
    try:
        doc = load_plan_file(path)
    except PlanFileError as err:
        fail("start.after_plan", path, f"a valid plan file ({err})")
    qpos = np.asarray(doc["reference_qpos"], float)
    if qpos.shape != (group.model.nq,):
        fail("start.after_plan", path, f"a plan of this model ({group.model.nq} qpos entries)")
    for arm in doc["moving"]:
        for j, value in zip(doc["joint_names"][arm], doc["q_rad"][arm][-1], strict=True):
            jid = mujoco.mj_name2id(group.model, mujoco.mjtObj.mjOBJ_JOINT, j)
            if jid < 0:
                fail("start.after_plan", path, f"a plan of this model (no joint {j!r})")
            qpos[group.model.jnt_qposadr[jid]] = value
    return qpos


def _goal(arm: str, goal: object, group, fail, robot=None):
    from rob_twin.planners.goals import JointGoal

    field = f"goals.{arm}"
    if not isinstance(goal, dict) or len(goal) != 1 or next(iter(goal)) not in ("joints", "pose"):
        fail(field, goal, 'one of {"joints": [...]} or {"pose": {...}}')
    kind, value = next(iter(goal.items()))
    if kind == "joints":
        names = group.joint_names(arm)
        q = _numbers(value, len(names), f"{field}.joints", fail, "rad")
        lo, hi = group.joint_limits(arm)
        for i, name in enumerate(names):
            if not lo[i] <= q[i] <= hi[i]:
                fail(
                    f"{field}.joints[{i}] ({name})", float(q[i]), f"[{lo[i]:.4g}, {hi[i]:.4g}] rad"
                )
        return JointGoal(q)
    return _pose_goal(value, f"{field}.pose", fail, robot)


def _pose_goal(value: object, field: str, fail, robot=None):
    from rob_twin.planners.pose_goals import PoseGoal

    if not isinstance(value, dict) or set(value) != {"position", "quat_wxyz"}:
        fail(field, value, "an object with position [m] and quat_wxyz (unit quaternion)")
    p = _numbers(value["position"], 3, f"{field}.position", fail, "m")
    if np.any(np.abs(p) > 5.0):
        fail(f"{field}.position", value["position"], "3 numbers in [-5, 5] m")
    quat = _numbers(value["quat_wxyz"], 4, f"{field}.quat_wxyz", fail, "unitless")
    norm = float(np.linalg.norm(quat))
    if abs(norm - 1.0) > 1e-3:
        fail(f"{field}.quat_wxyz", value["quat_wxyz"], "a unit quaternion (norm 1 +- 1e-3)")
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, quat / norm)
    target = np.eye(4)
    target[:3, :3], target[:3, 3] = mat.reshape(3, 3), p
    return PoseGoal(target, robot=robot)

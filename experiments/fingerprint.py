"""Behaviour fingerprint: seeded, deterministic figures of the whole stack as one JSON file,
and a comparison of two such files (simulated; hardware_io: false).

A refactor that promises "same seeds, same results bit for bit" is checked by running this at
the commit before and after and comparing::

    git worktree add /tmp/fp/OLD OLD && git worktree add /tmp/fp/NEW NEW
    (cd /tmp/fp/OLD && python /path/to/experiments/fingerprint.py --out /tmp/fp/out/OLD)
    (cd /tmp/fp/NEW && python /path/to/experiments/fingerprint.py --out /tmp/fp/out/NEW)
    python experiments/fingerprint.py --compare /tmp/fp/out/OLD /tmp/fp/out/NEW

The file is self-contained (standard library at import time) so one copy can be run inside an
old checkout: only the checkout's packages are imported (its directory goes first on sys.path
and the editable install's fallback finder is removed, so a module the old commit lacks is
missing rather than taken from another tree; ``meta.foreign_modules`` must stay empty) and
each group resolves its imports with fallbacks over the module paths the project has had
(``rob_twin.models.*``, then the same without ``rob_twin.``, ``twin.model.*``). A group that
cannot run at a commit is recorded as ``unavailable`` with the reason instead of stopping the
run.

Every figure is exact: floats are written with ``repr`` (round-trips bit for bit), arrays as
their float64 values plus a sha256 of the bytes. Wall times, timestamps, absolute paths, the
Python version, in-process bus run ids and thread-interleaving counts are stripped
(``STRIP_KEYS``, ``STRIP_PATHS``, ``strip_text``); what remains is identical run to run (run
it twice and compare). Groups in ``SLOW`` run only with ``--slow`` or ``--only``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import enum
import hashlib
import importlib
import inspect
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

FORMAT = 1
MAX_VALUES = 60_000  # arrays up to this many elements keep their values (for max differences)
FILE_NAME = "fingerprint.json"
ROOT_PACKAGE = "rob_twin"  # the one import name; older commits import their folders directly

# Keys whose values depend on the host or the clock, not on the seeds: dropped everywhere
# (a word of the key's snake_case name, or one of the owner's and planner's wall-time fields).
STRIP_KEYS = re.compile(
    r"(^|_)(wall|elapsed|cpu|utc|timestamp|written|hostname|pid|python|platform|machine|"
    r"git|commit|stage_times|per_second|throughput|speedup)($|_)|^(compute_s|ruckig_s)$",
    re.IGNORECASE,
)
# Keys whose values come from thread interleaving (several threads racing on a mailbox).
STRIP_PATHS = {
    ("rates", "concurrent"),
}

_groups: list[tuple[str, Callable[[], dict]]] = []


class Unavailable(Exception):
    """A group cannot run at this commit (missing module, function or file)."""


def group(name: str):
    """Register a fingerprint group: a function () -> dict of figures."""

    def wrap(fn):
        _groups.append((name, fn))
        return fn

    return wrap


# ------------------------------------------------------------------------------- helpers
def _spellings(names: tuple[str, ...]) -> list[str]:
    """``names`` with each ``rob_twin.X`` followed by its spelling before the one import name
    (``X``), so one copy of this file runs at commits before and after that layout."""
    out = []
    for n in names:
        out.append(n)
        if n.startswith(ROOT_PACKAGE + "."):
            out.append(n[len(ROOT_PACKAGE) + 1 :])
    return list(dict.fromkeys(out))


def imp(*names: str):
    """The first of the modules ``names`` that imports (Unavailable when none does)."""
    errors = []
    for n in _spellings(names):
        try:
            return importlib.import_module(n)
        except ModuleNotFoundError as err:
            errors.append(f"{n}: {err}")
    raise Unavailable("no module of " + "; ".join(errors))


def attr(names: tuple[str, ...], *attrs: str):
    """The first attribute ``attrs`` found in the first module of ``names`` that has it."""
    for n in _spellings(names):
        try:
            mod = importlib.import_module(n)
        except ModuleNotFoundError:
            continue
        for a in attrs:
            if hasattr(mod, a):
                return getattr(mod, a)
    raise Unavailable(f"none of {attrs} in {names}")


def call(fn, *args, **kwargs):
    """Call ``fn`` with only the keyword arguments its signature accepts."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn(*args, **kwargs)
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        kwargs = {k: v for k, v in kwargs.items() if k in params}
    return fn(*args, **kwargs)


def sha(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode()
    return hashlib.sha256(data).hexdigest()


def _member(x: enum.Enum) -> str:
    """An enum member as ``Type.NAME``; a str-valued one (``StrEnum``) too, as a key or value,
    so whether an enum mixes in str does not change the fingerprint."""
    return f"{type(x).__name__}.{x.name}"


def canon(x, key_path: tuple = ()):
    """``x`` as plain JSON data, exactly: arrays -> {shape, dtype, sha256, values}."""
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.ndarray):
        arr = np.ascontiguousarray(x)
        out = {"__array__": list(arr.shape), "dtype": str(arr.dtype), "sha256": sha(arr.tobytes())}
        if arr.dtype.kind in "fciub" and arr.size <= MAX_VALUES:
            flat = arr.astype(float if arr.dtype.kind in "fc" else int).ravel()
            out["values"] = [canon(v) for v in flat.tolist()]
        elif arr.dtype.kind not in "fciub":
            out["values"] = [str(v) for v in arr.ravel().tolist()]
        return out
    if np is not None and isinstance(x, np.generic):
        return canon(x.item())
    if isinstance(x, str):
        return _member(x) if isinstance(x, enum.Enum) else strip_text(x)
    if isinstance(x, bool) or x is None or isinstance(x, int):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else repr(x)
    if isinstance(x, enum.Enum):
        return _member(x)
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            k = _member(k) if isinstance(k, enum.Enum) and isinstance(k, str) else str(k)
            if STRIP_KEYS.search(k) or (key_path + (k,)) in STRIP_PATHS:
                continue
            out[k] = canon(v, key_path + (k,))
        return out
    if isinstance(x, list | tuple | set | frozenset) and not hasattr(x, "_asdict"):
        seq = sorted(x, key=repr) if isinstance(x, set | frozenset) else x
        return [canon(v, key_path) for v in seq]
    if isinstance(x, bytes | bytearray):
        return bytes(x).hex()
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        fields = {f.name: getattr(x, f.name) for f in dataclasses.fields(x)}
        return {"__type__": type(x).__name__, **canon(fields, key_path)}
    if isinstance(x, tuple) and hasattr(x, "_asdict"):
        return {"__type__": type(x).__name__, **canon(x._asdict(), key_path)}
    if isinstance(x, Path):
        return "<path>"
    return strip_text(repr(x))


def strip_text(s: str) -> str:
    """Absolute paths and memory addresses out of free text."""
    s = re.sub(r"0x[0-9a-f]{8,}", "0x?", s)
    s = re.sub(r"\b(CAN\w*)@[\w.]+", r"\1@<run>", s)  # in-process bus names carry a run id
    return re.sub(r"(?<![\w.])(/[\w.+-]+){2,}", "<path>", s)


def arr(x):
    import numpy as np

    return np.asarray(x, dtype=float)


@contextlib.contextmanager
def quiet():
    """Swallow what the code under test prints (progress bars, human lines)."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


# -------------------------------------------------------------------------------- model
LOADING = ("rob_twin.models.loading", "twin.model.loading", "twin.model")
BUILD = ("rob_twin.models.build", "twin.model.build")


def _without_generated_header(xml: str) -> str:
    """``xml`` less its "GENERATED by <command>" comment, which names the command that
    regenerates the file: documentation that moves with the module, not model content."""
    return re.sub(r"<!--\s*GENERATED by.*?-->", "", xml, count=1, flags=re.S)


@group("model_files")
def g_model_files() -> dict:
    """sha256 of the generated MJCF files in the checkout (rob.xml, scene.xml)."""
    robot = Path(attr(LOADING, "ROBOT_PATH"))
    scene = Path(attr(LOADING, "SCENE_PATH"))
    out = {p.name: sha(_without_generated_header(p.read_text())) for p in (robot, scene)}
    for p in (robot, scene):  # the same without XML comments (a moved builder's header)
        text = re.sub(r"<!--.*?-->", "", p.read_text(), flags=re.S)
        out[f"{p.name} without comments"] = sha(text)
    return out


@group("model_generated_xml")
def g_model_generated() -> dict:
    """sha256 of the MJCF the builder writes now (must equal the files: nothing stale)."""
    out = {}
    for fn_name in ("robot_xml", "scene_xml"):
        text = attr(BUILD, fn_name)()
        out[fn_name] = sha(_without_generated_header(text))
        out[f"{fn_name} without comments"] = sha(re.sub(r"<!--.*?-->", "", text, flags=re.S))
    return out


def _scene():
    return attr(LOADING, "load_scene")()


MODEL_ARRAYS = {
    "model_bodies": (
        "body_parentid body_pos body_quat body_ipos body_iquat body_mass body_inertia body_gravcomp"
    ),
    "model_geoms": (
        "geom_type geom_bodyid geom_size geom_pos geom_quat geom_contype geom_conaffinity "
        "geom_friction geom_margin geom_gap geom_rgba geom_group"
    ),
    "model_joints": (
        "jnt_type jnt_bodyid jnt_pos jnt_axis jnt_range jnt_limited jnt_stiffness qpos0 "
        "dof_damping dof_armature dof_frictionloss"
    ),
    "model_actuators": (
        "actuator_trntype actuator_trnid actuator_gainprm actuator_biasprm actuator_ctrlrange "
        "actuator_forcerange actuator_ctrllimited actuator_forcelimited"
    ),
    "model_sites_sensors": (
        "site_bodyid site_pos site_quat site_size sensor_type sensor_objid sensor_noise "
        "cam_pos cam_quat cam_fovy light_pos exclude_signature"
    ),
}


def _model_group(names: str) -> dict:
    m = _scene()
    out = {}
    for n in names.split():
        if hasattr(m, n):
            out[n] = canon(getattr(m, n))
    return out


for _gname, _names in MODEL_ARRAYS.items():
    group(_gname)(lambda _names=_names: _model_group(_names))


@group("model_options_names")
def g_model_options() -> dict:
    m = _scene()
    import mujoco

    counts = {k: int(getattr(m, k)) for k in "nq nv nu nbody ngeom njnt nsite nsensor nkey".split()}
    opt = {k: canon(getattr(m.opt, k)) for k in ("timestep", "gravity", "integrator", "cone")}
    names = {}
    for obj, n in (("BODY", m.nbody), ("GEOM", m.ngeom), ("JOINT", m.njnt), ("ACTUATOR", m.nu)):
        t = getattr(mujoco.mjtObj, f"mjOBJ_{obj}")
        names[obj.lower()] = sha("\n".join(str(mujoco.mj_id2name(m, t, i)) for i in range(n)))
    return {"counts": counts, "opt": opt, "names_sha256": names}


@group("model_keyframes")
def g_model_keyframes() -> dict:
    import mujoco

    m = _scene()
    keys = {}
    for i in range(m.nkey):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_KEY, i)
        keys[name] = {"qpos": canon(m.key_qpos[i]), "ctrl": canon(m.key_ctrl[i])}
    return {"nkey": int(m.nkey), "keys": keys}


@group("physics_steps")
def g_physics() -> dict:
    """300 physics steps from home with the servos holding home (qpos after each 50 steps)."""
    import mujoco
    import numpy as np

    m, qpos = _home_state()
    d = mujoco.MjData(m)
    d.qpos[:] = qpos
    mujoco.mj_forward(m, d)
    # every joint-driven servo commanded to its joint's home angle (not from a keyframe:
    # models before the keyframes existed must get the same commands)
    for i in range(m.nu):
        if m.actuator_trntype[i] == mujoco.mjtTrn.mjTRN_JOINT:
            d.ctrl[i] = qpos[m.jnt_qposadr[m.actuator_trnid[i, 0]]]
    out = []
    for k in range(300):
        mujoco.mj_step(m, d)
        if k % 50 == 49:
            out.append(d.qpos.copy())
    return {"qpos": canon(np.array(out)), "qvel_end": canon(d.qvel.copy())}


def _home_state():
    """(scene model, home qpos) at any commit."""
    with contextlib.suppress(Unavailable):
        return attr(("rob_twin.experiments.crossing_goals",), "rob_home")()
    import mujoco

    m = _scene()
    d = mujoco.MjData(m)
    attr(LOADING, "apply_home")(m, d)
    return m, d.qpos.copy()


# ----------------------------------------------------------------------------- planners
def _arms():
    return attr(("rob_twin.models.names", "rob_twin.controllers.names"), "group_arms")()


def _group(qpos=None, model=None):
    ArmGroup = attr(("rob_twin.planners.group", "planners"), "ArmGroup")
    if model is None:
        model, home = _home_state()
        qpos = home if qpos is None else qpos
    g = ArmGroup(model, _arms())
    g.set_qpos(qpos)
    return g


def _plan(group, goals, seed: int):
    return call(group.plan, goals, seed=seed, time_budget_s=None)


def _plan_figures(res) -> dict:
    out = {"status": canon(res.status), "reason": strip_text(res.reason or "")}
    p = res.plan
    if p is None:
        return out
    out["t"] = canon(p.t)
    out["rate_hz"] = p.rate_hz
    out["arms"] = {
        a: {"q": canon(tr.q), "qd": canon(tr.qd), "qdd": canon(tr.qdd)}
        for a, tr in sorted(p.arms.items())
    }
    out["waypoints"] = canon(p.waypoints)
    mc = p.min_clearance
    out["min_clearance"] = {
        "distance_m": mc.distance_m,
        "time_s": mc.time_s,
        "pair": canon(mc.pair),
        "lower_bound": mc.lower_bound,
    }
    for k in ("checked_states", "repairs", "goal_resamples", "colliding_before_repair"):
        out[k] = getattr(p, k, None)
    return out


def _certificate_figures(res) -> dict:
    cert = getattr(res.plan, "certificate", None) if res.plan is not None else None
    return {"certificate": canon(cert)}


_plans_cache: dict[str, list] = {}


def _crossing_plans():
    if "crossing" not in _plans_cache:
        cg = imp("rob_twin.experiments.crossing_goals")
        model, start = cg.crossing_start_qpos()
        goals = cg.rob_crossing_goals()
        g = _group(start, model)
        _plans_cache["crossing"] = [(s, _plan(g, goals, s)) for s in (0, 1)]
    return _plans_cache["crossing"]


def _study_plans():
    if "study" not in _plans_cache:
        import numpy as np

        goal_pairs = attr(("rob_twin.experiments.goal_pairs",), "goal_pairs")
        g = _group()
        pairs = goal_pairs(g, 3, np.random.default_rng(7))
        _plans_cache["study"] = [(pairs, _plan(g, p, 0)) for p in pairs]
    return _plans_cache["study"]


def _hard_plans():
    if "hard" not in _plans_cache:
        hp = imp("rob_twin.experiments.hard_problems")
        g = _group()
        _, qpos = _home_state()
        out = []
        for prob in hp.load("rob")[:3]:
            g.set_qpos(qpos)
            for a, q in prob.start.items():
                g.set_arm(a, q)
            out.append((prob, _plan(g, prob.goal, 0)))
        _plans_cache["hard"] = out
    return _plans_cache["hard"]


@group("plan_crossing")
def g_plan_crossing() -> dict:
    """ArmGroup plans of the crossing pair (planner seeds 0 and 1)."""
    return {f"seed{s}": _plan_figures(r) for s, r in _crossing_plans()}


@group("plan_study_pairs")
def g_plan_study() -> dict:
    """Three seeded goal pairs from home (goal_pairs, rng 7), planner seed 0."""
    out = {}
    for i, (pairs, r) in enumerate(_study_plans()):
        out[f"pair{i}"] = {
            "goal": {a: canon(q) for a, q in sorted(pairs[i].items())},
            **_plan_figures(r),
        }
    return out


@group("plan_hard_problems")
def g_plan_hard() -> dict:
    """The first three frozen hard problems of ROB, planner seed 0."""
    return {f"problem{i}_{p.kind}": _plan_figures(r) for i, (p, r) in enumerate(_hard_plans())}


@group("plan_pose_goals")
def g_plan_pose_goals() -> dict:
    """The first two study pairs as TCP pose goals (PoseGoal, default IK), planner seed 0."""
    pose_targets = attr(("rob_twin.experiments.goal_pairs",), "pose_targets")
    PoseGoal = attr(("rob_twin.planners.pose_goals", "planners"), "PoseGoal")
    pairs = [p for p, _ in _study_plans()][0][:2]
    g = _group()
    _, home = _home_state()
    out = {}
    for i, targets in enumerate(pose_targets(g, pairs)):
        g.set_qpos(home)
        goals = {a: PoseGoal(t) for a, t in sorted(targets.items())}
        out[f"pair{i}"] = _plan_figures(_plan(g, goals, 0))
    return out


@group("plan_certificates")
def g_plan_certificates() -> dict:
    """The clearance certificates the plans above carry (None before certificates existed)."""
    out = {f"crossing_seed{s}": _certificate_figures(r) for s, r in _crossing_plans()}
    for i, (_, r) in enumerate(_study_plans()):
        out[f"study{i}"] = _certificate_figures(r)
    return out


@group("clearance_states")
def g_clearance() -> dict:
    """ArmGroup.clearance of 40 seeded joint states around home (distance, pair)."""
    import numpy as np

    g = _group()
    rng = np.random.default_rng(3)
    dist, pairs = [], []
    for _ in range(40):
        q = {}
        for a in g.arm_names:
            lo, hi = g.joint_limits(a)
            q[a] = np.clip(g.arm_q(a) + rng.normal(0.0, 0.6, lo.size), lo, hi)
        c = g.clearance(q)
        dist.append(c.distance_m)
        pairs.append(str(getattr(c, "pair", None)))  # names, not geom indices
    return {"distance_m": canon(np.array(dist)), "nearest_pairs": pairs}


@group("kinematics_ik")
def g_ik() -> dict:
    """TCP poses of 10 seeded joint vectors per arm and IK of those poses (default solver)."""
    import numpy as np

    ArmKinematics = attr(("rob_twin.planners.kinematics", "planners"), "ArmKinematics")
    IKSolver = attr(("rob_twin.planners.ik", "planners"), "IKSolver")
    rng = np.random.default_rng(11)
    out = {}
    for arm in ("right", "left"):
        kin = ArmKinematics(arm)
        solver = IKSolver(kin)
        lo, hi = kin.model.lowerPositionLimit[1:], kin.model.upperPositionLimit[1:]
        poses, sols, status = [], [], []
        for _ in range(10):
            q = rng.uniform(lo * 0.8, hi * 0.8)
            pose = kin.tcp_pose(q)
            poses.append(np.concatenate([pose.translation, pose.rotation.ravel()]))
            res = solver.solve(pose)
            status.append(canon(res.status))
            sols.append(res.q if res.q is not None else np.full(q.size, np.nan))
        out[arm] = {
            "tcp_poses": canon(np.array(poses)),
            "ik_status": status,
            "ik_q": canon(np.array(sols)),
        }
    return out


@group("ik_seeded")
def g_ik_seeded() -> dict:
    """IK seeded near the answer (q + 0.05 rad noise) for 8 seeded poses per arm."""
    import numpy as np

    ArmKinematics = attr(("rob_twin.planners.kinematics", "planners"), "ArmKinematics")
    IKSolver = attr(("rob_twin.planners.ik", "planners"), "IKSolver")
    rng = np.random.default_rng(17)
    out = {}
    for arm in ("right", "left"):
        kin = ArmKinematics(arm)
        solver = IKSolver(kin)
        lo, hi = kin.model.lowerPositionLimit[1:], kin.model.upperPositionLimit[1:]
        status, sols = [], []
        for _ in range(8):
            q = rng.uniform(lo * 0.8, hi * 0.8)
            res = solver.solve(kin.tcp_pose(q), seed=q + rng.normal(0, 0.05, q.size))
            status.append(canon(res.status))
            sols.append(res.q if res.q is not None else np.full(q.size, np.nan))
        out[arm] = {"ik_status": status, "ik_q": canon(np.array(sols))}
    return out


# ---------------------------------------------------------------------------- controllers
@group("codec_amber")
def g_codec_amber() -> dict:
    """Amber codec: encode 21 joint vectors, decode every frame, feedback round trips."""
    import numpy as np

    codec = imp("rob_twin.controllers.codec")
    cfg = codec.default_config()
    lo, hi = np.array(cfg.lower_rad), np.array(cfg.upper_rad)
    rng = np.random.default_rng(5)
    samples = [lo, hi, (lo + hi) / 2, lo + 1e-7, hi - 1e-7]
    samples += [rng.uniform(lo, hi) for _ in range(16)]
    frames, decoded = [], []
    for s in samples:
        fr = codec.encode_sample(s) if hasattr(codec, "encode_sample") else None
        if fr is None:
            raise Unavailable("rob_twin.controllers.codec.encode_sample missing")
        fr = fr if isinstance(fr, list | tuple) else list(fr)
        for f in fr:
            aid = getattr(f, "arbitration_id", None)
            data = bytes(getattr(f, "data", b""))
            frames.append(f"{aid}:{data.hex()}")
            d = codec.decode_command(aid, data)
            decoded.append(canon(d))
    words = codec.counts_to_words(np.arange(-32766, 32769, 97))
    return {
        "frames_sha256": sha("\n".join(frames)),
        "frames_first": frames[:14],
        "decoded_sha256": sha(json.dumps(decoded, sort_keys=True)),
        "words": canon(np.asarray(words)),
        "rad_to_counts": canon(np.asarray(codec.rad_to_counts_float(np.linspace(-3, 3, 101)))),
    }


@group("codec_damiao")
def g_codec_damiao() -> dict:
    """Damiao codec: MIT commands and state frames for each motor model, encoded and decoded."""
    import numpy as np

    dc = imp("rob_twin.controllers.damiao_codec")
    motors = imp("rob_twin.models.damiao_motors", "rob_twin.controllers.damiao_motors").MOTORS
    rng = np.random.default_rng(9)
    out = {}
    for name, lim in sorted(motors.items()):
        sc = dc.Scaling.of(lim)
        mit, states = [], []
        for _ in range(12):
            cmd = dc.MitCommand(
                q_rad=float(rng.uniform(-0.9, 0.9) * sc.pmax_rad),
                dq_rad_s=float(rng.uniform(-0.9, 0.9) * sc.vmax_rad_s),
                kp=float(rng.uniform(0, 400)),
                kd=float(rng.uniform(0, 4)),
                tau_nm=float(rng.uniform(-0.9, 0.9) * sc.tmax_nm),
            )
            data = dc.encode_mit(cmd, sc)
            mit.append([data.hex(), canon(tuple(dc.decode_mit(data, sc)))])
            st = dc.encode_state(
                3,
                1,
                float(rng.uniform(-0.9, 0.9) * sc.pmax_rad),
                float(rng.uniform(-0.9, 0.9) * sc.vmax_rad_s),
                float(rng.uniform(-0.9, 0.9) * sc.tmax_nm),
                40,
                45,
                sc,
            )
            states.append([st.hex(), canon(tuple(dc.decode_state(st, sc)))])
        out[name] = {"mit": mit, "state": states}
    return out


def _owner_rig():
    """A lockstep right-arm owner on a SimClock with a recording publisher."""
    import numpy as np

    SimClock = attr(("rob_twin.controllers.clock",), "SimClock")
    owner_mod = imp("rob_twin.controllers.owner")
    default_config = attr(
        ("rob_twin.controllers.owner_config", "rob_twin.controllers.owner"), "default_config"
    )
    Arm = attr(("rob_twin.models.names", "rob_twin.controllers.names"), "Arm")
    ArmTarget = attr(("rob_twin.controllers.target",), "ArmTarget")
    publish = imp("rob_twin.controllers.publish")

    class Pub:
        def __init__(self):
            self.samples = []

        def publish_sample(self, positions_rad):
            self.samples.append(np.array(positions_rad, float))
            return publish.PublishReport(
                outcome=publish.PublishOutcome.ACCEPTED, accepted_joints=tuple(range(1, 8))
            )

    clock, pub = SimClock(), Pub()
    owner = owner_mod.ArmOwner(Arm.RIGHT, pub, clock, np.zeros(7), default_config())
    lease = owner.grant_lease("fingerprint", 1e6)
    return owner, clock, pub, lease, Arm, ArmTarget


@group("owner_run")
def g_owner() -> dict:
    """ArmOwner ticks over a scripted target sequence (retargets while moving, a burst, stop)."""
    import numpy as np

    owner, clock, pub, lease, Arm, ArmTarget = _owner_rig()
    rng = np.random.default_rng(13)
    script = {}
    for k in range(0, 1500, 37):
        script[k] = [rng.uniform(-0.8, 0.8, 7)]
    script[800] = [np.full(7, 0.001 * j) for j in range(50)]  # burst: only the last counts
    seq = 0
    reports = []
    for k in range(1600):
        for pos in script.get(k, ()):
            seq += 1
            t = ArmTarget(
                arm=Arm.RIGHT,
                positions_rad=pos,
                sequence=seq,
                generation=owner.generation,
                lease=lease,
            )
            owner.submit(t)
        if k == 1550:
            owner.stop()
        owner.observe_feedback(owner.commanded_state()[0], clock.now())
        r = owner.tick()
        reports.append((bool(r.published), bool(r.new_plan), canon(getattr(r, "mode", None))))
        clock.advance(owner.config.period_s)
    samples = np.array(pub.samples)
    p, v, a = owner.commanded_state()
    return {
        "samples": canon(samples),
        "reports_sha256": sha(json.dumps(reports)),
        "final_state": canon(np.concatenate([p, v, a])),
        "plans": getattr(owner.stats, "plans", None),
    }


# --------------------------------------------------------------------------------- twin
def _short_scenario(name: str, duration: float):
    import json as _json

    scen = imp("rob_twin.twin.scenario.run", "rob_twin.twin.scenario")
    path = Path("experiments/scenarios") / f"{name}.json"
    if not path.exists():
        raise Unavailable(f"no scenario file {name}.json")
    raw = _json.loads(path.read_text())
    raw.pop("$schema", None)
    raw["duration"] = duration
    raw["keyframes"] = [k for k in raw.get("keyframes", []) if k["t"] <= duration]
    return scen, scen.Scenario.from_dict(raw)


def _run_figures(res) -> dict:
    out = {
        "simulated_s": res.simulated_s,
        "status": getattr(res, "status", None),
        "times": canon(res.times),
        "commanded": {str(k): canon(v) for k, v in sorted(res.commanded.items(), key=str)},
        "measured": {str(k): canon(v) for k, v in sorted(res.measured.items(), key=str)},
        "refused_targets": canon(getattr(res, "refused_targets", {})),
    }
    return out


@group("scenario_wave")
def g_scenario() -> dict:
    """The example scenario 'wave', first 1.5 s, headless, no video: joint trajectories."""
    scen, sc = _short_scenario("wave", 1.5)
    with quiet():
        res = call(scen.run_scenario, sc, out_dir=None, record=False, progress=False)
    out = _run_figures(res)
    out["pipeline"] = canon(res.pipeline)
    return out


@group("bus_timing")
def g_bus() -> dict:
    """The same 1.5 s of 'wave' through a simulated 1 Mbit/s classic CAN bus: bus figures."""
    bt = imp("rob_twin.twin.bus.timing", "rob_twin.twin.bus_timing")
    scen, sc = _short_scenario("wave", 1.5)
    with quiet():
        res = call(
            scen.run_scenario,
            sc,
            out_dir=None,
            record=False,
            progress=False,
            bus_timing=bt.parse_bus_spec("1M"),
        )
    if getattr(res, "bus", None) is None:
        raise Unavailable("run_scenario has no bus timing")
    return {"bus": canon(res.bus), "commanded": _run_figures(res)["commanded"]}


@group("rehearsal")
def g_rehearsal() -> dict:
    """Rehearsal gates exclusive_output, stopping, feedback (seed 0): the report."""
    reh = imp("rob_twin.twin.rehearsal")
    with quiet():
        report = call(
            reh.rehearse, None, ["exclusive_output", "stopping", "feedback"], progress=False
        )
    return canon(report)


# -------------------------------------------------------------------------- experiments
EXPERIMENTS = (
    "codec",
    "extremum",
    "rates",
    "faults",
    "legacy-race",
    "inconsistent-seed",
    "clearance-examples",
    "wire-replay",
    "replay",
    "crossing",
    "sequential",
)
# Groups left out unless --slow: the crossing experiment plans ten seeds and judges every
# frame with coal (about 2 min on one loaded core).
SLOW = {"experiment_crossing"}


def _experiment(name: str) -> dict:
    reg = imp("rob_twin.experiments.registry")
    try:
        fn = reg.get_experiment(name)
    except (KeyError, ValueError) as err:
        raise Unavailable(f"experiment {name!r} not registered: {err}") from None
    output = sys.modules.get("rob_twin.experiments.output") or sys.modules.get("experiments.output")
    saved = getattr(output, "OUT_DIR", None)
    with tempfile.TemporaryDirectory() as tmp, quiet():
        if saved is not None:  # result files go to a scratch folder, not the checkout's out/
            output.OUT_DIR = Path(tmp) / "out"
        try:
            result = fn(seed=0)
        finally:
            if saved is not None:
                output.OUT_DIR = saved
    plain = json.loads(json.dumps(result, default=lambda o: canon(o)))
    return canon(plain, (name,))


for _e in EXPERIMENTS:
    group(f"experiment_{_e}")(lambda _e=_e: _experiment(_e))


# -------------------------------------------------------------------------------- run
def _meta() -> dict:
    meta = {"format": FORMAT, "cwd": os.getcwd()}
    with contextlib.suppress(Exception):
        meta["commit"] = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    for pkg in ("planners", "controllers", "twin", "experiments", "models"):
        meta[f"{pkg}.__file__"] = None
        for name in (f"{ROOT_PACKAGE}.{pkg}", pkg):
            try:
                mod = importlib.import_module(name)
            except ModuleNotFoundError:
                continue
            file = getattr(mod, "__file__", None)  # the checkout's file behind any link
            meta[f"{pkg}.__file__"] = os.path.realpath(file) if file else None
            break
    return meta


def fingerprint(only: list[str] | None = None, slow: bool = False) -> dict:
    """{"meta": ..., "groups": {name: figures | {"unavailable": reason}}} for this checkout.

    only: group names to run (default: all); slow: also the groups in ``SLOW``."""
    groups = {}
    for name, fn in _groups:
        if only and name not in only:
            continue
        if name in SLOW and not slow and not only:
            groups[name] = {"unavailable": "skipped: slow group (run with --slow)"}
            continue
        t0 = time.perf_counter()
        try:
            figures = canon(fn())
            groups[name] = {"figures": figures, "sha256": sha(json.dumps(figures, sort_keys=True))}
        except Exception as err:  # a group that cannot run here says why, the rest go on
            tb = traceback.extract_tb(err.__traceback__)[-1]
            reason = (
                f"{type(err).__name__}: {err}"
                if isinstance(err, Unavailable | ImportError)
                else (f"{type(err).__name__}: {err} (at {Path(tb.filename).name}:{tb.lineno})")
            )
            groups[name] = {"unavailable": strip_text(reason)}
        print(
            f"{name:32s} {time.perf_counter() - t0:6.1f} s  "
            f"{'unavailable' if 'unavailable' in groups[name] else 'ok'}",
            file=sys.stderr,
        )
    return {"meta": _meta(), "groups": groups}


def group_names() -> list[str]:
    return [n for n, _ in _groups]


# ------------------------------------------------------------------------------ compare
def _numeric(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def diff(a, b, path: str = "") -> list[tuple[str, float | None]]:
    """Differences between two canonical values: (key path, largest |a - b| or None)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if "__array__" in a and "__array__" in b:
            if a.get("sha256") == b.get("sha256") and a["__array__"] == b["__array__"]:
                return []
            va, vb = a.get("values"), b.get("values")
            if a["__array__"] == b["__array__"] and va is not None and vb is not None:
                gaps = [
                    abs(x - y) if _numeric(x) and _numeric(y) else math.inf
                    for x, y in zip(va, vb, strict=True)
                    if x != y
                ]
                if gaps:
                    return [(path, max(gaps))]
                if a.get("dtype") != b.get("dtype"):
                    return [(f"{path} (dtype {a.get('dtype')} vs {b.get('dtype')})", 0.0)]
                signed = sum(repr(x) != repr(y) for x, y in zip(va, vb, strict=True))
                return [(f"{path} (equal values, {signed} signed zeros differ)", 0.0)]
            return [(f"{path} (shape {a['__array__']} vs {b['__array__']})", None)]
        out = []
        for k in sorted(set(a) | set(b)):
            p = f"{path}.{k}" if path else k
            if k not in a or k not in b:
                out.append((f"{p} ({'only B' if k not in a else 'only A'})", None))
            else:
                out += diff(a[k], b[k], p)
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [(f"{path} (length {len(a)} vs {len(b)})", None)]
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out += diff(x, y, f"{path}[{i}]")
        return out
    if a == b or (a != a and b != b):
        return []
    if _numeric(a) and _numeric(b):
        return [(path, abs(a - b))]
    return [(path, None)]


def _load(folder: str) -> dict:
    p = Path(folder)
    return json.loads((p / FILE_NAME if p.is_dir() else p).read_text())


def compare(a_dir: str, b_dir: str, out=sys.stdout) -> dict:
    """Per group: identical / differs / unavailable; returns the summary dict."""
    fa, fb = _load(a_dir), _load(b_dir)
    a, b = fa["groups"], fb["groups"]
    for side, f in (("A", fa), ("B", fb)):
        if f["meta"].get("foreign_modules"):
            print(
                f"WARNING: {side} imported modules from outside its checkout: "
                f"{f['meta']['foreign_modules'][:3]}",
                file=out,
            )
    summary = {"identical": [], "differs": {}, "unavailable": {}, "availability_changed": {}}
    for name in list(a) + [n for n in b if n not in a]:
        ga, gb = a.get(name, {"unavailable": "not in A"}), b.get(name, {"unavailable": "not in B"})
        ua, ub = "unavailable" in ga, "unavailable" in gb
        if ua and ub:
            summary["unavailable"][name] = [ga["unavailable"], gb["unavailable"]]
            print(f"{name:32s} unavailable in both (A: {ga['unavailable'][:70]})", file=out)
            continue
        if ua or ub:
            why = ga.get("unavailable") or gb.get("unavailable")
            summary["availability_changed"][name] = f"{'A' if ua else 'B'} unavailable: {why}"
            print(f"{name:32s} DIFFERS: unavailable in {'A' if ua else 'B'} ({why[:80]})", file=out)
            continue
        if ga["sha256"] == gb["sha256"]:
            summary["identical"].append(name)
            print(f"{name:32s} identical", file=out)
            continue
        d = diff(ga["figures"], gb["figures"])
        nums = [g for _, g in d if g is not None and math.isfinite(g)]
        largest = max(nums) if nums else None
        keys = [k for k, _ in d]
        summary["differs"][name] = {"max_abs_diff": largest, "keys": keys, "count": len(keys)}
        shown = ", ".join(f"{k}{'' if g is None else f' ({g:.3g})'}" for k, g in d[:6])
        more = f" ... (+{len(d) - 6} more)" if len(d) > 6 else ""
        big = "non-numeric" if largest is None else f"largest numeric difference {largest:.3g}"
        print(f"{name:32s} DIFFERS ({len(d)} keys, {big}): {shown}{more}", file=out)
    n_diff = len(summary["differs"]) + len(summary["availability_changed"])
    print(
        f"total: {len(summary['identical'])} identical, {n_diff} differ "
        f"({len(summary['availability_changed'])} by availability), "
        f"{len(summary['unavailable'])} unavailable in both",
        file=out,
    )
    summary["any_difference"] = n_diff > 0
    return summary


PACKAGES = ("controllers", "planners", "twin", "experiments", "models", "cli")


def _maps_into_root_package(root: str) -> bool:
    """Whether the checkout at ``root`` installs its folders as ``rob_twin.*`` (the one import
    name) rather than as top-level packages (commits before that layout)."""
    pyproject = Path(root) / "pyproject.toml"
    return pyproject.is_file() and f'"{ROOT_PACKAGE}.' in pyproject.read_text()


def isolate_checkout(root: str | None = None) -> None:
    """Import the project only from ``root`` (default: the working directory).

    An editable install adds a finder after the path finder that serves any module the
    checkout lacks from the installed tree: a module that did not exist at an old commit
    would silently come from another one. That finder and its path entries go. A checkout
    that maps its folders into ``rob_twin`` gets a scratch folder holding ``rob_twin/<folder>``
    links to its own folders; an older checkout gets none (``rob_twin`` then does not import,
    and each group falls back to the old top-level names). The scratch folder and ``root`` go
    first on sys.path and into PYTHONPATH for child processes."""
    root = os.path.abspath(root or os.getcwd())
    sys.meta_path[:] = [
        f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")
    ]
    sys.path_hooks[:] = [h for h in sys.path_hooks if "__editable__" not in repr(h)]
    kept = [p for p in sys.path if p not in ("", root) and "__editable__" not in p]
    front = [root]
    if _maps_into_root_package(root):
        shim = Path(tempfile.mkdtemp(prefix="fingerprint-")) / ROOT_PACKAGE
        shim.mkdir()
        for pkg in PACKAGES:
            if (Path(root) / pkg / "__init__.py").is_file():
                (shim / pkg).symlink_to(Path(root) / pkg, target_is_directory=True)
        front = [str(shim.parent), root]
    sys.modules.pop(ROOT_PACKAGE, None)
    sys.path_importer_cache.clear()
    sys.path[:] = front + kept
    os.environ["PYTHONPATH"] = os.pathsep.join(
        front + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    )


def foreign_modules(root: str | None = None) -> list[str]:
    """Project modules loaded from outside ``root`` (must be empty)."""
    root = os.path.realpath(root or os.getcwd()) + os.sep
    this_file = os.path.realpath(__file__)
    out = []
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if name.split(".")[0] not in (*PACKAGES, ROOT_PACKAGE) or not f:
            continue
        real = os.path.realpath(f)  # a module of a linked rob_twin/<folder> is the checkout's
        if not real.startswith(root) and real != this_file:
            out.append(f"{name}: {f}")
    return sorted(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="fingerprint", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="folder to write fingerprint.json into")
    ap.add_argument("--compare", nargs=2, metavar=("DIR_A", "DIR_B"))
    ap.add_argument("--only", nargs="*", help="group names (default: all)")
    ap.add_argument("--slow", action="store_true", help="also the slow groups " + str(sorted(SLOW)))
    ap.add_argument("--list", action="store_true", help="list the groups")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(group_names()))
        return 0
    if args.compare:
        return 1 if compare(*args.compare)["any_difference"] else 0
    if not args.out:
        ap.error("give --out DIR or --compare DIR_A DIR_B")
    isolate_checkout()
    fp = fingerprint(args.only, args.slow)
    fp["meta"]["foreign_modules"] = foreign_modules()
    if fp["meta"]["foreign_modules"]:
        print(
            f"WARNING: modules from outside the checkout: {fp['meta']['foreign_modules']}",
            file=sys.stderr,
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / FILE_NAME).write_text(json.dumps(fp, indent=1, sort_keys=True) + "\n")
    print(f"planners imported from {fp['meta'].get('planners.__file__')}", file=sys.stderr)
    print(f"wrote {out / FILE_NAME}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    # Run as a file inside another checkout: that checkout's packages come first, and this
    # file's folder (experiments/ of another tree) is not a place to import from.
    here = str(Path(__file__).resolve().parent)
    sys.path[:] = [os.getcwd()] + [p for p in sys.path if p not in ("", here, os.getcwd())]
    sys.exit(main())

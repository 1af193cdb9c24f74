"""A plan and its clearance certificate as one JSON document (``save_plan`` / ``load_plan_file``).

Everything the certificate rests on travels with it, so that anyone can re-verify it from
the model alone (``rob_twin.planners.certificate_check``): the moving arms and joint names, the
shared time base ``t`` [s], positions ``q`` [rad], velocities ``qd`` [rad/s] and
accelerations ``qdd`` [rad/s^2] per arm, the full reference qpos of every other joint, the
acceleration and velocity limits the speed bound between samples uses, margin and horizon
[m], the certificate itself (``PlanClearanceCertificate.as_dict``: per pair the certified
minimum, where, the active queries, the uncertainty spec, the bisection queries, the
model's hash).

A plan file comes from outside the process: ``load_plan_file`` reads it with the bounded
JSON reader (size, depth, finite numbers, no repeated keys) and ``validate_plan_document``
checks every field: each array finite and of its shape, times rising from 0, limits and
margins positive (velocity limits <= ``MAX_VELOCITY_RAD_S``, acceleration limits <=
``MAX_ACCELERATION_RAD_S2``, allowances in [0, ``MAX_ALLOWANCE_M``]), each listed pair once,
sample and query counts capped (``PlanFileLimits``), no key the format does not have
(``TOP_KEYS``, ``CERTIFICATE_KEYS``, ``PAIR_KEYS``; the per-arm objects ``joint_names``,
``q_rad``, ``qd_rad_s``, ``qdd_rad_s2`` and the limits hold the moving arms only: another arm
there would be a claim nothing checks). Whether the figures are true is
``rob_twin.planners.certificate_claims``'s and ``certificate_check``'s to decide.
The pair list lists the pairs measured within the horizon (the
lowest at least); it is empty only when every pair is bounded by the far-pair bound
(``pairs_far`` = ``pairs_total``, ``certified_min_m`` = ``far_pairs_min_m``). Each listed
pair names its distance judge (``judge``: ``mujoco`` or ``coal``) and ``weak_pairs`` lists
the pairs whose MuJoCo collider is weak, judged by coal (``rob_twin.planners.weak_judge``);
files written before judges were recorded have neither and still load. Anything else is a
``PlanFileError`` naming the file, the field, the value and the valid range.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rob_twin.models.bounded_json import JsonInputError, JsonLimits, read_bounded_json
from rob_twin.models.errors import InvalidValueError
from rob_twin.planners.errors import PlannerError
from rob_twin.planners.weak_judge import JUDGE_MUJOCO, JUDGES

FORMAT = "rob-twin plan with clearance certificate, v1"
MAX_PLAN_SAMPLES = 20_000  # 160 s at 125 Hz; the check holds (pairs x samples) distances
MAX_VELOCITY_RAD_S = 100.0  # a joint velocity limit above this is no robot's
MAX_ACCELERATION_RAD_S2 = 1000.0  # a joint acceleration limit above this is no robot's
MAX_ALLOWANCE_M = 1.0  # a pair's uncertainty allowance


@dataclass(frozen=True)
class PlanFileLimits:
    """Caps on one plan file: ``max_bytes`` (file size, bytes), ``max_samples`` (time
    samples), ``max_extra_queries`` (bisection queries of the certificate), ``max_pairs``
    (pairs listed), ``max_arms``, ``max_joints`` (per arm)."""

    max_bytes: int = 32_000_000
    max_samples: int = MAX_PLAN_SAMPLES
    max_extra_queries: int = MAX_PLAN_SAMPLES
    max_pairs: int = 10_000
    max_arms: int = 8
    max_joints: int = 16


def default_config() -> PlanFileLimits:
    """32 MB, 20,000 samples (160 s at 125 Hz), 20,000 bisection queries, 10,000 pairs."""
    return PlanFileLimits()


class PlanFileError(PlannerError, InvalidValueError):
    """A plan file that cannot be read or holds an invalid field; ``where`` names the file,
    ``field`` the field (a path such as ``q_rad.right[3][2]``), ``value`` what was found and
    ``valid`` the valid range."""

    def __init__(self, where: str, field: str, value: object, valid: str):
        self.where = where
        self.subject = f"plan file {where}:"
        super().__init__(field, value, valid)


def plan_document(group, plan) -> dict:
    """The JSON-ready document of ``plan`` (a certified ``Plan`` of ``group``)."""
    if plan.certificate is None:
        raise PlanFileError(
            "(in memory)", "certificate", None, "a plan from ArmGroup.plan (it has one)"
        )
    moving = list(plan.moving)
    return {
        "format": FORMAT,
        "hardware_io": False,
        "moving": moving,
        "joint_names": {a: list(plan.arms[a].joint_names) for a in moving},
        "t_s": plan.t.tolist(),
        "q_rad": {a: plan.arms[a].q.tolist() for a in moving},
        "qd_rad_s": {a: plan.arms[a].qd.tolist() for a in moving},
        "qdd_rad_s2": {a: plan.arms[a].qdd.tolist() for a in moving},
        "reference_qpos": group.reference_qpos.tolist(),
        "acceleration_rad_s2": {a: list(group.motion_limits(a).acceleration) for a in moving},
        "velocity_rad_s": {a: list(group.motion_limits(a).velocity) for a in moving},
        "arms": {a: list(group.joint_names(a)) for a in group.arm_names},
        "margin_m": group.config.collision.margin_m,
        "certificate": _certificate_document(group, plan),
    }


def _certificate_document(group, plan) -> dict:
    """``plan``'s certificate as JSON, with each listed pair's judge and the weak pairs
    (``rob_twin.planners.weak_judge``): which distances came from coal instead of MuJoCo."""
    from rob_twin.planners.certificate_geometry import _group_geometry
    from rob_twin.planners.weak_judge import pair_judges, weak_pairs_document

    cert = plan.certificate.as_dict()
    geometry = _group_geometry(group, tuple(plan.moving), plan.certificate.payload_reach_m)
    judges = pair_judges(geometry)
    for p in cert["pairs"]:
        p["judge"] = judges.get(p["pair"], JUDGE_MUJOCO)
    cert["weak_pairs"] = weak_pairs_document(geometry)
    return cert


ROBOT_FIELDS = ("name", "file", "family", "model_hash")


SYSTEM_FOLDERS = ("/proc", "/sys", "/dev")  # never a plan file's place


def check_out_path(path: str | Path) -> Path:
    """``path`` when a plan file may be written there: a ``.json`` name, not an existing
    folder or anything but a regular file, not under /proc, /sys or /dev, and no existing
    file among its parents; PlanFileError (field ``out``) otherwise, before any work."""
    path = Path(path)
    where = str(path)
    valid = "a .json file path (a new file, or a regular file to overwrite)"

    def fail(what: str):
        raise PlanFileError(where, "out", where, f"{valid}; this one {what}")

    try:
        resolved = path.resolve()
        if any(resolved.is_relative_to(f) for f in SYSTEM_FOLDERS):
            fail(f"is under {', '.join(SYSTEM_FOLDERS)}")
        if path.is_dir():
            fail("is a folder")
        if path.exists() and not path.is_file():
            fail("is a device, pipe or socket")
        if path.suffix.lower() != ".json":
            fail("does not end in .json")
        for part in path.parents:
            if part.exists():
                if not part.is_dir():
                    fail(f"has the file {part} on its way")
                break
    except OSError as err:
        fail(f"cannot be checked ({err.strerror})")
    return path


def save_plan(path: str | Path, group, plan, robot=None) -> Path:
    """Write ``plan`` with its certificate to ``path`` (parents created; ``check_out_path``
    first); ``robot`` (a ``rob_twin.models.robot.Robot``): the file names the robot it was
    planned for."""
    path = check_out_path(path)
    doc = plan_document(group, plan)
    if robot is not None:
        doc["robot"] = robot.identity()
    validate_plan_document(doc, str(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")
    except OSError as err:
        raise PlanFileError(
            str(path), "out", str(path), f"a writable path ({err.strerror})"
        ) from None
    return path


REQUIRED = (
    "format",
    "moving",
    "joint_names",
    "t_s",
    "q_rad",
    "qd_rad_s",
    "reference_qpos",
    "acceleration_rad_s2",
    "velocity_rad_s",
    "arms",
    "margin_m",
    "certificate",
)
CERTIFICATE_REQUIRED = (
    "certified",
    "margin_m",
    "horizon_m",
    "certified_min_m",
    "pairs",
    "pairs_total",
    "extra_queries",
    "uncertainty",
    "payload_reach_m",
    "model_hash",
)
# every key a plan file may hold; any other is refused (a file is read, never trusted)
TOP_KEYS = (*REQUIRED, "qdd_rad_s2", "hardware_io", "robot", "excitation")
CERTIFICATE_KEYS = (
    *CERTIFICATE_REQUIRED,
    "pair",
    "at_s",
    "pairs_far",
    "far_pairs_min_m",
    "sample_queries",
    "measured_samples",
    "samples",
    "measured_sample_index",
    "failure",
    "fail_time_s",
    "fail_kind",
    "uncertified_attempts",
    "method",
    "weak_pairs",
)
PAIR_KEYS = (
    "pair",
    "class",
    "certified_min_m",
    "envelope_min_m",
    "at_s",
    "allowance_m",
    "active_query_times_s",
    "judge",
)
FAIL_KINDS = ("", "query_below_threshold", "envelope_inconclusive")


def load_plan_file(path: str | Path, limits: PlanFileLimits | None = None) -> dict:
    """The document of the plan file at ``path``, read with the bounded JSON reader and
    checked field by field (``validate_plan_document``); PlanFileError otherwise."""
    limits = limits or default_config()
    path = Path(path)
    where = str(path)
    try:
        if path.is_dir():
            raise PlanFileError(where, "path", where, "a plan file (JSON), not a directory")
        size = path.stat().st_size
        if size > limits.max_bytes:  # refused before a byte is read
            raise PlanFileError(where, "size", f"{size} bytes", f"<= {limits.max_bytes} bytes")
        with path.open("rb") as f:
            data = f.read(limits.max_bytes + 1)
    except OSError as err:
        raise PlanFileError(where, "path", where, f"a readable file ({err.strerror})") from None
    json_limits = JsonLimits(max_bytes=limits.max_bytes, max_depth=8, reject_duplicate_keys=True)
    try:
        doc = read_bounded_json(data, what=f"plan file {where}", limits=json_limits)
    except JsonInputError as err:
        field = "syntax (not JSON)" if err.field == "syntax" else f"JSON {err.field}"
        raise PlanFileError(where, field, err.value, err.valid) from None
    return validate_plan_document(doc, where, limits)


# ------------------------------------------------------------------ field checks


class _Fields:
    """Checks of one document's fields; each failure a PlanFileError naming the field."""

    def __init__(self, where: str):
        self.where = where

    def fail(self, field: str, value: object, valid: str):
        raise PlanFileError(self.where, field, value, valid)

    def obj(self, value: object, field: str, required: tuple[str, ...] = ()) -> dict:
        if not isinstance(value, dict):
            self.fail(field, _kind(value), "a JSON object {...}")
        for key in required:
            if key not in value:
                where = f"{field}.{key}" if field != "(top level)" else key
                self.fail(
                    where, "(missing)", f"present (missing field; required: {', '.join(required)})"
                )
        return value

    def known(self, value: dict, field: str, keys: tuple[str, ...]) -> None:
        """Refuse the first key of ``value`` that is not one of ``keys``."""
        for key in value:
            if key not in keys:
                where = f"{field}.{key}" if field != "(top level)" else str(key)
                self.fail(where, key, f"no such key (known: {', '.join(keys)})")

    def string(self, value: object, field: str, most: int) -> str:
        if not isinstance(value, str) or len(value) > most:
            self.fail(field, _kind(value), f"a string of at most {most} characters")
        return value

    def text(self, value: object, field: str) -> str:
        if not isinstance(value, str) or not 0 < len(value) <= 200:
            self.fail(field, value, "a non-empty string of at most 200 characters")
        return value

    def names(self, value: object, field: str, most: int) -> list[str]:
        if not isinstance(value, list) or not 0 < len(value) <= most:
            self.fail(field, _kind(value), f"a list of 1..{most} names")
        for i, name in enumerate(value):
            self.text(name, f"{field}[{i}]")
        if len(set(value)) != len(value):
            self.fail(field, value, "each name once")
        return value

    def number(self, value: object, field: str, valid: str = "a finite number", ok=None) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(field, _kind(value), valid)
        x = float(value)
        if not math.isfinite(x) or (ok is not None and not ok(x)):
            why = valid if math.isfinite(x) else f"finite, {valid} (NaN/Infinity refused)"
            self.fail(field, value, why)
        return x

    def array(self, value: object, field: str, shape: tuple[int, ...], valid: str) -> np.ndarray:
        """A nested list of finite numbers of exactly ``shape``."""
        if not isinstance(value, list):
            self.fail(field, _kind(value), f"a list of shape {shape}: {valid}")
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            self.fail(field, "a ragged or non-numeric list", f"shape {shape} numbers: {valid}")
        if arr.shape != shape:
            self.fail(f"{field} shape", arr.shape, f"{shape}: {valid}")
        _only_numbers(self, value, field, len(shape))
        bad = np.argwhere(~np.isfinite(arr))
        if bad.size:
            at = "".join(f"[{int(i)}]" for i in bad[0])
            self.fail(f"{field}{at}", float(arr[tuple(bad[0])]), "finite (NaN/Infinity refused)")
        return arr

    def positive(self, arr: np.ndarray, field: str, unit: str) -> None:
        bad = np.flatnonzero(arr.ravel() <= 0)
        if bad.size:
            self.fail(f"{field}[{int(bad[0])}]", float(arr.ravel()[bad[0]]), f"> 0 {unit}")


def _kind(value: object) -> object:
    """The value itself when short, else its type: for messages."""
    if isinstance(value, (list, dict)):
        return f"a {type(value).__name__} of {len(value)}"
    return value


def _only_numbers(f: _Fields, value: list, field: str, depth: int) -> None:
    """Refuse bools and strings numpy would have cast (``True`` -> 1.0, ``"1"`` -> 1.0)."""
    stack = [(value, field, depth)]
    while stack:
        node, name, d = stack.pop()
        if d == 1:
            for i, x in enumerate(node):
                if isinstance(x, bool) or not isinstance(x, (int, float)):
                    f.fail(f"{name}[{i}]", x, "a number")
        else:
            stack.extend((x, f"{name}[{i}]", d - 1) for i, x in enumerate(node))


def validate_plan_document(
    doc: object, where: str = "(in memory)", limits: PlanFileLimits | None = None
) -> dict:
    """``doc`` itself when every field is valid (see the module docstring); else
    PlanFileError naming the first invalid field, its value and the valid range."""
    limits = limits or default_config()
    f = _Fields(where)
    doc = f.obj(doc, "(top level)", REQUIRED)
    f.known(doc, "(top level)", TOP_KEYS)
    if "excitation" in doc:  # rob-twin excite's summary of the excitation (a record)
        f.obj(doc["excitation"], "excitation")
    if "robot" in doc:  # optional: the robot it was planned for (a claim: certify checks it)
        robot = f.obj(doc["robot"], "robot", ROBOT_FIELDS)
        f.known(robot, "robot", ROBOT_FIELDS)
        for key in ROBOT_FIELDS:
            f.text(robot[key], f"robot.{key}")
    if doc["format"] != FORMAT:
        f.fail("format", doc["format"], repr(FORMAT))
    if doc.get("hardware_io", False) is not False:
        f.fail("hardware_io", doc["hardware_io"], "false (plans are simulated)")
    arms = f.obj(doc["arms"], "arms")
    if not 0 < len(arms) <= limits.max_arms:
        f.fail("arms", _kind(arms), f"1..{limits.max_arms} arms")
    owner: dict[str, str] = {}  # joint -> the arm that names it: each joint in one arm only
    for a, joints in arms.items():
        for i, joint in enumerate(f.names(joints, f"arms.{a}", limits.max_joints)):
            if joint in owner:
                f.fail(
                    f"arms.{a}[{i}]", joint, f"a joint of no other arm (in arm {owner[joint]!r})"
                )
            owner[joint] = a
    moving = f.names(doc["moving"], "moving", limits.max_arms)
    for a in moving:
        if a not in arms:
            f.fail("moving", a, f"arms of the document: {', '.join(arms)}")
    names = f.obj(doc["joint_names"], "joint_names", tuple(moving))
    f.known(names, "joint_names", tuple(moving))  # per-arm objects: the moving arms only
    for a in moving:
        if names[a] != arms[a]:
            f.fail(f"joint_names.{a}", names[a], f"the arm's joints {arms[a]}")
    t_raw = doc["t_s"]
    if isinstance(t_raw, list) and len(t_raw) > limits.max_samples:
        f.fail("t_s", f"{len(t_raw)} samples", f"1..{limits.max_samples} samples")
    if not isinstance(t_raw, list) or not t_raw:
        f.fail("t_s", _kind(t_raw), f"a list of 1..{limits.max_samples} times [s]")
    t = f.array(t_raw, "t_s", (len(t_raw),), "times [s]")
    if t[0] != 0.0:
        f.fail("t_s[0]", float(t[0]), "0 s (a plan starts at 0)")
    steps = np.flatnonzero(np.diff(t) <= 0)
    if steps.size:
        k = int(steps[0]) + 1
        f.fail(f"t_s[{k}]", float(t[k]), f"> t_s[{k - 1}] = {t[k - 1]!r} s (rising)")
    n_total = 0
    for a in moving:
        n = len(arms[a])
        n_total += n
        for key, unit in (("q_rad", "rad"), ("qd_rad_s", "rad/s"), ("qdd_rad_s2", "rad/s^2")):
            if key == "qdd_rad_s2" and key not in doc:
                continue  # older documents: derived from qd when executed
            per_arm = f.obj(doc[key], key, tuple(moving))
            f.known(per_arm, key, tuple(moving))
            f.array(per_arm[a], f"{key}.{a}", (t.size, n), f"finite [{unit}]")
        for key, unit, top in (
            ("acceleration_rad_s2", "rad/s^2", MAX_ACCELERATION_RAD_S2),
            ("velocity_rad_s", "rad/s", MAX_VELOCITY_RAD_S),
        ):
            per_arm = f.obj(doc[key], key, tuple(moving))
            f.known(per_arm, key, tuple(moving))
            limit = f.array(per_arm[a], f"{key}.{a}", (n,), unit)
            f.positive(limit, f"{key}.{a}", unit)
            over = np.flatnonzero(limit > top)
            if over.size:
                k = int(over[0])
                f.fail(f"{key}.{a}[{k}]", float(limit[k]), f"> 0 and <= {top:g} {unit}")
    ref = doc["reference_qpos"]
    if not isinstance(ref, list) or not 0 < len(ref) <= 10_000:
        f.fail("reference_qpos", _kind(ref), "a list of the model's nq positions")
    f.array(ref, "reference_qpos", (len(ref),), "finite positions")
    margin = f.number(doc["margin_m"], "margin_m", "> 0 and <= 1 m", lambda x: 0 < x <= 1)
    _validate_certificate(f, doc["certificate"], margin, t, n_total, limits)
    return doc


def _validate_certificate(
    f: _Fields, cert: object, margin: float, t: np.ndarray, n: int, limits: PlanFileLimits
) -> None:
    cert = f.obj(cert, "certificate", CERTIFICATE_REQUIRED)
    f.known(cert, "certificate", CERTIFICATE_KEYS)
    if not isinstance(cert["certified"], bool):
        f.fail("certificate.certified", cert["certified"], "true or false")
    cm = f.number(cert["margin_m"], "certificate.margin_m", f"{margin!r} m (margin_m)")
    if cm != margin:
        f.fail("certificate.margin_m", cm, f"{margin!r} m, the document's margin_m")
    f.number(
        cert["horizon_m"], "certificate.horizon_m", f"> margin {margin} and <= 1 m",
        lambda x: margin < x <= 1,
    )  # fmt: skip
    f.number(cert["certified_min_m"], "certificate.certified_min_m", "a finite number [m]")
    f.number(
        cert["payload_reach_m"], "certificate.payload_reach_m", "in [0, 2] m",
        lambda x: 0 <= x <= 2,
    )  # fmt: skip
    total = int(f.number(cert["pairs_total"], "certificate.pairs_total", "an integer >= 0", _count))
    h = cert["model_hash"]
    if not (isinstance(h, str) and len(h) == 16 and all(c in "0123456789abcdef" for c in h)):
        f.fail("certificate.model_hash", h, "16 lower-case hex digits")
    spec = f.obj(cert["uncertainty"], "certificate.uncertainty")
    from rob_twin.planners.uncertainty import UncertaintySpec

    try:
        UncertaintySpec.from_dict(spec)
    except (InvalidValueError, TypeError) as err:
        f.fail("certificate.uncertainty", spec, f"an uncertainty spec ({err})")
    pairs = cert["pairs"]
    most = min(limits.max_pairs, total)
    if not isinstance(pairs, list) or len(pairs) > most:
        f.fail(
            "certificate.pairs", _kind(pairs),
            f"a list of 0..{most} pairs (at most pairs_total, {total}, and {limits.max_pairs})",
        )  # fmt: skip
    _validate_far_bound(f, cert, total, not pairs)
    seen = set()
    for i, p in enumerate(pairs):
        p = f.obj(p, f"certificate.pairs[{i}]", ("pair", "certified_min_m"))
        f.known(p, f"certificate.pairs[{i}]", PAIR_KEYS)
        name = f.text(p["pair"], f"certificate.pairs[{i}].pair")
        f.number(p["certified_min_m"], f"certificate.pairs[{i}].certified_min_m", "finite [m]")
        _validate_pair_figures(f, p, f"certificate.pairs[{i}]", t)
        if name in seen:
            f.fail(f"certificate.pairs[{i}].pair", name, "each pair once")
        seen.add(name)
        if "judge" in p and p["judge"] not in JUDGES:
            f.fail(f"certificate.pairs[{i}].judge", p["judge"], f"one of {', '.join(JUDGES)}")
    _validate_weak_pairs(f, cert.get("weak_pairs"), total)
    extra = cert["extra_queries"]
    if not isinstance(extra, list) or len(extra) > limits.max_extra_queries:
        f.fail(
            "certificate.extra_queries", _kind(extra),
            f"a list of at most {limits.max_extra_queries} queries",
        )  # fmt: skip
    for i, e in enumerate(extra):
        e = f.obj(e, f"certificate.extra_queries[{i}]", ("t_s", "q_rad"))
        f.known(e, f"certificate.extra_queries[{i}]", ("t_s", "q_rad"))
        f.number(
            e["t_s"], f"certificate.extra_queries[{i}].t_s",
            f"in [0, {t[-1]!r}] s (within the plan)", lambda x: 0 <= x <= t[-1],
        )  # fmt: skip
        f.array(e["q_rad"], f"certificate.extra_queries[{i}].q_rad", (n,), "finite [rad]")
    index = cert.get("measured_sample_index")
    if index is not None:
        if not isinstance(index, list) or not 0 < len(index) <= t.size:
            f.fail("certificate.measured_sample_index", _kind(index), f"1..{t.size} indices")
        for i, k in enumerate(index):
            if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < t.size:
                f.fail(
                    f"certificate.measured_sample_index[{i}]", k,
                    f"an integer sample index in [0, {t.size - 1}]",
                )  # fmt: skip

    _validate_record_fields(f, cert, t, limits)


def _within(t: np.ndarray):
    return lambda x: 0 <= x <= t[-1]


def _validate_pair_figures(f: _Fields, p: dict, field: str, t: np.ndarray) -> None:
    """A listed pair's optional figures, each in its range (certify re-derives them)."""
    if "class" in p:
        f.text(p["class"], f"{field}.class")
    if "envelope_min_m" in p:
        f.number(p["envelope_min_m"], f"{field}.envelope_min_m", "finite [m]")
    if "allowance_m" in p:
        f.number(
            p["allowance_m"], f"{field}.allowance_m", f"in [0, {MAX_ALLOWANCE_M:g}] m",
            lambda x: 0 <= x <= MAX_ALLOWANCE_M,
        )  # fmt: skip
    span = f"in [0, {t[-1]!r}] s (within the plan)"
    if "at_s" in p:
        f.number(p["at_s"], f"{field}.at_s", span, _within(t))
    if "active_query_times_s" in p:
        aq = p["active_query_times_s"]
        if not isinstance(aq, list) or len(aq) != 2:
            f.fail(f"{field}.active_query_times_s", _kind(aq), "two times [s], rising")
        for k, x in enumerate(aq):
            f.number(x, f"{field}.active_query_times_s[{k}]", span, _within(t))
        if aq[1] < aq[0]:
            f.fail(f"{field}.active_query_times_s", aq, "two times [s], rising")


def _validate_record_fields(f: _Fields, cert: dict, t: np.ndarray, limits: PlanFileLimits):
    """The certificate's optional record fields, each in its range; ``pairs_far`` and the
    listed pairs together at most ``pairs_total`` (listed pairs are not far)."""
    if "pair" in cert:
        f.text(cert["pair"], "certificate.pair")
    if "at_s" in cert:
        f.number(cert["at_s"], "certificate.at_s", f"in [0, {t[-1]!r}] s", _within(t))
    for key in ("sample_queries", "measured_samples", "samples"):
        if key in cert:
            f.number(
                cert[key], f"certificate.{key}", f"an integer in [0, {limits.max_samples}]",
                lambda x: _count(x) and x <= limits.max_samples,
            )  # fmt: skip
    if "failure" in cert:
        f.string(cert["failure"], "certificate.failure", 2000)
    if cert.get("fail_time_s") is not None:
        f.number(cert["fail_time_s"], "certificate.fail_time_s", "null or a time in the plan [s]",
                 _within(t))  # fmt: skip
    if "fail_kind" in cert and cert["fail_kind"] not in FAIL_KINDS:
        f.fail("certificate.fail_kind", cert["fail_kind"], f"one of {FAIL_KINDS}")
    if "uncertified_attempts" in cert:
        f.number(
            cert["uncertified_attempts"], "certificate.uncertified_attempts",
            "an integer in [0, 1000000]", lambda x: _count(x) and x <= 1_000_000,
        )  # fmt: skip
    if "method" in cert:
        f.string(cert["method"], "certificate.method", 200)
    far = cert.get("pairs_far")
    if far is not None and far + len(cert["pairs"]) > cert["pairs_total"]:
        f.fail(
            "certificate.pairs_far", far,
            f"at most pairs_total - listed pairs = {cert['pairs_total'] - len(cert['pairs'])} "
            "(a listed pair is not far)",
        )  # fmt: skip
    if far and cert.get("far_pairs_min_m") is None:
        f.fail("certificate.far_pairs_min_m", None, f"their bound [m] ({far} pairs far)")


def _count(x: float) -> bool:
    return x >= 0 and x == int(x)


def _validate_far_bound(f: _Fields, cert: dict, total: int, empty: bool) -> None:
    """``pairs_far`` (pairs bounded without a query of their own) and ``far_pairs_min_m``
    (their bound [m], null when none) where present; both required for an empty pair list,
    which certifies through that bound alone: then every pair is far, and the certified
    minimum is their bound (the horizon when there is no pair)."""
    far = cert.get("pairs_far")
    if far is None and empty:
        f.fail(
            "certificate.pairs_far", "(missing)",
            "present with an empty pair list (every pair then certified by the far-pair bound)",
        )  # fmt: skip
    if far is not None:
        f.number(far, "certificate.pairs_far", f"an integer in [0, {total}] (pairs_total)",
                 lambda x: _count(x) and x <= total)  # fmt: skip
    bound = cert.get("far_pairs_min_m")
    if bound is not None:
        f.number(bound, "certificate.far_pairs_min_m", "a finite number [m] or null")
    if not empty:
        return
    if far != total:
        f.fail(
            "certificate.pairs", "an empty list",
            f"at least the lowest pair: pairs_far ({far}) < pairs_total ({total}), so some "
            "pair was measured within the horizon",
        )  # fmt: skip
    if total and bound is None:
        f.fail(
            "certificate.far_pairs_min_m", None,
            "the far-pair bound [m] (an empty pair list certifies through it)",
        )  # fmt: skip
    want = bound if total else cert["horizon_m"]
    if abs(cert["certified_min_m"] - want) > 1e-7:  # both written to 7 decimals
        f.fail(
            "certificate.certified_min_m", cert["certified_min_m"],
            f"{want!r} m with an empty pair list (the far-pair bound, or the horizon when "
            "there is no pair)",
        )  # fmt: skip


def _validate_weak_pairs(f: _Fields, weak: object, total: int) -> None:
    """``certificate.weak_pairs`` where present (older files have none): each checked pair
    whose MuJoCo collider is weak, once, with why and its judge."""
    if weak is None:
        return
    if not isinstance(weak, list) or len(weak) > total:
        f.fail("certificate.weak_pairs", _kind(weak), f"a list of 0..{total} pairs (pairs_total)")
    seen = set()
    for i, w in enumerate(weak):
        w = f.obj(w, f"certificate.weak_pairs[{i}]", ("pair", "why", "judge"))
        f.known(w, f"certificate.weak_pairs[{i}]", ("pair", "why", "judge"))
        name = f.text(w["pair"], f"certificate.weak_pairs[{i}].pair")
        f.text(w["why"], f"certificate.weak_pairs[{i}].why")
        if w["judge"] not in JUDGES:
            f.fail(f"certificate.weak_pairs[{i}].judge", w["judge"], f"one of {', '.join(JUDGES)}")
        if name in seen:
            f.fail(f"certificate.weak_pairs[{i}].pair", name, "each pair once")
        seen.add(name)


def plan_from_document(doc: dict):
    """The ``Plan`` a validated document holds, for execution (``rob_twin.planners.plan``):
    its time base, each moving arm's q, qd and qdd (documents without qdd: the gradient of
    qd over t), the waypoints (first and last sample), the certified minimum as its
    clearance. The certificate itself stays in the document (``certificate_check``)."""
    from rob_twin.planners.plan import ArmTrajectory, ClearanceRecord, Plan

    t = np.asarray(doc["t_s"], float)
    arms = {}
    for a in doc["moving"]:
        q = np.asarray(doc["q_rad"][a], float)
        qd = np.asarray(doc["qd_rad_s"][a], float)
        if "qdd_rad_s2" in doc:
            qdd = np.asarray(doc["qdd_rad_s2"][a], float)
        else:
            qdd = np.gradient(qd, t, axis=0) if t.size > 1 else np.zeros_like(qd)
        arms[a] = ArmTrajectory(a, tuple(doc["joint_names"][a]), q, qd, qdd)
    stacked = np.hstack([arms[a].q for a in arms])
    cert = doc["certificate"]
    return Plan(
        t=t,
        rate_hz=float(1.0 / (t[1] - t[0])) if t.size > 1 else 125.0,
        arms=arms,
        waypoints=stacked[[0, -1]],
        min_clearance=ClearanceRecord(float(cert["certified_min_m"]), None, None, False),
        stage_times_s={},
        checked_states=0,
        repairs=0,
        seed=-1,
    )

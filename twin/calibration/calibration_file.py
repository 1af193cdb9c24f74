"""The calibration file: the twin's fitted parameters, versioned, with where they came from.

A calibration file (JSON, ``format: rob-twin-calibration/1``) holds:

- ``name``; ``model_hash`` (``rob_twin.planners.certificate_geometry.model_hash`` of the
  model it was fitted on: a calibration for another model is refused);
- ``robot`` (optional; every file ``rob-twin calibrate`` writes has it): the robot it was
  fitted on, ``{name, file, family, model_hash}`` (``rob_twin.models.robot.Robot.identity``:
  ``file`` names the robot again, ``model_hash`` is the whole compiled model's); a file
  without it (written before robots had files) is ROB's, as its ``model_hash`` says;
- ``parameters``: for each fitted or fixed name (``rob_twin.twin.calibration.parameters``)
  its ``value``, ``nominal``, ``lower``/``upper`` bounds, ``fitted`` (bool) and the 95 %
  confidence ``interval`` ([lo, hi] inside the bounds, or null when not fitted or not
  identifiable; how it is computed: ``fit.intervals``, the module docstring of
  ``rob_twin.twin.calibration.fit``);
- ``recordings``: each recording's file name, sha256 and role (``fit`` or ``validate``);
- ``residuals``: per joint RMS position error [rad] before and after, on fit and
  validation data; ``not_identifiable``: names the recordings did not excite;
- ``misfit`` (optional; every file ``rob-twin calibrate`` writes has it): the misfit
  warnings of the fit, each ``{rule, parameter, message}`` (rules: ``on_bound``,
  ``interval_outside_bounds``, ``residual_above_floor``, ``residual_structure``); an
  empty list when the fitted twin explains the recordings down to their quantisation;
- ``hardware_io: false`` (the file is computed, not measured; its inputs may be real).

``load_calibration(path, model)`` reads it with the bounded JSON reader, checks every
field and the model hash, and returns a ``Calibration``; ``CalibrationError`` (exit 2 on
the command line) names the field and the valid range.

Physical bounds, checked when the file loads, before anything runs (``physical_bounds``;
"nominal" is the value the twin assumes: the model's joint and actuator entries, from
``model`` when given and else ROB's canonical model, and the Amber drives' defaults, never
the ``nominal`` a file writes):

- ``armature``, ``damping``, ``frictionloss``, ``integral_gain``: [0, 100 x nominal]; where
  the nominal is 0 an absolute cap instead: armature 1 kg m^2, damping 50 N m s/rad,
  friction loss 20 N m, integral gain 1000 1/s (``ZERO_NOMINAL_CAP``);
- ``kp``, ``amps_per_nm``: [nominal / 100, 100 x nominal] (both must stay positive);
- ``lag_s``, ``command_delay_s``, ``feedback_delay_s``: [0, 1] s;
- ``payload_kg``: [0, 20] kg (``MAX_PAYLOAD_KG``; the robot files state no rated load);
- ``zero_offset_rad``: nominal +- 0.5 rad;
- each value inside the file's own ``lower``/``upper`` (finite numbers, when the entry
  has them), and ``lower <= upper``;
- ``hardware_io``, when present, must be ``false``: the twin never takes hardware I/O
  from a file, and a file claiming ``true`` is refused.

Each refusal is a ``CalibrationError`` naming the field, the value and the valid range.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
from rob_twin.models.bounded_json import JsonInputError, JsonLimits, read_bounded_json
from rob_twin.models.errors import InvalidValueError, RobTwinError
from rob_twin.planners.certificate_geometry import model_hash
from rob_twin.twin.calibration.parameters import (
    UNITS,
    check_values,
    nominal_parameters,
    parse_name,
)

FORMAT = "rob-twin-calibration/1"
FACTOR = 100.0  # model-side and drive gains: within x100 of the nominal
ZERO_NOMINAL_CAP = {  # upper bound where the nominal is 0 [the kind's unit]
    "armature": 1.0,
    "damping": 50.0,
    "frictionloss": 20.0,
    "integral_gain": 1000.0,
    "friction_fv": 50.0,
    "friction_fc": 20.0,
}
MAX_FRICTION_OFFSET_NM = 5.0  # friction_fo: nominal +- this
MAX_FRICTION_K_S_PER_RAD = 1000.0  # friction_k: [0, this]
MAX_DELAY_S = 1.0  # lag_s, command_delay_s, feedback_delay_s
MAX_PAYLOAD_KG = 20.0
MAX_ZERO_OFFSET_RAD = 0.5
MAX_BYTES = 4_000_000
ROBOT_FIELDS = ("name", "file", "family", "model_hash")  # Robot.identity()
UNCALIBRATED = "uncalibrated"


class CalibrationError(InvalidValueError):
    """A calibration file that cannot be used: unreadable, invalid, or for another model."""

    subject = "calibration"


@dataclass(frozen=True)
class Calibration:
    """A loaded, checked calibration: ``values`` maps parameter names to values [SI]."""

    name: str
    values: dict[str, float]
    model_hash: str
    file_sha256: str = ""
    document: dict = field(default_factory=dict, compare=False)

    def label(self) -> dict:
        """What a summary records: the calibration's name and the file's hash."""
        return {"name": self.name, "sha256": self.file_sha256[:16], "model_hash": self.model_hash}

    @property
    def misfit(self) -> list:
        """The fit's misfit warnings as the file records them ([] for none, or a file
        written before fits were checked for misfit)."""
        return list(self.document.get("misfit") or [])

    @property
    def robot(self) -> dict | None:
        """The identity of the robot it was fitted on (``ROBOT_FIELDS``); None for a file
        written before calibration files named their robot."""
        return self.document.get("robot")


def calibration_label(calibration: Calibration | None) -> dict | str:
    """``calibration.label()``, or ``"uncalibrated"``."""
    return calibration.label() if calibration is not None else UNCALIBRATED


def file_sha256(path: Path | str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def calibration_document(
    name: str,
    model: mujoco.MjModel,
    parameters: dict[str, dict],
    recordings: list[dict],
    residuals: dict,
    not_identifiable: list[str],
    fit: dict | None = None,
    robot=None,
    misfit: list[dict] | None = None,
) -> dict:
    """The JSON document of a calibration (see the module docstring); ``robot`` (a
    ``rob_twin.models.robot.Robot``, the one ``model`` is of): the file names it;
    ``misfit``: the fit's misfit warnings (None: the field is left out)."""
    doc = {
        "format": FORMAT,
        "name": name,
        "model_hash": model_hash(model),
    }
    if robot is not None:
        doc["robot"] = robot.identity()
    return (
        doc
        | {
            "hardware_io": False,
            "evidence_class": "fitted to recordings (the fit is computed in simulation)",
            "parameters": parameters,
            "recordings": recordings,
            "residuals": residuals,
            "not_identifiable": not_identifiable,
            "fit": fit or {},
        }
        | ({"misfit": list(misfit)} if misfit is not None else {})
    )


def save_calibration(path: Path | str, document: dict) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n")
    tmp.replace(path)
    return path


def _fail(path: Path, field_name: str, value: object, valid: str) -> CalibrationError:
    return CalibrationError(f"{path.name}: {field_name}", value, valid)


def _reference_nominals(model: mujoco.MjModel | None, robot=None) -> dict[str, float]:
    """The nominal of every parameter name: of ``robot`` (a ``rob_twin.models.robot.Robot``)
    when given, on ``model`` or its own; else ``model``'s when it has both arms' joints and
    actuators, else ROB's canonical model's (the Amber drives' defaults either way)."""
    if robot is not None:
        return nominal_parameters(model if model is not None else robot.model(), robot)
    from rob_twin.models.loading import load_scene
    from rob_twin.models.names import JOINTS_PER_ARM, Arm, arm_actuator, arm_joint

    def complete(m: mujoco.MjModel) -> bool:
        return all(
            mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, arm_joint(arm, j)) >= 0
            and mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, arm_actuator(arm, j)) >= 0
            for arm in Arm
            for j in range(1, JOINTS_PER_ARM + 1)
        )

    return nominal_parameters(model if model is not None and complete(model) else load_scene())


def physical_bounds(name: str, nominal: float) -> tuple[float, float]:
    """The physical range of parameter ``name`` whose twin nominal is ``nominal`` [its
    unit] (see the module docstring)."""
    kind = parse_name(name).kind
    if kind in ("lag_s", "command_delay_s", "feedback_delay_s"):
        return 0.0, MAX_DELAY_S
    if kind == "payload_kg":
        return 0.0, MAX_PAYLOAD_KG
    if kind == "zero_offset_rad":
        return nominal - MAX_ZERO_OFFSET_RAD, nominal + MAX_ZERO_OFFSET_RAD
    if kind in ("kp", "amps_per_nm", "kp_scale", "kd_scale"):
        return nominal / FACTOR, nominal * FACTOR
    if kind == "friction_fo":
        return nominal - MAX_FRICTION_OFFSET_NM, nominal + MAX_FRICTION_OFFSET_NM
    if kind == "friction_k":
        return 0.0, MAX_FRICTION_K_S_PER_RAD
    return 0.0, (nominal * FACTOR if nominal > 0 else ZERO_NOMINAL_CAP[kind])


def _check_bounds(path: Path, params: dict, values: dict[str, float], model, robot=None) -> None:
    """Each value inside its physical range and the file's own bounds (lower <= upper)."""
    nominals = _reference_nominals(model, robot)
    for name, value in values.items():
        if name not in nominals:
            raise _fail(
                path,
                f"parameters.{name}",
                name,
                "a parameter of this robot's drives: "
                + ", ".join(sorted({parse_name(n).kind for n in nominals})),
            )
        unit = UNITS[parse_name(name).kind]
        lo, hi = physical_bounds(name, nominals[name])
        if not lo <= value <= hi:
            raise _fail(path, f"parameters.{name}.value", value, f"[{lo:g}, {hi:g}] {unit}")
        entry = params[name]
        own = {}
        for key in ("lower", "upper"):
            if key not in entry:
                continue
            bound = entry[key]
            if (
                isinstance(bound, bool)
                or not isinstance(bound, (int, float))
                or not math.isfinite(bound)
            ):
                raise _fail(path, f"parameters.{name}.{key}", bound, f"a finite number [{unit}]")
            own[key] = float(bound)
        if "lower" in own and "upper" in own and own["lower"] > own["upper"]:
            raise _fail(
                path, f"parameters.{name}.lower", own["lower"], f"<= upper ({own['upper']:g})"
            )
        if value < own.get("lower", value) or value > own.get("upper", value):
            raise _fail(
                path,
                f"parameters.{name}.value",
                value,
                f"inside the file's own bounds [{own.get('lower', lo):g}, "
                f"{own.get('upper', hi):g}] {unit}",
            )


def load_calibration(
    path: Path | str, model: mujoco.MjModel | None = None, robot=None
) -> Calibration:
    """Read and check the calibration file at ``path``; with ``model``, refuse a file fitted
    on another model (its ``model_hash``); with ``robot`` (a ``rob_twin.models.robot.Robot``),
    check its parameters against that robot's drives (their kinds and nominals)."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as err:
        raise _fail(path, "file", str(err), "a readable calibration file") from None
    try:
        doc = read_bounded_json(
            data,
            what=f"calibration {path.name}",
            limits=JsonLimits(max_bytes=MAX_BYTES, max_depth=8, reject_duplicate_keys=True),
        )
    except JsonInputError as err:
        raise CalibrationError(f"{path.name}: {err.field}", err.value, err.valid) from None
    if not isinstance(doc, dict):
        raise _fail(path, "(top level)", type(doc).__name__, "a JSON object")
    if doc.get("format") != FORMAT:
        raise _fail(path, "format", doc.get("format"), repr(FORMAT))
    for key in ("name", "model_hash"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            raise _fail(path, key, doc.get(key), "a non-empty string")
    if "robot" in doc:
        fitted = doc["robot"]
        if not isinstance(fitted, dict):
            raise _fail(path, "robot", fitted, "an object {" + ", ".join(ROBOT_FIELDS) + "}")
        for key in ROBOT_FIELDS:
            if not isinstance(fitted.get(key), str) or not fitted[key]:
                raise _fail(path, f"robot.{key}", fitted.get(key), "a non-empty string")
    if "hardware_io" in doc and doc["hardware_io"] is not False:
        raise _fail(
            path,
            "hardware_io",
            doc["hardware_io"],
            "false (a calibration is computed; the twin never takes hardware I/O from a file)",
        )
    params = doc.get("parameters")
    if not isinstance(params, dict) or not params:
        raise _fail(path, "parameters", params, "an object of parameter name -> {value, ...}")
    values = {}
    for name, entry in params.items():
        try:
            parse_name(name)
        except RobTwinError as err:
            raise _fail(path, f"parameters.{name}", name, str(err)) from None
        if not isinstance(entry, dict) or "value" not in entry:
            raise _fail(path, f"parameters.{name}", entry, "an object with a 'value'")
        values[name] = entry["value"]
    try:
        values = check_values(values)
    except InvalidValueError as err:
        raise _fail(path, f"parameters.{err.field}", err.value, err.valid) from None
    if model is not None and doc["model_hash"] != model_hash(model):
        fitted_on = (
            f"robot {doc['robot']['name']!r} ({doc['robot']['file']})"
            if "robot" in doc
            else "another model"
        )
        raise _fail(
            path,
            "model_hash",
            doc["model_hash"],
            f"{model_hash(model)} (this calibration was fitted on {fitted_on})",
        )
    _check_bounds(path, params, values, model, robot)
    return Calibration(doc["name"], values, doc["model_hash"], file_sha256(path), doc)

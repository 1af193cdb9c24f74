"""The sidecar of a recording (``run.log.json``), read with limits and checked field by field.

``read_sidecar(recording_path)`` reads ``<recording>.json`` with the shared bounded JSON
reader (size, depth, digits, finite numbers, each key once) and checks every field the way a
scenario file is checked: unknown keys, types, ranges, the arm names of the wiring, each drive
fault. Any defect is one ``SidecarError`` (a ``RecordingError`` and an ``InvalidValueError``)
that names the sidecar file, the field, the value found and what is valid. A missing sidecar
gives ``Sidecar()`` (ROB's defaults, ``present`` False).

What a sidecar says that needs the model (the physics step equals the model's, the initial
state has the model's size, the feedback rate divides the physics rate) is checked by the
replay once it has built the twin, with the same error.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from pathlib import Path

from rob_twin.controllers.damiao_codec import Register
from rob_twin.models.bounded_json import JsonInputError, JsonLimits, read_bounded_json
from rob_twin.models.errors import InvalidValueError, describe
from rob_twin.models.names import Arm, UnknownNameError
from rob_twin.twin.bus.recording import (
    RECORDING_FORMATS,
    TIMESTAMPS,
    RecordingError,
    sidecar_path,
)
from rob_twin.twin.scenario.schema import parse_fault
from rob_twin.twin.sim.faults import FaultSpec, FaultSpecError


@dataclass(frozen=True)
class SidecarConfig:
    """Limits on one sidecar.

    ``max_bytes``: file size (bytes); ``max_depth``: nested arrays/objects; ``max_time_s``:
    largest start or end time [s] of simulated time; ``max_bus_number``: largest CAN bus
    number in the wiring; ``max_state_values``: length of ``initial_state``.
    """

    max_bytes: int = 4_000_000
    max_depth: int = 8
    max_time_s: float = 1e7
    max_bus_number: int = 999
    max_state_values: int = 100_000


def default_config() -> SidecarConfig:
    """4 MB, depth 8, times up to 1e7 s (116 days), bus numbers 0..999."""
    return SidecarConfig()


class SidecarError(RecordingError, InvalidValueError):
    """A sidecar field whose value is not valid; ``path`` is the sidecar, ``field``, ``value``
    and ``valid`` say what was wrong."""

    def __init__(self, path: Path | str, field: str, value: object, valid: str):
        self.path, self.line = str(path), None
        self.field, self.value, self.valid = field, value, valid
        Exception.__init__(
            self, f"{path}: sidecar {field}={describe(value)} is invalid; valid: {valid}"
        )


@dataclass(frozen=True)
class Sidecar:
    """What a replay needs to rebuild the recorded twin; defaults are ROB's (no sidecar).

    Times in seconds of simulated time; ``physics_dt_s`` None means the model's own step;
    ``wiring`` maps a bus number (10 for CAN10) to an arm, None means ROB's mapping."""

    present: bool = False
    format: str | None = None
    timestamps: str | None = None
    seed: int = 0
    physics_dt_s: float | None = None
    start_time_s: float = 0.0
    feedback_rate_hz: float = 20.0
    bus_timing: str | None = None
    wiring: dict[int, Arm] | None = None
    initial_state: tuple[float, ...] | None = None
    frames: int | None = None
    first_timestamp_s: float | None = None
    first_frame_sim_s: float | None = None
    end_time_s: float | None = None
    drive_faults: tuple[FaultSpec, ...] = field(default=())
    robot: dict | None = None  # Robot.identity() of the recorded twin (None: not recorded)
    # {bus number: {joint: {Damiao register name: value}}}: registers a host wrote before
    # the recording started (the bring-up's CAN watchdog); None: none recorded
    drive_registers: dict[int, dict[int, dict[str, int | float]]] | None = None


_TEXT_FIELDS = ("evidence_class", "note")
KNOWN_FIELDS = (
    "hardware_io",
    *_TEXT_FIELDS,
    "format",
    "timestamps",
    "seed",
    "physics_dt_s",
    "start_time_s",
    "feedback_rate_hz",
    "bus_timing",
    "wiring",
    "initial_state",
    "frames",
    "first_timestamp_s",
    "first_frame_sim_s",
    "end_time_s",
    "drive_faults",
    "robot",
    "drive_registers",
)
ROBOT_FIELDS = ("name", "file", "family", "model_hash")
MAX_DRIVE_JOINT = 64  # the largest drive (joint) number a sidecar's drive_registers names


def read_sidecar(
    recording: Path | str, config: SidecarConfig | None = None
) -> tuple[dict, Sidecar]:
    """The raw fields and the checked ``Sidecar`` of ``recording`` (({}, Sidecar()) when it
    has none); SidecarError at the first defect."""
    config = config or default_config()
    path = sidecar_path(recording)
    if not path.is_file():
        return {}, Sidecar()
    try:
        with path.open("rb") as f:
            data = f.read(config.max_bytes + 1)  # never more than the limit into memory
    except OSError as err:
        raise RecordingError(path, f"sidecar cannot be read: {err}") from None
    limits = JsonLimits(
        max_bytes=config.max_bytes, max_depth=config.max_depth, reject_duplicate_keys=True
    )
    try:
        raw = read_bounded_json(data, what=f"sidecar {path}", limits=limits)
    except JsonInputError as err:
        raise SidecarError(path, err.field, err.value, err.valid) from None
    return raw, validate_sidecar(raw, recording, config)


def validate_sidecar(
    raw: object, recording: Path | str, config: SidecarConfig | None = None
) -> Sidecar:
    """``raw`` (decoded JSON) checked as the sidecar of ``recording``."""
    config = config or default_config()
    check = _Checker(sidecar_path(recording), config)
    if not isinstance(raw, dict):
        raise SidecarError(check.path, "sidecar", type(raw).__name__, "a JSON object")
    unknown = sorted(set(raw) - set(KNOWN_FIELDS))
    if unknown:
        raise SidecarError(
            check.path, unknown[0], raw[unknown[0]], f"one of the keys {', '.join(KNOWN_FIELDS)}"
        )
    if "hardware_io" in raw and not isinstance(raw["hardware_io"], bool):
        raise SidecarError(check.path, "hardware_io", raw["hardware_io"], "true or false")
    for name in _TEXT_FIELDS:
        if name in raw and not isinstance(raw[name], str):
            raise SidecarError(check.path, name, raw[name], "a string")
    suffix = Path(recording).suffix.lower()
    fmt = check.choice(raw, "format", RECORDING_FORMATS)
    if fmt is not None and fmt != suffix:
        raise SidecarError(check.path, "format", fmt, f"{suffix!r}, the recording's own format")
    start = check.number(raw, "start_time_s", lo=0.0, hi=config.max_time_s)
    start = 0.0 if start is None else start
    end = check.number(raw, "end_time_s", lo=start, hi=config.max_time_s)
    rate = check.number(raw, "feedback_rate_hz", lo=0.0, lo_open=True, hi=1e6)
    return Sidecar(
        present=True,
        format=fmt,
        timestamps=check.choice(raw, "timestamps", TIMESTAMPS),
        seed=check.integer(raw, "seed", 0, 2**64 - 1) or 0,
        physics_dt_s=check.number(raw, "physics_dt_s", lo=0.0, lo_open=True, hi=1.0),
        start_time_s=start,
        feedback_rate_hz=20.0 if rate is None else rate,
        bus_timing=check.text_or_none(raw, "bus_timing"),
        wiring=check.wiring(raw),
        initial_state=check.state(raw),
        frames=check.integer(raw, "frames", 0, 2**63 - 1),
        first_timestamp_s=check.number(raw, "first_timestamp_s", nullable=True),
        first_frame_sim_s=check.number(
            raw, "first_frame_sim_s", lo=start, hi=config.max_time_s, nullable=True
        ),
        end_time_s=end,
        drive_faults=check.faults(raw),
        robot=check.robot(raw),
        drive_registers=check.registers(raw),
    )


class _Checker:
    """One typed check per kind of field; each raises SidecarError naming the field."""

    def robot(self, raw: dict) -> dict | None:
        """The recorded robot's identity: {name, file, family, model_hash}, strings."""
        if "robot" not in raw:
            return None
        value = raw["robot"]
        valid = f"an object of the strings {', '.join(ROBOT_FIELDS)}"
        if not isinstance(value, dict) or set(value) != set(ROBOT_FIELDS):
            raise SidecarError(self.path, "robot", value, valid)
        if not all(isinstance(v, str) and 0 < len(v) <= 1000 for v in value.values()):
            raise SidecarError(self.path, "robot", value, valid)
        return dict(value)

    def __init__(self, path: Path, config: SidecarConfig):
        self.path, self.config = path, config

    def registers(self, raw: dict) -> dict[int, dict[int, dict[str, int | float]]] | None:
        """Damiao registers a host wrote: {bus number: {joint 1..MAX_DRIVE_JOINT: {register
        name (``controllers.damiao_codec.Register``): finite number}}}."""
        if "drive_registers" not in raw:
            return None
        value = raw["drive_registers"]
        top = self.config.max_bus_number
        valid = (
            f'an object of bus number ("0".."{top}") to an object of joint ("1".."'
            f'{MAX_DRIVE_JOINT}") to an object of Damiao register name to a finite number'
        )
        out: dict[int, dict[int, dict[str, int | float]]] = {}
        if not isinstance(value, dict):
            self.fail("drive_registers", value, valid)
        for bus, joints in value.items():
            if not (bus.isascii() and bus.isdigit()) or int(bus) > top:
                self.fail("drive_registers", value, valid)
            if not isinstance(joints, dict):
                self.fail("drive_registers", value, valid)
            for joint, regs in joints.items():
                if (
                    not (joint.isascii() and joint.isdigit())
                    or not 1 <= int(joint) <= MAX_DRIVE_JOINT
                ):
                    self.fail("drive_registers", value, valid)
                if not isinstance(regs, dict):
                    self.fail("drive_registers", value, valid)
                for name, x in regs.items():
                    if name not in Register.__members__:
                        self.fail("drive_registers", name, "a Damiao register name")
                    if (
                        isinstance(x, bool)
                        or not isinstance(x, (int, float))
                        or not math.isfinite(x)
                    ):
                        self.fail("drive_registers", value, valid)
                out.setdefault(int(bus), {})[int(joint)] = dict(regs)
        return out

    def fail(self, name: str, value: object, valid: str):
        raise SidecarError(self.path, name, value, valid)

    def number(
        self,
        raw: dict,
        name: str,
        lo: float = -math.inf,
        hi: float = math.inf,
        lo_open: bool = False,
        nullable: bool = False,
    ) -> float | None:
        if name not in raw or (nullable and raw[name] is None):
            return None
        value = raw[name]
        low = f"> {lo:g}" if lo_open else f">= {lo:g}"
        valid = f"a finite number {low}" + (f" and <= {hi:g}" if hi < math.inf else "")
        valid += " (or null)" if nullable else ""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(name, value, valid)
        x = float(value)
        if not math.isfinite(x) or x < lo or (lo_open and x == lo) or x > hi:
            self.fail(name, value, valid)
        return x

    def integer(self, raw: dict, name: str, lo: int, hi: int) -> int | None:
        if name not in raw:
            return None
        value = raw[name]
        valid = f"a whole number from {lo} to {hi}"
        if isinstance(value, bool):
            self.fail(name, value, valid)
        try:
            n = operator.index(value)
        except TypeError:
            self.fail(name, value, valid)
        if not lo <= n <= hi:
            self.fail(name, value, valid)
        return n

    def choice(self, raw: dict, name: str, valid: tuple[str, ...]) -> str | None:
        if name not in raw:
            return None
        if raw[name] not in valid or not isinstance(raw[name], str):
            self.fail(name, raw[name], ", ".join(valid))
        return raw[name]

    def text_or_none(self, raw: dict, name: str) -> str | None:
        value = raw.get(name)
        if value is not None and not isinstance(value, str):
            self.fail(name, value, "a string or null")
        return value

    def wiring(self, raw: dict) -> dict[int, Arm] | None:
        if "wiring" not in raw:
            return None
        value = raw["wiring"]
        top = self.config.max_bus_number
        valid = f'an object of bus number ("0".."{top}") to arm (right, left), each arm once'
        if not isinstance(value, dict) or not value:
            self.fail("wiring", value, valid)
        out: dict[int, Arm] = {}
        for key, arm in value.items():
            if not (key.isascii() and key.isdigit()) or int(key) > top:
                self.fail("wiring", value, valid)
            try:
                parsed = Arm.parse(arm)
            except UnknownNameError:
                self.fail("wiring", value, f"arm names {', '.join(a.value for a in Arm)}")
            if parsed in out.values():
                self.fail("wiring", value, valid)
            out[int(key)] = parsed
        return out

    def state(self, raw: dict) -> tuple[float, ...] | None:
        if "initial_state" not in raw:
            return None
        value = raw["initial_state"]
        top = self.config.max_state_values
        valid = f"a list of at most {top} finite numbers (mj_getState, integration state)"
        if not isinstance(value, list) or len(value) > top:
            self.fail("initial_state", value, valid)
        for x in value:
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
                self.fail("initial_state", value, valid)
        return tuple(float(x) for x in value)

    def faults(self, raw: dict) -> tuple[FaultSpec, ...]:
        value = raw.get("drive_faults", [])
        if not isinstance(value, list):
            self.fail("drive_faults", value, "a list of faults (the scenario fault format)")
        specs = []
        for k, item in enumerate(value):
            if not isinstance(item, dict):
                self.fail("drive_faults", item, f"item {k}: a fault object")
            try:
                specs.append(parse_fault({key: v for key, v in item.items() if v is not None}))
            except FaultSpecError as err:
                self.fail("drive_faults", item, f"item {k}: {err}")
        return tuple(specs)

"""A study spec (JSON or TOML), validated with pydantic: what to plan, how often, how.

Example (TOML)::

    name = "margins"
    model = "rob"              # a shipped robot (rob, openarm), a robot .toml, or an MJCF scene
    start = "home"             # keyframe the arms start from
    arms = ["right", "left"]
    margins_m = [0.0, 0.005, 0.01]
    count = 50                 # goal pairs per margin (a goal file: at most its length)
    seed = 0
    [goals]
    kind = "gaussian"          # or kind = "file", path = "pairs.json" ([{"right": [7 rad], ...}])
    sigma_rad = 0.8
    min_clearance_m = 0.01
    [planner]
    max_iterations = 4000

A malformed spec raises ``StudySpecError`` naming the field, the value and what is valid.
Spec and goal files are read with limits (``SpecLimits``: size, UTF-8, nesting depth,
integer digits; JSON through ``rob_twin.models.bounded_json``), so a damaged file is a
``StudySpecError``, never a traceback. Units: radians, metres.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from rob_twin.models.bounded_json import (
    JsonInputError,
    JsonLimits,
    nesting_depth,
    read_bounded_json,
)
from rob_twin.models.errors import InvalidValueError
from rob_twin.models.names import DEFAULT_ROBOT, JOINTS_PER_ARM, ROBOTS, Arm

ARM_NAMES = tuple(a.value for a in Arm)
BUILTIN_MODEL = DEFAULT_ROBOT
# TOML basic and literal strings on one line (left out when looking for long digit runs)
_STRINGS = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'')


class StudySpecError(InvalidValueError):
    """A study spec field with an invalid value (or a spec file that cannot be read)."""

    subject = "study spec"


@dataclass(frozen=True)
class SpecLimits:
    """Limits on a spec or goal file: ``max_bytes`` [bytes], ``max_depth`` [nested
    arrays/tables], ``max_int_digits`` [digits of one integer]."""

    max_bytes: int = 4_000_000
    max_depth: int = 16
    max_int_digits: int = 20


def default_config() -> SpecLimits:
    """4 MB, depth 16, 20-digit integers (a seed is at most 10 digits)."""
    return SpecLimits()


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GaussianGoals(_Strict):
    """Per arm: the start + N(0, sigma_rad) per joint, clipped to the limits; each arm and
    the pair free by ``min_clearance_m`` (resampled until they are)."""

    kind: Literal["gaussian"] = "gaussian"
    sigma_rad: float = Field(0.8, gt=0.0, le=2 * math.pi)
    min_clearance_m: float = Field(0.01, ge=0.0, le=0.2)


class GoalFile(_Strict):
    """Goal pairs read from a JSON file: a list of {arm: [7 joint positions, rad]}; the path
    is relative to the spec's folder."""

    kind: Literal["file"]
    path: str


class PlannerSpec(_Strict):
    """The ArmGroup settings a study may vary (the rest keep ``rob_twin.planners.group``
    defaults)."""

    max_iterations: int = Field(4000, ge=1, le=1_000_000)
    edge_step_rad: float = Field(0.05, gt=0.0, le=1.0)
    extend_step_rad: float = Field(0.6, gt=0.0, le=10.0)
    shortcut_rounds: int = Field(60, ge=0, le=100_000)
    max_repairs: int = Field(12, ge=0, le=1000)
    search_padding_m: float = Field(0.002, ge=0.0, le=0.1)
    # a study's own default [m], not ArmGroup's (GroupConfig.clearance_horizon_m, 0.04 m)
    clearance_horizon_m: float = Field(0.02, ge=0.0, le=1.0)
    substeps: int = Field(1, ge=0, le=100)


class StudySpec(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    model: str = BUILTIN_MODEL
    start: str = "home"
    arms: list[Literal["right", "left"]] = Field(
        default_factory=lambda: list(ARM_NAMES), min_length=1
    )
    goals: Annotated[GaussianGoals | GoalFile, Field(discriminator="kind")] = GaussianGoals()
    planner: PlannerSpec = PlannerSpec()
    margins_m: list[Annotated[float, Field(ge=0.0, le=0.2, allow_inf_nan=False)]] = Field(
        default_factory=lambda: [0.005], min_length=1
    )
    seed: int = Field(0, ge=0, le=2**32 - 1)
    count: int = Field(ge=1, le=100_000_000)

    @field_validator("arms")
    @classmethod
    def _unique_arms(cls, arms: list[str]) -> list[str]:
        if len(set(arms)) != len(arms):
            raise ValueError(f"each arm at most once, from {list(ARM_NAMES)}")
        return arms


def _field_valid(model: type[BaseModel], loc: tuple) -> str:
    """Names of the fields valid where ``loc`` points (for 'extra field' errors)."""
    current: type[BaseModel] | None = model
    for part in loc[:-1]:
        if current is None or not isinstance(part, str) or part not in current.model_fields:
            return ""
        ann = current.model_fields[part].annotation
        current = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    return ", ".join(current.model_fields) if current is not None else ""


def spec_error(err: ValidationError) -> StudySpecError:
    """The first problem of a pydantic error as a StudySpecError (field, value, valid)."""
    first = err.errors()[0]
    loc = tuple(p for p in first["loc"] if not (isinstance(p, str) and p in ("gaussian", "file")))
    field = ".".join(str(p) for p in loc) or "(spec)"
    valid = first["msg"]
    if first["type"] == "extra_forbidden":
        valid = f"no field {loc[-1]!r} here; fields: {_field_valid(StudySpec, loc)}"
    elif first["type"] == "missing":
        valid = "required (missing)"
    elif first["type"] in ("union_tag_invalid", "union_tag_not_found"):
        valid = "goals.kind 'gaussian' or 'file'"
    value = None if first["type"] == "missing" else first.get("input")
    more = len(err.errors()) - 1
    if more:
        valid += f" (and {more} more problem{'s' if more > 1 else ''})"
    return StudySpecError(field, value, valid)


def parse_spec(raw: dict) -> StudySpec:
    try:
        return StudySpec.model_validate(raw)
    except ValidationError as err:
        raise spec_error(err) from None


def _read_bytes(path: Path, field: str, limits: SpecLimits) -> bytes:
    try:
        size = path.stat().st_size
        if size > limits.max_bytes:
            raise StudySpecError(
                field, str(path), f"a file of <= {limits.max_bytes} bytes ({size})"
            )
        return path.read_bytes()
    except OSError as err:
        raise StudySpecError(
            field, str(path), f"a readable .json or .toml file ({err.strerror})"
        ) from None


def _too_long_int(raw: object, limits: SpecLimits, where: str = "") -> tuple[str, int] | None:
    """(field, value) of the first integer in ``raw`` with more than ``max_int_digits``."""
    stack = [(where, raw)]
    bound = 10**limits.max_int_digits
    while stack:
        loc, v = stack.pop()
        if isinstance(v, dict):
            stack.extend((f"{loc}.{k}" if loc else str(k), x) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((f"{loc}.{i}", x) for i, x in enumerate(v))
        elif isinstance(v, int) and not isinstance(v, bool) and abs(v) >= bound:
            return loc or "(spec)", v
    return None


def read_toml(data: bytes, what: str, limits: SpecLimits | None = None) -> dict:
    """A TOML document under ``limits`` (size, UTF-8, depth, integer digits) as a dict;
    StudySpecError naming the broken rule otherwise."""
    limits = limits or default_config()
    if len(data) > limits.max_bytes:
        raise StudySpecError("size", f"{len(data)} bytes", f"<= {limits.max_bytes} ({what})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise StudySpecError(
            "encoding", f"byte {err.start}: {data[err.start : err.start + 1]!r}", f"UTF-8 ({what})"
        ) from None
    unquoted = _STRINGS.sub('""', text)
    digits = re.search(rf"\d(?:_?\d){{{limits.max_int_digits},}}", unquoted)
    if digits:
        run = digits.group().replace("_", "")
        raise StudySpecError(
            "integer",
            f"{run[:12]}... ({len(run)} digits)",
            f"numbers of <= {limits.max_int_digits} digits ({what})",
        )
    depth = nesting_depth(text)
    if depth > limits.max_depth:
        raise StudySpecError("depth", depth, f"<= {limits.max_depth} nested arrays/tables ({what})")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise StudySpecError("path", what, f"well-formed TOML ({err})") from None
    except (ValueError, RecursionError) as err:  # integers of thousands of digits, nesting
        raise StudySpecError(
            "path", what, f"TOML within limits ({type(err).__name__}: {str(err)[:120]})"
        ) from None
    found = _too_long_int(raw, limits)
    if found is not None:
        raise StudySpecError(found[0], found[1], f"an integer of <= {limits.max_int_digits} digits")
    return raw


def _json_limits(limits: SpecLimits) -> JsonLimits:
    return JsonLimits(
        max_bytes=limits.max_bytes,
        max_depth=limits.max_depth,
        max_int_digits=limits.max_int_digits,
        reject_duplicate_keys=True,
    )


def read_json(data: bytes, what: str, limits: SpecLimits | None = None) -> object:
    """A JSON document under ``limits`` (``read_bounded_json``); StudySpecError otherwise."""
    try:
        return read_bounded_json(data, what=what, limits=_json_limits(limits or default_config()))
    except JsonInputError as err:
        raise StudySpecError(err.field, err.value, f"{err.valid} ({what})") from None


def load_spec(path: Path | str, limits: SpecLimits | None = None) -> tuple[StudySpec, Path]:
    """(spec, its folder) from a ``.json`` or ``.toml`` file read under ``limits``."""
    path = Path(path)
    limits = limits or default_config()
    if path.suffix not in (".toml", ".json"):
        raise StudySpecError("path", str(path), "a file ending .json or .toml")
    data = _read_bytes(path, "path", limits)
    if path.suffix == ".toml":
        raw = read_toml(data, f"study spec {path}", limits)
    else:
        raw = read_json(data, f"study spec {path}", limits)
    if not isinstance(raw, dict):
        raise StudySpecError("(spec)", type(raw).__name__, "a table/object of fields")
    return parse_spec(raw), path.resolve().parent


def read_goal_file(spec: StudySpec, base_dir: Path) -> list[dict[str, list[float]]]:
    """The goal pairs of a ``file`` sampler, read under limits and checked for shape and
    finite numbers (joint limits: the planner's job, a row error)."""
    assert isinstance(spec.goals, GoalFile)
    path = base_dir / spec.goals.path
    try:
        raw = read_json(_read_bytes(path, "goals.path", default_config()), f"goal file {path}")
    except StudySpecError as err:
        raise StudySpecError(
            "goals.path", spec.goals.path, f"a readable JSON list of goal pairs ({err})"
        ) from None
    if not isinstance(raw, list) or not raw:
        raise StudySpecError(
            "goals.path", spec.goals.path, "a non-empty JSON list of {arm: [7 rad]}"
        )
    for i, pair in enumerate(raw):
        for arm in spec.arms:
            q = pair.get(arm) if isinstance(pair, dict) else None
            if not (
                isinstance(q, list)
                and len(q) == JOINTS_PER_ARM
                and all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                    for v in q
                )
            ):
                raise StudySpecError(
                    f"goals.path[{i}].{arm}", q, f"{JOINTS_PER_ARM} finite numbers [rad]"
                )
    if spec.count > len(raw):
        raise StudySpecError("count", spec.count, f"<= {len(raw)} (the pairs in {spec.goals.path})")
    return raw


def model_path(spec: StudySpec, base_dir: Path) -> str:
    """A shipped robot's name (``rob``: the built-in scene; ``openarm``) as it is, else the
    resolved path of a robot file or an MJCF scene (must exist)."""
    if spec.model in ROBOTS:
        return spec.model
    path = (base_dir / spec.model).resolve()
    if not path.is_file():
        raise StudySpecError(
            "model",
            spec.model,
            f"one of {list(ROBOTS)}, or an existing robot .toml or MJCF file (relative to the "
            "spec)",
        )
    return str(path)

"""A study spec (JSON or TOML), validated with pydantic: what to plan, how often, how.

Example (TOML)::

    name = "margins"
    model = "rob"              # the built-in scene, or a path to an MJCF scene (ROB's joint names)
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
Units: radians, metres.
"""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from rob_twin.models.errors import InvalidValueError
from rob_twin.models.names import JOINTS_PER_ARM, Arm

ARM_NAMES = tuple(a.value for a in Arm)
BUILTIN_MODEL = "rob"


class StudySpecError(InvalidValueError):
    """A study spec field with an invalid value (or a spec file that cannot be read)."""

    subject = "study spec"


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


def load_spec(path: Path | str) -> tuple[StudySpec, Path]:
    """(spec, its folder) from a ``.json`` or ``.toml`` file."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise StudySpecError(
            "path", str(path), f"a readable .json or .toml file ({err.strerror})"
        ) from None
    try:
        if path.suffix == ".toml":
            raw = tomllib.loads(text)
        elif path.suffix == ".json":
            raw = json.loads(text)
        else:
            raise StudySpecError("path", str(path), "a file ending .json or .toml")
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as err:
        raise StudySpecError(
            "path", str(path), f"well-formed {path.suffix[1:].upper()} ({err})"
        ) from None
    if not isinstance(raw, dict):
        raise StudySpecError("(spec)", type(raw).__name__, "a table/object of fields")
    return parse_spec(raw), path.resolve().parent


def read_goal_file(spec: StudySpec, base_dir: Path) -> list[dict[str, list[float]]]:
    """The goal pairs of a ``file`` sampler, checked for shape (limits: the planner's job)."""
    assert isinstance(spec.goals, GoalFile)
    path = base_dir / spec.goals.path
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
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
                and all(isinstance(v, (int, float)) for v in q)
            ):
                raise StudySpecError(f"goals.path[{i}].{arm}", q, f"{JOINTS_PER_ARM} numbers [rad]")
    if spec.count > len(raw):
        raise StudySpecError("count", spec.count, f"<= {len(raw)} (the pairs in {spec.goals.path})")
    return raw


def model_path(spec: StudySpec, base_dir: Path) -> str:
    """``"rob"`` for the built-in scene, else the resolved MJCF path (must exist)."""
    if spec.model == BUILTIN_MODEL:
        return BUILTIN_MODEL
    path = (base_dir / spec.model).resolve()
    if not path.is_file():
        raise StudySpecError(
            "model",
            spec.model,
            f"{BUILTIN_MODEL!r} or an existing MJCF file (relative to the spec)",
        )
    return str(path)

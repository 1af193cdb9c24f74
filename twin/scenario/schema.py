"""The scenario file format, as pydantic models: every file is validated before anything runs.

``validate_scenario(raw)`` checks a decoded JSON value against ``ScenarioFile`` and returns
the model, or raises ``ScenarioError`` listing every problem found, each with its field
path, the bad value and what is valid. Unknown keys are refused with a "did you mean"
hint; numbers must be finite; joint values are checked against the model's joint limits
(``rob_twin.models.dimensions``); the scenario's ``name`` becomes a folder name, so it is a plain
file name (no separators, no ``..``).

The published JSON Schema (``experiments/scenarios/scenario.schema.json``, for editors) is
generated from these models::

    python -m rob_twin.twin.scenario.schema --write    # regenerate the committed file
    python -m rob_twin.twin.scenario.schema --check    # exit 1 if the committed file is stale
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import reprlib
import sys
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError
from rob_twin.controllers.mailbox import RejectReason
from rob_twin.controllers.owner_types import FaultKind as OwnerFaultKind
from rob_twin.models import dimensions as D
from rob_twin.models import names as N
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import JOINTS_PER_ARM
from rob_twin.models.robot import CAPABILITY_SOURCES, TRACKED_BASE, robot_of
from rob_twin.models.robot_description import MIN_IDEAL_JOINTS as MIN_JOINTS_PER_ARM
from rob_twin.models.robot_description import RobotFileError, plain_message
from rob_twin.twin.sim.faults import FaultSpec, FaultSpecError

SCHEMA_PATH = (
    Path(__file__).resolve().parents[2] / "experiments" / "scenarios" / "scenario.schema.json"
)

# list caps, checked before the entries are validated: a huge list fails at once
MAX_FAULTS = 1_000  # fault windows in one scenario
MAX_KEYFRAMES = 10_000  # keyframes in one scenario (both arms together)
MAX_STEPS = 1_000  # entries of each of plans, base, grasps and carries
MAX_DURATION_S = 3600.0  # one hour of simulated time; longer runs belong in a study, not a scenario
LOG_RATE_HZ = 50.0  # the run logs commanded and measured joints at this rate
MIN_DURATION_S = 1.0 / LOG_RATE_HZ  # shorter runs would have no logged sample to report
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
ARM_NAMES = tuple(a.value for a in N.Arm)
CAMERAS = ("auto", *N.SCENE_CAMERAS, N.HEAD_CAMERA)  # auto: rob_twin.twin.render.framing
OFFSCREEN_MAX = (
    1280,
    720,
)  # the model's offscreen buffer (models/build.py <global offwidth/offheight>)


def initial_joint_limits() -> dict[str, tuple[float, float]]:
    """Joints a scenario may set in ``initial`` and their limits [rad or m]
    (``rob_twin.models.dimensions``)."""
    limits: dict[str, tuple[float, float]] = {
        N.TORSO_JOINT: D.BODY.torso_range,
        N.HEAD_PAN_JOINT: D.BODY.pan_range,
        N.HEAD_TILT_JOINT: D.BODY.tilt_range,
    }
    for arm in N.Arm:
        for j, spec in enumerate(D.ARM_JOINTS, start=1):
            limits[N.arm_joint(arm, j)] = (spec.lower, spec.upper)
        limits[N.gripper_joint(arm)] = (0.0, D.FINGER_TRAVEL)
        limits[N.gripper_follower_joint(arm)] = (0.0, D.FINGER_TRAVEL)
    return limits


class ScenarioIssue(BaseModel):
    """One problem in a scenario file: where (``path``), what was there, what is valid."""

    path: str
    value: str
    message: str

    def __str__(self) -> str:
        got = "" if self.value == "" else f" (got {self.value})"
        return f"{self.path}: {self.message}{got}"


class ScenarioError(RobTwinError, ValueError):
    """A malformed scenario file; ``issues`` lists each problem with its field path."""

    def __init__(self, message: str, issues: list[ScenarioIssue] | None = None):
        self.issues = list(issues or [])
        if len(self.issues) == 1:  # one problem: one line
            super().__init__(f"{message} {self.issues[0]}")
            return
        lines = [message] + [f"  - {i}" for i in self.issues]
        super().__init__("\n".join(lines))


def did_you_mean(word: str, valid: list[str] | tuple[str, ...]) -> str:
    """``" (did you mean 'x'?)"`` for the closest valid word, or ``""``."""
    close = difflib.get_close_matches(str(word), list(valid), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _bounded_repr() -> reprlib.Repr:
    r = reprlib.Repr()
    r.maxlevel, r.maxdict, r.maxlist, r.maxstring, r.maxother = 3, 4, 8, 60, 60
    return r


_REPR = _bounded_repr()


def short_repr(value: Any, limit: int = 100) -> str:
    """A bounded repr: nested and huge values are cut (``...``), never walked in full."""
    try:
        text = _REPR.repr(value)
    except RecursionError:
        text = "<nested too deeply to show>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _problem(kind: str, message: str, at: tuple = (), value: Any = None) -> PydanticCustomError:
    """A validation error whose ``message`` is final; ``at`` extends the field path (a key
    inside a mapping) and ``value`` is the bad value shown there."""
    return PydanticCustomError(kind, "{detail}", {"detail": message, "at": at, "value": value})


# --------------------------------------------------------------------------- building blocks


class _Strict(BaseModel):
    """Unknown keys refused with a hint; no type coercion; numbers finite."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _known_keys_only(cls, data: Any) -> Any:
        if isinstance(data, dict):
            valid = [f.alias or name for name, f in cls.model_fields.items()]
            unknown = [k for k in data if k not in valid]
            if unknown:
                key = unknown[0]
                also = (
                    f" (also unknown: {', '.join(map(repr, unknown[1:]))})" if unknown[1:] else ""
                )
                raise _problem(
                    "unknown_key",
                    f"unknown key{did_you_mean(key, valid)}; "
                    f"valid keys here: {', '.join(valid)}{also}",
                    at=(key,),
                )
        return data


def arm_limits(robot: str, arm: str) -> list[tuple[float, float]]:
    """Joint limits [rad] of ``arm`` of ``robot`` (a shipped name or a robot file): its
    model's joint ranges, each arm its own (ROB's are ``rob_twin.models.dimensions``')."""
    return robot_of(robot).joint_ranges(arm)


def _robot_of(info: ValidationInfo) -> str:
    return (info.context or {}).get("robot", N.DEFAULT_ROBOT)


def _check_pose(robot: str, arm: str, q: list[float], at: tuple) -> None:
    limits = arm_limits(robot, arm)
    if len(q) != len(limits):
        raise _problem(
            "joint_count",
            f"{len(q)} joint angles for the {arm} arm of robot {robot_of(robot).name!r}, "
            f"which has {len(limits)} joints (j1..j{len(limits)})",
            at=at,
        )
    for j, (v, (lo, hi)) in enumerate(zip(q, limits, strict=True), start=1):
        if not lo <= v <= hi:
            raise _problem(
                "joint_limit",
                f"joint j{j} = {v!r} rad is outside the {arm} arm's limits [{lo}, {hi}] rad",
                at=(*at, j - 1),
                value=v,
            )


Seconds = Annotated[float, Field(ge=0.0, le=MAX_DURATION_S, description="simulated time [s]")]
ArmName = Literal["right", "left"]
ArmPose = Annotated[
    list[float],
    Field(
        min_length=MIN_JOINTS_PER_ARM,
        max_length=JOINTS_PER_ARM,
        description="one joint angle [rad] per joint of the robot's arm, j1..jN (seven on "
        "ROB and OpenArm), inside its joint limits (ROB: models/dimensions.py; another "
        "robot: its model's joint ranges)",
    ),
]
Seed = Annotated[int, Field(ge=0, le=2**32 - 1)]
RefusalReason = Literal[tuple(r.value for r in RejectReason)]  # type: ignore[valid-type]
OwnerFaultName = Literal[tuple(k.value for k in OwnerFaultKind)]  # type: ignore[valid-type]


class Keyframe(_Strict):
    """The arm's streamed target blends (cosine) to ``q`` by time ``t``."""

    t: Seconds
    arm: ArmName
    q: ArmPose

    @model_validator(mode="after")
    def _q_within_limits(self, info: ValidationInfo) -> Keyframe:
        _check_pose(_robot_of(info), self.arm, self.q, ("q",))
        return self


class PlanStep(_Strict):
    """At ``t``, ArmGroup plans the arms in ``goals`` together and executes the plan; or
    the plan file ``plan`` (``rob-twin plan --out``) is executed as written."""

    t: Seconds
    goals: dict[ArmName, ArmPose] = Field(
        default_factory=dict, description="arm -> joint goal; give goals or plan"
    )
    plan: str | None = Field(
        default=None,
        min_length=1,
        description="a plan file (rob-twin plan --out; path relative to the working "
        "directory) executed as written instead of planning goals; give goals or plan",
    )
    seed: Seed = 0

    @model_validator(mode="after")
    def _goals_or_plan(self, info: ValidationInfo) -> PlanStep:
        if bool(self.goals) == (self.plan is not None):
            raise _problem(
                "goals_or_plan", "give exactly one of goals (arm -> 7 joint angles) or plan"
            )
        for arm, q in self.goals.items():
            _check_pose(_robot_of(info), arm, q, ("goals", arm))
        if self.plan is not None:
            from rob_twin.planners.plan_file import PlanFileError, load_plan_file

            try:
                load_plan_file(self.plan)
            except PlanFileError as err:
                raise _problem("plan_file", str(err), at=("plan",)) from None
        return self


class BaseStep(_Strict):
    """From ``t`` on, ROB's tracked base drives forward at ``v`` [m/s] while turning at
    ``omega`` [rad/s] (counter-clockwise); each tread within its top speed."""

    t: Seconds
    v: Annotated[
        float,
        Field(
            ge=-D.BODY.tread_max_speed, le=D.BODY.tread_max_speed, description="forward speed [m/s]"
        ),
    ] = 0.0
    omega: Annotated[
        float,
        Field(
            ge=-D.BODY.tread_max_speed / D.BODY.tread_y,
            le=D.BODY.tread_max_speed / D.BODY.tread_y,
            description="yaw rate [rad/s]",
        ),
    ] = 0.0

    @model_validator(mode="after")
    def _treads_within_top_speed(self) -> BaseStep:
        need = abs(self.v) + abs(self.omega) * D.BODY.tread_y
        if need > D.BODY.tread_max_speed + 1e-12:
            raise _problem(
                "tread_speed",
                f"v = {self.v!r} m/s with omega = {self.omega!r} rad/s "
                f"needs a tread at {need:.4g} m/s; valid: |v| + |omega| * "
                f"{D.BODY.tread_y} m <= {D.BODY.tread_max_speed} m/s",
                value={"v": self.v, "omega": self.omega},
            )
        return self


class HeldObjectSpec(_Strict):
    """A box the hands can hold (``rob_twin.twin.scenario.held_steps``): weld grasps; it waits on
    its stand midway between the hands at home until grasped."""

    size: Annotated[
        list[Annotated[float, Field(gt=0.0, le=1.0)]], Field(min_length=3, max_length=3)
    ] = Field(default_factory=lambda: [0.12, 0.34, 0.10], description="edge lengths x, y, z [m]")
    mass: Annotated[float, Field(gt=0.0, le=50.0, description="[kg]")] = 1.0
    grip_force: Annotated[float, Field(ge=0.0, le=1000.0, description="per gripper [N]")] = 20.0
    friction: Annotated[float, Field(ge=0.0, le=5.0, description="pad friction")] = 1.2
    max_internal_force: Annotated[
        float, Field(gt=0.0, le=10000.0, description="the verdict's internal force limit [N]")
    ] = 10.0
    torque_fraction: Annotated[
        float, Field(gt=0.0, le=1.0, description="joint torque limit, fraction of its range")
    ] = 0.9


class GraspStep(_Strict):
    """At ``t`` the named hands weld to the held box (grasp) or let go (release)."""

    t: Seconds
    action: Literal["grasp", "release"]
    hands: Annotated[list[ArmName], Field(min_length=1, max_length=2)] = Field(
        default_factory=lambda: ["right", "left"]
    )


class CarryStep(_Strict):
    """At ``t`` both TCPs move by ``translate`` along one lockstep Cartesian plan, the left
    arm's commands ``skew_ms`` late (0: one shared start)."""

    t: Seconds
    translate: Annotated[
        list[Annotated[float, Field(ge=-0.5, le=0.5)]], Field(min_length=3, max_length=3)
    ] = Field(description="TCP translation x, y, z [m], base frame")
    skew_ms: Annotated[float, Field(ge=0.0, le=1000.0)] = 0.0


# --------------------------------------------------------------------------- faults


class FaultBase(_Strict):
    arm: ArmName
    at: Seconds = 0.0
    duration: Annotated[float, Field(gt=0.0, le=MAX_DURATION_S)] | None = Field(
        default=None, description="how long it lasts [s]; omitted: to the end of the run"
    )

    def params(self) -> dict[str, float]:
        """The kind-specific parameters (every field but kind, arm, at, duration, joints)."""
        return {k: float(getattr(self, k)) for k in _param_names(type(self))}


@functools.cache
def _param_names(model: type[FaultBase]) -> tuple[str, ...]:
    return tuple(
        k for k in model.model_fields if k not in ("kind", "arm", "at", "duration", "joints")
    )


JointNumbers = Annotated[
    list[Annotated[int, Field(ge=1, le=JOINTS_PER_ARM)]],
    Field(max_length=JOINTS_PER_ARM, description="1-based joints; omitted or empty: all seven"),
]


class JointFaultBase(FaultBase):
    joints: JointNumbers = []

    @field_validator("joints")
    @classmethod
    def _distinct(cls, joints: list[int]) -> list[int]:
        if len(set(joints)) != len(joints):
            raise _problem("duplicate_joint", "lists a joint twice", value=joints)
        return joints


class DropFault(FaultBase):
    """Each host frame is lost with ``probability`` (seeded RNG)."""

    kind: Literal["drop"]
    probability: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0


class DelayFault(FaultBase):
    """Host frames reach the drives ``delay_s`` + U(0, ``jitter_s``) later [s], order kept."""

    kind: Literal["delay"]
    delay_s: Annotated[float, Field(ge=0.0, le=1.0)] = 0.01
    jitter_s: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0


class BusOffFault(FaultBase):
    """Every write fails (bus-off)."""

    kind: Literal["bus_off"]


class PartialBatchFault(FaultBase):
    """The bus accepts only the first ``accept_frames`` frames of a sample."""

    kind: Literal["partial_batch"]
    accept_frames: Annotated[int, Field(ge=0, le=JOINTS_PER_ARM - 1)] = 3


class UncertainWriteFault(FaultBase):
    """The write of frame ``at_frame`` (0-based) times out: it may be out."""

    kind: Literal["uncertain_write"]
    at_frame: Annotated[int, Field(ge=0, le=JOINTS_PER_ARM - 1)] = 3


class SecondWriterFault(FaultBase):
    """Another node writes position commands (``position_rad``) on our ids at ``rate_hz``."""

    kind: Literal["second_writer"]
    rate_hz: Annotated[float, Field(gt=0.0, le=1000.0)] = 50.0
    position_rad: Annotated[float, Field(ge=-math.pi, le=math.pi)] = 0.0


class FeedbackFreezeFault(JointFaultBase):
    """The listed joints (default all) stop sending feedback."""

    kind: Literal["feedback_freeze"]


class StallFault(JointFaultBase):
    """The listed joints are mechanically jammed."""

    kind: Literal["stall"]


class EncoderOffsetFault(JointFaultBase):
    """The listed joints report ``offset_rad`` more than they are at."""

    kind: Literal["encoder_offset"]
    offset_rad: Annotated[float, Field(ge=-math.pi, le=math.pi)] = 0.1


class WrongSignFault(JointFaultBase):
    """The listed joints are installed with the opposite sign to the host's codec."""

    kind: Literal["wrong_sign"]


class PowerLossFault(FaultBase):
    """The arm goes limp and stops answering."""

    kind: Literal["power_loss"]


FAULT_MODELS = (
    DropFault,
    DelayFault,
    BusOffFault,
    PartialBatchFault,
    UncertainWriteFault,
    SecondWriterFault,
    FeedbackFreezeFault,
    StallFault,
    EncoderOffsetFault,
    WrongSignFault,
    PowerLossFault,
)
Fault = Annotated[Union[FAULT_MODELS], Field(discriminator="kind")]  # noqa: UP007
FAULT_KINDS = tuple(m.model_fields["kind"].annotation.__args__[0] for m in FAULT_MODELS)


# --------------------------------------------------------------------------- scenario


class Expect(_Strict):
    """What the run may do without failing: by default any refused target, failed plan
    step or latched owner fault makes ``rob-twin run`` exit 1."""

    refused_targets: dict[ArmName, list[RefusalReason]] = Field(
        default_factory=dict, description="per arm, the refusal reasons that are expected"
    )
    failed_plans: Annotated[int, Field(ge=0)] = Field(
        default=0, description="how many plan steps may fail (at most)"
    )
    owner_faults: dict[ArmName, list[OwnerFaultName]] = Field(
        default_factory=dict, description="per arm, the owner faults that may latch"
    )


class ScenarioFile(_Strict):
    """A headless scenario (see ``twin/scenario/run.py``); times are simulated seconds."""

    model_config = ConfigDict(title="rob-twin scenario", populate_by_name=False)

    schema_ref: str | None = Field(
        default=None,
        alias="$schema",
        description="optional: path or URL of this schema, for editors",
    )
    name: Annotated[
        str,
        Field(
            pattern=NAME_PATTERN,
            description=(
                "run folder name under --out: letters, digits, '_', '-', '.'; no path separators"
            ),
        ),
    ] = "scenario"
    about: Annotated[str, Field(max_length=4000)] = Field(
        default="",
        description="what the scenario is for, in words (rob-twin excite: which model "
        "parameters its motion excites); not used by the run",
    )
    duration: Annotated[
        float, Field(ge=MIN_DURATION_S, le=MAX_DURATION_S, description="simulated seconds to run")
    ]
    seed: Seed = 0
    initial: dict[str, float] = Field(
        default_factory=dict,
        description=(
            "joint name -> initial position [rad, or m for finger slides], inside the joint limits"
        ),
        json_schema_extra={"propertyNames": {"enum": list(initial_joint_limits())}},
    )
    keyframes: Annotated[list[Keyframe], Field(max_length=MAX_KEYFRAMES)] = []
    faults: Annotated[list[Fault], Field(max_length=MAX_FAULTS)] = []
    plans: Annotated[list[PlanStep], Field(max_length=MAX_STEPS)] = []
    cameras: list[Literal[CAMERAS]] = Field(  # type: ignore[valid-type]
        default_factory=list, description="the first one is recorded"
    )
    fps: Annotated[int, Field(ge=1, le=120)] = 30
    frame_size: Annotated[
        list[Annotated[int, Field(ge=16, multiple_of=8)]], Field(min_length=2, max_length=2)
    ] = Field(default_factory=lambda: [640, 480], description="video [width, height] pixels")
    target_rate_hz: Annotated[float, Field(gt=0.0, le=1000.0)] = 100.0
    expect: Expect = Field(default_factory=Expect)
    robot: str = Field(
        default=N.DEFAULT_ROBOT,
        min_length=1,
        max_length=1000,
        description="a shipped robot (rob: ROB on Amber position drives; openarm: OpenArm v2 "
        "on Damiao MIT drives, gravity compensation at 500 Hz) or the path of a robot file "
        "(robot.toml, models/robot.schema.json)",
    )

    @field_validator("robot")
    @classmethod
    def _known_robot(cls, robot: str) -> str:
        try:
            robot_of(robot)
        except RobotFileError as err:
            raise _problem(
                "unknown_robot", f"unusable robot; valid: {err.valid}", value=robot
            ) from None
        return robot

    base: list[BaseStep] = Field(
        default_factory=list,
        max_length=MAX_STEPS,
        description=(
            "tracked-base drive steps (robot 'rob' only); the lidars run and merge while it drives"
        ),
    )
    held_object: HeldObjectSpec | None = Field(
        default=None, description="a box the hands can grasp and carry (grasps, carries)"
    )
    grasps: list[GraspStep] = Field(
        default_factory=list, max_length=MAX_STEPS, description="needs held_object"
    )
    carries: list[CarryStep] = Field(
        default_factory=list,
        max_length=MAX_STEPS,
        description="needs held_object; both arms, no keyframes or plans",
    )
    quality: Literal["auto", "fast", "full"] = Field(
        default="auto",
        description="video render quality: fast (no shadows, reflections or "
        "multisampling; suits a software GL renderer), full (the model's own settings), auto "
        "(fast on a software GL renderer, full on a GPU)",
    )

    @field_validator("initial")
    @classmethod
    def _initial_in_limits(
        cls, initial: dict[str, float], info: ValidationInfo
    ) -> dict[str, float]:
        limits = robot_of(_robot_of(info)).limited_joint_ranges()
        for joint, value in initial.items():
            if joint not in limits:
                raise _problem(
                    "unknown_joint",
                    f"unknown joint{did_you_mean(joint, list(limits))}; valid: {', '.join(limits)}",
                    at=(joint,),
                )
            lo, hi = limits[joint]
            if not lo <= value <= hi:
                raise _problem(
                    "joint_limit",
                    f"outside the joint's limits [{lo}, {hi}] (rad; m for finger slides)",
                    at=(joint,),
                    value=value,
                )
        return initial

    @field_validator("faults", mode="before")
    @classmethod
    def _not_too_many_faults(cls, faults: Any) -> Any:
        if isinstance(faults, list) and len(faults) > MAX_FAULTS:
            raise _problem(
                "too_many_faults",
                f"{len(faults)} entries; a scenario holds at most "
                f"{MAX_FAULTS} faults (merge overlapping ones or split the run)",
            )
        return faults

    @field_validator("keyframes", "plans", "base", "grasps", "carries", mode="before")
    @classmethod
    def _not_too_many_entries(cls, entries: Any, info: ValidationInfo) -> Any:
        top = MAX_KEYFRAMES if info.field_name == "keyframes" else MAX_STEPS
        if isinstance(entries, list) and len(entries) > top:
            raise _problem(
                f"too_many_{info.field_name}",
                f"{len(entries)} entries; a scenario holds at most {top} {info.field_name} "
                "(split the run)",
            )
        return entries

    @field_validator("frame_size")
    @classmethod
    def _fits_offscreen(cls, size: list[int]) -> list[int]:
        if size[0] > OFFSCREEN_MAX[0] or size[1] > OFFSCREEN_MAX[1]:
            raise _problem(
                "frame_size",
                f"exceeds the offscreen buffer {list(OFFSCREEN_MAX)} pixels",
                value=size,
            )
        return size

    @model_validator(mode="after")
    def _consistent(self) -> ScenarioFile:
        for field, entries, key in (
            ("keyframes", self.keyframes, "t"),
            ("faults", self.faults, "at"),
        ):
            for i, entry in enumerate(entries):
                if getattr(entry, key) > self.duration:
                    raise _problem(
                        f"{field}_after_end",
                        f"must be within the run: in [0, {self.duration}] s (duration)",
                        at=(field, i, key),
                        value=getattr(entry, key),
                    )
        keyframed = {k.arm for k in self.keyframes}
        for i, step in enumerate(self.plans):
            both = sorted(keyframed & set(step.goals))
            if both:
                raise _problem(
                    "arm_conflict",
                    f"the {both[0]} arm also has keyframes; an arm "
                    "follows keyframes or plans, not both",
                    at=("plans", i, "goals", both[0]),
                )
            if step.t >= self.duration:
                raise _problem(
                    "plan_after_end",
                    f"must be before the end of the run (duration {self.duration} s)",
                    at=("plans", i, "t"),
                    value=step.t,
                )
        if (self.grasps or self.carries) and self.held_object is None:
            raise _problem(
                "no_held_object",
                "grasps and carries need a held_object",
                at=("grasps" if self.grasps else "carries",),
            )
        if self.carries and (keyframed or any(p.goals or p.plan for p in self.plans)):
            raise _problem(
                "arm_conflict",
                "carries move both arms; an arm follows keyframes, plans or carries, not two",
                at=("carries",),
            )
        if self.base and not robot_of(self.robot).can(TRACKED_BASE):
            raise _problem(
                "no_base",
                f"robot {self.robot!r} has no tracked base (capability {TRACKED_BASE!r}: "
                f"{CAPABILITY_SOURCES[TRACKED_BASE]}); base steps need one, e.g. robot "
                f"{N.DEFAULT_ROBOT!r}",
                at=("base",),
                value=self.robot,
            )
        return self


# --------------------------------------------------------------------------- validation


def _path(loc: tuple) -> str:
    parts: list[str] = []
    for k, item in enumerate(loc):
        if isinstance(item, int):
            parts.append(f"[{item}]")
            continue
        if (
            k >= 2
            and loc[k - 2] == "faults"
            and isinstance(loc[k - 1], int)
            and item in FAULT_KINDS
        ):
            continue  # the discriminated union's tag, not a key of the file
        parts.append(f".{item}" if parts else str(item))
    return "".join(parts) or "(top level)"


def _message(e: dict) -> str:
    kind, ctx, value = e["type"], e.get("ctx") or {}, e.get("input")
    if "detail" in ctx:
        return ctx["detail"]
    if e["loc"] == ("duration",) and kind in ("greater_than_equal", "finite_number", "float_type"):
        return (
            f"must be a number of simulated seconds in [{MIN_DURATION_S}, {MAX_DURATION_S}] "
            f"(a run logs every {MIN_DURATION_S} s and needs at least one sample)"
        )
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return "must be a JSON object {...}"
    if kind == "list_type":
        return "must be a JSON list [...]"
    if kind == "missing":
        return "required field is missing"
    if kind == "union_tag_not_found":
        return f"a fault needs a 'kind'; valid: {', '.join(FAULT_KINDS)}"
    if kind == "union_tag_invalid":
        return (
            f"unknown fault kind {ctx.get('tag')!r}"
            f"{did_you_mean(ctx.get('tag', ''), FAULT_KINDS)}; "
            f"valid: {', '.join(FAULT_KINDS)}"
        )
    if kind in ("too_short", "too_long") and (
        e["loc"][-1:] == ("q",) or e["loc"][-2:-1] == ("goals",)
    ):
        return (
            f"must be one finite joint angle [rad] per joint of the robot's arm, j1..jN "
            f"({MIN_JOINTS_PER_ARM} to {JOINTS_PER_ARM}; ROB and OpenArm: {JOINTS_PER_ARM})"
        )
    if kind == "literal_error" and isinstance(value, str):
        valid = [
            v.strip("'") for v in str(ctx.get("expected", "")).replace(" or ", ", ").split(", ")
        ]
        return f"{e['msg']}{did_you_mean(value, valid)}"
    if kind == "string_pattern_mismatch" and e["loc"] == ("name",):
        return (
            "must be a plain folder name (letters, digits, '_', '-', '.'; starts with a letter "
            "or digit; at most 64 characters): it names the run folder under --out"
        )
    return plain_message(e)


SHOWN_LIST_ITEMS = 16  # a longer list is shown by its length in a refusal


def _shown_value(e: dict) -> str:
    ctx = e.get("ctx") or {}
    if e["type"] in ("missing", "unknown_key", "union_tag_not_found", "unknown_joint"):
        return ""
    value = ctx["value"] if ctx.get("value") is not None else e.get("input")
    if isinstance(value, list) and len(value) > SHOWN_LIST_ITEMS:  # its length says it
        return f"a list of {len(value)}"
    if isinstance(value, dict | list) and e["type"] not in ("too_short", "too_long"):
        return f"a {type(value).__name__}" if e["type"].endswith("_type") else short_repr(value)
    return short_repr(value)


def issues_of(err: ValidationError, prefix: tuple = ()) -> list[ScenarioIssue]:
    out = []
    for e in err.errors(include_url=False):
        loc = prefix + tuple(e["loc"]) + tuple((e.get("ctx") or {}).get("at", ()))
        out.append(ScenarioIssue(path=_path(loc), value=_shown_value(e), message=_message(e)))
    return out


def _robot_in(raw: Any) -> str:
    """The robot a raw scenario names, when it names a usable one (else ROB: the ``robot``
    field's own validation reports the bad value)."""
    robot = raw.get("robot", N.DEFAULT_ROBOT) if isinstance(raw, dict) else N.DEFAULT_ROBOT
    if not isinstance(robot, str):
        return N.DEFAULT_ROBOT
    try:
        robot_of(robot)
    except RobotFileError:
        return N.DEFAULT_ROBOT
    return robot


def validate_scenario(raw: Any, source: str = "scenario") -> ScenarioFile:
    """``raw`` (decoded JSON) as a ``ScenarioFile``; ``ScenarioError`` lists every problem."""
    try:
        return ScenarioFile.model_validate(raw, context={"robot": _robot_in(raw)})
    except ValidationError as err:
        issues = issues_of(err)
        raise ScenarioError(
            f"{source} is not valid ({len(issues)} problem{'s' if len(issues) != 1 else ''}):",
            issues,
        ) from None
    except RecursionError:
        raise ScenarioError(f"{source} is nested too deeply to be a scenario") from None


_FAULT_LIST = TypeAdapter(Annotated[list[Fault], Field(max_length=MAX_FAULTS)])


def parse_fault(raw: dict) -> FaultSpec:
    """One fault as scenario files write it, checked here (unknown keys, kinds and arms,
    ranges); FaultSpecError lists the problems."""
    try:
        (model,) = validate_faults([raw], "fault")
    except ScenarioError as err:
        raise FaultSpecError(str(err)) from None
    return FaultSpec.from_model(model)


def validate_faults(raw: Any, source: str = "fault list") -> list:
    """``raw`` (decoded JSON) as a list of fault models (the scenario ``faults`` format)."""
    try:
        return _FAULT_LIST.validate_python(raw, strict=True)
    except ValidationError as err:
        issues = issues_of(err, prefix=("faults",))
        raise ScenarioError(f"{source} is not a valid list of faults:", issues) from None


def json_schema() -> dict:
    """The JSON Schema of scenario files (draft 2020-12), generated from ``ScenarioFile``."""
    schema = ScenarioFile.model_json_schema(by_alias=True)
    rob_pose = {
        "prefixItems": [
            {"type": "number", "minimum": j.lower, "maximum": j.upper, "title": f"j{k}"}
            for k, j in enumerate(D.ARM_JOINTS, start=1)
        ]
    }
    # the default robot's (ROB's) joint limits where the scenario is its (no robot, or its
    # name); another robot's come from its model, which a JSON Schema cannot load: the
    # validator checks those
    schema["if"] = {"properties": {"robot": {"const": N.DEFAULT_ROBOT}}}
    schema["then"] = {
        "properties": {
            "keyframes": {"items": {"properties": {"q": rob_pose}}},
            "plans": {"items": {"properties": {"goals": {"additionalProperties": rob_pose}}}},
        }
    }
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m rob_twin.twin.scenario.schema",
        description="print, write or check the scenario JSON Schema",
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true", help=f"write {SCHEMA_PATH.name}")
    g.add_argument("--check", action="store_true", help="exit 1 if the committed file is stale")
    args = p.parse_args(argv)
    text = schema_text()
    if args.write:
        SCHEMA_PATH.write_text(text)
        print(f"wrote {SCHEMA_PATH}", file=sys.stderr)
    elif args.check:
        if not SCHEMA_PATH.exists() or SCHEMA_PATH.read_text() != text:
            print(
                f"{SCHEMA_PATH} is stale: run python -m rob_twin.twin.scenario.schema --write",
                file=sys.stderr,
            )
            return 1
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A robot description file (``robot.toml``): which MJCF, which joints are the two arms, how
they are driven, and where they sit on the wire.

The twin, the planner and the studies run any dual-arm MJCF that such a file describes. ROB
(``models/rob/robot.toml``) and OpenArm v2 as published (``models/openarm/robot.toml``) are two;
``--robot NAME|PATH`` takes a shipped name or the path of your own file. The file names the
MJCF's own joints, actuators and sites; ``rob_twin.models.robot_model`` renames them to the
twin's canonical names (``right/j1`` ..., ``rob_twin.models.names``) when it loads the model,
so every consumer finds them the same way on every robot.

The published JSON Schema is ``models/robot.schema.json`` (``python -m
rob_twin.models.robot_description`` rewrites it; a test keeps it current).

Paths in ``mjcf`` are relative to the file's folder; ``{share}`` stands for the Python
environment's ``share`` folder (where ``openarm-mujoco`` installs its models) and
``{site_packages}`` for its ``site-packages`` folder (models that ship inside a package).
"""

from __future__ import annotations

import json
import math
import re
import sysconfig
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from rob_twin.models.damiao_motors import MOTORS
from rob_twin.models.errors import InvalidValueError
from rob_twin.models.names import JOINTS_PER_ARM, ROBOTS, Arm

MIN_JOINTS = 5  # an ``ideal`` or ``damiao`` arm may have 5, 6 or 7 joints
MIN_IDEAL_JOINTS = MIN_JOINTS  # (its earlier name)
# drive families whose arms may have MIN_JOINTS..JOINTS_PER_ARM joints; 'amber' has seven:
# its codec's seven frames per sample (ids 0x11..0x17)
ANY_JOINT_COUNT_FAMILIES = ("ideal", "damiao")
JOINT_COUNTS = (
    f"{MIN_JOINTS} to {JOINTS_PER_ARM} joints per arm for drive families 'ideal' and "
    f"'damiao', {JOINTS_PER_ARM} for 'amber'"
)
_PER_JOINT_LISTS = ("joints", "actuators", "home_rad")  # one entry per arm joint

MODELS_DIR = Path(__file__).resolve().parent
SCHEMA_PATH = MODELS_DIR / "robot.schema.json"
SHIPPED: dict[str, Path] = {name: MODELS_DIR / name / "robot.toml" for name in ROBOTS}
MAX_FILE_BYTES = 256 * 1024  # a robot file is a few kB; anything larger is not one
MAX_TOML_DEPTH = 8  # tables and arrays nested in a robot file (ROB's: 4)
# the MJCF a robot file names, checked before MuJoCo parses it (check_mjcf_files): its text
# and every file it includes (<include file>, <model file>) together, and the model it
# compiles to (robot_model: checked before compiling)
MAX_MJCF_BYTES = 4 * 1024 * 1024  # all XML files together; OpenArm's: 12 kB, ROB's: 28 kB
MAX_MJCF_FILES = 64  # XML files (the MJCF and the files it includes)
MAX_MJCF_ELEMENTS = 10_000  # XML elements in all of them; ROB's: 307
MAX_MODEL_GEOMS = 2_000  # geoms of the parsed model; OpenArm's: 97 (the planner's pair
MAX_MODEL_BODIES = 1_000  # tables are geoms x geoms); bodies of the parsed model
MAX_ANGLE_RAD = 100.0  # |home_rad|, |demo angles|: ranges are checked at model load
MAX_OFFSET_M = 10.0  # |tcp_offset_m|, |camera position|
CHANNEL_PATTERN = r"^[A-Za-z0-9_.-]{1,15}$"  # a Linux network interface name

DriveFamily = Literal["amber", "damiao", "ideal"]


class RobotFileError(InvalidValueError):
    """A robot description that cannot be used: unreadable, malformed, or naming what its
    MJCF does not have. The message names the field, the value and what is valid."""


def _strict() -> ConfigDict:
    return ConfigDict(extra="forbid", frozen=True)


class CanWiring(BaseModel):
    """Where one arm lives on the wire (the twin's virtual channel has the same name)."""

    model_config = _strict()
    channel: str = Field(
        min_length=1,
        max_length=15,
        pattern=CHANNEL_PATTERN,
        description="CAN interface name: 1 to 15 of A-Z a-z 0-9 _ . - (not '.' or '..'); "
        "each arm its own",
    )
    vendor_label: str = Field(default="", max_length=32, description="label on the arm's drives")

    @field_validator("channel")
    @classmethod
    def _interface_name(cls, v: str) -> str:
        if v in (".", ".."):
            raise ValueError(f"{v!r} is no interface name (1 to 15 of A-Z a-z 0-9 _ . -)")
        return v


class ArmDescription(BaseModel):
    """One arm: its joints base to tip (seven for drive family ``amber``; five, six or seven
    for ``ideal`` and ``damiao``), their actuators, the tool centre point, home."""

    model_config = _strict()
    joints: list[str] = Field(
        min_length=MIN_IDEAL_JOINTS,
        max_length=JOINTS_PER_ARM,
        description="the MJCF's joint names, base to tip: seven (amber) or five, six or seven "
        "(ideal, damiao)",
    )
    actuators: list[str] | None = Field(
        default=None,
        min_length=MIN_IDEAL_JOINTS,
        max_length=JOINTS_PER_ARM,
        description="the MJCF's actuator per joint (replaced by the drive family's); "
        "omitted: the MJCF's one actuator of each joint, or one is added per joint",
    )
    tcp_site: str | None = Field(
        default=None, description="the MJCF's tool centre point site (omitted: tcp_body)"
    )
    tcp_body: str | None = Field(
        default=None, description="body that carries a new TCP site at tcp_offset_m"
    )
    tcp_offset_m: list[float] = Field(
        default=[0.0, 0.0, 0.0], min_length=3, max_length=3, description="[m] in tcp_body"
    )
    home_rad: list[float] = Field(
        min_length=MIN_IDEAL_JOINTS,
        max_length=JOINTS_PER_ARM,
        description="home pose [rad], one per joint",
    )
    gripper_actuator: str | None = Field(default=None, description="the MJCF's gripper actuator")
    camera: str | None = Field(default=None, description="the MJCF's wrist camera")
    can: CanWiring | None = Field(default=None, description="bus of the arm's drives")

    @field_validator("home_rad", "tcp_offset_m")
    @classmethod
    def _finite(cls, v: list[float], info) -> list[float]:
        if not all(math.isfinite(x) for x in v):
            raise ValueError(f"{v}: every value must be finite")
        top, unit = (MAX_ANGLE_RAD, "rad") if info.field_name == "home_rad" else (MAX_OFFSET_M, "m")
        if not all(abs(x) <= top for x in v):
            raise ValueError(f"{v}: every value must be in [-{top:g}, {top:g}] {unit}")
        return v


class FrictionDescription(BaseModel):
    """A joint friction identified on the real robot, per arm joint (the same on both arms):
    ``tau_f(w) = fo + fv w + fc tanh(k w)`` (``rob_twin.twin.drives.joint_friction``; damiao
    only). Where it is given, the arm joints carry it in place of the MJCF's damping and
    friction loss."""

    model_config = _strict()
    source: str = Field(
        min_length=1, max_length=400, description="where the values come from (provenance)"
    )
    fo_nm: list[float] = Field(
        min_length=MIN_JOINTS, max_length=JOINTS_PER_ARM, description="offset [N m] per joint"
    )
    fv_nm_s_per_rad: list[float] = Field(
        min_length=MIN_JOINTS, max_length=JOINTS_PER_ARM, description="viscous [N m s/rad]"
    )
    fc_nm: list[float] = Field(
        min_length=MIN_JOINTS, max_length=JOINTS_PER_ARM, description="Coulomb [N m] per joint"
    )
    k_s_per_rad: list[float] = Field(
        min_length=MIN_JOINTS,
        max_length=JOINTS_PER_ARM,
        description="tanh steepness [s/rad] per joint",
    )

    @field_validator("fo_nm", "fv_nm_s_per_rad", "fc_nm", "k_s_per_rad")
    @classmethod
    def _in_range(cls, v: list[float], info) -> list[float]:
        from rob_twin.models.joint_friction import LIMITS

        lo, hi = LIMITS[info.field_name]
        for x in v:
            if not (math.isfinite(x) and lo <= x <= hi):
                raise ValueError(f"{x} is not a finite number in [{lo:g}, {hi:g}]")
        return v


class DriveDescription(BaseModel):
    """How the arm joints are driven in the twin."""

    model_config = _strict()
    family: DriveFamily = Field(
        description="amber: ROB's Amber position drives over CAN; damiao: Damiao MIT drives "
        "over CAN (motors per joint); ideal: position servos, no CAN model"
    )
    motors: list[str] | None = Field(
        default=None,
        min_length=MIN_JOINTS,
        max_length=JOINTS_PER_ARM,
        description="damiao only: motor type per arm joint (as many as each arm has joints), "
        f"one of {sorted(MOTORS)}",
    )
    bus: str = Field(
        default="1M",
        max_length=40,
        pattern=r"^(classic:|fd:)?[0-9.]+[kM]?(/[0-9.]+[kM]?)?(\+worst)?$",
        description="the arms' CAN buses, as --bus writes them: 1M (classic CAN 1 Mbit/s), "
        "500k, fd:1M/5M (CAN FD, 5 Mbit/s data phase); what run, demo and rehearse "
        "simulate unless --bus says otherwise",
    )
    kp: float | None = Field(
        default=None, gt=0, le=1e5, description="ideal only, required there: servo kp [Nm/rad]"
    )
    kv: float = Field(default=20.0, ge=0, le=1e4, description="ideal only: servo kv [Nm s/rad]")
    friction: FrictionDescription | None = Field(
        default=None,
        description="damiao only: the joints' identified friction (tau = fo + fv w + fc "
        "tanh(k w)), in place of the MJCF's damping and friction loss",
    )

    @field_validator("motors")
    @classmethod
    def _known_motors(cls, v: list[str] | None) -> list[str] | None:
        for m in v or ():
            if m not in MOTORS:
                raise ValueError(f"motor {m!r} is not one of {sorted(MOTORS)}")
        return v


class SceneDescription(BaseModel):
    """What the twin adds around the robot when the MJCF lacks it."""

    model_config = _strict()
    add_floor: bool = Field(default=False, description="add a floor plane at z = 0")
    add_light: bool = Field(default=True, description="add a light above the robot if none")
    overview_camera: list[float] = Field(
        default=[1.6, 0.0, 1.4, 0.0, 0.0, 0.8],
        min_length=6,
        max_length=6,
        description="camera 'overview' if the MJCF has none: position [m] then the point it "
        "looks at [m]",
    )
    front_camera: list[float] | None = Field(
        default=None,
        min_length=6,
        max_length=6,
        description="camera 'front' if the MJCF has none and this is given (the crossing demo "
        "films from it): position [m] then the point it looks at [m]",
    )

    @field_validator("overview_camera", "front_camera")
    @classmethod
    def _finite_camera(cls, v: list[float] | None) -> list[float] | None:
        if v is not None and not all(math.isfinite(x) for x in v):
            raise ValueError(f"{v}: every value must be finite")
        return v


class CollisionDescription(BaseModel):
    """Geom pairs the planner must never check (with the reason a reader needs)."""

    model_config = _strict()
    exclude_bodies: list[list[str]] = Field(
        default=[], description="[body_a, body_b] pairs whose contacts the MJCF gets excluded"
    )


ArmPosesRad = dict[Literal["right", "left"], list[float]]


class DemoDescription(BaseModel):
    """The crossing pair ``rob-twin demo`` runs (``rob_twin.twin.scenario.crossing_demo``): both
    arms start at ``crossing_start_rad`` and the hands swap sides in front of the robot to
    ``crossing_goals_rad``, first planned each arm alone (they collide), then together. One angle
    [rad] per arm joint, inside the joint's range (checked when the model loads)."""

    model_config = _strict()
    crossing_start_rad: ArmPosesRad = Field(
        description="where both arms start [rad], {right = [...], left = [...]}, one per joint"
    )
    crossing_goals_rad: ArmPosesRad = Field(
        description="where both arms end [rad], {right = [...], left = [...]}, one per joint"
    )

    @field_validator("crossing_start_rad", "crossing_goals_rad")
    @classmethod
    def _both_arms_finite(cls, v: dict) -> dict:
        if set(v) != {"right", "left"}:
            raise ValueError(f"arms {sorted(v)}: need exactly 'right' and 'left'")
        for side, q in v.items():
            if not all(math.isfinite(x) for x in q):
                raise ValueError(f"{side} {q}: every angle must be finite")
        return v


class RobotFile(BaseModel):
    """The robot description file (TOML)."""

    model_config = _strict()
    schema_ref: str | None = Field(
        default=None, alias="$schema", description="the JSON Schema, for editors"
    )
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    summary: str = Field(default="", max_length=400, description="one line for people")
    mjcf: str = Field(min_length=1, max_length=1000, description="the MJCF (scene) file")
    model_source: str = Field(default="", max_length=400, description="provenance")
    drives: DriveDescription
    arms: dict[Literal["right", "left"], ArmDescription] = Field(
        description="both arms, keyed right and left (the robot's own sides)"
    )
    scene: SceneDescription = Field(default_factory=SceneDescription)
    collision: CollisionDescription = Field(default_factory=CollisionDescription)
    demo: DemoDescription | None = Field(
        default=None,
        description="the crossing pair of rob-twin demo (omitted: the demo waves both arms, "
        "or a model keyframe 'crossing_start' gives ROB's pair)",
    )

    @field_validator("arms")
    @classmethod
    def _both_arms(cls, v: dict) -> dict:
        if set(v) != {"right", "left"}:
            raise ValueError(f"arms {sorted(v)}: need exactly 'right' and 'left'")
        return v


@dataclass(frozen=True)
class RobotDescription:
    """A validated robot file and where it came from."""

    file: RobotFile
    path: Path

    @property
    def name(self) -> str:
        return self.file.name

    @property
    def family(self) -> str:
        return self.file.drives.family

    def arm(self, arm: Arm | str) -> ArmDescription:
        return self.file.arms[Arm.parse(arm).value]

    @property
    def mjcf_path(self) -> Path:
        return resolve_mjcf(self.file.mjcf, self.path.parent)


def resolve_mjcf(text: str, folder: Path) -> Path:
    """``text`` with ``{share}`` / ``{site_packages}`` filled in, relative to ``folder``."""
    filled = text.replace("{share}", str(Path(sysconfig.get_path("data")) / "share")).replace(
        "{site_packages}", sysconfig.get_path("purelib")
    )
    path = Path(filled)
    return path if path.is_absolute() else (folder / path).resolve()


def _toml(path: Path) -> dict:
    try:
        size = path.stat().st_size
    except OSError as err:
        raise RobotFileError("robot file", str(path), f"a readable file ({err.strerror})") from None
    if size > MAX_FILE_BYTES:
        raise RobotFileError("robot file size", size, f"<= {MAX_FILE_BYTES} bytes")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise RobotFileError("robot file", str(path), f"valid UTF-8 TOML ({err})") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise RobotFileError(
            "robot file nesting", str(path), f"TOML nested at most {MAX_TOML_DEPTH} levels deep"
        ) from None
    _check_depth(raw, path)
    return raw


def _check_depth(raw: dict, path: Path) -> None:
    """RobotFileError when tables and arrays nest deeper than ``MAX_TOML_DEPTH`` (walked
    without recursion)."""
    stack = [(raw, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_TOML_DEPTH:
            raise RobotFileError(
                "robot file nesting", f"{depth} levels", f"at most {MAX_TOML_DEPTH} levels"
            )
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))


def _check_joint_counts(
    family: str,
    side: str,
    arm: ArmDescription,
    motors: list[str] | None = None,
    friction: FrictionDescription | None = None,
) -> None:
    """Seven joints on ``amber`` (its codec's seven frames), five to seven on ``ideal`` and
    ``damiao`` (the field limits refuse fewer or more before this); one actuator and one
    home angle per joint, and on ``damiao`` one motor per joint."""
    n = len(arm.joints)
    if family not in ANY_JOINT_COUNT_FAMILIES and n != JOINTS_PER_ARM:
        raise RobotFileError(
            f"arms.{side}.joints",
            n,
            f"{JOINTS_PER_ARM} joints for drive family {family!r} "
            f"({MIN_JOINTS} to {JOINTS_PER_ARM} only for 'ideal' and 'damiao')",
        )
    if friction is not None:
        for field in ("fo_nm", "fv_nm_s_per_rad", "fc_nm", "k_s_per_rad"):
            if len(getattr(friction, field)) != n:
                raise RobotFileError(
                    f"drives.friction.{field}",
                    len(getattr(friction, field)),
                    f"{n} values (one per joint of arms.{side})",
                )
    if family == "damiao" and motors is not None and len(motors) != n:
        raise RobotFileError(
            "drives.motors",
            len(motors),
            f"{n} motor types (one per joint of arms.{side}: it has {n} joints)",
        )
    for field in ("actuators", "home_rad"):
        values = getattr(arm, field)
        if values is not None and len(values) != n:
            raise RobotFileError(f"arms.{side}.{field}", len(values), f"{n} (one per joint)")


def _check_demo_counts(demo: DemoDescription | None, side: str, arm: ArmDescription) -> None:
    """One angle per joint of ``arm`` in each of the ``[demo]`` poses (the joint ranges are
    checked when the model loads: ``robot_model.check_demo_pair``)."""
    if demo is None:
        return
    for field in ("crossing_start_rad", "crossing_goals_rad"):
        q = getattr(demo, field)[side]
        if len(q) != len(arm.joints):
            raise RobotFileError(
                f"demo.{field}.{side}", len(q), f"{len(arm.joints)} angles (one per joint)"
            )


def _valid(error: dict) -> str:
    """What is valid, for pydantic's first ``error``: its message, and for a per-joint list of
    the wrong length (``arms.<side>.joints`` ...) the joint counts the drive families take."""
    loc = error["loc"]
    per_joint = len(loc) == 3 and loc[0] == "arms" and loc[2] in _PER_JOINT_LISTS
    if per_joint and error["type"] in ("too_short", "too_long"):
        return f"{JOINT_COUNTS} ({error['msg']})"
    if loc[-1:] == ("channel",):
        return "a network interface name: 1 to 15 of A-Z a-z 0-9 _ . - (not '.' or '..')"
    return plain_message(error)


def plain_message(error: dict) -> str:
    """pydantic's message of ``error`` without the ``"Value error, "`` it puts before the
    text of a ValueError a validator raised (that text is already in plain words)."""
    msg = str(error["msg"])
    head = "Value error, "
    return msg[len(head) :] if error.get("type") == "value_error" and msg.startswith(head) else msg


def load_robot_file(path: Path | str) -> RobotDescription:
    """Read and validate a robot file; RobotFileError names the first bad field."""
    path = Path(path)
    raw = _toml(path)
    try:
        robot = RobotFile.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(file)"
        raise RobotFileError(f"{path.name}: {where}", first.get("input"), _valid(first)) from None
    if robot.drives.family == "damiao" and robot.drives.motors is None:
        raise RobotFileError(
            "drives.motors", None, "one motor type per arm joint for family 'damiao'"
        )
    for side, arm in robot.arms.items():
        _check_joint_counts(
            robot.drives.family, side, arm, robot.drives.motors, robot.drives.friction
        )
        if (arm.tcp_site is None) == (arm.tcp_body is None):
            raise RobotFileError(
                f"arms.{side}.tcp_site/tcp_body", [arm.tcp_site, arm.tcp_body], "exactly one"
            )
        _check_demo_counts(robot.demo, side, arm)
    if robot.drives.friction is not None and robot.drives.family != "damiao":
        raise RobotFileError(
            "drives.friction",
            robot.drives.family,
            "drives.family 'damiao' (friction is a Damiao drive's joint model)",
        )
    if robot.drives.family == "ideal" and robot.drives.kp is None:
        raise RobotFileError(
            "drives.kp", None, "a servo kp in (0, 100000] Nm/rad (required for family 'ideal')"
        )
    _check_channels(robot)
    desc = RobotDescription(robot, path.resolve())
    if not desc.mjcf_path.is_file():
        raise RobotFileError("mjcf", str(desc.mjcf_path), "an existing MJCF file")
    check_mjcf_files(desc.mjcf_path)
    return desc


def _check_channels(robot: RobotFile) -> None:
    """Each arm on its own CAN channel (the twin runs one virtual bus per arm)."""
    right, left = robot.arms["right"].can, robot.arms["left"].can
    if right is not None and left is not None and right.channel == left.channel:
        raise RobotFileError(
            "arms.left.can.channel",
            left.channel,
            f"a channel other than arms.right.can.channel ({right.channel!r}): one bus per arm",
        )


_COMMENT = re.compile(rb"<!--.*?-->", re.S)
_ELEMENT = re.compile(rb"<[A-Za-z_]")
_INCLUDE = re.compile(rb"<\s*(?:include|model)\b[^>]*?\bfile\s*=\s*(\"[^\"]*\"|'[^']*')", re.S)
_ATTRIBUTE = re.compile(rb"([A-Za-z_][\w:.-]*)\s*=\s*(\"[^\"]*\"|'[^']*')")
_NAME_ATTRIBUTES = frozenset(
    b"name class childclass prefix file model material texture mesh hfield joint joint1 "
    b"joint2 body body1 body2 bodyname1 bodyname2 site geom geom1 geom2 tendon tendon1 "
    b"tendon2 actuator objname refname target key meshdir texturedir assetdir skin camera "
    b"light sensor plugin instance slidersite cranksite".split()
)


def check_mjcf_files(path: Path) -> None:
    """Bound the MJCF at ``path`` before MuJoCo parses it (parsing a 10 MB MJCF of 120,000
    geoms takes a minute): it and every XML file it names (``<include file>``, ``<model
    file>``, followed where they exist) hold at most ``MAX_MJCF_BYTES`` bytes and
    ``MAX_MJCF_ELEMENTS`` elements in at most ``MAX_MJCF_FILES`` files, and no numeric
    attribute holds NaN or infinity. RobotFileError names what is over and the limit."""
    total_bytes = total_elements = 0
    seen: set[Path] = set()
    todo = [Path(path)]
    while todo:
        file = todo.pop()
        try:
            key = file.resolve()
            if key in seen:
                continue
            if not file.is_file():
                raise RobotFileError("mjcf", str(file), "an existing MJCF file")
            size = file.stat().st_size
        except OSError as err:
            raise RobotFileError("mjcf", str(file), f"a readable file ({err.strerror})") from None
        seen.add(key)
        total_bytes += size
        if len(seen) > MAX_MJCF_FILES:
            raise RobotFileError("mjcf files", len(seen), f"at most {MAX_MJCF_FILES} XML files")
        if total_bytes > MAX_MJCF_BYTES:
            raise RobotFileError(
                "mjcf size",
                f"{total_bytes} bytes ({file.name} and the XML before it)",
                f"at most {MAX_MJCF_BYTES} bytes of XML in all",
            )
        try:
            with file.open("rb") as f:
                data = _COMMENT.sub(b"", f.read(MAX_MJCF_BYTES + 1))
        except OSError as err:
            raise RobotFileError("mjcf", str(file), f"a readable file ({err.strerror})") from None
        total_elements += len(_ELEMENT.findall(data))
        if total_elements > MAX_MJCF_ELEMENTS:
            raise RobotFileError(
                "mjcf elements",
                f"more than {MAX_MJCF_ELEMENTS} (counted to {file.name})",
                f"at most {MAX_MJCF_ELEMENTS} XML elements in all",
            )
        _finite_attributes(file, data)
        for m in _INCLUDE.finditer(data):
            name = m.group(1)[1:-1].decode("utf-8", "replace")
            for folder in (file.parent, Path(path).parent):
                if (folder / name).exists():
                    todo.append(folder / name)
                    break


def _finite_attributes(file: Path, data: bytes) -> None:
    """RobotFileError at the first attribute whose value is all numbers, one NaN or
    infinite (MuJoCo takes ``mass="nan"`` and ``range="nan 1"`` with a warning)."""
    for m in _ATTRIBUTE.finditer(data):
        if m.group(1) in _NAME_ATTRIBUTES:
            continue
        tokens = m.group(2)[1:-1].split()
        try:
            values = [float(t) for t in tokens]
        except ValueError:
            continue
        if not all(math.isfinite(v) for v in values):
            line = data.count(b"\n", 0, m.start()) + 1
            raise RobotFileError(
                "mjcf",
                f"{file.name} line {line}: {m.group(0).decode('utf-8', 'replace')}",
                "finite numbers (NaN and infinity refused)",
            )


def robot_choices() -> list[str]:
    return sorted(SHIPPED)


def resolve_robot(name_or_path: str | Path | RobotDescription) -> RobotDescription:
    """A shipped robot by name (``rob``, ``openarm``) or a robot file by path."""
    if isinstance(name_or_path, RobotDescription):
        return name_or_path
    text = str(name_or_path)
    if text in SHIPPED:
        return _shipped(text)
    path = Path(text)
    if path.suffix == ".toml" and path.is_file():
        return load_robot_file(path)
    raise RobotFileError(
        "robot", text, f"one of {robot_choices()} or the path of an existing robot .toml file"
    )


_CACHE: dict[str, RobotDescription] = {}


def _shipped(name: str) -> RobotDescription:
    if name not in _CACHE:
        _CACHE[name] = load_robot_file(SHIPPED[name])
    return _CACHE[name]


def robot_family(robot: str | Path | RobotDescription) -> str:
    """The drive family (``amber``, ``damiao``, ``ideal``) of a robot name or file."""
    return resolve_robot(robot).family


def json_schema_text() -> str:
    schema = RobotFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "rob-twin robot description (robot.toml)"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    SCHEMA_PATH.write_text(json_schema_text(), encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}")

"""The teleop wire protocol: versioned JSON text frames over one websocket.

Client -> server (every frame carries ``v`` and ``type``):

- ``{"v": 1, "type": "hello", "session": ID, "role": "operator" | "watcher"}``
- ``{"v": 1, "type": "input", "session": ID, "seq": N, "t_ms": T, "hands": {HAND: SAMPLE}}``
  with HAND ``"right"``/``"left"`` and SAMPLE ``{"tracked": bool, "position": [x, y, z],
  "orientation": [qx, qy, qz, qw], "grip": 0..1, "trigger": 0..1}``; the pose is the
  controller's grip pose in the WebXR ``local-floor`` frame (+x right, +y up, -z forward)
  [m]; the desktop page sends the same frame with a virtual controller.
- ``{"v": 1, "type": "reset", "session": ID, "arm": HAND}``: reset a stopped or faulted
  owner (fresh generation; operator only).
- ``{"v": 1, "type": "view", "session": ID, "camera": NAME | null}``: which camera's video
  this client gets (a name from ``welcome.cameras``; null: none); any role may ask.

Server -> client: ``welcome``, ``status`` (per-hand state, last rejection, counters),
``telemetry``, ``view`` (the camera now streamed), ``camera`` (one JPEG frame, base64,
with its render stamps), ``role`` (this client's role changed, e.g. a lapsed operator
lease made it a watcher: ``{"role": "watcher", "reason": ...}``; the page's role badge
shows only ``welcome`` and ``role``) and ``error`` (see ``server.py``).

Every frame is read by the shared bounded JSON reader (``rob_twin.models.bounded_json``:
UTF-8, at most ``MAX_FRAME_BYTES``, ``MAX_DEPTH`` nested arrays/objects, integers of at
most ``MAX_INT_DIGITS`` digits, finite numbers only) before any field is looked at, so a
hostile frame is one ``TeleopMessageError`` naming the field and the limit.

Sequence numbers strictly increase within a session; a frame whose ``seq`` is not above
the last accepted one is stale (dropped and counted by the controller).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
from rob_twin.models.bounded_json import JsonInputError, JsonLimits, read_bounded_json
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import Arm

PROTOCOL_VERSION = 1
MAX_FRAME_BYTES = 4096  # an input frame for two hands is about 400 bytes
ROLES = ("operator", "watcher")
TYPES = ("hello", "input", "reset", "view")
MAX_CAMERA_CHARS = 64
MAX_SESSION_CHARS = 64
QUATERNION_NORM_TOLERANCE = 1e-2  # |q| must be 1 within this [-]
MAX_DEPTH = 4  # frame -> hands -> hand -> position/orientation
MAX_INT_DIGITS = 20  # seq < 2**53 has 16
FRAME_LIMITS = JsonLimits(
    max_bytes=MAX_FRAME_BYTES, max_depth=MAX_DEPTH, max_int_digits=MAX_INT_DIGITS
)


class TeleopMessageError(RobTwinError, ValueError):
    """A frame the protocol refuses; the message names the field, the value and the valid range."""

    def __init__(self, field: str, value: object, valid: str):
        self.field, self.value, self.valid = field, value, valid
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        super().__init__(f"teleop frame field {field!r} = {shown}; valid: {valid}")


@dataclass(frozen=True)
class HandSample:
    """One controller at one instant: grip pose in the XR frame (position [m], unit
    quaternion x, y, z, w), whether it is tracked, grip and trigger values [0..1]."""

    tracked: bool
    position_m: np.ndarray
    orientation_xyzw: np.ndarray
    grip: float
    trigger: float


@dataclass(frozen=True)
class Hello:
    session: str
    role: str


@dataclass(frozen=True)
class InputFrame:
    """One input frame: ``seq`` orders it within ``session``; ``t_ms`` is the client's clock."""

    session: str
    seq: int
    t_ms: float
    hands: dict[Arm, HandSample]


@dataclass(frozen=True)
class ResetRequest:
    session: str
    arm: Arm


@dataclass(frozen=True)
class ViewRequest:
    """``camera``: a camera name (checked against the model by the server), None: no video."""

    session: str
    camera: str | None


Message = Hello | InputFrame | ResetRequest | ViewRequest


def _number(obj: dict, key: str, where: str, lo: float = -math.inf, hi: float = math.inf) -> float:
    val = obj.get(key)
    if isinstance(val, bool) or not isinstance(val, (int, float)) or not math.isfinite(val):
        raise TeleopMessageError(f"{where}{key}", val, "a finite number")
    if not lo <= val <= hi:
        raise TeleopMessageError(f"{where}{key}", val, f"[{lo}, {hi}]")
    return float(val)


def _vector(obj: dict, key: str, where: str, n: int) -> np.ndarray:
    val = obj.get(key)
    if not isinstance(val, list) or len(val) != n:
        raise TeleopMessageError(f"{where}{key}", val, f"a list of {n} finite numbers")
    out = np.empty(n)
    for i, x in enumerate(val):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            raise TeleopMessageError(f"{where}{key}[{i}]", x, "a finite number")
        out[i] = x
    return out


def _hand(obj: object, name: str) -> HandSample:
    where = f"hands.{name}."
    if not isinstance(obj, dict):
        raise TeleopMessageError(
            f"hands.{name}", obj, "an object with tracked, position, orientation, grip, trigger"
        )
    tracked = obj.get("tracked")
    if not isinstance(tracked, bool):
        raise TeleopMessageError(f"{where}tracked", tracked, "true or false")
    pos = _vector(obj, "position", where, 3)
    if np.max(np.abs(pos)) > 100.0:
        raise TeleopMessageError(f"{where}position", pos.tolist(), "coordinates within +-100 m")
    quat = _vector(obj, "orientation", where, 4)
    norm = float(np.linalg.norm(quat))
    if abs(norm - 1.0) > QUATERNION_NORM_TOLERANCE:
        raise TeleopMessageError(
            f"{where}orientation",
            quat.tolist(),
            f"a unit quaternion [x, y, z, w] (|q| = 1 +- {QUATERNION_NORM_TOLERANCE})",
        )
    return HandSample(
        tracked,
        pos,
        quat / norm,
        _number(obj, "grip", where, 0.0, 1.0),
        _number(obj, "trigger", where, 0.0, 1.0),
    )


def _session(obj: dict) -> str:
    s = obj.get("session")
    if not isinstance(s, str) or not 1 <= len(s) <= MAX_SESSION_CHARS or not s.isprintable():
        raise TeleopMessageError(
            "session", s, f"a printable string of 1..{MAX_SESSION_CHARS} characters"
        )
    return s


def parse_message(text: str | bytes) -> Message:
    """Decode and validate one client frame; raise TeleopMessageError otherwise."""
    if isinstance(text, bytes):
        raise TeleopMessageError("frame", f"{len(text)} binary bytes", "a JSON text frame")
    if len(text) > MAX_FRAME_BYTES:
        raise TeleopMessageError("frame size", len(text), f"<= {MAX_FRAME_BYTES} bytes")
    try:
        obj = read_bounded_json(text, what="teleop frame", limits=FRAME_LIMITS)
    except JsonInputError as err:
        raise TeleopMessageError(err.field, err.value, err.valid) from None
    if not isinstance(obj, dict):
        raise TeleopMessageError("frame", obj, "a JSON object")
    if obj.get("v") != PROTOCOL_VERSION:
        raise TeleopMessageError("v", obj.get("v"), f"protocol version {PROTOCOL_VERSION}")
    kind = obj.get("type")
    if kind not in TYPES:
        raise TeleopMessageError("type", kind, ", ".join(TYPES))
    session = _session(obj)
    if kind == "hello":
        role = obj.get("role")
        if role not in ROLES:
            raise TeleopMessageError("role", role, ", ".join(ROLES))
        return Hello(session, role)
    if kind == "reset":
        try:
            return ResetRequest(session, Arm.parse(obj.get("arm")))
        except KeyError:
            raise TeleopMessageError(
                "arm", obj.get("arm"), ", ".join(a.value for a in Arm)
            ) from None
    if kind == "view":
        cam = obj.get("camera")
        if cam is not None and (
            not isinstance(cam, str)
            or not 1 <= len(cam) <= MAX_CAMERA_CHARS
            or not cam.isprintable()
        ):
            raise TeleopMessageError(
                "camera", cam, f"null or a printable name of 1..{MAX_CAMERA_CHARS} characters"
            )
        return ViewRequest(session, cam)
    seq = obj.get("seq")
    if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq < 2**53:
        raise TeleopMessageError("seq", seq, "an integer in [0, 2**53)")
    hands_obj = obj.get("hands")
    if not isinstance(hands_obj, dict):
        raise TeleopMessageError("hands", hands_obj, 'an object keyed by "right"/"left"')
    hands: dict[Arm, HandSample] = {}
    for name, sample in hands_obj.items():
        if name not in ("right", "left"):
            raise TeleopMessageError("hands key", name, "right, left")
        hands[Arm(name)] = _hand(sample, name)
    return InputFrame(session, seq, _number(obj, "t_ms", ""), hands)


def encode(kind: str, **fields: object) -> str:
    """A server -> client frame as JSON text (``v`` and ``type`` first)."""
    return json.dumps(
        {"v": PROTOCOL_VERSION, "type": kind, **fields}, separators=(",", ":"), allow_nan=False
    )

"""Scriptable fault injection for the simulated CAN buses and drives.

A ``FaultSpec`` names one fault, the arm it hits, when it starts and how long it lasts
(simulated seconds). Scenarios list them as JSON objects::

    {"kind": "partial_batch", "arm": "right", "at": 2.0, "duration": 0.5, "accept_frames": 3}

Wire faults act on the host's side of the bus (``twin.wire.FaultInjectingBus``):

- ``drop``: each host frame is lost with ``probability`` (seeded RNG);
- ``delay``: host frames reach the drives ``delay_s`` + U(0, ``jitter_s``) later (order kept);
- ``bus_off``: every write fails (``CanOperationError``);
- ``partial_batch``: the bus accepts only the first ``accept_frames`` frames of a sample;
- ``uncertain_write``: the write of frame ``at_frame`` (0-based) times out: it may be out;
- ``second_writer``: another node writes position commands on our command ids.

Drive faults act inside the simulated drives (``twin.drive``):

- ``feedback_freeze``: the listed joints (default all) stop sending feedback (stale);
- ``stall``: the listed joints are mechanically jammed (huge friction in the model);
- ``encoder_offset``: the listed joints report ``offset_rad`` more than they are at;
- ``wrong_sign``: the listed joints are installed with the opposite sign to the host's codec;
- ``power_loss``: the arm goes limp (servo gains zero) and stops answering.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

from controllers.errors import RobTwinError
from controllers.names import JOINTS_PER_ARM, Arm, UnknownNameError


class FaultKind(enum.Enum):
    DROP = "drop"
    DELAY = "delay"
    BUS_OFF = "bus_off"
    PARTIAL_BATCH = "partial_batch"
    UNCERTAIN_WRITE = "uncertain_write"
    SECOND_WRITER = "second_writer"
    FEEDBACK_FREEZE = "feedback_freeze"
    STALL = "stall"
    ENCODER_OFFSET = "encoder_offset"
    WRONG_SIGN = "wrong_sign"
    POWER_LOSS = "power_loss"


WIRE_FAULTS = frozenset({
    FaultKind.DROP, FaultKind.DELAY, FaultKind.BUS_OFF, FaultKind.PARTIAL_BATCH,
    FaultKind.UNCERTAIN_WRITE, FaultKind.SECOND_WRITER,
})


class FaultSpecError(RobTwinError, ValueError):
    """A malformed fault description; the message names the field and what is valid."""


_PARAMS = {
    FaultKind.DROP: {"probability": 1.0},
    FaultKind.DELAY: {"delay_s": 0.01, "jitter_s": 0.0},
    FaultKind.PARTIAL_BATCH: {"accept_frames": 3},
    FaultKind.UNCERTAIN_WRITE: {"at_frame": 3},
    FaultKind.SECOND_WRITER: {"rate_hz": 50.0, "position_rad": 0.0},
    FaultKind.ENCODER_OFFSET: {"offset_rad": 0.1},
}


@dataclass(frozen=True)
class FaultSpec:
    """One fault on one arm, active for ``at`` <= t < ``at + duration`` [s, simulated].

    joints: 1-based joints for per-joint drive faults (empty: all seven);
    params: kind-specific numbers (see the module docstring), defaults filled in.
    """

    kind: FaultKind
    arm: Arm
    at: float = 0.0
    duration: float = math.inf
    joints: tuple[int, ...] = ()
    params: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", _parse_kind(self.kind))
        object.__setattr__(self, "arm", Arm.parse(self.arm))
        if not (math.isfinite(self.at) and self.at >= 0):
            raise FaultSpecError(f"fault 'at' must be a finite time >= 0 s, got {self.at!r}")
        if not self.duration > 0:
            raise FaultSpecError(f"fault 'duration' must be > 0 s, got {self.duration!r}")
        for j in self.joints:
            if not (isinstance(j, int) and 1 <= j <= JOINTS_PER_ARM):
                raise FaultSpecError(f"fault joint {j!r} is not a joint number 1..{JOINTS_PER_ARM}")
        defaults = dict(_PARAMS.get(self.kind, {}))
        unknown = set(self.params) - set(defaults)
        if unknown:
            raise FaultSpecError(
                f"fault {self.kind.value!r} has no parameter(s) {sorted(unknown)}; "
                f"valid: {sorted(defaults) or 'none'}"
            )
        defaults.update({k: float(v) for k, v in self.params.items()})
        for k, v in defaults.items():
            if not math.isfinite(v):
                raise FaultSpecError(f"fault parameter {k!r} must be finite, got {v!r}")
        if self.kind is FaultKind.DROP and not 0.0 <= defaults["probability"] <= 1.0:
            raise FaultSpecError(f"drop probability must be in [0, 1], got {defaults['probability']!r}")
        object.__setattr__(self, "params", defaults)

    @property
    def end(self) -> float:
        return self.at + self.duration

    def active(self, t: float) -> bool:
        return self.at <= t < self.end

    def hits_joint(self, j: int) -> bool:
        return not self.joints or j in self.joints

    @classmethod
    def from_dict(cls, raw: dict) -> FaultSpec:
        known = {"kind", "arm", "at", "duration", "joints"}
        if "kind" not in raw:
            raise FaultSpecError(f"fault {raw!r} needs a 'kind'; valid: {', '.join(_kind_names())}")
        try:
            return cls(
                kind=raw["kind"], arm=raw.get("arm", "right"), at=float(raw.get("at", 0.0)),
                duration=float(raw.get("duration", math.inf)),
                joints=tuple(int(j) for j in raw.get("joints", ())),
                params={k: v for k, v in raw.items() if k not in known},
            )
        except (TypeError, ValueError) as err:
            raise FaultSpecError(f"fault {raw!r}: {err}") from None
        except UnknownNameError as err:
            raise FaultSpecError(str(err)) from None


def _kind_names() -> list[str]:
    return [k.value for k in FaultKind]


def _parse_kind(value: FaultKind | str) -> FaultKind:
    if isinstance(value, FaultKind):
        return value
    try:
        return FaultKind(str(value))
    except ValueError:
        raise FaultSpecError(f"unknown fault kind {value!r}; valid: {', '.join(_kind_names())}") from None


class FaultSchedule:
    """The faults of one run; ``active(kind, arm, t)`` lists those in force at ``t``."""

    def __init__(self, specs: list[FaultSpec] | tuple[FaultSpec, ...] = ()):
        self.specs: list[FaultSpec] = list(specs)

    def add(self, spec: FaultSpec) -> FaultSpec:
        self.specs.append(spec)
        return spec

    def clear(self, kind: FaultKind | None = None, arm: Arm | None = None) -> None:
        """Remove faults (all, or those of ``kind`` and/or ``arm``)."""
        self.specs = [s for s in self.specs
                      if not ((kind is None or s.kind is kind) and (arm is None or s.arm is arm))]

    def active(self, kind: FaultKind, arm: Arm, t: float) -> list[FaultSpec]:
        return [s for s in self.specs if s.kind is kind and s.arm is arm and s.active(t)]

    def first(self, kind: FaultKind, arm: Arm, t: float) -> FaultSpec | None:
        for s in self.specs:
            if s.kind is kind and s.arm is arm and s.active(t):
                return s
        return None

    def __bool__(self) -> bool:
        return bool(self.specs)

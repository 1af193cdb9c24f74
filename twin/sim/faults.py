"""Scriptable fault injection for the simulated CAN buses and drives.

A ``FaultSpec`` names one fault, the arm it hits, when it starts and how long it lasts
(simulated seconds). Scenarios list them as JSON objects::

    {"kind": "partial_batch", "arm": "right", "at": 2.0, "duration": 0.5, "accept_frames": 3}

Wire faults act on the host's side of the bus (``rob_twin.twin.bus.wire.FaultInjectingBus``):

- ``drop``: each host frame is lost with ``probability`` (seeded RNG);
- ``delay``: host frames reach the drives ``delay_s`` + U(0, ``jitter_s``) later (order kept);
- ``bus_off``: every write fails (``CanOperationError``);
- ``partial_batch``: the bus accepts only the first ``accept_frames`` frames of a sample;
- ``uncertain_write``: the write of frame ``at_frame`` (0-based) times out: it may be out;
- ``second_writer``: another node writes position commands on our command ids.

Drive faults act inside the simulated drives (``rob_twin.twin.drives.amber_drive``):

- ``feedback_freeze``: the listed joints (default all) stop sending feedback (stale);
- ``stall``: the listed joints are mechanically jammed (huge friction in the model);
- ``encoder_offset``: the listed joints report ``offset_rad`` more than they are at;
- ``wrong_sign``: the listed joints are installed with the opposite sign to the host's codec;
- ``power_loss``: the arm goes limp (servo gains zero) and stops answering.
"""

from __future__ import annotations

import bisect
import enum
import heapq
import math
from dataclasses import dataclass, field

from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import JOINTS_PER_ARM, Arm


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


WIRE_FAULTS = frozenset(
    {
        FaultKind.DROP,
        FaultKind.DELAY,
        FaultKind.BUS_OFF,
        FaultKind.PARTIAL_BATCH,
        FaultKind.UNCERTAIN_WRITE,
        FaultKind.SECOND_WRITER,
    }
)


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

    joints: 1-based joints for per-joint drive faults (empty: all of the arm's; any of
    1..7 here, the arm's own count checked where the robot is known: ``check_fault_joints``);
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
            raise FaultSpecError(
                f"drop probability must be in [0, 1], got {defaults['probability']!r}"
            )
        object.__setattr__(self, "params", defaults)

    @property
    def end(self) -> float:
        return self.at + self.duration

    def active(self, t: float) -> bool:
        return self.at <= t < self.end

    def hits_joint(self, j: int) -> bool:
        return not self.joints or j in self.joints

    @classmethod
    def from_model(cls, model) -> FaultSpec:
        """The fault of a validated ``rob_twin.twin.scenario.schema`` fault model."""
        return cls(
            kind=model.kind,
            arm=model.arm,
            at=model.at,
            duration=math.inf if model.duration is None else model.duration,
            joints=tuple(getattr(model, "joints", ())),
            params=model.params(),
        )


# frame-numbered parameters: a frame of a sample, 0-based (one frame per joint)
_FRAME_PARAMS = {FaultKind.PARTIAL_BATCH: "accept_frames", FaultKind.UNCERTAIN_WRITE: "at_frame"}


def check_fault_joints(faults, joints_per_arm: dict[Arm, int]) -> None:
    """FaultSpecError unless every fault fits the arm it hits, of ``joints_per_arm[arm]``
    joints: its ``joints`` within 1..n, and a frame number (``accept_frames`` of
    ``partial_batch``, ``at_frame`` of ``uncertain_write``) within 0..n-1, as a sample of n
    joints has n frames (called where the robot is known: ``twin.sim.loops.loop_config``)."""
    for f in faults:
        n = joints_per_arm[f.arm]
        for j in f.joints:
            if not 1 <= j <= n:
                raise FaultSpecError(
                    f"fault {f.kind.value!r} on the {f.arm.value} arm: joint {j!r} is not a "
                    f"joint number of that arm; valid: 1..{n}"
                )
        name = _FRAME_PARAMS.get(f.kind)
        if name is not None and not 0 <= f.params[name] <= n - 1:
            raise FaultSpecError(
                f"fault {f.kind.value!r} on the {f.arm.value} arm: {name} "
                f"{f.params[name]:g} is not a frame of its {n}-frame samples; valid: 0..{n - 1}"
            )


def _kind_names() -> list[str]:
    return [k.value for k in FaultKind]


def _parse_kind(value: FaultKind | str) -> FaultKind:
    if isinstance(value, FaultKind):
        return value
    try:
        return FaultKind(str(value))
    except ValueError:
        raise FaultSpecError(
            f"unknown fault kind {value!r}; valid: {', '.join(_kind_names())}"
        ) from None


class FaultSchedule:
    """The faults of one run; ``active(kind, arm, t)`` lists those in force at ``t``.

    Queries are indexed by (kind, arm) and swept forward in time: a run asks at every
    physics step with a growing ``t``, so each query costs about the number of faults in
    force plus those that started since the last query, not the length of the list (a
    query earlier than the previous one rebuilds that group's sweep)."""

    def __init__(self, specs: list[FaultSpec] | tuple[FaultSpec, ...] = ()):
        self._specs: list[FaultSpec] = list(specs)
        self._groups: dict[tuple[FaultKind, Arm], _Sweep] | None = None

    @property
    def specs(self) -> tuple[FaultSpec, ...]:
        return tuple(self._specs)

    def add(self, spec: FaultSpec) -> FaultSpec:
        self._specs.append(spec)
        self._groups = None
        return spec

    def clear(self, kind: FaultKind | None = None, arm: Arm | None = None) -> None:
        """Remove faults (all, or those of ``kind`` and/or ``arm``)."""
        self._specs = [
            s
            for s in self._specs
            if not ((kind is None or s.kind is kind) and (arm is None or s.arm is arm))
        ]
        self._groups = None

    def _sweep(self, kind: FaultKind, arm: Arm) -> _Sweep | None:
        if self._groups is None:
            grouped: dict[tuple[FaultKind, Arm], list[tuple[int, FaultSpec]]] = {}
            for order, s in enumerate(self._specs):
                grouped.setdefault((s.kind, s.arm), []).append((order, s))
            self._groups = {key: _Sweep(items) for key, items in grouped.items()}
        return self._groups.get((kind, arm))

    def active(self, kind: FaultKind, arm: Arm, t: float) -> tuple[FaultSpec, ...]:
        """Faults of ``kind`` on ``arm`` in force at ``t`` [s], in the order they were listed."""
        sweep = self._sweep(kind, arm)
        return sweep.at(t) if sweep is not None else ()

    def first(self, kind: FaultKind, arm: Arm, t: float) -> FaultSpec | None:
        active = self.active(kind, arm, t)
        return active[0] if active else None

    def __bool__(self) -> bool:
        return bool(self._specs)


class _Sweep:
    """Faults of one (kind, arm), sorted by start; ``at(t)`` for non-decreasing ``t`` moves
    a cursor over the starts, keeps the faults in force ordered as listed and expires them
    from a heap keyed by their end."""

    def __init__(self, items: list[tuple[int, FaultSpec]]):
        self._by_start = sorted(items, key=lambda item: (item[1].at, item[0]))
        self._reset()

    def _reset(self) -> None:
        self._next = 0
        self._ends: list[tuple[float, int]] = []  # (end, order) of the faults in force
        self._live_orders: list[int] = []  # their listing order, sorted
        self._live: dict[int, FaultSpec] = {}
        self._t = -math.inf
        self._cached: tuple[FaultSpec, ...] = ()

    def at(self, t: float) -> tuple[FaultSpec, ...]:
        if t < self._t:
            self._reset()
        elif t == self._t:
            return self._cached
        self._t = t
        starts, changed = self._by_start, False
        while self._next < len(starts) and starts[self._next][1].at <= t:
            order, spec = starts[self._next]
            self._next += 1
            if spec.end > t:
                heapq.heappush(self._ends, (spec.end, order))
                bisect.insort(self._live_orders, order)
                self._live[order] = spec
                changed = True
        while self._ends and self._ends[0][0] <= t:
            _, order = heapq.heappop(self._ends)
            del self._live_orders[bisect.bisect_left(self._live_orders, order)]
            del self._live[order]
            changed = True
        if changed:
            self._cached = tuple(self._live[o] for o in self._live_orders)
        return self._cached

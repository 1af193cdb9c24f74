"""The teleop controller: input frames in, checked joint targets out to the arm owners.

It is synchronous and belongs to one thread (the server's event loop): it owns the
clutches, the safety filters (kinematics, IK) and the operator lease. The owners it
drives are thread-safe (``submit``, ``commanded_state``, ``release``, ``reset``).

Rules it enforces:

- one operator (``OperatorLease``); frames from anyone else are refused and counted;
- frames of the operator's session must have strictly increasing ``seq``; a stale or
  out-of-order frame is dropped and counted;
- per hand: grip engages (``HandClutch``), every target goes through the
  ``ArmSafetyFilter`` and only then to the owner, under an owner lease granted at
  engagement, in the owner's generation of that moment;
- input staleness (no frame for ``input_timeout_s``), operator socket loss, lease lapse,
  tracking loss or a pose jump: the hand disengages and its owner brakes to hold with a
  fresh generation (``ArmOwner.release``); a fresh grip press is needed to go on;
- a stopped or faulted owner is reset only on the operator's explicit request.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from rob_twin.controllers.lease import Lease
from rob_twin.controllers.owner import ArmOwner
from rob_twin.controllers.owner_types import Mode
from rob_twin.controllers.target import ArmTarget
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import Arm
from rob_twin.twin.teleop.clutch import ClutchConfig, ClutchEvent, HandClutch
from rob_twin.twin.teleop.messages import Hello, InputFrame, ResetRequest
from rob_twin.twin.teleop.safety import ArmSafetyFilter
from rob_twin.twin.teleop.session import OperatorLease


class TeleopConfigError(RobTwinError, ValueError):
    """A teleop setting out of its valid range."""


NO_OP_STEP_RAD = 1e-9  # a target this close to a resting commanded state is not sent [rad]


@dataclass(frozen=True)
class TeleopConfig:
    """operator_ttl_s: operator lease TTL [s]; input_timeout_s: input age that brakes an
    engaged arm [s] (MoveIt Servo's 0.1 s); owner_lease_s: the owner lease granted per
    engagement, renewed per target [s]; clutch: grip thresholds and jump guard."""

    operator_ttl_s: float = 0.5
    input_timeout_s: float = 0.1
    owner_lease_s: float = 0.3
    clutch: ClutchConfig = field(default_factory=ClutchConfig)

    def __post_init__(self) -> None:
        for name in ("operator_ttl_s", "input_timeout_s", "owner_lease_s"):
            if not getattr(self, name) > 0:
                raise TeleopConfigError(f"{name} must be > 0 s, got {getattr(self, name)!r}")
        for name in ("owner_lease_s", "operator_ttl_s"):  # the staleness brake speaks first
            if not getattr(self, name) > self.input_timeout_s:
                raise TeleopConfigError(
                    f"{name} must be > input_timeout_s ({self.input_timeout_s!r} s), got "
                    f"{getattr(self, name)!r}: a shorter lease would end an engagement before "
                    "the staleness brake could"
                )


def default_config() -> TeleopConfig:
    return TeleopConfig()


@dataclass
class HandState:
    """One arm's teleop state (the controller's thread only)."""

    arm: Arm
    clutch: HandClutch
    lease: Lease | None = None
    generation: int | None = None
    anchor_q: np.ndarray | None = None
    pending_q: np.ndarray | None = None  # last target accepted by the owner's mailbox
    last_input_s: float = -np.inf
    last_target_s: float = -np.inf
    last_reject: str = ""  # in plain words (what the operator asked, why not, what happens)
    last_reject_detail: str = ""  # the refusing check's own text, for logs and the counters
    last_event: str = "idle"
    settled_target: np.ndarray | None = None  # a TCP target (4x4) fully reached by pending_q
    gripper: float = 0.0  # trigger value while engaged [0..1]
    # the operator's last TCP target while engaged (4x4, base frame [m]; replaced, never
    # written in place, so the video thread may read it), None when disengaged
    target_tcp: np.ndarray | None = None


class TeleopController:
    """Input frames -> clutch -> safety filter -> owner, with the operator lease and counters."""

    def __init__(
        self,
        owners: dict[Arm, ArmOwner],
        filters: dict[Arm, ArmSafetyFilter],
        config: TeleopConfig | None = None,
        now: Callable[[], float] = time.monotonic,
    ):
        self.config = cfg = config or default_config()
        self.owners = owners
        self.filters = filters
        self.now = now
        self.lease = OperatorLease(cfg.operator_ttl_s, now)
        self.hands = {arm: HandState(arm, HandClutch(cfg.clutch)) for arm in Arm}
        self.counts: Counter[str] = Counter()
        self.session: str | None = None  # the operator's session id
        self.last_seq: int | None = None
        self._target_seq = 0
        self.brake_log: list[tuple[Arm, str, float]] = []  # (arm, reason, time on ``now``) [s]
        # (arm, last input stamp, brake stamp) per staleness brake, both on ``now`` [s]
        self.staleness_log: list[tuple[Arm, float, float]] = []
        self.submit_log: list[tuple[float, float]] = []  # (receive time, submit time) [s]
        self.record_latency = False

    # ------------------------------------------------------------------ clients
    def hello(self, client: str, msg: Hello) -> str:
        """Grant the operator role when asked for and free; returns the role given."""
        if msg.role == "operator" and self.lease.claim(client):
            if self.session != msg.session:
                self.session, self.last_seq = msg.session, None
            self.counts["operator_grants"] += 1
            return "operator"
        return "watcher"

    def disconnect(self, client: str) -> None:
        """A socket closed: the operator's loss disengages both hands and brakes."""
        if self.lease.holder() == client:
            self.lease.release(client)
            self.counts["operator_socket_losses"] += 1
            for arm in Arm:
                self._stop_hand(arm, "operator socket lost")

    def is_operator(self, client: str) -> bool:
        return self.lease.holder() == client

    # ------------------------------------------------------------------ input
    def handle_input(self, client: str, frame: InputFrame, received_s: float) -> str:
        """Apply one input frame; returns "" or why it was refused (also counted)."""
        self.counts["frames_received"] += 1
        if not self.lease.renew(client):
            self.counts["not_operator"] += 1
            if self.lease.holder() is None:
                return (
                    "not the operator: the operator lease lapsed (no input for more than "
                    f"{self.config.operator_ttl_s:g} s); send hello to drive again"
                )
            return "not the operator: this client is a watcher"
        if frame.session != self.session:
            self.counts["foreign_session"] += 1
            return f"session {frame.session!r} is not the operator's session {self.session!r}"
        if self.last_seq is not None and frame.seq <= self.last_seq:
            self.counts["stale_dropped"] += 1
            return f"stale frame: seq {frame.seq} <= last {self.last_seq}"
        self.last_seq = frame.seq
        self.counts["frames_applied"] += 1
        for arm, sample in frame.hands.items():
            self._hand_input(arm, sample, received_s)
        return ""

    def _hand_input(self, arm: Arm, sample, received_s: float) -> None:
        h = self.hands[arm]
        owner = self.owners[arm]
        prev_input, h.last_input_s = h.last_input_s, received_s
        step = h.clutch.step(sample, lambda: self.filters[arm].tcp_pose(owner.commanded_state()[0]))
        h.last_event = step.event.value
        if step.event is ClutchEvent.IDLE:
            return
        if step.event in (ClutchEvent.RELEASED, ClutchEvent.DISENGAGED):
            self.counts[
                "disengaged_" + ("grip" if step.event is ClutchEvent.RELEASED else "fault")
            ] += 1
            if "jump" in step.reason:
                self.counts["pose_jumps"] += 1
            elif "tracking" in step.reason:
                self.counts["tracking_losses"] += 1
            self._release_owner(arm, step.reason)
            return
        if step.event is ClutchEvent.ENGAGED:
            if owner.mode in (Mode.STOPPED, Mode.FAULTED):
                why = owner.fault_reason or owner.mode.value
                h.clutch.disengage(f"owner {owner.mode.value}: reset needed ({why})")
                h.last_reject = h.clutch.last_reason
                return
            h.lease = owner.grant_lease(f"teleop:{self.session}", self.config.owner_lease_s)
            h.generation = owner.generation
            h.anchor_q = owner.commanded_state()[0]
            h.pending_q = h.settled_target = None
            h.last_reject = ""
            self.counts["engagements"] += 1
            prev_input = received_s
        h.gripper = sample.trigger
        if step.target is not None:
            h.target_tcp = step.target.homogeneous.copy()
        self._target(h, step.target, step.still, received_s, received_s - prev_input)

    def _target(self, h: HandState, target, still: bool, received_s: float, dt_s: float) -> None:
        arm, owner = h.arm, self.owners[h.arm]
        if owner.mode in (
            Mode.STOPPED,
            Mode.FAULTED,
        ):  # a fault while engaged: reset, then press again
            why = f"owner {owner.mode.value}" + (
                f" ({owner.fault_reason})" if owner.fault_reason else ""
            )
            h.clutch.disengage(f"{why}: reset the owner, then press grip again")
            h.last_reject = h.clutch.last_reason
            h.lease, h.generation, h.anchor_q, h.pending_q = None, None, None, None
            h.settled_target = h.target_tcp = None
            self.counts["owner_fault_disengagements"] += 1
            return
        q_cmd, v_cmd, _ = owner.commanded_state()
        other = self.owners[_other(arm)].commanded_state()[0]
        others = [other]
        oh = self.hands[_other(arm)]
        if oh.pending_q is not None:
            others.append(oh.pending_q)
        if (
            not still
            and h.settled_target is not None
            and h.pending_q is not None
            and np.array_equal(target.homogeneous, h.settled_target)
        ):
            # the controller holds still after a move: its target was already reached in
            # full (no clamp) and checked; only the owner lease is renewed
            self._renew_only(h, owner)
            return
        base = h.anchor_q if still else q_cmd
        self.counts["targets_checked"] += 1
        res = self.filters[arm].filter(target, base, v_cmd, dt_s, others, still=still)
        if not res.accepted:
            self.counts[f"rejected_{res.check}"] += 1
            h.last_reject, h.last_reject_detail = res.reason, res.detail
            return
        if res.tcp_clamped:
            self.counts["tcp_clamped"] += 1
        if res.joint_clamped:
            self.counts["joint_clamped"] += 1
        renewed = owner.authority.renew(h.lease, self.config.owner_lease_s) if h.lease else None
        if renewed is None or owner.generation != h.generation:
            why = (
                "owner generation changed (release, reconnect or fault)"
                if owner.generation != h.generation
                else "owner lease lapsed"
            )
            h.clutch.disengage(f"{why}: release and press grip again")
            h.last_reject = h.clutch.last_reason
            self.counts["owner_authority_lost"] += 1
            return
        h.lease = renewed
        if (
            float(np.max(np.abs(res.q - q_cmd))) <= NO_OP_STEP_RAD
            and float(np.max(np.abs(v_cmd))) <= NO_OP_STEP_RAD
        ):
            # the arm rests on this target already: nothing to send (Ruckig refuses some
            # zero-length plans from float-dust velocities with an exception)
            self.counts["targets_at_rest_skipped"] += 1
            h.last_reject = ""
            return
        self._target_seq += 1
        offer = owner.submit(
            ArmTarget(
                arm=arm,
                positions_rad=res.q,
                sequence=self._target_seq,
                generation=h.generation,
                lease=renewed,
            )
        )
        if self.record_latency:
            self.submit_log.append((received_s, self.now()))
        if offer.accepted:
            self.counts["targets_submitted"] += 1
            h.pending_q = res.q
            h.settled_target = (
                None
                if (still or res.tcp_clamped or res.joint_clamped)
                else target.homogeneous.copy()
            )
            h.last_target_s = received_s
            h.last_reject = ""
        else:
            self.counts["owner_refused"] += 1
            h.last_reject = f"owner refused the target: {offer.reason.value}"

    def _renew_only(self, h: HandState, owner: ArmOwner) -> None:
        renewed = owner.authority.renew(h.lease, self.config.owner_lease_s) if h.lease else None
        if renewed is None or owner.generation != h.generation:
            h.clutch.disengage(
                "owner lease lapsed or generation changed: release and press grip again"
            )
            h.last_reject = h.clutch.last_reason
            self.counts["owner_authority_lost"] += 1
            return
        h.lease = renewed
        self.counts["unchanged_targets_skipped"] += 1

    # ------------------------------------------------------------------ periodic
    def poll(self) -> None:
        """Brake engaged hands whose input went stale; drop a lapsed operator lease."""
        now = self.now()
        for arm, h in self.hands.items():
            if h.clutch.engaged and now - h.last_input_s > self.config.input_timeout_s:
                self.counts["staleness_brakes"] += 1
                self.staleness_log.append((arm, h.last_input_s, now))
                self._stop_hand(
                    arm,
                    f"input stale for {now - h.last_input_s:.3f} s "
                    f"(> {self.config.input_timeout_s} s): braking",
                )
        if self.session is not None and self.lease.holder() is None:
            self.counts["operator_lease_lapses"] += 1
            self.session, self.last_seq = None, None
            for arm in Arm:
                self._stop_hand(arm, "operator lease lapsed")

    def reset(self, client: str, msg: ResetRequest) -> str:
        """Reset a stopped/faulted owner (fresh generation); returns "" or why not."""
        if not self.is_operator(client):
            return "only the operator may reset an owner"
        owner = self.owners[msg.arm]
        if owner.mode not in (Mode.STOPPED, Mode.FAULTED, Mode.HOLD):
            return (
                f"owner {msg.arm.value} is {owner.mode.value}; reset needs stopped, faulted or hold"
            )
        self._stop_hand(msg.arm, "owner reset")
        owner.reset(owner.commanded_state()[0])
        self.counts["owner_resets"] += 1
        return ""

    def _stop_hand(self, arm: Arm, reason: str) -> None:
        h = self.hands[arm]
        if h.clutch.engaged or h.lease is not None:
            h.clutch.disengage(reason + ": release and press grip again")
            self._release_owner(arm, reason)
            h.last_reject = reason

    def _release_owner(self, arm: Arm, reason: str) -> None:
        h = self.hands[arm]
        owner = self.owners[arm]
        if owner.mode is not Mode.FAULTED:
            owner.release()  # brake to hold; fresh generation
        self.brake_log.append((arm, reason, self.now()))
        h.lease, h.generation, h.anchor_q, h.pending_q = None, None, None, None
        h.settled_target = h.target_tcp = None

    # ------------------------------------------------------------------ status
    def status(self) -> dict:
        """What the operator page and the telemetry show about teleop (JSON-ready)."""
        return {
            "operator": self.lease.holder() is not None,
            "hands": {
                arm.value: {
                    "engaged": h.clutch.engaged,
                    "event": h.last_event,
                    "needs_fresh_press": h.clutch.needs_fresh_press,
                    "reason": h.clutch.last_reason,
                    "last_reject": h.last_reject,
                    "last_reject_detail": h.last_reject_detail if h.last_reject else "",
                    "owner_mode": self.owners[arm].mode.value,
                    "generation": self.owners[arm].generation,
                    "gripper": h.gripper,
                    "target_tcp_m": None
                    if h.target_tcp is None or not h.clutch.engaged
                    else [round(float(x), 4) for x in h.target_tcp[:3, 3]],
                }
                for arm, h in self.hands.items()
            },
            "counts": dict(self.counts),
        }


def _other(arm: Arm) -> Arm:
    return Arm.LEFT if arm is Arm.RIGHT else Arm.RIGHT

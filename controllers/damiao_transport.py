"""The CAN transport of one arm on Damiao MIT-mode drives (OpenArm's motors).

The sibling of ``rob_twin.controllers.transport.CanTransport`` for torque-capable drives. It is
a ``StatePublisher``: the owner hands it the coherent Ruckig sample (p, v, a) and it
sends, per joint, one MIT frame with

* q = p [rad] and dq = v [rad/s] of that sample (never measured values);
* kp, kd from the per-joint gain table of the configuration;
* tau_ff = the gravity model at the commanded position (plus a declared payload),
  computed on every publish (500 Hz on OpenArm). The model is a plain callable
  (``GravityModel``: n joint angles [rad] -> n torques [Nm]) that a higher layer
  provides (the twin wraps Pinocchio's RNEA); this module imports neither mujoco
  nor pinocchio. Without a model the feed-forward is zero.

A feed-forward torque that is not finite or exceeds the motor's physical peak torque
(DM8009 40, DM4340 27, DM4310 7 Nm) refuses the whole sample with
``fault_kind="torque_limit"``: the owner latches, nothing is clipped or sent. Other
out-of-range values (q past PMAX, |v| past VMAX) are codec errors: REFUSED, no frame.

Sending, polling and the second-writer accounting are ``rob_twin.controllers.transport_core``'s,
as for ``CanTransport`` (all of a sample's frames, one per joint, or a typed outcome:
REFUSED, PARTIAL, UNCERTAIN; never a retry; a late batch is UNCERTAIN).

Joint count: one drive per entry of the configuration's ``motors`` (``joints``: OpenArm's
seven by default; any count 1..``MAX_JOINTS``). The ids, gains and scalings have one entry
per motor; left empty, the ids are OpenArm's addressing (ESC 0x01.., MST = ESC + 0x10) and
the gains OpenArm's ROS 2 table (seven joints: per joint; other counts: per motor model,
``motor_gains``).

Replies: every frame sent is answered on the motor's MST id (request-reply). State
frames are decoded with the *host's* scaling into ``latest_feedback`` (joint ->
``DamiaoFeedback``, with ``position_rad`` and ``status`` like the Amber feedback, so
``ArmDriver`` supervises them unchanged); register replies (the host knows which it
asked for) land in ``registers``. A frame on one of our ESC ids was written by
someone else: it is counted and kept (a second writer).

Until the enable sequence has passed (and again after a disable or clear-error sent
through this transport) every sample is REFUSED with ``fault_kind="drive_error"``: the
owner latches rather than stream to drives that are not enabled.

``bring_up(settle)``: the enable sequence, before the owner streams: write the CAN
timeout, read PMAX/VMAX/TMAX, the ids, the control mode and the timeout back, compare
them with the host's table, and only if all agree enable each drive and check that it
answers ENABLED. ``settle()`` lets the bus move (the twin services its drives; on a
robot host it waits about 2 ms, as openarm_can does for its parameter replies). With
``hold_rad`` each drive's ENABLE frame is followed at once by one MIT hold frame (q =
``hold_rad``, dq = 0, the gain table, tau_ff = the gravity model at ``hold_rad``): an
enabled drive without a command outputs zero torque, so without it an arm whose pose is
not gravity-free would drop between its enable and the owner's first sample.
"""

from __future__ import annotations

import math
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import can
import numpy as np
from rob_twin.controllers.damiao_codec import (
    CTRL_MODE_MIT,
    TIMEOUT_UNIT_S,
    MitCommand,
    Register,
    Scaling,
    SpecialCommand,
    Status,
    decode_register_frame,
    decode_state,
    encode_mit,
    encode_register_read,
    encode_register_write,
    looks_like_register_reply,
    special_frame,
)
from rob_twin.controllers.damiao_errors import (
    DamiaoCodecError,
    DamiaoTransportError,
    UnknownMotorIdError,
)
from rob_twin.controllers.publish import PublishOutcome, PublishReport
from rob_twin.controllers.transport_core import TransportCore, TransportCounters
from rob_twin.models.damiao_motors import (
    KD_MAX,
    KP_MAX,
    MIT_REPLY_OFFSET,
    OPENARM_ARM_MOTORS,
    OPENARM_KD,
    OPENARM_KP,
    REGISTER_ID,
    MotorLimits,
)
from rob_twin.models.names import BUS_MAPPING, Arm

GravityModel = Callable[[np.ndarray], np.ndarray]  # q [rad] (n,) -> tau [Nm] (n,)
Clock = Callable[[], float]
# ESC ids 0x01..0x0F: a state frame names its motor by the ESC id's low nibble, and the
# reply ids (ESC + 0x10) stay clear of the command ids
MAX_JOINTS = 15


def esc_ids(joints: int) -> tuple[int, ...]:
    """OpenArm's command (ESC) ids of an arm of ``joints`` drives: 0x01, 0x02, ..."""
    return tuple(range(1, joints + 1))


def mst_ids(joints: int) -> tuple[int, ...]:
    """OpenArm's reply (MST) ids of an arm of ``joints`` drives: ESC id + 0x10."""
    return tuple(e + MIT_REPLY_OFFSET for e in esc_ids(joints))


def motor_gains(motors: tuple[MotorLimits, ...]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(kp [Nm/rad], kd [Nm s/rad]) per joint of an arm with ``motors``: OpenArm's ROS 2
    table per joint for a seven-joint arm (what every seven-joint Damiao arm of the twin has
    run); for any other joint count each joint takes the gains of the first OpenArm joint
    with its motor model (DM8009 70 / 2.75, DM4340 70 / 2.0, DM4310 10 / 0.7)."""
    if len(motors) == len(OPENARM_KP):
        return OPENARM_KP, OPENARM_KD
    first: dict[str, tuple[float, float]] = {}
    for m, kp, kd in zip(OPENARM_ARM_MOTORS, OPENARM_KP, OPENARM_KD, strict=True):
        first.setdefault(m.model, (kp, kd))
    missing = sorted({m.model for m in motors} - set(first))
    if missing:
        raise DamiaoTransportError(
            f"no default gains for motor(s) {missing}; valid: one of {sorted(first)}, "
            "or give kp and kd per joint"
        )
    return tuple(first[m.model][0] for m in motors), tuple(first[m.model][1] for m in motors)


SCALING_REGISTERS = (Register.PMAX, Register.VMAX, Register.TMAX)
BRING_UP_BATCH = 3  # drives asked at once during bring-up (replies fit 3 tx mailboxes)
BRING_UP_REGISTERS = (
    *SCALING_REGISTERS,
    Register.ESC_ID,
    Register.MST_ID,
    Register.CTRL_MODE,
    Register.TIMEOUT,
)


@dataclass(frozen=True)
class DamiaoTransportConfig:
    """One arm's Damiao bus. motors: the host's motor table, one per joint (its length is
    the arm's joint count, ``joints``; its PMAX/VMAX/TMAX are the host's scaling;
    ``scalings`` overrides them, e.g. a stale table); kp [Nm/rad] and kd [Nm s/rad] per
    joint (empty: ``motor_gains``); esc_ids / mst_ids per joint (empty: OpenArm's
    addressing, ``esc_ids`` / ``mst_ids``); timeout_s: CAN watchdog written at bring-up [s]
    (None: leave the register alone); times in seconds."""

    arm: Arm = Arm.RIGHT
    interface: str = "virtual"
    channel: str | None = None
    motors: tuple[MotorLimits, ...] = OPENARM_ARM_MOTORS
    scalings: tuple[Scaling, ...] | None = None
    kp: tuple[float, ...] = ()
    kd: tuple[float, ...] = ()
    esc_ids: tuple[int, ...] = ()
    mst_ids: tuple[int, ...] = ()
    timeout_s: float | None = 0.1
    publish_deadline_s: float = 0.002
    send_timeout_s: float | None = 0.001
    late_is_uncertain: bool = True
    require_enable: bool = True  # refuse (and latch) samples until bring_up() has passed

    def __post_init__(self) -> None:
        object.__setattr__(self, "arm", Arm.parse(self.arm))
        n = len(self.motors)
        if not 1 <= n <= MAX_JOINTS:
            raise DamiaoTransportError(
                f"transport config motors: {n} motors; valid: 1..{MAX_JOINTS} (one per joint)"
            )
        if not self.kp or not self.kd:
            kp, kd = motor_gains(tuple(self.motors))
            object.__setattr__(self, "kp", self.kp or kp)
            object.__setattr__(self, "kd", self.kd or kd)
        if not self.esc_ids:
            object.__setattr__(self, "esc_ids", esc_ids(n))
        if not self.mst_ids:
            object.__setattr__(self, "mst_ids", mst_ids(n))
        for name in ("kp", "kd", "esc_ids", "mst_ids"):
            if len(getattr(self, name)) != n:
                raise DamiaoTransportError(
                    f"transport config {name} needs {n} values (one per motor), "
                    f"got {len(getattr(self, name))}"
                )
        if self.scalings is not None and len(self.scalings) != n:
            raise DamiaoTransportError(
                f"transport config scalings needs {n} values (one per motor), "
                f"got {len(self.scalings)}"
            )
        for j, (kp, kd) in enumerate(zip(self.kp, self.kd, strict=True), start=1):
            if not (0.0 <= kp <= KP_MAX and 0.0 <= kd <= KD_MAX):
                raise DamiaoTransportError(
                    f"joint {j}: gains kp {kp!r}, kd {kd!r} outside [0, {KP_MAX}] and [0, {KD_MAX}]"
                )
        if self.timeout_s is not None and not 0.0 <= self.timeout_s <= 0xFFFFFFFF * TIMEOUT_UNIT_S:
            raise DamiaoTransportError(f"timeout_s {self.timeout_s!r} is invalid; valid: >= 0 s")
        if not self.publish_deadline_s > 0:
            raise DamiaoTransportError(
                f"publish_deadline_s {self.publish_deadline_s!r}; valid: > 0 s"
            )

    @property
    def joints(self) -> int:
        """The arm's joint count: one drive per motor."""
        return len(self.motors)

    @property
    def resolved_channel(self) -> str:
        return self.channel if self.channel is not None else BUS_MAPPING[self.arm].channel

    @property
    def host_scalings(self) -> tuple[Scaling, ...]:
        return (
            self.scalings
            if self.scalings is not None
            else tuple(Scaling.of(m) for m in self.motors)
        )

    @property
    def timeout_counts(self) -> int | None:
        return None if self.timeout_s is None else int(round(self.timeout_s / TIMEOUT_UNIT_S))


@dataclass(frozen=True, kw_only=True)
class DamiaoFeedback:
    """One decoded state frame (host scaling). position [rad], velocity [rad/s], torque [Nm]."""

    joint: int
    position_rad: float
    velocity_rad_s: float
    torque_nm: float
    status: int
    t_mos_c: int
    t_rotor_c: int


@dataclass
class DamiaoCounters(TransportCounters):
    torque_refusals: int = 0  # samples refused for a feed-forward torque over the limit
    register_replies: int = 0


@dataclass(frozen=True)
class MitFrame:
    """One encoded MIT frame of joint ``joint`` (1..joints)."""

    joint: int
    arbitration_id: int
    data: bytes


@dataclass
class BringUpReport:
    """What the enable sequence found. registers: {joint: {name: value}} as the drives
    answered; mismatches: human-readable disagreements with the host's table;
    statuses: the status nibble each drive answered its enable with."""

    passed: bool = False
    registers: dict[int, dict[str, float]] = field(default_factory=dict)
    mismatches: list[str] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    hold_rad: tuple[float, ...] | None = None  # where the hold frames held the drives
    hold_error: str = ""  # why no hold frame was sent (then the drives were enabled without)

    @property
    def reason(self) -> str:
        parts = self.mismatches + [f"no reply: {m}" for m in self.missing]
        bad = {j: s for j, s in self.statuses.items() if s != Status.ENABLED}
        if bad:
            parts.append(
                "not enabled: "
                + ", ".join(f"joint {j} status 0x{s:X}" for j, s in sorted(bad.items()))
            )
        return "; ".join(parts)


class DamiaoTransport(TransportCore):
    """One arm's Damiao boundary. Not thread-safe: the owner's thread calls it."""

    def __init__(
        self,
        config: DamiaoTransportConfig | None = None,
        *,
        bus: can.BusABC | None = None,
        clock: Clock = time.monotonic,
        gravity: GravityModel | None = None,
    ):
        self.config = cfg = config or DamiaoTransportConfig()
        super().__init__(
            cfg,
            bus=bus,
            clock=clock,
            counters=DamiaoCounters(),
            command_ids=set(cfg.esc_ids),
            joints=cfg.joints,
        )
        self.counters: DamiaoCounters
        self.gravity = gravity
        self.scalings = cfg.host_scalings
        self._peak = [m.peak_torque_nm for m in cfg.motors]
        self._kp, self._kd = list(cfg.kp), list(cfg.kd)
        self._by_mst = {mst: j for j, mst in enumerate(cfg.mst_ids, start=1)}
        self._pending: set[tuple[int, int]] = set()  # (joint, register) asked, not answered
        self.latest_feedback: dict[int, DamiaoFeedback] = {}
        self.registers: dict[tuple[int, Register], int | float] = {}
        self.last_feedforward_nm = np.zeros(self.joints)
        self.enabled = False  # the enable sequence passed (bring_up)

    # ------------------------------------------------------------------ output
    def publish_sample(self, positions_rad: np.ndarray) -> PublishReport:
        """A position-only sample: velocity and acceleration taken as zero."""
        return self.publish_state(positions_rad, np.zeros(self.joints), np.zeros(self.joints))

    def feedforward(self, positions_rad: np.ndarray) -> np.ndarray:
        """The gravity feed-forward [Nm] at ``positions_rad`` (zeros without a model)."""
        if self.gravity is None:
            return np.zeros(self.joints)
        return np.asarray(self.gravity(np.asarray(positions_rad, dtype=float)), dtype=float)

    def publish_state(
        self,
        positions_rad: np.ndarray,
        velocities_rad_s: np.ndarray,
        accelerations_rad_s2: np.ndarray,
    ) -> PublishReport:
        """Encode one MIT frame per joint from the coherent sample (all or nothing) and send
        them."""
        self._check_open()
        self.counters.samples += 1
        start = self.clock()
        if self.config.require_enable and not self.enabled:
            return self._finish(
                PublishReport(
                    PublishOutcome.REFUSED,
                    fault_kind="drive_error",
                    reason="drives not enabled: the enable sequence (bring_up) has not passed",
                )
            )
        try:
            tau = self.feedforward(positions_rad)
        except Exception as err:  # the model refused the state: nothing is sent
            return self._refused(f"gravity model: {err}", err)
        bad = self._torque_violation(tau)
        if bad:
            self.counters.torque_refusals += 1
            return self._finish(
                PublishReport(
                    PublishOutcome.REFUSED,
                    reason=bad,
                    fault_kind="torque_limit",
                    extra={"feedforward_nm": tau.tolist()},
                )
            )
        self.last_feedforward_nm = tau
        try:
            frames = self._mit_frames(positions_rad, velocities_rad_s, tau)
        except (DamiaoCodecError, IndexError) as err:
            return self._refused(f"encode: {err}", err)
        return self._finish(self._send_batch(frames, start))

    def _mit_frames(self, positions_rad, velocities_rad_s, tau: np.ndarray) -> list[MitFrame]:
        """The MIT frames of (p, v), one per joint, with the gain table and feed-forward
        ``tau``. IndexError (a refusal) for a sample with fewer values than joints; one with
        more is refused too, never truncated."""
        p = np.asarray(positions_rad, dtype=float).tolist()
        v = np.asarray(velocities_rad_s, dtype=float).tolist()
        n = self.joints
        if len(p) != n or len(v) != n:
            raise IndexError(f"sample of {len(p)} positions, {len(v)} velocities; need {n} each")
        frames = []
        for k in range(n):
            cmd = MitCommand(p[k], v[k], self._kp[k], self._kd[k], float(tau[k]))
            data = encode_mit(cmd, self.scalings[k], k + 1)
            frames.append(MitFrame(k + 1, self.config.esc_ids[k], data))
        return frames

    def hold_frames(self, positions_rad) -> tuple[list[MitFrame], np.ndarray]:
        """The MIT frames that hold ``positions_rad`` [rad] at rest (dq = 0, the gain table,
        tau_ff = the gravity model there) and that feed-forward [Nm]. DamiaoTransportError
        when they cannot be sent (a feed-forward outside a motor's limit, a model or codec
        refusal): nothing is clipped."""
        try:
            tau = self.feedforward(positions_rad)
        except Exception as err:
            raise DamiaoTransportError(f"gravity model: {err}") from err
        bad = self._torque_violation(tau)
        if bad:
            raise DamiaoTransportError(bad)
        try:
            return self._mit_frames(positions_rad, np.zeros(self.joints), tau), tau
        except (DamiaoCodecError, IndexError) as err:
            raise DamiaoTransportError(f"encode: {err}") from err

    def _torque_violation(self, tau: np.ndarray) -> str:
        if tau.shape != (self.joints,):
            return (
                f"gravity model returned shape {tau.shape}; expected ({self.joints},) torques [Nm]"
            )
        for j, (t, peak) in enumerate(zip(tau.tolist(), self._peak, strict=True), start=1):
            if not (math.isfinite(t) and abs(t) <= peak):
                return (
                    f"joint {j}: feed-forward torque {t!r} Nm is outside the motor's limit "
                    f"[{-peak!r}, {peak!r}] Nm ({self.config.motors[j - 1].model}); "
                    "not clipped, not sent"
                )
        return ""

    # ------------------------------------------------------------ system frames
    def send_special(self, command: SpecialCommand, joints: tuple[int, ...] = ()) -> None:
        """Enable / disable / set zero / clear error on the listed joints (all when empty)."""
        for j in joints or range(1, self.joints + 1):
            self._send_raw(self._esc_of(j), special_frame(command))
        if command in (SpecialCommand.DISABLE, SpecialCommand.CLEAR_ERROR):
            self.enabled = False  # streaming needs a fresh enable sequence

    def request_register(self, joint: int, rid: Register) -> None:
        data = encode_register_read(self._esc_of(joint), rid)
        self._pending.add((joint, int(rid)))
        self._send_raw(REGISTER_ID, data)

    def write_register(self, joint: int, rid: Register, value: int | float) -> None:
        """A RAM write (effective at once); the drive echoes the value it holds."""
        data = encode_register_write(self._esc_of(joint), rid, value)
        self._pending.add((joint, int(rid)))
        self._send_raw(REGISTER_ID, data)

    def _esc_of(self, joint: object) -> int:
        n = self.joints
        if isinstance(joint, bool) or not isinstance(joint, int) or not 1 <= joint <= n:
            raise UnknownMotorIdError(joint, f"joint numbers 1..{n}")
        return self.config.esc_ids[joint - 1]

    def _send_raw(self, arb: int, data: bytes) -> None:
        self._check_open()
        self.bus.send(
            can.Message(arbitration_id=arb, data=data, is_extended_id=False),
            timeout=self.config.send_timeout_s,
        )
        self.counters.frames_sent += 1

    # ------------------------------------------------------------------- input
    def _handle_reply(self, msg: can.Message, now: float) -> DamiaoFeedback | None:
        arb, data = msg.arbitration_id, bytes(msg.data)
        j = self._by_mst.get(arb)
        if j is None:
            self.counters.other_frames += 1
            return None
        esc = self.config.esc_ids[j - 1]
        if self._pending and looks_like_register_reply(data, esc) and (j, data[3]) in self._pending:
            fr = decode_register_frame(data)
            self._pending.discard((j, fr.rid))
            self.registers[(j, Register(fr.rid))] = fr.value  # type: ignore[assignment]
            self.counters.register_replies += 1
            return None
        try:
            st = decode_state(data, self.scalings[j - 1])
        except DamiaoCodecError as err:
            self.counters.feedback_errors += 1
            self.last_feedback_error = str(err)
            return None
        if st.id_nibble != esc & 0xF:
            self.counters.feedback_errors += 1
            self.last_feedback_error = (
                f"state frame on 0x{arb:X} names motor nibble "
                f"0x{st.id_nibble:X}; expected 0x{esc & 0xF:X}"
            )
            return None
        fb = DamiaoFeedback(
            joint=j,
            position_rad=st.q_rad,
            velocity_rad_s=st.dq_rad_s,
            torque_nm=st.tau_nm,
            status=st.status,
            t_mos_c=st.t_mos_c,
            t_rotor_c=st.t_rotor_c,
        )
        self.counters.feedback_frames += 1
        self.latest_feedback[j] = fb
        self.feedback_received_at[j] = now
        return fb

    def statuses(self) -> tuple[int, ...] | None:
        """Status nibble of each joint's latest state frame, or None until all reported."""
        fb, n = self.latest_feedback, self.joints
        if len(fb) < n:
            return None
        return tuple(fb[j].status for j in range(1, n + 1))

    # ---------------------------------------------------------------- bring-up
    def bring_up(
        self, settle: Callable[[], None], max_settles: int = 5, hold_rad=None
    ) -> BringUpReport:
        """Write the CAN timeout, read and check the registers, then enable (module doc).

        settle: lets the bus move once (the twin services its drives; a robot host waits
        ~2 ms); called up to ``max_settles`` times per phase. Nothing is retried: a
        missing reply or a disagreement fails the report, and no drive is enabled.
        hold_rad: see ``enable_drives``."""
        rep = self.check_registers(settle, max_settles)
        if rep.missing or rep.mismatches:
            return rep
        return self.enable_drives(settle, rep, max_settles, hold_rad)

    def check_registers(self, settle: Callable[[], None], max_settles: int = 5) -> BringUpReport:
        """The first half of ``bring_up``: write the CAN timeout, read and compare the
        registers. A report with nothing missing and no mismatch may go on to
        ``enable_drives``."""
        cfg, rep = self.config, BringUpReport()
        counts = cfg.timeout_counts
        unanswered: list[tuple[int, int]] = []
        rounds = [None] if counts is not None else []  # None: the timeout write
        # one register of BRING_UP_BATCH drives per round: a round fits the host's 10-frame tx
        # queue, and the replies fit the drives' side of the bus (a few tx mailboxes)
        batches = self._batches()
        for rid, joints in ((r, b) for r in rounds + list(BRING_UP_REGISTERS) for b in batches):
            try:
                for j in joints:
                    if rid is None:
                        self.write_register(j, Register.TIMEOUT, counts)
                    else:
                        self.request_register(j, rid)
            except can.CanError as err:  # the bus refused: nothing retried, nothing enabled
                self._pending.clear()
                rep.missing.append(f"register requests ({type(err).__name__}: {err})")
                return rep
            self._settle(settle, max_settles, lambda: not self._pending)
            unanswered += sorted(self._pending)
            self._pending.clear()
        rep.missing = [f"joint {j} {Register(r).name}" for j, r in unanswered]
        for j in range(1, self.joints + 1):
            rep.registers[j] = {
                r.name: self.registers[(j, r)]
                for r in BRING_UP_REGISTERS
                if (j, r) in self.registers
            }
        rep.mismatches = self.register_mismatches(counts)
        return rep

    def enable_drives(
        self,
        settle: Callable[[], None],
        rep: BringUpReport,
        max_settles: int = 5,
        hold_rad=None,
    ) -> BringUpReport:
        """The second half of ``bring_up``: enable every drive (``rep`` from
        ``check_registers``, which must have passed) and wait for each to answer ENABLED.

        hold_rad: joint angles [rad] (the owner's starting sample) each drive holds from its
        enable on: its ENABLE frame is followed at once by one MIT hold frame (``hold_frames``),
        so the drive never outputs the zero torque of an enabled drive without a command.
        When the hold frames cannot be sent (a feed-forward past a motor's limit: not clipped)
        ``rep.hold_error`` says why and the drives are enabled without them (the owner's first
        sample is refused the same way and latches). None: enable only."""
        if rep.missing or rep.mismatches:
            raise DamiaoTransportError("enable_drives needs a passed check_registers report")
        batches = self._batches()
        hold: list[MitFrame] | None = None
        if hold_rad is not None:
            try:
                hold, tau = self.hold_frames(hold_rad)
            except DamiaoTransportError as err:
                rep.hold_error = str(err)
            else:
                self.last_feedforward_nm = tau
                rep.hold_rad = tuple(float(x) for x in np.asarray(hold_rad, dtype=float))
        self.latest_feedback.clear()
        for joints in batches:
            replies = self.counters.feedback_frames + len(joints) * (2 if hold else 1)
            try:
                for j in joints:  # each drive's hold right behind its enable
                    self.send_special(SpecialCommand.ENABLE, (j,))
                    if hold:
                        self._send_raw(hold[j - 1].arbitration_id, hold[j - 1].data)
            except can.CanError as err:  # some drives may be enabled: the caller latches a fault
                rep.missing.append(f"enable ({type(err).__name__}: {err})")
                return rep
            self._settle(
                settle,
                max_settles,
                lambda js=joints, n=replies: (
                    set(js) <= set(self.latest_feedback) and self.counters.feedback_frames >= n
                ),
            )
        rep.statuses = {j: fb.status for j, fb in self.latest_feedback.items()}
        rep.missing = [
            f"joint {j} enable" for j in range(1, self.joints + 1) if j not in rep.statuses
        ]
        rep.passed = not rep.missing and all(s == Status.ENABLED for s in rep.statuses.values())
        self.enabled = rep.passed
        return rep

    def _batches(self) -> list[range]:
        """The joints asked at once during bring-up: ``BRING_UP_BATCH`` at a time."""
        n = self.joints
        return [range(j, min(j + BRING_UP_BATCH, n + 1)) for j in range(1, n + 1, BRING_UP_BATCH)]

    def _settle(self, settle: Callable[[], None], n: int, done: Callable[[], bool]) -> None:
        for _ in range(n):
            settle()
            self.poll_feedback()
            if done():
                return

    def register_mismatches(self, timeout_counts: int | None = None) -> list[str]:
        """Disagreements between the registers read back and the host's table."""
        out = []
        for j in range(1, self.joints + 1):
            s = self.scalings[j - 1]
            expected = {
                Register.PMAX: s.pmax_rad,
                Register.VMAX: s.vmax_rad_s,
                Register.TMAX: s.tmax_nm,
                Register.ESC_ID: self.config.esc_ids[j - 1],
                Register.MST_ID: self.config.mst_ids[j - 1],
                Register.CTRL_MODE: CTRL_MODE_MIT,
            }
            if timeout_counts is not None:
                expected[Register.TIMEOUT] = timeout_counts
            for rid, want in expected.items():
                got = self.registers.get((j, rid))
                if got is None:
                    continue
                if rid in SCALING_REGISTERS:
                    want32 = struct.unpack("<f", struct.pack("<f", want))[0]
                    same = got == want32
                else:
                    same = got == want
                if not same:
                    out.append(f"joint {j} {rid.name}: drive {got!r}, host {want!r}")
        return out

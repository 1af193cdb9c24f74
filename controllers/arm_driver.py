"""One arm's host-side stack: the owner publishing through its CAN transport.

This is the code the robot host runs per arm, and the twin runs it unchanged against
the simulated motor bank. Per control period ``tick()``:

1. ``transport.poll_feedback()`` reads every waiting feedback frame (non-blocking);
   a frame on one of our command ids means a second writer on the bus: the owner
   latches FOREIGN_WRITER (exclusive output, seed 000) before it could publish again;
2. the latest decoded joint positions are handed to ``owner.observe_feedback`` with
   the receive time of the *oldest* joint, so one frozen joint makes the whole
   observation age and the owner's feedback supervision latches STALE_FEEDBACK;
3. ``owner.tick()`` supervises, plans and publishes through ``transport``.

Feedback is forwarded only when every joint has been heard from and the oldest
receive time moved forward: a repeated observation never refreshes the age.

``tick()`` never raises: a transport that fails to read (closed, a bus error) and an
observation the owner refuses are counted (``feedback_read_errors``,
``feedback_refused``, with the last message) and the owner is ticked anyway, so its
stale-feedback supervision trips within ``feedback_timeout_s``; a publish that fails is
the owner's to latch. No mujoco here.
"""

from __future__ import annotations

import numpy as np
from rob_twin.controllers.clock import Clock
from rob_twin.controllers.errors import OwnerConfigError, TransportConfigError
from rob_twin.controllers.owner import ArmOwner
from rob_twin.controllers.owner_config import OwnerConfig
from rob_twin.controllers.owner_types import FaultKind, TickReport
from rob_twin.controllers.transport import CanTransport, TransportConfig
from rob_twin.models.errors import RobTwinError, describe
from rob_twin.models.names import Arm


class ArmDriver:
    """An ``ArmOwner`` wired to its ``CanTransport`` (the transport is its publisher)."""

    def __init__(self, owner: ArmOwner, transport: CanTransport):
        if not isinstance(owner, ArmOwner):
            raise OwnerConfigError("owner", owner, "an ArmOwner")
        if not all(
            callable(getattr(transport, m, None))
            for m in ("poll_feedback", "publish_sample", "close")
        ) or not hasattr(getattr(transport, "config", None), "arm"):
            raise TransportConfigError(
                "transport",
                transport,
                "a transport (CanTransport or alike: poll_feedback, publish_sample, config.arm)",
            )
        if owner.arm is not transport.config.arm:
            raise TransportConfigError(
                "transport.config.arm",
                transport.config.arm.value,
                f"the owner's arm {owner.arm.value!r}",
            )
        joints = getattr(transport, "joints", owner.joints)
        if joints != owner.joints:
            raise TransportConfigError(
                "transport joints",
                joints,
                f"{owner.joints} (the owner's joint count, OwnerConfig.joints)",
            )
        self.owner = owner
        self.transport = transport
        self._forwarded_stamp = -np.inf
        self._foreign_seen = 0
        self._feedback_frames_seen = -1
        self.feedback_forwarded = 0
        self.feedback_refused = 0  # observations the owner refused (FeedbackError...)
        self.feedback_read_errors = 0  # poll_feedback raised (closed transport, bus error)
        self.last_error = ""

    @classmethod
    def create(
        cls,
        arm: Arm | str,
        clock: Clock,
        initial_positions_rad,
        owner_config: OwnerConfig | None = None,
        transport_config: TransportConfig | None = None,
        bus=None,
    ) -> ArmDriver:
        """Build the transport (on ``bus`` if given) and an owner publishing through it.

        clock: the injected time base [s] shared by owner and transport."""
        arm = Arm.parse(arm)
        if not callable(getattr(clock, "now", None)):
            raise OwnerConfigError("clock", clock, "an object with now() -> float [s]")
        if transport_config is not None and not isinstance(transport_config, TransportConfig):
            raise TransportConfigError(
                "transport_config", transport_config, "a TransportConfig or None"
            )
        tcfg = transport_config or TransportConfig(arm=arm)
        transport = CanTransport(tcfg, bus=bus, clock=clock.now)
        owner = ArmOwner(arm, transport, clock, initial_positions_rad, owner_config)
        return cls(owner, transport)

    @property
    def arm(self) -> Arm:
        return self.owner.arm

    @property
    def joints(self) -> int:
        """The arm's joint count (the owner's, ``OwnerConfig.joints``)."""
        return self.owner.joints

    def measured_positions(self) -> np.ndarray | None:
        """Latest decoded joint positions [rad], or None until every joint reported."""
        fb, n = self.transport.latest_feedback, self.owner.joints
        if len(fb) < n:
            return None
        return np.array([fb[j].position_rad for j in range(1, n + 1)])

    def drive_status(self) -> tuple[int, ...] | None:
        """Raw status byte of each joint's latest feedback frame (units unverified)."""
        fb, n = self.transport.latest_feedback, self.owner.joints
        if len(fb) < n:
            return None
        return tuple(fb[j].status for j in range(1, n + 1))

    def forward_feedback(self) -> bool:
        """Hand fresh feedback to the owner; True when an observation was forwarded."""
        frames = self.transport.counters.feedback_frames
        if frames == self._feedback_frames_seen:
            return False  # nothing new arrived since the last look
        self._feedback_frames_seen = frames
        pos = self.measured_positions()
        if pos is None:
            return False
        stamp = min(self.transport.feedback_received_at.values())
        if not stamp > self._forwarded_stamp:  # NaN-safe
            return False
        try:
            recorded = self.owner.observe_feedback(pos, stamp)
        except RobTwinError as err:  # refused: nothing recorded, the age keeps growing
            self.feedback_refused += 1
            self.last_error = str(err)
            return False
        self._forwarded_stamp = stamp
        if not recorded:
            return False
        self.feedback_forwarded += 1
        return True

    def tick(self) -> TickReport:
        """One control period: read feedback, forward it, tick the owner. Never raises."""
        try:
            self.transport.poll_feedback()
        except Exception as err:  # noqa: BLE001 - counted; feedback supervision trips on the age
            self.feedback_read_errors += 1
            self.last_error = f"poll_feedback raised {type(err).__name__}: {describe(str(err))}"
        foreign = self.transport.counters.foreign_command_frames
        if foreign > self._foreign_seen:
            self._foreign_seen = foreign
            f = self.transport.last_foreign_frame
            self.owner.latch_fault(
                FaultKind.FOREIGN_WRITER,
                f"second writer on the bus: {foreign} frame(s) on our command ids, last on "
                f"0x{f.arbitration_id:02X}"
                if f
                else f"second writer: {foreign} frame(s)",
            )
        self.forward_feedback()
        return self.owner.tick()

    def close(self) -> None:
        self.transport.close()

"""One arm's host stack on Damiao drives: the same ``ArmOwner`` publishing through a
``DamiaoTransport``, plus the drive-status supervision this family needs.

``ArmDriver`` already reads feedback, forwards positions to the owner, and latches
FOREIGN_WRITER on a second writer. On top of that, every tick: a drive whose status
nibble reports an error (under-voltage, over-temperature, lost communication ...) or
that answers DISABLED after the enable sequence latches DRIVE_ERROR. ``bring_up``
runs the enable sequence once; if it fails the owner is latched before it could
publish a single sample (nothing is retried). No mujoco, no pinocchio here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from rob_twin.controllers.arm_driver import ArmDriver
from rob_twin.controllers.clock import Clock
from rob_twin.controllers.damiao_codec import Status
from rob_twin.controllers.damiao_transport import (
    BringUpReport,
    DamiaoTransport,
    DamiaoTransportConfig,
    GravityModel,
)
from rob_twin.controllers.errors import TransportConfigError
from rob_twin.controllers.owner import ArmOwner
from rob_twin.controllers.owner_config import OwnerConfig, default_config
from rob_twin.controllers.owner_types import FaultKind, TickReport
from rob_twin.models.names import Arm


class DamiaoArmDriver(ArmDriver):
    """An ``ArmOwner`` wired to its ``DamiaoTransport``."""

    def __init__(self, owner: ArmOwner, transport: DamiaoTransport):
        super().__init__(owner, transport)  # type: ignore[arg-type]
        self.transport: DamiaoTransport = transport
        self.bring_up_report: BringUpReport | None = None

    @classmethod
    def create_damiao(
        cls,
        arm: Arm | str,
        clock: Clock,
        initial_positions_rad,
        owner_config: OwnerConfig | None = None,
        transport_config: DamiaoTransportConfig | None = None,
        bus=None,
        gravity: GravityModel | None = None,
    ) -> DamiaoArmDriver:
        """Build the transport (on ``bus`` if given) and an owner publishing through it. The
        arm's joint count is the transport's (one drive per motor of ``transport_config``) and
        must be ``owner_config``'s (TransportConfigError naming both otherwise)."""
        arm = Arm.parse(arm)
        tcfg = transport_config or DamiaoTransportConfig(arm=arm)
        ocfg = owner_config or default_config()
        if ocfg.joints != tcfg.joints:
            raise TransportConfigError(
                "transport_config joints (motors)",
                tcfg.joints,
                f"{ocfg.joints} (the owner config's joint count, OwnerConfig.joints)",
            )
        transport = DamiaoTransport(tcfg, bus=bus, clock=clock.now, gravity=gravity)
        owner = ArmOwner(arm, transport, clock, initial_positions_rad, owner_config)  # type: ignore[arg-type]
        return cls(owner, transport)

    def bring_up(self, settle: Callable[[], None], hold: bool = True) -> BringUpReport:
        """The enable sequence; a failure latches DRIVE_ERROR with the reason. hold: each
        drive holds the owner's starting sample from its enable on (``enable``)."""
        return self._judge(self.transport.bring_up(settle, hold_rad=self._hold_rad(hold)))

    def check_registers(self, settle: Callable[[], None], max_settles: int = 5) -> BringUpReport:
        """The enable sequence's register check alone (a robot with two buses checks both
        arms, then enables both, so neither arm's feedback ages while the other's registers
        are read); a failure latches DRIVE_ERROR with the reason. max_settles: settles a
        phase may wait for its answers (``DamiaoTransport.check_registers``)."""
        rep = self.transport.check_registers(settle, max_settles)
        return self._judge(rep) if rep.missing or rep.mismatches else rep

    def enable(
        self,
        settle: Callable[[], None],
        rep: BringUpReport,
        hold: bool = True,
        max_settles: int = 5,
    ) -> BringUpReport:
        """The enable sequence's second half after a passed ``check_registers``. hold: each
        drive's ENABLE is followed by an MIT frame holding the owner's commanded position
        (its starting sample) with the gravity feed-forward there, so the arm is held from
        the enable on, not only from the owner's first sample
        (``DamiaoTransport.enable_drives``)."""
        return self._judge(
            self.transport.enable_drives(settle, rep, max_settles, self._hold_rad(hold))
        )

    def _hold_rad(self, hold: bool) -> np.ndarray | None:
        return self.owner.commanded_state()[0] if hold else None

    def _judge(self, rep: BringUpReport) -> BringUpReport:
        self.bring_up_report = rep
        if not rep.passed:
            self.owner.latch_fault(FaultKind.DRIVE_ERROR, f"bring-up failed: {rep.reason}")
        return rep

    def drive_fault(self) -> str:
        """Why the drives' latest statuses forbid streaming, or "" when they do not."""
        statuses = self.transport.statuses()
        if statuses is None:
            return ""
        bad = []
        for j, s in enumerate(statuses, start=1):
            if s == Status.ENABLED:
                continue
            try:
                name = Status(s).name
            except ValueError:
                name = f"unknown 0x{s:X}"
            bad.append(f"joint {j} {name}")
        return ", ".join(bad)

    def tick(self) -> TickReport:
        self.transport.poll_feedback()
        why = self.drive_fault()
        if why and self.bring_up_report is not None:
            self.owner.latch_fault(FaultKind.DRIVE_ERROR, f"drive status: {why}")
        return super().tick()

    def measured_velocities(self) -> np.ndarray | None:
        """Latest decoded joint velocities [rad/s], or None until every joint reported."""
        fb, n = self.transport.latest_feedback, self.owner.joints
        if len(fb) < n:
            return None
        return np.array([fb[j].velocity_rad_s for j in range(1, n + 1)])

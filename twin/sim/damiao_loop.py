"""The closed loop of the OpenArm-class robot: the same owners, Damiao drives underneath.

::

    DamiaoArmDriver(RIGHT): owner -> Ruckig (p, v, a) -> DamiaoTransport (kp, kd table,
        tau_ff = Pinocchio RNEA gravity at p) -> FaultInjectingBus --CAN10--+
    DamiaoArmDriver(LEFT): ... --CAN11--+
                                         v
      DamiaoBank: MIT drives (impedance law) -> MuJoCo motors (rob_twin.models.openarm) -> replies

Differences from ROB's loop (``rob_twin.twin.sim.closed_loop.ClosedLoop``): the model's arm joints
are torque motors; the owners run at 500 Hz (``openarm_config``), the gravity
compensation with them; feedback is each drive's reply to each frame; before the
owners tick, each arm runs the enable sequence (``DamiaoTransport.bring_up``: CAN
timeout written, registers read and compared, drives enabled). ``DamiaoOptions``
switches compensation and gains, declares a payload, and injects host/drive register
disagreements for the rehearsal.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rob_twin.controllers.damiao_codec import Register, Scaling
from rob_twin.controllers.damiao_driver import DamiaoArmDriver
from rob_twin.controllers.damiao_transport import DamiaoTransportConfig
from rob_twin.controllers.owner_config import OwnerConfig
from rob_twin.models.damiao_motors import OPENARM_KD, OPENARM_KP
from rob_twin.models.names import Arm
from rob_twin.models.openarm import load_openarm_scene
from rob_twin.planners.kinematics import Payload
from rob_twin.twin.bus.wire import FaultInjectingBus
from rob_twin.twin.drives.damiao_bank import DamiaoBank, default_damiao_configs
from rob_twin.twin.drives.gravity import PinocchioGravity
from rob_twin.twin.errors import TwinInputError
from rob_twin.twin.sim.closed_loop import ClosedLoop, ClosedLoopConfig, twin_owner_config
from rob_twin.twin.sim.twin import Twin, TwinConfig

OWNER_RATE_HZ = 500.0  # seed 002: gravity compensation at 500 Hz


@dataclass(frozen=True)
class DriveRegisterOverride:
    """A drive whose register differs from the factory table (set before bring-up)."""

    arm: Arm
    joint: int
    register: Register
    value: float


@dataclass(frozen=True)
class DamiaoOptions:
    """gravity_compensation: send RNEA gravity as tau_ff (False: zero); payload: declared
    tool payload; kp/kd: per-joint gains [Nm/rad], [Nm s/rad] (None: OpenArm's ROS 2
    table); host_scalings: the host's PMAX/VMAX/TMAX table (None: the motor table);
    drive_registers: drive-side register overrides; timeout_s: CAN watchdog written at
    bring-up [s] (None: leave the factory 0 = off); enable: run the enable sequence."""

    gravity_compensation: bool = True
    payload: Payload | None = None
    kp: tuple[float, ...] | None = None
    kd: tuple[float, ...] | None = None
    host_scalings: tuple[Scaling, ...] | None = None
    drive_registers: tuple[DriveRegisterOverride, ...] = ()
    timeout_s: float | None = 0.1
    enable: bool = True


def openarm_owner_config() -> OwnerConfig:
    """The twin's owner limits (``twin_owner_config``) at 500 Hz; feedback timeout 0.05 s
    (25 periods: every frame is answered, so feedback is as fresh as the commands)."""
    return replace(twin_owner_config(period_s=1.0 / OWNER_RATE_HZ), feedback_timeout_s=0.05)


def openarm_config(**overrides) -> ClosedLoopConfig:
    """A closed-loop config for the OpenArm-class robot: 500 Hz owners, Damiao drives."""
    base = ClosedLoopConfig(
        robot="openarm",
        owner_rate_hz=OWNER_RATE_HZ,
        owner=openarm_owner_config(),
        damiao=DamiaoOptions(),
    )
    return replace(base, **overrides)


class DamiaoClosedLoop(ClosedLoop):
    """ROB's body with OpenArm-class arms on Damiao MIT drives, in lockstep."""

    first_command_id = 0x01  # MIT frames of a sample start at ESC id 1
    robot = "openarm"

    def __init__(self, config: ClosedLoopConfig | None = None, twin: Twin | None = None):
        config = config or openarm_config()
        opts = config.damiao if config.damiao is not None else DamiaoOptions()
        if not isinstance(opts, DamiaoOptions):
            raise TwinInputError("ClosedLoopConfig.damiao", opts, "a DamiaoOptions or None")
        self.options: DamiaoOptions = opts
        self.bring_up: dict[Arm, object] = {}
        self.gravity: dict[Arm, PinocchioGravity] = {}
        super().__init__(config, twin)

    # ------------------------------------------------------------------ family hooks
    def _make_twin(self, cfg: ClosedLoopConfig) -> Twin:
        return Twin(TwinConfig(seed=cfg.seed), model=load_openarm_scene())

    def _make_bank(self, wiring: dict[str, Arm]) -> DamiaoBank:
        cfg = self.config
        return DamiaoBank(
            self.twin.model,
            self.twin.data,
            wiring,
            self.faults,
            default_damiao_configs(),
            cfg.log_dir,
            cfg.log_suffix,
            now=self.twin.time,
        )

    def _make_driver(self, arm: Arm, wire: FaultInjectingBus) -> DamiaoArmDriver:
        o = self.options
        gravity = PinocchioGravity(arm, o.payload) if o.gravity_compensation else None
        if gravity is not None:
            self.gravity[arm] = gravity
        tcfg = DamiaoTransportConfig(
            arm=arm,
            channel=self.channels[arm],
            kp=o.kp or OPENARM_KP,
            kd=o.kd or OPENARM_KD,
            scalings=o.host_scalings,
            timeout_s=o.timeout_s,
        )
        return DamiaoArmDriver.create_damiao(
            arm,
            self.clock,
            self.twin.arm_positions(arm),
            self.config.owner,
            tcfg,
            bus=wire,
            gravity=gravity,
        )

    def _start_drives(self) -> None:
        for ov in self.options.drive_registers:
            self.bank.set_register(ov.arm, ov.joint, ov.register, ov.value)
        if not self.options.enable:
            return
        for arm, drv in self.drivers.items():
            self.bring_up[arm] = drv.bring_up(self._settle)

    def _settle(self) -> None:
        """Let the drives answer: without bus timing a lockstep exchange (no simulated time
        passes); with it, 2 ms of simulated time (a robot host waits ~2 ms), so the frames
        travel the timed bus and the replies come back."""
        if self.bus_timing is None:
            self.bank.service(self.twin.time, 0.0)
            return
        for _ in range(max(1, round(0.002 / self.twin.scheduler.dt))):
            self.twin.step(1)
            self._service_bus(self.twin.time)

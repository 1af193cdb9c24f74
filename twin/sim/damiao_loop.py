"""The closed loop of a robot on Damiao drives (OpenArm v2, ``models/openarm/robot.toml``):
the same owners, Damiao drives underneath.

::

    DamiaoArmDriver(RIGHT): owner -> Ruckig (p, v, a) -> DamiaoTransport (kp, kd table,
        tau_ff = the model's gravity at p) -> FaultInjectingBus --CAN10--+
    DamiaoArmDriver(LEFT): ... --CAN11--+
                                         v
      DamiaoBank: MIT drives (impedance law) -> MuJoCo motors (models.robot_model) -> replies

Differences from ROB's loop (``rob_twin.twin.sim.closed_loop.ClosedLoop``): the model's arm joints
are torque motors; the owners run at 500 Hz (``openarm_config``), the gravity
compensation with them; feedback is each drive's reply to each frame; before the
owners tick, each arm runs the enable sequence (``DamiaoTransport.bring_up``: CAN
timeout written, registers read and compared, drives enabled). ``DamiaoOptions``
switches compensation and gains, declares a payload, and injects host/drive register
disagreements for the rehearsal. The drives and the host's motor table are the robot
file's ``drives.motors``, one per arm joint: an arm of any joint count the file gives
(OpenArm: seven) gets as many drives, MIT frames and owner joints; the owner's limits,
the same on every joint, carry over to that count (``OwnerConfig.with_bounds``) and the
default gains are ``controllers.damiao_transport.motor_gains``'s.

Holding from the first tick: the twin starts each arm at rest at its start pose (the
robot's home, or the scenario's initial values), which need not be gravity-free. A
disabled Damiao drive, and an enabled one without a command, gives no torque (and has no
brake), so (1) each drive's ENABLE is followed at once by an MIT frame holding the owner's
starting sample with the gravity feed-forward there (``DamiaoOptions.hold_on_enable``),
and (2) on a timed bus, where the register reads of the bring-up take simulated time
(about 0.1 s at 1 Mbit/s), the twin keeps the arm joints at their start pose, at rest,
until every drive is enabled and holding (``DamiaoOptions.support_during_bring_up``: a
real arm whose start pose is not gravity-free rests on a support during bring-up).
Without both, an arm whose start pose needs holding torque sags during bring-up, the
owner (still at the start pose) latches ``tracking_error``, stops publishing, the drives'
CAN watchdog trips and the arm falls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import mujoco
import numpy as np
from rob_twin.controllers.damiao_codec import Register, Scaling
from rob_twin.controllers.damiao_driver import DamiaoArmDriver
from rob_twin.controllers.damiao_transport import DamiaoTransportConfig
from rob_twin.controllers.owner_config import OwnerConfig
from rob_twin.models.damiao_motors import MOTORS, MotorLimits
from rob_twin.models.loading import arm_qpos_indices
from rob_twin.models.names import Arm
from rob_twin.models.robot_description import resolve_robot
from rob_twin.planners.kinematics import Payload
from rob_twin.twin.bus.wire import FaultInjectingBus
from rob_twin.twin.drives.damiao_bank import DamiaoBank
from rob_twin.twin.drives.gravity import ModelGravity
from rob_twin.twin.errors import TwinInputError
from rob_twin.twin.sim.closed_loop import ClosedLoop, ClosedLoopConfig, twin_owner_config
from rob_twin.twin.sim.twin import Twin

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
    tool payload; kp/kd: per-joint gains [Nm/rad], [Nm s/rad], one per arm joint (None:
    OpenArm's ROS 2 table, ``controllers.damiao_transport.motor_gains``); host_scalings:
    the host's PMAX/VMAX/TMAX table (None: the motor table); drive_registers: drive-side
    register overrides; timeout_s: CAN watchdog written at
    bring-up [s] (None: leave the factory 0 = off); enable: run the enable sequence;
    hold_on_enable: each drive's ENABLE is followed by an MIT frame holding the owner's
    starting sample with its gravity feed-forward (False: the drive gives zero torque until
    the owner's first sample reaches it); support_during_bring_up: on a timed bus, keep the
    arm joints at their start pose, at rest, until the enable sequence is over (False: the
    arms hang limp while the registers are read, as an unsupported real arm would)."""

    gravity_compensation: bool = True
    payload: Payload | None = None
    kp: tuple[float, ...] | None = None
    kd: tuple[float, ...] | None = None
    host_scalings: tuple[Scaling, ...] | None = None
    drive_registers: tuple[DriveRegisterOverride, ...] = ()
    timeout_s: float | None = 0.1
    enable: bool = True
    hold_on_enable: bool = True
    support_during_bring_up: bool = True


BRING_UP_SETTLE_S = 0.001  # one settle of the bring-up on a timed bus [s]
BRING_UP_MAX_SETTLES = 5  # settles a bring-up phase waits (DamiaoTransport's default)


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
    family = "damiao"

    def __init__(self, config: ClosedLoopConfig | None = None, twin: Twin | None = None):
        config = config or openarm_config()
        opts = config.damiao if config.damiao is not None else DamiaoOptions()
        if not isinstance(opts, DamiaoOptions):
            raise TwinInputError("ClosedLoopConfig.damiao", opts, "a DamiaoOptions or None")
        self.options: DamiaoOptions = opts
        self.motors: tuple[MotorLimits, ...] = ()  # the robot file's (``_make_bank``)
        self.bring_up: dict[Arm, object] = {}
        self.gravity: dict[Arm, ModelGravity] = {}
        self._support: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        super().__init__(config, twin)

    # ------------------------------------------------------------------ family hooks
    def _make_bank(self, wiring: dict[str, Arm]) -> DamiaoBank:
        """The robot's drives with the calibration's drive parameters (gain factors, encoder
        zeros) and its joints' identified friction (the robot file's, or the calibration's)."""
        from rob_twin.twin.calibration.apply import damiao_drives

        cfg = self.config
        self.motors = robot_motors(cfg.robot)
        values = cfg.calibration.values if cfg.calibration is not None else {}
        configs, friction = damiao_drives(values, self.robot)
        return DamiaoBank(
            self.twin.model,
            self.twin.data,
            wiring,
            self.faults,
            configs,
            cfg.log_dir,
            cfg.log_suffix,
            now=self.twin.time,
            friction=friction,
        )

    def _make_driver(self, arm: Arm, wire: FaultInjectingBus) -> DamiaoArmDriver:
        o = self.options
        # the host's gravity model is the robot's canonical one: what a calibration or a
        # hidden value changes in the twin (a payload) is not known to the host
        host_model = self.robot.model() if self.config.calibration else None
        gravity = (
            ModelGravity(host_model or self.twin.model, arm, o.payload)
            if o.gravity_compensation
            else None
        )
        if gravity is not None:
            self.gravity[arm] = gravity
        tcfg = DamiaoTransportConfig(
            arm=arm,
            channel=self.channels[arm],
            motors=self.motors,
            kp=o.kp or (),  # (): motor_gains (seven joints: OpenArm's table)
            kd=o.kd or (),
            scalings=o.host_scalings,
            timeout_s=o.timeout_s,
        )
        return DamiaoArmDriver.create_damiao(
            arm,
            self.clock,
            self.twin.arm_positions(arm),
            self.owner_config(arm),
            tcfg,
            bus=wire,
            gravity=gravity,
        )

    def owner_config(self, arm: Arm) -> OwnerConfig:
        """The owner of ``arm`` with the config's rates and limits and the model's joint
        ranges as its position bounds [rad], for the arm's joint count (limits the same on
        every joint carry over to any count: ``OwnerConfig.with_bounds``)."""
        m = self.twin.model
        ranges = [m.jnt_range[m.joint(name).id] for name in self.robot.joints(arm)]
        return self.config.owner.with_bounds(
            tuple(float(lo) for lo, _ in ranges), tuple(float(hi) for _, hi in ranges)
        )

    def _start_drives(self) -> None:
        """Register overrides, then the enable sequence: both arms' registers checked, then
        each arm's drives enabled, each holding the owner's starting sample from its enable on
        (module doc); on a timed bus the arms are supported meanwhile."""
        o = self.options
        for ov in o.drive_registers:
            self.bank.set_register(ov.arm, ov.joint, ov.register, ov.value)
        if not o.enable:
            return
        if self._bring_up_takes_time() and o.support_during_bring_up:
            self._support = self._arm_state()
        try:
            n = self._max_settles()
            checked = {
                arm: drv.check_registers(self._settle, n) for arm, drv in self.drivers.items()
            }
            for arm, drv in self.drivers.items():
                rep = checked[arm]
                self.bring_up[arm] = (
                    rep
                    if rep.missing or rep.mismatches
                    else drv.enable(self._settle, rep, hold=o.hold_on_enable, max_settles=n)
                )
        finally:
            if self._support:
                self._support = []
                mujoco.mj_forward(self.twin.model, self.twin.data)

    def _arm_state(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(qpos indices, dof indices, qpos) of each arm's joints now."""
        m, d = self.twin.model, self.twin.data
        out = []
        for arm in Arm:
            qi = np.asarray(arm_qpos_indices(m, arm))
            joints = [int(np.flatnonzero(m.jnt_qposadr == a)[0]) for a in qi]
            out.append((qi, m.jnt_dofadr[joints].copy(), d.qpos[qi].copy()))
        return out

    def _bring_up_takes_time(self) -> bool:
        """Whether a frame needs simulated time to reach the drives and back: on a timed bus,
        or with a calibration's transport delays in the loop (a register read then waits
        the round trip, as on the real bus, instead of finding no reply)."""
        return self.bus_timing is not None or any(any(d) for d in self.transport_delays.values())

    def _max_settles(self) -> int:
        """Settles a bring-up phase may wait for its answers: the transport's 5, plus one a
        millisecond of the slowest arm's round trip (command + feedback delay) when
        calibration delays act (a phase still ends as soon as its answers are in)."""
        round_trip = max(sum(rt) for rt in self.transport_delays.values())
        return BRING_UP_MAX_SETTLES + math.ceil(round_trip / BRING_UP_SETTLE_S - 1e-9)

    def _settle(self) -> None:
        """Let the drives answer. On instant buses no simulated time passes (a lockstep
        exchange); on a timed bus (``bus_timing``) or with transport delays 1 ms passes,
        physics included, with the arm joints put back at their start pose, at rest, after
        each step while the enable sequence runs (``DamiaoOptions.support_during_bring_up``;
        without it the arms hang limp, the drives not yet enabled: on a 1 Mbit/s bus the
        sequence takes 108 settles, 0.108 s); with transport delays a phase may wait as
        many more settles as the slowest arm's round trip lasts (``_max_settles``)."""
        if not self._bring_up_takes_time():
            self.bank.service(self.twin.time, 0.0)
            return
        d = self.twin.data
        for _ in range(max(1, round(BRING_UP_SETTLE_S / self.twin.scheduler.dt))):
            self.twin.step()
            for qi, dofs, q in self._support:
                d.qpos[qi] = q
                d.qvel[dofs] = 0.0
            self._service_bus(self.twin.time)
            self.bank.service(self.twin.time, self.twin.scheduler.dt)


def robot_motors(robot: str) -> tuple[MotorLimits, ...]:
    """The Damiao motor of each arm joint of ``robot`` (its robot file's ``drives.motors``)."""
    names = resolve_robot(robot).file.drives.motors
    if names is None:
        raise TwinInputError("robot", robot, "a robot file with drives.motors (family damiao)")
    return tuple(MOTORS[n] for n in names)

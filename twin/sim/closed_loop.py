"""The closed loop: real arm owners and codec drive ROB's arms through simulated CAN.

::

    ArmDriver(RIGHT): owner -> codec -> CanTransport -> FaultInjectingBus --CAN10--+
    ArmDriver(LEFT):  owner -> codec -> CanTransport -> FaultInjectingBus --CAN11--+
                                                                                   v
                   MotorBank: drives decode frames -> MuJoCo servos -> physics -> feedback

One simulated clock drives everything (lockstep): per physics step (1 kHz) the clock
is set, delayed frames are released and the bank services its buses; the owners tick
at ``owner_rate_hz`` (200 Hz) and the drives answer at ``feedback_rate_hz`` (20 Hz by
default, up to 200 Hz). A run is deterministic for a seed. ``run_realtime`` paces the
same wiring against the wall clock (viewer).

With a calibration (``ClosedLoopConfig.calibration``) the twin's model and drives take its
fitted values and each arm's transport delays act between the host and its bus
(``rob_twin.twin.bus.transport_delay.TransportDelayBus``: the host's frames reach the drives
``command_delay_s`` later, the drives' replies reach the host ``feedback_delay_s`` later;
``transport_delays`` holds them, zero without a calibration).
"""

from __future__ import annotations

import itertools
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from rob_twin.controllers.arm_driver import ArmDriver
from rob_twin.controllers.clock import SimClock
from rob_twin.controllers.lease import Lease, LeaseStatus
from rob_twin.controllers.mailbox import OfferResult
from rob_twin.controllers.owner_config import OwnerConfig
from rob_twin.controllers.owner_types import TickReport
from rob_twin.controllers.target import ArmTarget
from rob_twin.controllers.transport import TransportConfig
from rob_twin.models import dimensions as D
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import DEFAULT_ROBOT, Arm
from rob_twin.models.robot import Robot, robot_of
from rob_twin.twin.bus.timed_bus import BusTimingLayer
from rob_twin.twin.bus.timing import BusTimingConfig
from rob_twin.twin.bus.transport_delay import TransportDelayBus
from rob_twin.twin.bus.wire import FIRST_COMMAND_ID, FaultInjectingBus, open_virtual
from rob_twin.twin.drives.amber_bank import MotorBank
from rob_twin.twin.drives.amber_drive import DriveConfig
from rob_twin.twin.drives.amber_robot import (
    amber_drive_configs,
    bounded_codec,
    bounded_owner,
    robot_channels,
)
from rob_twin.twin.errors import TwinInputError
from rob_twin.twin.sim.faults import FaultSchedule, FaultSpec
from rob_twin.twin.sim.twin import Twin, TwinConfig

_RUNS = itertools.count(1)
N_JOINTS = 7


def twin_owner_config(period_s: float = 0.005) -> OwnerConfig:
    """The owners' limits in the twin (ASSUMED, not commissioned values).

    v 1.0 rad/s, a 3.0 rad/s^2, jerk 30 rad/s^3 on every joint (well inside the
    motors' no-load speeds); feedback timeout 0.2 s (four periods of 20 Hz feedback);
    tracking error 0.15 rad (servo lag plus gravity sag stay below 0.08 rad in the
    demo); joint bounds from ``rob_twin.models.dimensions``."""
    return OwnerConfig(
        period_s=period_s,
        max_velocity=(1.0,) * N_JOINTS,
        max_acceleration=(3.0,) * N_JOINTS,
        max_jerk=(30.0,) * N_JOINTS,
        position_lower=D.ARM_LOWER_RAD,
        position_upper=D.ARM_UPPER_RAD,
        feedback_timeout_s=0.2,
        tracking_error_rad=0.15,
    )


@dataclass(frozen=True)
class ClosedLoopConfig:
    """seed: physics noise and fault RNG; owner_rate_hz, feedback_rate_hz [Hz] (must divide
    the 1 kHz physics rate); owner: both owners' limits; drives: per-joint drive configs
    (None: from the model dimensions); swap_wiring: put the RIGHT arm's drives on CAN11
    and the LEFT's on CAN10 (a wiring fault); client_lease_s: lease the twin's target
    client asks for [s]; log_dir: write all bus traffic there (python-can loggers);
    robot: a shipped robot name or a robot file (``rob_twin.models.robot_description``):
    rob (Amber position drives) or openarm (OpenArm v2, Damiao MIT drives with gravity
    compensation, ``rob_twin.twin.sim.damiao_loop``;
    ``rob_twin.twin.sim.damiao_loop.openarm_config()`` gives its 500 Hz owners); bus_timing:
    play every frame through a simulated CAN bus
    (``rob_twin.twin.bus.timing``: frame durations, arbitration, queues); None (default) delivers
    frames instantly."""

    seed: int = 0
    owner_rate_hz: float = 200.0
    feedback_rate_hz: float = 20.0
    owner: OwnerConfig = field(default_factory=twin_owner_config)
    drives: tuple[DriveConfig, ...] | dict | None = None  # one tuple, or {Arm: tuple}
    swap_wiring: bool = False
    client_lease_s: float = 2.0
    log_dir: str | Path | None = None
    log_suffix: str = ".log"
    faults: tuple[FaultSpec, ...] = ()
    robot: str = DEFAULT_ROBOT  # a shipped robot's name or a robot file's path
    damiao: object | None = (
        None  # openarm only: rob_twin.twin.sim.damiao_loop.DamiaoOptions (None: defaults)
    )
    bus_timing: BusTimingConfig | None = None
    # a rob_twin.twin.calibration.calibration_file.Calibration: the twin's model and (unless
    # ``drives`` is given) the drives take its parameters; None: the twin as assumed
    calibration: object | None = None

    def __post_init__(self) -> None:
        robot_of(self.robot)  # RobotFileError names the shipped robots
        if self.calibration is not None:
            from rob_twin.twin.calibration.apply import check_robot

            check_robot(self.robot, self.calibration)
        if not 0 < self.feedback_rate_hz <= 200.0:
            raise TwinInputError("feedback_rate_hz", self.feedback_rate_hz, "(0, 200] Hz")
        if abs(1.0 / self.owner_rate_hz - self.owner.period_s) > 1e-12:
            raise TwinInputError(
                "owner_rate_hz",
                self.owner_rate_hz,
                f"1 / owner.period_s = {1.0 / self.owner.period_s!r} Hz",
            )


def default_config() -> ClosedLoopConfig:
    return ClosedLoopConfig()


def _calibrated_drives(calibration, robot: Robot) -> dict:
    from rob_twin.twin.calibration.apply import calibrated_drives

    return calibrated_drives(calibration, robot)


class ClosedLoop:
    """ROB with both arm owners streaming over simulated CAN to the motor bank.

    Built on a ``Twin`` (one is made if not given); the creating thread owns it. Builds ROB's
    loop only: for a config of any robot use ``rob_twin.twin.sim.loops.make_closed_loop``
    (``robot="openarm"``: ``rob_twin.twin.sim.damiao_loop.DamiaoClosedLoop``); a config with
    ``robot="openarm"`` given to ``ClosedLoop`` itself raises TwinInputError."""

    family = "amber"  # the drive family of the ClosedLoopConfig.robot this class builds

    first_command_id = FIRST_COMMAND_ID  # where a sample's frames start (wire fault counting)

    def __init__(self, config: ClosedLoopConfig | None = None, twin: Twin | None = None):
        self.config = cfg = config or default_config()
        self.robot: Robot = robot_of(cfg.robot)
        if self.robot.family != self.family:
            raise TwinInputError(
                "ClosedLoopConfig.robot",
                cfg.robot,
                f"a robot of drive family {self.family!r} for {type(self).__name__}; build the "
                "loop of any robot with "
                "rob_twin.twin.sim.loops.make_closed_loop(config)",
            )
        self.twin = twin or self._make_twin(cfg)
        self.clock = SimClock(self.twin.time)
        self.faults = FaultSchedule(cfg.faults)
        run = f"{os.getpid()}.{next(_RUNS)}"
        self.channels = {arm: f"{self.bus_name(arm)}@{run}" for arm in Arm}
        other = {Arm.RIGHT: Arm.LEFT, Arm.LEFT: Arm.RIGHT}
        wiring = {self.channels[arm]: (other[arm] if cfg.swap_wiring else arm) for arm in Arm}
        self.bank = self._make_bank(wiring)
        self.bus_timing: BusTimingLayer | None = None
        if cfg.bus_timing is not None:
            self.bus_timing = BusTimingLayer(cfg.bus_timing, self.clock.now, self.twin.time)
            for ch, ad in self.bank.buses.items():
                ad.bus = self.bus_timing.bank_bus(ch, ad.bus)
        rng = np.random.default_rng(cfg.seed)
        self.wires: dict[Arm, FaultInjectingBus] = {}
        self.drivers: dict[Arm, ArmDriver] = {}
        self.transport_delays = self._transport_delays(cfg)
        self.delayed: dict[Arm, TransportDelayBus] = {}
        for arm in Arm:
            ch = self.channels[arm]
            host = open_virtual(ch)
            if self.bus_timing is not None:
                host = self.bus_timing.host_bus(ch, host)
            if any(self.transport_delays[arm]):
                host = self.delayed[arm] = TransportDelayBus(
                    host, *self.transport_delays[arm], self.clock.now
                )
            wire = FaultInjectingBus(
                host, arm, self.clock.now, self.faults, rng, first_command_id=self.first_command_id
            )
            if self.bus_timing is not None:
                wire.on_wire_fault = self.bus_timing.wire_fault_sink(ch)
            self.wires[arm] = wire
            self.drivers[arm] = self._make_driver(arm, wire)
        self._leases: dict[Arm, Lease | None] = {arm: None for arm in Arm}
        self._seq = {arm: 0 for arm in Arm}
        self.owner_ticking = {arm: True for arm in Arm}
        self.last_report: dict[Arm, TickReport | None] = {arm: None for arm in Arm}
        self.on_tick: list[Callable[[Arm, TickReport], None]] = []
        self.stream_counts: dict[str, dict] = {}
        self.refused: dict[Arm, Counter] = {arm: Counter() for arm in Arm}
        self._start_drives()
        sched = self.twin.scheduler
        physics_hz = 1.0 / sched.dt
        sched.add("bus", physics_hz, self._service_bus)
        sched.add("owners", cfg.owner_rate_hz, self._tick_owners)
        sched.add("feedback", cfg.feedback_rate_hz, self.bank.emit_feedback)
        self._closed = False

    def bus_name(self, arm: Arm) -> str:
        """The CAN interface of ``arm``'s drives: the robot file's channel (ROB: CAN10 /
        CAN11), else the twin's default mapping (``rob_twin.models.names.BUS_MAPPING``)."""
        return robot_channels(self.robot)[arm.value]

    def owner_config(self, arm: Arm) -> OwnerConfig:
        """The owner of ``arm`` with the config's rates and limits and the model's joint
        ranges as its position bounds [rad] (each arm its own)."""
        m = self.twin.model
        ranges = [m.jnt_range[m.joint(name).id] for name in self.robot.joints(arm)]
        return bounded_owner(self.config.owner, ranges)

    @staticmethod
    def _transport_delays(cfg: ClosedLoopConfig) -> dict[Arm, tuple[float, float]]:
        """Each arm's (command, feedback) transport delay [s]: the calibration's, else 0."""
        if cfg.calibration is None:
            return {arm: (0.0, 0.0) for arm in Arm}
        from rob_twin.twin.calibration.apply import calibrated_delays

        return calibrated_delays(cfg.calibration)

    # ------------------------------------------------------------------ family hooks
    def _make_twin(self, cfg: ClosedLoopConfig) -> Twin:
        model = self.robot.model()
        if cfg.calibration is not None:
            from rob_twin.twin.calibration.apply import calibrated_model

            model = calibrated_model(cfg.calibration, model)
        return Twin(TwinConfig(seed=cfg.seed), model=model)

    def _make_bank(self, wiring: dict[str, Arm]):
        cfg = self.config
        if cfg.drives is not None:
            drives = cfg.drives
        elif cfg.calibration is not None:
            drives = _calibrated_drives(cfg.calibration, self.robot)
        else:
            drives = amber_drive_configs(self.robot)
        return MotorBank(
            self.twin.model,
            self.twin.data,
            wiring,
            self.faults,
            drives,
            cfg.log_dir,
            cfg.log_suffix,
            now=self.twin.time,
        )

    def _make_driver(self, arm: Arm, wire: FaultInjectingBus) -> ArmDriver:
        owner = self.owner_config(arm)
        codec = bounded_codec(owner)
        return ArmDriver.create(
            arm,
            self.clock,
            self.twin.arm_positions(arm),
            owner,
            TransportConfig(arm=arm, channel=self.channels[arm], codec=codec),
            bus=wire,
        )

    def _start_drives(self) -> None:
        """Anything the drive family needs before the owners tick (Amber: nothing)."""

    # ------------------------------------------------------------------ tasks
    def _service_bus(self, now: float) -> None:
        self.clock.set(now)
        if self.bus_timing is not None:
            self.bus_timing.advance(now)
        for wire in self.wires.values():
            if wire.held:
                wire.pump(now)
        self.bank.service(now, self.twin.scheduler.dt)
        for delayed in self.delayed.values():  # read by the drives at the next step
            delayed.pump(now)

    def _tick_owners(self, now: float) -> None:
        for arm, drv in self.drivers.items():
            if not self.owner_ticking[arm]:
                continue
            rep = drv.tick()
            self.last_report[arm] = rep
            for cb in self.on_tick:
                cb(arm, rep)

    # ------------------------------------------------------------------ client side
    def lease(self, arm: Arm | str) -> Lease:
        """The twin client's lease on ``arm``: renewed while valid, granted anew otherwise."""
        arm = Arm.parse(arm)
        owner = self.drivers[arm].owner
        cur = self._leases[arm]
        if cur is not None and owner.authority.status(cur) is LeaseStatus.VALID:
            renewed = owner.authority.renew(cur, self.config.client_lease_s)
            if renewed is not None:
                self._leases[arm] = renewed
                return renewed
        self._leases[arm] = owner.grant_lease("twin-client", self.config.client_lease_s)
        return self._leases[arm]

    def command(
        self, arm: Arm | str, positions_rad, velocity_rad_s=None, acceleration_rad_s2=None
    ) -> OfferResult:
        """Submit a joint target [rad] (optional target velocity [rad/s] and acceleration
        [rad/s^2]) to ``arm``'s owner under the client's lease; returns the mailbox's verdict."""
        arm = Arm.parse(arm)
        owner = self.drivers[arm].owner
        self._seq[arm] += 1
        target = ArmTarget(
            arm=arm,
            positions_rad=positions_rad,
            sequence=self._seq[arm],
            generation=owner.generation,
            lease=self.lease(arm),
            velocity_rad_s=velocity_rad_s,
            acceleration_rad_s2=acceleration_rad_s2,
            joints=owner.joints,
        )
        result = owner.submit(target)
        if not result.accepted:
            self.refused[arm][result.reason.value if result.reason else "unknown"] += 1
        return result

    def stream_targets(
        self, arm: Arm | str, source: Callable[[float], np.ndarray | None], rate_hz: float
    ) -> str:
        """Submit ``source(t)`` [rad] to ``arm`` every 1/``rate_hz`` s of simulated time.

        Any rate works (60 Hz on a 1 kHz clock: every 16 or 17 steps, 60 per second on
        average); ``source`` returning None skips that instant. A target the owner refuses,
        by verdict or by a typed error, is counted in ``refused[arm]`` under its reason and
        the stream goes on. Returns the task name (``self.twin.scheduler.remove(name)`` ends the
        stream)."""
        arm = Arm.parse(arm)
        if not (rate_hz > 0 and np.isfinite(rate_hz)):
            raise TwinInputError("rate_hz", rate_hz, "a finite rate > 0 Hz")
        period, state = 1.0 / rate_hz, {"next": self.time, "sent": 0}
        name = f"targets/{arm.value}/{len(self.twin.scheduler.tasks)}"

        def task(now: float) -> None:
            if now + 1e-9 >= state["next"]:
                state["next"] += period
                q = source(now)
                if q is not None:
                    state["sent"] += 1
                    try:
                        self.command(arm, q)
                    except RobTwinError as err:  # e.g. a non-finite target: refused, counted
                        reason = getattr(getattr(err, "reason", None), "value", None)
                        self.refused[arm][reason or type(err).__name__] += 1

        self.twin.scheduler.add(name, 1.0 / self.twin.scheduler.dt, task)
        self.stream_counts[name] = state
        return name

    def stop(self, arm: Arm | str | None = None) -> None:
        """Stop one arm's owner, or both (brake to hold; targets refused until reset)."""
        for a in [Arm.parse(arm)] if arm is not None else list(Arm):
            self.drivers[a].owner.stop()

    # ------------------------------------------------------------------ observation
    def commanded(self, arm: Arm | str) -> np.ndarray:
        """Last published commanded positions of ``arm`` [rad]."""
        return self.drivers[Arm.parse(arm)].owner.commanded_state()[0]

    def measured(self, arm: Arm | str) -> np.ndarray:
        """True simulated joint positions of ``arm`` [rad] (not the feedback frames)."""
        return self.twin.arm_positions(Arm.parse(arm))

    def feedback(self, arm: Arm | str) -> np.ndarray | None:
        """Joint positions [rad] as decoded by the host from feedback frames."""
        return self.drivers[Arm.parse(arm)].measured_positions()

    @property
    def time(self) -> float:
        return self.twin.time

    def bus_report(self) -> dict | None:
        """Per bus: load and latency histograms (simulated); None when timing is off."""
        return self.bus_timing.report() if self.bus_timing is not None else None

    # ------------------------------------------------------------------ running
    def run_for(self, seconds: float) -> None:
        """Lockstep: advance ``seconds`` of simulated time [s]."""
        self.twin.run_for(seconds)

    def run_until(
        self, predicate: Callable[[], bool], timeout_s: float, check_every_s: float = 0.005
    ) -> bool:
        """Step until ``predicate()`` is true (checked every ``check_every_s``) or ``timeout_s``
        of simulated time passed; return whether it became true."""
        end = self.time + timeout_s
        n = max(1, int(round(check_every_s / self.twin.scheduler.dt)))
        while self.time < end - 1e-12:
            self.twin.step(n)
            if predicate():
                return True
        return predicate()

    def run_realtime(
        self, seconds: float, on_frame: Callable[[], bool] | None = None, steps_per_frame: int = 10
    ) -> None:
        """The same wiring paced against the wall clock; ``on_frame`` returning False ends it."""
        t_wall0, t_sim0 = time.perf_counter(), self.time
        while self.time - t_sim0 < seconds:
            self.twin.step(steps_per_frame)
            if on_frame is not None and on_frame() is False:
                return
            lag = (self.time - t_sim0) - (time.perf_counter() - t_wall0)
            if lag > 0:
                time.sleep(lag)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for arm, drv in self.drivers.items():
            drv.close()
            self.wires[arm].shutdown()  # the transport does not own an injected bus
        self.bank.close()

    def __enter__(self) -> ClosedLoop:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

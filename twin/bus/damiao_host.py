"""The Damiao side of ``rob-twin host``: the project's own owners driving Damiao MIT drives
(OpenArm, or any robot file with ``drives.family = "damiao"``) over a live bus.

The same ``DamiaoArmDriver`` / ``DamiaoTransport`` as the in-process loop
(``rob_twin.twin.sim.damiao_loop``), on a python-can bus the host opened (socketcand to a
``rob-twin bank``, SocketCAN ...), in this order:

1. **The arm as it is** (``read_drive_states``): Damiao drives send nothing unsolicited, so
   the host asks every drive for a state frame with a register *refresh* (0x7FF, op 0xCC),
   which a drive answers whether enabled or not and which moves nothing. The replies, decoded
   with the host's motor table (PMAX/VMAX/TMAX), are the joints' positions and statuses: the
   owners start there, never at a pose the host assumes. A drive that reports a latched
   error (0x5..0xE: a previous host's watchdog, under-voltage ...) gets one clear-error frame
   (``FB``; it stays disabled) and is read again. A drive that does not answer within
   ``startup_feedback_timeout_s`` is a ``HostError`` naming it (exit 2). The host enables
   only a resting arm: it reads again until every joint has reported a speed below
   ``REST_RAD_S`` on every read for ``REST_HOLD_S`` (a limp arm still swinging, as a bank's
   arms do for about 2.5 s after it starts, is still at its turning points), for at most
   ``rest_timeout_s``, then gives up naming the moving joints (exit 2).
2. **Bring-up** (``bring_up``): both arms' registers written (CAN watchdog) and read back
   (PMAX/VMAX/TMAX, ids, control mode, watchdog) and compared with the host's table, then
   each arm's drives enabled, each ENABLE followed at once by an MIT frame holding the
   measured pose with the gravity feed-forward there (``hold``), so the arm is held from its
   enable on. ``settle`` waits until a reply is there to read, at most ``settle_s`` (a robot
   host waits about 2 ms; a TCP link on a shared desktop may take longer), and the
   transport looks five times per round of requests. A failed bring-up latches DRIVE_ERROR
   on that arm's owner (``DamiaoArmDriver``) and nothing streams.
3. Streaming, as for Amber drives (``rob_twin.twin.bus.host_process``): one MIT frame per
   joint per tick, q/dq from the owner's Ruckig sample, the motor's kp/kd, tau_ff = the
   gravity of the robot's own MuJoCo model at the commanded position
   (``rob_twin.twin.drives.gravity.ModelGravity``); every frame's reply is the feedback.
4. At the end the drives are disabled (``disable``), as openarm_can's and LeRobot's hosts
   do when they stop: the arm is no longer held (a bank lost on the way gets nothing).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import can
import numpy as np
from rob_twin.controllers.clock import Clock
from rob_twin.controllers.damiao_codec import (
    SpecialCommand,
    Status,
    decode_state,
    encode_refresh,
    looks_like_register_reply,
    special_frame,
)
from rob_twin.controllers.damiao_driver import DamiaoArmDriver
from rob_twin.controllers.damiao_transport import BringUpReport, DamiaoTransportConfig
from rob_twin.controllers.owner_config import OwnerConfig
from rob_twin.models import damiao_motors as DM
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import Arm
from rob_twin.twin.drives.gravity import ModelGravity

REFRESH_EVERY_S = 0.1  # ask a silent drive again after this long [s]
REST_RAD_S = 0.05  # every joint slower than this: the arm is at rest [rad/s]
REST_POLL_S = 0.05  # how often a moving arm is read again [s]
REST_HOLD_S = 0.2  # at rest on every read for this long (not a swing's turning point) [s]
FIRST_ERROR_STATUS = 0x5  # status nibbles 0x5..0xF are latched errors (Status.is_error)


class DamiaoHostError(RobTwinError):
    """The host cannot reach or read its Damiao drives (no reply, wrong motor table)."""


@dataclass(frozen=True)
class DriveStates:
    """What the drives of one arm reported before the host touched them: positions [rad]
    (the host's scaling), status nibbles, the joints whose latched error was cleared, and
    velocities [rad/s]."""

    positions_rad: np.ndarray
    statuses: tuple[int, ...]
    cleared: tuple[int, ...] = ()
    velocities_rad_s: np.ndarray | None = None
    waited_s: float = 0.0  # how long the host waited for the arm to come to rest


def arm_motors(robot, arm: Arm) -> tuple[DM.MotorLimits, ...]:
    """The Damiao motor of each joint of ``arm`` (the robot file's ``drives.motors``)."""
    names, n = robot.motors, robot.joint_count(arm)
    if len(names) != n or any(m not in DM.MOTORS for m in names):
        raise DamiaoHostError(
            f"robot {robot.name!r}: drives.motors {list(names)} does not name one known Damiao "
            f"motor ({sorted(DM.MOTORS)}) for each of the {arm.value} arm's {n} joints"
        )
    return tuple(DM.MOTORS[m] for m in names)


def transport_config(
    robot, arm: Arm, channel: str, interface: str, publish_deadline_s: float, timeout_s
) -> DamiaoTransportConfig:
    """The host's transport of ``arm``: the robot's motor table (its scaling, ids and default
    gains), the CAN watchdog ``timeout_s`` [s] written at bring-up (None: left alone)."""
    return DamiaoTransportConfig(
        arm=arm,
        interface=interface,
        channel=channel,
        motors=arm_motors(robot, arm),
        timeout_s=timeout_s,
        publish_deadline_s=publish_deadline_s,
    )


def read_drive_states(
    bus: can.BusABC,
    tcfg: DamiaoTransportConfig,
    timeout_s: float,
    channel: str,
    rest_timeout_s: float = 0.0,
) -> DriveStates:
    """Each drive's state frame, asked for with a register refresh (module doc, step 1);
    a latched error is cleared once and the drive read again. With ``rest_timeout_s`` the
    drives are read again until every joint has reported a speed below ``REST_RAD_S`` on
    every read for ``REST_HOLD_S`` (a host enables a resting arm: holding an arm still
    falling catches it hard). DamiaoHostError
    naming the silent joints after ``timeout_s`` [s], or the moving ones after
    ``rest_timeout_s`` [s]."""
    cleared: list[int] = []
    start = time.monotonic()
    deadline = start + timeout_s
    rest_since: float | None = None  # since when every read found every joint at rest
    while True:
        q, dq, statuses = _read_once(bus, tcfg, deadline, timeout_s, channel)
        latched = [j for j, s in enumerate(statuses, start=1) if s >= FIRST_ERROR_STATUS]
        if latched and not cleared:
            for j in latched:  # once: a cause still present latches again, and bring-up fails
                bus.send(
                    can.Message(
                        arbitration_id=tcfg.esc_ids[j - 1],
                        data=special_frame(SpecialCommand.CLEAR_ERROR),
                        is_extended_id=False,
                    )
                )
            cleared = latched
            continue
        moving = [(j, v) for j, v in enumerate(dq.tolist(), start=1) if abs(v) >= REST_RAD_S]
        now = time.monotonic()
        waited = now - start
        if moving:
            rest_since = None
        elif rest_since is None:
            rest_since = now
        if rest_timeout_s <= 0 or (rest_since is not None and now - rest_since >= REST_HOLD_S):
            return DriveStates(q, statuses, tuple(cleared), dq, round(waited, 3))
        if waited >= rest_timeout_s:
            raise DamiaoHostError(
                f"the arm on {channel} is still moving after {rest_timeout_s} s ("
                + ", ".join(f"joint {j} at {v:+.3f} rad/s" for j, v in moving)
                + f"; at rest: below {REST_RAD_S} rad/s for {REST_HOLD_S} s): the host "
                "enables a resting arm"
            )
        time.sleep(REST_POLL_S)
        deadline = time.monotonic() + timeout_s


def _read_once(
    bus: can.BusABC, tcfg: DamiaoTransportConfig, deadline: float, timeout_s: float, channel: str
) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """One state frame from every drive: positions [rad], velocities [rad/s], statuses."""
    esc, mst, scalings = tcfg.esc_ids, tcfg.mst_ids, tcfg.host_scalings
    joint_of = {m: j for j, m in enumerate(mst, start=1)}
    n = len(esc)
    seen: dict[int, tuple[float, float, int]] = {}
    next_ask = 0.0
    while len(seen) < n:
        now = time.monotonic()
        if now >= deadline:
            raise DamiaoHostError(
                f"no state frame from joints {sorted(set(range(1, n + 1)) - set(seen))} "
                f"on {channel} within {timeout_s} s (asked with register refresh frames "
                "on 0x7FF): is the bank running and wired, are the drives powered?"
            )
        if now >= next_ask:
            for j in range(1, n + 1):
                if j not in seen:
                    bus.send(
                        can.Message(
                            arbitration_id=DM.REGISTER_ID,
                            data=encode_refresh(esc[j - 1]),
                            is_extended_id=False,
                        )
                    )
            next_ask = now + REFRESH_EVERY_S
        msg = bus.recv(timeout=min(0.02, max(0.0, deadline - now)))
        if msg is None or msg.is_extended_id or msg.is_error_frame:
            continue
        j = joint_of.get(msg.arbitration_id)
        data = bytes(msg.data)
        if j is None or len(data) != 8 or looks_like_register_reply(data, esc[j - 1]):
            continue
        st = decode_state(data, scalings[j - 1])
        if st.id_nibble == esc[j - 1] & 0xF:
            seen[j] = (st.q_rad, st.dq_rad_s, st.status)
    rows = [seen[j] for j in range(1, n + 1)]
    return (
        np.array([r[0] for r in rows]),
        np.array([r[1] for r in rows]),
        tuple(r[2] for r in rows),
    )


def damiao_driver(
    robot,
    arm: Arm,
    tcfg: DamiaoTransportConfig,
    owner: OwnerConfig,
    clock: Clock,
    start_rad: np.ndarray,
    bus: can.BusABC,
    model,
) -> DamiaoArmDriver:
    """One arm's owner on its ``DamiaoTransport`` over ``bus``, starting at ``start_rad``
    [rad], with the gravity of ``model`` (the robot's own MuJoCo model) as feed-forward."""
    return DamiaoArmDriver.create_damiao(
        arm, clock, start_rad, owner, tcfg, bus=bus, gravity=ModelGravity(model, arm)
    )


def bring_up(
    drivers: dict[Arm, DamiaoArmDriver],
    settle: Callable[[Arm], Callable[[], None]],
    hold: bool = True,
) -> dict[Arm, BringUpReport]:
    """Every arm's registers checked, then every arm's drives enabled, each holding its
    owner's starting sample from its enable on (module doc, step 2). settle(arm): the wait
    for that arm's replies."""
    checked = {arm: drv.check_registers(settle(arm)) for arm, drv in drivers.items()}
    out = {}
    for arm, drv in drivers.items():
        rep = checked[arm]
        out[arm] = rep if rep.missing or rep.mismatches else drv.enable(settle(arm), rep, hold=hold)
    return out


def bring_up_record(rep: BringUpReport) -> dict:
    """A bring-up report as JSON."""
    return {
        "passed": rep.passed,
        "reason": rep.reason,
        "statuses": {str(j): s for j, s in sorted(rep.statuses.items())},
        "hold_rad": None if rep.hold_rad is None else [round(x, 5) for x in rep.hold_rad],
        "hold_error": rep.hold_error,
    }


def status_names(statuses) -> list[str]:
    """Status nibbles by name (``DISABLED``, ``ENABLED``, ``COMMUNICATION_LOST`` ...)."""
    out = []
    for s in statuses:
        try:
            out.append(Status(s).name)
        except ValueError:
            out.append(f"0x{s:X}")
    return out


def disable(drivers: dict[Arm, DamiaoArmDriver]) -> int:
    """Disable every drive (best effort: a bus that refuses is left alone); frames sent."""
    sent = 0
    for drv in drivers.values():
        try:
            drv.transport.send_special(SpecialCommand.DISABLE)
            sent += drv.owner.joints
        except Exception:  # noqa: BLE001 - the end of a run: nothing more to do on that bus
            continue
    return sent

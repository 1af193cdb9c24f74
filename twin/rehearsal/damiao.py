"""Rehearsal profile of the Damiao family (the OpenArm-class robot, ``--robot openarm``).

The shared gates that apply to torque drives (exclusive output, units and references,
feedback, output uncertainty, moving retargets, held object: both hands carry a box on the
robot's own arm kinematics; the bus budget in Damiao frames; stopping while moving:
``rob_twin.twin.rehearsal``) plus five of this family (ROB's ``stopping`` gate also has
drives that hold on a timeout; Damiao drives go limp instead, which ``can_timeout``
rehearses):

- register_agreement: every drive's PMAX/VMAX/TMAX, ids and control mode read back at
  bring-up equal the host's table; a drive with the old DM4340 VMAX (8 rad/s, which
  scaled every velocity command by 0.8 on real arms) must stop the arm before it moves.
- enable_sequence: every drive answers its enable with ENABLED and stays so while the
  owner streams; a drive that cannot enable (a latched under-voltage) stops bring-up.
- gravity_compensation: with kp = kd = 0 the feed-forward alone holds the pose within
  ``hold_bound_rad`` for ``zero_gain_hold_s`` (only joint friction damps it: the pose is
  a balanced, not a stable, equilibrium, and the truncated torque field, always a
  fraction of a step low, lets it drift: 8 mrad in 0.3 s, 0.2 rad in 1 s, simulated);
  with compensation off and the normal gains the arm sags by a measured amount, more
  than it moves with compensation on.
- torque_limit: the feed-forward of a far move stays inside every motor's peak torque
  (margin reported); a declared payload the motors cannot hold latches TORQUE_LIMIT
  before a single frame is sent (never a clipped command).
- can_timeout: the drives' CAN watchdog reads back as written; when the host stops,
  every drive latches COMMUNICATION_LOST within the timeout and outputs zero torque.

Each gate also judges the base configuration, so a base carrying the fault (a drive
register override, no enable, no compensation, an impossible payload, no watchdog)
fails it; the tests prove each can fail. Simulated only (hardware_io: false).

Every gate takes the robot's own joint count and motors (its robot file's
``drives.motors``: OpenArm's seven, or a 5- or 6-joint arm's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from rob_twin.controllers.damiao_codec import TIMEOUT_UNIT_S, Register, Status
from rob_twin.controllers.owner_types import FaultKind as OwnerFault
from rob_twin.models.names import Arm
from rob_twin.models.robot import robot_of
from rob_twin.planners.kinematics import Payload
from rob_twin.twin.drives.gravity import ModelGravity
from rob_twin.twin.rehearsal.gates import (
    ARMS,
    GateResult,
    RehearsalConfig,
    _fault,
    _frames_after,
    _r,
    _start_moving,
    gate_bus_budget,
    gate_exclusive_output,
    gate_feedback,
    gate_held_object,
    gate_moving_retargets,
    gate_output_uncertainty,
    gate_stopping,
    gate_units_and_references,
)
from rob_twin.twin.sim.closed_loop import ClosedLoop, ClosedLoopConfig
from rob_twin.twin.sim.damiao_loop import DamiaoOptions, DriveRegisterOverride, openarm_config
from rob_twin.twin.sim.loops import make_closed_loop

UNDER_VOLTAGE_JOINT = 6  # the enable-sequence gate's drive in under-voltage (the last, if fewer)


def _joints(cfg: RehearsalConfig) -> int:
    """The robot's joints per arm (both arms of a Damiao robot have one motor per joint)."""
    return robot_of(cfg.base.robot).joint_count(Arm.RIGHT)


def _peaks(lp: ClosedLoop) -> np.ndarray:
    """Each arm joint's motor peak torque [Nm] (the robot's motors, ``DamiaoClosedLoop``)."""
    return np.array([m.peak_torque_nm for m in lp.motors])


@dataclass(frozen=True)
class DamiaoRehearsalConfig(RehearsalConfig):
    """hold_s: simulated seconds of the holding tests with gains [s]; zero_gain_hold_s and
    hold_bound_rad: the window [s] and allowed drift [rad] with kp = kd = 0 and
    compensation on; heavy_payload_kg: the payload the torque-limit detector declares
    [kg] (None: 1.5 times the smallest TCP payload whose holding torque at the start pose
    exceeds a motor's peak, from the robot's own model)."""

    hold_s: float = 1.0
    zero_gain_hold_s: float = 0.3
    hold_bound_rad: float = 0.02
    heavy_payload_kg: float | None = None


def openarm_rehearsal_config(base: ClosedLoopConfig | None = None) -> DamiaoRehearsalConfig:
    return DamiaoRehearsalConfig(base=base or openarm_config())


def _opts(cfg: RehearsalConfig) -> DamiaoOptions:
    o = cfg.base.damiao
    return o if isinstance(o, DamiaoOptions) else DamiaoOptions()


def _with(cfg: RehearsalConfig, base: ClosedLoopConfig | None = None, **changes) -> ClosedLoop:
    base = base or cfg.base
    return make_closed_loop(
        dataclasses.replace(base, damiao=dataclasses.replace(_opts(cfg), **changes))
    )


def _base(cfg: RehearsalConfig) -> ClosedLoop:
    return make_closed_loop(cfg.base)


def _param(cfg: RehearsalConfig, name: str):
    return getattr(cfg, name, getattr(DamiaoRehearsalConfig, name))


# ------------------------------------------------------------------------ gates
def gate_register_agreement(cfg: RehearsalConfig) -> GateResult:
    rows, ok = [], True
    with _base(cfg) as lp:
        for arm in ARMS:
            rep = lp.bring_up.get(arm)
            if rep is None:
                ok = False
                rows.append({"arm": arm.value, "ok": False, "note": "no bring-up was run"})
                continue
            tr = lp.drivers[arm].transport
            for j in range(1, tr.joints + 1):
                s = tr.scalings[j - 1]
                got = rep.registers.get(j, {})
                good = not any(m.startswith(f"joint {j} ") for m in rep.mismatches) and bool(got)
                rows.append(
                    {
                        "arm": arm.value,
                        "joint": j,
                        "motor": tr.config.motors[j - 1].model,
                        "host_pmax_vmax_tmax": [s.pmax_rad, s.vmax_rad_s, s.tmax_nm],
                        "drive_pmax_vmax_tmax": [got.get("PMAX"), got.get("VMAX"), got.get("TMAX")],
                        "drive_ids": [got.get("ESC_ID"), got.get("MST_ID")],
                        "ctrl_mode": got.get("CTRL_MODE"),
                        "ok": good,
                    }
                )
                ok &= good
            ok &= not rep.missing
    bad = (DriveRegisterOverride(Arm.RIGHT, 3, Register.VMAX, 8.0),)
    with _with(cfg, drive_registers=bad, enable=True) as lp:
        rep = lp.bring_up.get(Arm.RIGHT)
        owner = lp.drivers[Arm.RIGHT].owner
        after = _frames_after(lp, Arm.RIGHT, 0.2)
        detected = bool(
            rep is not None
            and not rep.passed
            and "joint 3 VMAX" in rep.reason
            and owner.fault is OwnerFault.DRIVE_ERROR
            and after == 0
        )
    return GateResult(
        "register_agreement",
        bool(ok and detected),
        {"joints": rows, "mismatch_detected": detected, "frames_after_mismatch": after},
        "every drive's PMAX/VMAX/TMAX, ids and MIT mode read back equal the host's motor table; "
        "a drive with VMAX 8 rad/s (host 10) stops bring-up: DRIVE_ERROR, no MIT frame sent",
        "" if ok else "host and drive registers disagree (or were never read)",
    )


def gate_enable_sequence(cfg: RehearsalConfig) -> GateResult:
    cases = []
    with _base(cfg) as lp:
        reps = {a.value: (lp.bring_up[a].passed if a in lp.bring_up else None) for a in ARMS}
        lp.run_for(0.3)
        statuses = {a.value: lp.drivers[a].transport.statuses() for a in ARMS}
        faults = {a.value: _fault(lp, a) for a in ARMS}
    ok = (
        all(reps.values())
        and all(s is not None and all(x == Status.ENABLED for x in s) for s in statuses.values())
        and not any(faults.values())
    )
    cases.append(
        {
            "case": "bring-up, then 0.3 s streaming",
            "passed": bool(ok),
            "bring_up_passed": reps,
            "statuses": statuses,
            "owner_faults": faults,
        }
    )
    uv_joint = min(UNDER_VOLTAGE_JOINT, _joints(cfg))
    uv = (DriveRegisterOverride(Arm.LEFT, uv_joint, Register.UV, 30.0),)  # UV above 24 V supply
    with _with(cfg, drive_registers=uv, enable=True) as lp:
        rep = lp.bring_up[Arm.LEFT]
        owner = lp.drivers[Arm.LEFT].owner
        after = _frames_after(lp, Arm.LEFT, 0.2)
        detected = bool(
            not rep.passed
            and f"joint {uv_joint} status 0x9" in rep.reason
            and owner.fault is OwnerFault.DRIVE_ERROR
            and after == 0
        )
    cases.append(
        {
            "case": "a drive in under-voltage cannot enable",
            "passed": detected,
            "bring_up_reason": rep.reason,
            "owner_fault": owner.fault and owner.fault.value,
            "frames_after": after,
        }
    )
    return GateResult.of_cases(
        "enable_sequence",
        cases,
        "every drive answers its enable with ENABLED before the owner streams and "
        "stays ENABLED; a drive that cannot enable stops bring-up (DRIVE_ERROR)",
    )


def _hold(lp: ClosedLoop, seconds: float) -> dict:
    q0 = {a: lp.measured(a) for a in ARMS}
    lp.run_for(seconds)
    dev = {a: np.abs(lp.measured(a) - q0[a]) for a in ARMS}
    return {
        "max_rad": max(float(d.max()) for d in dev.values()),
        "per_joint_rad": {a.value: [_r(x, 5) for x in d] for a, d in dev.items()},
        "faults": [f for a in ARMS if (f := _fault(lp, a))],
    }


def gate_gravity_compensation(cfg: RehearsalConfig) -> GateResult:
    secs, bound = _param(cfg, "hold_s"), _param(cfg, "hold_bound_rad")
    zero_s = _param(cfg, "zero_gain_hold_s")
    n = _joints(cfg)
    with _with(cfg, kp=(0.0,) * n, kd=(0.0,) * n) as lp:
        zero_gains = _hold(lp, zero_s)
    # the sag is measured with the owner's tracking-error latch out of the way (1 rad):
    # otherwise the latch, then the drives' CAN timeout, would let the arm fall
    lax = dataclasses.replace(
        cfg.base, owner=dataclasses.replace(cfg.base.owner, tracking_error_rad=1.0)
    )
    with _with(cfg, lax, gravity_compensation=False, kp=None, kd=None) as lp:
        no_comp = _hold(lp, secs)
    with _with(cfg, kp=None, kd=None) as lp:
        normal = _hold(lp, secs)
    held = zero_gains["max_rad"] <= bound and not zero_gains["faults"]
    helps = no_comp["max_rad"] > normal["max_rad"] and not normal["faults"]
    return GateResult(
        "gravity_compensation",
        bool(held and helps),
        {
            "hold_bound_rad": bound,
            "zero_gain_hold_s": zero_s,
            "hold_s": secs,
            "zero_gains_drift_rad": _r(zero_gains["max_rad"]),
            "zero_gains_per_joint_rad": zero_gains["per_joint_rad"],
            "zero_gains_faults": zero_gains["faults"],
            "no_compensation_sag_rad": _r(no_comp["max_rad"]),
            "no_compensation_per_joint_rad": no_comp["per_joint_rad"],
            "with_compensation_error_rad": _r(normal["max_rad"]),
        },
        f"with kp = kd = 0 the RNEA feed-forward alone holds the pose within {bound} rad for "
        f"{zero_s} s; with compensation off the arm sags over {secs} s (measured) more than "
        "with it on",
    )


def _unholdable_payload_kg(lp: ClosedLoop, arm: Arm) -> float:
    """1.5 x the smallest TCP point mass [kg] whose holding torque at ``arm``'s measured pose
    exceeds a motor's peak (``ModelGravity`` of the loop's model: 0 kg and 1 kg)."""
    q = lp.measured(arm)
    bare = ModelGravity(lp.twin.model, arm)(q)
    per_kg = np.abs(ModelGravity(lp.twin.model, arm, Payload(1.0))(q) - bare)
    room = (_peaks(lp) - np.abs(bare)) / np.maximum(per_kg, 1e-9)
    return round(1.5 * float(room.min()), 3)


def gate_torque_limit(cfg: RehearsalConfig) -> GateResult:
    peak_ff = np.zeros(_joints(cfg))
    with _base(cfg) as lp:
        peaks = _peaks(lp)

        def record(arm, rep, lp=lp) -> None:
            nonlocal peak_ff
            peak_ff = np.maximum(peak_ff, np.abs(lp.drivers[arm].transport.last_feedforward_nm))

        lp.on_tick.append(record)
        heavy = Payload(_param(cfg, "heavy_payload_kg") or _unholdable_payload_kg(lp, Arm.RIGHT))
        _start_moving(lp)
        lp.run_for(1.5)
        faults = [f for a in ARMS if (f := _fault(lp, a))]
        force = max(
            float(np.abs(lp.twin.data.actuator_force[lp.bank.drives_of(a).actuators]).max())
            for a in ARMS
        )
    margin = peaks - peak_ff
    base_ok = not faults and bool(np.all(margin > 0))
    with _with(cfg, payload=heavy) as lp:
        lp.run_for(0.05)
        owner = lp.drivers[Arm.RIGHT].owner
        tc = lp.drivers[Arm.RIGHT].transport.counters
        detected = bool(
            owner.fault is OwnerFault.TORQUE_LIMIT
            and tc.accepted == 0
            and "not clipped" in owner.fault_reason
        )
        reason = owner.fault_reason
    return GateResult(
        "torque_limit",
        bool(base_ok and detected),
        {
            "max_feedforward_nm": [_r(x, 3) for x in peak_ff],
            "peak_torque_nm": peaks.tolist(),
            "margin_nm": [_r(x, 3) for x in margin],
            "max_actuator_force_nm": _r(force, 3),
            "owner_faults": faults,
            "heavy_payload_kg": heavy.mass_kg,
            "heavy_payload_latched": detected,
            "heavy_payload_reason": reason,
        },
        "the gravity feed-forward of a far move stays inside each motor's peak torque; a "
        "payload the motors cannot hold latches TORQUE_LIMIT before any MIT frame is sent",
        "" if base_ok else f"feed-forward beyond the peak or a fault: {faults}",
    )


def gate_can_timeout(cfg: RehearsalConfig) -> GateResult:
    with _base(cfg) as lp:
        tr = lp.drivers[Arm.RIGHT].transport
        counts = [tr.registers.get((j, Register.TIMEOUT)) for j in range(1, tr.joints + 1)]
        ad = lp.bank.drives_of(Arm.RIGHT)
        lp.run_for(0.3)
        early = [d.status for d in ad.drives]
        timeout_s = max(d.timeout_s for d in ad.drives)
        lp.owner_ticking[Arm.RIGHT] = False  # the host is gone
        t0, q0 = lp.time, lp.measured(Arm.RIGHT)
        lost = lp.run_until(
            lambda: all(d.error is Status.COMMUNICATION_LOST for d in ad.drives),
            max(0.5, 3 * timeout_s),
            0.001,
        )
        t_detect = lp.time - t0
        torques = [d.last_torque_nm for d in ad.drives]
        lp.run_for(0.3)
        sag = float(np.abs(lp.measured(Arm.RIGHT) - q0).max())
    armed = all(c is not None and c > 0 for c in counts)
    ok = bool(
        armed
        and all(s == Status.ENABLED for s in early)
        and lost
        and t_detect <= timeout_s + 0.004
        and all(t == 0.0 for t in torques)
    )
    return GateResult(
        "can_timeout",
        ok,
        {
            "timeout_register_counts": counts,
            "timeout_s": _r(counts[0] * TIMEOUT_UNIT_S if armed else 0.0, 4),
            "statuses_while_streaming": early,
            "communication_lost": bool(lost),
            "time_to_detect_s": _r(t_detect, 4),
            "torques_after_nm": torques,
            "sag_after_loss_rad": _r(sag, 4),
        },
        "the drives' CAN watchdog reads back as written (> 0); when the host stops, every drive "
        "latches COMMUNICATION_LOST within the timeout and outputs zero torque (the arm goes "
        "limp: the measured sag is what the real arm would do)",
        ""
        if armed
        else "the TIMEOUT register is 0 (watchdog off): a dead host leaves the drives "
        "holding their last command",
    )


def gate_stopping_damiao(cfg: RehearsalConfig) -> GateResult:
    """Stop while moving brakes within the braking bound (``gate_stopping``); what a Damiao
    drive does when the host falls silent is the ``can_timeout`` gate."""
    return gate_stopping(cfg, drive_hold=False)


DAMIAO_GATES: dict[str, Callable[[RehearsalConfig], GateResult]] = {
    "register_agreement": gate_register_agreement,
    "enable_sequence": gate_enable_sequence,
    "gravity_compensation": gate_gravity_compensation,
    "torque_limit": gate_torque_limit,
    "can_timeout": gate_can_timeout,
    "exclusive_output": gate_exclusive_output,
    "units_and_references": gate_units_and_references,
    "feedback": gate_feedback,
    "output_uncertainty": gate_output_uncertainty,
    "moving_retargets": gate_moving_retargets,
    "bus_budget": gate_bus_budget,
    "held_object": gate_held_object,  # both hands carry a box (rehearsal.held_gate)
    "stopping": gate_stopping_damiao,
}

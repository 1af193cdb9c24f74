"""The rehearsal gates: each builds fresh closed loops (``rob_twin.twin.sim.closed_loop``) from one
base configuration, provokes what it must check, and returns a verdict with measured figures
(simulated seconds, radians). Nothing here touches hardware (hardware_io: false).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import mujoco
import numpy as np
from rob_twin.controllers.owner_types import FaultKind as OwnerFault
from rob_twin.controllers.owner_types import Mode
from rob_twin.models.loading import keyframe_arm_q
from rob_twin.models.names import TORSO_BODY, Arm, arm_joint
from rob_twin.models.robot import (
    CAN_DRIVES,
    CAPABILITY_SOURCES,
    CARTESIAN_KINEMATICS,
    robot_of,
)
from rob_twin.twin.bus.budget import BusBudgetConfig, bus_budget
from rob_twin.twin.drives.amber_robot import robot_channels
from rob_twin.twin.rehearsal.free_motion import (
    free_joint_move,
    free_line_scale,
    free_wave_scale,
)
from rob_twin.twin.rehearsal.targets import toward_far_bound, wave_source
from rob_twin.twin.scenario.summary_md import words
from rob_twin.twin.sim.closed_loop import ClosedLoop, ClosedLoopConfig
from rob_twin.twin.sim.faults import FaultSpec
from rob_twin.twin.sim.loops import make_closed_loop

ARMS = (Arm.RIGHT, Arm.LEFT)
# A move that is unique per joint (+0.02 rad * j): any swapped joint, arm or sign shows.
# Seven joints; an arm of n joints takes the first n (``SIGNATURE_MOVE[:n]``), as it does
# of FAR_MOVE.
SIGNATURE_MOVE = 0.02 * np.arange(1, 8)
# A far, smooth destination both arms can reach at cruise speed.
FAR_MOVE = np.array([0.5, 0.4, 0.4, -0.5, 0.4, 0.3, 0.5])


@dataclass
class GateResult:
    name: str
    passed: bool
    figures: dict
    requirement: str
    detail: str = ""

    @classmethod
    def of_cases(cls, name: str, cases: list[dict], requirement: str) -> GateResult:
        """A gate that passed when each of ``cases`` (dicts with ``"passed"``) passed."""
        return cls(
            name=name,
            passed=all(c["passed"] for c in cases),
            figures={"cases": cases},
            requirement=requirement,
        )

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "passed": self.passed,
            "requirement": self.requirement,
            "detail": self.detail,
            **self.figures,
        }


@dataclass(frozen=True)
class RehearsalConfig:
    """base: the closed loop every gate starts from; retarget_rates_hz: target input rates
    of the moving-retargets gate; retarget_duration_s: simulated seconds per rate;
    signature_tolerance_rad: allowed error of each joint's signature move [rad];
    stop_margin_rad: servo-lag allowance on top of the braking distance [rad];
    bus_budget: the bus and rates of the bus-budget gate (``rob_twin.twin.bus.budget``);
    stale_feedback_latch_max_s: the longest a host may take to latch frozen feedback [s], a
    requirement of its own so that a host configured with a lax timeout fails the gate."""

    base: ClosedLoopConfig = field(default_factory=ClosedLoopConfig)
    retarget_rates_hz: tuple[float, ...] = (20.0, 60.0, 90.0, 120.0)
    retarget_duration_s: float = 2.0
    signature_tolerance_rad: float = 0.01
    stop_margin_rad: float = 0.05
    bus_budget: BusBudgetConfig = field(default_factory=BusBudgetConfig)
    stale_feedback_latch_max_s: float = 0.3


def default_config() -> RehearsalConfig:
    return RehearsalConfig()


def _loop(cfg: RehearsalConfig, *faults: FaultSpec) -> ClosedLoop:
    base = cfg.base
    return make_closed_loop(dataclasses.replace(base, faults=tuple(base.faults) + faults))


def _r(x: float, n: int = 6) -> float:
    return round(float(x), n)


def _latch_case(
    name: str,
    *,
    passed: bool,
    expected: OwnerFault,
    latched: OwnerFault | None,
    time_to_latch_s: float | None,
    **figures,
) -> dict:
    """One case of a gate that expects the owner to latch ``expected``: what latched and
    after how long [s] (None when nothing latched), then the gate's own ``figures``."""
    return {
        "case": name,
        "passed": passed,
        "expected": expected.value,
        "latched": latched and latched.value,
        "time_to_latch_s": None if time_to_latch_s is None else _r(time_to_latch_s, 4),
        **figures,
    }


def robot_home(lp: ClosedLoop, arm: Arm) -> np.ndarray:
    """``arm``'s joint angles [rad] in the loop's model's ``home`` keyframe (ROB: ``HOME``)."""
    return keyframe_arm_q(lp.twin.model, arm)


def owner_bounds(lp: ClosedLoop, arm: Arm) -> tuple[np.ndarray, np.ndarray]:
    """``arm``'s owner position bounds [rad]: (lower, upper)."""
    c = lp.drivers[arm].owner.config
    return np.array(c.position_lower), np.array(c.position_upper)


def _start_moving(lp: ClosedLoop, settle_s: float = 0.2) -> dict[Arm, float]:
    """Both arms toward home + FAR_MOVE (ROB); on another robot each joint moves toward its
    farther bound, kept inside the owners' bounds (``toward_far_bound``); each arm's move
    drawn toward home where it would run an arm into the robot (``free_line_scale``: 1.0 on
    ROB and OpenArm). Returns the scale each arm moved at."""
    lp.run_for(settle_s)
    lines = {}
    for arm in ARMS:
        home = robot_home(lp, arm)
        lo, hi = owner_bounds(lp, arm)
        move = FAR_MOVE[: home.size]
        if lp.family == "amber" and np.all((home + move >= lo) & (home + move <= hi)):
            lines[arm] = (home, home + move)
            continue
        lines[arm] = (home, np.clip(home + toward_far_bound(home, lo, hi, move), lo, hi))
    scales = free_line_scale(lp.robot, lines)  # 1.0 unless a move runs an arm into the robot
    for arm, (home, goal) in lines.items():
        lp.command(arm, home + scales[arm] * (goal - home))
    return scales


STALL_JOINT = 4  # the feedback gate's stalled joint (1-based)


def _move_stalled_joint(lp: ClosedLoop) -> None:
    """The right arm's ``STALL_JOINT`` alone toward a free side, as far as ``FAR_MOVE`` goes
    (``free_joint_move``), the rest of the arm held at home: the stall case's motion where the
    whole far move would run the arm into the robot."""
    home = robot_home(lp, Arm.RIGHT)
    lo, hi = owner_bounds(lp, Arm.RIGHT)
    size = abs(float(FAR_MOVE[STALL_JOINT - 1]))
    lp.command(Arm.RIGHT, free_joint_move(lp.robot, Arm.RIGHT, STALL_JOINT, home, lo, hi, size))


def _latched(lp: ClosedLoop, arm: Arm, timeout_s: float) -> float | None:
    """Simulated seconds until ``arm``'s owner latches a fault, or None."""
    t0 = lp.time
    ok = lp.run_until(lambda: lp.drivers[arm].owner.mode is Mode.FAULTED, timeout_s, 0.001)
    return lp.time - t0 if ok else None


def _frames_after(lp: ClosedLoop, arm: Arm, seconds: float) -> int:
    """Command frames ``arm``'s host puts on the bus over the next ``seconds``."""
    tc = lp.drivers[arm].transport.counters
    n0 = tc.frames_sent
    lp.run_for(seconds)
    return tc.frames_sent - n0


# --------------------------------------------------------------------- gates
def gate_exclusive_output(cfg: RehearsalConfig) -> GateResult:
    with _loop(cfg) as lp:
        _start_moving(lp)
        lp.run_for(1.0)
        foreign = {a.value: lp.drivers[a].transport.counters.foreign_command_frames for a in ARMS}
        latched = {a.value: lp.drivers[a].owner.fault is OwnerFault.FOREIGN_WRITER for a in ARMS}
    # the detector itself: a second writer appears while moving
    with _loop(cfg, FaultSpec("second_writer", "right", at=0.5)) as lp:
        _start_moving(lp)
        lp.run_for(0.3)
        t_detect = _latched(lp, Arm.RIGHT, 0.5)
        fault = lp.drivers[Arm.RIGHT].owner.fault
        after = _frames_after(lp, Arm.RIGHT, 0.3)
    detector_ok = fault is OwnerFault.FOREIGN_WRITER and t_detect is not None and after == 0
    passed = all(v == 0 for v in foreign.values()) and not any(latched.values()) and detector_ok
    return GateResult(
        "exclusive_output",
        passed,
        {
            "foreign_command_frames": foreign,
            "second_writer_detected": detector_ok,
            "detection_latency_s": None if t_detect is None else _r(t_detect, 4),
            "frames_after_detection": after,
        },
        "one writer per bus: no frame on our command ids from anyone else; an injected "
        "second writer latches FOREIGN_WRITER and nothing more is published",
        "" if passed else f"foreign frames {words(foreign)}, owner faults {words(latched)}",
    )


def gate_units_and_references(cfg: RehearsalConfig) -> GateResult:
    tol = cfg.signature_tolerance_rad
    rows, ok = [], True
    limits = _limits_table(cfg)
    for arm in ARMS:
        other = Arm.LEFT if arm is Arm.RIGHT else Arm.RIGHT
        with _loop(cfg) as lp:
            lp.run_for(0.3)
            q0, q0_other = lp.measured(arm), lp.measured(other)
            n = q0.size  # the arm's joints: each moves by its own +0.02 rad x j
            lp.command(arm, q0 + SIGNATURE_MOVE[:n])
            lp.run_for(0.8)
            dq, dq_other = lp.measured(arm) - q0, lp.measured(other) - q0_other
            fb = lp.feedback(arm)
            side = _mount_side(lp, arm)
            fault = lp.drivers[arm].owner.fault
            fb_minus_true = (fb - lp.measured(arm)) if fb is not None else np.full(n, np.nan)
            rejected = _out_of_bounds_rejected(lp, arm)
        for j in range(n):
            good = (
                abs(dq[j] - SIGNATURE_MOVE[j]) <= tol
                and abs(fb_minus_true[j]) <= tol
                and abs(dq_other[j]) <= tol
            )
            rows.append(
                {
                    "arm": arm.value,
                    "joint": j + 1,
                    "commanded_delta_rad": _r(SIGNATURE_MOVE[j]),
                    "measured_delta_rad": _r(dq[j]),
                    "other_arm_delta_rad": _r(dq_other[j]),
                    "feedback_minus_true_rad": _r(fb_minus_true[j]),
                    "ok": bool(good),
                }
            )
            ok &= bool(good)
        expected_side = "right" if arm is Arm.RIGHT else "left"
        ok &= side == expected_side and fault is None and rejected == n
        rows.append(
            {
                "arm": arm.value,
                "mount_side": side,
                "expected_side": expected_side,
                "owner_fault": fault and fault.value,
                "out_of_bounds_targets_rejected": rejected,
            }
        )
    ok &= all(r["consistent"] for r in limits)
    return GateResult(
        "units_and_references",
        bool(ok),
        {"joints": rows, "limits": limits},
        "a unique small move per joint (+0.02 rad x j) moves exactly that joint of the "
        f"addressed arm, mounted on the robot's own side, with the commanded sign, within "
        f"{tol} rad; "
        "feedback equals the true angle (zero reference); owner, drive and model limits agree "
        "and targets beyond them are refused",
    )


def _mount_side(lp: ClosedLoop, arm: Arm) -> str:
    """The side of the robot ``arm`` is mounted on (its joint 1's anchor, which no joint of the
    arm moves): left of the torso's x-z plane (ROB), or of the world's (a robot fixed to the
    world, facing +x: OpenArm on its pedestal). Not the TCP: arms mounted facing each other
    reach across the middle."""
    m, d = lp.twin.model, lp.twin.data
    has_torso = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, TORSO_BODY) >= 0
    frame = d.body(TORSO_BODY if has_torso else 0)
    anchor = d.joint(arm_joint(arm, 1)).xanchor
    y = (frame.xmat.reshape(3, 3).T @ (anchor - frame.xpos))[1]
    return "right" if y < 0 else "left"


def _out_of_bounds_rejected(lp: ClosedLoop, arm: Arm) -> int:
    owner = lp.drivers[arm].owner
    n = 0
    for j in range(owner.joints):
        q = lp.commanded(arm)
        q[j] = owner.config.position_upper[j] + 0.01
        n += int(not lp.command(arm, q).accepted)
    return n


def _limits_table(cfg: RehearsalConfig) -> list[dict]:
    rows = []
    with _loop(cfg) as lp:
        m = lp.twin.model
        for arm in ARMS:
            owner = lp.drivers[arm].owner.config
            ad = lp.bank.drives_of(arm)
            for k, drv in enumerate(ad.drives):
                jnt = m.jnt_range[m.dof_jntid[ad.dof[k]]]
                lims = {
                    "owner": (owner.position_lower[k], owner.position_upper[k]),
                    "model": (float(jnt[0]), float(jnt[1])),
                }
                if hasattr(drv.config, "lower_rad"):  # Damiao drives have no position limits
                    lims["drive"] = (drv.config.lower_rad, drv.config.upper_rad)
                same = all(np.allclose(v, lims["model"], atol=1e-9) for v in lims.values())
                rows.append(
                    {
                        "arm": arm.value,
                        "joint": k + 1,
                        **{k2: list(v) for k2, v in lims.items()},
                        "consistent": bool(same),
                    }
                )
    return rows


def gate_stopping(cfg: RehearsalConfig, drive_hold: bool = True) -> GateResult:
    """Stop while moving brakes within the braking bound; with ``drive_hold`` (Amber
    drives) the bus-off and owner-loss cases too: the drive-side timeout holds the arm.
    Damiao drives go limp on their CAN timeout instead (no brake): their profile gates that
    as ``can_timeout`` and passes ``drive_hold=False``."""
    cases = []
    # 1. Stop while moving, from the coherent commanded state
    with _loop(cfg) as lp:
        _start_moving(lp)
        lp.run_for(0.5)
        owner = lp.drivers[Arm.RIGHT].owner
        p0, v0, a0 = owner.commanded_state()
        q0, t0, ticks0 = lp.measured(Arm.RIGHT), lp.time, owner.stats.ticks
        trace: dict[str, list] = {"t_s": [], "commanded_rad": [], "measured_rad": []}

        def record(arm: Arm, rep, trace=trace) -> None:
            if arm is Arm.RIGHT and rep.index % 4 == 0:  # 50 Hz is plenty for a plot
                trace["t_s"].append(_r(rep.stamp_s - t0, 4))
                trace["commanded_rad"].append([_r(x, 5) for x in rep.positions_rad])
                trace["measured_rad"].append([_r(x, 5) for x in lp.measured(Arm.RIGHT)])

        lp.on_tick.append(record)
        lp.stop(Arm.RIGHT)
        braking = lp.run_until(lambda: _braking_published(lp, Arm.RIGHT), 0.1, 0.001)
        latency_s, latency_ticks = lp.time - t0, owner.stats.ticks - ticks0
        stopped = braking and lp.run_until(lambda: owner.mode is Mode.STOPPED, 2.0, 0.001)
        brake_s = lp.time - t0
        lp.run_for(0.5)
        travel = np.abs(lp.measured(Arm.RIGHT) - q0)
        cmd_travel = np.abs(lp.commanded(Arm.RIGHT) - p0)
        c = owner.config
        bound = _braking_bound(v0, a0, np.array(c.max_acceleration), np.array(c.max_jerk))
        ok = (
            bool(stopped)
            and bool(np.all(cmd_travel <= bound + 1e-9))
            and bool(np.all(travel <= bound + cfg.stop_margin_rad))
        )
        cases.append(
            {
                "case": "stop while moving",
                "passed": ok,
                "speed_at_stop_rad_s": _r(np.abs(v0).max(), 4),
                "stop_latency_ticks": latency_ticks,
                "stop_latency_ms": _r(latency_s * 1e3, 1),
                "time_to_rest_ms": _r(brake_s * 1e3, 1),
                "commanded_travel_rad": [_r(x, 4) for x in cmd_travel],
                "measured_travel_rad": [_r(x, 4) for x in travel],
                "braking_bound_rad": [_r(x, 4) for x in bound],
                "trace": trace,
            }
        )
    # 2. and 3. the host can no longer stop the arm: the drive-side timeout must hold it
    held_cases = (
        ("stop under bus-off", FaultSpec("bus_off", "right", at=0.7)),
        ("owner loss", None),
    )
    for name, fault in held_cases if drive_hold else ():
        with _loop(cfg, *([fault] if fault else [])) as lp:
            _start_moving(lp)
            lp.run_for(0.5)
            q0, t0 = lp.measured(Arm.RIGHT), lp.time
            if fault is None:
                lp.owner_ticking[Arm.RIGHT] = False
            ad = lp.bank.drives_of(Arm.RIGHT)
            held = lp.run_until(lambda ad=ad: all(d.timed_out for d in ad.drives), 1.0, 0.001)
            t_hold = lp.time - t0
            lp.run_for(0.5)
            travel = np.abs(lp.measured(Arm.RIGHT) - q0)
            timeout = ad.drives[0].config.command_timeout_s
            # the drive keeps only the last command: travel is what was in flight, no more
            v = lp.drivers[Arm.RIGHT].owner.config.max_velocity[0]
            bound = v * timeout + cfg.stop_margin_rad
            ok = bool(held and t_hold <= timeout + 0.3 and np.all(travel <= bound))
            cases.append(
                {
                    "case": name,
                    "passed": ok,
                    "owner_fault": _fault(lp, Arm.RIGHT),
                    "drive_timeout_s": timeout,
                    "time_to_drive_hold_s": _r(t_hold, 4) if held else None,
                    "measured_travel_rad": [_r(x, 4) for x in travel],
                    "travel_bound_rad": _r(bound, 4),
                }
            )
    return GateResult.of_cases(
        "stopping",
        cases,
        "Stop while moving brakes within the configured limits (travel within the "
        "braking bound plus servo lag)"
        + (
            "; with the bus down or the owner gone the drives time out and hold"
            if drive_hold
            else " (the drives' CAN timeout: gate can_timeout)"
        ),
    )


def _braking_published(lp: ClosedLoop, arm: Arm) -> bool:
    """The owner's latest tick published a braking (or final stopped) sample."""
    rep = lp.last_report[arm]
    return rep is not None and rep.published and rep.mode in (Mode.BRAKING, Mode.STOPPED)


def _braking_bound(v0, a0, amax, jmax) -> np.ndarray:
    """An upper bound on the travel of a jerk-limited brake from (v0, a0) [rad]."""
    v, a = np.abs(v0), np.abs(a0)
    t_ramp = (a + amax) / jmax  # take acceleration to -amax from at most +a
    v_peak = v + a * a / (2 * jmax)  # speed can still grow while acceleration ramps down
    return v_peak * (t_ramp + v_peak / amax) + 1e-6


def _fault(lp: ClosedLoop, arm: Arm) -> str | None:
    f = lp.drivers[arm].owner.fault
    return f.value if f else None


def gate_feedback(cfg: RehearsalConfig) -> GateResult:
    base = cfg.base
    fb_period = 1.0 / base.feedback_rate_hz
    stale_bound = min(
        base.owner.feedback_timeout_s + fb_period + 2 * base.owner.period_s,
        cfg.stale_feedback_latch_max_s,
    )
    cases = []
    for name, spec, expect, bound in (
        (
            "frozen feedback, all joints",
            FaultSpec("feedback_freeze", "right", at=0.5),
            OwnerFault.STALE_FEEDBACK,
            stale_bound,
        ),
        (
            "frozen feedback, joint 3",
            FaultSpec("feedback_freeze", "right", at=0.5, joints=(3,)),
            OwnerFault.STALE_FEEDBACK,
            stale_bound,
        ),
        (
            "stalled joint 4 while moving",
            FaultSpec("stall", "right", at=0.5, joints=(STALL_JOINT,)),
            OwnerFault.TRACKING_ERROR,
            0.6,
        ),
    ):
        with _loop(cfg, spec) as lp:
            scales = _start_moving(lp, 0.2)
            if spec.kind.value == "stall" and scales[Arm.RIGHT] < 1.0:
                _move_stalled_joint(lp)  # a stall must meet a move big enough to trip
            lp.run_for(0.5 - lp.time)
            t = _latched(lp, Arm.RIGHT, 1.5)
            got = lp.drivers[Arm.RIGHT].owner.fault
            after = _frames_after(lp, Arm.RIGHT, 0.3)
        ok = bool(got is expect and t is not None and t <= bound and after == 0)
        cases.append(
            _latch_case(
                name,
                passed=ok,
                expected=expect,
                latched=got,
                time_to_latch_s=t,
                bound_s=_r(bound, 4),
                frames_after_latch=after,
            )
        )
    return GateResult.of_cases(
        "feedback",
        cases,
        "stale or frozen feedback and tracking error beyond the threshold latch a "
        "fault within a bounded time; nothing is published after it",
    )


def gate_output_uncertainty(cfg: RehearsalConfig) -> GateResult:
    cases = []
    for name, spec, expect in (
        (
            "partial batch (3 of 7 frames)",
            FaultSpec("partial_batch", "right", at=0.6, params={"accept_frames": 3}),
            OwnerFault.PARTIAL_OUTPUT,
        ),
        (
            "uncertain write (frame 4 times out)",
            FaultSpec("uncertain_write", "right", at=0.6),
            OwnerFault.UNCERTAIN_OUTPUT,
        ),
    ):
        with _loop(cfg, spec) as lp:
            _start_moving(lp)
            lp.run_for(0.6 - lp.time)
            samples0 = lp.drivers[Arm.RIGHT].transport.counters.samples
            t = _latched(lp, Arm.RIGHT, 0.1)
            tc = lp.drivers[Arm.RIGHT].transport.counters
            attempts = tc.samples - samples0
            samples_at_latch = tc.samples
            after = _frames_after(lp, Arm.RIGHT, 0.5)
            retries = tc.samples - samples_at_latch
            got = lp.drivers[Arm.RIGHT].owner.fault
        ok = got is expect and attempts == 1 and retries == 0 and after == 0
        cases.append(
            _latch_case(
                name,
                passed=ok,
                expected=expect,
                latched=got,
                time_to_latch_s=t,
                publish_attempts_to_latch=attempts,
                retries=retries,
                frames_after_latch=after,
            )
        )
    return GateResult.of_cases(
        "output_uncertainty",
        cases,
        "a partial batch or an uncertain write latches a fault at the first affected "
        "sample, with zero retries and no frame after it",
    )


def gate_moving_retargets(cfg: RehearsalConfig) -> GateResult:
    rows = []
    for rate in cfg.retarget_rates_hz:
        with _loop(cfg) as lp:
            c = lp.drivers[Arm.RIGHT].owner.config
            log: dict[Arm, list] = {a: [] for a in ARMS}
            lp.on_tick.append(lambda arm, rep, log=log: log[arm].append(rep))
            track: list[float] = []

            def waves(scale: float, lp=lp) -> dict:
                out = {}
                for k, arm in enumerate(ARMS):
                    home = robot_home(lp, arm)
                    bounds = owner_bounds(lp, arm) if lp.family != "amber" else (None, None)
                    out[arm] = wave_source(k, home, *bounds, amplitude=0.25 * scale)
                return out

            # full size unless the waves run an arm into the robot
            scale = free_wave_scale(lp.robot, waves, cfg.retarget_duration_s)
            for arm, source in waves(scale).items():
                lp.stream_targets(arm, source, rate)
            n = int(round(cfg.retarget_duration_s / 0.01))
            for _ in range(n):
                lp.run_for(0.01)
                track.append(max(np.abs(lp.commanded(a) - lp.measured(a)).max() for a in ARMS))
            figs = {"rate_hz": rate, "targets": sum(s["sent"] for s in lp.stream_counts.values())}
            if scale < 1.0:  # said where it happened: the wave was shrunk to stay free
                figs["wave_scale"] = scale
            worst = {
                "max_velocity": 0.0,
                "max_acceleration": 0.0,
                "max_discrete_jerk": 0.0,
                "max_step": 0.0,
            }
            moving = 0
            for arm in ARMS:
                reps = [r for r in log[arm] if r.published]
                p = np.array([r.positions_rad for r in reps])
                v = np.array([r.velocities_rad_s for r in reps])
                a = np.array([r.accelerations_rad_s2 for r in reps])
                worst["max_velocity"] = max(worst["max_velocity"], float(np.abs(v).max()))
                worst["max_acceleration"] = max(worst["max_acceleration"], float(np.abs(a).max()))
                worst["max_discrete_jerk"] = max(
                    worst["max_discrete_jerk"],
                    float((np.abs(np.diff(a, axis=0)) / c.period_s).max()),
                )
                worst["max_step"] = max(worst["max_step"], float(np.abs(np.diff(p, axis=0)).max()))
                moving += lp.drivers[arm].owner.stats.moving_retargets
            faults = [_fault(lp, a) for a in ARMS if _fault(lp, a)]
        limits = {
            "max_velocity": max(c.max_velocity),
            "max_acceleration": max(c.max_acceleration),
            "max_discrete_jerk": max(c.max_jerk),
            "max_step": max(c.max_velocity) * c.period_s,
        }
        within = all(worst[k] <= limits[k] + 1e-6 for k in worst)
        ok = bool(within and not faults and max(track) < c.tracking_error_rad)
        rows.append(
            {
                **figs,
                "passed": ok,
                "moving_retargets": moving,
                "faults": faults,
                "max_tracking_error_rad": _r(max(track), 4),
                **{k: _r(v, 5) for k, v in worst.items()},
                "limits": limits,
            }
        )
    return GateResult(
        "moving_retargets",
        all(r["passed"] for r in rows),
        {"rates": rows},
        "continuous retargeting at each rate: commanded v, a, discrete jerk and "
        "5 ms step within the owner's limits (no discontinuity), no fault, tracking "
        "error below the owner's threshold",
    )


def gate_bus_budget(cfg: RehearsalConfig) -> GateResult:
    """Rehearsal gate: every arm bus fits the robot's streaming (its drive family's frames)
    at the rehearsal's rates."""
    robot = robot_of(cfg.base.robot)
    b: BusBudgetConfig = dataclasses.replace(cfg.bus_budget, family=robot.family)
    joints = max(robot.joint_count(a) for a in Arm)  # one command frame per joint
    if joints != b.joints:
        b = dataclasses.replace(b, joints=joints)
    cmd_hz = b.command_rate_hz or cfg.base.owner_rate_hz
    # Damiao drives answer every command: their feedback rate is the command rate
    answered = robot.family == "damiao"
    fb_hz = b.feedback_rate_hz or (cmd_hz if answered else cfg.base.feedback_rate_hz)
    channels = robot_channels(robot)
    rows = [bus_budget(b, cmd_hz, fb_hz, channels[arm.value]) for arm in Arm]
    passed = all(r["fits"] for r in rows)
    worst = max(rows, key=lambda r: (r["offered_load"], r["worst_command_to_drive_us"] or math.inf))
    detail = (
        ""
        if passed
        else (
            f"{worst['bus']} at {worst['config']}: {b.joints} joints x {cmd_hz:g} Hz commands + "
            f"{fb_hz:g} Hz feedback offer load {worst['offered_load']:.3f} (allowed {b.max_load}), "
            f"worst command-to-drive {worst['worst_command_to_drive_us']} us "
            f"(period {worst['command_period_us']} us), {worst['frames_refused']} frames refused"
        )
    )
    return GateResult(
        "bus_budget",
        passed,
        {"cases": [{**r, "passed": r["fits"]} for r in rows]},
        f"each arm bus carries {b.joints} joints x the command rate plus feedback at its rate "
        f"with load <= {b.max_load} and every sample on the drives within one command period "
        "(worst-case stuffing unless configured)",
        detail,
    )


def gate_held_object(cfg: RehearsalConfig) -> GateResult:
    """Both hands carry a box in lockstep (``rob_twin.twin.rehearsal.held_gate``)."""
    from rob_twin.twin.rehearsal.held_gate import gate_held_object as gate

    return gate(cfg)


GATES: dict[str, Callable[[RehearsalConfig], GateResult]] = {
    "exclusive_output": gate_exclusive_output,
    "units_and_references": gate_units_and_references,
    "stopping": gate_stopping,
    "feedback": gate_feedback,
    "output_uncertainty": gate_output_uncertainty,
    "moving_retargets": gate_moving_retargets,
    "bus_budget": gate_bus_budget,
    "held_object": gate_held_object,
}


# gates that need a capability the robot may lack: (gate, capability)
GATE_NEEDS = {"held_object": CARTESIAN_KINEMATICS}
# gates that need arms of at least this many joints: the held box's lockstep carry keeps each
# hand's full pose (position and orientation: six degrees of freedom) along the move
GATE_MIN_JOINTS = {"held_object": 6}


def _too_few_joints(robot) -> dict[str, str]:
    """{gate: why} for the gates whose ``GATE_MIN_JOINTS`` the robot's arms lack."""
    fewest = min(robot.joint_count(a) for a in Arm)
    return {
        n: f"robot {robot.name!r} has {fewest}-joint arms; the gate needs arms of at least "
        f"{k} joints (a lockstep carry holds each hand's full pose: six degrees of freedom)"
        for n, k in GATE_MIN_JOINTS.items()
        if fewest < k
    }


def gates_for(cfg: RehearsalConfig) -> dict[str, Callable[[RehearsalConfig], GateResult]]:
    """The gate profile of the base configuration's robot (Damiao:
    ``rob_twin.twin.rehearsal.damiao``), less the gates it lacks a capability for
    (``gates_not_run`` says which and why)."""
    robot = robot_of(cfg.base.robot)
    gates = GATES
    if robot.family == "damiao":
        from rob_twin.twin.rehearsal.damiao import DAMIAO_GATES

        gates = DAMIAO_GATES
    short = _too_few_joints(robot)
    if all(robot.can(cap) for cap in GATE_NEEDS.values()) and not short:
        return gates
    return {
        n: g
        for n, g in gates.items()
        if robot.can(GATE_NEEDS.get(n, CAN_DRIVES)) and n not in short
    }


def gates_not_run(cfg: RehearsalConfig) -> dict[str, str]:
    """{gate: why it cannot run on the base configuration's robot} (the missing capability,
    or arms of fewer joints than the gate needs: ``GATE_MIN_JOINTS``)."""
    robot = robot_of(cfg.base.robot)
    missing = {
        n: f"robot {robot.name!r} lacks capability {cap!r} ({CAPABILITY_SOURCES[cap]})"
        for n, cap in GATE_NEEDS.items()
        if not robot.can(cap)
    }
    return {**_too_few_joints(robot), **missing}

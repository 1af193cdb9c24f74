"""The ``held_object`` rehearsal gate: both hands carry a box along one lockstep move; the box's
internal force, both arms' joint torques and the grasps' modelled slip must stay within limits.

The closed loop of the rehearsal's base configuration is built on the scene with a held box
(``rob_twin.twin.sim.held_object``); after ``settle_s`` both hands grasp it, and a lockstep
Cartesian carry (``rob_twin.twin.sim.held_carry``: both TCPs by ``translation_m``) is streamed to
the owners, the left arm's commands late by ``skew_s`` (0: the synchronized executor's one
start stamp). ``HeldRecorder`` records every physics step; the gate fails when the internal
force or a joint torque exceeds its limit (``HeldObjectLimits``) or a grasp slips, when an
owner latches a fault, when the box on its stand already penetrates the robot (the default
box between the hands at home does not fit every robot), or when the carry cannot be planned
on the robot (its TCPs cannot follow the lines inside their joint limits and workspace, or
start in collision: the planner's typed reason; the box is then only held). A carry the
planner refuses on a robot (a line through a wrist singularity, out of the workspace) is
followed by the others of ``other_translations_m`` in turn: the report names the carry run
(``carry_m``) and each refused (``carries_refused``); ROB and OpenArm run the first. Any robot whose
arms have TCP kinematics (the ``cartesian_kinematics`` capability: ROB, OpenArm v2, robot
files) runs it. Simulated figures (``hardware_io: false``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from rob_twin.models.names import Arm
from rob_twin.planners.errors import PlanFailedError
from rob_twin.twin.errors import TwinInputError
from rob_twin.twin.rehearsal.gates import GateResult, RehearsalConfig
from rob_twin.twin.sim.held_carry import (
    ClosedChainError,
    carry_duration,
    carry_plan,
    dispatch_carry,
)
from rob_twin.twin.sim.held_object import BOX, HeldBoxConfig, held_closed_loop
from rob_twin.twin.sim.held_record import HeldObjectLimits, HeldRecorder


@dataclass(frozen=True)
class HeldGateConfig:
    """box: the held box; limits: the verdict's limits; translation_m: the carry (both TCPs,
    base frame) [m]; other_translations_m: the carries tried in turn when the planner
    refuses ``translation_m`` on a robot (its TCP lines cross a singularity or leave the
    workspace: a line, not the robot, is then at fault), each named in the report; skew_s:
    how late the left arm's commands start [s]; settle_s: time before the grasp and between
    grasp and carry [s]."""

    box: HeldBoxConfig = field(default_factory=HeldBoxConfig)
    limits: HeldObjectLimits = field(default_factory=HeldObjectLimits)
    translation_m: tuple[float, float, float] = (0.05, 0.0, 0.10)
    other_translations_m: tuple[tuple[float, float, float], ...] = (
        (0.0, 0.0, 0.10),
        (0.05, 0.0, 0.0),
        (-0.05, 0.0, 0.10),
        (0.0, 0.0, -0.08),
    )
    skew_s: float = 0.0
    settle_s: float = 0.2

    def __post_init__(self) -> None:
        if not (math.isfinite(self.skew_s) and 0.0 <= self.skew_s <= 1.0):
            raise TwinInputError("skew_s", self.skew_s, "in [0, 1] s")
        if not (math.isfinite(self.settle_s) and 0.0 < self.settle_s <= 5.0):
            raise TwinInputError("settle_s", self.settle_s, "in (0, 5] s")


def default_config() -> HeldGateConfig:
    return HeldGateConfig()


def held_carry_run(cfg: RehearsalConfig, held: HeldGateConfig) -> dict:
    """Run the carry of ``held`` on ``cfg.base``'s robot; the recorder's summary plus the
    owners' faults, the carry's duration and the peak internal force and squeeze from the
    carry's start on (the summary's own peaks include the grasp). A carry the planner refuses
    (PlanFailedError, ClosedChainError) is a failure naming its reason; the box is then held
    for ``settle_s`` (``carry_s`` 0)."""
    loop, obj = held_closed_loop(cfg.base, held.box)
    unplanned = None
    with loop:
        rec = HeldRecorder(loop, obj)
        loop.run_for(held.settle_s)
        inside = obj.penetrations()  # the box on its stand, before the grasp
        size = [round(2.0 * float(v), 4) for v in loop.twin.model.geom(BOX).size]
        obj.grasp()
        loop.run_for(held.settle_s)
        plan, carry, refused = None, None, []
        for translation in (held.translation_m, *held.other_translations_m):
            try:
                plan, carry = carry_plan(loop, translation), list(translation)
                break
            except (PlanFailedError, ClosedChainError) as err:
                refused.append(f"carry {list(translation)} m not planned: {err}")
        if plan is None:
            unplanned = "; ".join(refused)
        start = loop.time
        if plan is not None:
            dispatch_carry(loop, plan, start, {Arm.LEFT: held.skew_s})
            loop.run_for(carry_duration(plan) + held.skew_s + held.settle_s)
        else:
            loop.run_for(held.settle_s)
        summary = rec.summary(held.limits)
        a = rec.arrays()
        during = a["t"] >= start
        summary["carry_peak_internal_force_n"] = float(a["internal_norm"][during].max())
        summary["carry_peak_squeeze_n"] = float(
            a["squeeze"][during][abs(a["squeeze"][during]).argmax()]
        )
        faults = {a.value: d.owner.fault.value for a, d in loop.drivers.items() if d.owner.fault}
    summary["owner_faults"] = faults
    summary["carry_s"] = carry_duration(plan) if plan is not None else 0.0
    summary["carry_m"] = carry  # the carry run (None: none planned)
    summary["carries_refused"] = refused
    summary["skew_s"] = held.skew_s
    if inside:
        summary["passed"] = False
        deep = ", ".join(f"{g} {v * 1e3:.1f} mm" for g, v in sorted(inside.items()))
        summary["failures"].append(
            f"the box at its load pose ({size} m, between the hands at home) penetrates "
            f"{deep}: give this robot a HeldBoxConfig (size_m, position_m) that fits"
        )
    if unplanned is not None:
        summary["passed"] = False
        summary["failures"].append(unplanned)
    if faults:
        summary["passed"] = False
        summary["failures"].append(f"owner faults latched: {faults}")
    return summary


def gate_held_object(cfg: RehearsalConfig, held: HeldGateConfig | None = None) -> GateResult:
    """The gate (see the module docstring)."""
    held = held or default_config()
    lim = held.limits
    requirement = (
        f"both hands carry a {held.box.mass_kg} kg box {list(held.translation_m)} m (or the "
        f"first of {len(held.other_translations_m)} other carries the planner allows) in "
        f"lockstep (left skew {held.skew_s * 1e3:g} ms): internal force <= "
        f"{lim.internal_force_n} N, every joint torque <= {lim.torque_fraction} of its "
        "range, no grasp slip, no owner fault"
    )
    try:
        s = held_carry_run(cfg, held)
    except TwinInputError as err:  # no box fits between this robot's hands: a misfit, named
        return GateResult(
            name="held_object", passed=False, figures={}, requirement=requirement, detail=str(err)
        )
    return GateResult(
        name="held_object",
        passed=s["passed"],
        figures={k: v for k, v in s.items() if k not in ("hardware_io", "figures")},
        requirement=requirement,
        detail="; ".join(s["failures"])
        + (
            " (calibration not applied to the held-object scene)"
            if cfg.base.calibration is not None
            else ""
        ),
    )

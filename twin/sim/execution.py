"""Run a planners ``Plan`` through the closed loop with the synchronized executor, then
re-check what was *executed*.

``execute_plan(loop, plan)`` hands the plan's arrays (one shared 125 Hz time base) to a
``rob_twin.controllers.executor.SyncExecutor`` over the loop's two owners and runs it in lockstep:
``Execution.on_tick`` is registered on ``ClosedLoop.on_tick``, so after each owner tick the
published commanded state is recorded and the target for the next tick is submitted.
``run_plan(loop, group, plan)`` also re-checks every published commanded state (both
arms at the same owner tick) with the planner's own collision checker and reports
clearance, states below the planner's margin, colliding states (distance < 0), tracking
deviation from the plan and start skew.

Units: seconds, radians, metres.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
from rob_twin.controllers.executor import ExecutionReport, ExecutorConfig, Outcome, SyncExecutor
from rob_twin.controllers.executor import default_config as default_executor_config
from rob_twin.models.names import Arm
from rob_twin.planners.collision import CheckSession
from rob_twin.planners.group import ArmGroup
from rob_twin.planners.plan import Plan
from rob_twin.twin.sim.closed_loop import ClosedLoop


def plan_arrays(plan: Plan) -> dict[Arm, tuple]:
    """``{arm: (t, q, qd, qdd)}`` of the plan's moving arms (planner arm names are
    ``Arm`` values: ``right``/``left``)."""
    return {Arm.parse(a): (plan.t, tr.q, tr.qd, tr.qdd) for a, tr in plan.arms.items()}


def loop_executor_config(loop: ClosedLoop) -> ExecutorConfig:
    """The executor's defaults with the lookahead at one owner period of ``loop`` (the rule
    of ``rob_twin.controllers.executor.default_config``: 5 ms at ROB's 200 Hz, 2 ms at the 500 Hz of
    the OpenArm-class robot, where a longer lookahead lets Ruckig run ahead of the plan)."""
    return replace(default_executor_config(), lookahead_s=loop.config.owner.period_s)


def execute_arrays(
    loop: ClosedLoop,
    arrays: Mapping,
    config: ExecutorConfig | None = None,
    timeout_s: float | None = None,
    executor: SyncExecutor | None = None,
) -> ExecutionReport:
    """Execute ``{arm: (t, q, qd, qdd)}`` through ``loop`` in lockstep; return the report.

    timeout_s: simulated time allowed [s] (default: lead + duration + settle + 1 s)."""
    ex_ = executor or SyncExecutor(
        {a: d.owner for a, d in loop.drivers.items()},
        loop.clock,
        config or loop_executor_config(loop),
    )
    ex = ex_.begin(arrays)
    if ex.done:
        return ex.report()
    c = ex_.config
    limit = (
        timeout_s
        if timeout_s is not None
        else (c.lead_time_s + ex.trajectory.duration_s + c.settle_timeout_s + 1.0)
    )
    loop.on_tick.append(ex.on_tick)
    try:
        if not loop.run_until(lambda: ex.done, limit):
            ex.abort(f"not finished within {limit:.3f} s of simulated time")
    finally:
        loop.on_tick.remove(ex.on_tick)
    return ex.report()


def execute_plan(
    loop: ClosedLoop,
    plan: Plan,
    config: ExecutorConfig | None = None,
    timeout_s: float | None = None,
) -> ExecutionReport:
    return execute_arrays(loop, plan_arrays(plan), config, timeout_s)


def executed_states(
    report: ExecutionReport, hold: Mapping[Arm, np.ndarray]
) -> tuple[np.ndarray, dict]:
    """Common owner-tick stamps [s] and each arm's commanded q [rad] at them (N, 7).

    Arms without a record in ``report`` take ``hold`` (their owner's held position); an arm
    that did not publish at a stamp keeps its previous commanded state."""
    stamps = np.unique(np.concatenate([r.stamps_s for r in report.arms.values()] or [np.zeros(0)]))
    out = {}
    for arm in Arm:
        r = report.arms.get(arm)
        if r is None or r.stamps_s.size == 0:
            out[arm] = np.repeat(np.asarray(hold[arm], float)[None, :], stamps.size, axis=0)
            continue
        k = np.clip(np.searchsorted(r.stamps_s, stamps, "right") - 1, 0, r.stamps_s.size - 1)
        out[arm] = r.positions_rad[k]
    return stamps, out


def clearance_along(
    session: CheckSession, states: Mapping[Arm, np.ndarray], every: int = 1
) -> np.ndarray:
    """Clearance [m] (inf beyond the checker's horizon) of every ``every``-th state; the
    session's moving arms are stacked in its order (``right``, ``left``)."""
    q = np.hstack([states[Arm.parse(a)] for a in session.moving])
    return np.array([session.clearance(q[i]).distance_m for i in range(0, q.shape[0], every)])


@dataclass(frozen=True)
class ExecutedPlan:
    """What ran: the executor's report, the common stamps [s], both arms' commanded q
    [rad], the planner checker's clearance [m] at every stamp, states below the planner's
    margin, colliding states (clearance < 0), tracking deviation [rad], start skew [s]."""

    report: ExecutionReport
    stamps_s: np.ndarray
    states: dict[Arm, np.ndarray]
    clearance_m: np.ndarray
    below_margin: int
    colliding: int
    min_clearance_m: float
    max_deviation_rad: float
    start_skew_s: float | None
    max_start_offset_s: float | None

    @property
    def ok(self) -> bool:
        return self.report.outcome is Outcome.COMPLETED


def run_plan(
    loop: ClosedLoop, group: ArmGroup, plan: Plan, config: ExecutorConfig | None = None
) -> ExecutedPlan:
    """Execute ``plan`` through ``loop`` and re-check every published commanded state
    with ``group``'s own checker (margin ``group.config.collision.margin_m``)."""
    hold = {a: loop.commanded(a) for a in Arm}
    report = execute_plan(loop, plan, config)
    stamps, states = executed_states(report, hold)
    session = group.meter.session(tuple(a.value for a in Arm), group.reference_qpos)
    clear = clearance_along(session, states)
    margin = group.config.collision.margin_m
    return ExecutedPlan(
        report=report,
        stamps_s=stamps,
        states=states,
        clearance_m=clear,
        below_margin=int((clear < margin).sum()),
        colliding=int((clear < 0).sum()),
        min_clearance_m=float(clear.min()) if clear.size else np.inf,
        max_deviation_rad=report.max_deviation_rad,
        start_skew_s=report.start_skew_s,
        max_start_offset_s=report.max_start_offset_s,
    )

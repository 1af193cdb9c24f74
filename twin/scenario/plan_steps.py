"""Planned moves in scenarios: ArmGroup plans, executed in sync through the owners.

A scenario's ``"plans"`` entry lists steps::

    "plans": [{"t": 0.5, "goals": {"right": [7 rad], "left": [7 rad]}, "seed": 0}]

At ``t`` [s] the arms named in ``goals`` are planned together (``planners.ArmGroup``,
both arms checked against each other and the world at every retimed sample; an arm not
named stays locked where its owner holds it), from the owners' commanded state, and the
plan is executed by the synchronized executor (one start stamp, one shared cancel) over
the same closed loop as everything else. A step whose time comes while an earlier plan
is still running waits for it. Each step's outcome lands in the run summary.

A step may instead name a plan file (``rob-twin plan --out``): ``{"t": 0.5, "plan":
"plan.json"}`` executes that plan as written (no planning), after checking that it was
certified on this model; it must start where the owners are (the executor's start check).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from rob_twin.controllers.executor import Execution, SyncExecutor
from rob_twin.models.names import Arm
from rob_twin.planners.certificate_geometry import model_hash
from rob_twin.planners.group import ArmGroup, GroupConfig
from rob_twin.planners.plan import Plan
from rob_twin.planners.plan_file import PlanFileError, load_plan_file, plan_from_document
from rob_twin.twin.sim.closed_loop import ClosedLoop
from rob_twin.twin.sim.execution import loop_executor_config, plan_arrays


@dataclass(frozen=True)
class PlanStep:
    """Plan the arms in ``goals`` ({arm: 7 joint angles [rad]}) at ``t`` [s] with ``seed``;
    or, with ``plan_file``, execute that file's plan (``stored``, its model hash in
    ``stored_hash``; ``goals`` then holds its last sample per arm)."""

    t: float
    goals: dict[Arm, np.ndarray]
    seed: int = 0
    plan_file: str | None = None
    stored: Plan | None = field(default=None, compare=False, repr=False)
    stored_hash: str = ""


def plan_step_of(step) -> PlanStep:
    """The PlanStep of a scenario file's step (``rob_twin.twin.scenario.schema.PlanStep``):
    its goals, or the plan file it names, read and validated (PlanFileError otherwise)."""
    if step.plan is None:
        goals = {Arm(a): np.array(q, float) for a, q in step.goals.items()}
        return PlanStep(step.t, goals, step.seed)
    doc = load_plan_file(step.plan)
    plan = plan_from_document(doc)
    goals = {Arm(a): tr.q[-1].copy() for a, tr in plan.arms.items()}
    return PlanStep(step.t, goals, step.seed, step.plan, plan, doc["certificate"]["model_hash"])


def planning_config() -> GroupConfig:
    """Plans stay inside the twin owners' limits (v 1.0, a 3.0, jerk 30 per joint) with
    headroom for Ruckig to follow: v 0.9 rad/s, a 2.5 rad/s^2, jerk 15 rad/s^3."""
    return GroupConfig(velocity=0.9, acceleration=2.5, jerk=15.0)


class PlanRunner:
    """Runs ``steps`` on ``loop`` (a scheduler task at the owners' rate); ``results`` holds
    one dict per step: planning status, execution outcome and figures (simulated)."""

    def __init__(self, loop: ClosedLoop, steps: list[PlanStep], config: GroupConfig | None = None):
        self.loop = loop
        self.steps = sorted(steps, key=lambda s: s.t)
        self.group = ArmGroup.for_loop(loop, config or planning_config())
        self.executor = SyncExecutor(
            {a: d.owner for a, d in loop.drivers.items()}, loop.clock, loop_executor_config(loop)
        )
        self.results: list[dict] = []
        self.executed: list[tuple[PlanStep, object]] = []  # (step, planners Plan) started
        self._next = 0
        self._last: PlanStep | None = None
        self._active: tuple[Execution, dict] | None = None
        loop.twin.scheduler.add("plans", loop.config.owner_rate_hz, self._task)

    def _task(self, now: float) -> None:
        if self._active is not None:
            ex, row = self._active
            if not ex.done:
                return
            self._finish(ex, row)
        if self._next < len(self.steps) and now + 1e-9 >= self.steps[self._next].t:
            step = self.steps[self._next]
            self._next += 1
            self._start(step, now)

    def _start(self, step: PlanStep, now: float) -> None:
        g = self.group
        row: dict = {
            "t": round(step.t, 4),
            "started_s": round(now, 4),
            "arms": [a.value for a in step.goals],
        }
        if step.stored is not None:
            plan = self._stored(step, row)
            if plan is None:
                return
        else:
            try:  # from the owners' commanded state (a for_loop group takes it at every plan)
                result = g.plan({a.value: q for a, q in step.goals.items()}, seed=step.seed)
            except ValueError as err:  # a goal or commanded state outside the limits, a shape
                self.results.append({**row, "status": "invalid_goal", "reason": str(err)})
                return
            self._last = step
            row["status"] = result.status.value
            if not result.ok:
                self.results.append({**row, "reason": result.reason})
                return
            plan = result.plan
        row.update(
            {
                "plan_duration_s": round(plan.duration_s, 4),
                "plan_min_clearance_m": round(float(plan.min_clearance.distance_m), 5),
                "planning_s": round(plan.stage_times_s.get("total", 0.0), 4),
            }
        )
        self.executed.append((step, plan))
        ex = self.executor.begin(plan_arrays(plan))
        if ex.done:  # acquisition failed: every arm released
            self._finish(ex, row)
            return
        self.loop.on_tick.append(ex.on_tick)
        self._active = (ex, row)

    def _stored(self, step: PlanStep, row: dict) -> Plan | None:
        """The plan file's plan when it was certified on this loop's model, else None with
        the step's row recorded as ``invalid_plan_file``."""
        row["plan_file"] = step.plan_file
        here = model_hash(self.group.model)
        if step.stored_hash != here:
            reason = (
                f"plan file {step.plan_file} was certified on model {step.stored_hash}, "
                f"not this loop's {here}"
            )
            self.results.append({**row, "status": "invalid_plan_file", "reason": reason})
            return None
        row["status"] = "success"
        return step.stored

    def _finish(self, ex: Execution, row: dict) -> None:
        if ex.on_tick in self.loop.on_tick:
            self.loop.on_tick.remove(ex.on_tick)
        rep = ex.report()
        row.update(
            {
                "outcome": rep.outcome.value,
                "reason": rep.reason,
                "start_skew_s": rep.start_skew_s,
                "max_deviation_rad": round(rep.max_deviation_rad, 6),
            }
        )
        self.results.append(row)
        self._active = None

    # ------------------------------------------------------------- live control
    def run_next_now(self) -> PlanStep | None:
        """Start the next step at the next tick instead of at its time (after the plan now
        executing, if any); None when no step is left."""
        if self._next >= len(self.steps):
            return None
        step = self.steps[self._next] = replace(self.steps[self._next], t=0.0)
        return step

    def replan(self, seed: int | None = None) -> PlanStep | None:
        """Plan the last started step again from where the arms are now, with ``seed``
        (default: its seed + 1), at the next tick; None when no step was started yet."""
        if self._last is None:
            return None
        step = replace(self._last, t=0.0, seed=self._last.seed + 1 if seed is None else seed)
        self.steps.insert(self._next, step)
        return step

    def abort_active(self, why: str) -> bool:
        """Abort the plan executing now (its row says ``why``); False when none is."""
        if self._active is None:
            return False
        ex, row = self._active
        ex.abort(why)
        self._finish(ex, row)
        return True

    def status(self, now: float) -> dict:
        """What the planner is doing at ``now`` [s]: ``state`` (``executing``, ``waiting``
        for a step's time, ``idle`` with no step left), the step number, the active or
        last plan's clearance [m], its progress (0..1) and the last finished row."""
        out: dict = {
            "steps": len(self.steps),
            "next_step": self._next,
            "last": self.results[-1] if self.results else None,
        }
        if self._active is not None:
            ex, row = self._active
            duration = max(row.get("plan_duration_s", 0.0), 1e-9)
            out.update(
                state="executing",
                step=self._next,
                clearance_m=row.get("plan_min_clearance_m"),
                progress=min(1.0, max(0.0, (now - row["started_s"]) / duration)),
            )
        elif self._next < len(self.steps):
            out.update(state="waiting", step=self._next + 1, at_s=self.steps[self._next].t)
        else:
            out.update(state="idle")
        return out

    def close(self, why: str = "the scenario ended") -> None:
        """End of the run (``why``: what ended it): report a plan still executing as
        unfinished and the steps not reached as not started."""
        if self._active is not None:
            ex, row = self._active
            ex.abort(f"{why} before the plan finished")
            self._finish(ex, row)
        for step in self.steps[self._next :]:
            self.results.append(
                {
                    "t": step.t,
                    "arms": [a.value for a in step.goals],
                    "status": "not_started",
                    "reason": f"{why} first",
                }
            )


def failed_steps(results: list[dict]) -> list[dict]:
    """The plan steps that did not plan and complete (invalid goal, no plan found,
    execution aborted or failed, never started)."""
    return [r for r in results if r.get("status") != "success" or r.get("outcome") != "completed"]


def scenario_for_plan_file(path, lead_s: float = 0.5, tail_s: float = 1.5) -> dict:
    """A scenario document (``rob_twin.twin.scenario.schema``) that executes the plan file at
    ``path``: every arm joint starts where the plan does (its reference state, the moving
    arms at their first sample), the plan starts at ``lead_s`` [s] and the run ends
    ``tail_s`` [s] after it. What ``rob-twin view --plan`` shows. PlanFileError for a
    file that is not a valid plan."""
    from rob_twin.models.loading import load_scene

    doc = load_plan_file(path)
    model = load_scene()
    known = {model.joint(i).name for i in range(model.njnt)}
    ref = doc["reference_qpos"]
    if len(ref) != model.nq:
        raise PlanFileError(str(path), "reference_qpos", f"{len(ref)} entries", f"{model.nq}")
    initial = {
        j: float(ref[model.jnt_qposadr[model.joint(j).id]])
        for joints in doc["arms"].values()
        for j in joints
        if j in known
    }
    for arm in doc["moving"]:
        for j, value in zip(doc["joint_names"][arm], doc["q_rad"][arm][0], strict=True):
            initial[j] = float(value)
    duration = lead_s + float(doc["t_s"][-1]) + tail_s
    return {
        "name": "plan",
        "duration": round(duration, 3),
        "initial": initial,
        "plans": [{"t": lead_s, "plan": str(Path(path).resolve())}],
    }

"""Captions of a scenario video, like the demo's: what is happening at each frame.

Lines (``scenario_captions(sc, owner_faults)(now, planner)``): the scenario's name and the
simulated time; the step (keyframes reached per arm, or the plan step and its progress);
the plan's clearance [mm] while one executes; the held box (who holds it, its internal force
and squeeze, red past its limit); the injected faults in force; and, in red
(a leading ``!``, ``rob_twin.twin.render.captions``), every owner fault latched so far.
"""

from __future__ import annotations

from collections.abc import Callable

from rob_twin.models.names import Arm
from rob_twin.twin.scenario.plan_steps import PlanRunner
from rob_twin.twin.scenario.run import Scenario

OwnerFaults = Callable[[], dict[str, str]]
"""Latched owner faults now: {arm: fault kind}, empty while none latched."""


def _step_line(sc: Scenario, now: float, planner: PlanRunner | None) -> list[str]:
    lines = []
    if planner is not None:
        st = planner.status(now)
        if st["state"] == "executing":
            lines.append(
                f"plan step {st['step'] + 1}/{st['steps']}: executing {100 * st['progress']:3.0f} %"
            )
            if st.get("clearance_m") is not None:
                lines.append(f"plan clearance {1000 * st['clearance_m']:.1f} mm")
        elif st["state"] == "waiting":
            last = st.get("last")
            done = f"; last: {last.get('outcome') or last.get('status')}" if last else ""
            lines.append(f"plan step {st['step']}/{st['steps']} at {st['at_s']:.1f} s{done}")
        else:
            last = st.get("last") or {}
            lines.append(f"plans done: last {last.get('outcome') or last.get('status', '-')}")
    arms = []
    for arm in Arm:
        frames = [k for k in sc.keyframes if k.arm is arm]
        if frames:
            reached = sum(k.t <= now for k in frames)
            arms.append(f"{arm.value} {reached}/{len(frames)}")
    if arms:
        lines.append("keyframes reached: " + ", ".join(arms))
    return lines


def _fault_lines(sc: Scenario, now: float, owner_faults: OwnerFaults | None) -> list[str]:
    active = [f"{f.kind.value} on {f.arm.value}" for f in sc.faults if f.active(now)]
    lines = ["injected: " + ", ".join(active)] if active else []
    latched = owner_faults() if owner_faults is not None else {}
    lines += [f"!{arm} owner FAULT latched: {kind}" for arm, kind in latched.items()]
    return lines


def scenario_captions(
    sc: Scenario,
    owner_faults: OwnerFaults | None = None,
    held: Callable[[], list[str]] | None = None,
) -> Callable[[float, PlanRunner | None], list[str]]:
    """The caption lines of ``sc`` at simulated time ``now`` [s]; ``held``: the held box's
    lines (``HeldScript.caption``)."""

    def captions(now: float, planner: PlanRunner | None) -> list[str]:
        head = f"{sc.name} (simulated)   t = {now:5.2f} / {sc.duration:.2f} s"
        box = held() if held is not None else []
        lines = _step_line(sc, now, planner)
        return [head, *lines, *box, *_fault_lines(sc, now, owner_faults)]

    return captions

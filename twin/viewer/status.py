"""What the viewer shows on screen: owners, buses, planner and the sim/wall time factor.

``StatusBoard`` watches a closed loop (the owners' tick reports, the transports'
counters) and a PlanRunner, and renders the live status as text lines: per arm the
owner mode, generation, fault and its reason, the age of the last published sample
[ms, simulated] and the bus frames per second [simulated]; the plan step, its clearance
and progress; the simulated vs wall time factor. It draws nothing itself (no display
needed): the viewer puts ``lines()`` into MuJoCo's overlay.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from rob_twin.controllers.owner_types import TickReport
from rob_twin.models.names import Arm
from rob_twin.twin.scenario.plan_steps import PlanRunner
from rob_twin.twin.sim.closed_loop import ClosedLoop

RATE_WINDOW_S = 0.5  # simulated seconds over which the bus frame rate is measured


@dataclass
class _Rate:
    """Frames per simulated second, over windows of ``RATE_WINDOW_S``."""

    t0: float = 0.0
    n0: int = 0
    per_s: float = 0.0

    def update(self, now: float, count: int) -> float:
        if now - self.t0 >= RATE_WINDOW_S:
            self.per_s = (count - self.n0) / (now - self.t0)
            self.t0, self.n0 = now, count
        return self.per_s


@dataclass
class StatusBoard:
    """Live status of ``loop`` (and ``planner``); ``wall_clock`` is injectable for tests."""

    loop: ClosedLoop
    planner: PlanRunner | None = None
    wall_clock: object = time.perf_counter
    last_published_s: dict[Arm, float | None] = field(default_factory=dict)
    _rates: dict[Arm, _Rate] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.last_published_s = {arm: None for arm in Arm}
        self._rates = {arm: _Rate(t0=self.loop.time) for arm in Arm}
        self._wall0, self._sim0 = self.wall_clock(), self.loop.time
        self.loop.on_tick.append(self._on_tick)

    def _on_tick(self, arm: Arm, report: TickReport) -> None:
        if report.published:
            self.last_published_s[arm] = report.stamp_s

    def close(self) -> None:
        if self._on_tick in self.loop.on_tick:
            self.loop.on_tick.remove(self._on_tick)

    def time_factor(self) -> float:
        """Simulated seconds per wall second since the board started."""
        wall = self.wall_clock() - self._wall0
        return (self.loop.time - self._sim0) / wall if wall > 0 else 0.0

    def arm_figures(self, arm: Arm) -> dict:
        """The figures of one arm: mode, generation, fault, reason, sample age, frames/s."""
        drv = self.loop.drivers[arm]
        owner, now = drv.owner, self.loop.time
        last = self.last_published_s[arm]
        return {
            "mode": owner.mode.value,
            "generation": owner.generation,
            "fault": owner.fault.value if owner.fault else None,
            "reason": owner.fault_reason,
            "sample_age_ms": None if last is None else 1000.0 * (now - last),
            "frames_per_s": self._rates[arm].update(now, drv.transport.counters.frames_sent),
        }

    def lines(self) -> list[str]:
        """The status, one line per item (arms, planner, time)."""
        out = []
        for arm in Arm:
            f = self.arm_figures(arm)
            age = "-" if f["sample_age_ms"] is None else f"{f['sample_age_ms']:.0f} ms"
            line = (
                f"{arm.value:5s} {f['mode'].upper():8s} gen {f['generation']}  sample age {age}"
                f"  bus {f['frames_per_s']:.0f} frames/s"
            )
            if f["fault"]:
                line += f"  FAULT {f['fault']}: {f['reason']}"
            out.append(line)
        out.append(self.plan_line())
        out.append(f"sim t {self.loop.time:6.2f} s  sim/wall {self.time_factor():.2f}x")
        return out

    def plan_line(self) -> str:
        if self.planner is None:
            return "plans: none in this scenario"
        st = self.planner.status(self.loop.time)
        if st["state"] == "executing":
            return (
                f"plan step {st['step']}/{st['steps']} executing {100 * st['progress']:.0f} %"
                f"  clearance {1000 * (st['clearance_m'] or 0):.1f} mm"
            )
        last = st["last"]
        tail = ""
        if last is not None:
            tail = f"  last: {last.get('status')} {last.get('outcome', '')}".rstrip()
            if last.get("plan_min_clearance_m") is not None:
                tail += f", clearance {1000 * last['plan_min_clearance_m']:.1f} mm"
        if st["state"] == "waiting":
            return f"plan step {st['step']}/{st['steps']} waits for t = {st['at_s']:.2f} s{tail}"
        return f"plans: all {st['steps']} steps done{tail}"

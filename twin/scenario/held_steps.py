"""Scenario steps for a held object: the box, grasps/releases and lockstep carries.

::

    "held_object": {"size": [0.12, 0.34, 0.10], "mass": 1.0, "grip_force": 20.0,
                    "friction": 1.2, "max_internal_force": 10.0, "torque_fraction": 0.9},
    "grasps": [{"t": 0.3, "action": "grasp", "hands": ["right", "left"]},
               {"t": 4.0, "action": "release", "hands": ["left"]}],
    "carries": [{"t": 0.8, "translate": [0.05, 0.0, 0.10], "skew_ms": 0.0}]

The scene gets the box (``rob_twin.twin.sim.held_object``: weld grasps, midway between the
hands at home, on its stand until grasped). At a grasp/release step's ``t`` [s] the named
hands (default both) weld to the box or let go. The grippers show it
(``rob_twin.twin.sim.held_fingers``): a hand whose fingers the box lies between waits with
them open from the start, closes them at its grasp to ``GAP_M`` short of the box (the weld
carries it: no finger touches it) and opens them at its release; a hand the box is not
between, or without a gripper, keeps its fingers as they are (the grasp step's ``fingers``
says why). At a carry step's ``t`` both TCPs are planned
along one lockstep Cartesian move by ``translate`` [m] (base frame) from the owners' commanded
positions and streamed to the owners, the left arm ``skew_ms`` late
(``rob_twin.twin.sim.held_carry``); an arm that carries has no keyframes or plans. The run
records the box's forces and the arms' torques every physics step
(``rob_twin.twin.sim.held_record``); ``held_object`` in the summary gives the peaks and the
verdict, which fails the run when the internal force or a joint torque exceeds its limit or
a grasp slips; ``held_object.png`` plots them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import Arm
from rob_twin.twin.sim.held_carry import carry_duration, carry_plan, dispatch_carry
from rob_twin.twin.sim.held_fingers import (
    Gripper,
    GripperRamp,
    finger_target,
    gripper_of,
    set_gripper,
)
from rob_twin.twin.sim.held_object import BOX, HeldBoxConfig, HeldObject
from rob_twin.twin.sim.held_record import HeldObjectLimits, HeldRecorder


@dataclass(frozen=True)
class HeldSpec:
    """The scenario's held box and its limits."""

    box: HeldBoxConfig
    limits: HeldObjectLimits


@dataclass(frozen=True)
class GraspStep:
    t: float  # [s]
    action: str  # "grasp" or "release"
    hands: tuple[str, ...]


@dataclass(frozen=True)
class CarryStep:
    t: float  # [s]
    translate: tuple[float, float, float]  # [m], base frame
    skew_ms: float = 0.0  # left arm's commands late by this [ms]


def held_spec_of(m) -> HeldSpec:
    """The HeldSpec of a scenario file's ``held_object`` (``schema.HeldObjectSpec``)."""
    box = HeldBoxConfig(
        size_m=tuple(m.size), mass_kg=m.mass, grip_force_n=m.grip_force, friction=m.friction
    )
    return HeldSpec(box, HeldObjectLimits(m.max_internal_force, m.torque_fraction))


class HeldScript:
    """Plays grasp and carry steps on a loop built on ``held_scene``; records the box."""

    def __init__(self, loop, spec: HeldSpec, grasps: list[GraspStep], carries: list[CarryStep]):
        self.loop, self.spec = loop, spec
        twin = loop.twin
        self.held = HeldObject(twin.model, twin.data, spec.box, getattr(loop, "gravity", None))
        self.recorder = HeldRecorder(loop, self.held)
        self.steps = sorted([*grasps, *carries], key=lambda s: s.t)
        self.done: list[dict] = []
        self._next = 0
        self.box_geoms = [twin.model.geom(BOX).id]
        self.ramps: dict[Arm, GripperRamp] = {}
        self.closed: dict[Arm, Gripper] = {}  # the grippers this script closed on the box
        self._open_around_box()
        twin.scheduler.add("held/steps", 1.0 / twin.scheduler.dt, self._tick)

    def _open_around_box(self) -> None:
        """Open, in the start state, the grippers the box lies between (their fingers would
        otherwise sit inside it until the grasp); the others are left as they are."""
        m, d = self.loop.twin.model, self.loop.twin.data
        for arm in Arm:
            if finger_target(m, d, arm, self.box_geoms).target is None:
                continue
            g, _ = gripper_of(m, d, arm)
            set_gripper(m, d, g, g.opened)
            d.ctrl[g.actuator] = g.gear * g.opened

    def _fingers(self, step: GraspStep, now: float) -> dict:
        """Start the grippers' ramps of a grasp (to their stop short of the box) or a release
        (open again: the hands this script closed); {hand: what was done} for the summary."""
        m, d = self.loop.twin.model, self.loop.twin.data
        out = {}
        for arm in dict.fromkeys(Arm.parse(h) for h in step.hands):
            if step.action == "grasp":
                target = finger_target(m, d, arm, self.box_geoms)
                out[arm.value] = target.as_dict()
                g = gripper_of(m, d, arm)[0] if target.target is not None else None
                end = target.target
            else:
                g = self.closed.get(arm)
                end = g.opened if g is not None else None
                why = {} if g is not None else {"reason": "its grasp did not close the fingers"}
                out[arm.value] = {"target": end, **why}
            if g is None:
                self.closed.pop(arm, None)
                continue
            if step.action == "grasp":
                self.closed[arm] = g
            else:
                del self.closed[arm]
            self.ramps[arm] = GripperRamp(g.actuator, float(d.ctrl[g.actuator]), g.gear * end, now)
        return out

    def _tick(self, now: float) -> None:
        self._play_steps(now)
        d = self.loop.twin.data
        for arm in [a for a, ramp in self.ramps.items() if ramp.apply(d, now)]:
            del self.ramps[arm]

    def _play_steps(self, now: float) -> None:
        while self._next < len(self.steps) and self.steps[self._next].t <= now + 1e-9:
            step = self.steps[self._next]
            self._next += 1
            if isinstance(step, GraspStep):
                getattr(self.held, step.action)(step.hands)
                fingers = self._fingers(step, now)
                self.done.append(
                    {
                        "t": step.t,
                        "action": step.action,
                        "hands": list(step.hands),
                        "fingers": fingers,
                    }
                )
                continue
            try:
                plan = carry_plan(self.loop, step.translate)
            except RobTwinError as err:  # reported in the summary; the run goes on
                self.done.append({"t": step.t, "action": "carry", "error": str(err)})
                continue
            dispatch_carry(self.loop, plan, now, {Arm.LEFT: step.skew_ms * 1e-3})
            self.done.append(
                {
                    "t": step.t,
                    "action": "carry",
                    "translate_m": list(step.translate),
                    "skew_ms": step.skew_ms,
                    "duration_s": carry_duration(plan),
                }
            )

    def caption(self) -> list[str]:
        """Caption lines: who holds the box, its internal force and squeeze now [N] (a
        leading ``!``, red, past the limit or while a grasp slips)."""
        holding = self.held.holding
        if not holding:
            return ["box on its stand" if self.held.on_stand else "box not held"]
        w = self.held.wrench()
        limit = self.spec.limits.internal_force_n
        norm = float((w.internal_n**2).sum() ** 0.5)
        bad = norm > limit or any(w.slipping.values())
        slip = " SLIP" if any(w.slipping.values()) else ""
        return [
            f"{'!' if bad else ''}box held by {'+'.join(a.value for a in holding)}: internal "
            f"{norm:.1f} N (limit {limit:g}), squeeze {w.squeeze_n:+.1f} N{slip}"
        ]

    def summary(self, out_dir: Path | None = None) -> dict:
        """The recorder's summary (verdict under the scenario's limits), the steps done and,
        with ``out_dir``, the plot ``held_object.png``."""
        out = self.recorder.summary(self.spec.limits)
        out["steps"] = self.done
        errors = [d["error"] for d in self.done if "error" in d]
        if errors:
            out["passed"] = False
            out["failures"] = [*out["failures"], *(f"carry failed: {e}" for e in errors)]
        if out_dir is not None:
            png = self.recorder.plot(Path(out_dir) / "held_object.png")
            out["plot"] = str(png) if png is not None else None
        return out

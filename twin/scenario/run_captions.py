"""Captions of a scenario video, like the demo's: what is happening at each frame.

Lines (``scenario_captions(sc, owner_faults, held, positions, start_s)(now, planner)``): the
scenario's name and the simulated time out of the run's end (``start_s`` + the scenario's
duration: on a timed bus OpenArm's drives are brought up before the scenario's first step,
so its clock starts at ``start_s`` > 0, the bring-up shown beside it); the step (keyframes
reached per arm, or the plan step, 1 of n, and its progress); the plan's clearance [mm] while
one executes; the held box (who holds it, its internal force and squeeze, red past its
limit); the injected faults in force; and, in red (a leading ``!``,
``rob_twin.twin.render.captions``), every owner fault latched so far.

A keyframe counts as *reached* once its time has come and its arm was measured within
``KEYFRAME_TOLERANCE_RAD`` of it on every joint at some time between the keyframe before it
(the start of the blend toward it) and the keyframe after it (the end of the run for the
last one): a keyframe whose time has passed but which the arm never got to (an owner that
latched a fault and refused the targets) is not counted. ``keyframes_reached`` applies the
same rule to a run's logged joint angles (the summary's ``keyframes_reached``); without
``positions`` the captions say only how many keyframe times have passed, and call them that.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from rob_twin.models.names import Arm
from rob_twin.twin.scenario.plan_steps import PlanRunner
from rob_twin.twin.scenario.run import Scenario

OwnerFaults = Callable[[], dict[str, str]]
"""Latched owner faults now: {arm: fault kind}, empty while none latched."""

Positions = Callable[[Arm], np.ndarray]
"""An arm's measured joint angles now [rad] (``Twin.arm_positions``)."""

KEYFRAME_TOLERANCE_RAD = 0.05
"""How close [rad], on every joint, an arm must get to a keyframe for it to count as reached
(the scenarios' arms settle within 0.025 rad of theirs: OpenArm's gravity-compensated
Damiao drives, the loosest; an arm whose owner latched a fault stays tenths of a radian
off)."""


def _arm_frames(keyframes: Sequence, arm: Arm) -> list:
    return sorted((k for k in keyframes if k.arm is arm), key=lambda k: k.t)


def _window(frames: list, i: int) -> tuple[float, float]:
    """When keyframe ``i`` of one arm's sorted ``frames`` may be reached [s]: from the
    keyframe before it (0 for the first) until the keyframe after it (open for the last)."""
    start = frames[i - 1].t if i > 0 else -math.inf
    end = frames[i + 1].t if i + 1 < len(frames) else math.inf
    return start, end


def _close(q: np.ndarray, target: np.ndarray, tol: float) -> bool:
    q = np.asarray(q, float)
    return q.shape == np.shape(target) and bool(np.all(np.abs(q - target) <= tol))


class KeyframeProgress:
    """Which keyframes each arm has reached so far (the rule in this module's docstring),
    updated from ``positions`` at every ``update(now)``."""

    def __init__(
        self, keyframes: Sequence, positions: Positions, tol: float = KEYFRAME_TOLERANCE_RAD
    ):
        self.frames = {arm: _arm_frames(keyframes, arm) for arm in Arm}
        self.near = {arm: [False] * len(f) for arm, f in self.frames.items()}  # got within tol
        self.positions, self.tol = positions, tol
        self.now = -math.inf

    def update(self, now: float) -> None:
        self.now = now
        for arm, frames in self.frames.items():
            pending = [
                i
                for i in range(len(frames))
                if not self.near[arm][i] and _window(frames, i)[0] <= now + 1e-9
            ]
            if not pending:
                continue
            q = self.positions(arm)
            for i in pending:
                if now <= _window(frames, i)[1] + 1e-9 and _close(q, frames[i].q, self.tol):
                    self.near[arm][i] = True

    def counts(self) -> dict[Arm, tuple[int, int]]:
        """{arm: (keyframes reached, keyframes)} of the arms that have keyframes: a keyframe
        is reached when its time has come and its arm got within the tolerance of it."""
        return {
            arm: (
                sum(
                    n and k.t <= self.now + 1e-9
                    for n, k in zip(near, self.frames[arm], strict=True)
                ),
                len(near),
            )
            for arm, near in self.near.items()
            if near
        }


def keyframes_reached(
    keyframes: Sequence,
    times: np.ndarray,
    measured: dict[str, np.ndarray],
    tol: float = KEYFRAME_TOLERANCE_RAD,
    until_s: float | None = None,
) -> dict[str, dict]:
    """Per arm with keyframes, from a run's logged ``times`` [s] and ``measured`` joint
    angles ({arm: samples x joints} [rad]): ``{"reached": n, "keyframes": m,
    "missed_at_s": [times of the keyframes not reached]}`` (the rule in this module's
    docstring, ``tol`` [rad]); ``until_s``: when the run ended [s] (default: one logging
    period after the last sample), a keyframe after it was not reached."""
    times = np.asarray(times, float)
    if until_s is None:
        period = float(times[-1] - times[-2]) if times.size > 1 else 0.0
        until_s = float(times[-1]) + period if times.size else -math.inf
    out: dict[str, dict] = {}
    for arm in Arm:
        frames = _arm_frames(keyframes, arm)
        if not frames:
            continue
        q = np.asarray(measured.get(arm.value, np.zeros((0, 0))), float)
        missed = []
        for i, k in enumerate(frames):
            start, end = _window(frames, i)
            inside = (times >= start - 1e-9) & (times <= end + 1e-9)
            if q.ndim != 2 or q.shape[0] != times.size or q.shape[1] != np.size(k.q):
                missed.append(k.t)
                continue
            near = np.all(np.abs(q[inside] - k.q) <= tol, axis=1)
            if k.t > until_s + 1e-9 or not near.any():
                missed.append(k.t)
        out[arm.value] = {
            "reached": len(frames) - len(missed),
            "keyframes": len(frames),
            "missed_at_s": [round(float(t), 4) for t in missed],
        }
    return out


def _step_line(
    sc: Scenario, now: float, planner: PlanRunner | None, progress: KeyframeProgress | None
) -> list[str]:
    lines = []
    if planner is not None:
        st = planner.status(now)  # its "step" is 1-based: "1/2" is the first of two
        if st["state"] == "executing":
            lines.append(
                f"plan step {st['step']}/{st['steps']}: executing {100 * st['progress']:3.0f} %"
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
    if progress is not None:
        progress.update(now)
        arms = [f"{arm.value} {n}/{m}" for arm, (n, m) in progress.counts().items()]
        if arms:
            lines.append("keyframes reached: " + ", ".join(arms))
        return lines
    arms = []  # no measured angles: only the keyframe times passed can be told
    for arm in Arm:
        frames = [k for k in sc.keyframes if k.arm is arm]
        if frames:
            due = sum(k.t <= now for k in frames)
            arms.append(f"{arm.value} {due}/{len(frames)}")
    if arms:
        lines.append("keyframe times passed: " + ", ".join(arms))
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
    positions: Positions | None = None,
    start_s: float = 0.0,
) -> Callable[[float, PlanRunner | None], list[str]]:
    """The caption lines of ``sc`` at simulated time ``now`` [s]; ``held``: the held box's
    lines (``HeldScript.caption``); ``positions``: each arm's measured angles (keyframes
    reached; without it, keyframe times passed); ``start_s``: the simulated time the run
    starts at [s] (the run ends at ``start_s`` + ``sc.duration``; shown when > 0)."""
    progress = KeyframeProgress(sc.keyframes, positions) if positions is not None else None
    end = start_s + sc.duration
    bring_up = f" ({start_s:.2f} s bring-up)" if start_s >= 0.005 else ""

    def captions(now: float, planner: PlanRunner | None) -> list[str]:
        head = f"{sc.name} (simulated)   t = {now:5.2f} / {end:.2f} s{bring_up}"
        box = held() if held is not None else []
        lines = _step_line(sc, now, planner, progress)
        return [head, *lines, *box, *_fault_lines(sc, now, owner_faults)]

    return captions

"""The viewer's keys: each acts through the real path (owners, executor), never on MuJoCo state.

``ViewerControls`` holds what the keys change. ``press(keycode)`` may be called from
the viewer's GUI thread: it only queues the key; ``apply()``, called by the loop's own
thread between physics steps, carries the actions out. So a test presses keys and
applies them without any display.

Keys are function and navigation keys: MuJoCo's viewer already gives every letter a
meaning of its own (``Y`` toggles the range-finder rays, ``Backspace`` resets MuJoCo's
state directly, bypassing the owners: do not use it on a scenario).
"""

from __future__ import annotations

import queue
from dataclasses import dataclass, field

import mujoco
import numpy as np
from rob_twin.controllers.owner_types import Mode
from rob_twin.models.names import Arm, tcp_site
from rob_twin.twin.scenario.plan_steps import PlanRunner
from rob_twin.twin.sim.closed_loop import ClosedLoop

# GLFW key codes (glfw/glfw3.h)
KEY_F8, KEY_F9, KEY_F10, KEY_F11, KEY_F12 = 297, 298, 299, 300, 301
KEY_INSERT, KEY_HOME, KEY_END = 260, 268, 269

KEYS: dict[int, tuple[str, str]] = {
    KEY_F8: ("F8", "STOP both arms (owner Stop)"),
    KEY_F9: ("F9", "reset owners (fault, Stop)"),
    KEY_F10: ("F10", "next plan step now"),
    KEY_F11: ("F11", "re-plan, new seed"),
    KEY_INSERT: ("Insert", "TCP traces"),
    KEY_HOME: ("Home", "planned path"),
    KEY_END: ("End", "rays and contacts"),
    KEY_F12: ("F12", "key list on/off"),
}


def key_code(name: str) -> int:
    """The GLFW code of a key of ``KEYS`` by its name (``"F8"``); UnknownNameError otherwise."""
    from rob_twin.models.names import UnknownNameError

    for code, (key, _) in KEYS.items():
        if key.lower() == name.strip().lower():
            return code
    raise UnknownNameError("viewer key", name, [k for k, _ in KEYS.values()])


TRACE_POINTS = 240  # per arm, the most recent TCP positions kept
GHOST_POINTS = 40  # per arm, markers along a planned path


@dataclass
class ViewerControls:
    """Actions of the viewer's keys on ``loop`` (and ``planner``); the view toggles."""

    loop: ClosedLoop
    planner: PlanRunner | None = None
    show_traces: bool = True
    show_ghost: bool = True
    show_debug: bool = False  # range-finder rays and contact points
    show_keys: bool = True
    messages: list[str] = field(default_factory=list)
    _pending: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)
    traces: dict[Arm, list[np.ndarray]] = field(default_factory=dict)
    ghost: dict[Arm, np.ndarray] = field(default_factory=dict)
    _ghost_from: int = 0

    def __post_init__(self) -> None:
        self.traces = {arm: [] for arm in Arm}
        model = self.loop.twin.model
        self._tcp = {
            arm: mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, tcp_site(arm)) for arm in Arm
        }

    # ------------------------------------------------------------------ keys
    def press(self, keycode: int) -> None:
        """Queue a key (any thread); unknown keys are ignored (the viewer's own)."""
        if keycode in KEYS:
            self._pending.put(keycode)

    def apply(self) -> list[str]:
        """Carry out the queued keys (the loop's thread); returns what each did."""
        done = []
        while True:
            try:
                key = self._pending.get_nowait()
            except queue.Empty:
                break
            done.append(self.act(key))
        if done:  # a new list only when something happened (the viewer redraws then)
            self.messages = (self.messages + done)[-4:]
        return done

    def act(self, keycode: int) -> str:
        """Do what ``keycode`` means now; returns a line saying what happened."""
        if keycode == KEY_F8:
            return self.stop_both()
        if keycode == KEY_F9:
            return self.reset()
        if keycode == KEY_F10:
            return self.next_step()
        if keycode == KEY_F11:
            return self.replan()
        if keycode == KEY_INSERT:
            self.show_traces = not self.show_traces
            return f"TCP traces {'on' if self.show_traces else 'off'}"
        if keycode == KEY_HOME:
            self.show_ghost = not self.show_ghost
            return f"planned path {'on' if self.show_ghost else 'off'}"
        if keycode == KEY_END:
            self.show_debug = not self.show_debug
            return f"range-finder rays and contacts {'on' if self.show_debug else 'off'}"
        if keycode == KEY_F12:
            self.show_keys = not self.show_keys
            return f"key list {'on' if self.show_keys else 'off'}"
        return f"key {keycode} has no action"

    # ------------------------------------------------------------------ actions
    def stop_both(self) -> str:
        """Stop both owners (brake to hold, then refuse targets until reset); a plan
        executing is aborted."""
        aborted = self.planner is not None and self.planner.abort_active("stopped from the viewer")
        self.loop.stop()
        return "STOP: both owners braking to a stop" + ("; the plan was aborted" if aborted else "")

    def reset(self) -> str:
        """Reset each owner that is faulted, stopped or holding (a new generation)."""
        done = []
        for arm, drv in self.loop.drivers.items():
            owner = drv.owner
            if owner.mode in (Mode.FAULTED, Mode.STOPPED, Mode.HOLD):
                done.append(f"{arm.value} gen {owner.reset()}")
        return "reset: " + (", ".join(done) if done else "nothing to reset (owners are moving)")

    def next_step(self) -> str:
        if self.planner is None:
            return "no plan steps in this scenario"
        step = self.planner.run_next_now()
        return (
            "no plan step left"
            if step is None
            else f"next plan step starts now ({', '.join(a.value for a in step.goals)})"
        )

    def replan(self) -> str:
        if self.planner is None:
            return "no plan steps in this scenario"
        step = self.planner.replan()
        return "no plan step started yet" if step is None else f"re-planning with seed {step.seed}"

    # ------------------------------------------------------------------ drawing data
    def record_traces(self) -> None:
        """Append the TCP positions of the current state (kept: ``TRACE_POINTS``)."""
        xpos = self.loop.twin.data.site_xpos
        for arm, sid in self._tcp.items():
            tr = self.traces[arm]
            tr.append(xpos[sid].copy())
            del tr[:-TRACE_POINTS]

    def update_ghost(self) -> None:
        """The TCP path of the newest executed plan, once per new plan (a scratch MjData:
        the twin's state is untouched)."""
        if self.planner is None or len(self.planner.executed) <= self._ghost_from:
            return
        self._ghost_from = len(self.planner.executed)
        _, plan = self.planner.executed[-1]
        states = self.planner.group.full_qpos(plan)
        pick = np.linspace(0, len(states) - 1, min(GHOST_POINTS, len(states))).astype(int)
        model = self.loop.twin.model
        data = mujoco.MjData(model)
        path = {arm: [] for arm in Arm}
        for i in pick:
            data.qpos[:] = states[i]
            mujoco.mj_kinematics(model, data)
            for arm, sid in self._tcp.items():
                path[arm].append(data.site_xpos[sid].copy())
        self.ghost = {arm: np.array(p) for arm, p in path.items()}

    def toggle_states(self) -> dict[int, bool]:
        """The on/off state of each toggle key now (Insert, Home, End, F12)."""
        return {
            KEY_INSERT: self.show_traces,
            KEY_HOME: self.show_ghost,
            KEY_END: self.show_debug,
            KEY_F12: self.show_keys,
        }

    def key_list(self) -> str:
        """One line per key; toggles show their state now (``[on]``/``[off]``), so pressing
        Insert while traces are on is seen to turn them off."""
        states = self.toggle_states()
        lines = [
            f"{name}  {what}" + (f" [{'on' if states[code] else 'off'}]" if code in states else "")
            for code, (name, what) in KEYS.items()
        ]
        return "\n".join(lines) + "\nEsc  free camera"

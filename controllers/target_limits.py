"""Is a target's motion state executable? Asked at submit, never first at the tick.

A target may carry the velocity [rad/s] and acceleration [rad/s^2] the arm should have
on arrival (a trajectory follower's samples). Ruckig refuses a target state that is out
of its limits by raising inside ``update``; the owner must refuse such a target when it
is offered instead (with the value and the valid range named), so the tick never meets
it. The checks, per joint, in the order Ruckig validates them (its ``validate`` of the
target state; the rule on the velocity passed through is Ruckig's, stated here so the
message can name it):

1. |a| <= max_acceleration;
2. |v| <= max_velocity;
3. with a < 0 the arm arrives decelerating, so it moved faster before:
   v + a^2 / (2 max_jerk) <= max_velocity; with a > 0, v - a^2 / (2 max_jerk) >= -max_velocity.

Then Ruckig's own ``validate_input`` is asked on the same target state (a scratch input,
current state at rest), so any rule of the installed Ruckig that is not spelled out above
also refuses at submit (NOT_EXECUTABLE, with Ruckig's message).
"""

from __future__ import annotations

import threading

import numpy as np
from rob_twin.controllers.errors import TargetRefusedError
from rob_twin.controllers.mailbox import RejectReason
from ruckig import ControlInterface, InputParameter, Ruckig, RuckigError


class TargetStateCheck:
    """The target-state rules of one owner's limits (``OwnerConfig``); thread-safe."""

    def __init__(self, config) -> None:
        self._v = [float(x) for x in config.max_velocity]
        self._a = [float(x) for x in config.max_acceleration]
        self._j = [float(x) for x in config.max_jerk]
        self._half_inv_j = [0.5 / j for j in self._j]
        self.joints = n = len(self._v)  # the arm's joint count (OwnerConfig.joints)
        self._otg = Ruckig(n, config.period_s)
        inp = InputParameter(n)
        inp.max_velocity, inp.max_acceleration, inp.max_jerk = (
            list(self._v),
            list(self._a),
            list(self._j),
        )
        inp.control_interface = ControlInterface.Position
        inp.current_position = [0.0] * n
        inp.current_velocity = [0.0] * n
        inp.current_acceleration = [0.0] * n
        inp.target_position = [0.0] * n
        self._inp = inp
        self._lock = threading.Lock()

    def refusal(
        self, velocity_rad_s: np.ndarray | None, acceleration_rad_s2: np.ndarray | None
    ) -> TargetRefusedError | None:
        """Why this target state cannot be executed, or None (vectors already finite, one
        value per joint)."""
        n = self.joints
        vel = [0.0] * n if velocity_rad_s is None else velocity_rad_s.tolist()
        acc = [0.0] * n if acceleration_rad_s2 is None else acceleration_rad_s2.tolist()
        # fast path (every streamed target passes here): v - a|a|/(2j) is the velocity passed
        # through (rule 3 for either sign of a); the loop below only runs to name a refusal
        ok = True
        for v, a, vmax, amax, h in zip(vel, acc, self._v, self._a, self._half_inv_j, strict=True):
            if not (abs(a) <= amax and abs(v) <= vmax and abs(v - a * abs(a) * h) <= vmax):
                ok = False
                break
        if ok:
            return self._ruckig_refusal(vel, acc)
        for k, (v, a, vmax, amax, jmax) in enumerate(
            zip(vel, acc, self._v, self._a, self._j, strict=True)
        ):
            if not abs(a) <= amax:
                return TargetRefusedError(
                    RejectReason.ACCELERATION_LIMIT,
                    "acceleration_rad_s2",
                    a,
                    f"|a| <= {amax!r} rad/s^2 (the owner's max_acceleration)",
                    joint=k + 1,
                )
            if not abs(v) <= vmax:
                return TargetRefusedError(
                    RejectReason.VELOCITY_LIMIT,
                    "velocity_rad_s",
                    v,
                    f"|v| <= {vmax!r} rad/s (the owner's max_velocity)",
                    joint=k + 1,
                )
            passed = v + a * a / (2.0 * jmax) if a < 0 else v - a * a / (2.0 * jmax) if a > 0 else v
            if not abs(passed) <= vmax:
                return TargetRefusedError(
                    RejectReason.VELOCITY_LIMIT,
                    "velocity_rad_s",
                    v,
                    f"|v -/+ a^2/(2 max_jerk)| <= {vmax!r} rad/s: with a={a!r} rad/s^2 "
                    "the arm passes "
                    f"{passed!r} rad/s before arriving (the owner's max_velocity)",
                    joint=k + 1,
                )
        return self._ruckig_refusal(vel, acc)  # float rounding between the two forms

    def _ruckig_refusal(self, vel: list[float], acc: list[float]) -> TargetRefusedError | None:
        """Ruckig's own verdict on the target state (current state at rest)."""
        with self._lock:
            inp = self._inp
            inp.target_velocity = vel
            inp.target_acceleration = acc
            try:
                ok = self._otg.validate_input(inp, False, True)
            except RuckigError as err:
                return TargetRefusedError(
                    RejectReason.NOT_EXECUTABLE,
                    "target state",
                    {"velocity_rad_s": vel, "acceleration_rad_s2": acc},
                    f"a state Ruckig accepts ({str(err).strip()})",
                )
        if not ok:
            return TargetRefusedError(
                RejectReason.NOT_EXECUTABLE,
                "target state",
                {"velocity_rad_s": vel, "acceleration_rad_s2": acc},
                "a state Ruckig accepts (validate_input returned False)",
            )
        return None

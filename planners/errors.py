"""Typed exceptions of the planners layer: one base, then one class per failure kind.

Every message names the offending value and the valid range. Caller mistakes (wrong
shape, non-finite numbers, a matrix that is not a rotation, a bad configuration) raise;
a pose the arm cannot reach is *not* an exception: IK returns a failed ``IKResult``.
Others may add their own classes here, deriving from ``PlannerError``.
"""

from __future__ import annotations

from rob_twin.models.errors import InvalidValueError, RobTwinError, UnknownNameError


class PlannerError(RobTwinError):
    """Base of every error the planners layer raises on purpose."""


class KinematicsInputError(PlannerError, InvalidValueError):
    """A joint vector, torso angle, pose or trajectory the kinematics services refuse."""


class PlannerConfigError(PlannerError, InvalidValueError):
    """A kinematics / IK / goal-check configuration value outside its valid range."""

    subject = "planner config"


# ------------------------------------------------- arm groups, planning, retiming


class GroupNameError(PlannerError, UnknownNameError):
    """An arm, joint or geom name the group or the model does not define; lists the valid ones
    (``UnknownNameError`` raised by the planners layer)."""


class GoalInputError(PlannerError, ValueError):
    """A goal or start of the wrong shape, non-finite, or outside the joint limits.

    ``arm`` and ``field`` say where (``field`` is e.g. ``"shape"`` or a joint name),
    ``value`` the offending value and ``valid`` the valid range in words.
    """

    def __init__(self, arm: str, field: str, value: object, valid: str):
        self.arm, self.field, self.value, self.valid = arm, field, value, valid
        super().__init__(f"arm {arm!r}: {field}={value!r} is invalid; valid: {valid}")


class StartMismatchError(PlannerError, ValueError):
    """A plan's start that differs from the owners' commanded state by more than the
    executor's start tolerance: the executor would refuse the plan (``start_mismatch``), so
    the planner refuses it first. ``arm``, ``joint`` (name), ``value`` (the start [rad]),
    ``commanded`` [rad] and ``tolerance`` [rad] say where and by how much."""

    def __init__(self, arm: str, joint: str, value: float, commanded: float, tolerance: float):
        self.arm, self.joint, self.value = arm, joint, value
        self.commanded, self.tolerance = commanded, tolerance
        super().__init__(
            f"arm {arm!r}: start {joint}={value:.6g} rad differs from the owners' commanded "
            f"{commanded:.6g} rad by {abs(value - commanded):.3g} rad > tolerance "
            f"{tolerance:.3g} rad (the executor would refuse it as start_mismatch)"
        )


class PlanFailedError(PlannerError, RuntimeError):
    """``PlanResult.unwrap()`` on a failed plan; ``result`` holds the typed status and reason."""

    def __init__(self, result: object):
        self.result = result
        super().__init__(
            f"planning failed: {getattr(result, 'status', '?')}: {getattr(result, 'reason', '')}"
        )


class GoalUnreachableError(PlannerError):
    """A goal resolver found no joint candidate for ``arm`` (e.g. IK of an unreachable
    pose); ``ArmGroup.plan`` turns it into a GOAL_UNREACHABLE result."""

    def __init__(self, arm: str, reason: str):
        self.arm, self.reason = arm, reason
        super().__init__(f"{arm}: {reason}")

"""Typed exceptions of the planners layer: one base, then one class per failure kind.

Every message names the offending value and the valid range. Caller mistakes (wrong
shape, non-finite numbers, a matrix that is not a rotation, a bad configuration) raise;
a pose the arm cannot reach is *not* an exception: IK returns a failed ``IKResult``.
Others may add their own classes here, deriving from ``PlannerError``.
"""

from __future__ import annotations

from controllers.errors import RobTwinError


class PlannerError(RobTwinError):
    """Base of every error the planners layer raises on purpose."""


class KinematicsInputError(PlannerError, ValueError):
    """A joint vector, torso angle, pose or trajectory the kinematics services refuse."""

    def __init__(self, field: str, value: object, valid: str):
        self.field, self.value, self.valid = field, value, valid
        super().__init__(f"{field}={value!r} is invalid; valid: {valid}")


class PlannerConfigError(PlannerError, ValueError):
    """A kinematics / IK / goal-check configuration value outside its valid range."""

    def __init__(self, field: str, value: object, valid: str):
        self.field, self.value, self.valid = field, value, valid
        super().__init__(f"planner config {field}={value!r} is invalid; valid: {valid}")

"""Typed errors of the twin layer that have no more specific home.

Each derives from ``rob_twin.models.errors.RobTwinError`` and from ``ValueError`` (callers that
catch ``ValueError`` keep working) through ``InvalidValueError``: the message names the
field, the value and what is valid.
The twin's other errors live next to their concept (``ScenarioError`` in ``scenario``,
``FaultSpecError`` in ``faults``, ...), all on the same base.
"""

from __future__ import annotations

from rob_twin.models.errors import InvalidValueError


class TwinInputError(InvalidValueError):
    """A configuration value or an argument the twin refuses (a rate, a target vector)."""

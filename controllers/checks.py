"""One check for every number that reaches supervision: a finite real, never a bool.

``finite_real`` accepts ``numbers.Real`` (int, float, numpy reals, Fraction) and refuses
bools (True is not one second), strings (``"1.0"`` is not parsed), complex values, None
and NaN/inf, raising the caller's typed error class with the field, value and valid range.
"""

from __future__ import annotations

import math
import numbers

import numpy as np


def finite_real(value: object, field: str, valid: str, error: type) -> float:
    """``value`` as a finite float; ``error(field, value, valid)`` otherwise."""
    if type(value) is float:  # the common case, without the ABC checks below
        if math.isfinite(value):
            return value
        raise error(field, value, valid)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise error(field, value, valid)
    x = float(value)
    if not math.isfinite(x):
        raise error(field, value, valid)
    return x

"""Shared test set-up: headless GL, and the stress mode of `make stress`."""

from __future__ import annotations

import os
import sys

import pytest

os.environ.setdefault("MUJOCO_GL", "egl")


@pytest.fixture(autouse=True)
def _stress_switch_interval(request):
    """Under ROB_TWIN_STRESS=1, stress-marked tests run with a 1 us thread switch interval."""
    if os.environ.get("ROB_TWIN_STRESS") == "1" and request.node.get_closest_marker("stress"):
        old = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)
        yield
        sys.setswitchinterval(old)
    else:
        yield

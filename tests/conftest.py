"""Shared test set-up: headless GL, and the stress mode of `make stress`."""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import settings

os.environ.setdefault("MUJOCO_GL", "egl")

# Hypothesis: `make test` runs every property test with the library's defaults; `make fuzz`
# selects the "fuzz" profile, a longer campaign over the outward surfaces (tests marked
# `fuzz`, which set no max_examples of their own so the profile decides), seeded by
# `--hypothesis-seed` so a finding reproduces.
settings.register_profile("fuzz", max_examples=3000, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


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

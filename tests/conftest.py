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


def pytest_terminal_summary(terminalreporter):
    """The fuzz properties' outcome counts per surface (``fuzz_support``), when any ran in
    this process (``make fuzz``; under ``make test`` the workers hold them); also written as
    JSON to ``$FUZZ_TALLY`` when set."""
    from fuzz_support import tally_rows, write_tally

    rows = tally_rows()
    if not rows:
        return
    terminalreporter.section("fuzz outcomes per surface")
    terminalreporter.write_line(
        f"{'surface':32} {'cases':>7} {'refused':>8} {'disagreed':>9} {'accepted':>8}"
    )
    for r in rows:
        terminalreporter.write_line(
            f"{r['surface']:32} {r['cases']:7} {r['refused']:8} {r['disagreed']:9} "
            f"{r['accepted']:8}"
        )
    write_tally(os.environ.get("FUZZ_TALLY"))


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


@pytest.fixture
def machine_jitter(request):
    """This machine's scheduling jitter measured just before the test (``realtime_support``,
    about 0.1 s quiet, at most 2 s busy): real-time tests widen their deadlines by it, or
    skip saying why when it makes the check meaningless. Recorded in the test's
    ``user_properties`` (shown by ``--junitxml``)."""
    from realtime_support import measure

    jitter = measure()
    request.node.user_properties.append(("machine_jitter", str(jitter)))
    return jitter

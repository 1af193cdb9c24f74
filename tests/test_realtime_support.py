"""``realtime_support``: a quiet machine's deadlines stay as they are, a busy one's widen by
what was measured, and a deadline widened past a fixed bound skips the test with the reason;
``measure`` reads this machine (bounded in time)."""

from __future__ import annotations

import time

import pytest
from realtime_support import BUDGET_S, SPIN_S, Jitter, host_publish_deadline, measure

QUIET = Jitter(samples=200, median_s=0.00006, worst_s=0.0008, cpu_share=0.97)
BUSY = Jitter(samples=200, median_s=0.00006, worst_s=0.012, cpu_share=0.4)


def test_a_quiet_machine_keeps_every_deadline_as_it_is():
    assert QUIET.quiet and QUIET.widen(0.02) == 0.02 and host_publish_deadline(QUIET) == "0.02"


def test_a_busy_machine_widens_by_its_share_of_a_core_and_its_worst_wait_up_to_a_cap():
    assert not BUSY.quiet
    assert BUSY.widen(0.02) == pytest.approx(0.02 / 0.4 + 16 * 0.012)
    assert BUSY.widen(0.02, cap_s=0.1) == 0.1 and host_publish_deadline(BUSY) == "0.242"
    # either sign of a busy machine is enough: a long wait, or a small share of a core
    assert not Jitter(200, 0.0, 0.02, 1.0).quiet and not Jitter(200, 0.0, 0.0005, 0.5).quiet


def test_a_deadline_stretched_past_a_fixed_bound_skips_saying_why():
    loaded = Jitter(samples=12, median_s=0.05, worst_s=0.2, cpu_share=0.1)
    assert host_publish_deadline(loaded) == "0.5"  # capped at the host's feedback timeout
    starved = Jitter(samples=12, median_s=0.05, worst_s=0.2, cpu_share=0.03)
    with pytest.raises(pytest.skip.Exception, match=r"machine too busy for .*beyond 500 ms"):
        host_publish_deadline(starved)


def test_measure_reads_this_machine_within_its_budget():
    t0 = time.monotonic()
    jitter = measure(samples=20)
    assert time.monotonic() - t0 < BUDGET_S + SPIN_S + 5.0  # a loaded machine's slack
    assert 1 <= jitter.samples <= 20 and 0 <= jitter.median_s <= jitter.worst_s
    assert 0 < jitter.cpu_share <= 1.0
    assert "worst wait" in str(jitter) and ("quiet" in str(jitter) or "busy" in str(jitter))

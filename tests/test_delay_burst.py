"""A delay fault's burst on a timed bus: frames held behind an injected delay go out together
when it ends; the host queue refuses what does not fit. That refusal is counted and latched by
the owner (uncertain output: those frames were already reported sent), never an exception
out of the physics loop (before: ``bus_faults`` died at about 3 s on the default bus)."""

from __future__ import annotations

from rob_twin.controllers.owner_types import FaultKind as OwnerFault
from rob_twin.models.names import Arm
from rob_twin.twin.bus.timing import BusTimingConfig
from rob_twin.twin.rehearsal import wave_source
from rob_twin.twin.sim.closed_loop import ClosedLoop, ClosedLoopConfig
from rob_twin.twin.sim.faults import FaultKind, FaultSpec


def _delay_burst_loop(seconds: float) -> ClosedLoop:
    delay = FaultSpec(
        FaultKind.DELAY,
        Arm.RIGHT,
        at=0.1,
        duration=1.0,
        params={"delay_s": 0.01, "jitter_s": 0.005},
    )
    lp = ClosedLoop(ClosedLoopConfig(seed=2, faults=(delay,), bus_timing=BusTimingConfig()))
    for k, arm in enumerate(Arm):
        lp.stream_targets(arm, wave_source(k), 100.0)
    lp.run_for(seconds)
    return lp


def test_frames_released_after_a_delay_that_overflow_the_host_queue_latch_the_owner():
    lp = _delay_burst_loop(1.2)  # raised TransmitQueueFullError out of the loop before
    try:
        wire = lp.wires[Arm.RIGHT]
        owner = lp.drivers[Arm.RIGHT].owner
        assert wire.released_refused > 0
        assert lp.bus_report()["CAN10"]["queue_refusals"]["host"] == wire.released_refused
        assert owner.fault is OwnerFault.UNCERTAIN_OUTPUT
        assert "after an injected delay" in owner.fault_reason
        # the left arm, on its own bus without faults, is untouched
        assert lp.drivers[Arm.LEFT].owner.fault is None
    finally:
        lp.close()

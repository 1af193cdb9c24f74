"""The bus timing layer inside the lockstep closed loop."""

from __future__ import annotations

import numpy as np
from rob_twin.controllers.owner_types import FaultKind as OwnerFault
from rob_twin.models.names import Arm
from rob_twin.twin.bus.timed_bus import TimedBus
from rob_twin.twin.bus.timing import BusTimingConfig
from rob_twin.twin.rehearsal import wave_source
from rob_twin.twin.sim.closed_loop import ClosedLoop, ClosedLoopConfig
from rob_twin.twin.sim.faults import FaultSpec


def _trajectory(
    bus_timing: BusTimingConfig | None, seconds: float = 0.6, **kw
) -> tuple[np.ndarray, dict | None, ClosedLoop]:
    lp = ClosedLoop(ClosedLoopConfig(bus_timing=bus_timing, **kw))
    for k, arm in enumerate(Arm):
        lp.stream_targets(arm, wave_source(k), 100.0)
    qs = []
    for _ in range(int(round(seconds / 0.01))):
        lp.run_for(0.01)
        qs.append(lp.twin.data.qpos.copy())
    rep = lp.bus_report()
    lp.close()
    return np.array(qs), rep, lp


def test_timing_off_wraps_nothing_and_reports_nothing():
    with ClosedLoop() as lp:
        assert lp.bus_report() is None and lp.bus_timing is None
        assert not any(isinstance(ad.bus, TimedBus) for ad in lp.bank.buses.values())


def test_fast_bus_lands_every_frame_within_the_step_slow_bus_does_not():
    off, _, _ = _trajectory(None)
    fast, rep, _ = _trajectory(BusTimingConfig(bitrate_bps=1e6))
    slow, slow_rep, _ = _trajectory(BusTimingConfig(bitrate_bps=125e3))
    # at 1 Mbit/s a seven-frame sample takes < 1 ms: the drives see each command at the
    # same physics step as without timing, so the run is bit-identical
    assert np.array_equal(off, fast)
    assert set(rep) == {"CAN10", "CAN11"}
    r = rep["CAN10"]
    assert 0.05 < r["load"] < 0.3 and r["frames_lost"] == 0
    assert r["command_to_drive_latency"]["n"] == 7 * 120  # 200 Hz x 0.6 s x 7 joints
    assert r["command_to_drive_latency"]["max_us"] < 1000
    # at 125 kbit/s the seven frames take ~7 ms: commands arrive later, the run differs
    assert slow_rep["CAN10"]["command_to_drive_latency"]["max_us"] > 5000
    assert not np.array_equal(off, slow)


def test_a_host_queue_too_small_for_a_sample_is_refused_and_latches():
    lp = ClosedLoop(ClosedLoopConfig(bus_timing=BusTimingConfig(host_queue_frames=3)))
    lp.command(Arm.RIGHT, lp.measured(Arm.RIGHT) + 0.05)
    lp.run_for(0.05)
    t = lp.drivers[Arm.RIGHT].transport.counters
    assert lp.drivers[Arm.RIGHT].owner.fault is OwnerFault.PARTIAL_OUTPUT
    assert t.partial == 1 and t.frames_sent == 3
    assert lp.bus_report()["CAN10"]["queue_refusals"] == {"host": 1}
    lp.close()


def test_wire_faults_take_bus_time_and_count_as_lost():
    cfg = BusTimingConfig()
    _, rep, lp = _trajectory(
        cfg,
        0.3,
        faults=(FaultSpec("drop", "right", at=0.1, duration=0.05, params={"probability": 1.0}),),
    )
    dropped = lp.wires[Arm.RIGHT].dropped
    assert dropped >= 7 * 10 and rep["CAN10"]["frames_lost"] == dropped
    assert rep["CAN10"]["error_frames"] == dropped
    assert rep["CAN11"]["frames_lost"] == 0
    lp = ClosedLoop(
        ClosedLoopConfig(bus_timing=cfg, faults=(FaultSpec("bus_off", "left", at=0.1),))
    )
    lp.command(Arm.LEFT, lp.measured(Arm.LEFT) + 0.05)
    lp.run_for(0.3)
    rep = lp.bus_report()
    assert (
        rep["CAN11"]["bus_off_events"] == 1 and rep["CAN11"]["error_frames"] == cfg.bus_off_attempts
    )
    assert rep["CAN10"]["bus_off_events"] == 0
    lp.close()

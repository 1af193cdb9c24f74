"""Threads against the owner on the Damiao path: Stop waits for the in-flight MIT sample,
and concurrent target producers never tear a sample. Hooks and events, not sleeps;
under ROB_TWIN_STRESS=1 these run with a 1 us switch interval."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from rob_twin.controllers.clock import SimClock
from rob_twin.controllers.damiao_codec import Scaling, decode_mit
from rob_twin.controllers.damiao_driver import DamiaoArmDriver
from rob_twin.controllers.damiao_transport import DamiaoTransportConfig
from rob_twin.controllers.owner_config import OwnerConfig
from rob_twin.controllers.owner_types import Mode, OwnerHooks
from rob_twin.controllers.target import ArmTarget
from rob_twin.models.damiao_motors import OPENARM_ARM_MOTORS
from rob_twin.models.names import Arm
from rob_twin.twin.bus.wire import open_virtual
from test_damiao_transport import Responder

Q0 = np.array([0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0])
CFG = OwnerConfig(
    period_s=0.002,
    max_velocity=(1.0,) * 7,
    max_acceleration=(3.0,) * 7,
    max_jerk=(30.0,) * 7,
    feedback_timeout_s=10.0,
    tracking_error_rad=10.0,
)


def _rig(name: str, hooks: OwnerHooks | None = None):
    clock = SimClock()
    resp = Responder(name)
    resp.q[:] = Q0
    bus = open_virtual(name)
    drv = DamiaoArmDriver.create_damiao(
        Arm.RIGHT, clock, Q0, CFG, DamiaoTransportConfig(arm=Arm.RIGHT, channel=name), bus=bus
    )
    if hooks is not None:
        drv.owner.hooks = hooks
    assert drv.bring_up(resp.serve).passed
    resp.seen.clear()
    return clock, resp, bus, drv


def _tick(clock, resp, drv, n=1):
    for _ in range(n):
        clock.advance(CFG.period_s)
        drv.tick()
        resp.serve(clock.now())


@pytest.mark.stress
def test_stop_waits_for_the_in_flight_mit_sample():
    computed, release = threading.Event(), threading.Event()
    state = {"hold": False}
    events: list[str] = []

    def after_compute(p):
        if state["hold"]:
            state["hold"] = False
            computed.set()
            assert release.wait(5.0)

    def after_publish(rep):
        events.append("published")

    clock, resp, bus, drv = _rig(
        "damiao-stop-race", OwnerHooks(after_compute=after_compute, after_publish=after_publish)
    )
    try:
        lease = drv.owner.grant_lease("t", 100.0)
        assert drv.owner.submit(
            ArmTarget(
                arm=Arm.RIGHT,
                positions_rad=Q0 + 0.4,
                sequence=1,
                generation=drv.owner.generation,
                lease=lease,
            )
        ).accepted
        _tick(clock, resp, drv, 100)
        state["hold"] = True
        ticker = threading.Thread(target=_tick, args=(clock, resp, drv))
        ticker.start()
        assert computed.wait(5.0)

        def stopper():
            drv.owner.stop()
            events.append("stop_returned")

        st = threading.Thread(target=stopper)
        st.start()
        st.join(0.05)
        assert "stop_returned" not in events  # blocked on the ownership barrier
        events.clear()
        release.set()
        ticker.join(5.0)
        st.join(5.0)
        assert events == ["published", "stop_returned"]
        for _ in range(400):
            _tick(clock, resp, drv)
        assert drv.owner.mode is Mode.STOPPED
        # the last MIT frames command rest: zero velocity on every joint
        last = [m for m in resp.seen if m.arbitration_id in range(1, 8)][-7:]
        for k, m in enumerate(last):
            s = Scaling.of(OPENARM_ARM_MOTORS[k])
            assert abs(decode_mit(bytes(m.data), s).dq_rad_s) <= s.step("dq")
    finally:
        drv.close()
        bus.shutdown()
        resp.close()


@pytest.mark.stress
def test_concurrent_producers_never_tear_a_sample():
    clock, resp, bus, drv = _rig("damiao-producers")
    stop = threading.Event()
    lease = drv.owner.grant_lease("t", 1000.0)
    errors: list[BaseException] = []

    def producer(k: int) -> None:
        rng = np.random.default_rng(k)
        seq = 0
        try:
            while not stop.is_set():
                seq += 1
                q = Q0 + rng.uniform(-0.3, 0.3, 7) * np.array([1, 1, 1, 0, 1, 1, 1])
                q[3] = 0.5 + rng.uniform(0.0, 0.3)
                drv.owner.submit(
                    ArmTarget(
                        arm=Arm.RIGHT,
                        positions_rad=q,
                        sequence=seq * 10 + k,
                        generation=drv.owner.generation,
                        lease=lease,
                    )
                )
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=producer, args=(k,)) for k in range(3)]
    for th in threads:
        th.start()
    try:
        _tick(clock, resp, drv, 300)
    finally:
        stop.set()
        for th in threads:
            th.join(5.0)
    try:
        assert not errors and drv.owner.fault is None, (errors, drv.owner.fault_reason)
        mit = [m for m in resp.seen if m.arbitration_id in range(1, 8)]
        assert len(mit) == 7 * drv.owner.stats.published
        ids = [m.arbitration_id for m in mit]
        assert ids == list(range(1, 8)) * drv.owner.stats.published  # whole samples, in order
    finally:
        drv.close()
        bus.shutdown()
        resp.close()
